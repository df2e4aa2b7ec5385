"""The atheris harnesses in ``fuzz/`` run in every test run, with or without atheris installed.

Each harness's ``TestOneInput`` is fed a few hundred byte strings (its row's seeds, deterministic
random bytes, and the seeds cut short and with bytes flipped), exactly as libFuzzer would call it:
it must return for every one (accepted errors are swallowed by the harness, anything else is a
crash).  Every row of the table must have its harness, and the seed-corpus writer must write the
seeds where the README says.  When atheris is installed, one harness also runs under it for real.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fuzz.seeds import write_seeds
from fuzz.targets import TARGETS
from tests._support.paths import REPO_ROOT

pytestmark = pytest.mark.security

HARNESSES = sorted(path.stem for path in (REPO_ROOT / "fuzz").glob("fuzz_*.py"))


def _inputs(seeds: list[bytes], count: int = 300) -> list[bytes]:
    """Seeds, their truncations and one-bit flips, then random bytes: ``count`` inputs in all."""
    rng = random.Random(9421)
    inputs = list(seeds)
    while len(inputs) < count:
        seed = bytearray(rng.choice(seeds))
        choice = rng.randrange(3)
        if choice == 0 and len(seed) > 1:
            del seed[rng.randrange(1, len(seed)) :]
        elif choice == 1 and len(seed) > 1:
            seed[rng.randrange(1, len(seed))] ^= 1 << rng.randrange(8)
        else:
            seed = bytearray(rng.randbytes(rng.randrange(64)))
        inputs.append(bytes(seed))
    return inputs


def test_every_row_has_a_harness() -> None:
    assert sorted(f"fuzz_{target.name}" for target in TARGETS) == HARNESSES


@pytest.mark.parametrize("harness", HARNESSES)
def test_harness_takes_a_few_hundred_inputs(harness: str) -> None:
    module = importlib.import_module(f"fuzz.{harness}")
    test_one_input: Callable[[bytes], None] = module.TestOneInput
    target = next(target for target in TARGETS if target.name == module.NAME)
    for data in _inputs(target.seeds()):
        test_one_input(data)


def test_a_harness_reports_an_error_outside_the_accepted_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness swallows only its row's accepted errors (otherwise atheris would find nothing)."""
    from fuzz import _harness

    module = importlib.import_module("fuzz.fuzz_jcs")
    target = _harness._target("jcs")

    def broken(data: bytes) -> object:
        raise TypeError("a bug")

    monkeypatch.setattr(_harness, "_target", lambda name: dataclasses.replace(target, call=broken))
    with pytest.raises(TypeError):
        module.TestOneInput(b"{}")


def test_seeds_are_written_once_per_content(tmp_path: Path) -> None:
    first = write_seeds(tmp_path)
    assert first == sum(len(set(target.seeds())) for target in TARGETS)
    assert write_seeds(tmp_path) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(target.name for target in TARGETS)


def test_a_harness_runs_under_atheris(tmp_path: Path) -> None:
    """The real thing, briefly: libFuzzer drives the jcs harness for a fixed number of runs."""
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    write_seeds(corpus)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)])}
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "fuzz.fuzz_jcs",
            str(corpus / "jcs"),
            "-runs=500",
            f"-artifact_prefix={tmp_path}/",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "Done 500 runs" in completed.stderr
