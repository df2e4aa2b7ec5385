"""SD-JWT (RFC 9901): issuance, presentation with Key Binding, and verification that is hard to misuse.

Why this module looks the way it does:

* The Verifier's expectations are required keyword arguments.  ``require_key_binding=True`` without an
  ``expected_aud`` and an ``expected_nonce`` is a usage error, and a KB-JWT that *is* present is always
  checked in full — the reference libraries skip it when no nonce is passed (see docs/sd-jwt.md).
* §7.1 is followed to the letter, including the parts the reference libraries leave out: a Disclosure
  no digest references is rejected (``unreferenced_disclosure``), a digest may appear only once, a
  disclosed claim may not clash with a plain one, and array/object Disclosure shapes must match where
  their digest sits.
* Each verification step is a public function (:func:`parse`, :func:`verify_issuer_jwt`,
  :func:`process_disclosures`, :func:`check_validity`, :func:`holder_key_from_cnf`,
  :func:`verify_key_binding`) so a chain verifier can report them as separately named checks
  (:func:`read_issuer_payload` lets one that must read ``iss`` first parse the payload only once);
  :func:`verify` runs them in §7.3 order.  Each step takes the previous step's *verified* result, so
  Disclosures cannot be processed against a payload whose signature was never checked.
* Signing and signature checks go through :mod:`mudrika.crypto.jose` (algorithm allow-list bound to the
  key; ``jku``/``x5u``/``jwk`` never followed).  Only ``sha-256`` is issued or accepted as ``_sd_alg``.
* Sizes are capped (:class:`SdJwtLimits`) before anything is decoded.  No repr shows a token, a salt or
  a claim value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.compact import compact_text
from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import KeyResolver, TrustedKey, check_jwt_claims, sign_jwt, verify_compact
from mudrika.crypto.keys import ALL_ALGORITHMS, KeyPair, PublicKey
from mudrika.crypto.sdjwt._disclosure import (
    SD_ALG,
    Disclosure,
    SaltSource,
    decode_disclosures,
    digest_of,
    random_salt,
)
from mudrika.crypto.sdjwt._issue import pack_claims
from mudrika.crypto.sdjwt._kb import KeyBinding, check_kb_jwt, make_kb_jwt
from mudrika.crypto.sdjwt._process import SD_ALG_CLAIM, ProcessedPayload, process
from mudrika.crypto.statuslist import StatusReference
from mudrika.errors import InvalidInput, VerificationError

#: SD-JWT VC media type (``application/dc+sd-jwt``) as the JOSE ``typ`` (RFC 9901 §9.11).
DEFAULT_TYP: Final = "dc+sd-jwt"
_MAX_LEEWAY: Final = 300.0
_MAX_KB_AGE: Final = 86400.0
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
_COMPACT_ALPHABET: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"


@dataclass(frozen=True, slots=True)
class SdJwtLimits:
    """Size caps applied before decoding: whole presentation, Disclosure count and size, nesting."""

    max_bytes: int = 64 * 1024
    max_disclosures: int = 128
    max_disclosure_bytes: int = 8 * 1024
    max_depth: int = 32

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_disclosures", "max_disclosure_bytes", "max_depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InvalidInput("limits must be positive integers", code="bad_limits", limit=name)


DEFAULT_LIMITS: Final = SdJwtLimits()


# -- data ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SdJwt:
    """An issued SD-JWT as the Holder keeps it: the Issuer-signed JWT, its payload, all Disclosures."""

    issuer_jwt: str = field(repr=False)
    payload: Mapping[str, Any] = field(repr=False)
    disclosures: tuple[Disclosure, ...]

    def compact(self) -> str:
        """``<Issuer-signed JWT>~<Disclosure 1>~...~<Disclosure N>~`` (§4)."""
        return "".join([self.issuer_jwt, "~", *(d.encoded + "~" for d in self.disclosures)])

    @property
    def disclosable_paths(self) -> tuple[str, ...]:
        return tuple(d.path for d in self.disclosures)

    @classmethod
    def from_compact(cls, text: str, *, limits: SdJwtLimits = DEFAULT_LIMITS) -> SdJwt:
        """Read an issued SD-JWT *structurally* (Holder side).  The Issuer's signature is NOT checked
        here: call :func:`verify` with ``require_key_binding=False`` first (§7.2 step 1)."""
        parsed = parse(text, limits=limits)
        if parsed.kb_jwt is not None:
            # §7.2: a Holder receiving an SD-JWT+KB MUST reject it.
            raise InvalidInput(
                "an issued SD-JWT must not carry a key binding JWT", code="unexpected_key_binding"
            )
        encoded_payload = parsed.issuer_jwt.split(".")[1]
        payload = loads_strict(
            b64url_decode(encoded_payload, max_len=limits.max_bytes),
            max_bytes=limits.max_bytes,
            max_depth=limits.max_depth,
        )
        if not isinstance(payload, dict):
            raise InvalidInput("SD-JWT payload is not a JSON object", code="malformed_jwt")
        _check_sd_alg(payload)
        processed = _process(payload, parsed, limits)
        return cls(issuer_jwt=parsed.issuer_jwt, payload=payload, disclosures=processed.disclosures)


@dataclass(frozen=True, slots=True)
class ParsedSdJwt:
    """§4 compact serialisation split into its parts; nothing is verified yet."""

    issuer_jwt: str = field(repr=False)
    disclosures: tuple[str, ...] = field(repr=False)
    kb_jwt: str | None = field(repr=False)
    #: ``<Issuer-signed JWT>~<D1>~...~<DN>~``: the exact ASCII the KB-JWT's ``sd_hash`` covers (§4.3.1).
    sd_jwt: str = field(repr=False)

    @property
    def disclosure_count(self) -> int:
        return len(self.disclosures)

    @property
    def has_key_binding(self) -> bool:
        return self.kb_jwt is not None


@dataclass(frozen=True, slots=True)
class VerifiedIssuerJwt:
    """The Issuer-signed JWT after §7.1 step 2: header, signed payload (digests still in it), key."""

    header: Mapping[str, Any]
    payload: Mapping[str, Any] = field(repr=False)
    key: TrustedKey
    sd_alg: str


@dataclass(frozen=True, slots=True)
class VerifiedSdJwt:
    """What :func:`verify` vouches for.

    ``payload`` is the Processed SD-JWT Payload (§7.1: disclosed claims re-inserted, ``_sd``,
    ``_sd_alg`` and undisclosed array elements removed).  ``holder_key``, ``kb_header`` and
    ``kb_claims`` are set only when a KB-JWT was verified (``key_bound``).  ``sd_hash`` is always the
    recomputed hash of the presented SD-JWT (§4.3.1).
    """

    payload: Mapping[str, Any] = field(repr=False)
    processed: ProcessedPayload = field(repr=False)
    """The Processed SD-JWT Payload with its Disclosures (:attr:`disclosures` is built from it)."""
    issuer_header: Mapping[str, Any]
    issuer_payload: Mapping[str, Any] = field(repr=False)
    issuer_key: TrustedKey
    holder_key: PublicKey | None
    kb_header: Mapping[str, Any] | None
    kb_claims: Mapping[str, Any] | None = field(repr=False)
    sd_hash: str
    key_bound: bool
    parsed: ParsedSdJwt = field(repr=False)

    @property
    def disclosures(self) -> tuple[Disclosure, ...]:
        """The Disclosures presented, each with its path and parent (built on first use)."""
        return self.processed.disclosures


# -- issuance (§4, §5) -------------------------------------------------------------------------------


def issue(
    claims: Mapping[str, Any],
    *,
    issuer_key: KeyPair,
    kid: str | None,
    disclosable: Collection[str],
    holder_key: PublicKey | None,
    typ: str = DEFAULT_TYP,
    sd_alg: str = SD_ALG,
    decoys: int = 0,
    salt: SaltSource | None = None,
    alg: str | None = None,
    limits: SdJwtLimits = DEFAULT_LIMITS,
    status: StatusReference | None = None,
) -> SdJwt:
    """Issue an SD-JWT over ``claims``.

    ``disclosable`` lists RFC 6901 JSON Pointers into ``claims`` (``/given_name``,
    ``/address/street_address``, ``/nationalities/1``); listing a path and one of its ancestors gives a
    recursive disclosure (§4.2.6).  ``iss``, ``aud``, ``exp``, ``nbf``, ``cnf``, ``vct`` and ``status``
    are never disclosable (§9.7).  ``holder_key`` becomes ``cnf: {"jwk": ...}`` (§4.1.2).  ``decoys``
    decoy digests go into every ``_sd`` array and the top level (§4.2.5).  ``salt`` replaces the
    128-bit CSPRNG salt source (tests only).  The result must fit ``limits``: we never issue what
    our own verifier would refuse.  ``status`` adds the Token Status List claim
    ``status: {status_list: {idx, uri}}`` (draft-ietf-oauth-status-list-20 §6.2), always in plain
    view: a verifier must find it without any Disclosure.
    """
    if sd_alg != SD_ALG:
        raise InvalidInput("only sha-256 is supported for _sd_alg", code="unsupported_sd_alg")
    if not isinstance(typ, str) or not typ:
        raise InvalidInput("typ must be a non-empty string", code="bad_typ")
    if holder_key is not None and "cnf" in claims:
        raise InvalidInput("claims already carry 'cnf' and a holder key was given", code="cnf_conflict")
    if status is not None:
        if "status" in claims:
            raise InvalidInput("claims already carry 'status' and a status was given", code="status_conflict")
        claims = {**claims, "status": status.to_claim()}
    packed = pack_claims(claims, disclosable, decoys=decoys, salt=salt or random_salt)
    payload = dict(packed.payload)
    payload[SD_ALG_CLAIM] = SD_ALG  # §4.1.1
    if holder_key is not None:
        payload["cnf"] = {"jwk": holder_key.to_jwk()}  # §4.1.2, RFC 7800 §3.2
    issuer_jwt = sign_jwt(payload, issuer_key, alg=alg, kid=kid, typ=typ)
    # Index our own output with the verifier's parser and processing (so paths mean the same on both
    # sides, and the size caps hold).
    parsed = parse("".join([issuer_jwt, "~", *(d + "~" for d in packed.disclosures)]), limits=limits)
    processed = _process(payload, parsed, limits)
    return SdJwt(issuer_jwt=issuer_jwt, payload=payload, disclosures=processed.disclosures)


# -- presentation (§4.3, §7.2) -----------------------------------------------------------------------


def present(
    sd_jwt: SdJwt,
    *,
    disclose: Collection[str],
    holder_key: KeyPair | None,
    aud: str | None,
    nonce: str | None,
    iat: int | None,
    extra_kb_claims: Mapping[str, Any] | None = None,
    kb_alg: str | None = None,
) -> str:
    """Build ``<issuer-jwt>~<d1>~...~<kb-jwt>`` (or ``...~`` without ``holder_key``).

    ``disclose`` lists paths from :attr:`SdJwt.disclosable_paths`; the Disclosures of their disclosable
    ancestors are added too (§7.2 step 2: every Disclosure must connect to the Issuer-signed JWT).
    With ``holder_key``, ``aud``, ``nonce`` and ``iat`` are required and ``holder_key`` must be the key in
    ``cnf.jwk``; without it, all three must be ``None``.
    """
    if isinstance(disclose, str):
        raise InvalidInput("disclose must be a collection of paths, not one string", code="bad_path")
    by_path = {d.path: d for d in sd_jwt.disclosures}
    by_digest = {d.digest: d for d in sd_jwt.disclosures}
    chosen: set[str] = set()
    for path in disclose:
        item = by_path.get(path)
        if item is None:
            raise InvalidInput(
                "path is not selectively disclosable", code="not_disclosable", path=str(path)[:64]
            )
        while item is not None and item.digest not in chosen:
            chosen.add(item.digest)
            item = by_digest.get(item.parent) if item.parent is not None else None
    selected = [d.encoded for d in sd_jwt.disclosures if d.digest in chosen]
    # §4: <Issuer-signed JWT>~<Disclosure 1>~...~<Disclosure N>~
    presented = "".join([sd_jwt.issuer_jwt, "~", *(d + "~" for d in selected)])
    if holder_key is None:
        if aud is not None or nonce is not None or iat is not None or extra_kb_claims:
            raise InvalidInput("key binding claims given without a holder key", code="kb_claims_without_key")
        return presented
    try:
        bound = holder_key_from_cnf(sd_jwt.payload)
    except VerificationError:
        raise InvalidInput("the SD-JWT has no cnf.jwk to bind to", code="no_holder_key") from None
    if bound.key != holder_key.public_key:
        raise InvalidInput("holder key is not the key in cnf.jwk", code="holder_key_mismatch")
    # make_kb_jwt refuses a missing aud, nonce or iat (missing_kb_claim, naming which).
    kb_jwt = make_kb_jwt(
        presented,
        holder_key=holder_key,
        aud=aud,
        nonce=nonce,
        iat=iat,
        extra_claims=extra_kb_claims,
        alg=kb_alg,
    )
    return presented + kb_jwt


# -- verification steps (§7.1, §7.3) ---------------------------------------------------------------


def parse(presentation: str | bytes, *, limits: SdJwtLimits = DEFAULT_LIMITS) -> ParsedSdJwt:
    """§7.1 step 1 / §7.3 step 3: split a compact SD-JWT or SD-JWT+KB, with size caps (§4 ABNF)."""
    text = compact_text(
        presentation, name="presentation", malformed_code="malformed_sd_jwt", max_bytes=limits.max_bytes
    )
    parts = text.split("~")
    if len(parts) < 2:
        raise InvalidInput("not an SD-JWT (no '~' separator)", code="malformed_sd_jwt")
    issuer_jwt, disclosures, last = parts[0], parts[1:-1], parts[-1]
    if len(disclosures) > limits.max_disclosures:
        raise InvalidInput("too many disclosures", code="too_many_disclosures", limit=limits.max_disclosures)
    # One C pass over the whole text: when every character is base64url, '.' or '~', a segment is
    # base64url exactly when it is non-empty and holds no '.', so the per-segment regular expression
    # (the same verdicts, in the same order) is needed only for text that fails this pass.
    plain = text.isascii() and not text.encode("ascii").translate(None, _COMPACT_ALPHABET)
    _check_jwt_shape(issuer_jwt, plain)
    # <Issuer-signed JWT>~<D1>~...~<DN>~ is the text up to the KB-JWT (``last``, possibly empty).
    sd_end = len(text) - len(last)
    limit = limits.max_disclosure_bytes
    # The per-Disclosure checks below in three C passes when the text is plain: no Disclosure is
    # empty, none is over the limit, and no '.' sits between the first and the last '~'.  Anything
    # else takes the loop, which raises the same error, for the same Disclosure, as it always did.
    if not (
        plain
        and "" not in disclosures
        and (not disclosures or max(map(len, disclosures)) <= limit)
        and text.find(".", len(issuer_jwt) + 1, sd_end - 1) == -1
    ):
        for item in disclosures:
            if len(item) > limit:
                raise InvalidInput("disclosure too large", code="disclosure_too_large", limit=limit)
            if not _is_segment(item, plain):
                # ABNF: DISCLOSURE = BASE64URL (one or more characters): '~~' is malformed.
                raise InvalidInput("malformed disclosure", code="malformed_sd_jwt")
    kb_jwt: str | None = None
    if last:
        _check_jwt_shape(last, plain)
        kb_jwt = last
    return ParsedSdJwt(
        issuer_jwt=issuer_jwt, disclosures=tuple(disclosures), kb_jwt=kb_jwt, sd_jwt=text[:sd_end]
    )


def _is_segment(piece: str, plain: bool) -> bool:
    """``piece`` is one or more base64url characters; ``plain``: the text it came from holds only
    base64url characters, '.' and '~' (so non-empty without a '.' is enough)."""
    if plain:
        return bool(piece) and "." not in piece
    return _SEGMENT.fullmatch(piece) is not None


def _check_jwt_shape(token: str, plain: bool) -> None:
    pieces = token.split(".")
    if len(pieces) != 3 or not all(_is_segment(piece, plain) for piece in pieces):
        raise InvalidInput("not a compact JWS", code="malformed_sd_jwt")


def _check_sd_alg(payload: Mapping[str, Any]) -> str:
    # §7.1 step 2.4 / §4.1.1: absent means sha-256; anything else must be understood and secure.
    sd_alg = payload.get(SD_ALG_CLAIM, SD_ALG)
    if sd_alg != SD_ALG:
        raise VerificationError(
            "unsupported _sd_alg", code="unsupported_sd_alg", sd_alg=str(sd_alg)[:32] if sd_alg else None
        )
    return SD_ALG


class UnverifiedIssuerPayload:
    """The Issuer-signed JWT's payload decoded and parsed strictly, *before* its signature is checked.

    Why it exists: a Verifier that trusts several Issuers must read ``iss`` to choose the key (§7.1
    step 2.3) before it can check the signature.  Handed to :func:`verify_issuer_jwt`, the parse is
    reused once the signature over exactly these bytes verified, instead of being done twice.  Until
    then only :attr:`iss` is readable (to choose a key, never to trust) and :attr:`holder_jwk` (to compare
    a key with, never to trust); the repr shows nothing.
    """

    __slots__ = ("_claims", "_issuer_jwt", "_limits")

    def __init__(self, issuer_jwt: str, claims: Any, limits: SdJwtLimits) -> None:
        self._issuer_jwt = issuer_jwt
        self._claims = claims
        self._limits = limits

    @property
    def iss(self) -> str | None:
        """The unverified ``iss`` (``None`` when the payload is not an object or has no string ``iss``)."""
        iss = self._claims.get("iss") if isinstance(self._claims, dict) else None
        return iss if isinstance(iss, str) else None

    @property
    def holder_jwk(self) -> Mapping[str, Any] | None:
        """The unverified ``cnf.jwk`` object, if the payload has one: only for a verifier that will
        *compare* a key with it before the signature is checked, never to trust it."""
        cnf = self._claims.get("cnf") if isinstance(self._claims, dict) else None
        jwk = cnf.get("jwk") if isinstance(cnf, dict) else None
        return jwk if isinstance(jwk, dict) else None

    def __repr__(self) -> str:
        return "UnverifiedIssuerPayload(...)"


def read_issuer_payload(
    parsed: ParsedSdJwt, *, limits: SdJwtLimits = DEFAULT_LIMITS
) -> UnverifiedIssuerPayload:
    """Decode and strictly parse the Issuer-signed JWT's payload without verifying anything.

    The same decoder, parser and limits :func:`verify_issuer_jwt` applies to the verified payload, so
    it raises what that parse would raise (``too_large``, ``bad_base64url``, the parser's codes).
    """
    # parse() checked the shape: three non-empty base64url segments.
    encoded = parsed.issuer_jwt.split(".")[1]
    claims = loads_strict(
        b64url_decode(encoded, max_len=limits.max_bytes),
        max_bytes=limits.max_bytes,
        max_depth=limits.max_depth,
    )
    return UnverifiedIssuerPayload(parsed.issuer_jwt, claims, limits)


def verify_issuer_jwt(
    parsed: ParsedSdJwt,
    *,
    issuer_key: TrustedKey | KeyResolver,
    expected_typ: str | None,
    limits: SdJwtLimits = DEFAULT_LIMITS,
    unverified: UnverifiedIssuerPayload | None = None,
) -> VerifiedIssuerJwt:
    """§7.1 step 2: algorithm allow-list and signature (via jose), ``typ``, and ``_sd_alg``.

    ``issuer_key`` is the Issuer's trusted key or a resolver that picks it from the header (step 2.3:
    the key must belong to the Issuer; :func:`check_validity` then checks ``iss``).  ``unverified``,
    from :func:`read_issuer_payload` of this same Issuer-signed JWT with the same ``limits``, saves
    parsing the payload a second time; any other one is ignored and the payload parsed here.
    """
    # 2.1 (alg allowed for the key; 'none' never is) and 2.2 (signature per RFC 7515 §5.2).
    verified = verify_compact(
        parsed.issuer_jwt, key=issuer_key, expected_typ=expected_typ, max_bytes=limits.max_bytes
    )
    if (
        unverified is not None
        and unverified._issuer_jwt == parsed.issuer_jwt
        and (unverified._limits is limits or unverified._limits == limits)
    ):
        # The very bytes whose signature just verified, parsed by the same parser with the same limits.
        payload = unverified._claims
    else:
        payload = loads_strict(verified.payload, max_bytes=limits.max_bytes, max_depth=limits.max_depth)
    if not isinstance(payload, dict):
        raise InvalidInput("SD-JWT payload is not a JSON object", code="malformed_jwt")
    # 2.4: the hash function must be understood and deemed secure.
    sd_alg = _check_sd_alg(payload)
    return VerifiedIssuerJwt(header=verified.header, payload=payload, key=verified.key, sd_alg=sd_alg)


def _process(payload: Mapping[str, Any], parsed: ParsedSdJwt, limits: SdJwtLimits) -> ProcessedPayload:
    # 3.1: decode each Disclosure and compute its digest over the encoded string (§4.2.3).
    decoded = decode_disclosures(
        parsed.disclosures, max_bytes=limits.max_disclosure_bytes, max_depth=limits.max_depth
    )
    # 3.2-3.6, 4 and 5.
    return process(payload, decoded, max_depth=limits.max_depth)


def process_disclosures(
    issuer_jwt: VerifiedIssuerJwt, parsed: ParsedSdJwt, *, limits: SdJwtLimits = DEFAULT_LIMITS
) -> ProcessedPayload:
    """§7.1 steps 3-5: match Disclosures to digests and build the Processed SD-JWT Payload.

    Rejects (codes): ``malformed_disclosure``, ``duplicate_disclosure``, ``duplicate_digest``,
    ``disclosure_shape_mismatch``, ``reserved_claim_name``, ``claim_name_clash``, ``malformed_sd``,
    ``misplaced_ellipsis``, ``misplaced_sd_alg``, ``too_deep`` and ``unreferenced_disclosure``.
    """
    return _process(issuer_jwt.payload, parsed, limits)


def process_unverified_disclosures(
    payload: Mapping[str, Any], parsed: ParsedSdJwt, *, limits: SdJwtLimits = DEFAULT_LIMITS
) -> ProcessedPayload:
    """§7.1 steps 3-5 over an Issuer-signed JWT payload whose signature did not verify, or could not
    be checked (no trusted key).

    Why it exists: a dispute report must show every check that does not depend on the signature (a
    delegation hop's ``sd_hash``, ``aud`` and ``nonce``; a mandate's amount) beside the signature
    failure, or one bad root hides everything else.  What it returns is what the token *says*,
    never what an issuer vouched for: a caller must not let it pass for :func:`process_disclosures`'
    result.  Same rules and codes as :func:`process_disclosures`.
    """
    return _process(payload, parsed, limits)


def check_validity(
    payload: Mapping[str, Any],
    *,
    issuer: str | Collection[str] | None,
    now: float,
    leeway: float = 0.0,
    required_claims: Collection[str] = ("iat", "exp"),
) -> None:
    """§7.1 step 6 on the *processed* payload (validity claims may have been disclosed): ``iss``,
    ``exp``, ``nbf``, ``iat`` via :func:`mudrika.crypto.jose.check_jwt_claims`."""
    check_jwt_claims(
        payload, issuer=issuer, audience=None, now=now, leeway=leeway, required=tuple(required_claims)
    )


def holder_key_from_cnf(payload: Mapping[str, Any]) -> TrustedKey:
    """§4.1.2 / §7.3 step 5.1: the Holder's key from ``cnf.jwk`` (RFC 7800 §3.2), with the algorithms
    its key type allows (narrowed by the JWK's own ``alg``/``use``/``key_ops``)."""
    if "cnf" not in payload:
        raise VerificationError("the SD-JWT names no holder key (cnf)", code="no_holder_key")
    cnf = payload["cnf"]
    jwk = cnf.get("jwk") if isinstance(cnf, dict) else None
    if not isinstance(jwk, dict):
        raise InvalidInput("cnf must hold a 'jwk' object", code="bad_cnf")
    try:
        return TrustedKey.from_jwk(jwk, algorithms=ALL_ALGORITHMS, owner="holder")
    except InvalidInput as exc:
        raise InvalidInput("cnf.jwk is not a valid public key", code="bad_cnf", reason=exc.code) from None


def verify_key_binding(
    parsed: ParsedSdJwt,
    *,
    holder_key: TrustedKey,
    expected_aud: str,
    expected_nonce: str,
    now: float,
    kb_max_age: float,
    leeway: float = 0.0,
    limits: SdJwtLimits = DEFAULT_LIMITS,
) -> KeyBinding:
    """§7.3 steps 2 and 5: the KB-JWT exists, is ``kb+jwt``, is signed by ``holder_key``, has
    ``aud == expected_aud`` and ``nonce == expected_nonce`` (constant time), ``iat`` within
    ``[now - kb_max_age - leeway, now + leeway]``, and ``sd_hash`` over exactly this presentation."""
    _check_kb_expectations(expected_aud, expected_nonce, kb_max_age, leeway)
    if parsed.kb_jwt is None:
        # §7.3 step 2: Key Binding required, bare SD-JWT presented.
        raise VerificationError("key binding required but no KB-JWT presented", code="kb_missing")
    return check_kb_jwt(
        parsed.kb_jwt,
        sd_jwt=parsed.sd_jwt,
        holder_key=holder_key,
        expected_aud=expected_aud,
        expected_nonce=expected_nonce,
        now=now,
        kb_max_age=kb_max_age,
        leeway=leeway,
        max_bytes=limits.max_bytes,
    )


def _check_kb_expectations(aud: object, nonce: object, kb_max_age: object, leeway: object) -> None:
    if not isinstance(aud, str) or not aud or not isinstance(nonce, str) or not nonce:
        raise InvalidInput(
            "key binding needs a non-empty expected_aud and expected_nonce", code="kb_expectations_missing"
        )
    _check_leeway(leeway)
    if (
        isinstance(kb_max_age, bool)
        or not isinstance(kb_max_age, int | float)
        or not math.isfinite(kb_max_age)
        or not 0 < kb_max_age <= _MAX_KB_AGE
    ):
        raise InvalidInput("kb_max_age must be in (0, 86400] seconds", code="bad_kb_max_age")


def _check_leeway(leeway: object) -> None:
    if isinstance(leeway, bool) or not isinstance(leeway, int | float) or not 0 <= leeway <= _MAX_LEEWAY:
        raise InvalidInput("leeway out of range", code="bad_leeway", limit=_MAX_LEEWAY)


# -- the recipe (§7.3) -----------------------------------------------------------------------------


def verify(
    presentation: str | bytes,
    *,
    issuer_key: TrustedKey | KeyResolver,
    issuer: str | Collection[str] | None,
    now: float,
    require_key_binding: bool,
    expected_aud: str | None,
    expected_nonce: str | None,
    kb_max_age: float,
    leeway: float = 0.0,
    expected_typ: str | None = DEFAULT_TYP,
    required_claims: Collection[str] = ("iat", "exp"),
    limits: SdJwtLimits = DEFAULT_LIMITS,
) -> VerifiedSdJwt:
    """Verify an SD-JWT or SD-JWT+KB (§7.3) and return what it vouches for, or raise.

    ``require_key_binding`` is the Verifier's policy, decided before looking at the input (§7.3 step 1,
    §9.5); when ``True``, ``expected_aud`` and ``expected_nonce`` are mandatory.  A KB-JWT that is
    present is always verified: if the policy does not require Key Binding but one arrives, it is
    checked against ``expected_aud``/``expected_nonce`` when given and refused
    (``unexpected_key_binding``) when not — it is never silently ignored.  ``issuer=None`` means the
    profile has no ``iss`` to check, not "any issuer".
    """
    if not isinstance(require_key_binding, bool):
        raise InvalidInput("require_key_binding must be a bool", code="bad_policy")
    _check_leeway(leeway)
    if require_key_binding:
        _check_kb_expectations(expected_aud, expected_nonce, kb_max_age, leeway)
    # §7.3 step 3: parse into the SD-JWT and the KB-JWT.
    parsed = parse(presentation, limits=limits)
    if parsed.kb_jwt is None:
        if require_key_binding:
            # §7.3 step 2: required but absent; decided by policy, never by the input.
            raise VerificationError("key binding required but no KB-JWT presented", code="kb_missing")
    elif expected_aud is None or expected_nonce is None:
        # Only reachable when Key Binding is not required: a KB-JWT we cannot check is never ignored.
        raise VerificationError(
            "a key binding JWT was presented but no audience/nonce was given to check it",
            code="unexpected_key_binding",
        )
    # §7.3 step 4 = §7.1: the Issuer-signed JWT, the Disclosures, then validity claims.
    issuer_jwt = verify_issuer_jwt(parsed, issuer_key=issuer_key, expected_typ=expected_typ, limits=limits)
    processed = process_disclosures(issuer_jwt, parsed, limits=limits)
    check_validity(processed.payload, issuer=issuer, now=now, leeway=leeway, required_claims=required_claims)
    binding: KeyBinding | None = None
    if parsed.kb_jwt is not None and expected_aud is not None and expected_nonce is not None:
        # §7.3 step 5.1: the Holder's key from the (processed) SD-JWT.
        holder = holder_key_from_cnf(processed.payload)
        binding = verify_key_binding(
            parsed,
            holder_key=holder,
            expected_aud=expected_aud,
            expected_nonce=expected_nonce,
            now=now,
            kb_max_age=kb_max_age,
            leeway=leeway,
            limits=limits,
        )
    return VerifiedSdJwt(
        payload=processed.payload,
        processed=processed,
        issuer_header=issuer_jwt.header,
        issuer_payload=issuer_jwt.payload,
        issuer_key=issuer_jwt.key,
        holder_key=binding.holder_key.key if binding else None,
        kb_header=binding.header if binding else None,
        kb_claims=binding.claims if binding else None,
        # The KB-JWT check recomputed it over these very bytes: hashed once.
        sd_hash=binding.sd_hash if binding is not None else digest_of(parsed.sd_jwt),
        key_bound=binding is not None,
        parsed=parsed,
    )
