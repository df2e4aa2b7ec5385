"""Free loopback ports and waiting for a server to listen.

Why the long cap: waiting is event-driven (poll until the port answers, return at once), so the cap
only decides when a server that never comes up is declared dead; a loaded 2-core CI box may take
many seconds to start one, and that must not fail a test.
"""

from __future__ import annotations

import socket
import time


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


#: How long a server may take to start listening before the test gives up on it (a hang guard).
READY_TIMEOUT = 120.0


def wait_listening(port: int, *, timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")
