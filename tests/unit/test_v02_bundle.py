"""v0.2 evidence bundles: profile detection, strict parsing, offline verdicts of the fixture."""

from __future__ import annotations

import json

import pytest

from mudrika.errors import InvalidInput
from mudrika.payments.batch import VERIFIERS, verifier_for
from mudrika.payments.bundle import BUNDLE_FORMAT
from mudrika.payments.trustroot import load_trust_root
from mudrika.payments.v02 import HopExpectation
from mudrika.payments.v02.bundle import (
    BUNDLE_FORMAT_V02,
    inspect_v02_bundle,
    load_v02_bundle,
    parse_v02_bundle,
)
from tests._support.ap2_v02 import CHECKOUT_NONCE, CP_AUDIENCE, FIXTURE_TIME, MERCHANT_DID, PAYMENT_NONCE
from tests._support.paths import FIXTURES

BUNDLE = FIXTURES / "ap2-v02" / "bundle.json"
TRUST_ROOT = FIXTURES / "ap2-v02" / "trust-root.json"


def test_profiles_are_told_apart_by_format() -> None:
    v02 = json.loads(BUNDLE.read_bytes())
    assert verifier_for(v02) is VERIFIERS[BUNDLE_FORMAT_V02]
    for v01 in sorted((FIXTURES / "evidence").glob("*.json")):
        document = json.loads(v01.read_bytes())
        if document.get("format") == BUNDLE_FORMAT:
            assert verifier_for(document) is VERIFIERS[BUNDLE_FORMAT]


def test_the_fixture_is_unanchored_on_the_evidence_word_and_ok_on_the_analyst_word() -> None:
    bundle = load_v02_bundle(BUNDLE)
    trust_root = load_trust_root(TRUST_ROOT)
    report = inspect_v02_bundle(bundle, trust_root=trust_root)
    assert report.checks_passed, report.first_failure
    assert report.verdict == "UNANCHORED"
    assert report.evaluated_at == "2026-05-01T12:00:00Z"
    analyst = inspect_v02_bundle(
        bundle,
        trust_root=trust_root,
        checkout_hops=[HopExpectation(MERCHANT_DID, CHECKOUT_NONCE, source="analyst")],
        payment_hops=[HopExpectation(CP_AUDIENCE, PAYMENT_NONCE, source="analyst")],
    )
    assert analyst.verdict == "OK"
    assert not [check for check in analyst.checks if check.id.startswith("v02.single_use")]


def test_the_fixture_is_judged_at_the_evidence_time() -> None:
    bundle = load_v02_bundle(BUNDLE)
    later = inspect_v02_bundle(bundle, trust_root=load_trust_root(TRUST_ROOT), at=FIXTURE_TIME + 86400)
    assert later.verdict == "FAILED"


def test_bundles_are_parsed_strictly() -> None:
    document = json.loads(BUNDLE.read_text(encoding="utf-8"))
    with pytest.raises(InvalidInput) as caught:
        parse_v02_bundle(json.dumps({**document, "keys": {}}))
    assert caught.value.code == "bad_bundle"
    with pytest.raises(InvalidInput) as caught:
        parse_v02_bundle(json.dumps({**document, "format": "mudrika.evidence/v1"}))
    assert caught.value.code == "not_a_bundle"
    with pytest.raises(InvalidInput):
        parse_v02_bundle(json.dumps({**document, "evidence_time": "2026-05-01T12:00:00"}))
    with pytest.raises(InvalidInput) as caught:
        inspect_v02_bundle(parse_v02_bundle(json.dumps(document)), trust_root=None)  # type: ignore[arg-type]
    assert caught.value.code == "trust_root_required"
