"""A real ``redis-server`` on a free loopback port, for integration tests and the replay benchmark.

The server keeps nothing on disk (``--save ''``, no AOF) and runs from a temporary directory.  When
``redis-server`` is missing the fixture skips, except under CI (``$CI`` set), where it fails so a CI
run cannot silently skip the distributed replay tests.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests._support.net import READY_TIMEOUT, free_port
from tests._support.processes import stop_process

__all__ = ["RedisServer", "private_redis_server", "redis_server", "require_redis_executable"]


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process; ``stop()`` and ``start()`` restart it on the same port."""

    def __init__(self, executable: str, port: int, workdir: Path, extra_args: Sequence[str] = ()) -> None:
        self.executable = executable
        self.port = port
        self.workdir = workdir
        self.extra_args = list(extra_args)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, *, timeout: float = READY_TIMEOUT) -> None:
        if self.running:
            return
        self._proc = subprocess.Popen(
            [
                self.executable,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
                "--daemonize",
                "no",
                "--dir",
                str(self.workdir),
                "--loglevel",
                "warning",
                *self.extra_args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.workdir,
        )
        deadline = time.monotonic() + timeout
        while not _ping(self.port):
            if self._proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self._proc.returncode} on port {self.port}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"redis-server did not answer PING on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_process(proc, timeout=5)


def redis_executable() -> str | None:
    return shutil.which("redis-server")


def start_redis_server() -> RedisServer:
    """Start a server outside pytest (the benchmark); the caller stops it and removes ``workdir``."""
    executable = redis_executable()
    if executable is None:
        raise RuntimeError("redis-server is not installed (scripts/setup.sh installs it)")
    server = RedisServer(executable, free_port(), Path(tempfile.mkdtemp(prefix="mudrika-redis-")))
    server.start()
    return server


def require_redis_executable() -> str:
    """The ``redis-server`` to start for a test; the test is skipped without one, except on CI,
    where it fails: CI must never pass by skipping the Redis tests."""
    executable = redis_executable()
    if executable is None:
        message = "redis-server is not installed; scripts/setup.sh installs it"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must not skip the Redis tests)")
        pytest.skip(message)
    return executable


@contextmanager
def private_redis_server(workdir: Path, extra_args: Sequence[str] = ()) -> Iterator[RedisServer]:
    """A Redis server of the test's own (started), stopped on exit."""
    server = RedisServer(require_redis_executable(), free_port(), workdir, extra_args)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with private_redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server
