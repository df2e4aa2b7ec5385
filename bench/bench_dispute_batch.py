"""Dispute batch: ``mudrika dispute verify`` over 1,000 bundles, ``--jobs 2`` beside ``--jobs 1``.

Target: on 2 cores, ``--jobs 2`` at least 1.8× as fast as ``--jobs 1`` (the anchor, the same command
in one process), measured side by side in one run.  Each row is the whole command as an analyst runs
it — a fresh ``.venv/bin/mudrika`` process reading a JSON Lines case file, verifying every bundle
offline against the trust root, streaming one line per bundle and a full report for every failure
(to a file, as off a terminal), and the summary — so start-up, reading and printing are all counted.
The batch mixes what a real one holds: genuine payments, amounts raised after signing, a case whose
nonce is another payment's, and a case without a nonce (UNANCHORED).

Run: .venv/bin/python bench/bench_dispute_batch.py [--bundles N] [--repetitions N] [--write docs/performance.md]
(prints a markdown section; ``--write`` replaces that section, and only it, in the given file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from tests._support.dispute_batch import batch_of  # noqa: E402
from tests._support.evidence import TRUST_ROOT  # noqa: E402

from _timing import MIN_REPETITIONS, Spread, fmt, measure, ratio, replace_section, verdict  # noqa: E402
from mudrika.payments.batch import BundleResult, Case, verify_bundles  # noqa: E402

TARGET = 1.8
HEADING = "## Dispute batch (bench/bench_dispute_batch.py)"
MUDRIKA = Path(sys.executable).with_name("mudrika")


def write_batch(directory: Path, jobs: list[tuple[bytes, Case]]) -> Path:
    """The batch as an analyst holds it: each bundle in a file, and the case file naming them."""
    bundles = directory / "bundles"
    bundles.mkdir()
    lines = []
    for index, (data, case) in enumerate(jobs):
        (bundles / f"{index:04d}.json").write_bytes(data)
        line = {"id": case.name, "bundle": f"bundles/{index:04d}.json"}
        if case.kb_nonce is not None:
            line["kb_nonce"] = case.kb_nonce
        lines.append(json.dumps(line))
    cases = directory / "cases.jsonl"
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return cases


def _runner(cases: Path, jobs: int, log: Path) -> Callable[[], object]:
    argv = [
        str(MUDRIKA), "dispute", "verify", "--cases", str(cases),
        "--trust-root", str(TRUST_ROOT), "--jobs", str(jobs),
    ]  # fmt: skip

    def run() -> object:
        with log.open("wb") as sink:
            finished = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=sink, check=False)
        if finished.returncode != 1:  # a mixed batch: some verdicts are not OK, none malformed
            raise RuntimeError(f"unexpected exit {finished.returncode}; see {log}")
        return finished

    return run


def _function_runners(
    jobs: list[tuple[bytes, Case]], pool: ProcessPoolExecutor
) -> dict[str, Callable[[], object]]:
    """The batch's pure function alone (no process start-up, no reading, no printing): the share of
    the command that a pool can spread, serial beside a warm pool of two, on the same bundles."""
    root = TRUST_ROOT.read_bytes()
    chunks = [jobs[start : start + 4] for start in range(0, len(jobs), 4)]

    def serial() -> object:
        return verify_bundles(jobs, trust_root=root)

    def pooled() -> object:
        return [result for part in pool.map(_chunk, chunks, [root] * len(chunks)) for result in part]

    def burn_serial() -> object:
        return [_burn(_BURN) for _ in range(_BURN_TASKS)]

    def burn_pooled() -> object:
        return list(pool.map(_burn, [_BURN] * _BURN_TASKS))

    return {
        "function, 1 process": serial,
        "function, pool of 2": pooled,
        "capacity, 1 process": burn_serial,
        "capacity, pool of 2": burn_pooled,
    }


#: A pure-CPU task (no I/O, nothing shared) to show how much of two cores the run really had.
_BURN = 200_000
_BURN_TASKS = 40


def _burn(count: int) -> int:
    total = 0
    for value in range(count):
        total += value * value
    return total


def _chunk(jobs: list[tuple[bytes, Case]], root: bytes) -> list[BundleResult]:
    return verify_bundles(jobs, trust_root=root)


def _seconds(spread: Spread) -> Spread:
    return Spread.of([sample / 1e6 for sample in spread.samples])


def section(bundles: int, repetitions: int) -> str:
    with tempfile.TemporaryDirectory(prefix="mudrika-bench-") as folder:
        directory = Path(folder)
        jobs = batch_of(bundles)
        cases = write_batch(directory, jobs)
        one = _runner(cases, 1, directory / "jobs1.log")
        two = _runner(cases, 2, directory / "jobs2.log")
        one()
        two()  # warm-up, untimed: page cache, bytecode
        with ProcessPoolExecutor(max_workers=2) as pool:
            functions = _function_runners(jobs, pool)
            for run in functions.values():
                run()  # warm-up: the workers' imports and caches
            rows = {"--jobs 1 (anchor)": one, "--jobs 2": two, **functions}
            results = measure(rows, repetitions=repetitions, number=1)
        summary = (directory / "jobs2.log").read_text(encoding="utf-8").splitlines()
    anchor = _seconds(results["--jobs 1 (anchor)"])
    pooled = _seconds(results["--jobs 2"])
    speedup = ratio(anchor, pooled)
    serial_fn = _seconds(results["function, 1 process"])
    pooled_fn = _seconds(results["function, pool of 2"])
    speedup_fn = ratio(serial_fn, pooled_fn)
    fixed = Spread.of([a - f for a, f in zip(anchor.samples, serial_fn.samples, strict=True)])
    capacity = ratio(_seconds(results["capacity, 1 process"]), _seconds(results["capacity, pool of 2"]))
    rate_one = Spread.of([bundles / sample for sample in anchor.samples])
    rate_two = Spread.of([bundles / sample for sample in pooled.samples])
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    table = [line for line in summary if line.startswith(("SUMMARY", "  "))][-8:]
    lines = [
        HEADING,
        "",
        f"`mudrika dispute verify --cases FILE --trust-root FILE --jobs N` over {bundles:,} bundles (genuine, "
        "amount raised after signing, another payment's nonce, no nonce), the whole command in a fresh "
        "process, stderr to a file (one line per bundle, full reports for the failures, the summary). "
        f"Median (min–max) of {repetitions} interleaved repetitions after one warm-up each; the speed-up "
        f"is formed per repetition from runs side by side. {os.cpu_count()} cores; load average when the "
        f"run ended: {load}.",
        "",
        "| run | s per batch | bundles/s | speed-up over `--jobs 1` | target ≥ 1.8× |",
        "|---|---:|---:|---:|---|",
        f"| `--jobs 1` (anchor) | {fmt(anchor, 2)} | {fmt(rate_one, 0)} | 1.00 | (anchor) |",
        f"| `--jobs 2` | {fmt(pooled, 2)} | {fmt(rate_two, 0)} | {fmt(speedup, 2)} | "
        f"{verdict(speedup, TARGET)} |",
        f"| `verify_bundle_bytes` alone, 1 process (reference) | {fmt(serial_fn, 2)} | | 1.00 | (reference) |",
        f"| `verify_bundle_bytes` alone, warm pool of 2 (reference) | {fmt(pooled_fn, 2)} | | {fmt(speedup_fn, 2)} | "
        "(reference) |",
        f"| machine capacity: a pure-CPU loop, pool of 2 vs 1 process (reference) | | | {fmt(capacity, 2)} | "
        "(reference) |",
        "",
        f"What a pool cannot spread: `--jobs 1` minus the function alone is {fmt(fixed, 2)} s per batch (the "
        "interpreter and imports, reading the case file and the bundles, printing) — with the function at "
        f"{serial_fn.median:.2f} s, Amdahl's law caps `--jobs 2` at "
        f"{anchor.median / (fixed.median + serial_fn.median / 2):.2f}× on this run.",
        "",
        "The batch's own summary (last run of `--jobs 2`):",
        "",
        "```text",
        *table,
        "```",
        "",
    ]
    if speedup.median < TARGET:
        lines.append(
            f"Target **not met**: `--jobs 2` is {speedup.median:.2f}× `--jobs 1` (median), below {TARGET}×."
        )
    else:
        lines.append(f"Target met: `--jobs 2` is {speedup.median:.2f}× `--jobs 1` (median).")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bundles", type=int, default=1000, help="bundles in the batch")
    parser.add_argument("--repetitions", type=int, default=MIN_REPETITIONS, help="timed runs per row (>= 5)")
    parser.add_argument("--write", type=Path, help="replace this section in the given markdown file")
    args = parser.parse_args()
    if args.repetitions < MIN_REPETITIONS or args.bundles < 1:
        parser.error(f"--repetitions must be at least {MIN_REPETITIONS} and --bundles at least 1")
    text = section(args.bundles, args.repetitions)
    print(text)
    if args.write is not None:
        replace_section(args.write, HEADING, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
