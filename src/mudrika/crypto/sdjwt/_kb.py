"""The Key Binding JWT (RFC 9901 §4.3): creating one, and checking one (§7.3 step 5).

Why every KB check is unconditional here: both reference libraries only look at the KB-JWT when the
caller passes a nonce (and the JavaScript one never compares ``aud`` or bounds ``iat``), so a
verifier that forgets an argument silently accepts a forged or replayed binding.  Our caller cannot
reach this code without an audience, a nonce and a maximum age.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jose import TrustedKey, check_jwt_claims, sign_jwt, verify_compact
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.sdjwt._disclosure import digest_of
from mudrika.errors import BindingError, ExpiredError, InvalidInput, MudrikaError, VerificationError

__all__ = ["KB_JWT_TYP", "KB_RESERVED_CLAIMS", "KeyBinding", "check_kb_jwt", "make_kb_jwt"]

KB_JWT_TYP: Final = "kb+jwt"
#: Claims the KB-JWT itself defines (§4.3); ``extra_kb_claims`` may not override them.
KB_RESERVED_CLAIMS: Final = frozenset({"iat", "aud", "nonce", "sd_hash"})


@dataclass(frozen=True, slots=True)
class KeyBinding:
    """A verified KB-JWT: its header, its claims and the ``sd_hash`` it was checked against."""

    header: Mapping[str, Any]
    claims: Mapping[str, Any]
    sd_hash: str
    holder_key: TrustedKey
    kb_jwt: str = field(repr=False)


def make_kb_jwt(
    sd_jwt: str,
    *,
    holder_key: KeyPair,
    aud: str | None,
    nonce: str | None,
    iat: int | None,
    extra_claims: Mapping[str, Any] | None,
    alg: str | None,
) -> str:
    """Sign a KB-JWT over ``sd_jwt`` (``<issuer-jwt>~<d1>~...~``), §4.3 and §4.3.1.

    ``aud``, ``nonce`` and ``iat`` are typed as they may arrive (``present`` hands them over as its
    caller gave them): a missing or empty one is refused here, ``missing_kb_claim`` naming it."""
    if not isinstance(aud, str) or not aud:
        raise InvalidInput("key binding needs a non-empty 'aud' string", code="missing_kb_claim", claim="aud")
    if not isinstance(nonce, str) or not nonce:
        raise InvalidInput(
            "key binding needs a non-empty 'nonce' string", code="missing_kb_claim", claim="nonce"
        )
    if isinstance(iat, bool) or not isinstance(iat, int):
        raise InvalidInput("key binding needs an integer 'iat'", code="missing_kb_claim", claim="iat")
    extra = dict(extra_claims or {})
    clash = KB_RESERVED_CLAIMS.intersection(extra)
    if clash:
        raise InvalidInput(
            "extra KB claims may not override §4.3 claims", code="reserved_kb_claim", names=sorted(clash)
        )
    canonicalize(extra)  # exchangeable JSON only, or our own verifier would refuse the token
    # §4.3: iat, aud, nonce and sd_hash (§4.3.1: the same hash as the Disclosures).
    claims: dict[str, Any] = {"iat": iat, "aud": aud, "nonce": nonce, "sd_hash": digest_of(sd_jwt), **extra}
    return sign_jwt(claims, holder_key, alg=alg, typ=KB_JWT_TYP)


def _prefixed(exc: MudrikaError) -> MudrikaError:
    """Re-raise a jose/claims error under a ``kb_`` code so a report can tell it from the issuer's."""
    return type(exc)(exc.message, code=f"kb_{exc.code}", **exc.fields)


def check_kb_jwt(
    kb_jwt: str,
    *,
    sd_jwt: str,
    holder_key: TrustedKey,
    expected_aud: str,
    expected_nonce: str,
    now: float,
    kb_max_age: float,
    leeway: float,
    max_bytes: int,
) -> KeyBinding:
    """§7.3 step 5 (sub-steps 2-8) for one KB-JWT; raises on the first failed check."""
    try:
        # 5.2 alg allowed for the Holder key's type (never 'none'), 5.3 signature (RFC 7515 §5.2).
        verified = verify_compact(kb_jwt, key=holder_key, max_bytes=max_bytes)
        claims = loads_strict(verified.payload, max_bytes=max_bytes, max_depth=32)
    except MudrikaError as exc:
        raise _prefixed(exc) from None
    # 5.4: typ must be exactly kb+jwt.
    if verified.header.get("typ") != KB_JWT_TYP:
        raise VerificationError(
            "key binding JWT has the wrong 'typ'", code="kb_wrong_typ", expected=KB_JWT_TYP
        )
    if not isinstance(claims, dict):
        raise InvalidInput("key binding JWT payload is not a JSON object", code="kb_malformed_jwt")
    try:
        # 5.8 (checked first because it also proves iat is a NumericDate and not in the future):
        # a valid JWT per RFC 7519 — exp/nbf honoured when present, the §4.3 claims all present.
        check_jwt_claims(
            claims,
            issuer=None,
            audience=None,
            now=now,
            leeway=leeway,
            required=("iat", "aud", "nonce", "sd_hash"),
        )
    except MudrikaError as exc:
        raise _prefixed(exc) from None
    # 5.5: creation time within the acceptable window.
    if float(claims["iat"]) < now - kb_max_age - leeway:
        raise ExpiredError("key binding JWT is too old", code="kb_too_old", iat=claims["iat"], now=now)
    # 5.6: bound to this Verifier (aud, a single string per §4.3) and this transaction (nonce).
    aud = claims["aud"]
    if not isinstance(aud, str) or not hmac.compare_digest(aud.encode(), expected_aud.encode()):
        raise VerificationError("key binding JWT is for another audience", code="kb_wrong_aud")
    nonce = claims["nonce"]
    if not isinstance(nonce, str) or not hmac.compare_digest(nonce.encode(), expected_nonce.encode()):
        raise VerificationError("key binding JWT nonce does not match", code="kb_wrong_nonce")
    # 5.7: sd_hash over exactly the Issuer-signed JWT and the Disclosures presented with it.
    expected_hash = digest_of(sd_jwt)
    got = claims["sd_hash"]
    if not isinstance(got, str) or not hmac.compare_digest(got.encode(), expected_hash.encode()):
        raise BindingError("key binding JWT is not bound to this presentation", code="sd_hash_mismatch")
    return KeyBinding(
        header=verified.header, claims=claims, sd_hash=expected_hash, holder_key=holder_key, kb_jwt=kb_jwt
    )
