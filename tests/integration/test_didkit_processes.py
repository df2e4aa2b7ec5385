"""didkit resolution never crashes the process: every exit code is 0, 1 or 2.

Why separate processes: the crash this guards against happened at interpreter shutdown.  didkit
(pyo3-asyncio over tokio) completes its futures from a tokio worker that can still be inside the
interpreter when the main thread finishes; CPython then ends the worker mid-call and the process
aborts with ``Fatal Python error: PyGILState_Release`` (exit 134) or a segfault (139).  Only a
fresh process that exits right after resolving shows it, so this test starts many of them, through
the CLI and through the driver's sync and async entry points, for several methods.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("didkit", reason="didkit wheels exist for Python 3.10-3.12 only")

pytestmark = pytest.mark.integration

MUDRIKA = Path(sys.executable).with_name("mudrika")
#: Methods handed to didkit (none is implemented natively): two it resolves offline, one it does not know.
DIDS = (
    "did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a",
    "did:ethr:0xb9c5714089478a327f09197987f16f9e5d936e8a",
    "did:example:123456789abcdefghi",
)
_DRIVER_SCRIPT = """
import asyncio, sys
from mudrika.errors import MudrikaError
from mudrika.identity.did import parse_did
from mudrika.identity.resolver import DidkitDriver
did = parse_did(sys.argv[2])
try:
    if sys.argv[1] == "async":
        asyncio.run(DidkitDriver([did.method]).aresolve(did))
    else:
        DidkitDriver([did.method]).resolve(did)
except MudrikaError:
    sys.exit(1)
"""


def _commands() -> list[list[str]]:
    commands: list[list[str]] = []
    for did in DIDS:
        commands += [
            [str(MUDRIKA), "did", "resolve", did, "--didkit-method", did.split(":")[1], "--json"]
        ] * 10
        commands += [[sys.executable, "-c", _DRIVER_SCRIPT, "sync", did]] * 5
        commands += [[sys.executable, "-c", _DRIVER_SCRIPT, "async", did]] * 5
    # A malformed DID never reaches didkit: usage error.
    commands += [[str(MUDRIKA), "did", "resolve", "did:Pkh:eip155:1:0x00", "--json"]] * 3
    return commands


def _run(command: list[str]) -> tuple[int, str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stderr


def test_sixty_processes_resolving_through_didkit_all_exit_cleanly() -> None:
    commands = _commands()
    assert len(commands) >= 60
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(_run, commands))
    codes = [code for code, _ in outcomes]
    crashes = [
        (cmd[-2:], code, err[-300:])
        for cmd, (code, err) in zip(commands, outcomes, strict=True)
        if code not in (0, 1, 2)
    ]
    assert crashes == []
    assert not any("Fatal Python error" in err for _, err in outcomes)
    # did:pkh and did:ethr resolve (exit 0), did:example is not supported (1), the bad DID is usage (2).
    assert set(codes) == {0, 1, 2}
