"""The cart stage of the chain: ``CartMandate.merchant_authorization`` checked claim by claim.

AP2 v0.1 profile (docs/payments.md, "What is signed"): a compact JWS, ES256 by default (EdDSA and
ES256K allowed by policy),

* header ``{"alg", "kid", "typ": "JWT"}`` — ``kid`` is a DID URL of the merchant's DID; ``typ`` is
  enforced (``merchant.jwt.typ``);
* payload ``{"iss": <merchant DID>, "sub": <cart id>, "aud": <audience>, "iat", "exp", "jti",
  "cart_hash": H(CartContents)}`` with ``exp - iat <= 900`` seconds and a random ``jti``; an
  ``nbf`` the merchant adds is honoured by the shared time rule (``merchant.jwt.nbf``).

The CartMandate itself has exactly two members, ``contents`` (covered by ``cart_hash``) and
``merchant_authorization`` (the signature): any other top-level member is covered by no merchant
signature and fails ``cart.unsigned_members``.

``cart_hash`` is computed over the *raw* ``contents`` object that is sent (and, on the receiving
side, over the raw object that arrived), never over a model dump.  The verifier checks each claim
as its own named check (``merchant.jwt.*``), and the ``jti`` is single use through a
:class:`~mudrika.stores.replay.ReplayStore` — claimed only once the whole chain verified, so a
chain that fails elsewhere cannot burn a merchant's ``jti``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Literal, NamedTuple

from pydantic.alias_generators import to_camel

from mudrika.crypto.jose import header_kid
from mudrika.errors import IncompleteVerification, InvalidInput
from mudrika.identity.did import parse_did_url
from mudrika.payments._values import format_money
from mudrika.payments.chain._common import (
    MAX_CART_LIFETIME,
    Time,
    check_iss_is_signer,
    check_mandate_expiry,
    check_signed_hash,
    check_time_claims,
    epoch,
    iso,
    numeric_date,
    single_use_key,
)
from mudrika.payments.chain._jws import JWS_PHASES, check_jws
from mudrika.payments.chain._keys import Anchors, KeySource, ResolvedKey, StageRules
from mudrika.payments.chain._meanings import MEANINGS
from mudrika.payments.chain._trust import Trust
from mudrika.payments.models import (
    CartMandate,
    Received,
    cart_contents_hash,
    receive_cart,
    sum_amounts,
)
from mudrika.payments.profile import MERCHANT_JWT_TYP
from mudrika.payments.report import (
    Recorder,
    Texts,
    VerificationReport,
    found,
    record_signing_time,
    same_text,
)
from mudrika.payments.trustroot import TrustRoot
from mudrika.stores.replay import ReplayStore, claim_or_raise

__all__ = [
    "MERCHANT_CLAIM_CHECKS",
    "CartFacts",
    "VerifiedCart",
    "check_cart",
    "merchant_jti_key",
    "verify_cart",
]

_PARTY: Final = "merchant"
_MAX_JTI: Final = 256
_CART_MEMBERS: Final = frozenset({"contents", "merchant_authorization"})
_LIFETIME_RULE: Final = f"0 < exp - iat <= {MAX_CART_LIFETIME} s"


class CartFacts(NamedTuple):
    """What the cart stage established."""

    merchant_did: str
    key: ResolvedKey
    claims: Mapping[str, Any]
    jti: str
    exp: float


MERCHANT_CLAIM_CHECKS: Final = (
    "merchant.jwt.typ",
    "merchant.jwt.iss",
    "merchant.jwt.sub",
    "merchant.jwt.aud",
    "merchant.jwt.iat",
    "merchant.jwt.nbf",
    "merchant.jwt.exp",
    "merchant.jwt.lifetime",
    "merchant.jwt.jti",
    "merchant.jwt.cart_hash",
)


_MERCHANT_JWS_CHECKS: Final = (*(f"merchant.jws.{name}" for name in JWS_PHASES), *MERCHANT_CLAIM_CHECKS)


def check_signed_members(
    rec: Recorder, check_id: str, party: str, raw: Mapping[str, Any], covered: frozenset[str], *, signer: str
) -> None:
    """Fail ``check_id`` when the mandate has a top-level member outside ``covered``: nobody signed
    it, so a reader of the evidence must not take it as the ``signer``'s word.  Names are sorted and
    cut to 64 characters."""
    extra = [] if raw.keys() <= covered else _unsigned_members(raw, covered)
    rec.check_later(
        check_id,
        party,
        not extra,
        _signed_members_texts,
        covered,
        extra,
        signer,
        error="binding",
        code="unsigned_member",
    )


def _unsigned_members(raw: Mapping[str, Any], covered: frozenset[str]) -> list[str]:
    """The top-level members no signature covers.  The models accept either spelling of a member
    (``merchant_authorization`` or ``merchantAuthorization``, never both: ``receive_*`` refuses a
    member given twice), so the camelCase spelling of a covered name is covered too."""
    spellings = covered | {to_camel(name) for name in covered}
    return sorted(str(name)[:64] for name in raw if name not in spellings)


def _signed_members_texts(covered: frozenset[str], extra: list[str], signer: str) -> Texts:
    got = f"not covered by the {signer}'s signature: " + ", ".join(extra) if extra else "none"
    return "only " + " and ".join(sorted(covered)), got


def check_cart(
    rec: Recorder,
    cart: Received[CartMandate],
    *,
    rules: StageRules,
    audience: str,
    contents_hash: str,
) -> CartFacts | None:
    """The cart stage: no unsigned member, ``merchant_authorization`` (signature and every claim),
    expiry, total.

    Returns the facts when every check of the stage passed, else ``None``.
    """
    mark = rec.last_not_passed
    check_signed_members(rec, "cart.unsigned_members", _PARTY, cart.raw, _CART_MEMBERS, signer="merchant")
    token = cart.model.merchant_authorization
    facts: CartFacts | None = None
    if not rec.check(
        "merchant.jws.present",
        _PARTY,
        isinstance(token, str) and bool(token),
        error="signature",
        code="unsigned_cart",
        expected="merchant_authorization (compact JWS)",
        got="present" if token else "missing",
    ):
        rec.skip(((name, _PARTY) for name in _MERCHANT_JWS_CHECKS), because="the cart is not signed")
    else:
        facts = (
            None
            if token is None
            else _check_merchant_jwt(
                rec,
                cart,
                token,
                rules=rules,
                audience=audience,
                contents_hash=contents_hash,
            )
        )
    contents = cart.model.contents
    check_mandate_expiry(
        rec,
        rules,
        "cart.expiry",
        _PARTY,
        contents.cart_expiry,
        contents.cart_expiry_at.timestamp(),
        code="cart_expired",
    )
    details = contents.payment_request.details
    total = details.total.amount
    try:
        items_sum: Decimal | None = sum_amounts(details.display_items, total.currency)
    except InvalidInput:
        items_sum = None
    rec.check_later(
        "cart.total",
        _PARTY,
        items_sum is not None and items_sum == total.value,
        _total_texts,
        total.currency,
        total.value,
        items_sum,
        len(details.display_items),
        error="binding",
        code="cart_total_mismatch",
    )
    if rec.last_not_passed != mark:
        return None
    return facts


def _check_merchant_jwt(
    rec: Recorder,
    cart: Received[CartMandate],
    token: str,
    *,
    rules: StageRules,
    audience: str,
    contents_hash: str,
) -> CartFacts | None:
    def resolve(header: Mapping[str, Any]) -> ResolvedKey:
        kid = header_kid(header, what="merchant_authorization", did_url=True)
        return rules.keys.merchant_key(kid, owner=rules.keys.pinned_merchant_of(kid) or _did_of(kid))

    checked = check_jws(
        rec, "merchant.jws", _PARTY, token, resolve=resolve, algorithms=rules.algorithms, expected_typ=None
    )
    if checked is None:
        rec.skip(
            ((name, _PARTY) for name in MERCHANT_CLAIM_CHECKS), because="merchant signature not verified"
        )
        return None
    claims = checked.claims
    kid = checked.key.kid
    owner = checked.key.owner
    mark = rec.last_not_passed
    # The profile names the type: RFC 7515 §4.1.9 / RFC 8725 §3.11.
    typ = checked.header.get("typ")
    rec.check_later(
        "merchant.jwt.typ",
        _PARTY,
        typ == MERCHANT_JWT_TYP,
        found,
        MERCHANT_JWT_TYP,
        typ,
        32,
        error="verification",
        code="wrong_typ",
        key=kid,
    )
    # The issuer is the merchant whose key signed (the kid's DID).
    check_iss_is_signer(rec, "merchant.jwt.iss", _PARTY, claims, owner, code="merchant_iss_mismatch", key=kid)
    # §4.1.2: the subject is this cart.
    cart_id = cart.model.contents.id
    sub = claims.get("sub")
    rec.check_later(
        "merchant.jwt.sub",
        _PARTY,
        sub == cart_id,
        found,
        cart_id,
        sub,
        error="binding",
        code="cart_id_mismatch",
        key=kid,
    )
    aud = claims.get("aud")
    aud_ok = same_text(aud, audience)
    rec.check_later(
        "merchant.jwt.aud", _PARTY, aud_ok, found, audience, aud, error="binding", code="wrong_aud", key=kid
    )
    # §4.1.4-6: the shared time rule (iat not in the future, nbf and exp honoured; exp required).
    check_time_claims(rec, rules, "merchant.jwt", _PARTY, claims, key=kid, require_exp=True)
    iat = numeric_date(claims.get("iat"))
    exp = numeric_date(claims.get("exp"))
    lifetime = exp - iat if exp is not None and iat is not None else None
    rec.check_later(
        "merchant.jwt.lifetime",
        _PARTY,
        lifetime is not None and 0 < lifetime <= MAX_CART_LIFETIME,
        _lifetime_texts,
        lifetime,
        error="policy",
        code="lifetime_too_long",
        key=kid,
    )
    jti = claims.get("jti")
    jti_ok = isinstance(jti, str) and 0 < len(jti) <= _MAX_JTI
    rec.check(
        "merchant.jwt.jti",
        _PARTY,
        jti_ok,
        error="verification",
        code="jti_missing",
        expected="a non-empty string (single use)",
        got="present" if jti_ok else "missing or malformed",
        key=kid,
    )
    expected_hash = contents_hash
    got_hash = claims.get("cart_hash")
    check_signed_hash(
        rec, "merchant.jwt.cart_hash", _PARTY, got_hash, expected_hash, code="cart_hash_mismatch", key=kid
    )
    if rec.last_not_passed != mark:
        return None
    if not isinstance(jti, str) or exp is None:  # not reached: the claim checks above passed
        return None
    return CartFacts(owner, checked.key, claims, jti, exp)


@functools.lru_cache(maxsize=1024)
def _did_of(kid: str) -> str:
    """The DID of a DID-URL ``kid``, remembered: a merchant signs every cart with the same few keys,
    and parsing a DID URL costs as much as several checks (a refusal raises and is not remembered)."""
    return parse_did_url(kid).did_str


def _lifetime_texts(lifetime: float | None) -> Texts:
    return _LIFETIME_RULE, f"{lifetime:g} s" if lifetime is not None else "iat or exp missing"


def _total_texts(currency: str, total: Decimal, items_sum: Decimal | None, count: int) -> Texts:
    if items_sum is None:
        return format_money(currency, total), "display items in another currency than the total"
    return format_money(
        currency, total
    ), f"{format_money(currency, items_sum)} (sum of {count} display items)"


@dataclass(frozen=True, slots=True)
class VerifiedCart:
    """A cart whose ``merchant_authorization`` verified: the cart, the merchant, the claims."""

    cart: Received[CartMandate]
    merchant_did: str
    kid: str
    claims: Mapping[str, Any]


def merchant_jti_key(merchant_did: str, jti: str) -> str:
    """The replay-store key of a merchant ``jti`` (a digest: bounded length, no raw claim text)."""
    return single_use_key("ap2:jti:", merchant_did, jti)


def verify_cart(
    cart: Received[CartMandate] | bytes | str | Mapping[str, Any],
    *,
    trust_root: TrustRoot,
    keys: KeySource,
    audience: str,
    now: Time,
    replay_store: ReplayStore,
) -> VerifiedCart:
    """Verify one CartMandate on its own (a shopping agent or payment processor receiving a cart).

    Runs the cart stage of the chain verifier (``cart.unsigned_members``, ``merchant.jws.*``,
    ``merchant.jwt.*``, ``cart.expiry``, ``cart.total``) with the algorithms and leeway of
    ``trust_root``, requires the merchant's key to be pinned there (``keys`` is evidence: it may
    only confirm the pinned key) and inside the window the root pins for it when the cart was
    signed (``merchant.key.window``, judged like the chain's by
    :func:`~mudrika.identity.anchoring.judge_signing_time`), then claims the ``jti`` in
    ``replay_store``.  Returns the verified cart or raises the first failed check's typed error
    (``SignatureError``, ``ExpiredError``, ``BindingError``, ``UntrustedKeyError`` — also
    ``unanchored`` for an unpinned merchant, ``key_expired`` / ``key_compromised`` … for a key
    outside its window —, ``ReplayError`` …).

    A cart on its own is dated by nothing but its own ``iat`` (the user's key-binding JWT that
    dates it inside a chain does not exist yet), so a merchant key reported compromised never
    clears it, while an expired or superseded one is judged by that ``iat``.
    """
    if not isinstance(trust_root, TrustRoot):
        raise InvalidInput(
            "verify_cart needs a TrustRoot: an unanchored cart never verifies", code="bad_policy"
        )
    received = cart if isinstance(cart, Received) else receive_cart(cart)
    at = epoch(now)
    rec = Recorder()
    trust = Trust.of(trust_root)
    facts = check_cart(
        rec,
        received,
        # Positional (keys, algorithms, now, leeway): building this named tuple from keywords takes
        # half as long again (timeit, Python 3.11: ~0.40 µs against ~0.26 µs), on every verification.
        rules=StageRules(Anchors(trust_root, keys), trust.algorithms, at, trust.leeway),
        audience=audience,
        contents_hash=cart_contents_hash(received),
    )
    in_window = (
        facts is not None
        and facts.key.anchored
        and record_signing_time(
            rec,
            "merchant.key.window",
            "merchant",
            facts.key,
            key_id=facts.key.kid,
            signer_claimed=numeric_date(facts.claims.get("iat")),
            attested=None,
        )
    )
    if facts is None or not in_window:
        # Facts come back only when every check of the stage passed, so the report (and its typed
        # error) is built only for a cart that is refused.
        mode: Literal["online", "offline"] = "offline" if keys.offline else "online"
        VerificationReport(
            tuple(rec.checks),
            iso(at),
            mode,
            unanchored_because=("the merchant's key is not pinned in the trust root",),
            meanings=MEANINGS,
        ).raise_for_failure()
        raise IncompleteVerification("the cart was not verified")  # not reached
    claim_or_raise(replay_store, merchant_jti_key(facts.merchant_did, facts.jti), facts.exp)
    return VerifiedCart(received, facts.merchant_did, facts.key.kid, facts.claims)
