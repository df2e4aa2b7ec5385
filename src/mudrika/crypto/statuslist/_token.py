"""Status List Tokens in JWT form and the ``status`` claim of Referenced Tokens
(draft-ietf-oauth-status-list-20 §5.1, §6.2, §8.3).

Why the verifier is shaped this way:

* **The list must be signed by the credential's issuer.**  The caller passes the keys it already
  trusts for the Referenced Token's issuer (``key``); nothing in the status list token chooses its
  own key (``jku``/``x5u``/``jwk`` are refused by :mod:`mudrika.crypto.jose`).  A list signed by
  anyone else would let a third party revoke, or un-revoke, someone else's credentials.
* **``sub`` must be the URI the Referenced Token names** (§8.3 step 4a).  Otherwise a valid list the
  issuer published for *another* set of credentials could be substituted for the right one.
* **Time is injected and freshness is the verifier's policy**: ``exp`` is always enforced (§8.3
  step 4c) and ``max_age`` bounds how old ``iat`` may be (step 4b).  A dispute analyst passes the
  purchase time as ``now``: the list must then have been current at that moment (``iat <= now <
  exp``, the rule of §8.4 "Historical Resolution"), which is how "was this credential revoked on the
  day of the purchase?" is asked.
* **An index outside the list is a refusal** (§8.3 step 6: "no statement ... can be made").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import KeyResolver, TrustedKey, sign_jwt, verify_compact
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.statuslist._list import DEFAULT_MAX_LIST_BYTES, StatusList
from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    NotYetValidError,
    VerificationError,
)

__all__ = [
    "DEFAULT_MAX_TOKEN_BYTES",
    "MAX_URI_CHARS",
    "MEDIA_TYPE",
    "STATUS_LIST_TYP",
    "StatusReference",
    "VerifiedStatusList",
    "check_status",
    "read_status_reference",
    "sign_status_list_token",
    "status_claim",
    "verify_status_list_token",
]

#: §5.1: the JWT ``typ`` header of a Status List Token.
STATUS_LIST_TYP: Final = "statuslist+jwt"
#: §8.1, §14.7: what a Status Provider answers with and a client asks for.
MEDIA_TYPE: Final = "application/statuslist+jwt"
#: A status list token is bigger than an access token: 2^20 8-bit entries compress to a few KiB in
#: the draft's vectors, but a busy list can reach hundreds.  1 MiB is the default cap.
DEFAULT_MAX_TOKEN_BYTES: Final = 1024 * 1024
MAX_URI_CHARS: Final = 2048
_MAX_LEEWAY: Final = 300.0


@dataclass(frozen=True, slots=True)
class StatusReference:
    """A Referenced Token's pointer into a Status List: ``status.status_list.{idx, uri}`` (§6.2)."""

    idx: int
    uri: str

    def __post_init__(self) -> None:
        if isinstance(self.idx, bool) or not isinstance(self.idx, int) or self.idx < 0:
            raise InvalidInput("status_list 'idx' must be a non-negative integer", code="bad_status_claim")
        if not isinstance(self.uri, str) or not _looks_like_uri(self.uri):
            raise InvalidInput("status_list 'uri' must be an absolute URI", code="bad_status_claim")

    def to_claim(self) -> dict[str, Any]:
        """The ``status`` claim value to put into a Referenced Token."""
        return {"status_list": {"idx": self.idx, "uri": self.uri}}


def _looks_like_uri(text: str) -> bool:
    # RFC 3986 §3.1: scheme ":" ...; no whitespace or control characters anywhere.
    scheme, sep, rest = text.partition(":")
    return (
        bool(sep and rest and scheme[:1].isalpha())
        and len(text) <= MAX_URI_CHARS
        and all(c.isalnum() or c in "+-." for c in scheme)
        and text.isascii()
        and not any(c.isspace() or ord(c) < 0x21 or ord(c) == 0x7F for c in text)
    )


def status_claim(idx: int, uri: str) -> dict[str, Any]:
    """``{"status_list": {"idx": idx, "uri": uri}}``: the ``status`` claim of §6.2, checked."""
    return StatusReference(idx, uri).to_claim()


def read_status_reference(claims: Mapping[str, Any]) -> StatusReference:
    """§8.3 step 1: the Referenced Token's ``status.status_list`` with a valid ``idx`` and ``uri``.

    VerificationError ``no_status_claim`` when the token names no status list (a verifier that
    requires one must not read "no claim" as "valid"); InvalidInput ``bad_status_claim`` when the
    claim is there but malformed.
    """
    status = claims.get("status")
    if status is None:
        raise VerificationError("the token carries no status claim", code="no_status_claim")
    if not isinstance(status, Mapping):
        raise InvalidInput("'status' must be a JSON object", code="bad_status_claim")
    reference = status.get("status_list")
    if reference is None:
        raise VerificationError("the status claim names no status list", code="no_status_claim")
    if not isinstance(reference, Mapping) or "idx" not in reference or "uri" not in reference:
        raise InvalidInput("'status_list' needs 'idx' and 'uri'", code="bad_status_claim")
    return StatusReference(reference["idx"], reference["uri"])


def sign_status_list_token(
    status_list: StatusList,
    *,
    key: KeyPair,
    uri: str,
    iat: int,
    issuer: str | None = None,
    exp: int | None = None,
    ttl: int | None = None,
    kid: str | None = None,
    alg: str | None = None,
) -> str:
    """Sign a Status List Token (§5.1): header ``typ: statuslist+jwt``; claims ``sub`` (= ``uri``),
    ``iat``, optional ``iss``, ``exp`` and ``ttl`` (positive), ``status_list: {bits, lst}``."""
    StatusReference(0, uri)  # the same URI rules as a reference to it
    for name, value in (("iat", iat), ("exp", exp), ("ttl", ttl)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InvalidInput(f"{name} must be a non-negative integer", code="bad_claim", claim=name)
    if ttl is not None and ttl <= 0:
        raise InvalidInput("ttl must be positive (§5.1)", code="bad_claim", claim="ttl")
    if exp is not None and exp <= iat:
        raise InvalidInput("exp must be after iat", code="bad_claim", claim="exp")
    claims: dict[str, Any] = {"sub": uri, "iat": iat}
    if issuer is not None:
        claims["iss"] = issuer
    if exp is not None:
        claims["exp"] = exp
    if ttl is not None:
        claims["ttl"] = ttl
    claims["status_list"] = status_list.to_json()
    return sign_jwt(claims, key, alg=alg, kid=kid, typ=STATUS_LIST_TYP)


@dataclass(frozen=True, slots=True)
class VerifiedStatusList:
    """A Status List Token whose signature, ``typ``, ``sub`` and time claims passed."""

    uri: str
    issued_at: float
    expires_at: float | None
    ttl: float | None
    status_list: StatusList
    claims: Mapping[str, Any]
    header: Mapping[str, Any]
    token: str = field(default="", repr=False)
    """The compact token that verified: what a merchant records as evidence of the status it saw."""

    def status_of(self, idx: int) -> int:
        """The value at ``idx``, or VerificationError ``status_index_out_of_range`` (§8.3 step 6)."""
        status_list = self.status_list
        if type(idx) is int and 0 <= idx < len(status_list):  # the common case, checked once here
            return status_list.get(idx)
        if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < status_list.size:
            raise VerificationError(
                "index outside the status list: no statement about the token's status can be made",
                code="status_index_out_of_range",
                idx=idx if isinstance(idx, int) else None,
                size=self.status_list.size,
            )
        return self.status_list.get(idx)


def _number(claims: Mapping[str, Any], name: str, *, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise VerificationError(f"status list token has no {name!r}", code="missing_claim", claim=name)
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"claim {name!r} is not a number", code="malformed_claim", claim=name)
    return float(value)


def verify_status_list_token(
    token: str | bytes,
    *,
    key: TrustedKey | KeyResolver,
    uri: str,
    issuer: str | None,
    now: float,
    max_age: float | None,
    leeway: float = 0.0,
    max_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    max_list_bytes: int = DEFAULT_MAX_LIST_BYTES,
) -> VerifiedStatusList:
    """Verify a Status List Token in JWT form (§5.1, §8.3 steps 3-5) and decode its list.

    ``key``: the Referenced Token issuer's key(s), as the verifier trusts them.  ``uri``: the URI the
    Referenced Token names (``sub`` must equal it).  ``issuer``: when given, an ``iss`` claim in the
    token must equal it (the draft makes ``iss`` optional: the key is what binds the list to the
    issuer).  ``now``: the moment the list must describe (the present, or the purchase time in a
    dispute).  ``max_age``: the oldest ``iat`` accepted, in seconds before ``now`` (``None`` only
    for a verifier with no freshness policy).

    Raises SignatureError / VerificationError (``wrong_typ``, ``kid_mismatch``, ``alg_not_allowed``),
    BindingError ``status_list_uri_mismatch``, ExpiredError ``expired``, VerificationError
    ``status_list_too_old`` / ``missing_claim``, NotYetValidError ``iat_in_future``, InvalidInput
    ``bad_bits`` / ``bad_lst`` / ``too_large`` / ``malformed_claim``.
    """
    if not 0 <= leeway <= _MAX_LEEWAY:
        raise InvalidInput("leeway out of range", code="bad_leeway")
    if max_age is not None and not (math.isfinite(max_age) and max_age > 0):
        raise InvalidInput("max_age must be a positive number of seconds", code="bad_config")
    # §8.3 step 3a: RFC 7519 §7.2 — signature under the issuer's key, typ statuslist+jwt.
    verified = verify_compact(token, key=key, expected_typ=STATUS_LIST_TYP, max_bytes=max_bytes)
    claims = loads_strict(verified.payload, max_bytes=max_bytes, max_depth=16)
    if not isinstance(claims, dict):
        raise InvalidInput("status list token payload is not a JSON object", code="malformed_jwt")
    # §8.3 step 3b: the required claims.
    for name in ("sub", "iat", "status_list"):
        if name not in claims:
            raise VerificationError(f"status list token has no {name!r}", code="missing_claim", claim=name)
    # §8.3 step 4a: the list is the one the Referenced Token points to.
    if claims["sub"] != uri:
        raise BindingError(
            "status list token is for another list (sub differs from the referenced uri)",
            code="status_list_uri_mismatch",
            expected=uri[:200],
            got=str(claims["sub"])[:200],
        )
    if issuer is not None and "iss" in claims and claims["iss"] != issuer:
        raise VerificationError("status list token names another issuer", code="wrong_iss")
    iat = _number(claims, "iat", required=True)
    assert iat is not None
    exp = _number(claims, "exp", required=False)
    ttl = _number(claims, "ttl", required=False)
    if ttl is not None and ttl <= 0:
        raise InvalidInput("claim 'ttl' must be positive", code="malformed_claim", claim="ttl")
    if now + leeway < iat:
        raise NotYetValidError("status list token issued in the future", code="iat_in_future", iat=iat)
    # §8.3 step 4c: exp, when present, is always enforced.
    if exp is not None and now >= exp + leeway:
        raise ExpiredError("status list token expired", code="expired", exp=exp, now=now)
    # §8.3 step 4b: the verifier's freshness policy.
    if max_age is not None and now - iat > max_age + leeway:
        raise VerificationError(
            "status list token older than the verifier accepts",
            code="status_list_too_old",
            iat=iat,
            max_age=max_age,
        )
    # §8.3 step 5: decompress (strict, capped).
    status_list = StatusList.from_json(claims["status_list"], max_bytes=max_list_bytes)
    return VerifiedStatusList(
        uri=uri,
        issued_at=iat,
        expires_at=exp,
        ttl=ttl,
        status_list=status_list,
        claims=claims,
        header=verified.header,
        token=token.decode("ascii") if isinstance(token, bytes) else token,
    )


def check_status(
    referenced_claims: Mapping[str, Any],
    token: str | bytes,
    *,
    key: TrustedKey | KeyResolver,
    issuer: str | None,
    now: float,
    max_age: float | None,
    leeway: float = 0.0,
    max_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    max_list_bytes: int = DEFAULT_MAX_LIST_BYTES,
) -> int:
    """§8.3 steps 1 and 3-6 for a Referenced Token whose own validation already passed: read its
    ``status`` claim, verify the status list token against it, return the status value.

    The value is returned, not judged: ``0`` is VALID, and what ``2`` (SUSPENDED) or an
    application-specific value means for a payment is the caller's policy (§7).
    """
    reference = read_status_reference(referenced_claims)
    verified = verify_status_list_token(
        token,
        key=key,
        uri=reference.uri,
        issuer=issuer,
        now=now,
        max_age=max_age,
        leeway=leeway,
        max_bytes=max_bytes,
        max_list_bytes=max_list_bytes,
    )
    return verified.status_of(reference.idx)
