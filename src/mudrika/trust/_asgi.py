"""ASGI plumbing shared by the two guards that read a request body before the app does: the A2A
middleware (:mod:`mudrika.trust.middleware`) and the push-notification webhook guard
(:mod:`mudrika.trust.a2a.push`).

Why one copy: both must stop a body at its cap while it streams (never buffer past it), tell a
client that left from a body that ended, and hand the app the bytes they consumed exactly once.
The guards differ only in how they answer, so this module decides nothing and sends nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = [
    "ASGIApp",
    "BodyTooLarge",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "collect_body",
    "declared_too_large",
    "replay",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyTooLarge(Exception):
    """The body passed its cap while streaming; the caller answers 413 in its own form."""


def declared_too_large(scope: Scope, limit: int) -> bool:
    """True when any ``Content-Length`` the request declares is not a plain number or is over
    ``limit``: refused before a byte is read.  Every value counts, so a repeated header cannot slip
    a bad one past the check."""
    return any(
        key == b"content-length" and (not value.isdigit() or int(value) > limit)
        for key, value in scope.get("headers", ())
    )


async def collect_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, ``None`` when the client disconnected before its end.

    Bytes are counted across ``http.request`` messages, so a chunked body with no declared length
    is stopped (:class:`BodyTooLarge`) as soon as it passes ``limit``, not after it was buffered.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "http.disconnect":
            return None
        if kind != "http.request":
            continue
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        if chunk:
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks) if len(chunks) != 1 else chunks[0]


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the buffered body once, then defers to the real one (which
    then reports ``http.disconnect`` when the client goes away: a disconnect is seen, never
    invented)."""
    sent = False

    async def _receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return _receive
