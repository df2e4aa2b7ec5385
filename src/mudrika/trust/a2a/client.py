"""Why a protected agent refused a call, as the calling side sees it.

Why: the a2a-sdk client turns every HTTP refusal into ``A2AClientError("HTTP Error 401 …",
data=None)``; the typed reason the middleware sent (``error.data[0].reason`` on JSON-RPC,
``error.details[0].reason`` on REST, the scheme that failed, the challenges) is reachable only
through ``exc.__cause__.response``.  :func:`refusal_of` reads it from there (or from any exception
chain holding an HTTP response), so a client developer writes ``refusal_of(exc).reason`` instead of
walking causes and guessing body shapes.  It reads what the *server* said: it is a diagnostic, never
a security decision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["SeenRefusal", "refusal_of"]

#: How far down ``__cause__``/``__context__`` to look for the HTTP response.
_MAX_CHAIN: Final = 8
#: A refusal body is small; a larger one is not ours and is not parsed.
_MAX_BODY: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class SeenRefusal:
    """One refusal as received: the HTTP ``status``, the ``reason`` (``ErrorInfo.reason`` such as
    ``INVALID_TOKEN``, or the OAuth ``error`` of an MCP-style body), the ``scheme`` that failed,
    the JSON-RPC ``code`` (None on REST and OAuth bodies), the ``message`` and every
    ``WWW-Authenticate`` challenge."""

    status: int
    reason: str | None
    scheme: str | None
    code: int | None
    message: str | None
    challenges: tuple[str, ...]


def _response_in(exc: BaseException) -> Any:
    seen: BaseException | None = exc
    for _ in range(_MAX_CHAIN):
        if seen is None:
            return None
        response = getattr(seen, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int) and status >= 400 and hasattr(response, "content"):
            return response
        seen = seen.__cause__ or seen.__context__
    return None


def _info(details: Any) -> tuple[str | None, str | None]:
    if isinstance(details, list):
        for item in details:
            if isinstance(item, dict) and isinstance(item.get("reason"), str):
                metadata = item.get("metadata")
                scheme = metadata.get("scheme") if isinstance(metadata, dict) else None
                return item["reason"], scheme if isinstance(scheme, str) else None
    return None, None


def refusal_of(exc: BaseException) -> SeenRefusal | None:
    """The refusal behind ``exc`` (an a2a-sdk ``A2AClientError``, an ``httpx.HTTPStatusError`` …),
    or None when its chain holds no HTTP error response."""
    response = _response_in(exc)
    if response is None:
        return None
    challenges = (
        tuple(response.headers.get_list("www-authenticate")) if hasattr(response.headers, "get_list") else ()
    )
    content: bytes = response.content
    body: Any = None
    if len(content) <= _MAX_BODY:
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            body = None
    error = body.get("error") if isinstance(body, dict) else None
    reason = scheme = message = None
    code: int | None = None
    if isinstance(error, dict):
        if "details" in error:  # google.rpc.Status (A2A REST)
            reason, scheme = _info(error.get("details"))
        else:  # JSON-RPC error object
            reason, scheme = _info(error.get("data"))
            code = error.get("code") if type(error.get("code")) is int else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
    elif isinstance(error, str):  # an OAuth error body (MCP resource servers)
        reason = error
        description = body.get("error_description")
        message = description if isinstance(description, str) else None
    return SeenRefusal(response.status_code, reason, scheme, code, message, challenges)
