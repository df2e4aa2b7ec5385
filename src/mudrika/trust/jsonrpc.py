"""A2A authentication/authorisation error codes for JSON-RPC, their HTTP statuses and error bodies.

Why one table: the middleware, the token verifier and the policy each fail in their own way, but the
client must see exactly one of five JSON-RPC codes, the matching HTTP status, and a generic message
(the detail goes to logs).  Mapping is by exception *type*, never by message text, and anything not
recognised maps to a deny code: an unexpected exception can never turn into success.

=======  ========================  ======  ====================================================
code     name                      HTTP    when
=======  ========================  ======  ====================================================
-32009   AuthenticationRequired    401     no credentials were presented
-32010   InvalidToken              401     malformed token, wrong iss/aud/typ, unknown kid, alg not
                                           allowed, not yet valid (``nbf``), and any failure not
                                           listed below
-32011   TokenExpired              401     ``exp`` passed (only that: "expired" makes a client
                                           refresh, which cannot help a token not yet valid)
-32012   InvalidSignature          401     the signature did not verify
-32013   InsufficientPermissions   403     authenticated, but the policy denied the operation
=======  ========================  ======  ====================================================

401 answers carry a ``WWW-Authenticate: Bearer`` challenge (RFC 6750 §3): without an ``error``
attribute when no credentials were sent (§3.1 says the server SHOULD NOT include one then), with
``error="invalid_token"`` for a bad token.  403 carries ``error="insufficient_scope"``.

Error profiles
--------------
The table above is the ``bindu`` profile (the seed's codes, for JSON-RPC 0.3 clients).  A2A 1.0
reserves -32001...-32099 for its own errors and gives -32009 to ``VersionNotSupportedError``, so an
A2A 1.0 client would read the seed's "authentication required" as "version not supported".  The
``a2a`` profile therefore answers with codes outside the whole JSON-RPC reserved range
(-32768...-32000), one per HTTP category, and says what failed in ``error.data``: the spec's array of
typed objects (A2A 1.0 §9.5), one ``google.rpc.ErrorInfo`` whose ``reason`` names the failure and
whose ``metadata.scheme`` names the authentication scheme that failed.  REST answers of the ``a2a``
profile are ``google.rpc.Status`` documents (§11.6).  :func:`profile_for_version` picks the profile
from the ``A2A-Version`` a request carries (none or 0.x: ``bindu``; 1.x and later: ``a2a``).

A :class:`Refusal` is the profile-independent decision (HTTP status, seed code, reason, scheme);
:func:`refusal_for` builds it from an exception by type, never by message text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, ClassVar, Final

from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    MudrikaError,
    PolicyDenied,
    ReplayError,
    SignatureError,
    UnavailableError,
    VerificationError,
)

__all__ = [
    "A2A_CODES",
    "ERROR_DOMAIN",
    "ERROR_INFO_TYPE",
    "TOO_MANY_REQUESTS",
    "UNAVAILABLE",
    "A2AAuthError",
    "A2AProfileCode",
    "AuthenticationRequired",
    "ErrorProfile",
    "InsufficientPermissions",
    "InvalidSignature",
    "InvalidToken",
    "JsonRpcAuthCode",
    "Reason",
    "Refusal",
    "TokenExpired",
    "bare_challenge",
    "code_for",
    "echo_id",
    "error_response",
    "http_status_for",
    "message_for",
    "profile_for_version",
    "refusal_for",
    "refusal_for_denial",
    "www_authenticate",
]


class JsonRpcAuthCode(IntEnum):
    """The A2A authentication error codes (JSON-RPC server-error range)."""

    AUTHENTICATION_REQUIRED = -32009
    INVALID_TOKEN = -32010
    TOKEN_EXPIRED = -32011
    INVALID_SIGNATURE = -32012
    INSUFFICIENT_PERMISSIONS = -32013


_HTTP_STATUS: dict[JsonRpcAuthCode, int] = {
    JsonRpcAuthCode.AUTHENTICATION_REQUIRED: 401,
    JsonRpcAuthCode.INVALID_TOKEN: 401,
    JsonRpcAuthCode.TOKEN_EXPIRED: 401,
    JsonRpcAuthCode.INVALID_SIGNATURE: 401,
    JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS: 403,
}

# Generic on purpose: clients learn the category, never which check failed or why.
_MESSAGE: dict[JsonRpcAuthCode, str] = {
    JsonRpcAuthCode.AUTHENTICATION_REQUIRED: "Authentication required",
    JsonRpcAuthCode.INVALID_TOKEN: "Invalid token",
    JsonRpcAuthCode.TOKEN_EXPIRED: "Token expired",
    JsonRpcAuthCode.INVALID_SIGNATURE: "Invalid signature",
    JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS: "Forbidden",
}

_BEARER_ERROR: dict[JsonRpcAuthCode, str | None] = {
    JsonRpcAuthCode.AUTHENTICATION_REQUIRED: None,
    JsonRpcAuthCode.INVALID_TOKEN: "invalid_token",
    JsonRpcAuthCode.TOKEN_EXPIRED: "invalid_token",
    JsonRpcAuthCode.INVALID_SIGNATURE: "invalid_token",
    JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS: "insufficient_scope",
}

# The fallback for anything we do not recognise: a 401 deny, never a pass.
_DENY = JsonRpcAuthCode.INVALID_TOKEN
_MAX_ID_LENGTH = 256


class A2AAuthError(MudrikaError):
    """Mixin base of the five typed auth errors; each carries its ``jsonrpc_code`` and ``http_status``.

    A concrete class names both codes in its header, ``class TokenExpired(A2AAuthError, ExpiredError,
    code="token_expired", jsonrpc=JsonRpcAuthCode.TOKEN_EXPIRED)``; its HTTP status comes from the one
    status table above, so the two can never disagree.  The concrete classes also subclass the matching
    ``mudrika.errors`` class, so ``except VerificationError`` still catches every one of them (fail
    closed).
    """

    jsonrpc_code: ClassVar[JsonRpcAuthCode]
    http_status: ClassVar[int]

    def __init_subclass__(cls, *, jsonrpc: JsonRpcAuthCode, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.jsonrpc_code = jsonrpc
        cls.http_status = _HTTP_STATUS[jsonrpc]


class AuthenticationRequired(
    A2AAuthError,
    VerificationError,
    code="authentication_required",
    jsonrpc=JsonRpcAuthCode.AUTHENTICATION_REQUIRED,
):
    """No credentials were presented."""


class InvalidToken(
    A2AAuthError, VerificationError, code="invalid_token", jsonrpc=JsonRpcAuthCode.INVALID_TOKEN
):
    """The token is malformed or does not match what this server expects (iss, aud, typ, kid, alg)."""


class TokenExpired(A2AAuthError, ExpiredError, code="token_expired", jsonrpc=JsonRpcAuthCode.TOKEN_EXPIRED):
    """The token's ``exp`` has passed; the client should fetch a new one."""


class InvalidSignature(
    A2AAuthError, SignatureError, code="invalid_signature", jsonrpc=JsonRpcAuthCode.INVALID_SIGNATURE
):
    """The token's signature does not verify under the issuer's published keys."""


class InsufficientPermissions(
    A2AAuthError,
    PolicyDenied,
    code="insufficient_permissions",
    jsonrpc=JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS,
):
    """Authenticated, but the operation policy said no."""


def code_for(exc: BaseException) -> JsonRpcAuthCode:
    """The JSON-RPC code for an exception, chosen by its type (never its message).

    Order matters: the typed auth errors first, then the general ``mudrika.errors`` families.
    ``InvalidInput`` (a token that could not even be parsed) is an invalid token; any other failure,
    including an unavailable IdP or a non-mudrika exception, is a deny with ``INVALID_TOKEN``.
    """
    if isinstance(exc, A2AAuthError):
        return exc.jsonrpc_code
    if isinstance(exc, ExpiredError):
        return JsonRpcAuthCode.TOKEN_EXPIRED
    if isinstance(exc, SignatureError):
        return JsonRpcAuthCode.INVALID_SIGNATURE
    if isinstance(exc, PolicyDenied):
        return JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS
    if isinstance(exc, VerificationError | InvalidInput):
        return JsonRpcAuthCode.INVALID_TOKEN
    return _DENY


def _as_code(value: BaseException | JsonRpcAuthCode | int) -> JsonRpcAuthCode:
    if isinstance(value, BaseException):
        return code_for(value)
    if isinstance(value, bool):
        return _DENY
    try:
        return JsonRpcAuthCode(value)
    except ValueError:
        return _DENY


def http_status_for(value: BaseException | JsonRpcAuthCode | int) -> int:
    """401 or 403 for an exception or code; unknown codes deny with 401."""
    return _HTTP_STATUS[_as_code(value)]


def message_for(value: BaseException | JsonRpcAuthCode | int) -> str:
    return _MESSAGE[_as_code(value)]


def _quote(value: str) -> str:
    # RFC 7235 quoted-string: escape backslash and quote; drop control characters outright.
    cleaned = "".join(ch for ch in value if ch >= " " and ch != "\x7f")
    return cleaned.replace("\\", "\\\\").replace('"', '\\"')


def bare_challenge(scheme: str, *, realm: str) -> str:
    """A challenge with only its realm (``Signature realm="…"``): how a 401 names a further scheme
    the server accepts beside the one that failed."""
    return f'{scheme} realm="{_quote(realm)}"'


def www_authenticate(value: BaseException | JsonRpcAuthCode | int, *, realm: str) -> str:
    """The ``WWW-Authenticate`` value (RFC 6750 §3) for the 401/403 answer that goes with ``value``."""
    code = _as_code(value)
    error = _BEARER_ERROR[code]
    challenge = f'Bearer realm="{_quote(realm)}"'
    return challenge if error is None else f'{challenge}, error="{error}"'


def echo_id(request_id: Any) -> str | int | None:
    """A request id as a response may echo it (JSON-RPC 2.0 §5; null when it could not be
    determined): only ids a request may legally carry, and no string over 256 characters is
    reflected back."""
    if isinstance(request_id, bool):
        return None
    if isinstance(request_id, int):
        return request_id
    if isinstance(request_id, str) and len(request_id) <= _MAX_ID_LENGTH:
        return request_id
    return None


def error_response(value: BaseException | JsonRpcAuthCode | int, request_id: Any) -> dict[str, Any]:
    """A JSON-RPC 2.0 error object with the code, a generic message and the request id (or null)."""
    code = _as_code(value)
    return {
        "jsonrpc": "2.0",
        "error": {"code": int(code), "message": _MESSAGE[code]},
        "id": echo_id(request_id),
    }


# --- error profiles ------------------------------------------------------------------------------


class ErrorProfile(StrEnum):
    """How refusals are spelled: ``bindu`` (the seed's -32009...-32013) or ``a2a`` (A2A 1.0)."""

    BINDU = "bindu"
    A2A = "a2a"


class A2AProfileCode(IntEnum):
    """The ``a2a`` profile's JSON-RPC codes: outside -32768...-32000 (JSON-RPC 2.0 reserves that range
    and A2A 1.0 assigns -32001...-32099), one per HTTP category, digits echoing the status."""

    UNAUTHENTICATED = -31401
    PERMISSION_DENIED = -31403
    TOO_MANY_REQUESTS = -31429
    UNAVAILABLE = -31503


class Reason(StrEnum):
    """``google.rpc.ErrorInfo.reason`` values (UPPER_SNAKE_CASE, as A2A 1.0 §11.6 spells reasons)."""

    AUTHENTICATION_REQUIRED = "AUTHENTICATION_REQUIRED"
    INVALID_TOKEN = "INVALID_TOKEN"  # noqa: S105 - a reason name, not a secret
    TOKEN_EXPIRED = "TOKEN_EXPIRED"  # noqa: S105 - a reason name, not a secret
    INVALID_SIGNED_REQUEST = "INVALID_SIGNED_REQUEST"
    INVALID_SIGNATURE = "INVALID_SIGNATURE"
    SIGNATURE_EXPIRED = "SIGNATURE_EXPIRED"
    REPLAYED_REQUEST = "REPLAYED_REQUEST"
    WRONG_AUDIENCE = "WRONG_AUDIENCE"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    WRONG_TENANT = "WRONG_TENANT"
    TOO_MANY_REQUESTS = "TOO_MANY_REQUESTS"
    AUTHENTICATION_UNAVAILABLE = "AUTHENTICATION_UNAVAILABLE"


ERROR_INFO_TYPE: Final = "type.googleapis.com/google.rpc.ErrorInfo"
#: ``ErrorInfo.domain`` of our reasons: they are not A2A's (whose domain is ``a2a-protocol.org``).
ERROR_DOMAIN: Final = "mudrika.trust"
A2A_CODES: Final = frozenset(int(code) for code in A2AProfileCode)

# Schemes whose credential is a token (their failures are "token" failures); any other scheme signs
# the request itself (RFC 9421), so a failure there never says "token".
_TOKEN_SCHEMES: Final = frozenset({"bearer", "dpop"})

# One generic message per reason: it names the category and the scheme's kind, never the check.
_REASON_MESSAGE: Final = {
    Reason.AUTHENTICATION_REQUIRED: "Authentication required",
    Reason.INVALID_TOKEN: "Invalid token",
    Reason.TOKEN_EXPIRED: "Token expired",
    Reason.INVALID_SIGNED_REQUEST: "Invalid signed request",
    Reason.INVALID_SIGNATURE: "Invalid signature",
    Reason.SIGNATURE_EXPIRED: "Signature expired",
    Reason.REPLAYED_REQUEST: "Request already used",
    Reason.WRONG_AUDIENCE: "Request addressed to another origin",
    Reason.PERMISSION_DENIED: "Forbidden",
    Reason.WRONG_TENANT: "Forbidden for this tenant",
    Reason.TOO_MANY_REQUESTS: "Too many requests",
    Reason.AUTHENTICATION_UNAVAILABLE: "Authentication unavailable",
}

# google.rpc.Code names for the REST (google.rpc.Status) form, by HTTP status.
_RPC_STATUS: Final = {
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}
_A2A_CODE_FOR_STATUS: Final = {
    401: A2AProfileCode.UNAUTHENTICATED,
    403: A2AProfileCode.PERMISSION_DENIED,
    429: A2AProfileCode.TOO_MANY_REQUESTS,
    503: A2AProfileCode.UNAVAILABLE,
}
# ``error`` attribute of the challenge (RFC 6750 §3.1) per reason; None: no attribute.
_CHALLENGE_ERROR: Final = {
    Reason.AUTHENTICATION_REQUIRED: None,
    Reason.PERMISSION_DENIED: "insufficient_scope",
    Reason.WRONG_TENANT: "insufficient_scope",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """One refusal, independent of the profile that spells it.

    ``status`` is the HTTP status, ``seed_code`` the ``bindu`` code (also the JSON-RPC code of the
    seed's 429/503 answers), ``reason`` what failed, ``scheme`` the authentication scheme it failed in
    (``"Bearer"``, ``"DPoP"``, ``"http-message-signature"``; None when no scheme was involved).
    """

    status: int
    seed_code: JsonRpcAuthCode
    reason: Reason
    scheme: str | None = None

    @property
    def message(self) -> str:
        return _REASON_MESSAGE[self.reason]

    def code(self, profile: ErrorProfile) -> int:
        """The JSON-RPC ``error.code`` under ``profile``."""
        if profile is ErrorProfile.A2A:
            return int(_A2A_CODE_FOR_STATUS[self.status])
        return int(self.seed_code)

    def error_info(self) -> dict[str, Any]:
        """The ``google.rpc.ErrorInfo`` typed object (ProtoJSON ``Any`` form, A2A 1.0 §9.5)."""
        metadata = {} if self.scheme is None else {"scheme": self.scheme}
        return {
            "@type": ERROR_INFO_TYPE,
            "reason": str(self.reason),
            "domain": ERROR_DOMAIN,
            "metadata": metadata,
        }

    def error_object(self, profile: ErrorProfile) -> dict[str, Any]:
        """The JSON-RPC ``error`` member: ``bindu`` as the seed had it, ``a2a`` with typed ``data``."""
        error: dict[str, Any] = {"code": self.code(profile), "message": self.message}
        if profile is ErrorProfile.A2A:
            error["data"] = [self.error_info()]
        return error

    def response(self, profile: ErrorProfile, request_id: Any) -> dict[str, Any]:
        """A whole JSON-RPC 2.0 error response, the request id echoed when it may be."""
        return {"jsonrpc": "2.0", "error": self.error_object(profile), "id": echo_id(request_id)}

    def rest_body(self) -> dict[str, Any]:
        """The ``a2a`` profile's REST body: a ``google.rpc.Status`` in JSON (A2A 1.0 §11.6)."""
        return {
            "error": {
                "code": self.status,
                "status": _RPC_STATUS[self.status],
                "message": self.message,
                "details": [self.error_info()],
            }
        }

    def challenge(self, profile: ErrorProfile, *, realm: str) -> str | None:
        """The ``WWW-Authenticate`` value for a 401/403 (None for 429/503).

        ``bindu`` keeps the seed's ``Bearer`` challenge.  ``a2a`` names the scheme that failed (A2A
        1.0 §3.3.2: "SHOULD specify which authentication scheme is required"): ``DPoP`` for DPoP,
        ``Signature`` for RFC 9421 requests (the HTTP-signature challenge name of RFC 9421's
        predecessor drafts; RFC 9421 itself defines ``Accept-Signature``), ``Bearer`` otherwise.
        """
        if self.status not in (401, 403):
            return None
        if profile is ErrorProfile.BINDU:
            return www_authenticate(self.seed_code, realm=realm)
        name = "Bearer"
        if self.scheme is not None and self.scheme.lower() == "dpop":
            name = "DPoP"
        elif self.scheme is not None and self.scheme.lower() not in _TOKEN_SCHEMES:
            name = "Signature"
        default = "invalid_token" if name != "Signature" else "invalid_signature"
        error = _CHALLENGE_ERROR.get(self.reason, default)
        challenge = f'{name} realm="{_quote(realm)}"'
        return challenge if error is None else f'{challenge}, error="{error}"'


def refusal_for(exc: BaseException, *, scheme: str | None = None) -> Refusal:
    """The refusal for an authentication (or claim) failure, by exception type and error ``code``.

    ``scheme`` is the authentication scheme whose credentials failed; it decides whether a failure is
    a token's or a signed request's, so a replayed RFC 9421 request is never "Invalid token".
    """
    seed = code_for(exc)
    token = scheme is None or scheme.lower() in _TOKEN_SCHEMES
    if isinstance(exc, UnavailableError):
        return Refusal(503, JsonRpcAuthCode.INVALID_TOKEN, Reason.AUTHENTICATION_UNAVAILABLE, scheme)
    if seed is JsonRpcAuthCode.AUTHENTICATION_REQUIRED:
        return Refusal(401, seed, Reason.AUTHENTICATION_REQUIRED, scheme)
    if seed is JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS:
        return Refusal(403, seed, Reason.PERMISSION_DENIED, scheme)
    if isinstance(exc, ReplayError):
        reason = Reason.REPLAYED_REQUEST
    elif isinstance(exc, BindingError) and getattr(exc, "code", None) == "wrong_audience":
        reason = Reason.WRONG_AUDIENCE
    elif seed is JsonRpcAuthCode.TOKEN_EXPIRED:
        reason = Reason.TOKEN_EXPIRED if token else Reason.SIGNATURE_EXPIRED
    elif seed is JsonRpcAuthCode.INVALID_SIGNATURE:
        reason = Reason.INVALID_SIGNATURE
    else:
        reason = Reason.INVALID_TOKEN if token else Reason.INVALID_SIGNED_REQUEST
    return Refusal(401, seed, reason, scheme)


def refusal_for_denial(policy_reason: str, *, scheme: str | None = None) -> Refusal:
    """The 403 for a policy denial; a call naming another tenant says so (``wrong_tenant``)."""
    reason = Reason.WRONG_TENANT if policy_reason == "wrong_tenant" else Reason.PERMISSION_DENIED
    return Refusal(403, JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS, reason, scheme)


TOO_MANY_REQUESTS: Final = Refusal(429, JsonRpcAuthCode.INVALID_TOKEN, Reason.TOO_MANY_REQUESTS)
UNAVAILABLE: Final = Refusal(503, JsonRpcAuthCode.INVALID_TOKEN, Reason.AUTHENTICATION_UNAVAILABLE)


def profile_for_version(version: str | None) -> ErrorProfile:
    """The profile for a request's ``A2A-Version``: absent, empty or 0.x -> ``bindu``; else ``a2a``.

    A2A 1.0 §3.6.2: an empty version is 0.3.  Only ``Major.Minor`` counts; a value that is not a
    version (attacker input) is treated as the newest protocol, whose answers collide with nothing.
    """
    if version is None:
        return ErrorProfile.BINDU
    text = version.strip()
    if not text:
        return ErrorProfile.BINDU
    major, _, _ = text.partition(".")
    if major.isdigit() and len(major) <= 4 and int(major) == 0:
        return ErrorProfile.BINDU
    return ErrorProfile.A2A
