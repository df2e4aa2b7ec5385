"""ASGI plumbing for the A2A middleware: a streamed, capped body reader, body replay, JSON answers.

Kept apart from :mod:`mudrika.trust.middleware` so the decision logic there reads as a sequence of
steps; nothing here decides anything.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Coroutine, Generator, Iterable, Sequence
from typing import Any, Final, Generic, TypeVar

from mudrika.trust._asgi import (
    ASGIApp,
    BodyTooLarge,
    Message,
    Receive,
    Scope,
    Send,
    collect_body,
    declared_too_large,
    replay,
)

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
    "run_until_suspended",
    "send_json",
]

T = TypeVar("T")

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
    await _send_json_bytes(send, status, body, [(b"cache-control", b"no-store"), *headers])


_TIMED_OUT: Final = json.dumps(
    {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Request timeout"}, "id": None}
).encode()


async def body_too_large(send: Send) -> None:
    """HTTP 413 (RFC 9110 §15.5.14) for a body over the cap; the connection is closed so the rest of
    the upload is never read."""
    await _send_and_close(send, 413, _TOO_LARGE)


async def body_timed_out(send: Send) -> None:
    """HTTP 408 (RFC 9110 §15.5.9) when the body did not arrive within the deadline; the connection
    is closed so a slow sender cannot keep it."""
    await _send_and_close(send, 408, _TIMED_OUT)


async def _send_and_close(send: Send, status: int, body: bytes) -> None:
    """A fixed JSON answer with ``Connection: close``: the request body was not read to its end."""
    await _send_json_bytes(send, status, body, [(b"connection", b"close")])


async def _send_json_bytes(
    send: Send, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]]
) -> None:
    """The one place a JSON answer is framed: its type and length first, then ``headers``."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def read_body(scope: Scope, receive: Receive, send: Send, limit: int) -> bytes | None:
    """The whole request body, or None when it was refused (413 already sent) or the client left.

    The cap is enforced while streaming: a declared ``Content-Length`` over the limit is refused before
    reading anything, and bytes are counted across ``http.request`` messages, so a chunked body with
    no length is stopped as soon as it passes the limit rather than after it has been buffered.
    """
    if declared_too_large(scope, limit):
        await body_too_large(send)
        return None
    try:
        return await collect_body(receive, limit)
    except BodyTooLarge:
        await body_too_large(send)
        return None


class _Rest(Generic[T]):
    """The rest of a coroutine that stopped at its first suspension point, as an awaitable: it hands
    the event loop what the coroutine was waiting for, then drives the coroutine on exactly as an
    ``await`` would (values sent and exceptions thrown in, a cancellation included, are passed on)."""

    __slots__ = ("_coroutine", "_pending")

    def __init__(self, coroutine: Coroutine[Any, Any, T], pending: Any) -> None:
        self._coroutine = coroutine
        self._pending = pending

    def __await__(self) -> Generator[Any, Any, T]:
        coroutine, pending = self._coroutine, self._pending
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # every exception thrown in goes on to the coroutine
                try:
                    pending = coroutine.throw(exc)
                except StopIteration as finished:
                    return finished.value  # type: ignore[no-any-return]
            else:
                try:
                    pending = coroutine.send(sent)
                except StopIteration as finished:
                    return finished.value  # type: ignore[no-any-return]


def run_until_suspended(coroutine: Coroutine[Any, Any, T]) -> tuple[T | None, Awaitable[T] | None]:
    """Run ``coroutine`` until it first waits: ``(result, None)`` when it finished without waiting,
    else ``(None, rest)`` with ``rest`` an awaitable that finishes it.

    Why: a request body that has already arrived is read without suspending, and a deadline for it
    (a cancel scope and a timer armed and disarmed per request) would guard a wait that never
    happens.  The caller arms its deadline only around ``rest``.
    """
    try:
        pending = coroutine.send(None)
    except StopIteration as finished:
        return finished.value, None
    return None, _Rest(coroutine, pending)


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
