"""``mudrika credential issue`` and the key-to-identity checks of every signing command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.cli import main
from mudrika.crypto.keys import PublicKey
from mudrika.crypto.sdjwt import parse
from tests._support.cli import run_cli
from tests._support.paths import FIXTURES

AP2 = FIXTURES / "ap2"
PW = ("--password-env", "MUDRIKA_TEST_PW")


@pytest.fixture
def parties(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    """An issuer, a merchant and a user, each with an Ed25519 key and its did:key; a P-256 key too."""
    monkeypatch.setenv("MUDRIKA_TEST_PW", "a test password for keys")
    result: dict[str, Any] = {"dir": tmp_path}
    for name, key_type in (
        ("issuer", "ed25519"),
        ("merchant", "ed25519"),
        ("user", "ed25519"),
        ("p256", "p256"),
    ):
        assert main(["keys", "generate", "--type", key_type, "--out", str(tmp_path / name), *PW]) == 0
        capsys.readouterr()
        assert (
            main(["did", "create", "--method", "key", "--key", str(tmp_path / name / "public.pem"), "--json"])
            == 0
        )
        did = json.loads(capsys.readouterr().out)["did"]
        result[name] = {"key": str(tmp_path / name / "private.pem"), "did": did, "kid": f"{did}#{did[8:]}"}
    return result


def test_issue_a_credential_bound_to_the_users_key(
    parties: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    issuer, user = parties["issuer"], parties["user"]
    claims = parties["dir"] / "claims.json"
    claims.write_text(json.dumps({"email": "a.sharma@example.com", "card_last4": "4242"}))
    code, out, err = run_cli(
        capsys, "credential", "issue", "--key", issuer["key"], *PW, "--issuer", issuer["did"],
        "--kid", issuer["kid"], "--holder-did", user["did"], "--claims", str(claims),
        "--disclosable", "/email", "--now", "2025-10-01T09:00:00Z", "--json",
    )  # fmt: skip
    assert code == 0, err
    document = json.loads(out)
    assert document["disclosable"] == ["/email"]
    assert document["vct"] == "urn:mudrika:ap2:payment-user:1"
    parsed = parse(document["credential"])
    assert parsed.disclosure_count == 1
    assert not parsed.has_key_binding


def test_issuing_with_another_key_is_refused(
    parties: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    issuer, merchant, user = parties["issuer"], parties["merchant"], parties["user"]
    code, out, _ = run_cli(
        capsys, "credential", "issue", "--key", merchant["key"], *PW, "--issuer", issuer["did"],
        "--kid", issuer["kid"], "--holder-did", user["did"], "--json",
    )  # fmt: skip
    assert code == 2
    error = json.loads(out)["error"]
    assert error["code"] == "key_mismatch"
    assert error["fields"]["expected_thumbprint"] != error["fields"]["got_thumbprint"]
    # An https issuer is checked against the JWK Set it publishes.
    code, out, _ = run_cli(
        capsys, "credential", "issue", "--key", issuer["key"], *PW, "--issuer", "https://issuer.example",
        "--kid", "k1", "--holder-did", user["did"], "--json",
    )  # fmt: skip
    assert code == 2
    assert json.loads(out)["error"]["code"] == "jwks_needed"


def test_an_https_issuer_key_is_checked_against_its_jwk_set(
    parties: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    issuer, user = parties["issuer"], parties["user"]
    public = {
        name: PublicKey.from_pem(Path(parties[name]["key"]).with_name("public.pem").read_bytes()).to_jwk()
        for name in ("issuer", "merchant")
    }
    jwks = parties["dir"] / "jwks.json"
    for keys, expected in (
        ([{**public["issuer"], "kid": "k1"}], 0),
        ([{**public["merchant"], "kid": "k1"}], "key_mismatch"),
        ([{**public["issuer"], "kid": "k2"}], "key_not_in_jwks"),
        ([{**public["issuer"], "kid": "k1"}, {**public["merchant"], "kid": "k1"}], "duplicate_kid"),
    ):
        jwks.write_text(json.dumps({"keys": keys}))
        code, out, err = run_cli(
            capsys, "credential", "issue", "--key", issuer["key"], *PW, "--issuer", "https://issuer.example",
            "--kid", "k1", "--jwks", str(jwks), "--holder-did", user["did"], "--json",
        )  # fmt: skip
        if expected == 0:
            assert code == 0, err
        else:
            assert code == 2
            assert json.loads(out)["error"]["code"] == expected


def test_sign_intent_refuses_a_key_the_kid_does_not_name(
    parties: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        capsys, "mandate", "sign-intent", str(AP2 / "intent_mandate.json"), "--key", parties["merchant"]["key"],
        *PW, "--kid", parties["user"]["kid"],
    )  # fmt: skip
    assert code == 2
    assert out == ""  # nothing was signed
    assert "(key_mismatch;" in err
    assert "sign with the private key of" in err
    code, out, err = run_cli(
        capsys, "mandate", "sign-intent", str(AP2 / "intent_mandate.json"), "--key", parties["user"]["key"],
        *PW, "--kid", parties["user"]["did"] + "#no-such-key",
    )  # fmt: skip
    assert code == 2
    assert "(key_not_in_did;" in err


def test_sign_cart_takes_its_algorithm_from_the_key(
    parties: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    merchant = parties["merchant"]
    common = ("--merchant-did", merchant["did"], "--kid", merchant["kid"], "--aud", "https://p.example")
    code, out, err = run_cli(
        capsys,
        "mandate",
        "sign-cart",
        str(AP2 / "cart_contents.json"),
        "--key",
        merchant["key"],
        *PW,
        *common,
    )
    assert code == 0, err
    header = json.loads(__import__("base64").urlsafe_b64decode(
        json.loads(out)["merchant_authorization"].split(".")[0] + "=="
    ))  # fmt: skip
    assert header["alg"] == "EdDSA"
    code, _, err = run_cli(
        capsys, "mandate", "sign-cart", str(AP2 / "cart_contents.json"), "--key", merchant["key"], *PW,
        *common, "--alg", "ES256",
    )  # fmt: skip
    assert code == 2
    assert "algorithm ES256 does not fit this ed25519 key: use --alg EdDSA" in err
    # A did:web merchant needs its DID document to be checked offline.
    code, _, err = run_cli(
        capsys, "mandate", "sign-cart", str(AP2 / "cart_contents.json"), "--key", merchant["key"], *PW,
        "--merchant-did", "did:web:shop.example", "--kid", "did:web:shop.example#k1", "--aud", "a",
    )  # fmt: skip
    assert code == 2
    assert "--did-document FILE" in err


def test_sign_payment_refuses_a_key_that_is_not_the_credentials(
    parties: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    base: Path = parties["dir"]
    issuer, merchant, user = parties["issuer"], parties["merchant"], parties["user"]
    steps = (
        ("credential", "issue", "--key", issuer["key"], *PW, "--issuer", issuer["did"], "--kid", issuer["kid"],
         "--holder-did", user["did"], "--out", str(base / "credential.txt")),
        ("mandate", "sign-intent", str(AP2 / "intent_mandate.json"), "--key", user["key"], *PW,
         "--kid", user["kid"]),
    )  # fmt: skip
    assert main(list(steps[0])) == 0
    code, out, _ = run_cli(capsys, *steps[1])
    assert code == 0
    (base / "intent.json").write_text(out)
    code, out, _ = run_cli(
        capsys, "mandate", "sign-cart", str(AP2 / "cart_contents.json"), "--key", merchant["key"], *PW,
        "--merchant-did", merchant["did"], "--kid", merchant["kid"], "--aud", "a",
    )  # fmt: skip
    assert code == 0
    (base / "cart.json").write_text(out)
    payment = (
        "mandate", "sign-payment", str(AP2 / "payment_mandate_contents.json"), *PW, "--cart", str(base / "cart.json"),
        "--intent", str(base / "intent.json"), "--credential", str(base / "credential.txt"), "--aud", "a",
        "--nonce", "n",
    )  # fmt: skip
    code, out, err = run_cli(capsys, *payment, "--key", merchant["key"])
    assert code == 2
    assert out == ""
    assert "(key_mismatch;" in err
    assert run_cli(capsys, *payment, "--key", user["key"])[0] == 0


def test_csr_create_refuses_a_did_the_key_does_not_control(
    parties: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        capsys, "csr", "create", "--key", parties["user"]["key"], *PW, "--did", parties["merchant"]["did"],
        "--cn", "agent", "--json",
    )  # fmt: skip
    assert code == 2
    assert json.loads(out)["error"]["code"] == "key_mismatch"
    code, out, _ = run_cli(
        capsys, "csr", "create", "--key", parties["user"]["key"], *PW, "--did", "did:web:agent.example",
        "--cn", "agent", "--json",
    )  # fmt: skip
    assert code == 2
    assert json.loads(out)["error"]["code"] == "did_document_needed"
    code, _, _ = run_cli(
        capsys, "csr", "create", "--key", parties["user"]["key"], *PW, "--did", parties["user"]["did"],
        "--cn", "agent", "--json",
    )  # fmt: skip
    assert code == 0
