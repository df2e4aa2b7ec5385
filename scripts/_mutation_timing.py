"""A pytest plugin for scripts/mutation.py, loaded in its coverage run: writes to ``$MUTATION_TIMING``
each test's duration and the third-party modules the tests loaded, and empties the memos of mudrika
and of the tests before each test.

Why: a mutant that loops must be stopped, and the right limit depends on how long the tests that
cover its line take on this machine (setup, call and teardown summed per test id).  The module list
lets the mutation server import those libraries once and fork a fresh pytest per mutant from there,
instead of paying the interpreter and import start-up for every mutant.

Why the memos are emptied: the body of a memoised function (``functools.lru_cache``/``cache`` at
module level) runs only for the first test that asks for its value, so coverage would attribute its
lines to that test alone, and a mutant there would run only that test, even when the test that checks
the value comes later.  The same holds for a test module's memoised fixture data (reports drawn once
for several tests).  Emptying them before each test makes every test that needs the value compute
it, and be selected for the mutants of the lines it runs.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import pytest

_OWN: tuple[str, ...] = ("mudrika", "tests", "conftest", "_mutation", "__main__", "__mp_main__")
_durations: dict[str, float] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("mudrika", "tests")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, functools._lru_cache_wrapper) and value.__module__ == name:
                value.cache_clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("MUTATION_TIMING")
    if target:
        modules = sorted(name for name in sys.modules if not name.split(".", 1)[0].startswith(_OWN))
        Path(target).write_text(
            json.dumps({"durations": _durations, "modules": modules}, sort_keys=True), encoding="utf-8"
        )
