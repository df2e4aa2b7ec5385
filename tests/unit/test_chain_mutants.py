"""What the chain verifier's stages record, check by check, where the mutation check found no test
looking (scripts/mutation.py, ``payments/chain/_jws.py``, ``_cart.py``, ``_links.py``).

A dispute analyst reads the report, not the boolean: which of a JWS's four phases held, which key each
concerns, what was allowed against what came, whose check it is, and why a check did not run.  These
tests pin those facts for each way a merchant signature can fail, and the limits of the cart stage at
their exact edges.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.crypto.multibase import base58btc_encode
from mudrika.errors import UntrustedKeyError, VerificationError
from mudrika.identity.methods import jwk as did_jwk
from mudrika.identity.methods import key as did_key
from mudrika.payments.chain import inspect_chain, verify_cart, verify_chain
from mudrika.payments.chain._cart import MERCHANT_CLAIM_CHECKS, check_cart
from mudrika.payments.chain._jws import JWS_PHASES, run_jws_phases
from mudrika.payments.chain._keys import Anchors, ResolvedKey, StageRules
from mudrika.payments.chain._links import LINK_CHECKS
from mudrika.payments.chain._payment import _check_subject
from mudrika.payments.models import (
    CartMandate,
    PaymentMandate,
    Received,
    cart_contents_hash,
    receive_cart,
    receive_intent,
    receive_payment,
)
from mudrika.payments.report import Recorder, VerificationReport
from mudrika.payments.trustroot import parse_trust_root
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder
from tests.unit.test_chain_verify import LINK_CASES

_BUILDER = evidence_builder()
_KID = _BUILDER.MERCHANT_KID
_POLICY = "ES256,ES256K,Ed25519,EdDSA"  # the fixture trust root's allow-list, as the report lists it


@pytest.fixture(scope="module")
def chain() -> Any:
    return _BUILDER.build_chain(key_type="p256")


def _inspect(
    chain: Any, *, intent: Any = None, cart: Any = None, payment: Any = None, **overrides: Any
) -> VerificationReport:
    """inspect_chain over ``chain`` with one mandate or expectation replaced; every report must list
    every check of the chain once, in order (a stage that did not run reports its checks skipped)."""
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore(), **overrides}
    report = inspect_chain(intent or chain.intent, cart or chain.cart, payment or chain.payment, **kwargs)
    ids = [check.id for check in report.checks]
    signed_intent = "intent.jws.header" in ids  # an unsigned intent has no intent.jws.* checks
    assert ids == [name for name in _valid_order() if signed_intent or not name.startswith("intent.jws.")]
    return report


@functools.cache
def _valid_order() -> tuple[str, ...]:
    chain = _BUILDER.build_chain(key_type="p256")
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore()}
    return tuple(
        check.id for check in inspect_chain(chain.intent, chain.cart, chain.payment, **kwargs).checks
    )


def _report(chain: Any, cart: Received[CartMandate] | None = None) -> VerificationReport:
    return _inspect(chain, cart=cart)


def _encode(value: Any) -> str:
    return b64url_encode(json.dumps(value, separators=(",", ":")).encode())


def _segments(chain: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    header, payload, _ = chain.cart.model.merchant_authorization.split(".")
    return json.loads(b64url_decode(header)), json.loads(b64url_decode(payload))


def _signed(header: dict[str, Any], payload_text: bytes, key: KeyPair) -> str:
    signing_input = f"{_encode(header)}.{b64url_encode(payload_text)}"
    return f"{signing_input}.{b64url_encode(key.sign(signing_input.encode()))}"


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _with_token(chain: Any, token: str) -> Received[CartMandate]:
    return receive_cart({**chain.cart.plain(), "merchant_authorization": token})


# -- each phase failing: what is recorded before, at and after it -------------------------------------


def _key_selecting_header(chain: Any) -> str:
    header, payload = _segments(chain)
    return _signed(
        {**header, "jku": "https://evil.example/keys"}, json.dumps(payload).encode(), chain.merchant_key
    )


def _unknown_kid(chain: Any) -> str:
    _, payload = _segments(chain)
    return sign_jwt(payload, chain.merchant_key, kid=_BUILDER.MERCHANT_DID + "#no-such-key")


def _hs256(chain: Any) -> str:
    header, payload = _segments(chain)
    signing_input = f"{_encode({**header, 'alg': 'HS256'})}.{_encode(payload)}"
    return f"{signing_input}.{b64url_encode(b'0' * 32)}"


def _bad_signature(chain: Any) -> str:
    token: str = chain.cart.model.merchant_authorization
    signing_input, signature = token.rsplit(".", 1)
    raw = bytearray(b64url_decode(signature))
    raw[-1] ^= 1
    return f"{signing_input}.{b64url_encode(bytes(raw))}"


#: (the phase that fails, a token failing there, its code, the failed check's expected and got)
_FAILURES: list[tuple[str, Callable[[Any], str], str, str | None, str | None]] = [
    ("header", _key_selecting_header, "forbidden_header", None, None),
    ("key", _unknown_kid, "unknown_key", None, None),
    ("alg", _hs256, "alg_not_allowed", "ES256", "HS256"),
    ("signature", _bad_signature, "bad_signature", None, None),
]


@pytest.mark.parametrize(
    ("phase", "forge", "code", "expected", "got"), _FAILURES, ids=[row[0] for row in _FAILURES]
)
def test_a_failed_phase_follows_passed_phases_and_precedes_skipped_ones(
    chain: Any, phase: str, forge: Callable[[Any], str], code: str, expected: str | None, got: str | None
) -> None:
    report = _report(chain, _with_token(chain, forge(chain)))
    failed_at = JWS_PHASES.index(phase)
    # The key is known once the key phase passed: the failed check names it from the alg phase on.
    key_known = failed_at >= JWS_PHASES.index("alg")
    for index, name in enumerate(JWS_PHASES):
        check = report.by_id(f"merchant.jws.{name}")
        assert check.party == "merchant"
        if index < failed_at:
            assert check.status == "passed"
            assert check.key == (None if name == "header" else _KID)
        elif index == failed_at:
            assert (check.status, check.code) == ("failed", code)
            assert check.key == (_KID if key_known else None)
            assert (check.expected, check.got) == (expected, got)
        else:
            assert check.status == "skipped"
            assert check.detail == f"not run: merchant.jws.{phase} failed"
    for name in MERCHANT_CLAIM_CHECKS:
        check = report.by_id(name)
        assert check.status == "skipped"
        assert check.detail == "not run: merchant signature not verified"


def test_a_policy_allowing_no_algorithm_of_the_key_says_so(chain: Any) -> None:
    """The stage run with an allow-list holding none of the merchant key's algorithms (P-256)."""
    expectations = chain.expectations()
    rules = StageRules(
        Anchors(expectations["trust_root"], expectations["keys"]), frozenset({"EdDSA"}), float(chain.now), 0.0
    )
    rec = Recorder(validate=True)
    facts = check_cart(
        rec,
        chain.cart,
        rules=rules,
        audience=chain.merchant_audience,
        contents_hash=cart_contents_hash(chain.cart),
    )
    assert facts is None
    check = next(check for check in rec.checks if check.id == "merchant.jws.alg")
    assert (check.status, check.code, check.key) == ("failed", "alg_not_allowed", _KID)
    assert (check.expected, check.got) == ("none: the policy allows no algorithm of this key", "ES256")


# -- a verified JWS: the texts of its four checks --------------------------------------------------------


def test_a_verified_jws_names_its_algorithm_type_key_and_allow_list(chain: Any) -> None:
    report = _report(chain)
    header, key, alg, signature = (report.by_id(f"merchant.jws.{name}") for name in JWS_PHASES)
    assert (header.expected, header.got, header.key) == (None, "alg=ES256, typ=JWT", None)
    assert (key.expected, key.got, key.key) == (None, f"trust-root key of {_BUILDER.MERCHANT_DID}", _KID)
    assert (alg.expected, alg.got, alg.key) == (_POLICY, "ES256", _KID)
    assert (signature.expected, signature.got, signature.key) == (None, None, _KID)


def test_a_header_without_typ_is_shown_without_one(chain: Any) -> None:
    _, payload = _segments(chain)
    token = sign_jwt(payload, chain.merchant_key, kid=_KID, typ=None)
    report = _report(chain, _with_token(chain, token))
    assert report.by_id("merchant.jws.header").got == "alg=ES256"
    assert report.by_id("merchant.jws.signature").status == "passed"
    typ = report.by_id("merchant.jwt.typ")
    assert (typ.status, typ.code) == ("failed", "wrong_typ")


# -- the signed payload --------------------------------------------------------------------------------


@pytest.mark.parametrize("payload", [b"[1]", b'"cart"', b"7", b"null"])
def test_a_signed_payload_that_is_not_an_object_fails_the_signature_check(chain: Any, payload: bytes) -> None:
    header, _ = _segments(chain)
    report = _report(chain, _with_token(chain, _signed(header, payload, chain.merchant_key)))
    check = report.by_id("merchant.jws.signature")
    assert (check.status, check.code, check.key) == ("failed", "malformed_jwt", _KID)
    assert report.by_id("merchant.jwt.iss").status == "skipped"


def _nested(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(("levels", "verified"), [(31, True), (32, False)])
def test_claims_nest_at_most_32_levels(chain: Any, levels: int, verified: bool) -> None:
    """The claims object is level 1; a claim holding ``levels`` nested arrays reaches 1 + levels."""
    header, payload = _segments(chain)
    text = json.dumps({**payload, "ext": _nested(levels)}).encode()
    check = _report(chain, _with_token(chain, _signed(header, text, chain.merchant_key))).by_id(
        "merchant.jws.signature"
    )
    assert (check.status, check.code) == (("passed", None) if verified else ("failed", "too_deep"))


# -- a verify callback that never asks for a key ---------------------------------------------------------


def test_a_jws_never_checked_against_a_key_is_refused_at_its_key_check() -> None:
    rec = Recorder(validate=True)

    def resolve(_header: Any) -> ResolvedKey:
        raise AssertionError("not asked")

    outcome = run_jws_phases(
        rec,
        "issuer.jws",
        "issuer",
        lambda _resolver: "claims",
        resolve=resolve,
        algorithms=frozenset({"ES256"}),
    )
    assert outcome is None
    statuses = [(check.id, check.status, check.code) for check in rec.checks]
    assert statuses == [
        ("issuer.jws.header", "passed", None),
        ("issuer.jws.key", "failed", "verification_incomplete"),
        ("issuer.jws.alg", "skipped", None),
        ("issuer.jws.signature", "skipped", None),
    ]


# -- the cart stage ---------------------------------------------------------------------------------------


def test_every_check_of_the_cart_stage_is_the_merchants(chain: Any) -> None:
    report = _report(chain)
    cart_stage = [check for check in report.checks if check.id.startswith(("cart.", "merchant."))]
    assert len(cart_stage) == 18
    assert {check.party for check in cart_stage} == {"merchant"}
    failed = _report(chain, _with_token(chain, _bad_signature(chain)))
    assert {check.party for check in failed.checks if check.id.startswith(("cart.", "merchant."))} == {
        "merchant"
    }


@pytest.mark.parametrize(("length", "accepted"), [(1, True), (256, True), (257, False), (0, False)])
def test_a_jti_holds_1_to_256_characters(length: int, accepted: bool) -> None:
    chain = _BUILDER.build_chain(key_type="p256", merchant_claims={"jti": "j" * length})
    check = _report(chain).by_id("merchant.jwt.jti")
    assert (check.status, check.code) == (("passed", None) if accepted else ("failed", "jti_missing"))
    assert check.got == ("present" if accepted else "missing or malformed")


@pytest.mark.parametrize("token", ["", None])
def test_an_unsigned_cart_fails_presence_and_runs_no_merchant_check(chain: Any, token: str | None) -> None:
    plain = {**chain.cart.plain(), "merchant_authorization": token}
    if token is None:
        del plain["merchant_authorization"]
    report = _report(chain, receive_cart(plain))
    present = report.by_id("merchant.jws.present")
    assert (present.status, present.code, present.got) == ("failed", "unsigned_cart", "missing")
    assert present.expected == "merchant_authorization (compact JWS)"
    for name in (*(f"merchant.jws.{phase}" for phase in JWS_PHASES), *MERCHANT_CLAIM_CHECKS):
        check = report.by_id(name)
        assert (check.status, check.party, check.detail) == (
            "skipped",
            "merchant",
            "not run: the cart is not signed",
        )


def test_a_signed_cart_shows_its_signature_present(chain: Any) -> None:
    present = _report(chain).by_id("merchant.jws.present")
    assert (present.status, present.got) == ("passed", "present")


def test_unsigned_members_are_named_cut_and_sorted(chain: Any) -> None:
    clean = _report(chain).by_id("cart.unsigned_members")
    assert (clean.expected, clean.got) == ("only contents and merchant_authorization", "none")
    long_name = "z" * 70
    report = _report(chain, receive_cart({**chain.cart.plain(), long_name: 1, "refund_to": "x"}))
    check = report.by_id("cart.unsigned_members")
    assert (check.status, check.code, check.error) == ("failed", "unsigned_member", "binding")
    assert check.got == "not covered by the merchant's signature: refund_to, " + "z" * 64


@pytest.mark.parametrize(
    ("kid", "detail"),
    [
        (None, "merchant_authorization names no key (kid)"),
        ("cart-signing-1", "merchant_authorization must name its key by DID URL"),
    ],
)
def test_a_merchant_key_named_by_no_did_url_is_refused_at_the_key_check(
    chain: Any, kid: str | None, detail: str
) -> None:
    _, payload = _segments(chain)
    report = _report(chain, _with_token(chain, sign_jwt(payload, chain.merchant_key, kid=kid)))
    check = report.by_id("merchant.jws.key")
    assert (check.status, check.code, check.detail) == ("failed", "no_kid", detail)


def test_a_wrong_typ_is_shown_cut_to_32_characters() -> None:
    chain = _BUILDER.build_chain(key_type="p256", merchant_typ="t" * 40)
    check = _report(chain).by_id("merchant.jwt.typ")
    assert (check.status, check.code, check.expected, check.got) == ("failed", "wrong_typ", "JWT", "t" * 32)


def test_an_expired_cart_fails_its_own_expiry_while_the_merchant_jwt_still_holds(chain: Any) -> None:
    expiry = chain.cart.model.contents.cart_expiry_at.timestamp()
    report = _inspect(chain, now=expiry + 1)
    check = report.by_id("cart.expiry")
    assert (check.status, check.code, check.error) == ("failed", "cart_expired", "expired")
    assert report.by_id("merchant.jwt.exp").status == "passed"


def test_a_total_that_is_not_the_sum_of_the_items_is_a_binding_failure() -> None:
    def raise_total(contents: dict[str, Any]) -> None:
        total = contents["payment_request"]["details"]["total"]["amount"]
        total["value"] = round(total["value"] + 1, 2)

    chain = _BUILDER.build_chain(key_type="p256", edit_cart=raise_total)
    check = _report(chain).by_id("cart.total")
    assert (check.status, check.code, check.error) == ("failed", "cart_total_mismatch", "binding")
    assert check.got == "USD 138.49 (sum of 2 display items)"


@pytest.mark.parametrize(
    ("lifetime", "accepted"), [(-1, False), (0, False), (1, True), (900, True), (901, False)]
)
def test_a_merchant_jwt_lives_more_than_0_and_at_most_900_seconds(
    chain: Any, lifetime: int, accepted: bool
) -> None:
    _, payload = _segments(chain)
    signed = _BUILDER.build_chain(key_type="p256", merchant_claims={"exp": payload["iat"] + lifetime})
    check = _report(signed).by_id("merchant.jwt.lifetime")
    assert (check.status, check.code) == (("passed", None) if accepted else ("failed", "lifetime_too_long"))
    assert check.expected == "0 < exp - iat <= 900 s"
    assert check.got == f"{lifetime} s"


# -- the intent stage ---------------------------------------------------------------------------------------


def _with_intent_token(chain: Any, token: str) -> Any:
    return receive_intent({**chain.intent.plain(), "user_authorization": token})


def _intent_report(chain: Any, intent: Any) -> VerificationReport:
    return _inspect(chain, intent=intent)


def test_an_intent_member_nobody_can_enforce_is_named_and_refused() -> None:
    def add(raw: dict[str, Any]) -> None:
        raw["max_price"] = 10
        raw["deliver_by"] = "tomorrow"

    clean = _report(_BUILDER.build_chain(key_type="p256")).by_id("intent.constraints")
    assert (clean.status, clean.expected, clean.got) == (
        "passed",
        "only AP2 v0.1 IntentMandate members",
        "none unknown",
    )
    check = _report(_BUILDER.build_chain(key_type="p256", edit_intent=add)).by_id("intent.constraints")
    assert (check.status, check.code, check.error) == ("failed", "unknown_constraint", "policy")
    assert check.got == "unknown: deliver_by, max_price"


def test_an_unsigned_intent_needs_the_user_to_confirm_the_cart() -> None:
    def unattended(raw: dict[str, Any]) -> None:
        raw["user_cart_confirmation_required"] = False

    chain = _BUILDER.build_chain(key_type="p256", sign_the_intent=False, edit_intent=unattended)
    check = _report(chain).by_id("intent.authorization")
    assert (check.status, check.code) == ("failed", "unsigned_intent_without_confirmation")
    assert check.got == "unsigned, user_cart_confirmation_required=false"


def test_an_intent_past_its_expiry_is_refused_as_expired(chain: Any) -> None:
    expiry = chain.intent.model.intent_expiry_at.timestamp()
    check = _inspect(chain, now=expiry).by_id("intent.expiry")
    assert (check.status, check.code, check.error) == ("failed", "intent_expired", "expired")


def test_an_intent_signature_that_fails_skips_every_claim_check_of_the_intent(chain: Any) -> None:
    token: str = chain.intent.model.user_authorization
    signing_input, signature = token.rsplit(".", 1)
    raw = bytearray(b64url_decode(signature))
    raw[0] ^= 1
    report = _intent_report(chain, _with_intent_token(chain, f"{signing_input}.{b64url_encode(bytes(raw))}"))
    assert report.by_id("intent.jws.signature").code == "bad_signature"
    for name in ("iss", "iat", "nbf", "exp", "intent_hash"):
        check = report.by_id(f"intent.jws.{name}")
        assert (check.status, check.detail) == ("skipped", "not run: intent signature not verified")


@pytest.mark.parametrize(
    ("claims", "check_id", "code"),
    [
        ({"iss": "did:web:someone-else.example"}, "intent.jws.iss", "intent_iss_mismatch"),
        ({"intent_hash": "A" * 43}, "intent.jws.intent_hash", "intent_hash_mismatch"),
    ],
)
def test_an_intent_claim_that_does_not_hold_is_refused_with_its_code(
    claims: dict[str, Any], check_id: str, code: str
) -> None:
    check = _report(_BUILDER.build_chain(key_type="p256", intent_claims=claims)).by_id(check_id)
    assert (check.status, check.code) == ("failed", code)


def test_an_intent_key_named_by_no_did_url_is_refused(chain: Any) -> None:
    header, payload, _ = chain.intent.model.user_authorization.split(".")
    claims = json.loads(b64url_decode(payload))
    typ = json.loads(b64url_decode(header))["typ"]
    token = sign_jwt(claims, chain.user_key, kid="user-key-1", typ=typ)
    check = _intent_report(chain, _with_intent_token(chain, token)).by_id("intent.jws.key")
    assert (check.status, check.code, check.detail) == (
        "failed",
        "no_kid",
        "the intent JWS must name its key by DID URL",
    )


# -- verify_cart's own refusals ------------------------------------------------------------------------------


def test_verify_cart_refuses_a_merchant_key_outside_its_window_as_the_merchants_failure(chain: Any) -> None:
    _, payload = _segments(chain)
    document = chain.trust_root_document()
    entry = document["merchants"][_BUILDER.MERCHANT_DID]
    entry["key_windows"] = {_KID: {"valid_until": _utc(payload["iat"] - 60)}}
    expectations = chain.expectations()
    with pytest.raises(UntrustedKeyError) as refused:
        verify_cart(
            chain.cart,
            trust_root=parse_trust_root(document),
            keys=expectations["keys"],
            audience=chain.merchant_audience,
            now=expectations["now"],
            replay_store=MemoryReplayStore(),
        )
    assert (refused.value.fields["check"], refused.value.fields["party"]) == (
        "merchant.key.window",
        "merchant",
    )


def test_a_merchant_jwt_without_iat_has_no_lifetime() -> None:
    check = _report(_BUILDER.build_chain(key_type="p256", merchant_claims={"iat": None})).by_id(
        "merchant.jwt.lifetime"
    )
    assert (check.status, check.got) == ("failed", "iat or exp missing")


def test_display_items_in_another_currency_do_not_sum_to_the_total() -> None:
    def other_currency(contents: dict[str, Any]) -> None:
        contents["payment_request"]["details"]["display_items"][0]["amount"]["currency"] = "EUR"

    check = _report(_BUILDER.build_chain(key_type="p256", edit_cart=other_currency)).by_id("cart.total")
    assert (check.status, check.code) == ("failed", "cart_total_mismatch")
    assert (check.expected, check.got) == ("USD 138.49", "display items in another currency than the total")


# -- the payment stage ------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["", None])
def test_an_unsigned_payment_fails_presence_and_runs_no_credential_or_key_binding_check(
    chain: Any, token: str | None
) -> None:
    plain = {**chain.payment.plain(), "user_authorization": token}
    if token is None:
        del plain["user_authorization"]
    report = _inspect(chain, payment=receive_payment(plain))
    present = report.by_id("user.authorization.present")
    assert (present.status, present.code, present.error, present.got) == (
        "failed",
        "unsigned_payment",
        "signature",
        "missing",
    )
    skipped = [check for check in report.checks if check.id.startswith(("issuer.", "user.kb."))]
    assert len(skipped) > 20
    for check in skipped:
        assert check.status == "skipped"
        assert check.detail == "not run: the payment is not signed"
        assert check.party == ("issuer" if check.id.startswith("issuer.") else "user")


def _credential_payload_replaced(chain: Any, payload: bytes) -> str:
    issuer_jwt, *rest = chain.payment.model.user_authorization.split("~")
    header, _, signature = issuer_jwt.split(".")
    return "~".join([f"{header}.{b64url_encode(payload)}.{signature}", *rest])


@pytest.mark.parametrize(
    ("presentation", "code"),
    [
        (lambda chain: "not-an-sd-jwt", "malformed_sd_jwt"),
        (lambda chain: _credential_payload_replaced(chain, b"{not json"), "malformed_json"),
    ],
    ids=["not an SD-JWT", "issuer payload not JSON"],
)
def test_a_presentation_that_does_not_parse_fails_its_format_check(
    chain: Any, presentation: Callable[[Any], str], code: str
) -> None:
    payment = receive_payment({**chain.payment.plain(), "user_authorization": presentation(chain)})
    report = _inspect(chain, payment=payment)
    check = report.by_id("issuer.sdjwt.format")
    assert (check.status, check.code, check.error, check.party) == ("failed", code, "invalid_input", "issuer")
    trusted = report.by_id("issuer.trusted")
    assert (trusted.status, trusted.detail) == ("skipped", "not run: the SD-JWT did not parse")


def test_an_untrusted_issuer_is_named_and_nothing_of_its_credential_is_checked(chain: Any) -> None:
    report = _inspect(chain, trust_root=chain.trust_root(issuers={}))
    trusted = report.by_id("issuer.trusted")
    assert (trusted.status, trusted.code, trusted.error) == ("failed", "untrusted_issuer", "untrusted_key")
    assert (trusted.expected, trusted.got) == ("an issuer of the trust root", _BUILDER.ISSUER)
    for name in ("issuer.jwt.header", "issuer.jwt.signature", "issuer.jwt.exp", "issuer.jwt.cnf"):
        check = report.by_id(name)
        assert (check.status, check.detail) == ("skipped", "not run: the credential issuer is not trusted")
    kb = report.by_id("user.kb.signature")
    assert (kb.status, kb.detail) == ("skipped", "not run: the credential did not verify")


def test_a_credential_without_exp_is_refused() -> None:
    check = _report(_BUILDER.build_chain(key_type="p256", credential_claims={"exp": None})).by_id(
        "issuer.jwt.exp"
    )
    assert (check.status, check.code) == ("failed", "exp_missing")


def test_a_long_issuer_name_is_shown_cut_to_200_characters() -> None:
    issuer = "https://" + "i" * 240 + ".example"
    chain = _BUILDER.build_chain(key_type="p256", issuer=issuer)
    pinned = chain.trust_root(issuers={issuer: {"jwks": chain.jwks[_BUILDER.ISSUER]}})
    check = _inspect(chain, trust_root=pinned).by_id("issuer.jwt.iss")
    assert (check.status, check.expected, check.got) == ("passed", issuer, issuer[:200])


def test_an_unsigned_payment_member_stops_the_chain_before_its_links(chain: Any) -> None:
    """The credential and the key-binding JWT verify; a member nobody signed rides along: the stage
    fails, so the links are not run."""
    report = _inspect(
        chain, payment=receive_payment({**chain.payment.plain(), "refund_to": "acct-of-attacker"})
    )
    unsigned = report.by_id("payment.unsigned_members")
    assert (unsigned.status, unsigned.code, unsigned.party) == ("failed", "unsigned_member", "user")
    assert unsigned.got == "not covered by the user's signature: refund_to"
    assert report.by_id("user.kb.transaction_data").status == "passed"
    assert {report.by_id(name).status for name, _party in LINK_CHECKS} == {"skipped"}


def _credential_resigned(chain: Any, **claims: Any) -> Received[PaymentMandate]:
    """The payment with its credential re-signed by the genuine issuer, ``claims`` replaced (the
    key-binding JWT is left as it was: the stage stops at the credential first)."""
    issuer_jwt, *rest = chain.payment.model.user_authorization.split("~")
    header, payload, _ = issuer_jwt.split(".")
    typ = json.loads(b64url_decode(header))["typ"]
    resigned = sign_jwt(
        {**json.loads(b64url_decode(payload)), **claims}, chain.issuer_key, kid=_BUILDER.ISSUER_KID, typ=typ
    )
    return receive_payment({**chain.payment.plain(), "user_authorization": "~".join([resigned, *rest])})


@pytest.mark.parametrize(
    "cnf",
    [{"jwk": {"kty": "EC", "crv": "P-256"}}, {"jwk": "not an object"}, {"kid": "user-key"}, "not an object"],
    ids=["incomplete JWK", "JWK not an object", "no JWK", "cnf not an object"],
)
def test_a_credential_naming_no_usable_holder_key_fails_its_cnf_check(chain: Any, cnf: Any) -> None:
    """The genuine issuer re-signs the user's credential with ``cnf`` replaced (no holder could
    present such a credential with a key-binding JWT, so the old one stays; it is never reached)."""
    report = _inspect(chain, payment=_credential_resigned(chain, cnf=cnf))
    check = report.by_id("issuer.jwt.cnf")
    assert (check.status, check.party, check.key) == ("failed", "issuer", _BUILDER.ISSUER_KID)
    assert check.error == "invalid_input"
    sub = report.by_id("issuer.jwt.sub")
    assert (sub.status, sub.detail) == ("skipped", "not run: the credential names no usable holder key")


# -- the links between the mandates ------------------------------------------------------------------------

#: The code each failing link case of tests/unit/test_chain_verify.py must carry (docs/payments.md).
_LINK_CODES: dict[str, str] = {
    "total_is_not_the_sum_of_items": "cart_total_mismatch",
    "payment_total_differs": "total_mismatch",
    "payment_currency_differs": "total_mismatch",
    "payment_details_id_differs": "payment_details_id_mismatch",
    "request_id_differs": "request_id_mismatch",
    "method_not_accepted": "method_not_accepted",
    "merchant_agent_is_someone_else": "merchant_mismatch",
    "paid_after_cart_expiry": "paid_after_cart_expiry",
    "paid_after_intent_expiry": "paid_after_intent_expiry",
    "merchant_not_in_intent": "merchant_not_allowed",
    "sku_not_in_intent": "sku_not_allowed",
    "item_without_sku": "sku_not_allowed",
    "item_not_refundable": "item_not_refundable",
    "cart_waives_confirmation": "confirmation_waived",
    "unknown_intent_constraint": "unknown_constraint",
    "unsigned_intent_without_confirmation": "unsigned_intent_without_confirmation",
}


def test_every_link_case_has_its_code() -> None:
    assert set(_LINK_CODES) == {case[0] for case in LINK_CASES}


@pytest.mark.parametrize(
    ("name", "build", "check_id", "error"), LINK_CASES, ids=[case[0] for case in LINK_CASES]
)
def test_a_failed_link_carries_its_code_into_the_report_and_the_raised_error(
    name: str, build: dict[str, Any], check_id: str, error: type[VerificationError]
) -> None:
    chain = _BUILDER.build_chain(key_type="p256", **build)
    check = _report(chain).by_id(check_id)
    assert (check.status, check.code) == ("failed", _LINK_CODES[name])
    with pytest.raises(error) as refused:
        verify_chain(
            chain.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
        )
    if refused.value.fields["check"] == check_id:
        assert (refused.value.code, refused.value.fields["party"]) == (check.code, check.party)


@pytest.mark.parametrize(
    ("check_id", "expiry", "edit_intent"),
    [
        ("chain.timestamp.cart", "2025-10-01T12:30:00Z", None),
        (
            "chain.timestamp.intent",
            "2025-10-01T12:25:00Z",
            lambda i: i.update(intent_expiry="2025-10-01T12:25:00Z"),
        ),
    ],
    ids=["the cart's", "the intent's"],
)
def test_a_payment_at_the_expiry_itself_is_in_time(
    check_id: str, expiry: str, edit_intent: Callable[[dict[str, Any]], None] | None
) -> None:
    chain = _BUILDER.build_chain(
        key_type="p256", edit_intent=edit_intent, edit_payment=lambda p: p.update(timestamp=expiry)
    )
    check = _report(chain).by_id(check_id)
    assert (check.status, check.expected, check.got) == ("passed", f"not after {expiry}", expiry)


def test_the_merchant_agent_may_be_the_merchants_did() -> None:
    did = _BUILDER.MERCHANT_DID
    chain = _BUILDER.build_chain(key_type="p256", edit_payment=lambda p: p.update(merchant_agent=did))
    check = _report(chain).by_id("chain.merchant_agent")
    assert (check.status, check.expected, check.got) == ("passed", f"{did} or Stride Athletics", did)


@pytest.mark.parametrize(
    ("merchants", "status", "got"),
    [
        ([_BUILDER.MERCHANT_DID], "passed", ", matched by DID"),
        (["Stride Athletics"], "passed", ", matched by name"),
        (["Another Shop"], "failed", ""),
    ],
)
def test_the_intent_names_the_merchant_by_did_or_by_name(merchants: list[str], status: str, got: str) -> None:
    chain = _BUILDER.build_chain(key_type="p256", edit_intent=lambda i: i.update(merchants=merchants))
    check = _report(chain).by_id("intent.merchants")
    assert (check.status, check.expected) == (status, "one of: " + ", ".join(merchants))
    assert check.got == f"{_BUILDER.MERCHANT_DID} (Stride Athletics){got}"


# -- the credential's subject --------------------------------------------------------------------------------


def _holder_did_key_spelled(chain: Any, prefix: bytes) -> str:
    """The user's P-256 key as a did:key whose multicodec varint is ``prefix`` (canonical: 80 24)."""
    raw = chain.user_key.public_key.raw
    return "did:key:z" + base58btc_encode(prefix + raw)


def _subject_cases() -> list[tuple[str, Callable[[Any], str], str, str]]:
    other = KeyPair.generate("p256").public_key
    return [
        (
            "did:jwk of the holder",
            lambda c: did_jwk.create(c.user_key.public_key),
            "passed",
            "did:jwk:, its key is the cnf key",
        ),
        (
            "did:jwk of another key",
            lambda c: did_jwk.create(other),
            "failed",
            "did:jwk: of another key than cnf",
        ),
        (
            "did:key of another key",
            lambda c: did_key.create(other),
            "failed",
            "did:key: of another key than cnf",
        ),
        (
            "the holder's did:key with a non-minimal varint",
            lambda c: _holder_did_key_spelled(c, bytes([0x80, 0xA4, 0x00])),
            "failed",
            "did:key: of another key than cnf",
        ),
        (
            "the holder's did:key past 4,096 characters",
            lambda c: did_key.create(c.user_key.public_key) + "1" * 4096,
            "failed",
            "did:key: of another key than cnf",
        ),
    ]


@pytest.mark.parametrize(
    ("name", "sub", "status", "how"), _subject_cases(), ids=[case[0] for case in _subject_cases()]
)
def test_a_self_certified_subject_must_be_the_cnf_key(
    name: str, sub: Callable[[Any], str], status: str, how: str
) -> None:
    chain = _BUILDER.build_chain(key_type="p256")
    subject = sub(chain)
    signed = _BUILDER.build_chain(key_type="p256", credential_claims={"sub": subject})
    check = _report(signed).by_id("issuer.jwt.sub")
    assert (check.status, check.code) == (
        (status, None) if status == "passed" else (status, "sub_contradicts_cnf")
    )
    assert check.got == f"{subject[:120]} ({how})"


def test_a_failed_credential_claim_leaves_the_key_binding_unchecked() -> None:
    report = _report(
        _BUILDER.build_chain(key_type="p256", credential_claims={"vct": "urn:example:age-over-18"})
    )
    vct = report.by_id("issuer.jwt.vct")
    assert (vct.status, vct.code, vct.error) == ("failed", "vct_not_accepted", "policy")
    for name in ("user.kb.header", "user.kb.signature", "user.kb.nonce"):
        check = report.by_id(name)
        assert (check.status, check.detail) == ("skipped", "not run: the credential did not verify")


def test_the_key_binding_jwt_is_checked_with_the_cnf_key(chain: Any) -> None:
    key = _report(chain).by_id("user.kb.key")
    assert (key.status, key.got) == ("passed", "cnf key of holder (cnf.jwk)")
    assert str(key.key).startswith("jwk-thumbprint:")


def test_a_holder_key_the_policy_allows_no_algorithm_for_fails_the_cnf_check(chain: Any) -> None:
    """An RSA holder key (the allow-list names no RS* algorithm), bound by the genuine issuer."""
    rsa_jwk = PublicKey.from_cryptography(rsa.generate_private_key(65537, 2048).public_key()).to_jwk()
    report = _inspect(chain, payment=_credential_resigned(chain, cnf={"jwk": rsa_jwk}))
    check = report.by_id("issuer.jwt.cnf")
    assert (check.status, check.code, check.error) == ("failed", "holder_alg_not_allowed", "policy")
    assert check.key == f"jwk-thumbprint:{PublicKey.from_jwk(rsa_jwk).thumbprint()}"


def test_an_open_intent_restricts_no_merchant_sku_or_refund() -> None:
    def open_intent(intent: dict[str, Any]) -> None:
        intent.pop("merchants")
        intent.pop("skus")
        intent["requires_refundability"] = False

    report = _report(_BUILDER.build_chain(key_type="p256", edit_intent=open_intent))
    facts = {
        name: (check.status, check.party, check.expected, check.got)
        for name in ("intent.merchants", "intent.skus", "intent.refundability")
        for check in [report.by_id(name)]
    }
    assert facts == {
        "intent.merchants": ("passed", "merchant", "any merchant (no restriction)", _BUILDER.MERCHANT_DID),
        "intent.skus": ("passed", "merchant", "any SKU (no restriction)", None),
        "intent.refundability": ("passed", "merchant", "refundability not required", None),
    }


@pytest.mark.parametrize(("period", "refundable"), [(1, True), (0, False), (-1, False)])
def test_an_item_is_refundable_from_a_refund_period_of_one(period: int, refundable: bool) -> None:
    def set_period(contents: dict[str, Any]) -> None:
        contents["payment_request"]["details"]["display_items"][1]["refund_period"] = period

    chain = _BUILDER.build_chain(key_type="p256", edit_cart=set_period)
    check = _report(chain).by_id("intent.refundability")
    assert check.expected == "every item refundable (refund_period > 0)"
    if refundable:
        assert (check.status, check.got) == ("passed", "all refundable")
    else:
        label = chain.cart.model.contents.payment_request.details.display_items[1].label
        assert (check.status, check.code, check.got) == (
            "failed",
            "item_not_refundable",
            f"not refundable: {label}",
        )


def test_an_intent_signed_by_another_person_in_a_legacy_chain_is_refused_as_the_users() -> None:
    legacy = _BUILDER.build_chain(key_type="p256", bind_intent=False)
    other = _BUILDER.build_chain(key_type="p256", seeded=False)
    report = _inspect(
        legacy, intent=other.intent, trust_root=legacy.trust_root(accept_legacy_unbound_intent=True)
    )
    check = report.by_id("intent.signer_is_holder")
    assert (check.status, check.party, check.error, check.code) == (
        "failed",
        "user",
        "binding",
        "intent_signer_not_holder",
    )


def test_an_unsigned_intent_in_a_legacy_chain_is_covered_by_no_signature() -> None:
    legacy = _BUILDER.build_chain(key_type="p256", bind_intent=False, sign_the_intent=False)
    report = _inspect(legacy, trust_root=legacy.trust_root(accept_legacy_unbound_intent=True))
    holder = report.by_id("intent.signer_is_holder")
    assert (holder.status, holder.party) == ("passed", "user")
    assert (
        holder.expected
        == "not applicable: unsigned intent, the user confirmed the cart in the payment mandate"
    )
    check = report.by_id("intent.unsigned_members")
    assert (check.status, check.party, check.error, check.code) == (
        "failed",
        "user",
        "binding",
        "unsigned_member",
    )
    assert check.got == "unsigned intent in a legacy chain: no signature covers any of its members"


def test_a_bound_unsigned_intent_is_covered_by_the_key_binding_jwt_alone() -> None:
    check = _report(_BUILDER.build_chain(key_type="p256", sign_the_intent=False)).by_id(
        "intent.unsigned_members"
    )
    assert (check.status, check.got) == ("passed", "covered by the key-binding JWT")


@pytest.mark.parametrize(("members", "accepted"), [(32, True), (33, False)])
def test_a_holder_jwk_holds_at_most_32_members(chain: Any, members: int, accepted: bool) -> None:
    """Extra members do not change the key or its RFC 7638 thumbprint, up to the JWK import's bound."""
    jwk = chain.user_key.public_key.to_jwk()
    padded = {**jwk, **{f"x-note-{index}": "n" for index in range(members - len(jwk))}}
    report = _inspect(chain, payment=_credential_resigned(chain, cnf={"jwk": padded}))
    cnf = report.by_id("issuer.jwt.cnf")
    if accepted:
        assert (cnf.status, cnf.key) == ("passed", f"jwk-thumbprint:{chain.user_key.public_key.thumbprint()}")
    else:
        assert (cnf.status, cnf.code) == ("failed", "bad_cnf")


def test_an_unknown_algorithm_is_shown_cut_to_16_characters(chain: Any) -> None:
    header, payload = _segments(chain)
    alg = "A" * 40
    token = _signed({**header, "alg": alg}, json.dumps(payload).encode(), chain.merchant_key)
    check = _report(chain, _with_token(chain, token)).by_id("merchant.jws.alg")
    assert (check.status, check.code, check.expected, check.got) == (
        "failed",
        "alg_not_allowed",
        "ES256",
        "A" * 16,
    )


# -- the key-binding JWT -------------------------------------------------------------------------------------


def _with_kb(chain: Any, kb: str) -> Received[PaymentMandate]:
    *credential, _ = chain.payment.model.user_authorization.split("~")
    return receive_payment({**chain.payment.plain(), "user_authorization": "~".join([*credential, kb])})


def _kb_claims(chain: Any) -> dict[str, Any]:
    kb = chain.payment.model.user_authorization.split("~")[-1]
    claims: dict[str, Any] = json.loads(b64url_decode(kb.split(".")[1]))
    return claims


def test_a_presentation_without_key_binding_fails_at_its_header(chain: Any) -> None:
    report = _inspect(chain, payment=_with_kb(chain, ""))
    header = report.by_id("user.kb.header")
    assert (header.status, header.error, header.code) == ("failed", "signature", "kb_missing")
    assert (header.expected, header.got) == ("a key-binding JWT", "none presented")
    for name in ("user.kb.key", "user.kb.signature", "user.kb.nonce", "user.kb.intent_binding"):
        check = report.by_id(name)
        assert (check.status, check.party, check.detail) == ("skipped", "user", "not run: no key-binding JWT")


def test_a_key_binding_signed_by_another_key_leaves_its_claims_unchecked(chain: Any) -> None:
    forged = sign_jwt(_kb_claims(chain), KeyPair.generate("p256"), typ="kb+jwt")
    report = _inspect(chain, payment=_with_kb(chain, forged))
    assert report.by_id("user.kb.signature").code == "bad_signature"
    for name in (
        "user.kb.typ",
        "user.kb.aud",
        "user.kb.nonce",
        "user.kb.sd_hash",
        "user.kb.transaction_data",
    ):
        check = report.by_id(name)
        assert (check.status, check.detail) == (
            "skipped",
            "not run: the key-binding signature did not verify",
        )


def test_a_key_binding_jwt_of_another_type_is_refused_and_its_type_cut(chain: Any) -> None:
    token = sign_jwt(_kb_claims(chain), chain.user_key, typ="t" * 40)
    check = _inspect(chain, payment=_with_kb(chain, token)).by_id("user.kb.typ")
    assert (check.status, check.error, check.code) == ("failed", "verification", "kb_wrong_typ")
    assert (check.expected, check.got) == ("kb+jwt", "t" * 32)


def test_a_key_binding_for_another_audience_shows_it_cut_to_200_characters() -> None:
    audience = "https://" + "a" * 240 + ".example"
    chain = _BUILDER.build_chain(key_type="p256", kb_claims={"aud": audience})
    check = _report(chain).by_id("user.kb.aud")
    assert (check.status, check.error, check.code) == ("failed", "binding", "kb_wrong_aud")
    assert check.got == audience[:200]


def _transaction_data_cases() -> list[
    tuple[str, Callable[[list[str]], Any], tuple[str, str | None, str | None], tuple[str, str | None]]
]:
    """(name, the signed transaction_data from the genuine one, (status, code, detail) of
    user.kb.transaction_data, (status, code) of user.kb.intent_binding)."""
    return [
        ("genuine", lambda td: td, ("passed", None, None), ("passed", None)),
        (
            "not a list",
            "|".join,
            ("failed", "transaction_data_mismatch", None),
            ("failed", "intent_hash_mismatch"),
        ),
        (
            "one hash",
            lambda td: td[:1],
            ("failed", "transaction_data_mismatch", None),
            ("failed", "intent_hash_mismatch"),
        ),
        (
            "four hashes",
            lambda td: [*td, td[0]],
            ("failed", "transaction_data_mismatch", None),
            ("failed", "intent_hash_mismatch"),
        ),
        (
            "another cart",
            lambda td: ["A" * 43, *td[1:]],
            ("failed", "transaction_data_mismatch", "differs: H(CartMandate)"),
            ("passed", None),
        ),
        (
            "other payment contents",
            lambda td: [td[0], "B" * 43, td[2]],
            ("failed", "transaction_data_mismatch", "differs: H(PaymentMandateContents)"),
            ("passed", None),
        ),
        (
            "another intent",
            lambda td: [*td[:2], "C" * 70],
            ("passed", None, None),
            ("failed", "intent_hash_mismatch"),
        ),
        ("legacy, not accepted", lambda td: td[:2], ("passed", None, None), ("failed", "intent_not_bound")),
        (
            "legacy, another cart",
            lambda td: ["A" * 43, td[1]],
            ("failed", "transaction_data_mismatch", "differs: H(CartMandate)"),
            ("failed", "intent_not_bound"),
        ),
        (
            "an object of the hashes",
            lambda td: dict.fromkeys(td, 0),
            ("failed", "transaction_data_mismatch", None),
            ("failed", "intent_hash_mismatch"),
        ),
        (
            "five long texts",
            lambda td: [item + "x" * 30 for item in [*td, *td[:2]]],
            ("failed", "transaction_data_mismatch", None),
            ("failed", "intent_hash_mismatch"),
        ),
    ]


@pytest.mark.parametrize(
    ("name", "edit", "data", "binding"),
    _transaction_data_cases(),
    ids=[case[0] for case in _transaction_data_cases()],
)
def test_transaction_data_covers_the_cart_the_payment_and_the_intent(
    name: str,
    edit: Callable[[list[str]], Any],
    data: tuple[str, str | None, str | None],
    binding: tuple[str, str | None],
) -> None:
    # Ed25519 signs deterministically: the seeded chain built again has the very cart and payment
    # whose hashes the genuine transaction_data holds.
    signed = edit(_kb_claims(_BUILDER.build_chain(key_type="ed25519"))["transaction_data"])
    report = _report(_BUILDER.build_chain(key_type="ed25519", kb_claims={"transaction_data": signed}))
    check = report.by_id("user.kb.transaction_data")
    assert (check.status, check.code, check.detail) == data
    bound = report.by_id("user.kb.intent_binding")
    assert (bound.status, bound.code) == binding
    assert bound.error == (None if binding[0] == "passed" else "binding")
    # What was signed, as a reader sees it: at most four items, each cut to 64 characters.
    shown = ", ".join(str(item)[:64] for item in signed[:4]) if isinstance(signed, list) else "missing"
    assert check.got == shown
    if binding[1] == "intent_hash_mismatch":
        third = signed[2] if isinstance(signed, list) and len(signed) > 2 else None
        assert bound.got == ("missing" if third is None else third[:64])
    if binding[1] == "intent_not_bound":
        assert bound.got == "absent (legacy v0.1 chain; the trust root does not accept legacy chains)"


def test_a_legacy_chain_the_trust_root_accepts_says_the_intent_is_not_bound() -> None:
    legacy = _BUILDER.build_chain(key_type="p256", bind_intent=False)
    check = _inspect(legacy, trust_root=legacy.trust_root(accept_legacy_unbound_intent=True)).by_id(
        "user.kb.intent_binding"
    )
    assert (check.status, check.expected) == (
        "passed",
        "H(IntentMandate), or a legacy chain the trust root accepts",
    )
    assert (
        check.got
        == "NOT BOUND: legacy v0.1 chain accepted by the trust root; the intent is not bound to this payment"
    )


def test_a_key_binding_for_another_session_fails_its_nonce_showing_fingerprints_only(chain: Any) -> None:
    check = _inspect(chain, kb_nonce="a-nonce-of-another-session").by_id("user.kb.nonce")
    assert (check.status, check.error, check.code) == ("failed", "binding", "kb_wrong_nonce")
    assert str(check.expected).startswith("sha256:")
    assert str(check.got).startswith("sha256:")
    assert check.expected != check.got


def test_the_accepted_credential_types_are_listed_and_a_long_type_cut() -> None:
    vct = "urn:example:" + "v" * 240
    chain = _BUILDER.build_chain(key_type="p256", credential_claims={"vct": vct})
    check = _report(chain).by_id("issuer.jwt.vct")
    assert (check.status, check.expected, check.got) == (
        "failed",
        "one of: urn:mudrika:ap2:payment-user:1",
        vct[:200],
    )


def _kb_resigned(chain: Any, **claims: Any) -> Received[PaymentMandate]:
    """The payment with its key-binding JWT re-signed by the user, ``claims`` replaced (``None`` drops one)."""
    changed = {**_kb_claims(chain), **claims}
    return _with_kb(
        chain, sign_jwt({k: v for k, v in changed.items() if v is not None}, chain.user_key, typ="kb+jwt")
    )


def test_a_key_binding_without_nonce_shows_it_missing(chain: Any) -> None:
    check = _inspect(chain, payment=_kb_resigned(chain, nonce=None)).by_id("user.kb.nonce")
    assert (check.status, check.code, check.got) == ("failed", "kb_wrong_nonce", "missing")


def test_a_key_binding_over_other_disclosures_fails_its_sd_hash(chain: Any) -> None:
    check = _inspect(chain, payment=_kb_resigned(chain, sd_hash="A" * 43)).by_id("user.kb.sd_hash")
    assert (check.status, check.error, check.code) == ("failed", "binding", "sd_hash_mismatch")


def test_a_signed_payment_shows_its_authorization_present(chain: Any) -> None:
    present = _report(chain).by_id("user.authorization.present")
    assert (present.status, present.expected, present.got) == (
        "passed",
        "user_authorization (SD-JWT+KB)",
        "present",
    )


@pytest.mark.parametrize(
    ("sub", "status", "got"),
    [
        (None, "passed", "absent"),
        (42, "failed", "42 (not a DID)"),
        ("alice", "failed", "alice (not a DID)"),
        (
            "did:web:someone-else.example",
            "failed",
            "did:web:someone-else.example (a DID that did not sign the intent with the cnf key)",
        ),
    ],
)
def test_a_subject_is_absent_or_a_did_of_the_holder(sub: Any, status: str, got: str) -> None:
    check = _report(_BUILDER.build_chain(key_type="p256", credential_claims={"sub": sub})).by_id(
        "issuer.jwt.sub"
    )
    assert (check.status, check.expected, check.got) == (
        status,
        "absent, or the DID of the cnf key's holder",
        got,
    )
    assert (check.code, check.error) == (
        (None, None) if status == "passed" else ("sub_contradicts_cnf", "binding")
    )


@pytest.mark.parametrize(
    ("signer", "status", "how"),
    [
        (
            "did:web:user.example",
            "passed",
            "the DID that signed the intent (signed with the cnf key: intent.signer_is_holder)",
        ),
        ("did:web:another-user.example", "failed", "a DID that did not sign the intent with the cnf key"),
        (None, "failed", "a DID that did not sign the intent with the cnf key"),
    ],
)
def test_a_subject_of_another_method_must_be_the_did_that_signed_the_intent(
    chain: Any, signer: str | None, status: str, how: str
) -> None:
    """Any DID but did:key and did:jwk is the subject only as the intent's signer, whose key
    intent.signer_is_holder holds equal to the cnf key (an unsigned intent names no signer)."""
    rec = Recorder(validate=True)
    _check_subject(rec, "did:web:user.example", True, chain.user_key.public_key, signer, key="issuer-kid")
    (check,) = rec.checks
    assert (check.id, check.status, check.got, check.key) == (
        "issuer.jwt.sub",
        status,
        f"did:web:user.example ({how})",
        "issuer-kid",
    )


@pytest.mark.parametrize(
    ("edit_intent", "edit_cart", "status", "got"),
    [
        (None, None, "passed", "2 items allowed"),
        (lambda i: i.update(skus=["TR-GTX-42"]), None, "failed", "not allowed: SOCK-MER-2"),
        (
            None,
            lambda c: c["payment_request"]["details"]["display_items"][0].pop("sku"),
            "failed",
            "not allowed: (no sku)",
        ),
    ],
    ids=["every sku allowed", "a sku outside", "an item without sku"],
)
def test_the_skus_outside_the_intent_are_named(
    edit_intent: Callable[[dict[str, Any]], None] | None,
    edit_cart: Callable[[dict[str, Any]], None] | None,
    status: str,
    got: str,
) -> None:
    chain = _BUILDER.build_chain(key_type="p256", edit_intent=edit_intent, edit_cart=edit_cart)
    check = _report(chain).by_id("intent.skus")
    assert (check.status, check.got) == (status, got)
    assert str(check.expected).startswith("every item in: ")


@pytest.mark.parametrize(
    ("intent_requires", "expected"),
    [(True, "cart keeps user_cart_confirmation_required=true"), (False, "not required")],
)
def test_the_cart_confirmation_the_intent_requires_is_stated(intent_requires: bool, expected: str) -> None:
    chain = _BUILDER.build_chain(
        key_type="p256", edit_intent=lambda i: i.update(user_cart_confirmation_required=intent_requires)
    )
    check = _report(chain).by_id("intent.cart_confirmation")
    assert (check.status, check.expected, check.got) == (
        "passed",
        expected,
        "cart user_cart_confirmation_required=true",
    )
