"""Log injection: request values reach the logs only escaped and capped.

The attack from the issue: a request path with ``%0A`` forged a whole, plausible log line ("admin
granted tasks/cancel for alice") because the path was logged as is before authentication.  Each
dangerous character class is tried through a real uvicorn server, then :func:`log_value` is checked
character by character.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mudrika.net.logs import DEFAULT_LOG_CHARS, log_value
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator
from tests._support.served import serve_asgi
from tests._support.tokenfactory import Clock, LocalRealm, demo_policy, realm_jwks

pytestmark = pytest.mark.security

FORGED = "admin granted tasks/cancel for alice"
INJECTIONS = {
    "LF": "%0A",
    "CR": "%0D",
    "CRLF": "%0D%0A",
    "NEL (C1)": "%C2%85",
    "CSI (C1)": "%C2%9B",
    "ANSI ESC": "%1B%5B2K%1B%5B1G",
    "LINE SEPARATOR": "%E2%80%A8",
    "PARAGRAPH SEPARATOR": "%E2%80%A9",
    "NUL": "%00",
    "VT/FF": "%0B%0C",
    "RTL override": "%E2%80%AE",
}


async def _ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    realm = LocalRealm(Clock())
    with realm_jwks(realm) as jwks:
        verifier = AccessTokenVerifier(
            issuer=realm.issuer, audience="agent-api", azp_allowlist=None, jwks=jwks
        )
        app = A2AAuthMiddleware(
            Starlette(routes=[Route("/{path:path}", _ok, methods=["POST"])]),
            authenticators=[BearerAuthenticator(verifier)],
            policy=demo_policy(),
        )
        with serve_asgi(app) as base:
            yield base


def _one_line(record: logging.LogRecord) -> str:
    message = record.getMessage()
    for bad in ("\n", "\r", "\x1b", "\x85", "\x9b", "\u2028", "\u2029", "\x00", "\x0b", "\x0c", "\u202e"):
        assert bad not in message, f"{bad!r} reached the log: {message!r}"
    return message


@pytest.mark.parametrize("name", sorted(INJECTIONS))
@pytest.mark.parametrize("credential", [None, "Bearer not-a-token"])
def test_request_paths_cannot_forge_log_lines(
    server: str, caplog: pytest.LogCaptureFixture, name: str, credential: str | None
) -> None:
    path = f"/tasks{INJECTIONS[name]}{FORGED.replace(' ', '%20')}"
    headers = {"Authorization": credential} if credential else {}
    with caplog.at_level(logging.DEBUG, logger="mudrika"):
        response = httpx.post(server + path, content=json.dumps({}), headers=headers)
    assert response.status_code == 401
    lines = [_one_line(r) for r in caplog.records if r.name.startswith("mudrika")]
    assert lines, "the refusal was logged"
    assert any(FORGED in line for line in lines)  # the value is there, visibly escaped, on one line


def test_oversized_values_are_capped(server: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mudrika"):
        httpx.post(server + "/" + "a" * 5000, content=b"{}")
    longest = max(len(r.getMessage()) for r in caplog.records if r.name.startswith("mudrika"))
    assert longest < 400


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a\nb", "a\\x0ab"),
        ("a\rb", "a\\x0db"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("x\x85y", "x\\x85y"),
        ("x\x9by", "x\\x9by"),
        ("x\u2028y\u2029z", "x\\u2028y\\u2029z"),
        ("\x00\x07\x7f", "\\x00\\x07\\x7f"),
        ("tab\there", "tab\\x09here"),
        ("rtl\u202eevil", "rtl\\u202eevil"),
        ("back\\slash", "back\\\\slash"),
        ("café ✓", "café ✓"),
        (b"raw\nbytes\xff", "raw\\x0abytesÿ"),
    ],
)
def test_log_value_escapes_every_line_breaking_or_hiding_character(raw: str | bytes, escaped: str) -> None:
    assert log_value(raw) == escaped


def test_log_value_caps_and_says_how_much_was_cut() -> None:
    assert log_value("x" * (DEFAULT_LOG_CHARS + 7)) == "x" * DEFAULT_LOG_CHARS + "…(+7)"
    assert log_value("abcdef", limit=3) == "abc…(+3)"
    # An escape cannot be cut in half into something that looks like another character.
    assert log_value("\n" * 5, limit=2) == "\\x0a\\x0a…(+3)"
