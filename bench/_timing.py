"""Timing and reporting shared by the bench scripts: interleaved repetitions, median and min–max.

Why this shape: on a shared two-core machine one batch can be slowed by an unrelated process, and a
best-of minimum hides that while flattering whoever got the quiet moment.  So every function is timed
in ``repetitions`` batches of ``number`` calls, the batches of all functions interleaved (ours, the
anchor, ours, the anchor …) so that a disturbance hits them alike, and each row reports the median
batch with the fastest and slowest beside it.  Ratios are formed per repetition from the batches
that ran side by side, and reported the same way (median, min–max).

Bench scripts run as ``.venv/bin/python bench/bench_<area>.py``; they put this folder on ``sys.path``
and ``from _timing import ...``.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MIN_REPETITIONS",
    "Spread",
    "fmt",
    "measure",
    "measure_async",
    "ratio",
    "replace_section",
    "verdict",
]

MIN_REPETITIONS = 5
"""Every row is the median of at least this many repetitions (issue: medians with spread, >= 5)."""


@dataclass(frozen=True, slots=True)
class Spread:
    """Median and range of one quantity over repetitions (µs per call, a ratio, requests/s …)."""

    median: float
    low: float
    high: float
    samples: tuple[float, ...]

    @classmethod
    def of(cls, samples: Sequence[float]) -> Spread:
        if len(samples) < MIN_REPETITIONS:
            raise ValueError(f"need at least {MIN_REPETITIONS} samples, got {len(samples)}")
        return cls(statistics.median(samples), min(samples), max(samples), tuple(samples))


def _check(repetitions: int, number: int) -> None:
    if repetitions < MIN_REPETITIONS or number < 1:
        raise ValueError(f"repetitions must be >= {MIN_REPETITIONS} and number >= 1")


def measure(
    functions: dict[str, Callable[[], object]], *, repetitions: int, number: int | dict[str, int]
) -> dict[str, Spread]:
    """µs per call of each function: ``repetitions`` interleaved batches of ``number`` calls each.

    ``number`` may differ per function (a cheap cache hit needs more calls per batch than a network
    round trip to be timed well); the garbage collector runs before every batch, so no function pays
    for another's garbage.
    """
    counts = number if isinstance(number, dict) else dict.fromkeys(functions, number)
    for name in functions:
        _check(repetitions, counts[name])
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repetitions):
        for name, func in functions.items():
            calls = counts[name]
            gc.collect()
            start = time.perf_counter()
            for _ in range(calls):
                func()
            samples[name].append((time.perf_counter() - start) / calls * 1e6)
    return {name: Spread.of(values) for name, values in samples.items()}


def measure_async(
    functions: dict[str, Callable[[], Awaitable[object]]], *, repetitions: int, number: int
) -> dict[str, Spread]:
    """:func:`measure` for coroutine functions, all awaited call after call on one event loop."""
    _check(repetitions, number)

    async def run() -> dict[str, list[float]]:
        samples: dict[str, list[float]] = {name: [] for name in functions}
        for func in functions.values():
            await func()  # warm up outside the timed batches
        for _ in range(repetitions):
            for name, func in functions.items():
                gc.collect()
                start = time.perf_counter()
                for _ in range(number):
                    await func()
                samples[name].append((time.perf_counter() - start) / number * 1e6)
        return samples

    return {name: Spread.of(values) for name, values in asyncio.run(run()).items()}


def ratio(numerator: Spread, denominator: Spread) -> Spread:
    """Per-repetition ratio of two quantities measured side by side (batch i over batch i).

    With times, ``ratio(anchor, ours)`` is how many times faster ours is; with rates (requests/s),
    ``ratio(ours, anchor)`` is the share of the anchor's throughput.
    """
    if len(numerator.samples) != len(denominator.samples):
        raise ValueError("ratios pair repetitions; both sides need the same number of samples")
    return Spread.of([a / b for a, b in zip(numerator.samples, denominator.samples, strict=True)])


def fmt(spread: Spread, digits: int = 1, unit: str = "") -> str:
    """``median (min–max)`` with thousands separators: ``12.3 (11.9–13.0)``."""
    return f"{spread.median:,.{digits}f}{unit} ({spread.low:,.{digits}f}–{spread.high:,.{digits}f}{unit})"


def verdict(value: Spread, target: float, *, at_least: bool = True) -> str:
    """``met`` when the *median* reaches the target, else ``**not met**``; the range is shown beside it
    in the row, so a median that passes with a range straddling the target is visible as such."""
    passed = value.median >= target if at_least else value.median <= target
    if passed and (value.low < target if at_least else value.high > target):
        return "met (median; range straddles the target)"
    return "met" if passed else "**not met**"


def replace_section(path: Path, heading: str, text: str) -> None:
    """Replace the section of ``path`` that starts at ``heading`` (up to the next ``## `` heading), or
    append ``text``: scripts that publish one section with ``--write`` leave every other one alone."""
    document = path.read_text(encoding="utf-8") if path.exists() else "# Performance\n"
    start = document.find(heading)
    if start == -1:
        document = document.rstrip("\n") + "\n\n" + text
    else:
        end = document.find("\n## ", start + len(heading))
        document = document[:start] + text + ("\n" + document[end + 1 :] if end != -1 else "")
    path.write_text(document, encoding="utf-8")
