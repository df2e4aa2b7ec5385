"""``mudrika mandate``: sign-intent, sign-cart, sign-payment and verify, end to end through main()."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.cli import main
from mudrika.crypto import sdjwt
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.keystore import write_private_key
from mudrika.identity.methods import key as did_key
from mudrika.payments.signing import issue_user_credential
from tests._support.cli import run_cli
from tests._support.evidence import NONCE as BUNDLE_NONCE
from tests._support.evidence import evidence_builder
from tests._support.paths import FIXTURES

PASSWORD = "correct horse battery staple"
NOW = "2025-10-01T12:21:10Z"
MERCHANT = "did:web:stride-athletics.example"
ISSUER = "https://wallet-issuer.example"
AUD = "https://payments.processor.example"
NONCE = "n-cli-7f3a"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Keys on disk (encrypted), the merchant's DID document, the issuer's JWKS and a credential."""
    monkeypatch.setenv("MUDRIKA_TEST_PASSWORD", PASSWORD)
    keys = tmp_path / "keys"
    user = KeyPair.generate("p256")
    merchant = KeyPair.generate("p256")
    issuer = KeyPair.generate("p256")
    write_private_key(keys / "user.pem", user, PASSWORD.encode())
    write_private_key(keys / "merchant.pem", merchant, PASSWORD.encode())
    user_did = did_key.create(user.public_key)
    builder = evidence_builder()
    (tmp_path / "merchant-did.json").write_text(
        json.dumps(builder.merchant_document(merchant.public_key.to_jwk()))
    )
    jwk = {**issuer.public_key.to_jwk(), "kid": "iss-1"}
    (tmp_path / "issuer-jwks.json").write_text(json.dumps({"keys": [jwk]}))
    credential = issue_user_credential(
        issuer_key=issuer, issuer=ISSUER, kid="iss-1", user_key=user.public_key, now=1_759_000_000
    )
    (tmp_path / "credential.txt").write_text(credential.compact() + "\n")
    # The analyst's trust root, written with the trust-root commands.
    trust_root = str(tmp_path / "trust-root.json")
    for argv in (
        ("init", trust_root, "--merchant-aud", AUD, "--kb-aud", AUD),
        ("add-issuer", trust_root, ISSUER, "--jwks", str(tmp_path / "issuer-jwks.json")),
        ("add-merchant", trust_root, MERCHANT, "--did-document", str(tmp_path / "merchant-did.json")),
    ):
        assert main(["trust-root", *argv]) == 0
    return {
        "trust_root": trust_root,
        "dir": tmp_path,
        "user_key": str(keys / "user.pem"),
        "merchant_key": str(keys / "merchant.pem"),
        "user_kid": f"{user_did}#{user_did.removeprefix('did:key:')}",
    }


def _sign_all(capsys: pytest.CaptureFixture[str], world: dict[str, Any]) -> Path:
    base: Path = world["dir"]
    # (command, source under fixtures/ap2, signing key, --now, further options, output file); each
    # step may read the files the steps before it wrote (the payment signs over cart.json).
    steps: tuple[tuple[str, str, str, str, tuple[str, ...], str], ...] = (
        (
            "sign-intent",
            "intent_mandate.json",
            world["user_key"],
            "2025-10-01T11:00:00Z",
            ("--kid", world["user_kid"]),
            "intent.json",
        ),
        (
            "sign-cart",
            "cart_contents.json",
            world["merchant_key"],
            "2025-10-01T12:20:00Z",
            (
                "--merchant-did",
                MERCHANT,
                "--kid",
                MERCHANT + "#cart-signing-1",
                "--aud",
                AUD,
                "--did-document",
                str(base / "merchant-did.json"),
            ),
            "cart.json",
        ),
        (
            "sign-payment",
            "payment_mandate_contents.json",
            world["user_key"],
            "2025-10-01T12:21:08Z",
            (
                "--cart",
                str(base / "cart.json"),
                "--intent",
                str(base / "intent.json"),
                "--credential",
                str(base / "credential.txt"),
                "--aud",
                AUD,
                "--nonce",
                NONCE,
            ),
            "payment.json",
        ),
    )
    for command, source, key, now, options, target in steps:
        code, out, err = run_cli(
            capsys,
            "mandate",
            command,
            str(FIXTURES / "ap2" / source),
            "--key",
            key,
            *options,
            "--now",
            now,
            "--password-env",
            "MUDRIKA_TEST_PASSWORD",
        )
        assert code == 0, err
        (base / target).write_text(out)
    return base


def _verify_args(base: Path, nonce: str = NONCE) -> list[str]:
    """Verify the three signed files: trust from the trust root, evidence keys from the files."""
    return [
        "mandate",
        "verify",
        str(base / "intent.json"),
        str(base / "cart.json"),
        str(base / "payment.json"),
        "--merchant-aud",
        AUD,
        "--kb-aud",
        AUD,
        "--kb-nonce",
        nonce,
        "--trust-root",
        str(base / "trust-root.json"),
        "--did-document",
        str(base / "merchant-did.json"),
        "--jwks",
        f"{ISSUER}={base / 'issuer-jwks.json'}",
        "--at",
        NOW,
    ]


def test_sign_then_verify(capsys: pytest.CaptureFixture[str], world: dict[str, Any]) -> None:
    base = _sign_all(capsys, world)
    cart = json.loads((base / "cart.json").read_text())
    assert set(cart) == {"contents", "merchant_authorization"}
    code, out, err = run_cli(capsys, *_verify_args(base), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["ok"] is True
    assert report["verdict"] == "OK"
    assert report["counts"] == {"passed": 77, "failed": 0, "skipped": 0}
    assert [key["provenance"] for key in report["keys"]] == [
        "self-certifying",
        "trust-root",
        "trust-root",
        "credential-cnf",
    ]
    assert "every check passed" in err
    assert "PASSED: 77 checks" in err


def test_verify_failures_exit_1(
    capsys: pytest.CaptureFixture[str], world: dict[str, Any], tmp_path: Path
) -> None:
    base = _sign_all(capsys, world)
    html = tmp_path / "report.html"
    code, out, err = run_cli(capsys, *_verify_args(base, nonce="other-nonce"), "--html", str(html))
    assert code == 1
    assert out == ""
    assert "user.kb.nonce" in err
    assert "FAILED" in err
    assert "<!DOCTYPE html>" in html.read_text()


def test_replay_db_remembers_across_runs(
    capsys: pytest.CaptureFixture[str], world: dict[str, Any], tmp_path: Path
) -> None:
    base = _sign_all(capsys, world)
    db = ("--replay-db", str(tmp_path / "replay.sqlite3"))
    assert run_cli(capsys, *_verify_args(base), *db)[0] == 0
    code, _, err = run_cli(capsys, *_verify_args(base), *db)
    assert code == 1
    assert "replay.merchant_jti" in err


def test_verify_usage_errors(capsys: pytest.CaptureFixture[str], world: dict[str, Any]) -> None:
    base = _sign_all(capsys, world)
    args = _verify_args(base)
    without_nonce = args[: args.index("--kb-nonce")] + args[args.index("--kb-nonce") + 2 :]
    code, _, err = run_cli(capsys, *without_nonce)
    assert code == 2
    assert "--kb-nonce" in err
    assert run_cli(capsys, "mandate", "verify", str(base / "intent.json"), str(base / "cart.json"))[0] == 2
    assert run_cli(capsys, *args[:-1], "yesterday")[0] == 2
    without_root = args[: args.index("--trust-root")] + args[args.index("--trust-root") + 2 :]
    code, _, err = run_cli(capsys, *without_root)
    assert code == 2
    assert "--trust-root" in err


def test_verify_a_bundle(capsys: pytest.CaptureFixture[str]) -> None:
    bundle = str(FIXTURES / "evidence" / "bundle.json")
    root = str(FIXTURES / "evidence" / "trust-root.json")
    code, out, _ = run_cli(
        capsys, "mandate", "verify", bundle, "--trust-root", root, "--kb-nonce", BUNDLE_NONCE, "--json"
    )
    assert code == 0
    assert json.loads(out)["evaluated_at"] == "2025-10-01T12:21:10Z"
    code, out, err = run_cli(capsys, "mandate", "verify", bundle, "--json")
    assert code == 1
    assert json.loads(out)["verdict"] == "UNANCHORED"
    assert "UNANCHORED" in err


def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str], world: dict[str, Any], tmp_path: Path) -> None:
    bad = tmp_path / "dup.json"
    bad.write_text('{"id": "a", "id": "b"}')
    code, _, err = run_cli(
        capsys,
        "mandate",
        "sign-cart",
        str(bad),
        "--key",
        world["merchant_key"],
        "--merchant-did",
        MERCHANT,
        "--kid",
        MERCHANT + "#cart-signing-1",
        "--aud",
        AUD,
        "--password-env",
        "MUDRIKA_TEST_PASSWORD",
    )
    assert code == 2
    assert "duplicate" in err


def test_sign_payment_checks_the_key_against_the_credentials_holder(
    capsys: pytest.CaptureFixture[str], world: dict[str, Any]
) -> None:
    base = _sign_all(capsys, world)
    no_cnf = sdjwt.issue(
        {"iss": ISSUER, "vct": "mandate.payment.1"},
        issuer_key=KeyPair.generate("p256"),
        kid="iss-1",
        disclosable=(),
        holder_key=None,
    )
    other_holder = issue_user_credential(
        issuer_key=KeyPair.generate("p256"),
        issuer=ISSUER,
        kid="iss-1",
        user_key=KeyPair.generate("p256").public_key,
        now=1_759_000_000,
    )
    for credential, code in ((no_cnf, "bad_cnf"), (other_holder, "key_mismatch")):
        (base / "credential.txt").write_text(credential.compact() + "\n")
        status, out, err = run_cli(
            capsys, "mandate", "sign-payment", str(FIXTURES / "ap2" / "payment_mandate_contents.json"),
            "--key", world["user_key"], "--cart", str(base / "cart.json"), "--intent", str(base / "intent.json"),
            "--credential", str(base / "credential.txt"), "--aud", AUD, "--nonce", NONCE,
            "--now", "2025-10-01T12:21:08Z", "--password-env", "MUDRIKA_TEST_PASSWORD",
        )  # fmt: skip
        assert status == 2
        assert out == ""
        assert f"({code}" in err


def test_help_explains_itself(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "mandate", "--help")
    assert code == 0
    for command in ("sign-intent", "sign-cart", "sign-payment", "verify"):
        assert command in out
    code, out, _ = run_cli(capsys, "mandate", "verify", "--help")
    assert code == 0
    assert "--kb-nonce" in out
    assert "evidence bundle" in out


def test_verify_refuses_evidence_files_it_cannot_use(
    capsys: pytest.CaptureFixture[str], world: dict[str, Any], tmp_path: Path
) -> None:
    base = _sign_all(capsys, world)
    args = _verify_args(base)
    not_a_document = tmp_path / "list.json"
    not_a_document.write_text("[1, 2]")
    with_list = [
        *args[: args.index("--did-document") + 1],
        str(not_a_document),
        *args[args.index("--jwks") :],
    ]
    code, out, err = run_cli(capsys, *with_list, "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["code"] == "bad_did_document"
    assert error["message"] == f"{not_a_document} is not a DID document (no 'id')"
    no_issuer = [
        *args[: args.index("--jwks") + 1],
        str(base / "issuer-jwks.json"),
        *args[args.index("--at") :],
    ]
    code, _, err = run_cli(capsys, *no_issuer)
    assert code == 2
    assert "use ISSUER=FILE" in err


def test_json_lists_passed_checks_as_each_verify_documents(capsys: pytest.CaptureFixture[str]) -> None:
    """v0.1 ``verify --json`` lists passed checks only with -v; ``v02 verify`` (no -v) always does."""
    v01 = ("mandate", "verify", str(FIXTURES / "evidence" / "bundle.json"), "--kb-nonce", BUNDLE_NONCE)
    v01_root = ("--trust-root", str(FIXTURES / "evidence" / "trust-root.json"), "--json")
    for extra, listed in (((), False), (("-v",), True)):
        code, out, _ = run_cli(capsys, *v01, *v01_root, *extra)
        assert code == 0
        report = json.loads(out)
        assert report["passed"] == {"count": report["counts"]["passed"], "listed": listed}
        assert any(check["status"] == "passed" for check in report["checks"]) is listed
    v02 = FIXTURES / "ap2-v02"
    code, out, _ = run_cli(
        capsys,
        "mandate",
        "v02",
        "verify",
        str(v02 / "bundle.json"),
        "--trust-root",
        str(v02 / "trust-root.json"),
        "--json",
    )
    assert code == 1
    report = json.loads(out)
    assert report["passed"]["listed"] is True
    assert sum(check["status"] == "passed" for check in report["checks"]) == report["counts"]["passed"] > 0
