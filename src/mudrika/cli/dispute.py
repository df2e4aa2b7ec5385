"""``mudrika dispute verify``: re-verify AP2 chains from evidence bundles, offline, at the evidence time.

Why a separate command: a dispute is decided on the key material and the expectations that held when
the payment was made, never on what a resolver says today.  So this command reads keys only from the
bundle (``mudrika.evidence/v1``, see docs/payments.md), never opens a network connection, and
evaluates at ``--at`` (default: the bundle's ``evidence_time``).

Exit codes: 0 every check of every bundle passed; 1 a check failed; 2 a bundle is malformed or the
command line is wrong.  The human summary (a table of checks) goes to stderr; ``--json`` prints the
report (or, for several bundles, ``{"results": [...]}``) on stdout; ``--html FILE`` writes a
self-contained HTML report (one bundle only).
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mudrika.cli._common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, emit_json, err
from mudrika.crypto.keystore import write_file_atomic
from mudrika.errors import InvalidInput
from mudrika.payments.bundle import inspect_bundle, load_bundle
from mudrika.payments.chain import VerificationReport, render_html
from mudrika.payments.models import parse_timestamp

__all__ = ["dispute_group", "parse_time_option", "print_report", "write_html"]

_STATUS_STYLE = {"passed": "green", "failed": "bold red", "skipped": "dim"}


def parse_time_option(text: str | None, name: str = "--at") -> datetime | None:
    """An ISO 8601 time with a UTC offset (``2025-10-01T12:21:10Z``), or ``None`` when not given."""
    if text is None:
        return None
    try:
        return parse_timestamp(text)
    except InvalidInput as exc:
        raise click.BadParameter(f"{exc.message} (use e.g. 2025-10-01T12:21:10Z)", param_hint=name) from None


def print_report(report: VerificationReport, *, title: str) -> None:
    """The human summary on stderr: a table of every check, then the verdict.

    Values come from the parties to the dispute, so every cell is a plain :class:`rich.text.Text`:
    a merchant name such as ``[red]OK[/]`` is shown as typed, never read as console markup.
    """
    console = Console(stderr=True, highlight=False)
    table = Table(title=Text(title))
    # Ids and statuses never wrap: scripts and people grep for them.
    table.add_column("status", no_wrap=True)
    table.add_column("check", no_wrap=True)
    for column in ("party", "expected", "got"):
        table.add_column(column, overflow="fold")
    for check in report.checks:
        data = check.to_dict()
        got = data["got"] or ""
        if check.failed and data["detail"]:
            got = f"{got} ({data['detail']})" if got else data["detail"]
        table.add_row(
            Text(check.status, style=_STATUS_STYLE[check.status]),
            Text(check.id),
            Text(check.party),
            Text(data["expected"] or ""),
            Text(got),
        )
    console.print(table)
    counts = report.to_dict()["counts"]
    verdict = "OK: every check passed" if report.ok else "FAILED"
    err(
        f"{verdict}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped "
        f"(evaluated at {report.evaluated_at}, {report.mode} keys)"
    )


def write_html(report: VerificationReport, path: Path, *, title: str) -> None:
    write_file_atomic(path, render_html(report, title=title).encode("utf-8"), force=True, private_dir=False)
    err(f"wrote {path}")


def _verify_one(path: str, at: datetime | None) -> dict[str, Any]:
    """Worker: one bundle → ``{"path", "report"}`` or ``{"path", "error"}`` (picklable)."""
    try:
        bundle = load_bundle(path)
        report = inspect_bundle(bundle, at=at)
    except InvalidInput as exc:
        return {"path": path, "error": exc.message, "code": exc.code}
    return {"path": path, "report": report}


@click.group("dispute")
def dispute_group() -> None:
    """Adjudicate AP2 payments from evidence bundles (offline: never touches the network)."""


@dispute_group.command("verify")
@click.argument("bundles", metavar="BUNDLE...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--at",
    "at_text",
    metavar="TIME",
    help="Evaluate at this ISO 8601 time (e.g. 2025-10-01T12:21:10Z). Default: the bundle's evidence_time.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON document on stdout.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a self-contained HTML report to this file (one bundle only).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Verify several bundles in this many processes (0: one per CPU core).",
)
def verify_command(
    bundles: tuple[str, ...], at_text: str | None, as_json: bool, html_path: Path | None, jobs: int
) -> int:
    """Verify each BUNDLE (mudrika.evidence/v1) with only the keys and expectations it contains.

    Every check is listed on stderr (passed, failed, or skipped because an earlier link failed).
    Exit 0 when every check of every bundle passed, 1 when any check failed, 2 for a malformed
    bundle or bad usage.
    """
    at = parse_time_option(at_text)
    if html_path is not None and len(bundles) != 1:
        raise click.UsageError("--html writes the report of one bundle; give exactly one BUNDLE")
    workers = (os.cpu_count() or 1) if jobs == 0 else jobs
    if workers > 1 and len(bundles) > 1:
        with ProcessPoolExecutor(max_workers=min(workers, len(bundles))) as pool:
            results = list(pool.map(_verify_one, bundles, [at] * len(bundles), chunksize=4))
    else:
        results = [_verify_one(path, at) for path in bundles]

    exit_code = EXIT_OK
    for result in results:
        if "error" in result:
            err(f"{result['path']}: malformed evidence bundle: {result['error']}")
            exit_code = EXIT_USAGE
            continue
        report: VerificationReport = result["report"]
        print_report(report, title=f"AP2 chain — {result['path']}")
        if not report.ok and exit_code == EXIT_OK:
            exit_code = EXIT_FAILED
        if html_path is not None:
            write_html(report, html_path, title=f"AP2 dispute report — {Path(result['path']).name}")
    if as_json:
        if len(results) == 1 and "report" in results[0]:
            emit_json(results[0]["report"].to_dict())
        else:
            emit_json(
                {
                    "results": [
                        {"path": r["path"], "report": r["report"].to_dict()}
                        if "report" in r
                        else {"path": r["path"], "error": r["error"], "code": r["code"]}
                        for r in results
                    ]
                }
            )
    return exit_code
