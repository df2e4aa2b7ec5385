"""What every atheris harness in this folder shares: run one input through one row of the table.

Why mudrika is imported lazily here: atheris instruments only modules imported inside
``atheris.instrument_imports()``, so :func:`main` imports the table (and, by running the row's
seeds once, every module the row imports lazily) inside that block.  Importing this module needs
neither atheris nor pytest; the harnesses' ``TestOneInput`` also runs without atheris, which is how
``tests/security/test_fuzz_harnesses.py`` exercises them in every test run.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fuzz.targets import Target

__all__ = ["main", "run_one"]


@functools.cache
def _target(name: str) -> Target:
    from fuzz.targets import by_name

    return by_name(name)


def run_one(name: str, data: bytes) -> None:
    """One input through row ``name``: its accepted errors are the parser doing its job; any other
    exception propagates, and atheris reports it as a crash with the input that caused it."""
    target = _target(name)
    try:
        target.call(data)
    except target.accepted:
        return


def main(name: str, test_one_input: Callable[[bytes], None]) -> None:
    """``python -m fuzz.fuzz_<name> [corpus dirs] [libFuzzer flags]``: instrument mudrika, then fuzz."""
    import atheris

    with atheris.instrument_imports(include=["mudrika", "fuzz"]):
        target = _target(name)
        for seed in target.seeds():
            run_one(name, seed)
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
