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
import json
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final, NamedTuple

from mudrika.crypto import sdjwt
from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jcs import canonicalize
from mudrika.crypto.jose import KeyResolver, TrustedKey, header_kid
from mudrika.crypto.keys import KeyType, PublicKey
from mudrika.errors import InvalidInput, MudrikaError
from mudrika.identity.methods import jwk as did_jwk
from mudrika.identity.methods import key as did_key
from mudrika.payments.chain._cart import check_signed_members
from mudrika.payments.chain._common import TIME_CLAIMS, check_signed_hash, check_time_claims, single_use_key
from mudrika.payments.chain._jws import JWS_PHASES, check_jws, run_jws_phases
from mudrika.payments.chain._keys import ResolvedKey, StageRules
from mudrika.payments.models import (
    CartMandate,
    PaymentMandate,
    Received,
)
from mudrika.payments.report import Recorder, Texts, fingerprint, found, same_text

__all__ = [
    "ISSUER_CHECKS",
    "KB_CHECKS",
    "PaymentFacts",
    "Presented",
    "check_payment",
    "expected_holder",
    "kb_nonce_key",
    "read_presentation",
]

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
    return single_use_key("ap2:kb-nonce:", audience, nonce)


class PaymentFacts(NamedTuple):
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


Presented = tuple[sdjwt.ParsedSdJwt, sdjwt.UnverifiedIssuerPayload]
"""The user's SD-JWT+KB split, and its issuer payload parsed (nothing verified yet)."""


def read_presentation(payment: Received[PaymentMandate]) -> Presented | None:
    """The payment's presentation split and its issuer payload parsed, or ``None`` when there is none
    or it does not parse (the payment stage then reports why, in its own checks)."""
    token = payment.model.user_authorization
    if not isinstance(token, str) or not token:
        return None
    try:
        parsed = sdjwt.parse(token)
        return parsed, sdjwt.read_issuer_payload(parsed)
    except MudrikaError:
        return None


def expected_holder(presented: Presented | None) -> PublicKey | None:
    """The key the (unverified) credential binds in ``cnf.jwk``: a key to *compare* the intent's
    signer with before the payment stage verifies the credential (see
    :meth:`~mudrika.payments.chain._keys.Anchors.expect_holder`); ``None`` if it names no usable key."""
    jwk = presented[1].holder_jwk if presented is not None else None
    if jwk is None:
        return None
    try:
        return _holder_key({"cnf": {"jwk": jwk}})[0].key
    except MudrikaError:
        return None


def check_payment(
    rec: Recorder,
    payment: Received[PaymentMandate],
    cart: Received[CartMandate],
    *,
    rules: StageRules,
    trusted_issuers: Callable[[str], bool],
    accepted_vct: Callable[[str], frozenset[str]],
    kb_audience: str,
    kb_nonce: str,
    kb_max_age: float,
    payment_hash: str,
    cart_hash: str,
    intent_mandate_hash: str,
    accept_legacy: bool,
    intent_signer_did: str | None,
    presented: Presented | None = None,
) -> PaymentFacts | None:
    """The payment stage: no unsigned member, the SD-JWT VC (issuer trusted, signature, disclosures,
    time claims, vct, cnf, sub) and the key-binding JWT (every §7.3 step 5 claim, then
    ``transaction_data`` and the intent binding)."""
    mark = rec.last_not_passed
    check_signed_members(
        rec, "payment.unsigned_members", _USER_PARTY, payment.raw, _PAYMENT_MEMBERS, signer="user"
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
    if token is None:  # not reached: the presence check above returned; no assert (python -O)
        return None
    # §7.1 step 1 / §7.3 step 3: split into the issuer JWT, the Disclosures and the KB-JWT.
    try:
        # ``presented``: this very token, split and parsed by read_presentation (when it parsed).
        parsed, unverified = presented if presented is not None else (sdjwt.parse(token), None)
        # ``iss`` before the signature is checked: only to choose the key.  The parse is reused by
        # sdjwt.verify_issuer_jwt once the signature over these very bytes verified.
        if unverified is None:
            unverified = sdjwt.read_issuer_payload(parsed)
        claimed_iss = unverified.iss
    except MudrikaError as exc:
        rec.from_error("issuer.sdjwt.format", _ISSUER_PARTY, exc)
        rec.skip(_parties((*ISSUER_CHECKS, *KB_CHECKS)), because="the SD-JWT did not parse")
        return None
    rec.passed_later(
        "issuer.sdjwt.format", _ISSUER_PARTY, _format_texts, parsed.disclosure_count, parsed.has_key_binding
    )
    issuer = _check_issuer(
        rec,
        parsed,
        unverified,
        rules=rules,
        trusted_issuers=trusted_issuers,
        accepted_vct=accepted_vct,
        intent_signer_did=intent_signer_did,
    )
    if issuer is None:
        rec.skip(_parties(KB_CHECKS), because="the credential did not verify")
        return None
    issuer_key, processed, holder = issuer
    if claimed_iss is None:  # not reached: issuer.trusted passed; a None stage skips what follows
        return None
    kb = _check_key_binding(
        rec,
        parsed,
        holder,
        kb_audience=kb_audience,
        kb_nonce=kb_nonce,
        rules=rules,
        kb_max_age=kb_max_age,
        transaction_data=[cart_hash, payment_hash],
        intent_mandate_hash=intent_mandate_hash,
        accept_legacy=accept_legacy,
    )
    if kb is None or rec.last_not_passed != mark:
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
    unverified: sdjwt.UnverifiedIssuerPayload,
    *,
    rules: StageRules,
    trusted_issuers: Callable[[str], bool],
    accepted_vct: Callable[[str], frozenset[str]],
    intent_signer_did: str | None,
) -> tuple[ResolvedKey, sdjwt.ProcessedPayload, ResolvedKey] | None:
    claimed_iss = unverified.iss
    if not rec.check_later(
        "issuer.trusted",
        _ISSUER_PARTY,
        claimed_iss is not None and trusted_issuers(claimed_iss),
        found,
        "an issuer of the trust root",
        claimed_iss,
        error="untrusted_key",
        code="untrusted_issuer",
    ):
        rec.skip(_after("issuer.trusted"), because="the credential issuer is not trusted")
        return None
    if claimed_iss is None:  # not reached: issuer.trusted passed on this value
        return None

    def resolve(header: Mapping[str, Any]) -> ResolvedKey:
        kid = header_kid(header, what="the credential's issuer JWT")
        return rules.keys.issuer_key(kid, owner=claimed_iss)

    def verify(key_for: KeyResolver) -> sdjwt.VerifiedIssuerJwt:
        # §7.1 step 2: signature (alg allowed for the key, never 'none'), typ, _sd_alg.
        return sdjwt.verify_issuer_jwt(
            parsed, issuer_key=key_for, expected_typ=sdjwt.DEFAULT_TYP, unverified=unverified
        )

    outcome = run_jws_phases(
        rec, "issuer.jwt", _ISSUER_PARTY, verify, resolve=resolve, algorithms=rules.algorithms
    )
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
        describe=lambda p: f"{len(p.decoded)} disclosures, all referenced",
    )
    if processed is None:
        rec.skip(_after("issuer.sdjwt.disclosures"), because="the disclosures did not verify")
        return None
    payload = processed.payload
    mark = rec.last_not_passed
    # §7.1 step 6 on the processed payload: iss (the issuer whose key signed), then the shared time rule.
    iss = payload.get("iss")
    rec.check_later(
        "issuer.jwt.iss",
        _ISSUER_PARTY,
        iss == claimed_iss,
        found,
        claimed_iss,
        iss,
        200,
        error="binding",
        code="issuer_mismatch",
        key=kid,
    )
    check_time_claims(rec, rules, "issuer.jwt", _ISSUER_PARTY, payload, key=kid, require_exp=True)
    # SD-JWT VC §3.2.2.1.1: the credential type must be one the trust root accepts from this issuer.
    vct = payload.get("vct")
    accepted = accepted_vct(claimed_iss)
    rec.check_later(
        "issuer.jwt.vct",
        _ISSUER_PARTY,
        isinstance(vct, str) and vct in accepted,
        _vct_texts,
        accepted,
        vct,
        error="policy",
        code="vct_not_accepted",
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
    rec.check_later(
        "issuer.jwt.cnf",
        _ISSUER_PARTY,
        holder.trusted(rules.algorithms) is not None,
        _cnf_texts,
        cnf.key,
        error="policy",
        code="holder_alg_not_allowed",
        key=holder.kid,
    )
    _check_subject(
        rec,
        payload.get("sub"),
        "sub" in payload,
        cnf.key,
        intent_signer_did,
        key=kid,
        did_key_of=rules.keys.did_key_of,
    )
    if rec.last_not_passed != mark:
        return None
    return issuer_key, processed, holder


_MAX_SUB: Final = 4096


@functools.lru_cache(maxsize=1024)
def _did_jwk_key(did: str) -> object:
    """The key a did:jwk encodes (``None`` if it encodes none), remembered: decoding builds the key
    (an EC point validated), and a user's credential names the same ``sub`` for every payment."""
    try:
        return did_jwk.decode(did)[1]
    except InvalidInput:
        return None


def _is_did_key_of(did: str, key: PublicKey, did_key_of: Callable[[PublicKey], str] = did_key.create) -> bool:
    """``did`` is the did:key of ``key``: encoding a key (a compression and a base58 encoding) is a
    fraction of decoding one (a square root modulo p to decompress the point).  Exact both ways:
    :func:`~mudrika.identity.methods.key.create` writes the one canonical form, and
    :func:`~mudrika.identity.methods.key.decode` refuses every other spelling of a key (a non-minimal
    varint, another multibase, a non-canonical point), so a did:key that is not this string is
    another key's or none."""
    return did.startswith("did:key:") and did_key_of(key) == did


def _check_subject(
    rec: Recorder,
    sub: Any,
    present: bool,
    holder: PublicKey,
    intent_signer_did: str | None,
    *,
    key: str,
    did_key_of: Callable[[PublicKey], str] = did_key.create,
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
        ok = len(sub) <= _MAX_SUB and (
            _is_did_key_of(sub, holder, did_key_of) if method == "did:key:" else _did_jwk_key(sub) == holder
        )
        how = f"{method}, its key is the cnf key" if ok else f"{method} of another key than cnf"
    elif isinstance(sub, str) and sub.startswith("did:"):
        ok = intent_signer_did is not None and sub == intent_signer_did
        how = (
            "the DID that signed the intent (signed with the cnf key: intent.signer_is_holder)"
            if ok
            else "a DID that did not sign the intent with the cnf key"
        )
    rec.check_later(
        "issuer.jwt.sub",
        _ISSUER_PARTY,
        ok,
        _subject_texts,
        sub,
        how,
        error="binding",
        code="sub_contradicts_cnf",
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
        if all(isinstance(value, str) for value in jwk.values()):
            # An EC / OKP / RSA public JWK has only string members: its sorted members name it
            # exactly, without canonicalising it on every payment.
            return _holder_key_by_members(tuple(sorted(jwk.items())))
        return _holder_key_cached(canonicalize(jwk).decode("utf-8"))
    # Not a JWK object: let the SD-JWT module raise its precise error.
    trusted = sdjwt.holder_key_from_cnf(payload)
    return trusted, trusted.key.thumbprint()


@functools.lru_cache(maxsize=1024)
def _holder_key_cached(canonical_jwk: str) -> tuple[TrustedKey, str]:
    return _holder_key_of(json.loads(canonical_jwk))


@functools.lru_cache(maxsize=1024)
def _holder_key_by_members(members: tuple[tuple[str, str], ...]) -> tuple[TrustedKey, str]:
    return _holder_key_of(dict(members))


def _holder_key_of(jwk: dict[str, Any]) -> tuple[TrustedKey, str]:
    trusted = sdjwt.holder_key_from_cnf({"cnf": {"jwk": jwk}})
    return trusted, _thumbprint_of(jwk, trusted.key)


def _thumbprint_of(jwk: Mapping[str, Any], key: PublicKey) -> str:
    """RFC 7638 thumbprint of the holder key, from the members of the JWK it was just built from.

    Why: the key's own :meth:`~mudrika.crypto.keys.PublicKey.thumbprint` re-derives the members from
    the parsed key (an OpenSSL export and two encodings).  Exact: the JWK import accepted ``x`` (and
    ``y``) only as canonical unpadded base64url of exactly the coordinate length, which is what the
    re-derivation writes; ``crv`` is the key's curve by the same import.  Any other key type takes
    the key's own method.
    """
    kty = jwk.get("kty")
    if kty == "EC" and key.key_type in (KeyType.P256, KeyType.SECP256K1):
        members = f'{{"crv":"{jwk["crv"]}","kty":"EC","x":"{jwk["x"]}","y":"{jwk["y"]}"}}'
    elif kty == "OKP" and key.key_type is KeyType.ED25519:
        members = f'{{"crv":"Ed25519","kty":"OKP","x":"{jwk["x"]}"}}'
    else:
        return key.thumbprint()
    return b64url_encode(hashlib.sha256(members.encode("ascii")).digest())


def _check_key_binding(
    rec: Recorder,
    parsed: sdjwt.ParsedSdJwt,
    holder: ResolvedKey,
    *,
    kb_audience: str,
    kb_nonce: str,
    rules: StageRules,
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
        algorithms=rules.algorithms,
        expected_typ=None,
    )
    if checked is None:
        rec.skip(_parties(_KB_CLAIM_CHECKS), because="the key-binding signature did not verify")
        return None
    claims = checked.claims
    key = holder.kid
    mark = rec.last_not_passed
    # 5.4: typ is exactly kb+jwt.
    typ = checked.header.get("typ")
    rec.check_later(
        "user.kb.typ",
        _USER_PARTY,
        typ == sdjwt.KB_JWT_TYP,
        found,
        sdjwt.KB_JWT_TYP,
        typ,
        32,
        error="verification",
        code="kb_wrong_typ",
        key=key,
    )
    # 5.5 and 5.8: the shared time rule; iat also within the trust root's key-binding max age.
    iat = check_time_claims(
        rec, rules, "user.kb", _USER_PARTY, claims, key=key, require_exp=False, max_age=kb_max_age
    )
    # 5.6: bound to this verifier (aud, one string) and this transaction (nonce).
    aud = claims.get("aud")
    rec.check_later(
        "user.kb.aud",
        _USER_PARTY,
        same_text(aud, kb_audience),
        found,
        kb_audience,
        aud,
        200,
        error="binding",
        code="kb_wrong_aud",
        key=key,
    )
    nonce = claims.get("nonce")
    rec.check_later(
        "user.kb.nonce",
        _USER_PARTY,
        same_text(nonce, kb_nonce),
        _nonce_texts,
        kb_nonce,
        nonce,
        error="binding",
        code="kb_wrong_nonce",
        key=key,
    )
    # 5.7: sd_hash over exactly the issuer JWT and the Disclosures presented with it.
    expected_sd_hash = sdjwt.digest_of(parsed.sd_jwt)
    check_signed_hash(
        rec,
        "user.kb.sd_hash",
        _USER_PARTY,
        claims.get("sd_hash"),
        expected_sd_hash,
        code="sd_hash_mismatch",
        key=key,
    )
    # AP2 profile: the user authorised exactly this cart and these payment contents ...
    got_td = claims.get("transaction_data")
    items = list(got_td) if isinstance(got_td, list) else None
    td_ok = (
        items is not None
        and len(items) in (2, 3)
        and all(same_text(g, e) for g, e in zip(items[:2], transaction_data, strict=True))
    )
    if td_ok:
        rec.passed_later(
            "user.kb.transaction_data",
            _USER_PARTY,
            _transaction_texts,
            transaction_data,
            intent_mandate_hash,
            items,
            key=key,
        )
    else:
        expected_td, got_td_text = _transaction_texts(transaction_data, intent_mandate_hash, items)
        rec.failed(
            "user.kb.transaction_data",
            _USER_PARTY,
            error="binding",
            code="transaction_data_mismatch",
            expected=expected_td,
            got=got_td_text,
            key=key,
            detail=_transaction_data_difference(items, transaction_data),
        )
    # ... and this intent: H(IntentMandate) is the third element (profile change: see docs/payments.md).
    bound = items is not None and len(items) == 3 and same_text(items[2], intent_mandate_hash)
    legacy = items is not None and len(items) == 2
    if bound:
        rec.passed_later("user.kb.intent_binding", _USER_PARTY, _bound_texts, intent_mandate_hash, key=key)
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
    if iat is None or rec.last_not_passed != mark:
        return None
    return claims, iat, bound


def _transaction_data_difference(items: list[Any] | None, transaction_data: list[str]) -> str | None:
    """Which of the signed hashes differs from the recomputed one (what the user's consent no longer
    covers), so the report can say it in words."""
    if items is None or len(items) not in (2, 3):
        return None
    names = ("H(CartMandate)", "H(PaymentMandateContents)")
    differing = [
        name for name, g, e in zip(names, items[:2], transaction_data, strict=True) if not same_text(g, e)
    ]
    return ("differs: " + ", ".join(differing)) if differing else None


# The texts of the stage's checks, formatted only when a report is drawn (or the check failed).
def _format_texts(disclosures: int, has_key_binding: bool) -> Texts:
    return None, f"{disclosures} disclosures, key binding {'present' if has_key_binding else 'absent'}"


def _vct_texts(accepted: frozenset[str], vct: Any) -> Texts:
    # Never empty: a trust root refuses an empty vct list, for an issuer and as its default.
    return "one of: " + ", ".join(sorted(accepted)), str(vct)[:200]


def _cnf_texts(key: PublicKey) -> Texts:
    return "cnf.jwk usable with the allowed algorithms", f"{key.key_type.value} key"


def _subject_texts(sub: Any, how: str) -> Texts:
    return "absent, or the DID of the cnf key's holder", f"{str(sub)[:120]} ({how})"


def _nonce_texts(expected: str, nonce: Any) -> Texts:
    # Never the nonce itself: a fingerprint of each (a nonce is a single-use secret of the session).
    return fingerprint(expected), fingerprint(nonce) if isinstance(nonce, str) else "missing"


def _transaction_texts(
    transaction_data: list[str], intent_mandate_hash: str, items: list[Any] | None
) -> Texts:
    expected = "[H(CartMandate), H(PaymentMandateContents), H(IntentMandate)] = " + ", ".join(
        [*transaction_data, intent_mandate_hash]
    )
    return expected, ", ".join(str(item)[:64] for item in items[:4]) if items is not None else "missing"


def _bound_texts(intent_mandate_hash: str) -> Texts:
    return f"H(IntentMandate) = {intent_mandate_hash}", "bound: the user's key-binding JWT covers this intent"
