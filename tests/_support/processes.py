"""Stopping the child processes tests and benchmarks start (servers on 127.0.0.1)."""

from __future__ import annotations

import subprocess
from typing import Any


def stop_process(proc: subprocess.Popen[Any], *, timeout: float) -> None:
    """Ask ``proc`` to exit (SIGTERM), and kill it if it has not within ``timeout`` seconds.

    A server gets the chance to shut down cleanly first; one that hangs must still not outlive the
    test or benchmark that started it. A process that already exited is left alone.
    """
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
