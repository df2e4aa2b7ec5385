"""CLI start-up: whole-process time of ``mudrika --help`` and every ``mudrika <command> --help``.

Target: each under 250 ms on this machine.  The anchor is ``python -c pass`` (the interpreter
starting and exiting, the floor no Python CLI can go below), measured beside ours in the same run;
``python -c "import click"`` is shown too, as the floor of any click-based CLI.  Every row is a fresh
process started the way a user starts it (``.venv/bin/mudrika``, the installed console script), timed
from ``subprocess.run`` to exit; each command runs once untimed first (warm file cache), then the
repetitions of all rows are interleaved (bench/_timing.py) so a disturbance hits them alike.

Run: .venv/bin/python bench/bench_cli_startup.py [--repetitions N] [--write docs/performance.md]
(prints a markdown section; ``--write`` replaces that section, and only it, in the given file).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from _timing import Spread, fmt, measure, replace_section, verdict  # noqa: E402
from mudrika.cli import COMMANDS  # noqa: E402

TARGET_MS = 250.0
HEADING = "## CLI start-up (bench/bench_cli_startup.py)"
MUDRIKA = Path(sys.executable).with_name("mudrika")
EAGER_LABEL = "importing every command's implementation up front (reference)"
#: What the commands import when they run: before the groups were lazy, every start paid for these.
IMPLEMENTATIONS = (
    "mudrika.identity.csr",
    "mudrika.identity.provision",
    "mudrika.identity.resolver",
    "mudrika.payments.bundle",
    "mudrika.payments.chain",
    "mudrika.payments.signing",
    "mudrika.payments.trustroot",
    "mudrika.stores.replay",
    "mudrika.trust.a2a.cards",
    "mudrika.trust.policy",
    "rich.console",
)


def _rows() -> dict[str, list[str]]:
    python = sys.executable
    rows = {
        "python -c pass (anchor)": [python, "-c", "pass"],
        'python -c "import click"': [python, "-c", "import click"],
        EAGER_LABEL: [python, "-c", "import " + ", ".join(IMPLEMENTATIONS)],
        "mudrika --help": [str(MUDRIKA), "--help"],
    }
    for name in sorted(COMMANDS):
        rows[f"mudrika {name} --help"] = [str(MUDRIKA), name, "--help"]
    return rows


def _runner(argv: list[str]) -> Callable[[], object]:
    # Bytecode is cached as on a user's machine: the warm-up run writes __pycache__ (an environment
    # that forbids it would make every run compile mudrika's sources again).
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}

    def run() -> object:
        return subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=environment
        )

    return run


def _milliseconds(spread: Spread) -> Spread:
    return Spread.of([sample / 1000 for sample in spread.samples])


def section(repetitions: int) -> str:
    rows = _rows()
    runners = {label: _runner(argv) for label, argv in rows.items()}
    for run in runners.values():
        run()  # warm-up, untimed: the first start pays for a cold page cache and .pyc writing
    results = {
        label: _milliseconds(spread)
        for label, spread in measure(runners, repetitions=repetitions, number=1).items()
    }
    anchor = results["python -c pass (anchor)"]
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    lines = [
        HEADING,
        "",
        "Whole-process wall time of each command: a fresh process per run, started as a user starts it "
        f"(`.venv/bin/mudrika`), median (min–max) of {repetitions} interleaved repetitions after one "
        "warm-up run each (which also caches bytecode, as any second run on a user's machine would); "
        "the anchor `python -c pass` ran beside them. Target: each `--help` under "
        f"{TARGET_MS:.0f} ms, judged on the median (the range beside it shows the slowest run). "
        f"Load average when the run ended: {load} on {os.cpu_count()} cores.",
        "",
        f"| command | ms | median minus anchor (ms) | target < {TARGET_MS:.0f} ms |",
        "|---|---:|---:|---|",
    ]
    targets = {label: spread for label, spread in results.items() if label.startswith("mudrika")}
    for label, spread in results.items():
        if label in targets:
            met = verdict(spread, TARGET_MS, at_least=False)
        else:
            met = "(anchor)" if spread is anchor else "(reference)"
        lines.append(f"| `{label}` | {fmt(spread)} | {spread.median - anchor.median:+.1f} | {met} |")
    missed = [label for label, spread in targets.items() if spread.median >= TARGET_MS]
    slow = [label for label, spread in targets.items() if spread.high >= TARGET_MS]
    lines.append("")
    if missed:
        lines.append("Target **not met** (median) for: " + ", ".join(f"`{label}`" for label in missed) + ".")
    else:
        lines.append(f"Target met: every `--help` median is under {TARGET_MS:.0f} ms.")
    if slow:
        lines.append(
            f"Single runs at or over {TARGET_MS:.0f} ms (a busy moment on the machine, or a real regression"
            " if the median moves too): " + ", ".join(f"`{label}`" for label in slow) + "."
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repetitions", type=int, default=11, help="timed runs per row (>= 7)")
    parser.add_argument("--write", type=Path, help="replace this section in the given markdown file")
    args = parser.parse_args()
    if args.repetitions < 7:
        parser.error("--repetitions must be at least 7")
    text = section(args.repetitions)
    print(text)
    if args.write is not None:
        replace_section(args.write, HEADING, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
