"""ASGI plumbing for the A2A middleware: a streamed, capped body reader, body replay, JSON answers.

Kept apart from :mod:`mudrika.trust.middleware` so the decision logic there reads as a sequence of
steps; nothing here decides anything.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any, Final

__all__ = [
    "ASGIApp",
    "Message",
    "Receive",
    "ResponseCapture",
    "Scope",
    "Send",
    "body_timed_out",
    "body_too_large",
    "header_values",
    "read_body",
    "replay",
    "send_json",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_TOO_LARGE: Final = json.dumps(
    {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Request too large"}, "id": None}
).encode()


def header_values(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> list[str]:
    """All values of header ``name`` (lower-case bytes), decoded as latin-1 (RFC 9110 §5.5)."""
    return [value.decode("latin-1") for key, value in headers if key == name]


async def send_json(
    send: Send, status: int, payload: Any, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def body_too_large(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(_TOO_LARGE)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _TOO_LARGE})


_TIMED_OUT: Final = json.dumps(
    {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Request timeout"}, "id": None}
).encode()


async def body_timed_out(send: Send) -> None:
    """HTTP 408 (RFC 9110 §15.5.9) when the body did not arrive within the deadline; the connection
    is closed so a slow sender cannot keep it."""
    await send(
        {
            "type": "http.response.start",
            "status": 408,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(_TIMED_OUT)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _TIMED_OUT})


async def read_body(scope: Scope, receive: Receive, send: Send, limit: int) -> bytes | None:
    """The whole request body, or None when it was refused (413 already sent) or the client left.

    The cap is enforced while streaming: a declared ``Content-Length`` over the limit is refused before
    reading anything, and bytes are counted across ``http.request`` messages, so a chunked body with
    no length is stopped as soon as it passes the limit rather than after it has been buffered.
    """
    for key, value in scope["headers"]:
        if key == b"content-length" and (not value.isdigit() or int(value) > limit):
            await body_too_large(send)
            return None
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
            await body_too_large(send)
            return None
        if chunk:
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks) if len(chunks) != 1 else chunks[0]


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the buffered body once, then defers to the real one
    (which then reports ``http.disconnect`` when the client goes away)."""
    sent = False

    async def _receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return _receive


class ResponseCapture:
    """A ``send`` that buffers the app's whole response (for merging batch answers)."""

    def __init__(self) -> None:
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            self.status = int(message["status"])
            self.headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            self.chunks.append(bytes(message.get("body", b"")))

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    async def forward(self, send: Send) -> None:
        """Send the captured response on unchanged."""
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body})
