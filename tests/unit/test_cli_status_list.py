"""``mudrika status-list``: an issuer keeps a list, revokes one credential, signs and publishes the
token; a verifier checks credentials issued with ``credential issue --status-uri --status-index``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mudrika.crypto.keys import KeyPair
from mudrika.crypto.keystore import write_private_key
from mudrika.identity.methods import key as did_key
from tests._support.cli import run_cli, run_cli_json
from tests._support.offline import forbid_network

PASSWORD = "status-list-test-password"
PW = ("--password-env", "MUDRIKA_SL_PW")
URI = "https://issuer.example/statuslists/1"
NOW = "2026-03-01T12:00:00Z"


@pytest.fixture
def issuer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    """(key file, DID, kid) of an Ed25519 issuer with a did:key."""
    monkeypatch.setenv("MUDRIKA_SL_PW", PASSWORD)
    forbid_network(monkeypatch)
    pair = KeyPair.generate("ed25519")
    key = tmp_path / "issuer.pem"
    write_private_key(key, pair, PASSWORD.encode())
    did = did_key.create(pair.public_key)
    return str(key), did, f"{did}#{did.removeprefix('did:key:')}"


def test_issue_revoke_sign_check(
    tmp_path: Path, issuer: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, did, kid = issuer
    lst, token = str(tmp_path / "list.json"), str(tmp_path / "list.jwt")
    code, created, _ = run_cli_json(
        capsys, "status-list", "create", lst, "--uri", URI, "--size", "1000", "--bits", "2", "--json"
    )
    assert (code, created["counts"]) == (0, {"VALID": 1000})
    credentials = {}
    for index in (5, 6):
        out = str(tmp_path / f"credential-{index}.txt")
        code, _, err = run_cli(
            capsys, "credential", "issue", "--key", key, "--issuer", did, "--kid", kid, "--holder-did", did,
            "--status-uri", URI, "--status-index", str(index), "--now", NOW, "--out", out, *PW,
        )  # fmt: skip
        assert code == 0, err
        credentials[index] = out
    assert run_cli(capsys, "status-list", "set", lst, "5", "revoked")[0] == 0
    code, shown, _ = run_cli_json(capsys, "status-list", "show", lst, "--json")
    assert shown["counts"] == {"VALID": 999, "INVALID": 1}
    assert (
        run_cli(
            capsys, "status-list", "sign", lst, "--key", key, "--kid", kid, "--now", NOW, "--out", token, *PW
        )[0]
        == 0
    )
    check = (
        "status-list",
        "check",
        "--token",
        token,
        "--kid",
        kid,
        "--now",
        "2026-03-01T13:00:00Z",
        "--json",
    )
    code, revoked, _ = run_cli_json(capsys, *check, "--credential", credentials[5])
    assert (code, revoked["status_name"], revoked["idx"]) == (1, "INVALID", 5)
    code, valid, _ = run_cli_json(capsys, *check, "--credential", credentials[6])
    assert (code, valid["ok"], valid["uri"]) == (0, True, URI)
    code, by_index, _ = run_cli_json(capsys, *check, "--idx", "5", "--uri", URI)
    assert (code, by_index["status"]) == (1, 1)


def test_check_refuses_a_list_signed_by_another_key(
    tmp_path: Path, issuer: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, _, _ = issuer
    lst, token = str(tmp_path / "list.json"), str(tmp_path / "list.jwt")
    assert run_cli(capsys, "status-list", "create", lst, "--uri", URI, "--size", "8")[0] == 0
    assert run_cli(capsys, "status-list", "sign", lst, "--key", key, "--out", token, *PW)[0] == 0
    stranger = did_key.create(KeyPair.generate("ed25519").public_key)
    kid = f"{stranger}#{stranger.removeprefix('did:key:')}"
    code, report, _ = run_cli_json(
        capsys, "status-list", "check", "--token", token, "--kid", kid, "--idx", "0", "--uri", URI, "--json"
    )
    assert (code, report["error"]["code"]) == (1, "bad_signature")


def test_check_refuses_a_stale_list(
    tmp_path: Path, issuer: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, _, kid = issuer
    lst, token = str(tmp_path / "list.json"), str(tmp_path / "list.jwt")
    assert run_cli(capsys, "status-list", "create", lst, "--uri", URI, "--size", "8")[0] == 0
    sign = (
        "status-list",
        "sign",
        lst,
        "--key",
        key,
        "--now",
        NOW,
        "--lifetime",
        "864000",
        "--out",
        token,
        *PW,
    )
    assert run_cli(capsys, *sign)[0] == 0
    code, report, _ = run_cli_json(
        capsys, "status-list", "check", "--token", token, "--kid", kid, "--idx", "0", "--uri", URI,
        "--now", "2026-03-03T12:00:00Z", "--max-age", "86400", "--json",
    )  # fmt: skip
    assert (code, report["error"]["code"]) == (1, "status_list_too_old")


def test_set_refuses_a_value_the_bits_cannot_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lst = str(tmp_path / "list.json")
    assert run_cli(capsys, "status-list", "create", lst, "--uri", URI, "--size", "8", "--bits", "1")[0] == 0
    code, report, _ = run_cli_json(capsys, "status-list", "set", lst, "0", "suspended", "--json")
    assert (code, report["error"]["code"]) == (2, "bad_status_value")
