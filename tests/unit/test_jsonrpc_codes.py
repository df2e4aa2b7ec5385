"""A2A auth error codes: values, HTTP statuses, typed exceptions, mapping by type, generic bodies."""

from __future__ import annotations

import pytest

from mudrika import errors
from mudrika.trust.jsonrpc import (
    A2AAuthError,
    AuthenticationRequired,
    InsufficientPermissions,
    InvalidSignature,
    InvalidToken,
    JsonRpcAuthCode,
    TokenExpired,
    code_for,
    error_response,
    http_status_for,
    message_for,
    www_authenticate,
)

C = JsonRpcAuthCode

TABLE = [
    (
        AuthenticationRequired,
        C.AUTHENTICATION_REQUIRED,
        -32009,
        401,
        "Authentication required",
        errors.VerificationError,
    ),
    (InvalidToken, C.INVALID_TOKEN, -32010, 401, "Invalid token", errors.VerificationError),
    (TokenExpired, C.TOKEN_EXPIRED, -32011, 401, "Token expired", errors.ExpiredError),
    (InvalidSignature, C.INVALID_SIGNATURE, -32012, 401, "Invalid signature", errors.SignatureError),
    (InsufficientPermissions, C.INSUFFICIENT_PERMISSIONS, -32013, 403, "Forbidden", errors.PolicyDenied),
]


@pytest.mark.parametrize(("cls", "code", "number", "status", "message", "parent"), TABLE)
def test_each_error_class(
    cls: type[A2AAuthError], code: C, number: int, status: int, message: str, parent: type[Exception]
) -> None:
    assert int(code) == number
    exc = cls("detail for the logs only: kid=abc")
    assert isinstance(exc, parent)
    assert isinstance(exc, errors.VerificationError)  # `except VerificationError` fails closed
    assert isinstance(exc, A2AAuthError)
    assert exc.jsonrpc_code is code
    assert exc.http_status == status
    assert code_for(exc) is code
    assert http_status_for(exc) == status
    assert http_status_for(code) == status
    assert http_status_for(number) == status
    assert message_for(exc) == message
    body = error_response(exc, 7)
    assert body == {"jsonrpc": "2.0", "error": {"code": number, "message": message}, "id": 7}


def test_the_enum_has_exactly_the_five_codes() -> None:
    assert sorted(int(c) for c in C) == [-32013, -32012, -32011, -32010, -32009]


def test_messages_are_generic_and_never_leak_the_exception_text() -> None:
    secret = "eyJhbGciOiJFUzI1NiJ9.payload.signature"
    body = error_response(InvalidSignature(f"bad signature on {secret}"), "req-1")
    assert secret not in repr(body)
    assert body["error"]["message"] == "Invalid signature"
    assert set(body["error"]) == {"code", "message"}


def test_mapping_is_by_type_not_message() -> None:
    # An InvalidToken whose message says "expired" is still an invalid token.
    assert code_for(InvalidToken("Token expired")) is C.INVALID_TOKEN
    assert code_for(errors.ExpiredError("Invalid signature")) is C.TOKEN_EXPIRED


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (errors.ExpiredError("x"), C.TOKEN_EXPIRED),
        (errors.SignatureError("x"), C.INVALID_SIGNATURE),
        (errors.PolicyDenied("x"), C.INSUFFICIENT_PERMISSIONS),
        (errors.InvalidInput("x"), C.INVALID_TOKEN),
        (errors.UntrustedKeyError("unknown kid"), C.INVALID_TOKEN),
        (errors.ReplayError("x"), C.INVALID_TOKEN),
        (errors.BindingError("x"), C.INVALID_TOKEN),
        (errors.VerificationError("x"), C.INVALID_TOKEN),
    ],
)
def test_general_mudrika_errors_map_by_family(exc: errors.MudrikaError, code: C) -> None:
    assert code_for(exc) is code


@pytest.mark.parametrize(
    "exc",
    [
        errors.IdpUnavailable("down"),
        errors.UnavailableError("down"),
        errors.ResolutionError("x"),
        errors.KeyStoreError("x"),
        errors.MudrikaError("x"),
        ValueError("x"),
        RuntimeError("x"),
        KeyboardInterrupt(),
    ],
)
def test_anything_else_maps_to_a_deny_code(exc: BaseException) -> None:
    code = code_for(exc)
    assert code is C.INVALID_TOKEN
    assert http_status_for(exc) == 401
    assert error_response(exc, 1)["error"]["code"] == -32010


@pytest.mark.parametrize("value", [0, 200, -32000, -32600, True, False, 401])
def test_unknown_numeric_codes_deny(value: int) -> None:
    assert http_status_for(value) == 401
    assert error_response(value, None)["error"] == {"code": -32010, "message": "Invalid token"}


@pytest.mark.parametrize(
    ("request_id", "echoed"),
    [
        (1, 1),
        (0, 0),
        (-5, -5),
        ("abc", "abc"),
        ("", ""),
        (None, None),
        (True, None),
        (1.5, None),
        ({"a": 1}, None),
        ([1], None),
        ("x" * 257, None),
        ("x" * 256, "x" * 256),
    ],
)
def test_request_id_echo(request_id: object, echoed: object) -> None:
    assert error_response(C.AUTHENTICATION_REQUIRED, request_id)["id"] == echoed


def test_www_authenticate_challenges() -> None:
    assert www_authenticate(C.AUTHENTICATION_REQUIRED, realm="agents") == 'Bearer realm="agents"'
    for code in (C.INVALID_TOKEN, C.TOKEN_EXPIRED, C.INVALID_SIGNATURE):
        assert www_authenticate(code, realm="agents") == 'Bearer realm="agents", error="invalid_token"'
    assert www_authenticate(InsufficientPermissions("x"), realm="agents") == (
        'Bearer realm="agents", error="insufficient_scope"'
    )
    assert www_authenticate(RuntimeError("x"), realm="a") == 'Bearer realm="a", error="invalid_token"'


def test_www_authenticate_quotes_the_realm() -> None:
    value = www_authenticate(C.INVALID_TOKEN, realm='a"b\\c\r\nSet-Cookie: x')
    assert "\r" not in value
    assert "\n" not in value
    assert value.startswith('Bearer realm="a\\"b\\\\cSet-Cookie: x"')


def test_default_codes_of_the_exceptions() -> None:
    assert AuthenticationRequired("x").code == "authentication_required"
    assert InvalidToken("x").code == "invalid_token"
    assert TokenExpired("x").code == "token_expired"
    assert InvalidSignature("x").code == "invalid_signature"
    assert InsufficientPermissions("x").code == "insufficient_permissions"
    assert InvalidToken("x", code="wrong_audience", expected="a", got="b").fields == {
        "expected": "a",
        "got": "b",
    }
