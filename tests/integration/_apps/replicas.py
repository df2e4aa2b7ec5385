"""Run an ASGI app factory as several uvicorn processes on free loopback ports (the "replicas")."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from tests._support.net import free_port
from tests._support.paths import REPO_ROOT
from tests._support.processes import stop_process

#: Seconds uvicorn keeps an idle connection open; clients must expire theirs sooner.
SERVER_KEEP_ALIVE = 60


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"replica exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(url, timeout=0.5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"replica at {url} not healthy after {timeout}s:\n{log.read_text(errors='replace')}")


@contextmanager
def serve_replicas(
    factory: str, *, env: Mapping[str, str], logdir: Path, count: int = 2, timeout: float = 120.0
) -> Iterator[list[str]]:
    """Start ``count`` uvicorn processes serving ``factory`` ("module:function"); yield their base URLs.

    Each replica must answer 200 on ``/health``.  The processes are terminated (then killed) on exit.
    """
    child_env = {**os.environ, **env, "PYTHONPATH": str(REPO_ROOT)}
    with ExitStack() as stack:
        started: list[tuple[str, subprocess.Popen[bytes], Path]] = []
        for i in range(count):
            port = free_port()
            log = logdir / f"replica-{i}.log"
            handle = stack.enter_context(log.open("wb"))
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    factory,
                    "--factory",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--log-level",
                    "warning",
                    "--no-access-log",
                    "--timeout-graceful-shutdown",
                    "5",
                    # Longer than any client's keep-alive expiry: the server must never close an idle
                    # connection at the moment a client reuses it (that race surfaces as ReadError).
                    "--timeout-keep-alive",
                    str(SERVER_KEEP_ALIVE),
                ],
                cwd=REPO_ROOT,
                env=child_env,
                stdout=handle,
                stderr=subprocess.STDOUT,
            )
            stack.callback(stop_process, proc, timeout=10)
            started.append((f"http://127.0.0.1:{port}", proc, log))
        for base, proc, log in started:
            _wait_healthy(f"{base}/health", proc, log, timeout)
        yield [base for base, _, _ in started]
