"""The mutation server of scripts/mutation.py: imports the test run's libraries once, then forks a
fresh pytest for each mutant.

Why a fork server: a mutant's own tests take tens of milliseconds, while starting Python, pytest and
the third-party libraries takes a second or more; paid per mutant, start-up would be most of the run.
Only libraries are imported here — never ``mudrika`` or the tests — so every child imports the
package afresh from the sandbox, with the mutant its parent process just wrote.

Protocol (one JSON object per line): the parent sends ``{"tests": [...], "timeout": seconds}``; this
process answers ``{"code": pytest exit code}`` or ``{"code": null}`` when the child ran out of time
(then its whole process group is killed).  Start-up ends with ``{"ready": n}``, n modules imported.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import time
from importlib.metadata import entry_points

import pytest

_ARGS = ["-q", "-x", "--no-header", "-W", "error", "-p", "no:cacheprovider", "-p", "no:cov"]
# pytest rewrites the asserts of plugin modules; those the libraries already imported cannot be, and
# pytest says so with a warning that -W error would turn into a failure of every run.
_ARGS += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]


#: Imported first, whatever the coverage run had loaded: Hypothesis's pytest plugin, then the library.
#: The plugin must come first: it records the start of Hypothesis's initialisation and warns (an
#: error under -W error) when the library was already used before it; and a child that imported the
#: library itself would have pytest rewrite it module by module, slower than the mutant's tests.
_ALWAYS: tuple[str, ...] = ("_hypothesis_pytestplugin", "hypothesis", "hypothesis.strategies")


def _preload(names: list[str]) -> int:
    plugins = {entry.value.split(":")[0].split(".")[0] for entry in entry_points(group="pytest11")}
    loaded = 0
    for name in [*_ALWAYS, *names]:
        top = name.split(".", 1)[0]
        # Private top-level modules (C accelerators such as _asyncio) are left to their public
        # package: importing _asyncio before asyncio breaks every asyncio test after the fork.
        skipped = top in plugins or top.startswith(("_", "$"))
        if (skipped and name not in _ALWAYS) or name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S112 (a module that needs its parent's context: skip it)
            continue
        loaded += 1
    return loaded


def _run(tests: list[str], timeout: float) -> int | None:
    pid = os.fork()
    if pid == 0:  # the child: its own process group, silent, one pytest session, then exit
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            code = int(pytest.main([*_ARGS, *tests]))
        except BaseException:
            code = 3
        os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.005)


def main() -> None:
    modules: list[str] = json.loads(sys.stdin.readline())
    print(json.dumps({"ready": _preload(modules)}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        code = _run(list(request["tests"]), float(request["timeout"]))
        print(json.dumps({"code": code}), flush=True)


if __name__ == "__main__":
    main()
