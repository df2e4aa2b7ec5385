"""What an operator met provisioning agents, each fixed at its cause.

A wrong password said "could not decrypt or parse the private key (wrong password or not a
supported PEM key)" and exited 2 (malformed input): now a well-formed encrypted key that does not
open is ``wrong_password`` (exit 1, an operation that failed), and a file that is no key is
``bad_private_key`` (exit 2).  ``csr create`` handed another DID's document said "give its DID
document with --did-document", which the operator had done.  ``--path`` had no example.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import InvalidInput, KeyStoreError
from tests._support.cli import run_cli, run_cli_json

PASSWORD = "correct horse battery"


@pytest.fixture
def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.setenv("AGENT_PW", PASSWORD)
    for name, extra in (
        ("a", []),
        ("w", ["--method", "web", "--host", "shop.example", "--path", "agents/w"]),
    ):
        code, _, err = run_cli(
            capsys,
            "provision",
            "--name",
            name,
            "--out",
            str(tmp_path / name),
            "--password-env",
            "AGENT_PW",
            *extra,
        )
        assert code == 0, err
    return tmp_path


def test_a_wrong_password_says_so_and_is_an_operation_failure(
    agents: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_PW", "not the password")
    code, document, _ = run_cli_json(
        capsys, "provision", "--name", "a", "--out", str(agents / "a"), "--password-env", "AGENT_PW", "--json"
    )
    assert code == 1
    assert document["error"]["code"] == "wrong_password"
    assert "password" in document["error"]["message"]


def test_a_file_that_is_no_key_is_malformed_input_not_a_password_problem(tmp_path: Path) -> None:
    pair = KeyPair.generate(KeyType.ED25519)
    encrypted = pair.private_pem(PASSWORD.encode())
    with pytest.raises(KeyStoreError) as wrong:
        KeyPair.from_pem(encrypted, b"another password")
    assert wrong.value.code == "wrong_password"
    for not_a_key in (
        b"garbage",
        encrypted.replace(b"ENCRYPTED PRIVATE KEY", b"CERTIFICATE"),
        b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
    ):
        with pytest.raises(InvalidInput) as bad:
            KeyPair.from_pem(not_a_key, PASSWORD.encode())
        assert bad.value.code == "bad_private_key"
    assert KeyPair.from_pem(encrypted, PASSWORD.encode()).public_key == pair.public_key


def test_csr_with_another_dids_document_names_whose_document_it_is(
    agents: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    web_did = json.loads((agents / "w" / "did.json").read_text())["id"]
    key_did = json.loads((agents / "a" / "did.json").read_text())["id"]
    code, document, _ = run_cli_json(
        capsys,
        "csr", "create",
        "--key", str(agents / "w" / "private.pem"),
        "--did", web_did,
        "--cn", "w",
        "--password-env", "AGENT_PW",
        "--did-document", str(agents / "a" / "did.json"),
        "--json",
    )  # fmt: skip
    assert code == 2
    error = document["error"]
    assert error["code"] == "did_document_mismatch"
    assert error["fields"]["given"] == [key_did]
    assert key_did in error["message"]
    assert web_did in error["message"]


def test_provision_help_shows_what_path_makes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "provision", "--help")
    assert code == 0
    assert "did:web:shop.example:agents:alice" in " ".join(out.split())
