"""``mudrika mandate v02``: a whole v0.2 transaction signed and verified through main(), and the
v0.2 evidence bundle through ``mudrika dispute verify``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.cli import main
from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.keystore import write_private_key
from mudrika.payments.v02 import sd_digest
from tests._support.ap2_v02 import (
    AGENT_PROVIDER,
    AGENT_PROVIDER_KID,
    CHECKOUT_NONCE,
    MERCHANT_DID,
    MERCHANT_KID,
    build,
    trust_root_for,
)
from tests._support.ap2_v02 import Keys as V02Keys

PASSWORD = "correct horse battery staple"
NOW = "2026-05-01T12:00:00Z"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ap2-v02"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("MUDRIKA_TEST_PASSWORD", PASSWORD)
    keys = V02Keys(
        issuer=KeyPair.generate(KeyType.P256),
        merchant=KeyPair.generate(KeyType.P256),
        agent=KeyPair.generate(KeyType.P256),
    )
    for name in ("issuer", "merchant", "agent"):
        write_private_key(tmp_path / "keys" / f"{name}.pem", getattr(keys, name), PASSWORD.encode())
    (tmp_path / "trust-root.json").write_text(trust_root_for(keys).to_json())
    template = build(keys=keys, now=1777636800)
    for name in ("checkout", "open_checkout", "closed_checkout"):
        (tmp_path / f"{name}.json").write_text(json.dumps(getattr(template, name)))
    return {"dir": tmp_path, "keys": tmp_path / "keys", "template": template}


def key_args(world: dict[str, Any], name: str) -> list[str]:
    return ["--key", str(world["keys"] / f"{name}.pem"), "--password-env", "MUDRIKA_TEST_PASSWORD"]


def test_a_transaction_is_signed_and_verified_through_the_cli(
    capsys: pytest.CaptureFixture[str], world: dict[str, Any]
) -> None:
    base: Path = world["dir"]
    code, signed, _ = run(
        capsys, "mandate", "v02", "sign-checkout", str(base / "checkout.json"), *key_args(world, "merchant"),
        "--kid", MERCHANT_KID,
    )  # fmt: skip
    assert code == 0
    assert signed["checkout_hash"] == sd_digest(signed["checkout_jwt"])
    closed = {"vct": "mandate.checkout.1", **signed}
    (base / "closed.json").write_text(json.dumps(closed))
    code, root, _ = run(
        capsys, "mandate", "v02", "issue-open", str(base / "open_checkout.json"), *key_args(world, "issuer"),
        "--iss", AGENT_PROVIDER, "--kid", AGENT_PROVIDER_KID, "--now", "2026-05-01T11:59:00Z",
    )  # fmt: skip
    assert code == 0
    assert "/delegate_payload/0" in root["disclosable_paths"]
    (base / "root.txt").write_text(root["sd_jwt"])
    code, presented, _ = run(
        capsys, "mandate", "v02", "present", str(base / "root.txt"), str(base / "closed.json"),
        *key_args(world, "agent"), "--aud", MERCHANT_DID, "--nonce", CHECKOUT_NONCE, "--now", NOW,
    )  # fmt: skip
    assert code == 0
    (base / "chain.txt").write_text(presented["chain"])
    verify = (
        "mandate", "v02", "verify", "--trust-root", str(base / "trust-root.json"),
        "--checkout-chain", str(base / "chain.txt"), "--checkout-aud", MERCHANT_DID,
        "--checkout-nonce", CHECKOUT_NONCE, "--at", NOW, "--json",
    )  # fmt: skip
    code, report, err = run(capsys, *verify, "--replay-db", str(base / "replay.sqlite"))
    assert code == 0, err
    assert report["verdict"] == "OK"
    assert report["format"] == "mudrika.report/v2"
    assert "OK: every check passed" in err
    # The same consent a second time, on the same replay database: refused.
    code, report, _ = run(capsys, *verify, "--replay-db", str(base / "replay.sqlite"))
    assert code == 1
    assert report["verdict"] == "FAILED"
    wrong_nonce = [arg if arg != CHECKOUT_NONCE else "guessed" for arg in verify]
    code, report, _ = run(capsys, *wrong_nonce)
    assert code == 1
    assert "guessed" not in json.dumps(report)


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], world: dict[str, Any]) -> None:
    base: Path = world["dir"]
    trust = ("--trust-root", str(base / "trust-root.json"))
    assert run(capsys, "mandate", "v02", "verify", *trust)[0] == 2
    assert (
        run(capsys, "mandate", "v02", "verify", *trust, "--checkout-chain", "x", "--checkout-aud", "a")[0]
        == 2
    )
    (base / "chain.txt").write_text(world["template"].checkout_chain)
    (base / "usage.json").write_text('{"occurrences": 1, "currency": "USD", "refunds": 3}')
    code, error, _ = run(
        capsys, "mandate", "v02", "verify", *trust, "--checkout-chain", str(base / "chain.txt"),
        "--checkout-aud", MERCHANT_DID, "--checkout-nonce", CHECKOUT_NONCE, "--usage", str(base / "usage.json"), "--json",
    )  # fmt: skip
    assert code == 2
    assert error["error"]["code"] == "bad_usage"
    (base / "bad.json").write_text('{"vct": "mandate.checkout.open.1", "vct": "twice"}')
    code, _, err = run(
        capsys, "mandate", "v02", "issue-open", str(base / "bad.json"), *key_args(world, "issuer"),
        "--iss", AGENT_PROVIDER, "--kid", AGENT_PROVIDER_KID,
    )  # fmt: skip
    assert code == 2
    assert "duplicate_key" in err


def test_a_v02_bundle_is_verified_by_both_commands(capsys: pytest.CaptureFixture[str]) -> None:
    bundle, trust_root = str(FIXTURES / "bundle.json"), str(FIXTURES / "trust-root.json")
    code, report, err = run(capsys, "dispute", "verify", bundle, "--trust-root", trust_root, "--json")
    assert code == 1  # the nonces came from the bundle: UNANCHORED
    assert report["verdict"] == "UNANCHORED"
    assert "UNANCHORED" in err
    code, report, _ = run(
        capsys, "mandate", "v02", "verify", bundle, "--trust-root", trust_root, "--json",
        "--checkout-aud", MERCHANT_DID, "--checkout-nonce", "checkout-nonce-7f3a",
        "--payment-aud", "https://credentials.example", "--payment-nonce", "payment-nonce-91c2",
    )  # fmt: skip
    assert code == 0
    assert report["verdict"] == "OK"
    code, _, err = run(capsys, "dispute", "verify", bundle)
    assert code == 2
    assert "trust root" in err
