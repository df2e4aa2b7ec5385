"""Run every benchmark in one go and print (or write) the performance document from what was measured.

Why a runner: the numbers in docs/performance.md must come from one run on one machine, side by side
with their anchors, never typed in by hand.  Each ``bench_*.py`` prints a markdown section on stdout;
this script runs them one after another (never in parallel, so they do not steal each other's cores),
prefixes the machine description and the method, and prints the document.

It never overwrites the committed docs by accident: ``--out FILE`` writes FILE but refuses
docs/performance.md, which is written only with ``--write-docs``.  When writing, sections other
engineers maintain with their own scripts ("CLI start-up", "Pre-authentication memory", "Dispute
batch", written by ``bench/bench_dispute_batch.py --write``) are carried over from the existing file if
this run did not produce them.

Usage: .venv/bin/python bench/run_all.py [--only NAME ...] [--out FILE | --write-docs | --summary]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DOCS = ROOT / "docs" / "performance.md"

ORDER = [
    "bench_jcs",
    "bench_large_inputs",
    "bench_identity",
    "bench_payments",
    "bench_tokens",
    "bench_policy",
    "bench_replay",
    "bench_httpsig",
    "bench_webbotauth",
    "bench_statuslist",
    "bench_webvh",
    "bench_middleware_http",
    "bench_cli_startup",
    "bench_preauth_memory",
]
#: Headings of sections kept from the existing document when this run does not produce them.
PRESERVED = (
    "## CLI start-up",
    "## Pre-authentication memory",
    "## Dispute batch",
    "## Targets not met, and why",
)


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


def _sections(text: str) -> dict[str, str]:
    """Level-2 sections of a markdown document by heading line (each with its body)."""
    parts = re.split(r"(?m)^(?=## )", text)
    return {part.splitlines()[0].strip(): part.rstrip() + "\n" for part in parts if part.startswith("## ")}


_VERDICT = re.compile(r"^(met( \(.*\))?|\*\*not met\*\*)$")


def _measured_column(header: list[str]) -> int:
    """The column a table's ``target …`` heading is about: a speed-up target (``≥ 1.8×``) speaks of
    the speed-up column, never of the seconds beside it; any other target of the first measurement."""
    if header[-1].rstrip().endswith("×"):
        for index, name in enumerate(header[:-1]):
            if "speed-up" in name or "×" in name:
                return index
    return 1


_RATIO_HEADINGS = ("ratio", "×", "÷", "share", "speed-up")


def _measured_cell(header: list[str], cells: list[str], target: str) -> str:
    """The cell a row's target speaks of.  A ratio target (``≥ 4×``) names the last ratio column
    before it (a per-core throughput may stand between); any other target the cell just before it,
    or, when that is empty, the row's first measurement."""
    if "×" in target:
        for index in range(len(header) - 3, 0, -1):
            if any(word in header[index] for word in _RATIO_HEADINGS) and cells[index]:
                return cells[index]
    return cells[-3] or cells[1]


def _summary(sections: list[str]) -> str:
    """One line per table row that carries a verdict -- its section, label, measurement, target and
    verdict -- copied from the tables below, so the summary cannot disagree with them.  Tables of this
    runner end in ``| ... | measurement | target | verdict |`` (see :func:`_measured_cell`); a table
    without a ``target`` column (another engineer's section) gives its second cell as the measurement
    and its last column's heading as the target.  A bench may print several sections: each row is
    named by the heading above it, and a row labelled by a bare number by its column's heading too."""
    lines = [
        "## Summary of the targets\n",
        "| section | row | measurement | target | verdict |",
        "|---|---|---:|---|---|",
    ]
    for section in sections:
        title = ""
        header: list[str] = []
        for line in section.splitlines():
            if line.startswith("## "):
                title = line.removeprefix("## ").split(" (bench/")[0]
            if not line.startswith("|"):
                header = []
                continue
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not header:
                header = cells
                continue
            if len(cells) < 3 or not _VERDICT.match(cells[-1]):
                continue
            if len(header) >= 4 and header[-2] == "target":
                target = cells[-2]
                measured = _measured_cell(header, cells, target)
            else:
                measured, target = cells[_measured_column(header)], header[-1]
            label = f"{header[0]} {cells[0]}" if cells[0].replace(",", "").isdigit() else cells[0]
            lines.append(f"| {title} | {label} | {measured} | {target} | {cells[-1]} |")
    return "\n".join(lines) + "\n"


def _rewrite_summary() -> None:
    """Replace the summary of the committed document by the one its own tables give."""
    document = DOCS.read_text(encoding="utf-8")
    parts = document.split("\n## ")
    sections = ["## " + part for part in parts[1:] if not part.startswith("Summary of the targets")]
    start = document.index("## Summary of the targets")
    end = document.index("\n## ", start + 1)
    DOCS.write_text(document[:start] + _summary(sections) + document[end:], encoding="utf-8")
    print(f"rewrote the summary of {DOCS.relative_to(ROOT)}", file=sys.stderr)


def _carried_over(produced: str) -> list[str]:
    if not DOCS.exists():
        return []
    existing = _sections(DOCS.read_text(encoding="utf-8"))
    new = _sections(produced)
    kept = []
    for heading, body in existing.items():
        if heading.startswith(PRESERVED) and not any(h.startswith(heading) for h in new):
            kept.append(body)
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="benchmark module names to run")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--out", type=Path, default=None, help="write the document here (not the docs)")
    target.add_argument("--write-docs", action="store_true", help=f"write {DOCS.relative_to(ROOT)}")
    target.add_argument(
        "--summary",
        action="store_true",
        help=f"only rewrite the summary of {DOCS.relative_to(ROOT)} from the tables in it (after a "
        "section was replaced by its own script's --write)",
    )
    args = parser.parse_args(argv)
    if args.summary:
        _rewrite_summary()
        return 0
    if args.out is not None and args.out.resolve() == DOCS.resolve():
        parser.error(f"--out refuses {DOCS.relative_to(ROOT)}; pass --write-docs to replace it")
    names = [n for n in ORDER if (BENCH_DIR / f"{n}.py").exists() and (not args.only or n in args.only)]
    sections: list[str] = []
    started_all = time.perf_counter()
    sys.path.insert(0, str(BENCH_DIR))
    import _ceiling  # measured once per run, before any bench, so every row states the same ceiling

    environment = {**os.environ, _ceiling.ENVIRONMENT: _ceiling.export()}
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
            env=environment,
        )
        elapsed = time.perf_counter() - started
        if proc.returncode != 0:
            sections.append(
                f"## {name}\n\nFAILED (exit {proc.returncode}):\n\n```\n{proc.stderr[-2000:]}\n```\n"
            )
        else:
            sections.append(proc.stdout.strip() + f"\n\n<sub>{name}: {elapsed:.0f} s wall</sub>\n")
    total = time.perf_counter() - started_all
    produced = "\n".join(sections)
    carried = _carried_over(produced) if args.write_docs else []
    carried_note = (
        " except the sections carried over from the previous document because this run did not "
        "produce them ("
        + ", ".join(f"“{body.splitlines()[0][3:].split(' (')[0]}”" for body in carried)
        + "), which say how their own scripts measured them"
        if carried
        else ""
    )
    header = (
        "# Performance\n\n"
        "Written by `bench/run_all.py --write-docs` from one run; every number below was measured in "
        f"that run{carried_note}, each anchor beside ours on the same machine, nothing typed in by hand.\n\n"
        f"- when: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; whole run {total:.0f} s\n"
        f"- machine: {_machine()} — shared with other work, so single batches can be disturbed\n"
        f"- this machine's ceiling (`openssl speed`, one core, bench/_ceiling.py): "
        f"{_ceiling.limits()['ES256']:,.0f} ES256, {_ceiling.limits()['EdDSA']:,.0f} Ed25519 and "
        f"{_ceiling.limits()['RS256']:,.0f} RS256 verifies per second; rows that verify signatures state "
        "their throughput per core beside the most those verifies allow\n"
        "- cache state: the headline of every section is **cold** (distinct inputs, every cache of ours "
        "cleared or bypassed); rows that hit a cache say *warm* in their label\n"
        "- method (bench/_timing.py): every figure is the **median (min–max)** of at least 5 "
        "repetitions; in each repetition ours and its anchors run one after another (interleaved), "
        "and every ratio is formed per repetition from batches that ran side by side. A verdict is "
        "*met* only when the median reaches the target; when the range straddles the target the row "
        "says so; a row that fails says **not met**. Nothing is rounded in our favour: ratios are "
        "printed to two decimals and compared unrounded.\n\n"
    )
    document = header + _summary(sections + carried) + "\n" + produced
    if args.write_docs:
        document = "\n".join([document.rstrip() + "\n", *carried])
        DOCS.write_text(document, encoding="utf-8")
        print(f"wrote {DOCS.relative_to(ROOT)}", file=sys.stderr)
    elif args.out is not None:
        args.out.write_text(document, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(document)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
