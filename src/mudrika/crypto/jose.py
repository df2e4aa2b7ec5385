"""JWS compact serialisation and JWT claims: the one place mudrika signs and verifies JOSE objects.

Why this module is shaped the way it is (ADR 0001):

* The algorithm allow-list travels with the key (:class:`TrustedKey`), never with the token.  The
  header's ``alg`` is only *checked* against it, so ``alg: none``, HS256-with-a-public-key and
  "PS256 on an RS256 key" are refused before any cryptography runs.
* ``jku``, ``x5u``, ``x5c`` and an embedded ``jwk`` are never followed or trusted: a token that carries
  them is refused outright, because a verifier that ignored them silently would still be one
  configuration change away from trusting them.
* ``crit`` is honoured per RFC 7515 §4.1.11: any extension we do not understand fails the token.
* ECDSA signatures are the raw ``r || s`` of RFC 7518 §3.4; a DER signature is a malformed signature.
* Everything is size-capped and parsed strictly (duplicate members, non-canonical base64url).
* Signing uses joserfc (the project's JOSE library); verification is our own strict compact parser on
  ``cryptography`` primitives, because joserfc alone cost about 25 % over the raw signature check (a
  one-off measurement recorded in docs/adr/0001-jose-verification-path.md) and does not reject
  duplicate header members.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from joserfc import jws as _joserfc_jws
from joserfc.errors import JoseError as _JoseError
from joserfc.errors import SecurityWarning as _SecurityWarning
from joserfc.jwk import ECKey as _ECKey
from joserfc.jwk import OKPKey as _OKPKey
from joserfc.jwk import RSAKey as _RSAKey

from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.keys import KeyPair, KeyType, PublicKey
from mudrika.errors import ExpiredError, InvalidInput, UntrustedKeyError, VerificationError

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "DEFAULT_MAX_TOKEN_BYTES",
    "FORBIDDEN_HEADERS",
    "KeyResolver",
    "OpenedJWS",
    "TrustedKey",
    "VerifiedJWS",
    "asymmetric_allow_list",
    "check_jwt_claims",
    "decode_protected_header",
    "header_kid",
    "open_compact",
    "parse_unverified_header",
    "sign_compact",
    "sign_jwt",
    "verify_compact",
    "verify_jwt",
    "verify_opened",
    "verify_opened_jwt",
]

DEFAULT_MAX_TOKEN_BYTES: Final = 64 * 1024
_MAX_HEADER_BYTES: Final = 4096
_MAX_LEEWAY: Final = 300.0
#: The asymmetric JWS algorithms (RFC 7518 §3, RFC 8037, RFC 8812): what any verifier that must
#: tell parties apart may allow.  A shared-secret MAC (HS256) proves nothing to a party that does not
#: hold the secret, and one that does could forge it; ``none`` proves nothing at all.
ASYMMETRIC_ALGORITHMS: Final = frozenset(
    {"ES256", "ES384", "ES256K", "EdDSA", "Ed25519", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
)


def asymmetric_allow_list(algorithms: Collection[str], *, refusal: str) -> frozenset[str]:
    """A verifier's algorithm allow-list: non-empty and asymmetric only, or ``InvalidInput``
    ``bad_config`` with ``refusal`` as its message and the names it refused."""
    allowed = frozenset(algorithms)
    if not allowed or not allowed <= ASYMMETRIC_ALGORITHMS:
        raise InvalidInput(refusal, code="bad_config", refused=sorted(allowed - ASYMMETRIC_ALGORITHMS)[:8])
    return allowed


#: Headers that would let the token choose its own verification key.  Never honoured (docs/security.md).
FORBIDDEN_HEADERS: Final = frozenset({"jku", "x5u", "x5c", "jwk"})
#: Every token a key signs carries the same encoded protected header, so the result of decoding and
#: checking it (steps 2-5 of RFC 7515 §5.2) is remembered per exact header segment.  Only headers that
#: passed, and only those without "crit", are kept; the map is bounded and simply cleared when full.
_CHECKED_HEADERS: dict[str, tuple[Mapping[str, Any], str]] = {}
_MAX_CHECKED_HEADERS: Final = 1024
#: Header parameters registered by RFC 7515 §4.1 / RFC 7519 §5; ``crit`` may not list them (§4.1.11).
_REGISTERED_HEADERS: Final = frozenset(
    {"alg", "jku", "jwk", "kid", "x5u", "x5c", "x5t", "x5t#S256", "typ", "cty", "crit", "enc", "zip"}
)


@dataclass(frozen=True, slots=True)
class TrustedKey:
    """A verification key together with the algorithms the *verifier* allows for it.

    ``algorithms`` is intersected with what the key type can do; an empty result is a configuration
    error raised at construction, not a silent "allow nothing" at verification time.
    """

    key: PublicKey
    algorithms: frozenset[str]
    kid: str | None = None
    owner: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        allowed = frozenset(self.algorithms) & self.key.algorithms
        if not allowed:
            raise InvalidInput(
                "none of the allowed algorithms fits this key type",
                code="alg_key_mismatch",
                key_type=self.key.key_type.value,
                algorithms=sorted(self.algorithms),
            )
        object.__setattr__(self, "algorithms", allowed)

    @classmethod
    def from_jwk(
        cls, jwk: Mapping[str, Any], *, algorithms: Collection[str], owner: str | None = None
    ) -> TrustedKey:
        """Trust a published JWK for verification, honouring its ``use``, ``key_ops`` and ``alg``.

        A key published for encryption (``use: enc`` or ``key_ops`` without ``verify``) is refused, and
        a JWK ``alg`` narrows the verifier's allow-list further (RFC 7517 §4.2-§4.4).
        """
        use = jwk.get("use")
        if use is not None and use != "sig":
            raise UntrustedKeyError("key is not published for signatures", code="wrong_key_use")
        key_ops = jwk.get("key_ops")
        if key_ops is not None and (not isinstance(key_ops, list) or "verify" not in key_ops):
            raise UntrustedKeyError("key_ops does not allow verification", code="wrong_key_use")
        allowed = frozenset(algorithms)
        jwk_alg = jwk.get("alg")
        if jwk_alg is not None:
            if not isinstance(jwk_alg, str):
                raise InvalidInput("JWK 'alg' must be a string", code="bad_jwk")
            allowed &= {jwk_alg}
        kid = jwk.get("kid")
        # The JWK goes to PublicKey.from_jwk whole: it reads only the members of its key type and
        # refuses private ones, so the usage members read above need no stripping first.
        return cls(
            key=PublicKey.from_jwk(jwk),
            algorithms=allowed,
            kid=kid if isinstance(kid, str) else None,
            owner=owner,
        )

    @classmethod
    def for_key(cls, key: PublicKey, *, kid: str | None = None, owner: str | None = None) -> TrustedKey:
        """Trust ``key`` with its type's default algorithm only (the narrowest sensible allow-list)."""
        return cls(key=key, algorithms=frozenset({key.default_algorithm}), kid=kid, owner=owner)


#: Given the (unverified) protected header, return the key to verify with, or raise.
KeyResolver = Callable[[Mapping[str, Any]], TrustedKey]


@dataclass(frozen=True, slots=True)
class VerifiedJWS:
    header: Mapping[str, Any]
    payload: bytes
    signing_input: bytes
    signature: bytes
    key: TrustedKey


def _joserfc_key(pair: KeyPair) -> _ECKey | _OKPKey | _RSAKey:
    private = pair.to_cryptography()
    if pair.key_type is KeyType.ED25519:
        return _OKPKey.import_key(private)  # type: ignore[arg-type]
    if pair.key_type is KeyType.RSA:
        return _RSAKey.import_key(private)  # type: ignore[arg-type]
    return _ECKey.import_key(private)  # type: ignore[arg-type]


def sign_compact(
    payload: bytes,
    key: KeyPair,
    *,
    alg: str | None = None,
    kid: str | None = None,
    typ: str | None = None,
    extra_header: Mapping[str, Any] | None = None,
) -> str:
    """Produce a compact JWS (RFC 7515 §7.1) over ``payload`` with ``key``."""
    algorithm = key.signing_algorithm(alg)
    header: dict[str, Any] = {"alg": algorithm}
    if kid is not None:
        header["kid"] = kid
    if typ is not None:
        header["typ"] = typ
    if extra_header:
        clash = FORBIDDEN_HEADERS.intersection(extra_header) | ({"alg"} & set(extra_header))
        if clash:
            raise InvalidInput("header parameter not allowed", code="forbidden_header", names=sorted(clash))
        header.update(extra_header)
    try:
        with warnings.catch_warnings():
            # RFC 9864 deprecates the polymorphic "EdDSA" name because it does not say which curve.
            # Our keys bind the curve (Ed25519 only), and peers (node jose, jwcrypto, didkit) still
            # expect "EdDSA", so the warning carries no information here; "Ed25519" is also accepted.
            warnings.filterwarnings("ignore", message="EdDSA is deprecated", category=_SecurityWarning)
            token = _joserfc_jws.serialize_compact(header, payload, _joserfc_key(key), algorithms=[algorithm])
    except _JoseError:
        raise InvalidInput("could not sign the JWS", code="sign_failed") from None
    return token


def sign_jwt(
    claims: Mapping[str, Any],
    key: KeyPair,
    *,
    alg: str | None = None,
    kid: str | None = None,
    typ: str | None = "JWT",
    extra_header: Mapping[str, Any] | None = None,
) -> str:
    try:
        payload = json.dumps(claims, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError):  # NaN or infinity, a value JSON cannot hold, a lone surrogate
        raise InvalidInput(
            "JWT claims must be JSON values (no NaN or infinity)", code="malformed_claim"
        ) from None
    return sign_compact(payload, key, alg=alg, kid=kid, typ=typ, extra_header=extra_header)


def _split(token: str | bytes, max_bytes: int) -> tuple[str, str, str]:
    if isinstance(token, bytes):
        try:
            token = token.decode("ascii")
        except UnicodeDecodeError:
            raise InvalidInput("token is not ASCII", code="malformed_jws") from None
    if not isinstance(token, str):
        raise InvalidInput("token must be a string", code="malformed_jws")
    if len(token) > max_bytes:
        raise InvalidInput("token too large", code="too_large", limit=max_bytes)
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidInput(
            "not a compact JWS (expected three dot-separated parts)", code="malformed_jws", parts=len(parts)
        )
    return parts[0], parts[1], parts[2]


def decode_protected_header(encoded: str) -> dict[str, Any]:
    """The JSON object a base64url protected-header segment encodes (strict parse, at most 4 KiB),
    decoded *without verifying anything*: every compact token's header, and a JWS in JSON
    serialization's, whose header arrives apart from any compact token."""
    if len(encoded) > _MAX_HEADER_BYTES:
        raise InvalidInput("JWS header too large", code="too_large", limit=_MAX_HEADER_BYTES)
    header = loads_strict(b64url_decode(encoded), max_bytes=_MAX_HEADER_BYTES, max_depth=8)
    if not isinstance(header, dict):
        raise InvalidInput("JWS header is not a JSON object", code="malformed_jws")
    return header


def header_kid(header: Mapping[str, Any], *, what: str, did_url: bool = False) -> str:
    """The ``kid`` a protected header names, for looking the key up in the verifier's own trust.

    ``UntrustedKeyError`` ``no_kid`` when it names none (or, with ``did_url``, not a DID URL):
    without a kid there is nothing the verifier could anchor, and a key the header carries itself is
    never an answer.  ``what`` names the token in the message ("the receipt")."""
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise UntrustedKeyError(f"{what} names no key (kid)", code="no_kid")
    if did_url and not kid.startswith("did:"):
        raise UntrustedKeyError(f"{what} must name its key by DID URL", code="no_kid")
    return kid


def parse_unverified_header(
    token: str | bytes, *, max_bytes: int = DEFAULT_MAX_TOKEN_BYTES
) -> dict[str, Any]:
    """Return the protected header *without verifying anything* — only for choosing a key by ``kid``."""
    encoded, _, _ = _split(token, max_bytes)
    return decode_protected_header(encoded)


def _check_header(
    header: Mapping[str, Any], understood_crit: Collection[str], validated_key_headers: Collection[str] = ()
) -> str:
    # RFC 7515 §5.2 step 5: the header must be understood and the alg present.
    alg = header.get("alg")
    if not isinstance(alg, str) or not alg:
        raise InvalidInput("JWS header has no 'alg'", code="malformed_jws")
    forbidden = FORBIDDEN_HEADERS.intersection(header).difference(validated_key_headers)
    if forbidden:
        raise VerificationError(
            "token carries key-selection headers that are never trusted",
            code="forbidden_header",
            names=sorted(forbidden),
        )
    if "kid" in header and not isinstance(header["kid"], str):
        raise InvalidInput("'kid' must be a string", code="malformed_jws")
    if "crit" in header:
        # RFC 7515 §4.1.11: a non-empty list of names, none registered, all present, all understood.
        crit = header["crit"]
        if not isinstance(crit, list) or not crit or not all(isinstance(name, str) for name in crit):
            raise InvalidInput("'crit' must be a non-empty list of strings", code="malformed_jws")
        if _REGISTERED_HEADERS.intersection(crit):
            raise InvalidInput("'crit' lists a registered header parameter", code="malformed_jws")
        unknown = [name for name in crit if name not in understood_crit or name not in header]
        if unknown:
            raise VerificationError(
                "token requires extensions this verifier does not understand",
                code="unknown_crit",
                names=unknown[:8],
            )
    return alg


def _typ_matches(actual: object, expected: str) -> bool:
    # RFC 7515 §4.1.9: "application/" may be omitted; media types compare case-insensitively.
    if not isinstance(actual, str):
        return False
    normal = actual.lower().removeprefix("application/")
    return normal == expected.lower().removeprefix("application/")


def verify_compact(
    token: str | bytes,
    *,
    key: TrustedKey | KeyResolver,
    expected_typ: str | None = None,
    understood_crit: Collection[str] = (),
    max_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    validated_key_headers: Collection[str] = (),
) -> VerifiedJWS:
    """Verify a compact JWS (RFC 7515 §5.2) and return its header and payload, or raise.

    ``key`` is either the one trusted key or a resolver that picks it from the unverified header
    (typically by ``kid``); the resolver raises when it has no key for that header.
    ``validated_key_headers`` (only ``{"x5c"}``) lets a header carry a certificate chain the caller
    has already path-validated to its own trust anchors and derived ``key`` from; it is never read
    here, and every other key-selection header is still refused.
    """
    header, payload, signing_input, signature, trusted = _verify_compact(
        token, key, expected_typ, understood_crit, max_bytes, validated_key_headers
    )
    return VerifiedJWS(
        header=header, payload=payload, signing_input=signing_input, signature=signature, key=trusted
    )


def _verify_compact(
    token: str | bytes,
    key: TrustedKey | KeyResolver,
    expected_typ: str | None,
    understood_crit: Collection[str],
    max_bytes: int,
    validated_key_headers: Collection[str],
) -> tuple[Mapping[str, Any], bytes, bytes, bytes, TrustedKey]:
    """The steps of :func:`verify_compact`, returning its parts as a tuple.

    :func:`verify_jwt` needs only the payload, so it skips building the ``VerifiedJWS`` object it
    would throw away on every access token.
    """
    opened = _open(token, expected_typ, understood_crit, max_bytes, validated_key_headers)
    header = opened[0]
    trusted = key if isinstance(key, TrustedKey) else key(header)
    payload, signing_input, signature = _finish(opened, trusted)
    return header, payload, signing_input, signature, trusted


#: What RFC 7515 §5.2 steps 1-5 leave: header, alg, the three encoded segments, the size cap.
_Opened = tuple[Mapping[str, Any], str, str, str, str, int]


def _open(
    token: str | bytes,
    expected_typ: str | None,
    understood_crit: Collection[str],
    max_bytes: int,
    validated_key_headers: Collection[str],
) -> _Opened:
    """RFC 7515 §5.2 steps 1-5 and the ``typ`` check: everything that needs no key."""
    if validated_key_headers and set(validated_key_headers) - {"x5c"}:
        raise InvalidInput("only x5c can be validated by the caller", code="bad_policy")
    encoded_header, encoded_payload, encoded_signature = _split(token, max_bytes)
    checked = _CHECKED_HEADERS.get(encoded_header)
    if checked is None:
        # §5.2 steps 2-4: decode and parse the protected header.
        header: Mapping[str, Any] = decode_protected_header(encoded_header)
        # §5.2 step 5: understand every parameter that must be understood.
        alg = _check_header(header, understood_crit, validated_key_headers)
        if "crit" not in header and not FORBIDDEN_HEADERS.intersection(header):
            # Without "crit" the outcome does not depend on the caller, so it can be remembered.
            header = MappingProxyType(header)
            if len(_CHECKED_HEADERS) >= _MAX_CHECKED_HEADERS:
                _CHECKED_HEADERS.clear()
            _CHECKED_HEADERS[encoded_header] = (header, alg)
    else:
        header, alg = checked
    if expected_typ is not None and not _typ_matches(header.get("typ"), expected_typ):
        raise VerificationError("unexpected token type", code="wrong_typ", expected=expected_typ)
    return header, alg, encoded_header, encoded_payload, encoded_signature, max_bytes


def _finish(opened: _Opened, trusted: TrustedKey) -> tuple[bytes, bytes, bytes]:
    """RFC 7515 §5.2 steps 6-8 with the key the verifier chose: (payload, signing input, signature)."""
    header, alg, encoded_header, encoded_payload, encoded_signature, max_bytes = opened
    if trusted.kid is not None and "kid" in header and header["kid"] != trusted.kid:
        raise VerificationError("token 'kid' does not name the trusted key", code="kid_mismatch")
    if alg not in trusted.algorithms:
        raise VerificationError(
            "algorithm not allowed for this key",
            code="alg_not_allowed",
            alg=alg[:16],
            allowed=sorted(trusted.algorithms),
        )
    # §5.2 steps 6-8: decode payload and signature (strict base64url).
    signature = b64url_decode(encoded_signature)
    payload = b64url_decode(encoded_payload, max_len=max_bytes)
    signing_input = f"{encoded_header}.{encoded_payload}".encode("ascii")
    # §5.2 step 8: validate the signature with the algorithm the *verifier* allowed.
    trusted.key.verify(signature, signing_input, alg)
    return payload, signing_input, signature


class OpenedJWS:
    """A compact JWS whose protected header passed RFC 7515 §5.2 steps 1-5; nothing is verified yet.

    Why it exists: a verifier that reports "header", "key", "algorithm" and "signature" as separate
    checks must choose the key itself between reading the header and checking the signature.  With
    :func:`open_compact` and :func:`verify_opened` it does so in straight-line code, through the very
    steps :func:`verify_compact` runs (the two are one implementation).  The repr shows no token text.
    """

    __slots__ = ("_opened",)

    def __init__(self, opened: _Opened) -> None:
        self._opened = opened

    @property
    def header(self) -> Mapping[str, Any]:
        """The protected header (read-only), understood but not yet covered by a verified signature."""
        return self._opened[0]

    @property
    def alg(self) -> str:
        """The header's ``alg``: only ever *checked* against the key's allow-list."""
        return self._opened[1]

    def __repr__(self) -> str:
        return f"OpenedJWS(alg={self.alg[:16]!r})"


def open_compact(
    token: str | bytes,
    *,
    expected_typ: str | None = None,
    understood_crit: Collection[str] = (),
    max_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
) -> OpenedJWS:
    """The first half of :func:`verify_compact`: split, decode, parse and understand the header (and
    check ``typ``), or raise exactly what :func:`verify_compact` raises before it asks for a key."""
    return OpenedJWS(_open(token, expected_typ, understood_crit, max_bytes, ()))


def verify_opened(opened: OpenedJWS, *, key: TrustedKey) -> bytes:
    """The second half of :func:`verify_compact`: the key's ``kid`` and algorithm allow-list, then the
    signature; returns the payload bytes, or raises exactly what :func:`verify_compact` raises."""
    return _finish(opened._opened, key)[0]


def _numeric_date(claims: Mapping[str, Any], name: str) -> float | None:
    # Absent is None; present is a number.  ``"exp": null`` is neither: read as absent it would pass
    # a "required" check (the name is there) and then never expire.
    if name not in claims:
        return None
    value = claims[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"claim {name!r} is not a NumericDate", code="malformed_claim", claim=name)
    return float(value)


def _audience_matches(actual: object, audience: str | Collection[str]) -> bool:
    expected = {audience} if isinstance(audience, str) else set(audience)
    if isinstance(actual, str):
        return actual in expected
    if isinstance(actual, list) and actual and all(isinstance(item, str) for item in actual):
        return bool(expected.intersection(actual))
    return False


def check_jwt_claims(
    claims: Mapping[str, Any],
    *,
    issuer: str | Collection[str] | None,
    audience: str | Collection[str] | None,
    now: float,
    leeway: float = 0.0,
    required: Collection[str] = ("exp", "iat"),
    max_lifetime: float | None = None,
) -> None:
    """RFC 7519 §4.1 registered-claim checks at time ``now``; raises on the first failure.

    ``issuer`` / ``audience`` are required keyword arguments: pass ``None`` only when the profile has no
    such claim, never to mean "accept anything".
    """
    if not 0 <= leeway <= _MAX_LEEWAY:
        raise InvalidInput("leeway out of range", code="bad_leeway", leeway=leeway)
    for name in required:
        # A plain loop: the list of what is missing is built only for the refusal.
        if name not in claims:
            missing = [name for name in required if name not in claims]
            raise VerificationError("required claims missing", code="missing_claim", claims=missing)
    if issuer is not None:
        iss = claims.get("iss")
        # A str issuer is compared directly (the common case; no set built per token).  A claim that
        # is not a string (a list, an object: unhashable) is simply not the issuer.
        if (
            (iss != issuer)
            if isinstance(issuer, str)
            else (not isinstance(iss, str) or iss not in set(issuer))
        ):
            raise VerificationError("unexpected issuer", code="wrong_iss")
    if audience is not None and not _audience_matches(claims.get("aud"), audience):
        raise VerificationError("token not issued for this audience", code="wrong_aud")
    exp = _numeric_date(claims, "exp")
    iat = _numeric_date(claims, "iat")
    nbf = _numeric_date(claims, "nbf")
    if exp is not None and now >= exp + leeway:
        raise ExpiredError("token expired", code="expired", exp=exp, now=now)
    if nbf is not None and now + leeway < nbf:
        raise VerificationError("token not yet valid", code="not_yet_valid", nbf=nbf, now=now)
    if iat is not None and now + leeway < iat:
        raise VerificationError("token issued in the future", code="iat_in_future", iat=iat, now=now)
    if max_lifetime is not None:
        if exp is None or iat is None:
            raise VerificationError("lifetime check needs exp and iat", code="missing_claim")
        if exp - iat > max_lifetime:
            raise VerificationError(
                "token lifetime exceeds the maximum", code="lifetime_too_long", maximum=max_lifetime
            )


def verify_jwt(
    token: str | bytes,
    *,
    key: TrustedKey | KeyResolver,
    issuer: str | Collection[str] | None,
    audience: str | Collection[str] | None,
    now: float,
    leeway: float = 0.0,
    required: Collection[str] = ("exp", "iat"),
    max_lifetime: float | None = None,
    expected_typ: str | None = None,
    understood_crit: Collection[str] = (),
    max_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
) -> dict[str, Any]:
    """Verify a JWT's signature, then its claims (RFC 7519 §7.2); return the claims or raise."""
    payload = _verify_compact(token, key, expected_typ, understood_crit, max_bytes, ())[1]
    return _checked_claims(payload, max_bytes, issuer, audience, now, leeway, required, max_lifetime)


def verify_opened_jwt(
    opened: OpenedJWS,
    *,
    key: TrustedKey,
    issuer: str | Collection[str] | None,
    audience: str | Collection[str] | None,
    now: float,
    leeway: float = 0.0,
    required: Collection[str] = ("exp", "iat"),
    max_lifetime: float | None = None,
) -> dict[str, Any]:
    """The second half of :func:`verify_jwt` for a token :func:`open_compact` opened: the key's
    ``kid`` and algorithm, the signature, then the claims; returns them, or raises exactly what
    :func:`verify_jwt` raises.

    Why: a verifier that picks the key by the header's ``kid`` (an access-token verifier) would
    otherwise split the token and look its header up twice, once to choose the key and once inside
    :func:`verify_jwt`.  The size cap is the one the token was opened with.
    """
    payload = _finish(opened._opened, key)[0]
    max_bytes = opened._opened[5]
    return _checked_claims(payload, max_bytes, issuer, audience, now, leeway, required, max_lifetime)


def _checked_claims(
    payload: bytes,
    max_bytes: int,
    issuer: str | Collection[str] | None,
    audience: str | Collection[str] | None,
    now: float,
    leeway: float,
    required: Collection[str],
    max_lifetime: float | None,
) -> dict[str, Any]:
    """RFC 7519 §7.2 step 10 onwards: the verified payload as a JSON object, its claims checked."""
    claims = loads_strict(payload, max_bytes=max_bytes, max_depth=32)
    if not isinstance(claims, dict):
        raise InvalidInput("JWT payload is not a JSON object", code="malformed_jwt")
    check_jwt_claims(
        claims,
        issuer=issuer,
        audience=audience,
        now=now,
        leeway=leeway,
        required=required,
        max_lifetime=max_lifetime,
    )
    return claims
