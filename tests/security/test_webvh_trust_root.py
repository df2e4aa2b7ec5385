"""A did:webvh party pinned in the trust root by its log, its keys judged as of the signing day.

The log (made by PyPI ``did-webvh``, the independent implementation) lists ``#key-1`` from day 0 and
replaces it with ``#key-2`` on day 10.  A v0.1 credential issued by that DID is judged by the version
of the log in force when it was signed: ``#key-1`` before day 10 stands, after it fails
(``key_expired``), ``#key-2`` after day 10 stands.  A tampered log, or one for another DID, does
not load.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.payments.chain import inspect_chain
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import parse_trust_root
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder
from tests._support.webvh import T0, make_assertion_rotation_log

BUILDER = evidence_builder()
DAY = 86_400
KEY_1 = KeyPair.generate("ed25519")
KEY_2 = KeyPair.generate("ed25519")
LOG = make_assertion_rotation_log(KEY_1, KEY_2, rotated_at=T0 + timedelta(days=10))
ISSUER = LOG.did


def _root_document(chain: Any, **entry: Any) -> dict[str, Any]:
    document: dict[str, Any] = chain.trust_root_document(
        issuers={ISSUER: {"did_webvh_log": LOG.text(), **entry}}
    )
    return document


def _inspect(*, signed_day: int, key: KeyPair, fragment: str) -> VerificationReport:
    # The credential is issued 30 days before the purchase: purchase = signing day + 30 days.
    now = int(T0.timestamp()) + (signed_day + 30) * DAY
    chain = BUILDER.build_chain(
        seeded=False, now=now, issuer=ISSUER, issuer_signer=(key, f"{ISSUER}#{fragment}")
    )
    chain.trusted_issuers = (ISSUER,)
    return inspect_chain(
        chain.intent,
        chain.cart,
        chain.payment,
        **{**chain.expectations(), "trust_root": parse_trust_root(_root_document(chain))},
        replay_store=MemoryReplayStore(),
    )


def _window_check(report: VerificationReport) -> Any:
    return report.by_id("issuer.key.window")


def test_the_first_key_stands_for_what_it_signed_before_the_rotation() -> None:
    report = _inspect(signed_day=5, key=KEY_1, fragment="key-1")
    assert report.verdict == "OK", [(c.id, c.code) for c in report.failures]
    assert _window_check(report).passed


def test_the_first_key_fails_for_what_it_signed_after_the_rotation() -> None:
    report = _inspect(signed_day=15, key=KEY_1, fragment="key-1")
    check = _window_check(report)
    assert (check.status, check.code) == ("failed", "key_expired")
    assert "2025-03-11" in (check.detail or "")  # the day the log dropped it
    assert report.verdict == "FAILED"


def test_the_second_key_stands_after_the_rotation_and_not_before() -> None:
    assert _inspect(signed_day=15, key=KEY_2, fragment="key-2").verdict == "OK"
    before = _inspect(signed_day=5, key=KEY_2, fragment="key-2")
    assert _window_check(before).code == "key_not_yet_valid"


def test_an_analysts_compromise_date_narrows_the_logs_window() -> None:
    now = int(T0.timestamp()) + 35 * DAY
    chain = BUILDER.build_chain(
        seeded=False, now=now, issuer=ISSUER, issuer_signer=(KEY_1, f"{ISSUER}#key-1")
    )
    document = _root_document(
        chain,
        key_windows={f"{ISSUER}#key-1": {"revoked_at": "2025-03-03T00:00:00Z", "reason": "compromised"}},
    )
    root = parse_trust_root(document)
    validity = root.validity_of("issuer", ISSUER, f"{ISSUER}#key-1")
    assert validity is not None
    assert (validity.valid_from, validity.valid_until) == (T0, T0 + timedelta(days=10))
    assert validity.reason == "compromised"


@pytest.mark.parametrize("damage", ["tampered", "another-did", "with-jwks"])
def test_a_log_that_does_not_verify_does_not_load(damage: str) -> None:
    chain = BUILDER.build_chain(seeded=False, issuer=ISSUER)
    lines = [json.loads(line) for line in LOG.text().splitlines()]
    issuer = ISSUER
    entry: dict[str, Any] = {"did_webvh_log": LOG.text()}
    if damage == "tampered":
        lines[0]["state"]["verificationMethod"][0]["publicKeyMultibase"] = KEY_2.public_key.to_multikey()
        entry["did_webvh_log"] = "".join(json.dumps(line) + "\n" for line in lines)
    elif damage == "another-did":
        issuer = ISSUER.replace("dids:issuer", "dids:other")
    else:
        entry["jwks"] = chain.jwks[BUILDER.ISSUER]
    document = chain.trust_root_document(issuers={issuer: entry})
    with pytest.raises(InvalidInput) as refused:
        parse_trust_root(document)
    assert refused.value.code == "bad_trust_root"


def test_the_pinned_log_stays_out_of_reprs() -> None:
    """A log is megabytes of JSON lines: a trust root's repr (a log line, a debugger) names the
    entry, never dumps it."""
    chain = BUILDER.build_chain(seeded=False, issuer=ISSUER)
    root = parse_trust_root(_root_document(chain, did_webvh_witness="[]"))
    entry = root.issuers[ISSUER]
    first_line = LOG.text().splitlines()[0]
    assert first_line not in repr(entry)
    assert "did_webvh_log" not in repr(entry)
    assert "did_webvh_witness" not in repr(entry)
    assert first_line not in repr(root)


def test_an_analysts_start_after_the_logs_end_does_not_load() -> None:
    chain = BUILDER.build_chain(seeded=False, issuer=ISSUER)
    late_start = {f"{ISSUER}#key-1": {"valid_from": "2025-03-12T00:00:00Z"}}  # the log ends it 03-11 12:00
    exactly = {f"{ISSUER}#key-1": {"valid_from": "2025-03-11T12:00:00Z"}}
    for windows in (late_start, exactly):
        with pytest.raises(InvalidInput) as refused:
            parse_trust_root(_root_document(chain, key_windows=windows))
        [problem] = refused.value.fields["errors"]
        assert problem["msg"] == "valid_from must be before valid_until"
    fine = {f"{ISSUER}#key-1": {"valid_from": "2025-03-11T11:59:59Z"}}
    assert (
        parse_trust_root(_root_document(chain, key_windows=fine)).validity_of(
            "issuer", ISSUER, f"{ISSUER}#key-1"
        )
        is not None
    )


def test_a_log_pins_only_a_did_webvh_identifier() -> None:
    chain = BUILDER.build_chain(seeded=False)
    document = chain.trust_root_document(issuers={"did:web:issuer.example": {"did_webvh_log": LOG.text()}})
    with pytest.raises(InvalidInput) as refused:
        parse_trust_root(document)
    [problem] = refused.value.fields["errors"]
    assert problem["msg"] == "did_webvh_log pins a did:webvh identifier"
