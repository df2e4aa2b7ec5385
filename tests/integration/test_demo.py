"""``mudrika demo`` end to end, in-process: every step's outcome read from its ``--json`` document.

The demo starts a real a2a-sdk merchant under uvicorn and calls it with the a2a-sdk client; the
test lets sockets reach 127.0.0.1 only, so a demo that dialled out anywhere else would fail here.
"""

from __future__ import annotations

import io
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from mudrika.cli import main
from mudrika.payments.bundle import load_bundle

pytestmark = pytest.mark.integration

LOOPBACK = "127.0.0.1"


def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    connect = socket.socket.connect
    getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            assert address[0] == LOOPBACK, f"the demo tried to reach {address[0]}"
        return connect(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        assert host in (LOOPBACK, None), f"the demo tried to resolve {host}"
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("demo") / "run"
    with pytest.MonkeyPatch.context() as monkeypatch:
        _loopback_only(monkeypatch)
        capture = _Capture(monkeypatch)
        code = main(["demo", "--out", str(out), "--json"])
    document: dict[str, Any] = json.loads(capture.stdout())
    document["exit_code"] = code
    document["stderr"] = capture.stderr()
    return document


class _Capture:
    """stdout/stderr of the in-process CLI (a module-scoped fixture cannot use capsys)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._out = io.StringIO()
        self._err = io.StringIO()
        monkeypatch.setattr(sys, "stdout", self._out)
        monkeypatch.setattr(sys, "stderr", self._err)

    def stdout(self) -> str:
        return self._out.getvalue()

    def stderr(self) -> str:
        return self._err.getvalue()


def _step(demo: dict[str, Any], name: str) -> dict[str, Any]:
    found = [step for step in demo["steps"] if step["step"] == name]
    assert len(found) == 1, f"no single step {name!r}"
    assert found[0]["ok"] is True, found[0]
    details: dict[str, Any] = found[0]["details"]
    return details


def test_the_demo_succeeds_with_every_step_in_order(demo: dict[str, Any]) -> None:
    assert demo["exit_code"] == 0, demo["stderr"]
    assert demo["format"] == "mudrika.demo/v1"
    assert demo["ok"] is True
    assert [step["step"] for step in demo["steps"]] == [
        "provision", "serve", "refusals", "purchase", "verify", "tamper", "files",
    ]  # fmt: skip


def test_step1_provisions_three_parties_and_a_trust_root(demo: dict[str, Any]) -> None:
    details = _step(demo, "provision")
    parties = details["parties"]
    assert parties["merchant"]["did"].startswith("did:web:")
    assert parties["shopping agent"]["did"].startswith("did:key:")
    assert parties["credential issuer"]["did"].startswith("did:bindu:")
    for party in parties.values():
        assert {"private_key", "did_document", "csr", "identity"} <= set(party["files"])
        assert Path(party["files"]["csr"]).read_text().startswith("-----BEGIN CERTIFICATE REQUEST-----")
    root = json.loads(Path(details["trust_root"]).read_text())
    assert root["format"] == "mudrika.trust-root/v1"
    assert set(root["issuers"]) == {parties["credential issuer"]["did"]}
    assert set(root["merchants"]) == {parties["merchant"]["did"]}


def test_step2_serves_on_loopback_behind_the_middleware(demo: dict[str, Any]) -> None:
    details = _step(demo, "serve")
    assert details["url"].startswith("http://127.0.0.1:")
    assert details["authenticators"] == ["http-message-signature (RFC 9421, did:key)", "Bearer"]
    policy = json.loads(Path(details["policy"]).read_text())
    assert policy["operations"]["message/send"] == {"min_level": "operator"}


def test_step3_refuses_before_it_sells_in_the_a2a_error_profile(demo: dict[str, Any]) -> None:
    assert _step(demo, "serve")["error_profile"] == "a2a"
    refusals = _step(demo, "refusals")
    assert refusals["no_credentials"] == {
        "http_status": 401,
        "jsonrpc_code": -31401,
        "message": "Authentication required",
        "reason": "AUTHENTICATION_REQUIRED",
        "scheme": None,
        "www_authenticate": 'Bearer realm="mudrika-demo", Signature realm="mudrika-demo"',
    }
    assert refusals["low_trust_level"] == {
        "http_status": 403,
        "jsonrpc_code": -31403,
        "message": "Forbidden",
        "reason": "PERMISSION_DENIED",
        "scheme": "Bearer",
        "www_authenticate": 'Bearer realm="mudrika-demo", error="insufficient_scope"',
    }


def test_step3_buys_with_signed_mandates_under_both_profiles(demo: dict[str, Any]) -> None:
    purchase = _step(demo, "purchase")
    parties = _step(demo, "provision")["parties"]
    v01, v02 = purchase["ap2-v0.1"], purchase["ap2-v0.2"]
    assert v01["accepted"] is True
    assert v01["signer"] == parties["shopping agent"]["did"]
    assert v01["cart_signed_by"] == parties["merchant"]["did"]
    assert v01["total"] == {"currency": "USD", "value": "138.49"}
    assert v01["merchant_answer"] == "payment accepted: USD 138.49"
    assert v02["accepted"] is True
    assert v02["open_mandates_issued_by"] == parties["credential issuer"]["did"]
    assert v02["delegate"] == parties["shopping agent"]["did"]
    assert v02["checkout_signed_by"] == parties["merchant"]["did"]
    assert v02["total"] == {"currency": "USD", "value": "138.49"}
    assert v02["receipts"] == ["ap2.CheckoutReceipt", "ap2.PaymentReceipt"]


@pytest.mark.parametrize("profile", ["ap2-v0.1", "ap2-v0.2"])
def test_step4_verifies_each_bundle_offline(demo: dict[str, Any], profile: str) -> None:
    details = _step(demo, "verify")[profile]
    assert details["verdict"] == "OK"
    assert details["failed_checks"] == []
    assert details["checks"] > 0
    assert "Verdict: OK" in Path(details["html_report"]).read_text()


def test_step4_bundle_holds_the_chain_as_received(demo: dict[str, Any]) -> None:
    bundle = load_bundle(_step(demo, "verify")["ap2-v0.1"]["bundle"])
    assert bundle.mandates.cart["contents"]["merchant_name"] == "Demo Outfitters"
    v02 = json.loads(Path(_step(demo, "verify")["ap2-v0.2"]["bundle"]).read_text())
    assert v02["format"] == "mudrika.evidence/ap2-v0.2"
    assert v02["checkout_chain"].count("~~") == 1  # the issuer's root and the agent's closing hop


def test_step5_tampering_fails_with_the_values_that_differ(demo: dict[str, Any]) -> None:
    details = _step(demo, "tamper")
    assert details["verdict"] == "FAILED"
    assert (details["original"], details["tampered"]) == (138.49, 13.85)
    failing = {item["check"]: item for item in details["failing_checks"]}
    assert set(failing) == {"merchant.jwt.cart_hash", "cart.total"}
    assert failing["cart.total"]["expected"] == "USD 13.85"
    assert failing["cart.total"]["got"].startswith("USD 138.49")
    assert failing["merchant.jwt.cart_hash"]["expected"] != failing["merchant.jwt.cart_hash"]["got"]
    assert "Verdict: FAILED" in Path(details["html_report"]).read_text()


def test_step6_lists_files_and_working_commands(demo: dict[str, Any]) -> None:
    details = _step(demo, "files")
    for value in details["files"].values():
        for path in value.values() if isinstance(value, dict) else [value]:
            assert Path(path).exists(), path
    verify = details["rerun"]["verify"].split()
    assert main(verify[1:]) == 0  # the printed command verifies the bundle again: verdict OK
    tamper = details["rerun"]["tamper"].split()
    assert main(tamper[1:]) == 1
    verify_v02 = details["rerun"]["verify_v02"].split()
    assert main(verify_v02[1:]) == 0  # the v0.2 bundle with the merchant's recorded nonces: OK


def test_the_human_output_tells_each_step(demo: dict[str, Any]) -> None:
    lines = demo["stderr"].splitlines()
    for number in range(1, 7):
        assert any(line.startswith(f"{number}. ") for line in lines), number
    assert "-31401 Authentication required, reason AUTHENTICATION_REQUIRED" in demo["stderr"]
    assert "-31403 Forbidden, reason PERMISSION_DENIED" in demo["stderr"]
    assert "VERDICT: OK" in demo["stderr"]
    assert "verdict FAILED" in demo["stderr"]
    assert Path(_step(demo, "files")["files"]["password_file"]).read_text() not in demo["stderr"]


def test_a_non_empty_out_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "something").write_text("kept")
    assert main(["demo", "--out", str(tmp_path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "exists"
    assert (tmp_path / "something").read_text() == "kept"


def test_without_the_demo_extra_it_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [name for name in sys.modules if name.startswith("mudrika.cli._demo")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # what a missing package looks like to import
    assert main(["demo", "--out", str(tmp_path / "run"), "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "demo_dependencies_missing"
    assert error["fields"] == {"module": "uvicorn"}
    assert not (tmp_path / "run").exists()


def test_a_payment_with_a_nonce_the_merchant_never_issued_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mudrika.payments.signing import sign_payment as genuine

    def with_a_stale_nonce(*args: Any, **kwargs: Any) -> Any:
        return genuine(*args, **{**kwargs, "nonce": "a-nonce-from-another-checkout"})

    monkeypatch.setattr("mudrika.cli._demo._shopper.sign_payment", with_a_stale_nonce)
    _loopback_only(monkeypatch)
    assert main(["demo", "--out", str(tmp_path / "run"), "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "purchase_refused"
    assert error["fields"]["refusals"] == ["kb_wrong_nonce"]
    assert not (tmp_path / "run" / "evidence").exists()
