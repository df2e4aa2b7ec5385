"""``key_windows`` in the trust root: what loads, what is refused, and where the window goes.

A window is the analyst's record that a key was superseded or reported compromised.  A window that
loads but names no pinned key would leave a compromised key trusted, and a time that reads
differently in two readers would move the boundary; so every such window is refused at load, and
every problem of the file is listed at once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import pytest
from pydantic import ValidationError

from mudrika.crypto.keys import ALL_ALGORITHMS, KeyPair, PublicKey
from mudrika.errors import InvalidInput
from mudrika.identity.anchoring import KeyValidity
from mudrika.identity.methods import key as did_key
from mudrika.payments.trustroot import (
    KeyWindow,
    TrustRoot,
    format_utc_time,
    json_schema,
    parse_trust_root,
    parse_utc_time,
)

MERCHANT = "did:web:shop.example"
ISSUER = "https://issuer.example"
VCT = "urn:example:payment-user:1"
OLD_KEY = KeyPair.generate("ed25519").public_key
NEW_KEY = KeyPair.generate("ed25519").public_key
CART_KEY = KeyPair.generate("ed25519").public_key


def _jwk(key: PublicKey, kid: str) -> dict[str, Any]:
    return {**key.to_jwk(), "kid": kid}


def _merchant_document() -> dict[str, Any]:
    return {
        "id": MERCHANT,
        "verificationMethod": [
            {
                "id": f"{MERCHANT}#cart",
                "type": "JsonWebKey2020",
                "controller": MERCHANT,
                "publicKeyJwk": CART_KEY.to_jwk(),
            }
        ],
        "assertionMethod": [f"{MERCHANT}#cart"],
    }


def _root(issuer_windows: Any = None, merchant_windows: Any = None, **issuers: Any) -> TrustRoot:
    issuer: dict[str, Any] = {"jwks": {"keys": [_jwk(OLD_KEY, "old"), _jwk(NEW_KEY, "new")]}}
    merchant: dict[str, Any] = {"did_document": _merchant_document()}
    if issuer_windows is not None:
        issuer["key_windows"] = issuer_windows
    if merchant_windows is not None:
        merchant["key_windows"] = merchant_windows
    return parse_trust_root(
        {
            "format": "mudrika.trust-root/v1",
            "issuers": {ISSUER: issuer, **issuers},
            "merchants": {MERCHANT: merchant},
            "accepted_vct": [VCT],
        }
    )


def _problems(**kwargs: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInput) as info:
        _root(**kwargs)
    assert info.value.code == "bad_trust_root"
    return [(problem["loc"], problem["msg"]) for problem in info.value.fields["errors"]]


def test_windows_load_and_reach_the_anchored_key() -> None:
    root = _root(
        issuer_windows={
            "old": {"revoked_at": "2026-10-01T00:00:00Z", "reason": "superseded", "note": "rotation notice"},
            "new": {"valid_from": "2026-10-01T00:00:00Z"},
        },
        merchant_windows={
            f"{MERCHANT}#cart": {"revoked_at": "2026-11-02T08:30:00.000001Z", "reason": "compromised"}
        },
    )
    october = datetime(2026, 10, 1, tzinfo=UTC)
    superseded = KeyValidity(revoked_at=october, reason="superseded")
    assert root.validity_of("issuer", ISSUER, "old") == superseded
    assert root.anchor("issuer", ISSUER, "old", algorithms=ALL_ALGORITHMS).validity == superseded
    assert root.anchor("issuer", ISSUER, "new", algorithms=ALL_ALGORITHMS).validity == KeyValidity(
        valid_from=october
    )
    stolen = root.anchor("merchant", MERCHANT, f"{MERCHANT}#cart", algorithms=ALL_ALGORITHMS)
    assert stolen.validity == KeyValidity(
        revoked_at=datetime(2026, 11, 2, 8, 30, 0, 1, tzinfo=UTC), reason="compromised"
    )
    assert root.validity_of("merchant", MERCHANT, "#cart") is None  # indexed like a signature names it
    assert root.validity_of("issuer", "https://unknown.example", "old") is None
    assert root.kids_of("issuer", ISSUER) == ("old", "new")
    assert root.kids_of("merchant", "did:web:unknown.example") == ()
    # The windows survive writing the file back, so the fingerprint covers them.
    again = parse_trust_root(root.to_json())
    assert again.fingerprint == root.fingerprint
    assert again.fingerprint != _root().fingerprint


def test_a_self_certifying_owner_may_window_its_one_key() -> None:
    did = did_key.create(OLD_KEY)
    kid = f"{did}#{did.removeprefix('did:key:')}"
    root = _root(**{did: {"key_windows": {kid: {"valid_until": "2027-01-01T00:00:00Z"}}}})
    assert root.validity_of("issuer", did, kid) == KeyValidity(valid_until=datetime(2027, 1, 1, tzinfo=UTC))
    assert _problems(**{did: {"key_windows": {f"{did}#other": {"valid_until": "2027-01-01T00:00:00Z"}}}}) == [
        (f"issuers.{did}.key_windows.{did}#other", "this entry pins no key with this kid")
    ]


def test_a_window_for_a_key_not_pinned_is_refused() -> None:
    window = {"revoked_at": "2026-10-01T00:00:00Z", "reason": "compromised"}
    assert _problems(issuer_windows={"olld": window}) == [
        (f"issuers.{ISSUER}.key_windows.olld", "this entry pins no key with this kid")
    ]
    # A DID owner's key is named by its absolute DID URL, as the pins index it.
    assert _problems(merchant_windows={"#cart": window}) == [
        (
            f"merchants.{MERCHANT}.key_windows.#cart",
            "this entry pins no key with this kid (name it by its absolute DID URL)",
        )
    ]
    x509_only = {"x509_roots": [], "key_windows": {"k": window}}
    assert any(
        loc.startswith("issuers.https://x509.example")
        for loc, _ in _problems(**{"https://x509.example": x509_only})
    )


def test_every_problem_is_listed_at_once() -> None:
    problems = _problems(
        issuer_windows={
            "old": {"valid_from": "2026-10-01T00:00:00Z", "valid_until": "2026-10-01T00:00:00Z"},
            "new": {"revoked_at": "2026-10-01T00:00:00Z"},
            "gone": {"reason": "superseded"},
        },
        merchant_windows={f"{MERCHANT}#cart": {"valid_from": "2026-02-30T00:00:00Z"}},
    )
    assert problems == [
        (f"issuers.{ISSUER}.key_windows.old", "valid_from must be before valid_until"),
        (
            f"issuers.{ISSUER}.key_windows.new",
            "revoked_at and reason (superseded or compromised) go together",
        ),
        (f"issuers.{ISSUER}.key_windows.gone", "this entry pins no key with this kid"),
        (
            f"issuers.{ISSUER}.key_windows.gone",
            "revoked_at and reason (superseded or compromised) go together",
        ),
        (f"merchants.{MERCHANT}.key_windows.{MERCHANT}#cart", "valid_from: not an existing date and time"),
    ]


def test_the_window_boundary_is_one_microsecond() -> None:
    root = _root(
        issuer_windows={
            "old": {"valid_from": "2026-09-30T23:59:59.999999Z", "valid_until": "2026-10-01T00:00:00Z"}
        }
    )
    end = datetime(2026, 10, 1, tzinfo=UTC)
    assert root.validity_of("issuer", ISSUER, "old") == KeyValidity(
        valid_from=end - timedelta(microseconds=1), valid_until=end
    )
    later = {"valid_from": "2026-10-01T00:00:00.000001Z", "valid_until": "2026-10-01T00:00:00Z"}
    assert _problems(issuer_windows={"old": later}) == [
        (f"issuers.{ISSUER}.key_windows.old", "valid_from must be before valid_until")
    ]


@pytest.mark.parametrize(
    "text",
    [
        "2026-10-01",  # a date alone
        "2026-10-01T00:00Z",  # no seconds
        "2026-10-01T00:00:00",  # naive
        "2026-10-01T02:00:00+02:00",  # an offset: one spelling per instant
        "2026-10-01T00:00:00.0000001Z",  # below a microsecond
        "2026-10-01 00:00:00Z",  # not RFC 3339's T
        "1759276800",  # UNIX seconds belong to the command line, not the file
    ],
)
def test_only_rfc3339_utc_times_load(text: str) -> None:
    with pytest.raises(InvalidInput) as info:
        _root(issuer_windows={"old": {"valid_until": text}})
    assert info.value.code == "bad_trust_root"
    with pytest.raises(InvalidInput) as parsed:
        parse_utc_time(text)
    assert parsed.value.code == "bad_time"


@pytest.mark.parametrize(
    "window",
    [
        {"valid_untill": "2026-10-01T00:00:00Z"},  # an unknown member
        {"revoked_at": "2026-10-01T00:00:00Z", "reason": "lost"},
        {"revoked_at": 1759276800, "reason": "superseded"},  # strict: a number is not a time
        {"note": "x" * 2049},
    ],
)
def test_a_window_is_as_strict_as_the_rest(window: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as info:
        _root(issuer_windows={"old": window})
    assert info.value.code == "bad_trust_root"


def test_times_round_trip_and_the_schema_describes_windows() -> None:
    moment = datetime(2026, 10, 1, 12, 0, 0, 5, tzinfo=UTC)
    assert format_utc_time(moment) == "2026-10-01T12:00:00.000005Z"
    assert parse_utc_time(format_utc_time(moment)) == moment
    assert format_utc_time(datetime(2026, 10, 1, tzinfo=UTC)) == "2026-10-01T00:00:00Z"
    with pytest.raises(InvalidInput):
        format_utc_time(datetime(2026, 10, 1))
    assert KeyWindow(note="only a note").validity() == KeyValidity()
    with pytest.raises(InvalidInput, match="go together"):
        KeyWindow(reason="compromised").validity()
    definitions = json_schema()["$defs"]
    assert set(definitions["KeyWindow"]["properties"]) == {
        "valid_from",
        "valid_until",
        "revoked_at",
        "reason",
        "note",
    }
    assert definitions["KeyWindow"]["additionalProperties"] is False
    for section in ("TrustedIssuer", "PinnedMerchant"):
        assert "key_windows" in definitions[section]["properties"]


def test_a_rejected_value_never_appears_in_the_model_error() -> None:
    """Trust roots hold key material and notes: a value the model refuses is not echoed into the
    error (a log line of it would carry it), whichever model of the file refused it."""
    secret = "SECRET-not-for-logs"
    for document in (
        {"format": "mudrika.trust-root/v1", "leeway_seconds": secret},
        {"format": "mudrika.trust-root/v1", "issuers": {"https://i.example": {"jwks": {"keys": secret}}}},
        {"format": "mudrika.trust-root/v1", "status": {"when_absent": secret}},
        {
            "format": "mudrika.trust-root/v1",
            "merchants": {"did:web:m.example": {"key_windows": {"k": {"reason": secret}}}},
        },
    ):
        with pytest.raises(ValidationError) as refused:
            TrustRoot.model_validate(document)
        assert secret not in str(refused.value)


class _Undecided(tzinfo):
    """A time zone that cannot say its offset: a time in it is as good as naive."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def tzname(self, dt: datetime | None) -> str | None:
        return None


def test_time_helpers_refuse_by_code() -> None:
    with pytest.raises(InvalidInput) as missing_day:
        parse_utc_time("2026-02-30T00:00:00Z")
    assert missing_day.value.code == "bad_time"
    for naive in (datetime(2026, 1, 1), datetime(2026, 1, 1, tzinfo=_Undecided())):
        with pytest.raises(InvalidInput) as refused:
            format_utc_time(naive)
        assert refused.value.code == "naive_time"


@pytest.mark.parametrize(
    ("window", "problem"),
    [
        (
            {"valid_from": "2026-01-02T00:00:00Z", "valid_until": "2026-01-01T00:00:00Z"},
            "valid_from must be before valid_until",
        ),
        (
            {"valid_from": "2026-01-01T00:00:00Z", "valid_until": "2026-01-01T00:00:00Z"},
            "valid_from must be before valid_until",
        ),
    ],
    ids=["reversed", "empty"],
)
def test_a_window_lists_its_problem_and_refuses_to_load(window: dict[str, str], problem: str) -> None:
    parsed = KeyWindow.model_validate(window)
    assert parsed.problems() == [problem]
    with pytest.raises(InvalidInput) as refused:
        parsed.validity()
    assert (refused.value.code, refused.value.message) == ("bad_trust_root", problem)


def test_a_window_one_microsecond_wide_loads() -> None:
    window = KeyWindow.model_validate(
        {"valid_from": "2026-01-01T00:00:00Z", "valid_until": "2026-01-01T00:00:00.000001Z"}
    )
    assert window.problems() == []
    assert window.validity().valid_until == datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC)


def _refusals(document: dict[str, Any]) -> list[dict[str, str]]:
    with pytest.raises(InvalidInput) as refused:
        parse_trust_root(document)
    assert refused.value.code == "bad_trust_root"
    errors: list[dict[str, str]] = refused.value.fields["errors"]
    return errors


@pytest.mark.parametrize("kid", ["#k", "did:Bad:x#k"])
def test_a_malformed_owner_did_is_refused_by_the_did_parser(kid: str) -> None:
    """The owner itself is read first: the refusal names what is wrong with it, whatever its kids."""
    jwk = {**OLD_KEY.to_jwk(), "kid": kid}
    [problem] = _refusals(
        {"format": "mudrika.trust-root/v1", "merchants": {"did:Bad:x": {"jwks": {"keys": [jwk]}}}}
    )
    assert problem == {
        "loc": "merchants.did:Bad:x",
        "msg": "DID method name must be 1+ characters of a-z and 0-9",
    }


@pytest.mark.parametrize("kid", ["?v=1#k", "/keys#k", "k"])
def test_a_pinned_kid_that_is_no_did_url_fragment_is_refused(kid: str) -> None:
    jwk = {**OLD_KEY.to_jwk(), "kid": kid}
    [problem] = _refusals(
        {"format": "mudrika.trust-root/v1", "merchants": {MERCHANT: {"jwks": {"keys": [jwk]}}}}
    )
    assert problem["msg"] == "a pinned key's kid must be a DID URL of its owner"


def test_a_relative_window_kid_gets_the_absolute_hint_and_others_do_not() -> None:
    jwk = {**OLD_KEY.to_jwk(), "kid": "#k"}
    entry = {"jwks": {"keys": [jwk]}, "key_windows": {"#k": {"valid_until": "2026-01-01T00:00:00Z"}}}
    [relative] = _refusals({"format": "mudrika.trust-root/v1", "merchants": {MERCHANT: entry}})
    assert relative["msg"] == "this entry pins no key with this kid (name it by its absolute DID URL)"
    entry["key_windows"] = {"typo": {"valid_until": "2026-01-01T00:00:00Z"}}
    [other] = _refusals({"format": "mudrika.trust-root/v1", "merchants": {MERCHANT: entry}})
    assert other["msg"] == "this entry pins no key with this kid"


def _document_of(did: str) -> dict[str, Any]:
    method = {"id": f"{did}#k", "type": "JsonWebKey2020", "controller": did, "publicKeyJwk": OLD_KEY.to_jwk()}
    return {"id": did, "verificationMethod": [method], "assertionMethod": [f"{did}#k"]}


@pytest.mark.parametrize(
    ("section", "owner", "entry", "message"),
    [
        ("issuers", ISSUER, {"did_webvh_witness": "[]"}, "did_webvh_witness goes with did_webvh_log"),
        ("issuers", ISSUER, {"did_document": _document_of(ISSUER)}, "a DID document needs a DID identifier"),
        (
            "merchants",
            MERCHANT,
            {"did_document": _document_of("did:web:other.example")},
            "the DID document's id is not this identifier",
        ),
        (
            "issuers",
            ISSUER,
            {"jwks": {"keys": [{**OLD_KEY.to_jwk(), "kid": "did:web:issuer.example#k"}]}},
            "an https issuer's pinned kid cannot be a DID URL",
        ),
        (
            "issuers",
            ISSUER,
            {"jwks": {"keys": [{**OLD_KEY.to_jwk(), "kid": "k"}, {**OLD_KEY.to_jwk(), "kid": "k"}]}},
            "duplicate kid",
        ),
    ],
    ids=[
        "witness-without-log",
        "document-for-https",
        "document-of-another-did",
        "did-kid-for-https",
        "duplicate",
    ],
)
def test_an_entry_is_refused_with_the_reason_in_words(
    section: str, owner: str, entry: dict[str, Any], message: str
) -> None:
    [problem] = _refusals(
        {"format": "mudrika.trust-root/v1", "accepted_vct": [VCT], section: {owner: {**entry}}}
    )
    assert problem == {"loc": f"{section}.{owner}", "msg": message}
