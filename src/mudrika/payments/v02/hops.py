"""Verification of each token of a delegate SD-JWT chain: the root SD-JWT, then every KB-SD-JWT hop.

Why every token is evaluated, with dependencies between checks rather than a stop at the first
failure: a hop's signing key *is* the previous token's ``cnf.jwk`` (draft-gco-oauth-delegate-sd-jwt-00
§5.1.4, as AP2 v0.2 uses it), so a hop is *anchored* only when the token before it verified under an
anchored key -- but a dispute analyst must still see whether the hop's signature, ``sd_hash``,
``aud`` and ``nonce`` hold when the root's did not (docs/ap2-v02.md, "What a failed check hides").
A failed check skips only the checks that need its result; the token record says how far it
verified (``verified``, ``signed``) and how anchored its key is (``anchoring``).  Each step below is
one named check, in the order of RFC 9901 §7.1 (issuer-signed JWT, then Disclosures, then validity)
followed by the delegation checks the official SDK leaves to its callers (see docs/ap2-v02.md "SDK
gaps"):

Root (``<prefix>.hop0.*``): ``typ`` · ``iss`` (the token's, or the verifier's ``root_issuer``; a
trusted issuer of the trust root) ·
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

from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import TrustedKey, header_kid, parse_unverified_header, verify_compact
from mudrika.crypto.keys import PublicKey
from mudrika.crypto.sdjwt import (
    ParsedSdJwt,
    VerifiedIssuerJwt,
    process_disclosures,
    process_unverified_disclosures,
)
from mudrika.errors import ExpiredError, InvalidInput, MudrikaError, UntrustedKeyError, VerificationError
from mudrika.payments.report import Anchoring, Recorder, StepFailed, fingerprint
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
#: ``status`` (a Token Status List entry) is judged as of the purchase by the verifier's own stage.
_ROOT_CLAIMS: Final = frozenset(
    {DELEGATE_CLAIM, "_sd_alg", "iss", "sub", "iat", "nbf", "exp", "jti", "status"}
)
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
    """One evaluated token: what it says, the key it was checked with, and how far it verified.

    Every token of a chain that could be split is evaluated, also when a check failed: a report must
    show every check that does not depend on the failed one.  ``verified`` says whether all of this
    token's checks passed; ``signed`` whether its signature and disclosures verified (so the values
    it discloses, ``cnf`` included, are those its key signed); ``anchoring`` whether that key is
    vouched for by the trust root (the root) or was named by a signed, anchored token (a hop).
    ``payload``, ``content`` and ``mandate`` are ``None`` when they could not be read.
    """

    index: int
    role: TokenRole
    header: Mapping[str, Any] | None
    payload: Mapping[str, Any] | None = field(repr=False)
    content: Mapping[str, Any] | None = field(repr=False)
    """The disclosed delegate mandate as received (raw JSON, not re-serialised)."""
    mandate: BaseModel | None = field(repr=False)
    key: str | None
    """Which key it was checked with: the trust root's ``kid`` for the root, ``jkt:<thumbprint>`` for
    hops; ``None`` when there was none to check with."""
    party: str
    thumbprint: str | None
    """RFC 7638 thumbprint of that key."""
    provenance: str
    """Where that key came from (the trust root, or the previous token's ``cnf``)."""
    anchoring: Anchoring
    verified: bool
    signed: bool
    sd_hash: str
    """base64url(SHA-256) of this token's SD-JWT form as presented (``<jwt>~<disclosures>~``)."""
    iat: int | None
    next_key: TrustedKey | None = field(repr=False)
    parsed: ParsedSdJwt = field(repr=False)
    issuer_source: Literal["token", "verifier"] | None = None
    """The root only: whether its issuer came from its own ``iss`` or from the verifier's
    ``root_issuer`` (a root without ``iss``)."""

    @property
    def next_anchoring(self) -> Anchoring:
        """How anchored the ``cnf`` key this token names is: only as anchored as this token's key,
        and only when this token's signature covered it."""
        if self.next_key is None:
            return "not evaluated"
        return "anchored" if self.anchoring == "anchored" and self.signed else "unanchored"


@dataclass(slots=True)
class _Context:
    kind: MandateKind
    trust_root: TrustRoot
    now: float
    leeway: float
    prefix: str
    recorder: Recorder
    root_issuer: str | None


def verify_tokens(
    chain: ParsedChain,
    *,
    kind: MandateKind,
    trust_root: TrustRoot,
    hops: Sequence[HopExpectation],
    now: float,
    recorder: Recorder,
    prefix: str,
    root_issuer: str | None = None,
) -> tuple[VerifiedToken, ...]:
    """Evaluate every token of the chain, recording every check; a failed check skips only the
    checks that depend on it (within a token, and the next hop's signature when no ``cnf`` key was
    read).  ``root_issuer`` is the issuer the verifier expects of the root (see :func:`_issuer_of`).

    A building block of :func:`~mudrika.payments.v02.verify_v02`, which also judges the root issuer
    key's pinned window (``v02.<chain>.root_key_window``); this alone judges no window."""
    context = _Context(kind, trust_root, now, float(trust_root.leeway_seconds), prefix, recorder, root_issuer)
    tokens: list[VerifiedToken] = []
    last = len(chain.tokens) - 1
    for index, parsed in enumerate(chain.tokens):
        if index == 0:
            tokens.append(_root(parsed, context))
        else:
            expectation = hops[index - 1] if index - 1 < len(hops) else None
            tokens.append(_hop(parsed, index, tokens[-1], expectation, index == last, context))
    return tuple(tokens)


# -- the steps -------------------------------------------------------------------------------------


class _Steps:
    """Runs one token's named checks, each only when the checks (or facts) it needs passed.

    A check whose prerequisite did not pass is recorded as skipped, naming the prerequisite; every
    other check runs.  ``ok`` holds each name's outcome, so a token's result says how far it got.
    """

    __slots__ = ("context", "index", "ok", "party", "why")

    def __init__(self, context: _Context, index: int, party: str) -> None:
        self.context = context
        self.index = index
        self.party = party
        self.ok: dict[str, bool] = {}
        self.why: dict[str, str] = {}

    def fact(self, name: str, holds: bool, why: str) -> None:
        """A prerequisite that is not itself a check (a readable header, a key to verify with)."""
        self.ok[name] = holds
        self.why[name] = why

    def run(self, name: str, step: Callable[[], Any], *, needs: Sequence[str] = ()) -> Any:
        check_id = f"{self.context.prefix}.hop{self.index}.{name}"
        blocked = next((need for need in needs if not self.ok.get(need, False)), None)
        if blocked is not None:
            self.ok[name] = False
            self.context.recorder.skip_each(
                (check_id,), self.party, detail=self.why.get(blocked, f"not run: {blocked} did not pass")
            )
            return None
        try:
            value = self.context.recorder.run_or_stop(check_id, self.party, step)
        except StepFailed:
            self.ok[name] = False
            self.why[name] = f"not run: {name} did not pass"
            return None
        self.ok[name] = True
        return value

    def passed(self, name: str) -> bool:
        return self.ok.get(name, False)

    @property
    def verified(self) -> bool:
        """Every check of the token ran and passed (facts included: a missing key is not verified)."""
        return all(self.ok.values())


def _header_or_none(parsed: ParsedSdJwt) -> Mapping[str, Any] | None:
    """The unverified header, or ``None`` when it cannot be read (the ``typ`` check says why)."""
    try:
        return parse_unverified_header(parsed.issuer_jwt)
    except MudrikaError:
        return None


def _payload_or_none(parsed: ParsedSdJwt) -> Mapping[str, Any] | None:
    try:
        return _unverified_payload(parsed)
    except MudrikaError:
        return None


def _disclosed(
    steps: _Steps,
    parsed: ParsedSdJwt,
    signed: tuple[Mapping[str, Any], Mapping[str, Any]] | None,
    key: TrustedKey | None,
) -> Mapping[str, Any] | None:
    """The ``sd_alg`` and ``disclosures`` steps, alike for the root and every hop: the processed
    payload -- of the verified payload when the signature held, else of what the token says."""
    payload = signed[1] if signed is not None else _payload_or_none(parsed)
    steps.fact("payload", payload is not None, "not run: the token's payload could not be read")
    if payload is None:
        steps.run("sd_alg", lambda: None, needs=("payload",))
        steps.run("disclosures", lambda: None, needs=("payload",))
        return None
    sd_alg = steps.run("sd_alg", lambda: _sd_alg(payload), needs=("payload",))

    def process() -> Mapping[str, Any]:
        if signed is not None and key is not None:
            verified = VerifiedIssuerJwt(header=signed[0], payload=payload, key=key, sd_alg=sd_alg)
            return process_disclosures(verified, parsed, limits=CHAIN_LIMITS).payload
        return process_unverified_disclosures(payload, parsed, limits=CHAIN_LIMITS).payload

    processed: Mapping[str, Any] | None = steps.run("disclosures", process, needs=("sd_alg",))
    return processed


def _issuer_of(
    parsed: ParsedSdJwt, expected: str | None
) -> tuple[str | None, Literal["token", "verifier"] | None]:
    """Who the root's key is looked up under: the verifier's ``expected`` issuer when it names one
    (the analyst's word, never the token's), else the token's own ``iss``; ``(None, None)`` when
    neither names one.  Never a guess over the pinned keys."""
    if expected is not None:
        return expected, "verifier"
    payload = _payload_or_none(parsed)
    iss = payload.get("iss") if payload is not None else None
    if isinstance(iss, str) and iss:
        return iss, "token"
    return None, None


def _root(parsed: ParsedSdJwt, context: _Context) -> VerifiedToken:
    issuer, source = _issuer_of(parsed, context.root_issuer)
    party = issuer or "root issuer"
    steps = _Steps(context, 0, party)
    header = _header_or_none(parsed)
    steps.fact("header", header is not None, "not run: the token's header could not be read")
    steps.run("typ", lambda: _check_typ(parsed, ROOT_TYPS))
    steps.run("iss", lambda: _root_issuer(parsed, context.trust_root, context.root_issuer))
    root_key: _RootKey | None = steps.run(
        "key", lambda: _root_key(header or {}, issuer, parsed, context.trust_root), needs=("header",)
    )
    key = root_key.key if root_key is not None else None
    signed = (
        steps.run(
            "signature", lambda: _signature(parsed, root_key.key, root_key.validated_headers), needs=("key",)
        )
        if root_key is not None
        else steps.run("signature", lambda: None, needs=("key",))
    )
    payload = _disclosed(steps, parsed, signed, key)
    content: Mapping[str, Any] | None = None
    mandate: BaseModel | None = None
    next_key: TrustedKey | None = None
    if payload is not None:
        steps.run("claims", lambda: _root_claims(payload, issuer, source), needs=("disclosures",))
        content = steps.run("delegate", lambda: _delegate(payload), needs=("disclosures",))
    else:
        steps.run("claims", lambda: None, needs=("disclosures",))
        steps.run("delegate", lambda: None, needs=("disclosures",))
    if content is not None:
        body = content
        steps.run("vct", lambda: _root_vct(body, issuer, context), needs=("delegate",))
        mandate = steps.run(
            "schema",
            lambda: parse_model(_MODELS[(context.kind, True)], body, what="open mandate"),
            needs=("delegate",),
        )
        steps.run("time", lambda: _times(context, payload or {}, body, require_exp=True), needs=("delegate",))
    else:
        for name in ("vct", "schema", "time"):
            steps.run(name, lambda: None, needs=("delegate",))
    if mandate is not None:
        opened = mandate
        next_key = steps.run("cnf", lambda: _next_key(opened, 0), needs=("schema",))
    else:
        steps.run("cnf", lambda: None, needs=("schema",))
    anchored = steps.passed("key")
    provenance = (
        root_key.provenance
        if root_key is not None
        else "not found: the trust root vouches for no key of this root"
    )
    return VerifiedToken(
        index=0,
        role="root",
        header=header,
        payload=payload,
        content=content,
        mandate=mandate,
        key=root_key.label if root_key is not None else (_kid_shown(header)),
        party=party,
        thumbprint=key.key.thumbprint() if key is not None else None,
        provenance=provenance,
        anchoring="anchored" if anchored else "unanchored",
        verified=steps.verified,
        signed=steps.passed("signature") and steps.passed("disclosures"),
        sd_hash=sd_digest(parsed.sd_jwt),
        iat=_optional_iat(payload, content) if payload is not None and content is not None else None,
        next_key=next_key,
        parsed=parsed,
        issuer_source=source,
    )


def _kid_shown(header: Mapping[str, Any] | None) -> str | None:
    kid = header.get("kid") if header is not None else None
    return kid[:200] if isinstance(kid, str) else None


def _hop(
    parsed: ParsedSdJwt,
    index: int,
    previous: VerifiedToken,
    expectation: HopExpectation | None,
    terminal: bool,
    context: _Context,
) -> VerifiedToken:
    key = previous.next_key
    key_label = "jkt:" + key.key.thumbprint() if key is not None else None
    party = f"delegate {index} ({key_label[:20]})" if key_label is not None else f"delegate {index}"
    steps = _Steps(context, index, party)
    steps.fact("key", key is not None, f"not run: token {index - 1} names no usable cnf key")
    header = _header_or_none(parsed)
    steps.run("typ", lambda: _check_typ(parsed, {TERMINAL_TYP} if terminal else {INTERMEDIATE_TYP}))
    signed = (
        steps.run("signature", lambda: _signature(parsed, key), needs=("key",))
        if key is not None
        else steps.run("signature", lambda: None, needs=("key",))
    )
    payload = _disclosed(steps, parsed, signed, key)
    content: Mapping[str, Any] | None = None
    mandate: BaseModel | None = None
    next_key: TrustedKey | None = None
    iat: int | None = None
    if payload is not None:
        claims = payload
        steps.run("claims", lambda: _known_claims(claims, _HOP_CLAIMS), needs=("disclosures",))
        steps.run("binding", lambda: _binding(claims, previous), needs=("disclosures",))
        audience = None if expectation is None else expectation.audience
        nonce = None if expectation is None else expectation.nonce
        steps.run("aud", lambda: _expected_claim(claims, "aud", audience), needs=("disclosures",))
        steps.run("nonce", lambda: _expected_claim(claims, "nonce", nonce), needs=("disclosures",))
        iat = steps.run("iat", lambda: _hop_iat(claims, context), needs=("disclosures",))
        content = steps.run("delegate", lambda: _delegate(claims), needs=("disclosures",))
    else:
        for name in ("claims", "binding", "aud", "nonce", "iat", "delegate"):
            steps.run(name, lambda: None, needs=("disclosures",))
    if content is not None:
        body = content
        vct = OPEN_VCT[context.kind] if not terminal else CLOSED_VCT[context.kind]
        steps.run("vct", lambda: _exact_vct(body, vct), needs=("delegate",))
        mandate = steps.run(
            "schema",
            lambda: parse_model(
                _MODELS[(context.kind, not terminal)],
                body,
                what="closed mandate" if terminal else "open mandate",
            ),
            needs=("delegate",),
        )
        steps.run(
            "time", lambda: _times(context, payload or {}, body, require_exp=False), needs=("delegate",)
        )
    else:
        for name in ("vct", "schema", "time"):
            steps.run(name, lambda: None, needs=("delegate",))
    if mandate is not None and content is not None:
        opened, body = mandate, content
        next_key = steps.run("cnf", lambda: _hop_cnf(opened, body, index, terminal), needs=("schema",))
    else:
        steps.run("cnf", lambda: None, needs=("schema",))
    anchoring = previous.next_anchoring if key is not None else "not evaluated"
    if key is None:
        provenance = f"none: token {index - 1} names no usable cnf key"
    elif anchoring == "anchored":
        provenance = f"cnf.jwk of token {index - 1}, signed by {previous.party[:120]}"
    else:
        provenance = (
            f"cnf.jwk of token {index - 1}, which did not verify under an anchored key "
            "(what the token says, not what a trusted party signed)"
        )
    return VerifiedToken(
        index=index,
        role="terminal" if terminal else "intermediate",
        header=header,
        payload=payload,
        content=content,
        mandate=mandate,
        key=key_label,
        party=party,
        thumbprint=key.key.thumbprint() if key is not None else None,
        provenance=provenance,
        anchoring=anchoring,
        verified=steps.verified,
        signed=steps.passed("signature") and steps.passed("disclosures"),
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


def _root_issuer(parsed: ParsedSdJwt, trust_root: TrustRoot, expected: str | None) -> str:
    """The ``iss`` check: the issuer the root's key is looked up under is established, and trusted.

    A root names its issuer in ``iss``, or -- as the specification's examples and its SDK's
    ``MandateClient.create`` do, which write none -- the verifier names the issuer it expects
    (``root_issuer``: the analyst's word, from the trust root they own).  When both are present they
    must agree; when neither is, nothing says whose key to look for (``root_iss_missing``).
    """
    # Read before the signature only to pick the key; the verified payload must say the same.
    iss = _unverified_payload(parsed).get("iss")
    if iss is not None and (not isinstance(iss, str) or not iss):
        raise UntrustedKeyError("the root mandate's iss is not a non-empty string", code="root_iss_missing")
    if expected is not None:
        if iss is not None and iss != expected:
            raise UntrustedKeyError(
                "the root mandate names another issuer than the verifier expects",
                code="iss_not_expected",
                expected=expected[:200],
                got=str(iss)[:200],
            )
        named = expected
    elif iss is None:
        raise UntrustedKeyError(
            "the root mandate names no issuer (iss), and the verifier named none (root_issuer)",
            code="root_iss_missing",
        )
    else:
        named = iss
    if not trust_root.trusts_issuer(named):
        raise UntrustedKeyError(
            "the root mandate's issuer is not in the trust root", code="untrusted_issuer", got=named[:200]
        )
    return named


@dataclass(frozen=True, slots=True)
class _RootKey:
    key: TrustedKey
    label: str
    provenance: str
    validated_headers: tuple[str, ...] = ()


def _root_key(
    header: Mapping[str, Any], issuer: str | None, parsed: ParsedSdJwt, trust_root: TrustRoot
) -> _RootKey:
    if issuer is None:
        # Never guessed by trying every pinned key: a key that verifies proves nothing about whose it is.
        raise UntrustedKeyError(
            "no issuer to look the root's key up under: the root names no iss and the verifier "
            "named no root_issuer",
            code="root_issuer_unknown",
        )
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
    parsed: ParsedSdJwt, key: TrustedKey | None, validated_headers: tuple[str, ...] = ()
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    if key is None:
        raise UntrustedKeyError("there is no key to verify this token with", code="no_key")
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


def _root_claims(
    payload: Mapping[str, Any], issuer: str | None, source: Literal["token", "verifier"] | None
) -> None:
    _known_claims(payload, _ROOT_CLAIMS)
    # The key was chosen by the iss read before the signature check; the signed one must agree.  A
    # root without iss, judged under the verifier's issuer, has nothing here to disagree with.
    if source == "token" and payload.get("iss") != issuer:
        raise VerificationError("the signed iss is not the one the key was chosen by", code="iss_changed")
    if source == "verifier" and "iss" in payload and payload.get("iss") != issuer:
        raise VerificationError("the signed iss is not the issuer the verifier expects", code="iss_changed")


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


def _root_vct(content: Mapping[str, Any], issuer: str | None, context: _Context) -> None:
    expected = OPEN_VCT[context.kind]
    if content.get("vct") == CLOSED_VCT[context.kind]:
        raise VerificationError(
            "a closed mandate signed at the root (Human Present) is not supported by this verifier",
            code="direct_mandate_unsupported",
            expected=expected,
            got=CLOSED_VCT[context.kind],
        )
    _exact_vct(content, expected)
    if issuer is None or expected not in context.trust_root.accepted_vct_of(issuer):
        # With no issuer established, nobody accepts the type: fail rather than pass unjudged.
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
