"""v0.2 evidence bundles: profile detection, strict parsing, offline verdicts of the fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mudrika.errors import InvalidInput
from mudrika.payments.trustroot import load_trust_root
from mudrika.payments.v02 import HopExpectation
from mudrika.payments.v02.bundle import (
    detect_profile,
    inspect_v02_bundle,
    load_v02_bundle,
    parse_v02_bundle,
    profile_of,
)
from tests._support.ap2_v02 import CHECKOUT_NONCE, CP_AUDIENCE, FIXTURE_TIME, MERCHANT_DID, PAYMENT_NONCE

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BUNDLE = FIXTURES / "ap2-v02" / "bundle.json"
TRUST_ROOT = FIXTURES / "ap2-v02" / "trust-root.json"


def test_profiles_are_told_apart_by_format() -> None:
    assert detect_profile(BUNDLE.read_bytes()) == "ap2-v0.2"
    for v01 in sorted((FIXTURES / "evidence").glob("*.json")):
        assert detect_profile(v01.read_bytes()) == "ap2-v0.1"
    assert detect_profile(b"not json") == "ap2-v0.1"


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


def test_profile_of_a_file(tmp_path: Path) -> None:
    assert profile_of(BUNDLE) == "ap2-v0.2"
    assert profile_of(tmp_path / "missing.json") == "ap2-v0.1"
    large = tmp_path / "large.json"
    large.write_bytes(b" " * 64 + BUNDLE.read_bytes())
    assert profile_of(large, max_bytes=32) == "ap2-v0.1"
