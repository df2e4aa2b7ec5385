"""Run every benchmark in one go and write docs/performance.md from what was measured.

Why a runner: the numbers in docs/performance.md must come from one run on one machine, side by side
with their anchors, never typed in by hand.  Each ``bench_*.py`` prints a markdown section on stdout;
this script runs them one after another (never in parallel, so they do not steal each other's cores),
prefixes the machine description, and writes the document.

Usage: .venv/bin/python bench/run_all.py [--only NAME ...] [--out docs/performance.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent

ORDER = [
    "bench_jcs",
    "bench_identity",
    "bench_payments",
    "bench_tokens",
    "bench_policy",
    "bench_replay",
    "bench_httpsig",
    "bench_middleware_http",
]


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), "
        f"Python {platform.python_version()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="benchmark module names to run")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    args = parser.parse_args(argv)
    names = [n for n in ORDER if (BENCH_DIR / f"{n}.py").exists() and (not args.only or n in args.only)]
    sections: list[str] = []
    for name in names:
        started = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        proc = subprocess.run(
            [sys.executable, str(BENCH_DIR / f"{name}.py")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
        )
        elapsed = time.perf_counter() - started
        if proc.returncode != 0:
            sections.append(
                f"## {name}\n\nFAILED (exit {proc.returncode}):\n\n```\n{proc.stderr[-2000:]}\n```\n"
            )
        else:
            sections.append(proc.stdout.strip() + f"\n\n<sub>{name}: {elapsed:.0f} s wall</sub>\n")
    header = (
        "# Performance\n\n"
        "Written by `bench/run_all.py` from one run; every number below was measured in that run, "
        "with each anchor measured beside ours on the same machine. Re-run with "
        "`.venv/bin/python bench/run_all.py`.\n\n"
        f"- when: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC\n- machine: {_machine()}\n"
        "- method: best of several repeats of `time.perf_counter` loops unless a section says otherwise; "
        "ratio > 1 means mudrika is faster than the anchor.\n\n"
    )
    args.out.write_text(header + "\n".join(sections))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
