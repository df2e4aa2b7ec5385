"""The payment stage of the chain: ``PaymentMandate.user_authorization`` (SD-JWT VC + key binding) checked.

AP2 v0.1 profile (DESIGN.md):

* A **credential issuer** (the user's bank or wallet provider) issues an SD-JWT VC (RFC 9901, typ
  ``dc+sd-jwt``) whose ``cnf.jwk`` is the user's public key — :func:`issue_user_credential`.
* For each payment the **user** presents it with a key-binding JWT (RFC 9901 §4.3) signed by that
  key: ``typ: kb+jwt``, ``aud`` (the payment processor / merchant that asked), ``nonce`` (that
  verifier's fresh challenge), ``iat``, ``sd_hash``, and ``transaction_data = [H(CartMandate),
  H(PaymentMandateContents)]`` — :func:`sign_payment`.  The two hashes are what makes the signature
  an authorisation of *this* cart and *this* payment: H(CartMandate) covers the merchant's signature
  too, so the user confirms exactly the cart the merchant signed.

Verification follows RFC 9901 §7.1 (issuer-signed JWT, disclosures, validity) with the steps of
:mod:`mudrika.crypto.sdjwt`, and §7.3 step 5 (key binding) check by check so that a report shows
every KB claim separately (``user.kb.aud`` *and* ``user.kb.nonce`` can both be wrong).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mudrika.crypto import sdjwt
from mudrika.crypto._b64 import b64url_decode, b64url_encode
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jose import KeyResolver, TrustedKey
from mudrika.crypto.keys import PublicKey
from mudrika.errors import MudrikaError, UntrustedKeyError
from mudrika.payments.chain._common import MAX_TOKEN_BYTES, Recorder, fingerprint, iso
from mudrika.payments.chain._jws import JWS_PHASES, check_jws, run_jws_phases
from mudrika.payments.chain._keys import KeySource, ResolvedKey
from mudrika.payments.models import (
    CartMandate,
    PaymentMandate,
    Received,
)

__all__ = ["ISSUER_CHECKS", "KB_CHECKS", "PaymentFacts", "check_payment", "kb_nonce_key"]

_MAX_JWK_MEMBERS: Final = 32
_ISSUER_PARTY: Final = "issuer"
_USER_PARTY: Final = "user"


def kb_nonce_key(audience: str, nonce: str) -> str:
    """The replay-store key of a key-binding nonce (a digest: bounded length, no raw nonce text)."""
    data = f"{audience}\x00{nonce}".encode("utf-8", "surrogatepass")
    return "ap2:kb-nonce:" + b64url_encode(hashlib.sha256(data).digest())


@dataclass(frozen=True, slots=True)
class PaymentFacts:
    """What the payment stage established."""

    issuer: str
    issuer_key: ResolvedKey
    credential: Mapping[str, Any]
    """The processed SD-JWT payload (disclosed claims included)."""
    holder_key: PublicKey
    holder_thumbprint: str
    kb_claims: Mapping[str, Any]
    kb_iat: float


ISSUER_CHECKS: Final = (
    "issuer.trusted",
    *(f"issuer.jwt.{name}" for name in JWS_PHASES),
    "issuer.sdjwt.disclosures",
    "issuer.jwt.validity",
    "issuer.jwt.cnf",
)
KB_CHECKS: Final = (
    *(f"user.kb.{name}" for name in JWS_PHASES),
    "user.kb.typ",
    "user.kb.iat",
    "user.kb.aud",
    "user.kb.nonce",
    "user.kb.sd_hash",
    "user.kb.transaction_data",
)


def _parties(ids: Collection[str]) -> list[tuple[str, str]]:
    return [(name, _ISSUER_PARTY if name.startswith("issuer.") else _USER_PARTY) for name in ids]


def _unverified_iss(issuer_jwt: str) -> str | None:
    """``iss`` of the issuer JWT *before* its signature is checked: only to choose the key."""
    payload = loads_strict(b64url_decode(issuer_jwt.split(".")[1], max_len=MAX_TOKEN_BYTES), max_depth=32)
    iss = payload.get("iss") if isinstance(payload, dict) else None
    return iss if isinstance(iss, str) else None


def check_payment(
    rec: Recorder,
    payment: Received[PaymentMandate],
    cart: Received[CartMandate],
    *,
    keys: KeySource,
    trusted_issuers: frozenset[str],
    kb_audience: str,
    kb_nonce: str,
    algorithms: frozenset[str],
    now: float,
    leeway: float,
    kb_max_age: float,
    payment_hash: str,
    cart_hash: str,
) -> PaymentFacts | None:
    """The payment stage: the SD-JWT VC (issuer trusted, signature, disclosures, validity, cnf) and
    the key-binding JWT (every §7.3 step 5 claim, then ``transaction_data``)."""
    token = payment.model.user_authorization
    if not rec.check(
        "user.authorization.present",
        _USER_PARTY,
        isinstance(token, str) and bool(token),
        error="signature",
        code="unsigned_payment",
        expected="user_authorization (SD-JWT+KB)",
        got="present" if token else "missing",
    ):
        rec.skip(
            _parties(("issuer.sdjwt.format", *ISSUER_CHECKS, *KB_CHECKS)), because="the payment is not signed"
        )
        return None
    assert token is not None
    # §7.1 step 1 / §7.3 step 3: split into the issuer JWT, the Disclosures and the KB-JWT.
    try:
        parsed = sdjwt.parse(token)
        claimed_iss = _unverified_iss(parsed.issuer_jwt)
    except MudrikaError as exc:
        rec.from_error("issuer.sdjwt.format", _ISSUER_PARTY, exc)
        rec.skip(_parties((*ISSUER_CHECKS, *KB_CHECKS)), because="the SD-JWT did not parse")
        return None
    rec.passed(
        "issuer.sdjwt.format",
        _ISSUER_PARTY,
        got=f"{parsed.disclosure_count} disclosures, key binding {'present' if parsed.has_key_binding else 'absent'}",
    )
    issuer = _check_issuer(
        rec,
        parsed,
        claimed_iss,
        keys=keys,
        trusted_issuers=trusted_issuers,
        algorithms=algorithms,
        now=now,
        leeway=leeway,
    )
    if issuer is None:
        rec.skip(_parties(KB_CHECKS), because="the credential did not verify")
        return None
    issuer_key, processed, holder = issuer
    assert claimed_iss is not None
    kb = _check_key_binding(
        rec,
        parsed,
        holder,
        kb_audience=kb_audience,
        kb_nonce=kb_nonce,
        algorithms=algorithms,
        now=now,
        leeway=leeway,
        kb_max_age=kb_max_age,
        transaction_data=[cart_hash, payment_hash],
    )
    if kb is None:
        return None
    claims, iat = kb
    return PaymentFacts(
        issuer=claimed_iss,
        issuer_key=issuer_key,
        credential=processed.payload,
        holder_key=holder.key,
        holder_thumbprint=holder.kid,
        kb_claims=claims,
        kb_iat=iat,
    )


def _check_issuer(
    rec: Recorder,
    parsed: sdjwt.ParsedSdJwt,
    claimed_iss: str | None,
    *,
    keys: KeySource,
    trusted_issuers: frozenset[str],
    algorithms: frozenset[str],
    now: float,
    leeway: float,
) -> tuple[ResolvedKey, sdjwt.ProcessedPayload, ResolvedKey] | None:
    if not rec.check(
        "issuer.trusted",
        _ISSUER_PARTY,
        claimed_iss is not None and claimed_iss in trusted_issuers,
        error="untrusted_key",
        code="untrusted_issuer",
        expected="one of: " + ", ".join(sorted(trusted_issuers)),
        got=str(claimed_iss),
    ):
        rec.skip(_parties(ISSUER_CHECKS[1:]), because="the credential issuer is not trusted")
        return None
    assert claimed_iss is not None

    def resolve(header: Mapping[str, Any]) -> ResolvedKey:
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise UntrustedKeyError("the credential names no issuer key (kid)", code="no_kid")
        return keys.assertion_key(kid, owner=claimed_iss)

    def verify(key_for: KeyResolver) -> sdjwt.VerifiedIssuerJwt:
        # §7.1 step 2: signature (alg allowed for the key, never 'none'), typ, _sd_alg.
        return sdjwt.verify_issuer_jwt(parsed, issuer_key=key_for, expected_typ=sdjwt.DEFAULT_TYP)

    outcome = run_jws_phases(rec, "issuer.jwt", _ISSUER_PARTY, verify, resolve=resolve, algorithms=algorithms)
    if outcome is None:
        rec.skip(_parties(ISSUER_CHECKS[5:]), because="the credential signature did not verify")
        return None
    verified, issuer_key = outcome
    kid = issuer_key.kid
    # §7.1 steps 3-5: every Disclosure referenced exactly once, shapes, no clashes.
    processed = rec.run(
        "issuer.sdjwt.disclosures",
        _ISSUER_PARTY,
        lambda: sdjwt.process_disclosures(verified, parsed),
        key=kid,
        describe=lambda p: f"{len(p.disclosures)} disclosures, all referenced",
    )
    if processed is None:
        rec.skip(_parties(ISSUER_CHECKS[6:]), because="the disclosures did not verify")
        return None
    # §7.1 step 6: iss (the issuer whose key signed), iat and exp, on the processed payload.
    rec.run(
        "issuer.jwt.validity",
        _ISSUER_PARTY,
        lambda: sdjwt.check_validity(processed.payload, issuer=claimed_iss, now=now, leeway=leeway),
        expected=f"iss={claimed_iss}, iat <= now < exp at {iso(now)}",
        key=kid,
    )
    if rec.checks[-1].failed:
        rec.skip(_parties(ISSUER_CHECKS[7:]), because="the credential is not valid now")
        return None
    # §4.1.2: the user's key, from cnf.jwk, with the algorithms our policy allows for its type.
    try:
        cnf, thumbprint = _holder_key(processed.payload)
    except MudrikaError as exc:
        rec.from_error("issuer.jwt.cnf", _ISSUER_PARTY, exc, key=kid)
        return None
    holder = ResolvedKey(
        key=cnf.key,
        kid=f"jwk-thumbprint:{thumbprint}",
        owner="holder (cnf.jwk)",
        source="cnf",
        algorithms=cnf.algorithms,
    )
    if not rec.check(
        "issuer.jwt.cnf",
        _ISSUER_PARTY,
        holder.trusted(algorithms) is not None,
        error="policy",
        code="holder_alg_not_allowed",
        expected="cnf.jwk usable with the allowed algorithms",
        got=f"{cnf.key.key_type.value} key",
        key=holder.kid,
    ):
        return None
    return issuer_key, processed, holder


def _holder_key(payload: Mapping[str, Any]) -> tuple[TrustedKey, str]:
    """The holder key of ``cnf.jwk`` and its RFC 7638 thumbprint, cached by the JWK's canonical form.

    Why a cache: building an EC public key validates the point, which costs about as much as a
    signature check, and a user presents the same credential (the same ``cnf``) for every payment.
    Keys are immutable and the cache key is the whole JWK, so a hit is the same key.
    """
    cnf = payload.get("cnf")
    jwk = cnf.get("jwk") if isinstance(cnf, dict) else None
    if isinstance(jwk, dict) and len(jwk) <= _MAX_JWK_MEMBERS:
        return _holder_key_cached(canonicalize(jwk).decode("utf-8"))
    # Not a JWK object: let the SD-JWT module raise its precise error.
    trusted = sdjwt.holder_key_from_cnf(payload)
    return trusted, trusted.key.thumbprint()


@functools.lru_cache(maxsize=1024)
def _holder_key_cached(canonical_jwk: str) -> tuple[TrustedKey, str]:
    trusted = sdjwt.holder_key_from_cnf({"cnf": {"jwk": json.loads(canonical_jwk)}})
    return trusted, trusted.key.thumbprint()


def _sd_hash(sd_jwt: str) -> str:
    # RFC 9901 §4.3.1: base64url(SHA-256(US-ASCII of <issuer-jwt>~<d1>~...~<dN>~)).
    return b64url_encode(hashlib.sha256(sd_jwt.encode("ascii")).digest())


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _equal(got: Any, expected: str) -> bool:
    return isinstance(got, str) and hmac.compare_digest(got.encode(), expected.encode())


def _check_key_binding(
    rec: Recorder,
    parsed: sdjwt.ParsedSdJwt,
    holder: ResolvedKey,
    *,
    kb_audience: str,
    kb_nonce: str,
    algorithms: frozenset[str],
    now: float,
    leeway: float,
    kb_max_age: float,
    transaction_data: list[str],
) -> tuple[Mapping[str, Any], float] | None:
    """RFC 9901 §7.3 step 5, one named check per claim."""
    kb_jwt = parsed.kb_jwt
    if kb_jwt is None:
        # §7.3 step 2: key binding is required by this profile.
        rec.failed(
            "user.kb.header",
            _USER_PARTY,
            error="signature",
            code="kb_missing",
            expected="a key-binding JWT",
            got="none presented",
        )
        rec.skip(_parties(KB_CHECKS[1:]), because="no key-binding JWT")
        return None
    # 5.2-5.3: algorithm allowed for the cnf key type, signature by exactly that key.
    checked = check_jws(
        rec,
        "user.kb",
        _USER_PARTY,
        kb_jwt,
        resolve=lambda _header: holder,
        algorithms=algorithms,
        expected_typ=None,
    )
    if checked is None:
        rec.skip(_parties(KB_CHECKS[4:]), because="the key-binding signature did not verify")
        return None
    claims = checked.claims
    key = holder.kid
    start = len(rec.checks)
    # 5.4: typ is exactly kb+jwt.
    typ = checked.header.get("typ")
    rec.check(
        "user.kb.typ",
        _USER_PARTY,
        typ == sdjwt.KB_JWT_TYP,
        error="verification",
        code="kb_wrong_typ",
        expected=sdjwt.KB_JWT_TYP,
        got=str(typ)[:32],
        key=key,
    )
    # 5.5 and 5.8: iat within [now - max age - leeway, now + leeway]; exp/nbf honoured if present.
    iat = _number(claims.get("iat"))
    exp = _number(claims.get("exp")) if "exp" in claims else None
    nbf = _number(claims.get("nbf")) if "nbf" in claims else None
    window_ok = (
        iat is not None
        and now - kb_max_age - leeway <= iat <= now + leeway
        and ("exp" not in claims or (exp is not None and now < exp + leeway))
        and ("nbf" not in claims or (nbf is not None and nbf <= now + leeway))
    )
    rec.check(
        "user.kb.iat",
        _USER_PARTY,
        window_ok,
        error="expired",
        code="kb_iat_outside_window",
        expected=f"iat in [{iso(now - kb_max_age - leeway)}, {iso(now + leeway)}]",
        got=iso(iat) if iat is not None else "missing or not a NumericDate",
        key=key,
    )
    # 5.6: bound to this verifier (aud, one string) and this transaction (nonce).
    aud = claims.get("aud")
    rec.check(
        "user.kb.aud",
        _USER_PARTY,
        _equal(aud, kb_audience),
        error="binding",
        code="kb_wrong_aud",
        expected=kb_audience,
        got=str(aud)[:200],
        key=key,
    )
    nonce = claims.get("nonce")
    rec.check(
        "user.kb.nonce",
        _USER_PARTY,
        _equal(nonce, kb_nonce),
        error="binding",
        code="kb_wrong_nonce",
        expected=fingerprint(kb_nonce),
        got=fingerprint(nonce) if isinstance(nonce, str) else "missing",
        key=key,
    )
    # 5.7: sd_hash over exactly the issuer JWT and the Disclosures presented with it.
    expected_sd_hash = _sd_hash(parsed.sd_jwt)
    rec.check(
        "user.kb.sd_hash",
        _USER_PARTY,
        _equal(claims.get("sd_hash"), expected_sd_hash),
        error="binding",
        code="sd_hash_mismatch",
        expected=expected_sd_hash,
        got=str(claims.get("sd_hash"))[:64],
        key=key,
    )
    # AP2 profile: the user authorised exactly this cart and these payment contents.
    got_td = claims.get("transaction_data")
    td_ok = (
        isinstance(got_td, list)
        and len(got_td) == len(transaction_data)
        and all(_equal(g, e) for g, e in zip(got_td, transaction_data, strict=True))
    )
    rec.check(
        "user.kb.transaction_data",
        _USER_PARTY,
        td_ok,
        error="binding",
        code="transaction_data_mismatch",
        expected="[H(CartMandate), H(PaymentMandateContents)] = " + ", ".join(transaction_data),
        got=", ".join(str(item)[:64] for item in got_td[:4]) if isinstance(got_td, list) else "missing",
        key=key,
    )
    if not rec.all_passed_since(start):
        return None
    assert iat is not None
    return claims, iat
