"""The payment stage of the chain: ``PaymentMandate.user_authorization`` (SD-JWT VC + key binding) checked.

What is signed — the user's SD-JWT VC and the key-binding JWT whose ``transaction_data`` holds
H(CartMandate), H(PaymentMandateContents) and H(IntentMandate) — is explained once, where it is
produced: :mod:`mudrika.payments.signing._payment`.  What this stage adds: a two-element
``transaction_data`` is a legacy v0.1 chain, so ``user.kb.intent_binding`` fails unless the trust
root accepts legacy chains, and then the report says the intent is not bound.

The credential: its issuer must be in the trust root (``issuer.trusted``), its key pinned there,
its ``vct`` one the trust root accepts for that issuer (``issuer.jwt.vct``), and its ``sub``, when
present, must name the holder of ``cnf.jwk`` (``issuer.jwt.sub``): a did:key / did:jwk whose key
*is* the cnf key, or the DID that signed the intent with the cnf key.  The PaymentMandate has exactly
two members, ``payment_mandate_contents`` (covered by ``transaction_data``) and
``user_authorization``; anything else fails ``payment.unsigned_members``.

Verification follows RFC 9901 §7.1 (issuer-signed JWT, disclosures, validity) with the steps of
:mod:`mudrika.crypto.sdjwt`, and §7.3 step 5 (key binding) check by check so that a report shows
every KB claim separately (``user.kb.aud`` *and* ``user.kb.nonce`` can both be wrong).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mudrika.crypto import sdjwt
from mudrika.crypto._b64 import b64url_decode, b64url_encode
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jose import KeyResolver, TrustedKey
from mudrika.crypto.keys import PublicKey
from mudrika.errors import InvalidInput, MudrikaError, UntrustedKeyError
from mudrika.identity.methods import jwk as did_jwk
from mudrika.identity.methods import key as did_key
from mudrika.payments.chain._cart import unsigned_members
from mudrika.payments.chain._common import (
    MAX_TOKEN_BYTES,
    TIME_CLAIMS,
    Recorder,
    check_time_claims,
    fingerprint,
)
from mudrika.payments.chain._jws import JWS_PHASES, check_jws, run_jws_phases
from mudrika.payments.chain._keys import Anchors, ResolvedKey
from mudrika.payments.models import (
    CartMandate,
    PaymentMandate,
    Received,
)

__all__ = ["ISSUER_CHECKS", "KB_CHECKS", "PaymentFacts", "check_payment", "kb_nonce_key"]

_MAX_JWK_MEMBERS: Final = 32
_ISSUER_PARTY: Final = "issuer"
_USER_PARTY: Final = "user"
_PAYMENT_MEMBERS: Final = frozenset({"payment_mandate_contents", "user_authorization"})
#: Said in words in every report of a legacy chain the trust root accepted.
LEGACY_STATEMENT: Final = (
    "The user's key-binding JWT does not cover H(IntentMandate): this is a legacy AP2 v0.1 chain "
    "that the trust root accepts, and the intent is NOT bound to this payment. The intent checks "
    "compare the cart with an intent the user may never have given for this purchase."
)


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
    intent_bound: bool
    """False only for a legacy chain the trust root accepted (the intent is not bound)."""


_ISSUER_CLAIM_CHECKS: Final = (
    "issuer.jwt.iss",
    *(f"issuer.jwt.{claim}" for claim in TIME_CLAIMS),
    "issuer.jwt.vct",
    "issuer.jwt.cnf",
    "issuer.jwt.sub",
)
ISSUER_CHECKS: Final = (
    "issuer.trusted",
    *(f"issuer.jwt.{name}" for name in JWS_PHASES),
    "issuer.sdjwt.disclosures",
    *_ISSUER_CLAIM_CHECKS,
)
_KB_CLAIM_CHECKS: Final = (
    "user.kb.typ",
    *(f"user.kb.{claim}" for claim in TIME_CLAIMS),
    "user.kb.aud",
    "user.kb.nonce",
    "user.kb.sd_hash",
    "user.kb.transaction_data",
    "user.kb.intent_binding",
)
KB_CHECKS: Final = (*(f"user.kb.{name}" for name in JWS_PHASES), *_KB_CLAIM_CHECKS)


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
    keys: Anchors,
    trusted_issuers: Callable[[str], bool],
    accepted_vct: Callable[[str], frozenset[str]],
    kb_audience: str,
    kb_nonce: str,
    algorithms: frozenset[str],
    now: float,
    leeway: float,
    kb_max_age: float,
    payment_hash: str,
    cart_hash: str,
    intent_mandate_hash: str,
    accept_legacy: bool,
    intent_signer_did: str | None,
) -> PaymentFacts | None:
    """The payment stage: no unsigned member, the SD-JWT VC (issuer trusted, signature, disclosures,
    time claims, vct, cnf, sub) and the key-binding JWT (every §7.3 step 5 claim, then
    ``transaction_data`` and the intent binding)."""
    start = len(rec.checks)
    extra = unsigned_members(payment.raw, _PAYMENT_MEMBERS)
    rec.check(
        "payment.unsigned_members",
        _USER_PARTY,
        not extra,
        error="binding",
        code="unsigned_member",
        expected="only payment_mandate_contents and user_authorization",
        got=("not covered by the user's signature: " + ", ".join(extra)) if extra else "none",
    )
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
        accepted_vct=accepted_vct,
        algorithms=algorithms,
        now=now,
        leeway=leeway,
        intent_signer_did=intent_signer_did,
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
        intent_mandate_hash=intent_mandate_hash,
        accept_legacy=accept_legacy,
    )
    if kb is None or not rec.all_passed_since(start):
        return None
    claims, iat, intent_bound = kb
    return PaymentFacts(
        issuer=claimed_iss,
        issuer_key=issuer_key,
        credential=processed.payload,
        holder_key=holder.key,
        holder_thumbprint=holder.kid,
        kb_claims=claims,
        kb_iat=iat,
        intent_bound=intent_bound,
    )


def _after(name: str) -> list[tuple[str, str]]:
    """The issuer checks after ``name`` (skipped when ``name`` failed)."""
    return _parties(ISSUER_CHECKS[ISSUER_CHECKS.index(name) + 1 :])


def _check_issuer(
    rec: Recorder,
    parsed: sdjwt.ParsedSdJwt,
    claimed_iss: str | None,
    *,
    keys: Anchors,
    trusted_issuers: Callable[[str], bool],
    accepted_vct: Callable[[str], frozenset[str]],
    algorithms: frozenset[str],
    now: float,
    leeway: float,
    intent_signer_did: str | None,
) -> tuple[ResolvedKey, sdjwt.ProcessedPayload, ResolvedKey] | None:
    if not rec.check(
        "issuer.trusted",
        _ISSUER_PARTY,
        claimed_iss is not None and trusted_issuers(claimed_iss),
        error="untrusted_key",
        code="untrusted_issuer",
        expected="an issuer of the trust root",
        got=str(claimed_iss),
    ):
        rec.skip(_after("issuer.trusted"), because="the credential issuer is not trusted")
        return None
    assert claimed_iss is not None

    def resolve(header: Mapping[str, Any]) -> ResolvedKey:
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise UntrustedKeyError("the credential names no issuer key (kid)", code="no_kid")
        return keys.issuer_key(kid, owner=claimed_iss)

    def verify(key_for: KeyResolver) -> sdjwt.VerifiedIssuerJwt:
        # §7.1 step 2: signature (alg allowed for the key, never 'none'), typ, _sd_alg.
        return sdjwt.verify_issuer_jwt(parsed, issuer_key=key_for, expected_typ=sdjwt.DEFAULT_TYP)

    outcome = run_jws_phases(rec, "issuer.jwt", _ISSUER_PARTY, verify, resolve=resolve, algorithms=algorithms)
    if outcome is None:
        rec.skip(_after("issuer.jwt.signature"), because="the credential signature did not verify")
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
        rec.skip(_after("issuer.sdjwt.disclosures"), because="the disclosures did not verify")
        return None
    payload = processed.payload
    start = len(rec.checks)
    # §7.1 step 6 on the processed payload: iss (the issuer whose key signed), then the shared time rule.
    iss = payload.get("iss")
    rec.check(
        "issuer.jwt.iss",
        _ISSUER_PARTY,
        iss == claimed_iss,
        error="binding",
        code="issuer_mismatch",
        expected=claimed_iss,
        got=str(iss)[:200],
        key=kid,
    )
    check_time_claims(
        rec, "issuer.jwt", _ISSUER_PARTY, payload, now=now, leeway=leeway, key=kid, require_exp=True
    )
    # SD-JWT VC §3.2.2.1.1: the credential type must be one the trust root accepts from this issuer.
    vct = payload.get("vct")
    accepted = accepted_vct(claimed_iss)
    rec.check(
        "issuer.jwt.vct",
        _ISSUER_PARTY,
        isinstance(vct, str) and vct in accepted,
        error="policy",
        code="vct_not_accepted",
        expected="one of: " + ", ".join(sorted(accepted)) if accepted else "(the trust root accepts none)",
        got=str(vct)[:200],
        key=kid,
    )
    # §4.1.2: the user's key, from cnf.jwk, with the algorithms our policy allows for its type.
    try:
        cnf, thumbprint = _holder_key(payload)
    except MudrikaError as exc:
        rec.from_error("issuer.jwt.cnf", _ISSUER_PARTY, exc, key=kid)
        rec.skip(_after("issuer.jwt.cnf"), because="the credential names no usable holder key")
        return None
    holder = ResolvedKey(
        key=cnf.key,
        kid=f"jwk-thumbprint:{thumbprint}",
        owner="holder (cnf.jwk)",
        source="cnf",
        algorithms=cnf.algorithms,
        provenance="credential-cnf",
        anchored=issuer_key.anchored,
    )
    rec.check(
        "issuer.jwt.cnf",
        _ISSUER_PARTY,
        holder.trusted(algorithms) is not None,
        error="policy",
        code="holder_alg_not_allowed",
        expected="cnf.jwk usable with the allowed algorithms",
        got=f"{cnf.key.key_type.value} key",
        key=holder.kid,
    )
    _check_subject(rec, payload.get("sub"), "sub" in payload, cnf.key, intent_signer_did, key=kid)
    if not rec.all_passed_since(start):
        return None
    return issuer_key, processed, holder


_MAX_SUB: Final = 4096


@functools.lru_cache(maxsize=1024)
def _self_certified_key(did: str) -> object:
    """The key a did:key / did:jwk encodes (``None`` if it encodes none), remembered: decoding
    decompresses an EC point, and a user's credential names the same ``sub`` for every payment."""
    try:
        if did.startswith("did:key:"):
            return did_key.decode(did)
        return did_jwk.decode(did)[1]
    except InvalidInput:
        return None


def _check_subject(
    rec: Recorder, sub: Any, present: bool, holder: PublicKey, intent_signer_did: str | None, *, key: str
) -> None:
    """``sub`` means "the DID of the holder of cnf.jwk"; a sub that says otherwise is refused.

    Absent: the holder is whoever holds ``cnf.jwk`` (nothing to contradict).  A did:key / did:jwk:
    its key must *be* the cnf key.  Any other DID: it must be the DID that signed the intent, whose
    key ``intent.signer_is_holder`` holds equal to the cnf key.  Anything else cannot be checked
    and is refused (deny by default).
    """
    if not present:
        rec.passed(
            "issuer.jwt.sub",
            _ISSUER_PARTY,
            expected="absent, or the DID of the cnf key's holder",
            got="absent",
            key=key,
        )
        return
    ok = False
    how = "not a DID"
    if isinstance(sub, str) and sub.startswith(("did:key:", "did:jwk:")):
        method = sub[:8]
        ok = len(sub) <= _MAX_SUB and _self_certified_key(sub) == holder
        how = f"{method}, its key is the cnf key" if ok else f"{method} of another key than cnf"
    elif isinstance(sub, str) and sub.startswith("did:"):
        ok = intent_signer_did is not None and sub == intent_signer_did
        how = (
            "the DID that signed the intent (signed with the cnf key: intent.signer_is_holder)"
            if ok
            else "a DID that did not sign the intent with the cnf key"
        )
    rec.check(
        "issuer.jwt.sub",
        _ISSUER_PARTY,
        ok,
        error="binding",
        code="sub_contradicts_cnf",
        expected="absent, or the DID of the cnf key's holder",
        got=f"{str(sub)[:120]} ({how})",
        key=key,
    )


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
    intent_mandate_hash: str,
    accept_legacy: bool,
) -> tuple[Mapping[str, Any], float, bool] | None:
    """RFC 9901 §7.3 step 5, one named check per claim, then the AP2 profile's transaction data."""
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
        rec.skip(_parties(_KB_CLAIM_CHECKS), because="the key-binding signature did not verify")
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
    # 5.5 and 5.8: the shared time rule; iat also within the trust root's key-binding max age.
    iat = check_time_claims(
        rec,
        "user.kb",
        _USER_PARTY,
        claims,
        now=now,
        leeway=leeway,
        key=key,
        require_exp=False,
        max_age=kb_max_age,
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
    # AP2 profile: the user authorised exactly this cart and these payment contents ...
    got_td = claims.get("transaction_data")
    items = list(got_td) if isinstance(got_td, list) else None
    td_ok = (
        items is not None
        and len(items) in (2, 3)
        and all(_equal(g, e) for g, e in zip(items[:2], transaction_data, strict=True))
    )
    rec.check(
        "user.kb.transaction_data",
        _USER_PARTY,
        td_ok,
        error="binding",
        code="transaction_data_mismatch",
        expected="[H(CartMandate), H(PaymentMandateContents), H(IntentMandate)] = "
        + ", ".join([*transaction_data, intent_mandate_hash]),
        got=", ".join(str(item)[:64] for item in items[:4]) if items is not None else "missing",
        key=key,
        detail=_transaction_data_difference(items, transaction_data),
    )
    # ... and this intent: H(IntentMandate) is the third element (profile change: see docs/payments.md).
    bound = items is not None and len(items) == 3 and _equal(items[2], intent_mandate_hash)
    legacy = items is not None and len(items) == 2
    if bound:
        rec.passed(
            "user.kb.intent_binding",
            _USER_PARTY,
            expected=f"H(IntentMandate) = {intent_mandate_hash}",
            got="bound: the user's key-binding JWT covers this intent",
            key=key,
        )
    elif legacy and accept_legacy:
        rec.passed(
            "user.kb.intent_binding",
            _USER_PARTY,
            expected="H(IntentMandate), or a legacy chain the trust root accepts",
            got="NOT BOUND: legacy v0.1 chain accepted by the trust root; the intent is not bound to this payment",
            key=key,
        )
    else:
        rec.failed(
            "user.kb.intent_binding",
            _USER_PARTY,
            error="binding",
            code="intent_not_bound" if legacy else "intent_hash_mismatch",
            expected=f"H(IntentMandate) = {intent_mandate_hash}",
            got="absent (legacy v0.1 chain; the trust root does not accept legacy chains)"
            if legacy
            else (str(items[2])[:64] if items is not None and len(items) > 2 else "missing"),
            key=key,
        )
    if iat is None or not rec.all_passed_since(start):
        return None
    return claims, iat, bound


def _transaction_data_difference(items: list[Any] | None, transaction_data: list[str]) -> str | None:
    """Which of the signed hashes differs from the recomputed one (what the user's consent no longer
    covers), so the report can say it in words."""
    if items is None or len(items) not in (2, 3):
        return None
    names = ("H(CartMandate)", "H(PaymentMandateContents)")
    differing = [
        name for name, g, e in zip(names, items[:2], transaction_data, strict=True) if not _equal(g, e)
    ]
    return ("differs: " + ", ".join(differing)) if differing else None
