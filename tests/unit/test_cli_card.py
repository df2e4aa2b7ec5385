"""``mudrika card sign|verify`` end to end through main(): did:key, did:web from a document, rotation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair
from mudrika.crypto.keystore import write_private_key
from mudrika.identity.methods import key as did_key
from tests._support.cli import run_cli

PASSWORD = "card-cli-password"
CARD = {
    "name": "echo",
    "description": "echoes",
    "version": "1.0.0",
    "supportedInterfaces": [
        {"url": "https://a.example/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ],
    "capabilities": {},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "e", "name": "e", "description": "e", "tags": ["e"]}],
}


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("CARD_PW", PASSWORD)
    old, new = KeyPair.generate("p256"), KeyPair.generate("ed25519")
    write_private_key(tmp_path / "old.pem", old, PASSWORD.encode())
    write_private_key(tmp_path / "new.pem", new, PASSWORD.encode())
    card = tmp_path / "card.json"
    card.write_text(json.dumps(CARD))
    return {"dir": tmp_path, "old": old, "new": new, "card": card}


def _kid(pair: KeyPair) -> str:
    did = did_key.create(pair.public_key)
    return f"{did}#{did.removeprefix('did:key:')}"


def test_sign_and_verify_with_rotation(keys: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    tmp: Path = keys["dir"]
    code, out, _ = run_cli(
        capsys, "card", "sign", str(keys["card"]), "--key", str(tmp / "old.pem"), "--kid", _kid(keys["old"]),
        "--password-env", "CARD_PW",
    )  # fmt: skip
    assert code == 0
    (tmp / "signed1.json").write_text(out)
    code, out, err = run_cli(
        capsys, "card", "sign", str(tmp / "signed1.json"), "--key", str(tmp / "new.pem"), "--kid", _kid(keys["new"]),
        "--password-env", "CARD_PW",
    )  # fmt: skip
    assert code == 0
    assert "2 signature(s)" in err
    (tmp / "signed2.json").write_text(out)

    new_did = _kid(keys["new"]).split("#")[0]
    code, out, err = run_cli(
        capsys, "card", "verify", str(tmp / "signed2.json"), "--trust-did", new_did, "--json"
    )
    assert code == 0
    report = json.loads(out)
    assert report["ok"] is True
    assert [s["passed"] for s in report["signatures"]] == [False, True]
    assert "untrusted_did" in err


def test_verify_fails_for_an_untrusted_signer(
    keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp: Path = keys["dir"]
    code, out, _ = run_cli(
        capsys, "card", "sign", str(keys["card"]), "--key", str(tmp / "old.pem"), "--kid", _kid(keys["old"]),
        "--password-env", "CARD_PW",
    )  # fmt: skip
    (tmp / "signed.json").write_text(out)
    stranger = did_key.create(KeyPair.generate("p256").public_key)
    code, _, err = run_cli(capsys, "card", "verify", str(tmp / "signed.json"), "--trust-did", stranger)
    assert code == 1
    assert "verification failed" in err


def test_a_file_that_is_no_did_document_is_refused_by_name(
    keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp: Path = keys["dir"]
    not_a_document = tmp / "not-a-document.json"
    not_a_document.write_text("[1, 2, 3]")
    code, out, _ = run_cli(
        capsys, "card", "verify", str(keys["card"]), "--trust-did", "did:web:shop.example",
        "--did-document", str(not_a_document), "--json",
    )  # fmt: skip
    assert code == 2
    error = json.loads(out)["error"]
    assert error["code"] == "bad_did_document"
    assert str(not_a_document) in error["message"]


def test_did_web_signer_resolved_from_a_given_document(
    keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp: Path = keys["dir"]
    did = "did:web:agents.example"
    jwk = keys["old"].public_key.to_jwk()
    document = {
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": did,
        "verificationMethod": [
            {"id": f"{did}#card", "type": "JsonWebKey2020", "controller": did, "publicKeyJwk": jwk}
        ],
        "assertionMethod": [f"{did}#card"],
    }
    (tmp / "did.json").write_text(json.dumps(document))
    code, out, _ = run_cli(
        capsys, "card", "sign", str(keys["card"]), "--key", str(tmp / "old.pem"), "--kid", f"{did}#card",
        "--password-env", "CARD_PW",
    )  # fmt: skip
    assert code == 0
    (tmp / "signed.json").write_text(out)
    code, _, err = run_cli(
        capsys,
        "card",
        "verify",
        str(tmp / "signed.json"),
        "--trust-did",
        did,
        "--did-document",
        str(tmp / "did.json"),
    )
    assert code == 0, err
    # Without the document the did:web DID cannot be resolved offline: no signature verifies.
    code, _, _ = run_cli(capsys, "card", "verify", str(tmp / "signed.json"), "--trust-did", did)
    assert code == 1


def test_sdk_form_flag(keys: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    tmp: Path = keys["dir"]
    card = dict(CARD, description="")
    (tmp / "empty.json").write_text(json.dumps(card))
    code, out, _ = run_cli(
        capsys, "card", "sign", str(tmp / "empty.json"), "--key", str(tmp / "new.pem"), "--kid", _kid(keys["new"]),
        "--form", "a2a-sdk-1.3", "--password-env", "CARD_PW",
    )  # fmt: skip
    assert code == 0
    (tmp / "signed.json").write_text(out)
    did = _kid(keys["new"]).split("#")[0]
    assert run_cli(capsys, "card", "verify", str(tmp / "signed.json"), "--trust-did", did)[0] == 1
    assert (
        run_cli(capsys, "card", "verify", str(tmp / "signed.json"), "--trust-did", did, "--accept-sdk-form")[
            0
        ]
        == 0
    )
