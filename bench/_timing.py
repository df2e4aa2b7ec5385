"""Timing shared by the bench scripts: interleaved batches, best batch kept.

Bench scripts run as ``.venv/bin/python bench/bench_<area>.py``; they put this folder on ``sys.path``
and ``from _timing import best_us``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["best_us"]


def best_us(functions: dict[str, Callable[[], object]], rounds: int, number: int) -> dict[str, float]:
    """Microseconds per call of each function: batches of ``number`` calls timed with
    ``time.perf_counter``, every function's batch interleaved in each of ``rounds`` rounds, and the best
    (least disturbed by other processes) batch reported."""
    best = {name: float("inf") for name in functions}
    for _ in range(rounds):
        for name, func in functions.items():
            start = time.perf_counter()
            for _ in range(number):
                func()
            best[name] = min(best[name], (time.perf_counter() - start) / number * 1e6)
    return best
