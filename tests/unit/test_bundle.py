"""Evidence bundles (mudrika.evidence/v1): format, strict parsing, offline verification at evidence time."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from mudrika.errors import InvalidInput
from mudrika.payments.bundle import (
    BUNDLE_FORMAT,
    EvidenceBundle,
    inspect_bundle,
    load_bundle,
    parse_bundle,
)
from tests._support.evidence import BUNDLE, evidence_builder, forbid_network


def _document() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(BUNDLE.read_text(encoding="utf-8"))
    return value


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_network(monkeypatch)


@pytest.mark.usefixtures("no_network")
def test_fixture_bundle_verifies_offline_at_evidence_time() -> None:
    bundle = load_bundle(BUNDLE)
    assert bundle.format == BUNDLE_FORMAT
    report = inspect_bundle(bundle)
    assert report.ok, [check.id for check in report.failures]
    assert report.mode == "offline"
    assert report.evaluated_at == "2025-10-01T12:21:10Z"
    assert len(report.checks) == 62


@pytest.mark.usefixtures("no_network")
def test_evaluated_today_the_same_chain_fails() -> None:
    report = inspect_bundle(load_bundle(BUNDLE), at=2_000_000_000)
    assert [check.id for check in report.failures] == ["intent.expiry"]
    assert not report.ok


def test_make_bundle_reproduces_the_fixture_byte_for_byte() -> None:
    chain = evidence_builder().build_chain()
    bundle = chain.bundle(
        description="Example dispute evidence: the fixtures/ap2 purchase, signed with seed keys "
        "(fixtures/evidence/make_bundle.py). Valid at the evidence time; expired today."
    )
    assert bundle.to_json() + "\n" == BUNDLE.read_text(encoding="utf-8")


def test_round_trip_and_pickle() -> None:
    bundle = load_bundle(BUNDLE)
    again = parse_bundle(bundle.to_json())
    assert again == bundle
    report = inspect_bundle(bundle)
    assert pickle.loads(pickle.dumps(report)) == report


def test_a_did_web_merchant_needs_its_document_in_the_bundle() -> None:
    document = _document()
    document["keys"]["did_documents"] = {}
    report = inspect_bundle(parse_bundle(json.dumps(document)))
    assert [check.id for check in report.failures] == ["merchant.jws.key"]
    assert report.by_id("merchant.jws.key").error == "unavailable"


def test_the_bundle_expectations_are_the_ones_checked() -> None:
    document = _document()
    document["expectations"]["kb_nonce"] = "another-nonce"
    report = inspect_bundle(parse_bundle(json.dumps(document)))
    assert [check.id for check in report.failures] == ["user.kb.nonce"]


def test_tampered_mandate_in_the_bundle_fails_a_check() -> None:
    document = _document()
    document["mandates"]["cart"]["contents"]["payment_request"]["details"]["total"]["amount"]["value"] = 1.49
    report = inspect_bundle(parse_bundle(json.dumps(document)))
    assert "merchant.jwt.cart_hash" in [check.id for check in report.failures]


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda d: d.update(format="mudrika.evidence/v2"), "not_a_bundle"),
        (lambda d: d.update(surprise=1), "bad_bundle"),
        (lambda d: d.update(evidence_time="2025-10-01T12:21:10"), "bad_bundle"),
        (lambda d: d["expectations"].update(leeway_seconds=60), "bad_bundle"),
        (lambda d: d["expectations"].update(trusted_issuers=[]), "bad_bundle"),
        (lambda d: d["mandates"].pop("payment"), "bad_bundle"),
        (lambda d: d["keys"].update(extra={}), "bad_bundle"),
    ],
)
def test_malformed_bundles(mutate: Any, code: str) -> None:
    document = _document()
    mutate(document)
    with pytest.raises(InvalidInput) as info:
        parse_bundle(json.dumps(document))
    assert info.value.code == code


def test_strict_json_and_size_caps(tmp_path: Path) -> None:
    text = BUNDLE.read_text(encoding="utf-8")
    duplicated = text.replace(
        '"format": "mudrika.evidence/v1",', '"format": "mudrika.evidence/v1", "format": "x",', 1
    )
    with pytest.raises(InvalidInput) as info:
        parse_bundle(duplicated)
    assert info.value.code == "duplicate_key"
    with pytest.raises(InvalidInput) as info:
        parse_bundle(text, max_bytes=1000)
    assert info.value.code == "too_large"
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2000)
    with pytest.raises(InvalidInput) as info:
        load_bundle(big, max_bytes=1000)
    assert info.value.code == "too_large"
    with pytest.raises(InvalidInput):
        load_bundle(tmp_path / "missing.json")


def test_bad_key_material_is_malformed_input() -> None:
    document = _document()
    document["keys"]["jwks"]["https://wallet-issuer.example"]["keys"][0]["x"] = "AAAA"
    bundle = parse_bundle(json.dumps(document))
    with pytest.raises(InvalidInput):
        inspect_bundle(bundle)
    pinned = _document()
    pinned["keys"]["pinned"] = {"k": {"jwk": {"kty": "OKP"}}}
    with pytest.raises(InvalidInput):
        inspect_bundle(parse_bundle(json.dumps(pinned)))


def test_pinned_keys_are_bound_to_their_owner() -> None:
    chain = evidence_builder().build_chain()
    document = json.loads(chain.bundle().to_json())
    issuer_jwk = document["keys"]["jwks"].pop("https://wallet-issuer.example")["keys"][0]
    document["keys"]["pinned"] = {
        "wallet-issuer-2025-1": {"owner": "https://wallet-issuer.example", "jwk": issuer_jwk}
    }
    assert inspect_bundle(parse_bundle(json.dumps(document))).ok
    document["keys"]["pinned"]["wallet-issuer-2025-1"]["owner"] = "https://someone.example"
    report = inspect_bundle(parse_bundle(json.dumps(document)))
    assert [check.id for check in report.failures] == ["issuer.jwt.key"]


def test_evidence_bundle_model_is_frozen() -> None:
    bundle = load_bundle(BUNDLE)
    assert isinstance(bundle, EvidenceBundle)
    with pytest.raises(ValueError, match="frozen"):
        bundle.evidence_time = "2030-01-01T00:00:00Z"
