"""Provisioning: every key type and DID method, file modes, re-runs that never change the identity.

The library tests come first; the CLI tests below run ``mudrika provision`` in-process and hold it to
the contract of docs/identity.md: a re-run with other options that would change the identity (key
type, method, did:web host or path, did:bindu author or name) is refused with exit 1 and changes
nothing; ``--force`` replaces the identity, says what it replaced and leaves none of the old files
behind; every usage error is found before anything is written (the directory is not even created).
"""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from mudrika.crypto.keys import KeyType, PublicKey
from mudrika.crypto.keystore import load_private_key
from mudrika.errors import InvalidInput, KeyStoreError
from mudrika.identity.csr import inspect_csr
from mudrika.identity.methods import bindu
from mudrika.identity.provision import DidMethod, provision
from mudrika.identity.resolver import DIDResolver
from tests._support.cli import run_cli, run_cli_json

PASSWORD = b"provision-password"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("key_type", list(KeyType), ids=[t.value for t in KeyType])
@pytest.mark.parametrize("method", ["key", "jwk", "web", "bindu"])
def test_provision_every_key_type_and_method(tmp_path: Path, key_type: KeyType, method: DidMethod) -> None:
    out = tmp_path / "agent"
    endpoint = None if method in ("key", "jwk") else "https://agent.example.com/a2a"
    result = provision(
        name="payments-agent",
        out_dir=out,
        password=PASSWORD,
        key_type=key_type,
        method=method,
        author="ops@example.com" if method == "bindu" else None,
        web_host="agents.example.com" if method == "web" else None,
        web_path="payments" if method == "web" else None,
        endpoint=endpoint,
        agentdns_url="https://agentdns.example.com/payments-agent",
    )
    identity = result.identity
    assert identity.did.startswith(f"did:{method}:")
    assert _mode(out) == 0o700
    for path in result.files.values():
        assert _mode(path) == 0o600, path
    assert result.key_created
    assert list(result.written) == list(result.files.values())  # a first run writes every file
    assert result.replaced is None
    pair = load_private_key(out / "private.pem", PASSWORD)
    assert pair.key_type is key_type
    assert PublicKey.from_pem(identity.public_key) == pair.public_key

    written = json.loads((out / "identity.json").read_text())
    assert written == identity.to_json()
    assert set(written) == {"did", "did_document", "public_key", "csr", "agentdns_url"} | (
        {"endpoint"} if endpoint else set()
    )
    assert identity.did_document["id"] == identity.did

    csr = inspect_csr((out / "agent.csr").read_bytes())
    assert csr.common_name == "payments-agent"
    assert csr.dids == (identity.did,)
    assert csr.public_key == pair.public_key

    if method in ("key", "jwk"):
        resolved = DIDResolver().resolve_key(
            f"{identity.did}{identity.did_document['verificationMethod'][0]['id'].removeprefix(identity.did)}",
            "assertionMethod",
        )
        assert resolved == pair.public_key
    if method == "bindu":
        document = bindu.verify_document(identity.did, identity.did_document)
        assert document.id == identity.did
    if method == "web":
        assert result.files["web_did_json"] == out / "web" / "payments" / "did.json"


def test_rerun_reuses_the_key_and_keeps_the_did(tmp_path: Path) -> None:
    out = tmp_path / "agent"
    first = provision(name="a", out_dir=out, password=PASSWORD, method="bindu", author="ops")
    key_bytes = (out / "private.pem").read_bytes()
    second = provision(
        name="a", out_dir=out, password=PASSWORD, method="bindu", author="ops", endpoint="https://a.example/x"
    )
    assert first.key_created
    assert not second.key_created
    assert second.identity.did == first.identity.did
    assert (out / "private.pem").read_bytes() == key_bytes
    assert second.identity.endpoint == "https://a.example/x"


def test_rerun_with_wrong_password_fails_and_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "agent"
    provision(name="a", out_dir=out, password=PASSWORD)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(KeyStoreError) as wrong:
        provision(name="a", out_dir=out, password=b"another-password")
    assert wrong.value.code == "wrong_password"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_rerun_never_switches_key_type(tmp_path: Path) -> None:
    out = tmp_path / "agent"
    provision(name="a", out_dir=out, password=PASSWORD, key_type=KeyType.ED25519)
    with pytest.raises(KeyStoreError) as info:
        provision(name="a", out_dir=out, password=PASSWORD, key_type=KeyType.P256)
    assert info.value.code == "key_type_mismatch"
    assert info.value.fields["existing"] == {"key_type": "ed25519"}
    assert info.value.fields["requested"] == {"key_type": "p256"}


def test_a_recreated_key_is_a_different_bindu_did(tmp_path: Path) -> None:
    one = provision(name="a", out_dir=tmp_path / "one", password=PASSWORD, method="bindu", author="ops")
    two = provision(name="a", out_dir=tmp_path / "two", password=PASSWORD, method="bindu", author="ops")
    assert one.identity.did != two.identity.did


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"method": "key", "endpoint": "https://a.example"}, "endpoint_not_supported"),
        ({"method": "web"}, "missing_host"),
        ({"method": "bindu"}, "missing_author"),
        ({"method": "bindu", "author": "ops", "endpoint": "ftp://x"}, "bad_endpoint"),
        ({"agentdns_url": "http://plain.example"}, "bad_agentdns_url"),
        ({"method": "key", "author": "ops"}, "option_not_applicable"),
        ({"method": "bindu", "author": "ops", "web_host": "a.example"}, "option_not_applicable"),
        ({"method": "web", "web_host": "a.example", "web_path": "a/../b"}, "invalidDid"),
        ({"dns_names": ["not a name"]}, "bad_dns_name"),
        ({"name": "did:key:z6Mk"}, "bad_agent_name"),
        ({"key_type": "dsa"}, "bad_key_type"),
        ({"method": "plc"}, "methodNotSupported"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(
    tmp_path: Path, kwargs: dict[str, Any], code: str
) -> None:
    out = tmp_path / "agent"
    arguments: dict[str, Any] = {"name": "a", "out_dir": out, "password": PASSWORD, **kwargs}
    with pytest.raises(InvalidInput) as info:
        provision(**arguments)
    assert info.value.code == code
    assert not out.exists()


# -- the command line ----------------------------------------------------------------------------------------

CLI_PASSWORD = "provision-cli-password"
PW = ("--password-env", "MUDRIKA_PROVISION_PW")


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The password in the environment, and a stdin that is no terminal (so nothing ever prompts)."""
    monkeypatch.setenv("MUDRIKA_PROVISION_PW", CLI_PASSWORD)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))


def _tree(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every path under ``root`` with its mode and (for files) its bytes: "untouched" means equal."""
    found: dict[str, tuple[int, bytes | None]] = {}
    for current, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(current) / name
            data = path.read_bytes() if path.is_file() else None
            found[path.relative_to(root).as_posix()] = (stat.S_IMODE(path.lstat().st_mode), data)
    return found


def _provision(capsys: pytest.CaptureFixture[str], out: Path, *options: str) -> tuple[int, Any, str]:
    return run_cli_json(
        capsys, "provision", "--name", "pay-agent", "--out", str(out), *options, *PW, "--json"
    )


def _error(document: Any) -> dict[str, Any]:
    assert isinstance(document, dict)
    error = document["error"]
    assert isinstance(error, dict)
    return error


WEB = ("--method", "web", "--host", "agents.example.com", "--path", "pay")
BINDU = ("--method", "bindu", "--author", "ops@example.com")


@pytest.mark.usefixtures("cli_env")
def test_rerun_with_the_same_options_reuses_the_key_and_keeps_the_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent"
    code, first, _ = _provision(capsys, out, *WEB, "--endpoint", "https://pay.example.com/a2a")
    assert code == 0
    assert first["key"] == "created"
    assert first["replaced"] is None
    assert first["did"] == "did:web:agents.example.com:pay"
    assert set(first["written"]) == {str(path) for path in out.rglob("*") if path.is_file()}
    key_bytes = (out / "private.pem").read_bytes()

    code, second, err = _provision(capsys, out, *WEB, "--endpoint", "https://pay.example.com/a2a")
    assert code == 0
    assert second["key"] == "reused"
    assert second["did"] == first["did"]
    assert second["replaced"] is None
    assert str(out / "private.pem") not in second["written"]  # a reused key is not rewritten
    assert second["files"]["private_key"] == str(out / "private.pem")
    assert (out / "private.pem").read_bytes() == key_bytes
    identity = json.loads((out / "identity.json").read_text())
    assert {name: second[name] for name in identity} == identity  # the AgentIdentity, member for member
    assert set(identity) == {"did", "did_document", "public_key", "csr", "endpoint"}
    assert f"reused the existing ed25519 key; DID {first['did']}" in err
    for written in second["written"]:
        assert _mode(Path(written)) == 0o600, written
        assert written in err
    assert not [path for path in out.rglob("*") if path.name.endswith(".tmp")]  # atomic writes left no temp


@pytest.mark.usefixtures("cli_env")
@pytest.mark.parametrize(
    ("first", "second", "code", "existing", "requested"),
    [
        ((), BINDU, "identity_mismatch", {"method": "key"}, {"method": "bindu"}),
        (WEB, ("--method", "web", "--host", "other.example.com", "--path", "pay"), "identity_mismatch",
         {"host": "agents.example.com"}, {"host": "other.example.com"}),
        (WEB, ("--method", "web", "--host", "agents.example.com", "--path", "shop"), "identity_mismatch",
         {"path": "pay"}, {"path": "shop"}),
        (WEB, ("--method", "web", "--host", "agents.example.com", "--path", "pay", "--port", "8443"),
         "identity_mismatch", {"port": "(none)"}, {"port": "8443"}),
        (BINDU, ("--method", "bindu", "--author", "sales@example.com"), "identity_mismatch",
         {"author": "ops_at_example_com"}, {"author": "sales_at_example_com"}),
        ((), ("--type", "p256"), "key_type_mismatch", {"key_type": "ed25519"}, {"key_type": "p256"}),
        (WEB, ("--type", "secp256k1", "--method", "key"), "key_type_mismatch",
         {"key_type": "ed25519", "method": "web"}, {"key_type": "secp256k1", "method": "key"}),
    ],
    ids=["method", "host", "path", "port", "bindu-author", "key-type", "key-type-and-method"],
)  # fmt: skip
def test_a_rerun_that_would_change_the_identity_is_refused_and_changes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    first: tuple[str, ...],
    second: tuple[str, ...],
    code: str,
    existing: dict[str, str],
    requested: dict[str, str],
) -> None:
    out = tmp_path / "agent"
    status, created, _ = _provision(capsys, out, *first)
    assert status == 0
    before = _tree(out)
    status, document, err = _provision(capsys, out, *second)
    assert status == 1
    error = _error(document)
    assert error["code"] == code
    assert error["fields"]["did"] == created["did"]
    assert error["fields"]["existing"] == existing
    assert error["fields"]["requested"] == requested
    assert sorted(error["fields"]["differs"]) == sorted(existing)
    assert "--force" in error["message"]
    for what, value in existing.items():  # the human text names what differs: existing → requested
        assert f"{what}: {value} → {requested[what]}" in err
    assert _tree(out) == before


@pytest.mark.usefixtures("cli_env")
def test_rename_of_a_bindu_agent_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The agent name is part of a did:bindu, so renaming it would change the DID."""
    out = tmp_path / "agent"
    assert _provision(capsys, out, *BINDU)[0] == 0
    argv = ["provision", "--name", "renamed", "--out", str(out), *BINDU, *PW, "--json"]
    status, document, _ = run_cli_json(capsys, *argv)
    assert status == 1
    assert _error(document)["fields"]["existing"] == {"agent_name": "pay-agent"}
    assert _error(document)["fields"]["requested"] == {"agent_name": "renamed"}


@pytest.mark.usefixtures("cli_env")
def test_force_moves_a_did_web_agent_and_removes_its_old_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent"
    _, old, _ = _provision(capsys, out, "--method", "web", "--host", "agents.example.com", "--path", "a/b")
    old_document = out / "web" / "a" / "b" / "did.json"
    assert old_document.is_file()
    moved = ("--method", "web", "--host", "new.example.com", "--path", "a")
    status, new, err = _provision(capsys, out, *moved, "--force")
    assert status == 0
    assert new["key"] == "reused"
    assert new["did"] == "did:web:new.example.com:a"
    replaced = new["replaced"]
    assert replaced["did"] == old["did"]
    assert replaced["differences"] == [
        {"what": "host", "existing": "agents.example.com", "requested": "new.example.com"},
        {"what": "path", "existing": "a/b", "requested": "a"},
    ]
    assert replaced["removed"] == [str(old_document), str(old_document.parent)]
    assert str(out / "identity.json") in replaced["files"]
    assert not old_document.parent.exists()
    new_document = out / "web" / "a" / "did.json"
    assert json.loads(new_document.read_text())["id"] == new["did"]
    assert {str(path) for path in out.rglob("*") if path.is_file()} == {*new["files"].values()}
    assert f"replaced {old['did']} (host: agents.example.com → new.example.com; path: a/b → a)" in err
    assert f"removed       {old_document}" in err


@pytest.mark.usefixtures("cli_env")
def test_force_from_did_web_to_bindu_leaves_no_web_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent"
    _provision(capsys, out, *WEB)
    status, new, _ = _provision(capsys, out, *BINDU, "--force")
    assert status == 0
    assert new["did"].startswith("did:bindu:ops_at_example_com:pay-agent:")
    assert new["replaced"]["differences"] == [{"what": "method", "existing": "web", "requested": "bindu"}]
    assert not (out / "web").exists()
    assert json.loads((out / "did.json").read_text())["id"] == new["did"]


@pytest.mark.usefixtures("cli_env")
def test_force_replaces_the_key_when_the_key_type_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent"
    _, old, _ = _provision(capsys, out)
    status, new, err = _provision(capsys, out, "--type", "p256", "--force")
    assert status == 0
    assert new["key"] == "created"
    assert new["key_type"] == "p256"
    assert new["did"] != old["did"]
    assert new["replaced"]["did"] == old["did"]
    assert new["replaced"]["differences"] == [
        {"what": "key_type", "existing": "ed25519", "requested": "p256"}
    ]
    assert str(out / "private.pem") in new["replaced"]["files"]
    assert str(out / "private.pem") in new["written"]
    assert load_private_key(out / "private.pem", CLI_PASSWORD.encode()).key_type is KeyType.P256
    assert _mode(out / "private.pem") == 0o600
    assert f"created a new p256 key; DID {new['did']}" in err
    # The replacement is now the identity: the same options again are an ordinary, idempotent re-run.
    status, again, _ = _provision(capsys, out, "--type", "p256")
    assert (status, again["key"], again["did"], again["replaced"]) == (0, "reused", new["did"], None)


@pytest.mark.usefixtures("cli_env")
def test_a_missing_key_is_not_silently_replaced_by_a_new_identity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent"
    _, old, _ = _provision(capsys, out)
    (out / "private.pem").unlink()
    before = _tree(out)
    status, document, _ = _provision(capsys, out)
    assert status == 1
    error = _error(document)
    assert error["code"] == "identity_mismatch"
    assert error["fields"]["differs"] == ["key"]
    assert _tree(out) == before
    status, new, _ = _provision(capsys, out, "--force")
    assert (status, new["key"]) == (0, "created")
    assert new["did"] != old["did"]
    assert new["replaced"]["did"] == old["did"]


@pytest.mark.usefixtures("cli_env")
def test_an_unreadable_or_edited_record_is_refused_until_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent"
    _, created, _ = _provision(capsys, out)
    (out / "identity.json").write_text("{not json")
    status, document, _ = _provision(capsys, out)
    assert (status, _error(document)["fields"]["differs"]) == (1, ["identity_record"])
    assert (out / "identity.json").read_text() == "{not json"
    # A record whose DID was edited (no option differs, yet the DID would): the last guard refuses.
    record = {name: created[name] for name in ("did_document", "public_key", "csr")}
    record["did"] = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
    (out / "identity.json").write_text(json.dumps(record))
    status, document, _ = _provision(capsys, out)
    assert status == 1
    assert _error(document)["fields"]["differs"] == ["did"]
    status, forced, _ = _provision(capsys, out, "--force")
    assert (status, forced["did"], forced["key"]) == (0, created["did"], "reused")
    assert forced["replaced"]["did"] == record["did"]


#: Each usage error, with the code it must carry.  None of them may leave anything on disk.
USAGE_ERRORS: list[tuple[tuple[str, ...], str]] = [
    (("--endpoint", "https://pay.example.com/a2a"), "endpoint_not_supported"),
    (("--method", "jwk", "--endpoint", "https://pay.example.com/a2a"), "endpoint_not_supported"),
    (("--method", "bindu"), "missing_author"),
    (("--method", "bindu", "--author", "ops!"), "invalidDid"),
    (("--method", "bindu", "--author", "ops", "--endpoint", "ftp://pay.example.com"), "bad_endpoint"),
    (("--method", "web"), "missing_host"),
    (("--method", "web", "--host", "agents.example.com", "--path", "a/../b"), "invalidDid"),
    (("--method", "web", "--host", "agents.example.com", "--path", "a b"), "invalidDid"),
    (("--method", "web", "--host", "127.0.0.1"), "invalidDid"),
    (("--host", "agents.example.com"), "option_not_applicable"),
    (("--path", "pay"), "option_not_applicable"),
    (("--port", "8443"), "option_not_applicable"),
    (("--method", "web", "--host", "agents.example.com", "--author", "ops"), "option_not_applicable"),
    (("--agentdns-url", "http://agentdns.example.com/a"), "bad_agentdns_url"),
    (("--dns", "not_a_dns_name!"), "bad_dns_name"),
    (("--type", "dsa"), "usage"),
    (("--method", "plc"), "usage"),
    (("--port", "0"), "usage"),
]


@pytest.mark.usefixtures("cli_env")
@pytest.mark.parametrize(("options", "code"), USAGE_ERRORS, ids=[code for _, code in USAGE_ERRORS])
def test_every_usage_error_is_found_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...], code: str
) -> None:
    out = tmp_path / "new-agent"
    status, document, _ = _provision(capsys, out, *options)
    assert (status, _error(document)["code"]) == (2, code)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("cli_env")
@pytest.mark.parametrize(
    "argv",
    [
        ("--name", "did:key:z6Mk"),
        ("--name", "x" * 65),
        (
            "--name",
            "pay-agent",
            "--method",
            "bindu",
            "--author",
            "ops",
            "--password-env",
            "UNSET_PROVISION_PW",
        ),
    ],
    ids=["name-is-a-did", "name-too-long", "no-password"],
)
def test_a_bad_name_or_password_source_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    monkeypatch.delenv("UNSET_PROVISION_PW", raising=False)
    out = tmp_path / "new-agent"
    password = () if "--password-env" in argv else PW
    status, _, _ = run_cli_json(capsys, "provision", "--out", str(out), *argv, *password, "--json")
    assert status == 2
    assert list(tmp_path.iterdir()) == []


def test_options_are_checked_before_the_password_is_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No password source at all: the usage error is still the one reported (no prompt, no_password)."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    argv = ["provision", "--name", "a", "--out", str(tmp_path / "agent"), "--method", "bindu", "--json"]
    status, document, _ = run_cli_json(capsys, *argv)
    assert (status, _error(document)["code"]) == (2, "missing_author")


@pytest.mark.usefixtures("cli_env")
def test_a_usage_error_on_an_existing_agent_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent"
    _provision(capsys, out, *WEB)
    before = _tree(out)
    for options, _ in USAGE_ERRORS:
        assert _provision(capsys, out, *options)[0] == 2, options
        assert _provision(capsys, out, *options, "--force")[0] == 2, options
    assert _tree(out) == before


@pytest.mark.usefixtures("cli_env")
def test_human_output_without_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "agent"
    status, stdout, err = run_cli(capsys, "provision", "--name", "a", "--out", str(out), *PW)
    assert (status, stdout) == (0, "")
    assert err.startswith("created a new ed25519 key; DID did:key:z6Mk")
    assert f"  {out / 'private.pem'}" in err
