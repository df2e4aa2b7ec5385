"""The intent stage of the chain: the user's signature on an AP2 v0.1 IntentMandate, checked.

The signature format (``intent_hash`` over the raw intent without ``user_authorization``, in a
compact JWS of ``typ`` ``ap2-intent+jwt`` whose ``kid`` is a DID URL of the user's DID) and why an
unsigned intent needs ``user_cart_confirmation_required = true`` are explained where the signature
is made: :mod:`mudrika.payments.signing._intent`.  What this stage adds: every time claim of the
JWS (``iat``, optionally ``nbf`` and ``exp``) goes through the shared rule
(``intent.jws.iat|nbf|exp``), and an unsigned intent that says ``false`` fails ``intent.authorization``.

The user's key is evidence (a did:key names a key, not a person): it is anchored only when it is the
``cnf`` key of a credential the trust root anchors (``intent.signer_is_holder``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from mudrika.crypto.jose import header_kid
from mudrika.payments.chain._common import (
    TIME_CLAIMS,
    check_iss_is_signer,
    check_mandate_expiry,
    check_signed_hash,
    check_time_claims,
)
from mudrika.payments.chain._jws import JWS_PHASES, check_jws
from mudrika.payments.chain._keys import ResolvedKey, StageRules
from mudrika.payments.models import IntentMandate, Received
from mudrika.payments.profile import INTENT_JWS_TYP, did_of_kid
from mudrika.payments.report import Recorder

__all__ = ["INTENT_JWS_CHECKS", "IntentFacts", "check_intent"]

_PARTY: Final = "user"


class IntentFacts(NamedTuple):
    """What the intent stage established: who signed it (``None`` for an unsigned intent)."""

    signer: ResolvedKey | None
    user_did: str | None
    signed_at: float | None


INTENT_JWS_CHECKS: Final = (
    *(f"intent.jws.{name}" for name in JWS_PHASES),
    "intent.jws.iss",
    *(f"intent.jws.{claim}" for claim in TIME_CLAIMS),
    "intent.jws.intent_hash",
)


def check_intent(
    rec: Recorder,
    intent: Received[IntentMandate],
    *,
    rules: StageRules,
    expected_hash: str,
    max_age: float | None,
) -> IntentFacts | None:
    """The intent stage: constraints understood, signed (or safely unsigned), signature, not expired.

    Returns the facts when every check of the stage passed, else ``None`` (the chain stops here).
    """
    mark = rec.last_not_passed
    model = intent.model
    # Deny by default: a constraint we do not understand cannot be enforced, so it fails the intent.
    unknown = sorted((model.model_extra or {}).keys())
    rec.check(
        "intent.constraints",
        _PARTY,
        not unknown,
        error="policy",
        code="unknown_constraint",
        expected="only AP2 v0.1 IntentMandate members",
        got=("unknown: " + ", ".join(unknown)) if unknown else "none unknown",
    )
    token = model.user_authorization
    signer: ResolvedKey | None = None
    user_did: str | None = None
    signed_at: float | None = None
    if token is None:
        rec.check(
            "intent.authorization",
            _PARTY,
            model.user_cart_confirmation_required,
            error="policy",
            code="unsigned_intent_without_confirmation",
            expected="signed, or unsigned with user_cart_confirmation_required=true",
            got=f"unsigned, user_cart_confirmation_required={str(model.user_cart_confirmation_required).lower()}",
        )
    else:
        rec.passed("intent.authorization", _PARTY, got="signed (user_authorization present)")
        facts = _check_intent_jws(
            rec,
            token,
            rules=rules,
            expected_hash=expected_hash,
            max_age=max_age,
        )
        if facts is not None:
            signer, user_did, signed_at = facts
    check_mandate_expiry(
        rec,
        rules,
        "intent.expiry",
        _PARTY,
        model.intent_expiry,
        model.intent_expiry_at.timestamp(),
        code="intent_expired",
    )
    if rec.last_not_passed != mark:
        return None
    return IntentFacts(signer=signer, user_did=user_did, signed_at=signed_at)


def _check_intent_jws(
    rec: Recorder,
    token: str,
    *,
    rules: StageRules,
    expected_hash: str,
    max_age: float | None,
) -> tuple[ResolvedKey, str, float] | None:
    def resolve(header: Mapping[str, Any]) -> ResolvedKey:
        kid = header_kid(header, what="the intent JWS", did_url=True)
        # The expected holder's did:key is recognised as a string: its DID URL needs no parsing.
        return rules.keys.user_key(kid, owner=rules.keys.expected_holder_did(kid) or did_of_kid(kid))

    checked = check_jws(
        rec,
        "intent.jws",
        _PARTY,
        token,
        resolve=resolve,
        algorithms=rules.algorithms,
        expected_typ=INTENT_JWS_TYP,
    )
    if checked is None:
        rec.skip(((name, _PARTY) for name in INTENT_JWS_CHECKS[4:]), because="intent signature not verified")
        return None
    claims = checked.claims
    kid = checked.key.kid
    owner = checked.key.owner
    iss_ok = check_iss_is_signer(
        rec, "intent.jws.iss", _PARTY, claims, owner, code="intent_iss_mismatch", key=kid
    )
    # RFC 7519 §4.1.4-6: iat (not in the future; not older than the trust root's intent max age),
    # and nbf / exp when the user wrote them into the intent JWS.
    iat = check_time_claims(
        rec, rules, "intent.jws", _PARTY, claims, key=kid, require_exp=False, max_age=max_age
    )
    hash_ok = check_signed_hash(
        rec,
        "intent.jws.intent_hash",
        _PARTY,
        claims.get("intent_hash"),
        expected_hash,
        code="intent_hash_mismatch",
        key=kid,
    )
    if not iss_ok or iat is None or not hash_ok:
        return None
    return checked.key, owner, iat
