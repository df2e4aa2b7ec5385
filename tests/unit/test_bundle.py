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
from mudrika.payments.trustroot import TrustRoot, load_trust_root
from tests._support.evidence import (
    BUNDLE,
    NONCE,
    TRUST_ROOT,
    evidence_builder,
    trust_root_for,
)


def _document() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(BUNDLE.read_text(encoding="utf-8"))
    return value


def _root() -> TrustRoot:
    return load_trust_root(TRUST_ROOT)


@pytest.mark.usefixtures("no_network")
def test_fixture_bundle_verifies_offline_at_evidence_time() -> None:
    bundle = load_bundle(BUNDLE)
    assert bundle.format == BUNDLE_FORMAT
    report = inspect_bundle(bundle, trust_root=_root(), kb_nonce=NONCE)
    assert report.verdict == "OK", [check.id for check in report.failures]
    assert report.ok
    assert report.anchored
    assert report.mode == "offline"
    assert report.evaluated_at == "2025-10-01T12:21:10Z"
    assert len(report.checks) == 77
    assert report.trust_root == _root().fingerprint
    assert [(key.role, key.provenance, key.anchored) for key in report.keys] == [
        ("user (intent)", "self-certifying", True),
        ("merchant", "trust-root", True),
        ("issuer", "trust-root", True),
        ("user (cnf)", "credential-cnf", True),
    ]
    assert report.expectations["kb_nonce"]["source"] == "analyst"
    assert report.expectations["kb_audience"]["source"] == "analyst"


@pytest.mark.usefixtures("no_network")
def test_without_the_analysts_nonce_the_verdict_is_unanchored() -> None:
    report = inspect_bundle(load_bundle(BUNDLE), trust_root=_root())
    assert report.checks_passed
    assert report.verdict == "UNANCHORED"
    assert not report.ok
    assert report.expectations["kb_nonce"]["source"] == "evidence"
    assert report.unanchored_because == (
        "kb_nonce was asserted by the evidence, not by the analyst or the trust root",
    )


@pytest.mark.usefixtures("no_network")
def test_without_a_trust_root_every_check_runs_and_the_verdict_is_unanchored() -> None:
    report = inspect_bundle(load_bundle(BUNDLE), trust_root=None)
    assert report.checks_passed
    assert len(report.checks) == 77
    assert report.verdict == "UNANCHORED"
    assert report.trust_root is None
    assert report.to_dict()["verdict"] == "UNANCHORED"
    assert [key.provenance for key in report.keys] == [
        "self-certifying",
        "did-document-snapshot",
        "jwks-snapshot",
        "credential-cnf",
    ]
    assert not any(key.anchored for key in report.keys)
    merchant = report.keys[1]
    assert merchant.note is not None
    assert "fetched 2025-10-01T12:19:10Z via https GET" in merchant.note
    assert report.unanchored_because[0].startswith("no trust root was given")


@pytest.mark.usefixtures("no_network")
def test_evaluated_today_the_same_chain_fails() -> None:
    report = inspect_bundle(load_bundle(BUNDLE), trust_root=_root(), kb_nonce=NONCE, at=2_000_000_000)
    assert [check.id for check in report.failures] == ["intent.expiry"]
    assert report.verdict == "FAILED"


def test_make_bundle_reproduces_the_fixture_byte_for_byte() -> None:
    chain = evidence_builder().build_chain()
    bundle = chain.bundle(
        description="Example dispute evidence: the fixtures/ap2 purchase, signed with seed keys "
        "(fixtures/evidence/make_bundle.py). Valid at the evidence time; expired today."
    )
    assert bundle.to_json() + "\n" == BUNDLE.read_text(encoding="utf-8")
    assert chain.trust_root().to_json() + "\n" == TRUST_ROOT.read_text(encoding="utf-8")


def test_round_trip_and_pickle() -> None:
    bundle = load_bundle(BUNDLE)
    again = parse_bundle(bundle.to_json())
    assert again == bundle
    report = inspect_bundle(bundle, trust_root=_root(), kb_nonce=NONCE)
    assert pickle.loads(pickle.dumps(report)) == report


def test_a_pinned_merchant_needs_no_document_in_the_bundle() -> None:
    document = _document()
    document["keys"]["did_documents"] = {}
    report = inspect_bundle(parse_bundle(json.dumps(document)), trust_root=_root(), kb_nonce=NONCE)
    assert report.verdict == "OK"


def test_an_unpinned_did_web_merchant_needs_its_document_in_the_bundle() -> None:
    root = _root()
    unpinned = trust_root_for(
        issuers={"https://wallet-issuer.example": root.issuers["https://wallet-issuer.example"].model_dump()},
        verifier=root.verifier.model_dump(),
    )
    report = inspect_bundle(load_bundle(BUNDLE), trust_root=unpinned, kb_nonce=NONCE)
    assert report.verdict == "UNANCHORED"
    assert report.unanchored_because == (
        "the merchant key did:web:stride-athletics.example#cart-signing-1 is not anchored: "
        "a DID-document snapshot carried with the evidence",
    )
    document = _document()
    document["keys"]["did_documents"] = {}
    report = inspect_bundle(parse_bundle(json.dumps(document)), trust_root=unpinned, kb_nonce=NONCE)
    assert [check.id for check in report.failures] == ["merchant.jws.key"]
    # A document missing from the evidence is the evidence's fault, not an outage.
    assert (report.by_id("merchant.jws.key").error, report.by_id("merchant.jws.key").code) == (
        "document",
        "notFound",
    )


def test_the_bundles_expectations_are_evidence_not_trust() -> None:
    document = _document()
    document["expectations"]["kb_nonce"] = "another-nonce"
    bundle = parse_bundle(json.dumps(document))
    # The analyst's nonce is checked, the bundle's is not consulted ...
    assert inspect_bundle(bundle, trust_root=_root(), kb_nonce=NONCE).verdict == "OK"
    # ... and without it the bundle's own (wrong) nonce is used, flagged, and fails.
    report = inspect_bundle(bundle, trust_root=_root())
    assert [check.id for check in report.failures] == ["user.kb.nonce"]
    assert report.expectations["kb_nonce"]["source"] == "evidence"
    report = inspect_bundle(bundle, trust_root=_root(), kb_nonce="the-processors-other-nonce")
    assert [check.id for check in report.failures] == ["user.kb.nonce"]


def test_tampered_mandate_in_the_bundle_fails_a_check() -> None:
    document = _document()
    document["mandates"]["cart"]["contents"]["payment_request"]["details"]["total"]["amount"]["value"] = 1.49
    report = inspect_bundle(parse_bundle(json.dumps(document)), trust_root=_root(), kb_nonce=NONCE)
    assert "merchant.jwt.cart_hash" in [check.id for check in report.failures]


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda d: d.update(format="mudrika.evidence/v2"), "not_a_bundle"),
        (lambda d: d.update(surprise=1), "bad_bundle"),
        (lambda d: d.update(evidence_time="2025-10-01T12:21:10"), "bad_bundle"),
        (lambda d: d["expectations"].update(leeway_seconds=60), "bad_bundle"),
        (
            lambda d: d["keys"]["fetched"].update(x={"at": "2025-10-01T12:00:00", "via": "https"}),
            "bad_bundle",
        ),
        (lambda d: d["keys"]["fetched"].update(x={"at": "2025-10-01T12:00:00Z"}), "bad_bundle"),
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


def test_a_malformed_bundle_names_its_first_problem_and_counts_the_rest() -> None:
    document = _document()
    document.update(surprise=1, evidence_time="not a time")
    with pytest.raises(InvalidInput) as info:
        parse_bundle(json.dumps(document))
    problems = info.value.fields["errors"]
    assert sorted(problem["loc"] for problem in problems) == ["evidence_time", "surprise"]
    assert info.value.message.startswith(f"malformed evidence bundle: {problems[0]['loc']}: ")
    assert info.value.message.endswith(" (and 1 more)")


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
        inspect_bundle(bundle, trust_root=_root())
    pinned = _document()
    pinned["keys"]["pinned"] = {"k": {"jwk": {"kty": "OKP"}}}
    with pytest.raises(InvalidInput):
        inspect_bundle(parse_bundle(json.dumps(pinned)), trust_root=_root())


def test_pinned_keys_are_bound_to_their_owner() -> None:
    chain = evidence_builder().build_chain()
    document = json.loads(chain.bundle().to_json())
    issuer_jwk = document["keys"]["jwks"].pop("https://wallet-issuer.example")["keys"][0]
    document["keys"]["pinned"] = {
        "wallet-issuer-2025-1": {"owner": "https://wallet-issuer.example", "jwk": issuer_jwk}
    }
    # A key the bundle pins is evidence: without a trust root the checks pass, UNANCHORED.
    report = inspect_bundle(parse_bundle(json.dumps(document)), trust_root=None)
    assert report.checks_passed
    assert report.verdict == "UNANCHORED"
    assert report.keys[2].provenance == "pinned-in-evidence"
    document["keys"]["pinned"]["wallet-issuer-2025-1"]["owner"] = "https://someone.example"
    report = inspect_bundle(parse_bundle(json.dumps(document)), trust_root=None)
    assert [check.id for check in report.failures] == ["issuer.jwt.key"]


def test_evidence_bundle_model_is_frozen() -> None:
    bundle = load_bundle(BUNDLE)
    assert isinstance(bundle, EvidenceBundle)
    with pytest.raises(ValueError, match="frozen"):
        bundle.evidence_time = "2030-01-01T00:00:00Z"
