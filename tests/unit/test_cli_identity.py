"""The identity CLI in-process: keys generate, did create/resolve, csr create, provision; exit codes 0/1/2."""

from __future__ import annotations

import io
import json
import logging
import stat
from pathlib import Path

import pytest

from mudrika.cli import main
from mudrika.crypto.keystore import load_private_key

PASSWORD = "cli-test-password"


@pytest.fixture(autouse=True)
def _password_and_no_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUDRIKA_TEST_PW", PASSWORD)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    out = capsys.readouterr().out
    document = json.loads(out)
    assert isinstance(document, dict)
    return document


def test_keys_generate_writes_private_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "keys"
    code = main(
        [
            "keys",
            "generate",
            "--type",
            "p256",
            "--out",
            str(out),
            "--password-env",
            "MUDRIKA_TEST_PW",
            "--json",
        ]
    )
    assert code == 0
    result = _json(capsys)
    assert result["key_type"] == "p256"
    assert stat.S_IMODE((out / "private.pem").stat().st_mode) == 0o600
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert (
        load_private_key(out / "private.pem", PASSWORD.encode()).public_key.thumbprint()
        == result["thumbprint"]
    )


def test_keys_generate_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["keys", "generate", "--out", str(tmp_path / "k"), "--password-env", "MUDRIKA_TEST_PW"]
    assert main(args) == 0
    before = (tmp_path / "k" / "private.pem").read_bytes()
    assert main(args) == 1
    assert "refusing to overwrite" in capsys.readouterr().err
    assert (tmp_path / "k" / "private.pem").read_bytes() == before


def test_no_password_source_without_a_terminal_is_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "generate", "--out", str(tmp_path / "k")]) == 2
    assert "never prompts" in capsys.readouterr().err


def test_unknown_key_type_is_usage_error(tmp_path: Path) -> None:
    assert main(["keys", "generate", "--type", "dsa", "--out", str(tmp_path / "k")]) == 2


def test_did_create_and_resolve_did_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["keys", "generate", "--out", str(tmp_path / "k"), "--password-env", "MUDRIKA_TEST_PW"])
    capsys.readouterr()
    assert (
        main(["did", "create", "--method", "key", "--key", str(tmp_path / "k" / "public.pem"), "--json"]) == 0
    )
    created = _json(capsys)
    did = str(created["did"])
    assert did.startswith("did:key:z6Mk")
    assert main(["did", "resolve", did, "--json"]) == 0
    resolved = _json(capsys)
    assert resolved["didDocument"] == created["did_document"]


def test_did_create_from_private_key_needs_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["keys", "generate", "--out", str(tmp_path / "k"), "--password-env", "MUDRIKA_TEST_PW"])
    key = str(tmp_path / "k" / "private.pem")
    assert main(["did", "create", "--method", "jwk", "--key", key]) == 2
    capsys.readouterr()
    assert main(["did", "create", "--method", "jwk", "--key", key, "--password-env", "MUDRIKA_TEST_PW"]) == 0
    assert capsys.readouterr().out.startswith("did:jwk:")


def test_did_create_web_writes_document_at_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["keys", "generate", "--out", str(tmp_path / "k"), "--password-env", "MUDRIKA_TEST_PW"])
    args = ["did", "create", "--method", "web", "--host", "example.com", "--path", "agents/pay"]
    args += ["--key", str(tmp_path / "k" / "public.pem"), "--out", str(tmp_path / "site")]
    assert main(args) == 0
    document = json.loads((tmp_path / "site" / "agents" / "pay" / "did.json").read_text())
    assert document["id"] == "did:web:example.com:agents:pay"


def test_did_resolve_malformed_did_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["did", "resolve", "did:Bad:x"]) == 2
    assert "error" in capsys.readouterr().err


def test_did_resolve_offline_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(
        [
            "provision",
            "--name",
            "snap",
            "--out",
            str(tmp_path / "a"),
            "--method",
            "bindu",
            "--author",
            "ops",
            "--password-env",
            "MUDRIKA_TEST_PW",
            "--json",
        ]
    )
    identity = _json(capsys)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps({identity["did"]: identity["did_document"]}))
    assert main(["did", "resolve", str(identity["did"]), "--snapshot", str(snapshot), "--json"]) == 0
    assert _json(capsys)["didDocument"] == identity["did_document"]


def test_an_oversized_snapshot_is_refused_before_it_is_read_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps({"did:web:shop.example": {"id": "did:web:shop.example"}}))
    monkeypatch.setattr("mudrika.cli.did._MAX_SNAPSHOT", 16)
    assert main(["did", "resolve", "did:web:shop.example", "--snapshot", str(snapshot), "--json"]) == 2
    error = _json(capsys)["error"]
    assert isinstance(error, dict)
    assert error["code"] == "too_large"


def test_csr_create(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["keys", "generate", "--out", str(tmp_path / "k"), "--password-env", "MUDRIKA_TEST_PW"])
    capsys.readouterr()
    # The SAN must name a DID the key controls: another key's DID is refused (key_mismatch, exit 2).
    other = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
    args = [
        "csr",
        "create",
        "--key",
        str(tmp_path / "k" / "private.pem"),
        "--did",
        other,
        "--cn",
        "agent-one",
    ]
    assert main([*args, "--password-env", "MUDRIKA_TEST_PW", "--json"]) == 2
    error = _json(capsys)["error"]
    assert isinstance(error, dict)
    assert error["code"] == "key_mismatch"
    assert (
        main(["did", "create", "--method", "key", "--key", str(tmp_path / "k" / "public.pem"), "--json"]) == 0
    )
    did = str(_json(capsys)["did"])
    args = ["csr", "create", "--key", str(tmp_path / "k" / "private.pem"), "--did", did, "--cn", "agent-one"]
    args += ["--out", str(tmp_path / "agent.csr"), "--password-env", "MUDRIKA_TEST_PW", "--json"]
    assert main(args) == 0
    assert str(_json(capsys)["csr_fingerprint"]).startswith("SHA256:")
    assert (tmp_path / "agent.csr").read_bytes().startswith(b"-----BEGIN CERTIFICATE REQUEST-----")
    assert (
        main(
            [
                "csr",
                "create",
                "--key",
                str(tmp_path / "k" / "private.pem"),
                "--did",
                did,
                "--password-env",
                "MUDRIKA_TEST_PW",
            ]
        )
        == 2
    )


def test_provision_cli_and_no_secret_in_any_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    out = tmp_path / "agent"
    args = [
        "provision",
        "--name",
        "demo-agent",
        "--out",
        str(out),
        "--method",
        "bindu",
        "--author",
        "demo",
        "--password-env",
        "MUDRIKA_TEST_PW",
        "--json",
    ]
    assert main(args) == 0
    captured = capsys.readouterr()
    identity = json.loads(captured.out)
    assert identity["did"].startswith("did:bindu:demo:demo-agent:")
    pair = load_private_key(out / "private.pem", PASSWORD.encode())
    secret = pair.private_jwk()["d"]
    everything = captured.out + captured.err + "\n".join(r.getMessage() for r in caplog.records)
    assert secret not in everything
    assert PASSWORD not in everything
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["did"] == identity["did"]


def test_help_explains_itself(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["provision", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "never replaced" in text
    assert "--password-env" in text
