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
                                           allowed (and any failure not listed below)
-32011   TokenExpired              401     ``exp`` passed (or ``nbf`` not reached)
-32012   InvalidSignature          401     the signature did not verify
-32013   InsufficientPermissions   403     authenticated, but the policy denied the operation
=======  ========================  ======  ====================================================

401 answers carry a ``WWW-Authenticate: Bearer`` challenge (RFC 6750 §3): without an ``error``
attribute when no credentials were sent (§3.1 says the server SHOULD NOT include one then), with
``error="invalid_token"`` for a bad token.  403 carries ``error="insufficient_scope"``.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, ClassVar

from mudrika.errors import (
    ExpiredError,
    InvalidInput,
    MudrikaError,
    PolicyDenied,
    SignatureError,
    VerificationError,
)

__all__ = [
    "A2AAuthError",
    "AuthenticationRequired",
    "InsufficientPermissions",
    "InvalidSignature",
    "InvalidToken",
    "JsonRpcAuthCode",
    "TokenExpired",
    "code_for",
    "error_response",
    "http_status_for",
    "message_for",
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

    The concrete classes also subclass the matching ``mudrika.errors`` class, so
    ``except VerificationError`` still catches every one of them (fail closed).
    """

    jsonrpc_code: ClassVar[JsonRpcAuthCode]
    http_status: ClassVar[int]


class AuthenticationRequired(A2AAuthError, VerificationError):
    """No credentials were presented."""

    default_code = "authentication_required"
    jsonrpc_code = JsonRpcAuthCode.AUTHENTICATION_REQUIRED
    http_status = 401


class InvalidToken(A2AAuthError, VerificationError):
    """The token is malformed or does not match what this server expects (iss, aud, typ, kid, alg)."""

    default_code = "invalid_token"
    jsonrpc_code = JsonRpcAuthCode.INVALID_TOKEN
    http_status = 401


class TokenExpired(A2AAuthError, ExpiredError):
    default_code = "token_expired"
    jsonrpc_code = JsonRpcAuthCode.TOKEN_EXPIRED
    http_status = 401


class InvalidSignature(A2AAuthError, SignatureError):
    default_code = "invalid_signature"
    jsonrpc_code = JsonRpcAuthCode.INVALID_SIGNATURE
    http_status = 401


class InsufficientPermissions(A2AAuthError, PolicyDenied):
    """Authenticated, but the operation policy said no."""

    default_code = "insufficient_permissions"
    jsonrpc_code = JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS
    http_status = 403


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


def www_authenticate(value: BaseException | JsonRpcAuthCode | int, *, realm: str) -> str:
    """The ``WWW-Authenticate`` value (RFC 6750 §3) for the 401/403 answer that goes with ``value``."""
    code = _as_code(value)
    error = _BEARER_ERROR[code]
    challenge = f'Bearer realm="{_quote(realm)}"'
    return challenge if error is None else f'{challenge}, error="{error}"'


def _echo_id(request_id: Any) -> str | int | None:
    # JSON-RPC 2.0 §5: the id is echoed; when it could not be determined it is null.  Only ids a
    # request may legally carry are echoed, and very long strings are not reflected back.
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
        "id": _echo_id(request_id),
    }
