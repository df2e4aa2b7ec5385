"""Verification of each token of a delegate SD-JWT chain: the root SD-JWT, then every KB-SD-JWT hop.

Why a state machine: a hop is admitted only after the token before it verified, because its
signing key *is* that token's ``cnf.jwk`` (draft-gco-oauth-delegate-sd-jwt-00 §5.1.4, as AP2 v0.2
uses it).  Each step below is one named check, in the order of RFC 9901 §7.1 (issuer-signed JWT,
then Disclosures, then validity) followed by the delegation checks the official SDK leaves to its
callers (see docs/ap2-v02.md "SDK gaps"):

Root (``<prefix>.hop0.*``): ``typ`` · ``iss`` (present and a trusted issuer of the trust root) ·
``key`` (only from the trust root, by ``kid``; ``x5c``/``jku``/``jwk`` headers never followed) ·
``signature`` · ``sd_alg`` (allow-list) · ``disclosures`` · ``claims`` (no unknown top-level claim)
· ``delegate`` (exactly one disclosed mandate) · ``vct`` (exact, and accepted from this issuer) ·
``schema`` · ``time`` (``exp`` required on the open mandate; ``nbf``/``iat`` honoured) · ``cnf``.

Hop *i* (``<prefix>.hop<i>.*``): ``typ`` (``kb+sd-jwt+kb`` before the last, ``kb+sd-jwt`` last) ·
``signature`` (under hop *i-1*'s ``cnf.jwk``, ES256) · ``sd_alg`` · ``disclosures`` · ``claims`` ·
``binding`` (exactly one of ``sd_hash``/``issuer_jwt_hash``, equal to the hash of hop *i-1* as
presented) · ``aud`` and ``nonce`` (required and equal to the verifier's expectation for *this*
hop) · ``iat`` (required, not in the future, at most the trust root's key-binding age old) ·
``delegate`` · ``vct`` · ``schema`` · ``time`` (``exp``/``nbf`` honoured) · ``cnf`` (present exactly
on intermediate hops).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import BaseModel

from mudrika.crypto._b64 import b64url_decode
from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import TrustedKey, header_kid, parse_unverified_header, verify_compact
from mudrika.crypto.keys import PublicKey
from mudrika.crypto.sdjwt import ParsedSdJwt, VerifiedIssuerJwt, process_disclosures
from mudrika.errors import ExpiredError, InvalidInput, UntrustedKeyError, VerificationError
from mudrika.payments.chain._common import Recorder, StepFailed, fingerprint
from mudrika.payments.trustroot import TrustRoot
from mudrika.payments.v02._x5c import validated_x5c_key
from mudrika.payments.v02.models import (
    CheckoutMandate,
    Cnf,
    OpenCheckoutMandate,
    OpenPaymentMandate,
    PaymentMandate,
    parse_model,
)
from mudrika.payments.v02.profile import (
    CLOSED_VCT,
    DELEGATE_CLAIM,
    HOP_ALGORITHMS,
    INTERMEDIATE_TYP,
    OPEN_VCT,
    ROOT_TYPS,
    SD_ALGORITHMS,
    TERMINAL_TYP,
    MandateKind,
)
from mudrika.payments.v02.wire import CHAIN_LIMITS, ParsedChain, sd_digest

__all__ = [
    "HOP_CHECKS",
    "ROOT_CHECKS",
    "HopExpectation",
    "TokenRole",
    "VerifiedToken",
    "check_times",
    "verify_tokens",
]

TokenRole = Literal["root", "intermediate", "terminal"]

ROOT_CHECKS: Final = (
    "typ",
    "iss",
    "key",
    "signature",
    "sd_alg",
    "disclosures",
    "claims",
    "delegate",
    "vct",
    "schema",
    "time",
    "cnf",
)
HOP_CHECKS: Final = (
    "typ",
    "signature",
    "sd_alg",
    "disclosures",
    "claims",
    "binding",
    "aud",
    "nonce",
    "iat",
    "delegate",
    "vct",
    "schema",
    "time",
    "cnf",
)

#: Top-level claims a token may carry besides its delegate payload (everything else is refused:
#: an unknown claim would be signed but ignored).
_ROOT_CLAIMS: Final = frozenset({DELEGATE_CLAIM, "_sd_alg", "iss", "sub", "iat", "nbf", "exp", "jti"})
_HOP_CLAIMS: Final = frozenset(
    {DELEGATE_CLAIM, "_sd_alg", "iat", "nbf", "exp", "aud", "nonce", "sd_hash", "issuer_jwt_hash", "jti"}
)
_MODELS: Final[dict[tuple[MandateKind, bool], type[BaseModel]]] = {
    ("checkout", True): OpenCheckoutMandate,
    ("checkout", False): CheckoutMandate,
    ("payment", True): OpenPaymentMandate,
    ("payment", False): PaymentMandate,
}


@dataclass(frozen=True, slots=True)
class HopExpectation:
    """What the verifier expects one KB-SD-JWT hop to carry: its ``aud`` and its ``nonce``.

    One per hop, in chain order.  The terminal hop's are the verifier's own (who it is and the nonce
    it handed out); an intermediate hop's are those of the delegation it records.
    """

    audience: str
    nonce: str = field(repr=False)
    source: Literal["verifier", "analyst", "trust-root", "evidence"] = "verifier"
    """Who supplied the expectation; ``evidence`` (read from a bundle) leaves the verdict UNANCHORED."""

    def __post_init__(self) -> None:
        if not isinstance(self.audience, str) or not self.audience:
            raise InvalidInput("a hop expectation needs a non-empty audience", code="bad_expectation")
        if not isinstance(self.nonce, str) or not self.nonce:
            raise InvalidInput("a hop expectation needs a non-empty nonce", code="bad_expectation")
        if self.source not in ("verifier", "analyst", "trust-root", "evidence"):
            raise InvalidInput("unknown expectation source", code="bad_expectation")


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    """One admitted token: its processed payload, its mandate content and the key it rests on."""

    index: int
    role: TokenRole
    header: Mapping[str, Any]
    payload: Mapping[str, Any] = field(repr=False)
    content: Mapping[str, Any] = field(repr=False)
    """The disclosed delegate mandate as received (raw JSON, not re-serialised)."""
    mandate: BaseModel = field(repr=False)
    key: str
    """Which key verified it: the trust root's ``kid`` for the root, ``jkt:<thumbprint>`` for hops."""
    party: str
    thumbprint: str
    """RFC 7638 thumbprint of the key that verified this token."""
    provenance: str
    """Where that key came from (the trust root, or the previous token's ``cnf``)."""
    sd_hash: str
    """base64url(SHA-256) of this token's SD-JWT form as presented (``<jwt>~<disclosures>~``)."""
    iat: int | None
    next_key: TrustedKey | None = field(repr=False)
    parsed: ParsedSdJwt = field(repr=False)


@dataclass(slots=True)
class _Context:
    kind: MandateKind
    trust_root: TrustRoot
    now: float
    leeway: float
    prefix: str
    recorder: Recorder


def verify_tokens(
    chain: ParsedChain,
    *,
    kind: MandateKind,
    trust_root: TrustRoot,
    hops: Sequence[HopExpectation],
    now: float,
    recorder: Recorder,
    prefix: str,
) -> tuple[VerifiedToken, ...] | None:
    """Admit the chain token by token, recording every check; ``None`` when a token was refused
    (its remaining checks and every later token's are recorded as skipped)."""
    context = _Context(kind, trust_root, now, float(trust_root.leeway_seconds), prefix, recorder)
    admitted: list[VerifiedToken] = []
    last = len(chain.tokens) - 1
    for index, parsed in enumerate(chain.tokens):
        if index == 0:
            token = _root(parsed, context)
        else:
            expectation = hops[index - 1] if index - 1 < len(hops) else None
            token = _hop(parsed, index, admitted[-1], expectation, index == last, context)
        if token is None:
            for later in range(index + 1, len(chain.tokens)):
                recorder.skip_each(
                    (f"{prefix}.hop{later}.{name}" for name in HOP_CHECKS),
                    f"hop {later}",
                    detail="an earlier token of the chain was not admitted",
                )
            return None
        admitted.append(token)
    return tuple(admitted)


# -- the steps -------------------------------------------------------------------------------------


def _steps(
    context: _Context, index: int, names: Sequence[str], party: str
) -> Callable[[str, Callable[[], Any]], Any]:
    """A runner that records ``<prefix>.hop<index>.<name>`` and skips the rest once one fails."""
    done: list[str] = []

    def run(name: str, step: Callable[[], Any]) -> Any:
        check_id = f"{context.prefix}.hop{index}.{name}"
        done.append(name)
        try:
            return context.recorder.run_or_stop(check_id, party, step)
        except StepFailed:
            remaining = [n for n in names if n not in done]
            context.recorder.skip_each(
                (f"{context.prefix}.hop{index}.{n}" for n in remaining), party, detail=f"{name} failed"
            )
            raise

    return run


def _disclosed(
    run: Callable[[str, Callable[[], Any]], Any],
    parsed: ParsedSdJwt,
    verified: tuple[Mapping[str, Any], Mapping[str, Any]],
    key: TrustedKey,
) -> Mapping[str, Any]:
    """The ``sd_alg`` and ``disclosures`` steps, alike for the root and every hop: the disclosed payload."""
    sd_alg = run("sd_alg", lambda: _sd_alg(verified[1]))
    processed = run(
        "disclosures",
        lambda: process_disclosures(
            VerifiedIssuerJwt(header=verified[0], payload=verified[1], key=key, sd_alg=sd_alg),
            parsed,
            limits=CHAIN_LIMITS,
        ),
    )
    payload: Mapping[str, Any] = processed.payload
    return payload


def _root(parsed: ParsedSdJwt, context: _Context) -> VerifiedToken | None:
    party = "root issuer"
    run = _steps(context, 0, ROOT_CHECKS, party)
    try:
        header = run("typ", lambda: _check_typ(parsed, ROOT_TYPS))
        issuer = run("iss", lambda: _root_issuer(parsed, context.trust_root))
        party = issuer
        root_key = run("key", lambda: _root_key(header, issuer, parsed, context.trust_root))
        key = root_key.key
        verified = run("signature", lambda: _signature(parsed, key, root_key.validated_headers))
        payload = _disclosed(run, parsed, verified, key)
        run("claims", lambda: _root_claims(payload, issuer))
        content = run("delegate", lambda: _delegate(payload))
        run("vct", lambda: _root_vct(content, issuer, context))
        mandate = run(
            "schema", lambda: parse_model(_MODELS[(context.kind, True)], content, what="open mandate")
        )
        run("time", lambda: _times(context, payload, content, require_exp=True))
        next_key = run("cnf", lambda: _next_key(mandate, 0))
    except StepFailed:
        return None
    return VerifiedToken(
        index=0,
        role="root",
        header=header,
        payload=payload,
        content=content,
        mandate=mandate,
        key=root_key.label,
        party=issuer,
        thumbprint=key.key.thumbprint(),
        provenance=root_key.provenance,
        sd_hash=sd_digest(parsed.sd_jwt),
        iat=_optional_iat(payload, content),
        next_key=next_key,
        parsed=parsed,
    )


def _hop(
    parsed: ParsedSdJwt,
    index: int,
    previous: VerifiedToken,
    expectation: HopExpectation | None,
    terminal: bool,
    context: _Context,
) -> VerifiedToken | None:
    assert previous.next_key is not None  # an admitted non-terminal token always names the next key
    key = previous.next_key
    key_label = "jkt:" + key.key.thumbprint()
    party = f"delegate {index} ({key_label[:20]})"
    run = _steps(context, index, HOP_CHECKS, party)
    try:
        header = run("typ", lambda: _check_typ(parsed, {TERMINAL_TYP} if terminal else {INTERMEDIATE_TYP}))
        verified = run("signature", lambda: _signature(parsed, key))
        payload = _disclosed(run, parsed, verified, key)
        run("claims", lambda: _known_claims(payload, _HOP_CLAIMS))
        run("binding", lambda: _binding(payload, previous))
        run(
            "aud",
            lambda: _expected_claim(payload, "aud", None if expectation is None else expectation.audience),
        )
        run(
            "nonce",
            lambda: _expected_claim(payload, "nonce", None if expectation is None else expectation.nonce),
        )
        iat = run("iat", lambda: _hop_iat(payload, context))
        content = run("delegate", lambda: _delegate(payload))
        vct = OPEN_VCT[context.kind] if not terminal else CLOSED_VCT[context.kind]
        run("vct", lambda: _exact_vct(content, vct))
        mandate = run(
            "schema",
            lambda: parse_model(
                _MODELS[(context.kind, not terminal)],
                content,
                what="closed mandate" if terminal else "open mandate",
            ),
        )
        run("time", lambda: _times(context, payload, content, require_exp=False))
        next_key = run("cnf", lambda: _hop_cnf(mandate, content, index, terminal))
    except StepFailed:
        return None
    return VerifiedToken(
        index=index,
        role="terminal" if terminal else "intermediate",
        header=header,
        payload=payload,
        content=content,
        mandate=mandate,
        key=key_label,
        party=party,
        thumbprint=key.key.thumbprint(),
        provenance=f"cnf.jwk of token {index - 1}, signed by {previous.party[:120]}",
        sd_hash=sd_digest(parsed.sd_jwt),
        iat=iat,
        next_key=next_key,
        parsed=parsed,
    )


# -- individual checks -----------------------------------------------------------------------------


def _check_typ(parsed: ParsedSdJwt, allowed: set[str] | frozenset[str]) -> Mapping[str, Any]:
    header = parse_unverified_header(parsed.issuer_jwt)
    typ = header.get("typ")
    if not isinstance(typ, str) or typ.lower() not in allowed:
        raise VerificationError(
            "unexpected token type",
            code="wrong_typ",
            expected=" or ".join(sorted(allowed)),
            got=str(typ)[:40] if typ is not None else None,
        )
    return header


def _unverified_payload(parsed: ParsedSdJwt) -> Mapping[str, Any]:
    encoded = parsed.issuer_jwt.split(".")[1]
    value = loads_strict(
        b64url_decode(encoded, max_len=CHAIN_LIMITS.max_bytes), max_bytes=CHAIN_LIMITS.max_bytes
    )
    if not isinstance(value, dict):
        raise InvalidInput("token payload is not a JSON object", code="malformed_jwt")
    return value


def _root_issuer(parsed: ParsedSdJwt, trust_root: TrustRoot) -> str:
    # Read before the signature only to pick the key; the verified payload must say the same.
    iss = _unverified_payload(parsed).get("iss")
    if not isinstance(iss, str) or not iss:
        raise UntrustedKeyError("the root mandate names no issuer (iss)", code="root_iss_missing")
    if not trust_root.trusts_issuer(iss):
        raise UntrustedKeyError(
            "the root mandate's issuer is not in the trust root", code="untrusted_issuer", got=iss[:200]
        )
    return iss


@dataclass(frozen=True, slots=True)
class _RootKey:
    key: TrustedKey
    label: str
    provenance: str
    validated_headers: tuple[str, ...] = ()


def _root_key(header: Mapping[str, Any], issuer: str, parsed: ParsedSdJwt, trust_root: TrustRoot) -> _RootKey:
    for name in ("x5u", "jku", "jwk"):
        if name in header:
            # Key material in the header is evidence, never trust.
            raise UntrustedKeyError("root keys come only from the trust root", code=f"{name}_refused")
    allowed = trust_root.algorithm_set
    if "x5c" in header:
        return _x5c_root_key(header, issuer, parsed, trust_root, allowed)
    kid = header_kid(header, what="the root token")
    anchor = trust_root.anchor("issuer", issuer, kid, algorithms=allowed)
    return _RootKey(
        key=anchor.trusted,
        label=anchor.kid,
        provenance=f"trust root: issuers[{issuer[:120]}] key {kid[:120]}",
    )


def _x5c_root_key(
    header: Mapping[str, Any],
    issuer: str,
    parsed: ParsedSdJwt,
    trust_root: TrustRoot,
    allowed: frozenset[str],
) -> _RootKey:
    entry = trust_root.issuers.get(issuer)
    roots = getattr(entry, "x509_roots", None) if entry is not None else None
    if not roots:
        # Without CA roots for this issuer an x5c chain proves nothing: refused, never accepted as is.
        raise UntrustedKeyError("the trust root lists no x509 roots for this issuer", code="x5c_refused")
    signed_at = _unverified_payload(parsed).get("iat")
    if isinstance(signed_at, bool) or not isinstance(signed_at, int):
        raise UntrustedKeyError(
            "an x5c-signed root needs an integer iat (the signing time)", code="x5c_needs_iat"
        )
    public, path = validated_x5c_key(header["x5c"], roots=list(roots), signed_at=float(signed_at))
    return _RootKey(
        key=TrustedKey(key=public, algorithms=allowed, kid=None, owner=issuer),
        label="x5c:" + public.thumbprint(),
        provenance=f"trust root: issuers[{issuer[:120]}].x509_roots, {path}",
        validated_headers=("x5c",),
    )


def _signature(
    parsed: ParsedSdJwt, key: TrustedKey, validated_headers: tuple[str, ...] = ()
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    verified = verify_compact(
        parsed.issuer_jwt, key=key, max_bytes=CHAIN_LIMITS.max_bytes, validated_key_headers=validated_headers
    )
    payload = loads_strict(
        verified.payload, max_bytes=CHAIN_LIMITS.max_bytes, max_depth=CHAIN_LIMITS.max_depth
    )
    if not isinstance(payload, dict):
        raise InvalidInput("token payload is not a JSON object", code="malformed_jwt")
    return verified.header, payload


def _sd_alg(payload: Mapping[str, Any]) -> str:
    sd_alg = payload.get("_sd_alg", "sha-256")
    if sd_alg not in SD_ALGORITHMS:
        raise VerificationError(
            "unsupported _sd_alg", code="unsupported_sd_alg", expected="sha-256", got=str(sd_alg)[:32]
        )
    return str(sd_alg)


def _known_claims(payload: Mapping[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(name for name in payload if name not in allowed)
    if unknown:
        raise VerificationError(
            "token carries claims this profile does not define",
            code="unknown_claim",
            got=",".join(unknown)[:200],
        )


def _root_claims(payload: Mapping[str, Any], issuer: str) -> None:
    _known_claims(payload, _ROOT_CLAIMS)
    if payload.get("iss") != issuer:
        # The key was chosen by the iss read before the signature check; the signed one must agree.
        raise VerificationError("the signed iss is not the one the key was chosen by", code="iss_changed")


def _optional_iat(payload: Mapping[str, Any], content: Mapping[str, Any]) -> int | None:
    """The root's issuance time (token, else mandate), already type-checked by the time step."""
    for claims in (payload, content):
        value = claims.get("iat")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _delegate(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    items = payload.get(DELEGATE_CLAIM)
    if not isinstance(items, list) or len(items) != 1 or not isinstance(items[0], dict):
        raise VerificationError(
            "the token must disclose exactly one delegate mandate",
            code="bad_delegate_payload",
            expected="1",
            got=str(len(items)) if isinstance(items, list) else type(items).__name__,
        )
    content: Mapping[str, Any] = items[0]
    return content


def _exact_vct(content: Mapping[str, Any], expected: str) -> None:
    got = content.get("vct")
    if got != expected:
        raise VerificationError(
            "unexpected mandate type", code="wrong_vct", expected=expected, got=str(got)[:64] if got else None
        )


def _root_vct(content: Mapping[str, Any], issuer: str, context: _Context) -> None:
    expected = OPEN_VCT[context.kind]
    if content.get("vct") == CLOSED_VCT[context.kind]:
        raise VerificationError(
            "a closed mandate signed at the root (Human Present) is not supported by this verifier",
            code="direct_mandate_unsupported",
            expected=expected,
            got=CLOSED_VCT[context.kind],
        )
    _exact_vct(content, expected)
    if expected not in context.trust_root.accepted_vct_of(issuer):
        raise UntrustedKeyError(
            "the trust root does not accept this mandate type from this issuer",
            code="vct_not_accepted",
            got=expected,
        )


def _int_claim(claims: Mapping[str, Any], name: str) -> int:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"'{name}' must be an integer NumericDate", code="bad_time_claim", got=name)
    return value


def _times(
    context: _Context, payload: Mapping[str, Any], content: Mapping[str, Any], *, require_exp: bool
) -> None:
    """``exp``, ``nbf`` and ``iat`` wherever they appear (token and mandate), with the trust root's leeway."""
    if require_exp and "exp" not in content and "exp" not in payload:
        raise VerificationError("an open mandate must expire (exp)", code="open_mandate_without_exp")
    for claims in (payload, content):
        check_times(claims, now=context.now, leeway=context.leeway, what="mandate")


def check_times(claims: Mapping[str, Any], *, now: float, leeway: float, what: str) -> None:
    """The v0.2 time rule for whichever of ``exp``, ``nbf`` and ``iat`` ``claims`` carries: each an
    integer NumericDate (``bad_time_claim``); valid strictly before ``exp + leeway`` (``expired``),
    not before ``nbf - leeway`` (``not_yet_valid``), not issued after ``now + leeway``
    (``iat_in_future``).  ``what`` names the object in the messages ("mandate", "receipt")."""
    if "exp" in claims and now >= _int_claim(claims, "exp") + leeway:
        raise ExpiredError(f"{what} expired", code="expired", got=str(claims["exp"]))
    if "nbf" in claims and now + leeway < _int_claim(claims, "nbf"):
        raise VerificationError(f"{what} not yet valid", code="not_yet_valid", got=str(claims["nbf"]))
    if "iat" in claims and now + leeway < _int_claim(claims, "iat"):
        raise VerificationError(f"{what} issued in the future", code="iat_in_future", got=str(claims["iat"]))


def _binding(payload: Mapping[str, Any], previous: VerifiedToken) -> None:
    has_sd_hash = "sd_hash" in payload
    has_jwt_hash = "issuer_jwt_hash" in payload
    if has_sd_hash == has_jwt_hash:
        raise VerificationError(
            "a hop carries exactly one of sd_hash and issuer_jwt_hash",
            code="binding_claims",
            expected="exactly one",
        )
    name = "sd_hash" if has_sd_hash else "issuer_jwt_hash"
    # The previous token's sd_hash was computed when it was admitted; a token may be 256 KB.
    expected = previous.sd_hash if has_sd_hash else sd_digest(previous.parsed.issuer_jwt)
    got = payload[name]
    if not isinstance(got, str) or not hmac.compare_digest(
        got.encode("ascii", "replace"), expected.encode("ascii")
    ):
        raise VerificationError(
            f"{name} does not match the previous token",
            code=f"{name}_mismatch",
            expected=expected,
            got=str(got)[:90],
        )


def _expected_claim(payload: Mapping[str, Any], name: str, expected: str | None) -> None:
    value = payload.get(name)
    if not isinstance(value, str) or not value:
        raise VerificationError(f"the hop carries no '{name}'", code=f"{name}_missing")
    if expected is None:
        raise VerificationError(
            f"the verifier gave no expected '{name}' for this hop",
            code="no_expectation",
            got=_shown(name, value),
        )
    if not hmac.compare_digest(
        value.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    ):
        raise VerificationError(
            f"the hop's '{name}' is not the expected one",
            code=f"wrong_{name}",
            expected=_shown(name, expected),
            got=_shown(name, value),
        )


def _shown(name: str, value: str) -> str:
    # A nonce is a capability: reports show a label of it, never the value.
    return fingerprint(value) if name == "nonce" else value[:200]


def _hop_iat(payload: Mapping[str, Any], context: _Context) -> int:
    if "iat" not in payload:
        raise VerificationError("the hop carries no 'iat'", code="iat_missing")
    iat = _int_claim(payload, "iat")
    if context.now + context.leeway < iat:
        raise VerificationError("hop issued in the future", code="iat_in_future", got=str(iat))
    max_age = float(context.trust_root.max_age_seconds.key_binding)
    if context.now - iat > max_age + context.leeway:
        raise ExpiredError(
            "hop older than the trust root's key-binding maximum age",
            code="hop_too_old",
            expected=f"<= {max_age:g} s",
            got=f"{context.now - iat:g} s",
        )
    return iat


def _next_key(mandate: BaseModel, index: int) -> TrustedKey:
    cnf = getattr(mandate, "cnf", None)
    if not isinstance(cnf, Cnf):
        raise VerificationError("an open mandate names no next key (cnf)", code="cnf_missing")
    jwk = cnf.jwk
    public = PublicKey.from_jwk({"kty": jwk.kty, "crv": jwk.crv, "x": jwk.x, "y": jwk.y})
    return TrustedKey(key=public, algorithms=HOP_ALGORITHMS, kid=None, owner=f"delegate {index + 1}")


def _hop_cnf(mandate: BaseModel, content: Mapping[str, Any], index: int, terminal: bool) -> TrustedKey | None:
    if terminal:
        if "cnf" in content:
            raise VerificationError("a terminal hop must not carry cnf", code="terminal_cnf")
        return None
    return _next_key(mandate, index)
