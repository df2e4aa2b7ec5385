"""Real servers on 127.0.0.1 that tests start and stop: an ASGI app under uvicorn (in a thread) and a
plain TCP listener that only records who connected (the SSRF canary)."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import trustme
import uvicorn

from tests._support.net import free_port, wait_listening

__all__ = ["Canary", "LocalTLS", "canary", "closing_on_shutdown", "local_tls", "serve_asgi"]


class LocalTLS(NamedTuple):
    """A throwaway CA's certificate for ``localhost`` / ``127.0.0.1``: the client context that trusts
    it, and the uvicorn settings (``ssl_keyfile``, ``ssl_certfile``) that serve with it."""

    client: ssl.SSLContext
    server: dict[str, str]


def local_tls(folder: Path) -> LocalTLS:
    """Write a fresh certificate for the loopback names into ``folder``; a test serves HTTPS with
    ``serve_asgi(app, **tls.server)`` and verifies with ``tls.client``."""
    ca = trustme.CA()
    client = ssl.create_default_context()
    ca.configure_trust(client)
    cert = ca.issue_cert("localhost", "127.0.0.1")
    cert.private_key_pem.write_to_path(folder / "key.pem")
    cert.cert_chain_pems[0].write_to_path(folder / "cert.pem")
    return LocalTLS(
        client, {"ssl_keyfile": str(folder / "key.pem"), "ssl_certfile": str(folder / "cert.pem")}
    )


@contextmanager
def serve_asgi(app: Any, *, port: int | None = None, **config: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on loopback; yield ``http://127.0.0.1:<port>``.

    ``port`` is for apps that must know their own URL before they are built (an agent card, a push
    audience); otherwise a free one is taken.  ``config`` overrides the quiet defaults below."""
    port = free_port() if port is None else port
    settings: dict[str, Any] = {"log_level": "warning", "lifespan": "off", "access_log": False, **config}
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **settings))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_listening(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def closing_on_shutdown(app: Any, aclose: Callable[[], Awaitable[None]]) -> Any:
    """``app`` with an ASGI lifespan whose shutdown awaits ``aclose`` on the server's own loop (serve
    it with ``lifespan="on"``): an async client built on that loop, such as a Redis store's, is closed
    where it lives instead of leaking when the server thread ends."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    return wrapped


class Canary:
    """A loopback TCP listener that accepts, records and closes every connection."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.1)
        self.port: int = self._sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


@contextmanager
def canary() -> Iterator[Canary]:
    listener = Canary()
    try:
        yield listener
    finally:
        listener.close()
