"""``mudrika dispute``: assemble evidence bundles and re-verify AP2 chains from them, offline.

Why a separate command: a dispute is decided on the key material and the expectations that held
when the payment was made, never on what a resolver says today.  So ``dispute verify`` reads key
material only from each bundle (``mudrika.evidence/v1``, see docs/payments.md), never opens a
network connection, and evaluates at ``--at`` (default: the bundle's ``evidence_time``).  What is
*trusted* comes from the analyst: ``--trust-root FILE`` and the per-case expectations (``--kb-nonce``
for one v0.1 bundle, or a JSON Lines case file: v0.1 nonces and audiences, v0.2 hop expectations and
usage records).  A verdict that rests on anything a bundle
brought is UNANCHORED, never OK.

``dispute bundle`` is the other side: the merchant or processor assembles the three mandates and
the key material it verified them with into a bundle, recording where and when each key came from.

Batches: every bundle is verified by :func:`mudrika.payments.batch.verify_bundle_bytes`, a pure
function of the bundle's bytes, the trust root's bytes and the case, in ``--jobs`` processes or on a
Dask cluster (``--scheduler``), through :func:`mudrika.payments.batch.verify_batch`; one line per
bundle is printed in input order as soon as it and every bundle before it are done, full reports
only for failures (or ``--verbose``), and a summary at the end: the same bytes wherever the work ran.

Exit codes: 0 every verdict is OK; 1 a check failed or a verdict is UNANCHORED; 2 a bundle, a case
or the trust root is malformed, or the command line is wrong.  A batch reports a case it could not
check (malformed, or a bug: ``internal_error``) as that case's ERROR row and goes on with the next;
its exit code is that of the worst verdict (ERROR 2, then FAILED or UNANCHORED 1, then OK 0).
Human text goes to stderr; ``--json`` prints one JSON document on stdout and nothing else.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mudrika.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    at_option,
    audience_options,
    did_documents_option,
    emit_json,
    err,
    html_option,
    json_option,
    kb_nonce_option,
    output_file_options,
    read_file,
    read_input,
    read_json_file,
    report_verbose_option,
    split_at_known_names,
    split_pairs,
    status_token_text,
    trust_root_option,
    v02_anchor_options,
    v02_anchors,
    write_output,
)
from mudrika.errors import InvalidInput, MudrikaError

if TYPE_CHECKING:
    from rich.console import Console

    from mudrika.payments.batch import BundleResult, Case
    from mudrika.payments.chain import VerificationReport
    from mudrika.payments.claims import BundleClaims

# The payments modules (pydantic, cryptography) and rich are imported inside the functions that use
# them, so that `mudrika dispute --help` starts without them.

__all__ = ["dispute_group", "parse_time_option", "print_report", "write_html"]

#: Largest case file / stdin accepted (JSON Lines of cases, or one bundle).
_MAX_CASES_BYTES = 64 * 1024 * 1024
#: Seconds to wait for a Dask scheduler to answer (--scheduler).
_SCHEDULER_TIMEOUT = "10s"


def parse_time_option(text: str | None, name: str = "--at") -> datetime | None:
    """ISO 8601 with a UTC offset (``2025-10-01T12:21:10Z``) or UNIX seconds; ``None`` when not given.

    The same parser as the Python API (``mudrika.payments.models.parse_time``), so every form the
    API accepts the CLI accepts too.
    """
    if text is None:
        return None
    from mudrika.payments.models import parse_time

    try:
        return parse_time(text)
    except InvalidInput as exc:
        raise click.BadParameter(
            f"{exc.message} (use e.g. 2025-10-01T12:21:10Z or UNIX seconds)", param_hint=name
        ) from None


def print_report(report: VerificationReport, *, title: str, verbose: bool = False) -> None:
    """The human report on stderr: verdict paragraph, failures with their meaning, the rest.

    Plain lines, never wrapped (identifiers stay whole for grep and out-of-band comparison); every
    party-supplied value is shown with its control characters escaped.
    """
    from mudrika.payments.chain import render_text

    err(render_text(report, title=title, verbose=verbose))


def write_html(
    report: VerificationReport,
    path: Path,
    *,
    title: str,
    mandates: dict[str, Any] | None = None,
    verbose: bool = False,
) -> None:
    from mudrika.payments.chain import render_html

    page = render_html(report, title=title, mandates=mandates, verbose=verbose)
    write_output(path, page.encode("utf-8"), force=True)


@click.group("dispute")
def dispute_group() -> None:
    """Adjudicate AP2 payments from evidence bundles (offline: never touches the network)."""


# -- the work list ----------------------------------------------------------------------------------------


class _Item:
    """One bundle to verify: its name, its bytes (or why they could not be read) and its case.

    ``problem`` is an :class:`InvalidInput` for a case or bundle that could not be read, or any
    other exception a bug raised while reading it: either becomes that case's ERROR row.
    """

    __slots__ = ("case", "data", "problem")

    def __init__(self, case: Case, data: bytes | None, problem: Exception | None = None) -> None:
        self.case = case
        self.data = data
        self.problem = problem


Pending = Callable[[], _Item]
"""A bundle not read yet: the work list is made of these, so a batch knows its size at once and
reads each case line and bundle file only when a worker is about to need it (reading overlaps
verifying instead of coming before it)."""


def _bundle_item(path: Path, case: Case) -> _Item:
    from mudrika.payments.bundle import MAX_BUNDLE_BYTES

    try:
        return _Item(case, read_file(path, max_bytes=MAX_BUNDLE_BYTES))
    except InvalidInput as exc:
        return _Item(case, None, exc)


def _case_item(line: bytes, *, label: str, base: Path, audiences: dict[str, str | None]) -> _Item:
    """One case line: ``{"bundle": PATH-or-object, "kb_nonce", "merchant_audience", …}``.

    A case's own audience wins; one it leaves out comes from ``--merchant-aud`` / ``--kb-aud``.
    """
    import json

    from mudrika.crypto.jcs import loads_strict
    from mudrika.payments.batch import Case, parse_case

    try:
        case, bundle = parse_case(loads_strict(line), name=label)
        case = dataclasses.replace(
            case,
            merchant_audience=case.merchant_audience or audiences["merchant_audience"],
            kb_audience=case.kb_audience or audiences["kb_audience"],
        )
        if isinstance(bundle, str):
            path = Path(bundle)
            return _bundle_item(path if path.is_absolute() else base / path, case)
        if isinstance(bundle, dict):
            return _Item(case, json.dumps(bundle, ensure_ascii=False).encode("utf-8"))
        problem = InvalidInput("a case's 'bundle' is a path or a bundle object", code="bad_case", case=label)
        return _Item(case, None, problem)
    except Exception as exc:  # InvalidInput, or a bug: this case's ERROR row, the next line still read
        return _Item(Case(name=label), None, exc)


def _case_items(
    text: bytes, *, origin: str, base: Path, audiences: dict[str, str | None]
) -> Iterator[Pending]:
    """JSON Lines of cases, one pending item per non-blank line (read by :func:`_case_item`)."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield functools.partial(
                _case_item, line, label=f"{origin}:{number}", base=base, audiences=audiences
            )


def _is_one_bundle(data: bytes) -> bool:
    """Stdin holds one evidence bundle (not JSON Lines of cases)?"""
    from mudrika.crypto.jcs import loads_strict

    try:
        value = loads_strict(data, max_bytes=_MAX_CASES_BYTES, max_depth=64)
    except InvalidInput:
        return False
    return isinstance(value, dict) and "format" in value and "bundle" not in value


def _work_items(
    sources: tuple[str, ...],
    cases_path: str | None,
    defaults: dict[str, str | None],
) -> list[Pending]:
    from mudrika.payments.batch import Case

    def case_for(name: str) -> Case:
        return Case(
            name=name,
            kb_nonce=defaults["kb_nonce"],
            merchant_audience=defaults["merchant_audience"],
            kb_audience=defaults["kb_audience"],
        )

    items: list[Pending] = []
    audiences = {name: defaults[name] for name in ("merchant_audience", "kb_audience")}
    stdin_used = False
    for source in sources:
        if source == "-":
            if stdin_used:
                raise click.UsageError("'-' (stdin) can be given once")
            stdin_used = True
            data = read_input("-", max_bytes=_MAX_CASES_BYTES)
            if _is_one_bundle(data):
                items.append(functools.partial(_Item, case_for("-"), data))
            else:
                items.extend(_case_items(data, origin="stdin", base=Path.cwd(), audiences=audiences))
            continue
        path = Path(source)
        if path.is_dir():
            found = sorted(child for child in path.iterdir() if child.suffix == ".json" and child.is_file())
            items.extend(functools.partial(_bundle_item, child, case_for(str(child))) for child in found)
        else:
            items.append(functools.partial(_bundle_item, path, case_for(source)))
    if cases_path is not None:
        if cases_path == "-":
            if stdin_used:
                raise click.UsageError("'-' (stdin) can be given once")
            data = read_input("-", max_bytes=_MAX_CASES_BYTES)
            base = Path.cwd()
        else:
            data = read_file(cases_path, max_bytes=_MAX_CASES_BYTES)
            base = Path(cases_path).parent
        items.extend(_case_items(data, origin=cases_path, base=base, audiences=audiences))
    return items


# -- running ----------------------------------------------------------------------------------------------


def _job(item: _Item) -> tuple[bytes, Case] | BundleResult:
    """What the batch verifies for one item: its bytes and case, or the ERROR row of an item that
    could not be read (it passes through the batch in its place)."""
    from mudrika.payments.batch import BundleResult

    if item.data is not None:
        return item.data, item.case
    assert item.problem is not None
    if isinstance(item.problem, MudrikaError):
        return BundleResult.from_error(item.case.name, item.problem)
    return BundleResult.from_unexpected(item.case.name, item.problem)


def _process_pool(workers: int, trust_root: bytes | None) -> ProcessPoolExecutor:
    """``workers`` processes, forked where fork is safe (Linux, and this process has one thread:
    the pool is made before the progress bar starts its own).

    Why fork: a forked worker starts with the verifier already imported and this trust root already
    parsed (its per-process cache is warmed first), so it verifies at once; a spawned or forkserver
    worker imports pydantic, cryptography and the payment modules itself before its first bundle.
    """
    import multiprocessing
    import threading

    from mudrika.payments.batch import warm_trust_root

    if trust_root is not None:
        warm_trust_root(trust_root)
    if sys.platform == "linux" and threading.active_count() == 1:
        return ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        )
    return ProcessPoolExecutor(max_workers=workers)


def die_with_parent(parent: int) -> None:
    """In a forked worker (Linux): ask the kernel to end it when the command (``parent``) ends.

    Why: a worker waits on a queue whose other end every worker also holds, so when the command is
    killed (SIGTERM, SIGKILL, out of memory) its workers would never see the end of their input and
    would wait forever, each holding the batch's memory.
    """
    import ctypes
    import signal

    set_parent_death_signal = 1  # PR_SET_PDEATHSIG, <linux/prctl.h>
    ctypes.CDLL(None, use_errno=True).prctl(set_parent_death_signal, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the command ended before the request was made
        os._exit(1)


def _line(result: BundleResult) -> str:
    from mudrika.payments.chain import printable

    counts = result.counts
    tail = f"  {printable(result.first_failure)}" if result.first_failure else ""
    if result.error is not None:
        tail = f"  error: {printable(str(result.error.get('message')))} ({printable(str(result.error.get('code')))})"
    return (
        f"{result.outcome:<10} {printable(result.name, limit=400)}  "
        f"[{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} not run]{tail}"
    )


def _summary(results: list[BundleResult]) -> tuple[list[str], dict[str, Any]]:
    verdicts = Counter(result.outcome for result in results)
    first = Counter(
        (result.first_failure or "").split(":", 1)[0] for result in results if result.first_failure
    )
    lines = [f"SUMMARY: {len(results)} bundles", f"  {'verdict':<12}{'bundles':>8}"]
    for verdict in ("OK", "UNANCHORED", "FAILED", "ERROR"):
        lines.append(f"  {verdict:<12}{verdicts.get(verdict, 0):>8}")
    if first:
        lines.append(f"  {'first failure':<40}{'bundles':>8}")
        for name, count in first.most_common(10):
            lines.append(f"  {name:<40}{count:>8}")
    document = {
        "bundles": len(results),
        "verdicts": {
            verdict: verdicts.get(verdict, 0) for verdict in ("OK", "UNANCHORED", "FAILED", "ERROR")
        },
        "first_failures": dict(first.most_common()),
    }
    return lines, document


def _exit_code(results: list[BundleResult]) -> int:
    if any(result.outcome == "ERROR" for result in results):
        return EXIT_USAGE
    return EXIT_OK if all(result.ok for result in results) else EXIT_FAILED


@dispute_group.command("verify")
@click.argument("bundles", metavar="[BUNDLE|DIR|-]...", nargs=-1)
@click.option(
    "--cases",
    "cases_path",
    metavar="FILE|-",
    help='JSON Lines, one case per line: {"bundle": PATH-or-object, "id": ...} and your records for '
    'that payment: v0.1 "kb_nonce", "merchant_audience", "kb_audience"; v0.2 "checkout_hops"/'
    '"payment_hops" ([{"aud": ..., "nonce": ...}, ...] in hop order) and "usage" (as mandate v02 '
    "verify --usage).",
)
@at_option(
    "Evaluate at this time (ISO 8601 with offset, or UNIX seconds). Default: each bundle's evidence_time."
)
@trust_root_option(
    "Your trust root (mudrika.trust-root/v1): the issuers, merchants and policy you trust. "
    "Without it every verdict is UNANCHORED."
)
@audience_options(
    merchant="The 'aud' merchant cart JWTs must carry where a case gives none (else the trust root's).",
    kb="The 'aud' user key-binding JWTs must carry where a case gives none (else the trust root's).",
)
@kb_nonce_option(
    "The nonce the payment processor issued for this payment (one bundle only; for a batch, "
    "give each bundle's nonce in --cases). Without it the bundle's own nonce is used: UNANCHORED."
)
@v02_anchor_options
@click.option(
    "--later-status",
    "later_status_files",
    multiple=True,
    metavar="FILE",
    help="A status list token (statuslist+jwt) fetched after the purchase, e.g. today's: shown as a "
    "note ('revoked after the purchase'), never part of the verdict. One bundle only; repeatable.",
)
@json_option(
    help_text='Print one JSON document on stdout (no human tables): {"results": [{"path", "verdict", '
    '"report" or "error"}, ...], "summary": {...}}, for one bundle or many.'
)
@click.option(
    "--summary-only",
    is_flag=True,
    help='Print only the summary: no line or report per bundle (with --json: {"summary": {...}}).',
)
@click.option(
    "--json-out",
    "json_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write one JSON line per bundle to FILE, in input order, as the batch goes.",
)
@html_option("Also write a self-contained HTML report to this file (one bundle only).")
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Verify bundles in this many processes (0: one per CPU core).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Verify the batch on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:PORT; needs "
    "the optional package 'distributed'). Bundles and your trust root are sent to the workers as "
    "bytes; the output is the same as with --jobs.",
)
@report_verbose_option(
    "List passed checks too, print full reports for every bundle of a batch (and, on an error, its causes)."
)
def verify_command(
    bundles: tuple[str, ...],
    cases_path: str | None,
    at_text: str | None,
    trust_root_path: Path | None,
    merchant_aud: str | None,
    kb_aud: str | None,
    kb_nonce: str | None,
    checkout_aud: tuple[str, ...],
    checkout_nonce: tuple[str, ...],
    payment_aud: tuple[str, ...],
    payment_nonce: tuple[str, ...],
    usage_path: str | None,
    later_status_files: tuple[str, ...],
    as_json: bool,
    summary_only: bool,
    json_out: Path | None,
    html_path: Path | None,
    jobs: int,
    scheduler: str | None,
    verbose: bool,
) -> int:
    """Verify evidence bundles (AP2 v0.1 or v0.2) against your --trust-root, offline.

    \b
    BUNDLE   a bundle file;  DIR   every *.json in it;  -   stdin: one bundle, or JSON Lines of cases
    --cases FILE   JSON Lines of cases: a bundle and your expectations for that payment

    One bundle: the full report (verdict paragraph, failures with what they mean, the keys) on
    stderr. A batch: one line per bundle in input order, full reports for failures (all with
    --verbose), then a summary; the same output whatever --jobs or --scheduler says. Key material in a bundle is evidence: a verdict resting on it, or
    on an expectation the bundle asserted, is UNANCHORED. Exit 0 when every verdict is OK, 1 when
    a check failed or a verdict is UNANCHORED, 2 for a malformed bundle, case or trust root.
    """
    at = parse_time_option(at_text)
    if not bundles and cases_path is None:
        raise click.UsageError("give BUNDLE..., a DIR, '-' or --cases FILE")
    if scheduler is not None:
        if jobs != 1:
            raise click.UsageError(
                "--scheduler runs the batch on a Dask cluster: give it or --jobs, not both"
            )
        _check_scheduler_address(scheduler)
    trust_root: bytes | None = None
    if trust_root_path is not None:
        from mudrika.payments.trustroot import MAX_TRUST_ROOT_BYTES, parse_trust_root

        trust_root = read_file(trust_root_path, max_bytes=MAX_TRUST_ROOT_BYTES)
        parse_trust_root(trust_root)  # a malformed trust root is a usage error (exit 2), once
    defaults = {"kb_nonce": kb_nonce, "merchant_audience": merchant_aud, "kb_audience": kb_aud}
    later = tuple(status_token_text(path) for path in later_status_files)
    items = _work_items(bundles, cases_path, defaults)
    if not items:
        raise click.UsageError("no bundles found")
    if kb_nonce is not None and len(items) != 1:
        raise click.UsageError("--kb-nonce is the nonce of one payment; give each bundle's nonce in --cases")
    # One bundle is read now (the options of one payment apply to it); a batch reads each bundle
    # only as the workers are about to need it.
    first = items[0]() if len(items) == 1 else None
    checkout_hops, payment_hops, usage = v02_anchors(
        checkout_aud=checkout_aud,
        checkout_nonce=checkout_nonce,
        payment_aud=payment_aud,
        payment_nonce=payment_nonce,
        usage_path=usage_path,
    )
    if checkout_hops or payment_hops or usage is not None:
        if len(items) != 1:
            raise click.UsageError(
                "--checkout-*/--payment-* hops and --usage are the records of one payment; give each "
                "bundle's checkout_hops, payment_hops and usage in --cases"
            )
        assert first is not None
        first.case = dataclasses.replace(
            first.case,
            checkout_hops=tuple(checkout_hops) or None,
            payment_hops=tuple(payment_hops) or None,
            usage=usage,
        )
    if later:
        if len(items) != 1:
            raise click.UsageError(
                "--later-status belongs to one payment's credential; give exactly one BUNDLE"
            )
        assert first is not None
        first.case = dataclasses.replace(first.case, later_status_lists=later)
    if html_path is not None and len(items) != 1:
        raise click.UsageError("--html writes the report of one bundle; give exactly one BUNDLE")
    options: dict[str, Any] = {
        "trust_root": trust_root,
        "at": at.timestamp() if at is not None else None,
        "verbose": verbose,
    }
    if summary_only and (verbose or html_path is not None):
        raise click.UsageError("--summary-only prints no report: give it or --verbose/--html, not both")
    if first is not None:
        if not summary_only:
            return _verify_single(first, options, as_json=as_json, json_out=json_out, html_path=html_path)
        items = [functools.partial(_read_already, first)]
    options["render"] = "never" if summary_only else "always" if verbose else "failures"
    # The JSON report travels back from a worker only when something prints it.
    options["keep_report"] = json_out is not None or (as_json and not summary_only)
    batch = functools.partial(
        _verify_batch, items, options, as_json=as_json, json_out=json_out, summary_only=summary_only
    )
    if scheduler is not None:
        with _dask_client(scheduler) as client:
            return batch(executor=client)
    workers = min((os.cpu_count() or 1) if jobs == 0 else jobs, len(items))
    if workers <= 1:
        return batch(executor=None)
    with _process_pool(workers, trust_root) as pool:
        return batch(executor=pool)


def _read_already(item: _Item) -> _Item:
    return item


def _check_scheduler_address(address: str) -> None:
    """``PROTOCOL://HOST:PORT``, checked before anything is read (even for one bundle, which is
    verified here: a typo must not pass unnoticed until the first batch)."""
    protocol, _, rest = address.partition("://")
    if not protocol or not rest:
        raise InvalidInput(
            "--scheduler takes a Dask scheduler address such as tcp://127.0.0.1:8786",
            code="bad_scheduler",
            scheduler=address,
        )


def _dask_client(address: str) -> Any:
    """A ``distributed.Client`` connected to the scheduler at ``address`` (``dask`` is optional:
    a clear usage error when it is not installed, or when no scheduler answers there)."""
    try:
        from distributed import Client
    except ImportError:
        raise InvalidInput(
            "--scheduler needs the optional package 'distributed' (pip install distributed)",
            code="dask_not_installed",
        ) from None
    try:
        return Client(address, timeout=_SCHEDULER_TIMEOUT, set_as_default=False)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError) as exc:
        raise InvalidInput(
            f"no Dask scheduler answered at {address}: {type(exc).__name__}",
            code="bad_scheduler",
            scheduler=address,
        ) from None


def _verify_single(
    item: _Item, options: dict[str, Any], *, as_json: bool, json_out: Path | None, html_path: Path | None
) -> int:
    from mudrika.payments.batch import BundleResult, inspect_bundle_bytes
    from mudrika.payments.bundle import BUNDLE_FORMAT

    if item.problem is not None:
        raise item.problem
    assert item.data is not None
    try:
        inspected = inspect_bundle_bytes(
            item.data, trust_root=options["trust_root"], case=item.case, at=options["at"]
        )
    except MudrikaError as exc:
        # Reported by the CLI's error contract (code, fields, every problem; JSON with --json).
        fields = {key: value for key, value in exc.fields.items() if key not in ("message", "code")}
        raise InvalidInput(exc.message, code=exc.code, **fields) from None
    verbose = bool(options["verbose"])
    result = BundleResult.from_report(item.case.name, inspected.report, verbose=verbose, render="always")
    assert result.text is not None
    err(result.text)
    if json_out is not None:
        _write_lines(json_out, [result])
    if html_path is not None:
        # The page shows a v0.1 bundle's raw mandates beside the report; a v0.2 bundle's chains are
        # not mandate objects, so its page is the report alone.
        document = inspected.document
        v01 = isinstance(document, dict) and document.get("format") == BUNDLE_FORMAT
        write_html(
            inspected.report,
            html_path,
            title=f"AP2 dispute report — {Path(item.case.name).name}",
            mandates=document.get("mandates") if v01 else None,
            verbose=verbose,
        )
    if as_json:
        emit_json(_json_document([result], _summary([result])[1]))
    return _exit_code([result])


def _write_lines(path: Path, results: list[BundleResult]) -> None:
    import json

    with path.open("w", encoding="utf-8") as handle:
        for result in results:
            handle.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")


def _json_document(results: list[BundleResult], summary: dict[str, Any]) -> dict[str, Any]:
    """The one ``--json`` document, whatever the number of inputs: a row per bundle (its report, or
    the error that kept it from being checked) and the summary.  Scripts read one shape for one
    bundle and for ten thousand."""
    return {
        "results": [
            {"path": result.name, "verdict": result.outcome}
            | ({"report": dict(result.report)} if result.report is not None else {})
            | ({"error": dict(result.error)} if result.error is not None else {})
            for result in results
        ],
        "summary": summary,
    }


def _verify_batch(
    items: list[Pending],
    options: dict[str, Any],
    *,
    executor: Any,
    as_json: bool,
    json_out: Path | None,
    summary_only: bool = False,
) -> int:
    """Verify every item on ``executor`` (``None``: here), printing each result in input order as
    soon as it and all before it are done: the same lines, JSON and exit code with one process, a
    pool or a Dask cluster."""
    import json

    from mudrika.payments.batch import verify_batch

    results: list[BundleResult] = []
    sink = json_out.open("w", encoding="utf-8") if json_out is not None else None
    progress = _Progress(len(items)) if sys.stderr.isatty() else None
    jobs = (_job(pending()) for pending in items)
    try:
        for result in verify_batch(jobs, executor=executor, **options):
            results.append(result)
            if sink is not None:
                sink.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
                sink.flush()
            lines = [] if summary_only else [_line(result)]
            if result.text is not None and not summary_only:
                lines.append(result.text)
            if progress is not None:
                progress.advance(lines)
            elif lines:
                err("\n".join(lines))
    finally:
        if progress is not None:
            progress.stop()
        if sink is not None:
            sink.close()
    lines, summary = _summary(results)
    for line in lines:
        err(line)
    if json_out is not None:
        err(f"wrote {json_out}")
    if as_json:
        emit_json({"summary": summary} if summary_only else _json_document(results, summary))
    return _exit_code(results)


class _Progress:
    """A progress bar on a terminal (stderr); lines printed above it as bundles finish."""

    def __init__(self, total: int, *, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        # No markup, emoji codes or highlighting: 'did:key:' must never become an emoji.
        self._console = console or Console(stderr=True, highlight=False, markup=False, emoji=False)
        self._bar = Progress(
            BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=self._console, transient=True
        )
        self._task = self._bar.add_task("verifying", total=total)
        self._bar.start()

    def advance(self, lines: list[str]) -> None:
        """Count the result, then print its lines: the bar redrawn below them counts them too (it
        used to be counted after printing, so the bar under result N said N-1)."""
        self._bar.advance(self._task)
        for line in lines:
            self._console.print(line, soft_wrap=True, markup=False, highlight=False, emoji=False)
        self._bar.refresh()

    def stop(self) -> None:
        self._bar.stop()


# -- what a bundle claims ---------------------------------------------------------------------------------


@dispute_group.command("inspect")
@click.argument("bundle", metavar="BUNDLE|-")
@json_option(help_text='Print {"claims": {...}} on stdout (every value with "where" it was found).')
def inspect_command(bundle: str, as_json: bool) -> None:
    """List the audiences, nonces, keys and parties BUNDLE claims: unverified, for you to confirm.

    Nothing is verified or trusted: each value is what the bundle (or a token inside it) asserts,
    with where it was found, so you can decide what to confirm out of band and then pin in your
    trust root (keys: trust-root add-merchant / add-issuer) or give as your own records (audiences
    and nonces: --merchant-aud, --kb-aud, --kb-nonce; v0.2: --checkout-aud/-nonce,
    --payment-aud/-nonce).  Reads the bundle with the parsers dispute verify uses; a token that
    cannot be read is listed under problems.  Exit 0 when listed, 2 for a malformed bundle.

    \b
    Example:
      mudrika dispute inspect fixtures/evidence/bundle.json
    """
    from mudrika.payments.bundle import MAX_BUNDLE_BYTES
    from mudrika.payments.claims import bundle_claims

    data = read_input(bundle, max_bytes=MAX_BUNDLE_BYTES)
    claims = bundle_claims(data)
    if as_json:
        emit_json({"claims": claims.to_dict()})
        return
    for line in _claims_lines(claims, name=bundle):
        err(line)


def _claims_lines(claims: BundleClaims, *, name: str) -> Iterator[str]:
    """The claims as plain, never-wrapped lines; every bundle value escaped."""
    from mudrika.payments.chain import printable
    from mudrika.payments.claims import CLAIMS_NOTE

    yield f"CLAIMS of {printable(name, limit=400)} ({claims.format}, evidence time {printable(claims.evidence_time)})"
    yield CLAIMS_NOTE
    for heading, rows in (
        ("parties", claims.parties),
        ("audiences", claims.audiences),
        ("nonces", claims.nonces),
    ):
        yield f"{heading} (claimed):"
        for row in rows:
            yield f"  {printable(row.role)}: {printable(row.value)}  [{printable(row.where)}]"
    yield "keys (claimed):"
    for key in claims.keys:
        parts = [printable(key.owner) if key.owner else "(owner not named)"]
        if key.kid:
            parts.append(f"kid={printable(key.kid)}")
        parts.append(f"thumbprint={key.thumbprint}" if key.thumbprint else "(key named, not carried)")
        parts.append(f"[{printable(key.where)}]")
        if key.fetched:
            parts.append(
                f"fetched {printable(key.fetched.get('at'))} via {printable(key.fetched.get('via'))}"
            )
        yield "  " + " ".join(parts)
    if claims.problems:
        yield "problems (not readable):"
        for problem in claims.problems:
            yield f"  {printable(problem.where)}: {printable(problem.value)} ({printable(problem.role)})"
    yield (
        "next: confirm a key with its owner, then `mudrika trust-root add-merchant|add-issuer`; give the "
        "audiences and nonce of your own records to `mudrika dispute verify`."
    )


# -- building bundles -------------------------------------------------------------------------------------


@dispute_group.command("bundle")
@click.option("--intent", "intent_file", required=True, help="The IntentMandate (JSON) as received.")
@click.option("--cart", "cart_file", required=True, help="The signed CartMandate (JSON) as received.")
@click.option(
    "--payment", "payment_file", required=True, help="The signed PaymentMandate (JSON) as received."
)
@audience_options(
    merchant="The 'aud' you required of the merchant's cart JWT.",
    kb="The 'aud' you required of the user's key-binding JWT.",
    required=True,
)
@kb_nonce_option("The nonce you issued for this payment.", required=True)
@did_documents_option("A DID document you verified with (e.g. the merchant's did:web document); repeatable.")
@click.option(
    "--jwks", multiple=True, metavar="ISSUER=FILE", help="An issuer's JWK Set you verified with; repeatable."
)
@click.option(
    "--status-list",
    "status_lists",
    multiple=True,
    metavar="URI=FILE",
    help="A Token Status List token you checked the credential against, as fetched from URI "
    "(recorded with --fetched-at and --via URI=TEXT); repeatable.",
)
@click.option(
    "--fetched-at",
    "fetched_at_text",
    metavar="TIME",
    help="When the key material was fetched (ISO 8601 or UNIX seconds). Default: now.",
)
@click.option(
    "--via",
    "via_pairs",
    multiple=True,
    metavar="OWNER=TEXT",
    help="How OWNER's key material was obtained (e.g. 'https GET https://…/did.json'); repeatable.",
)
@click.option(
    "--trusted-issuer", "trusted_issuers", multiple=True, help="An issuer you trusted then; repeatable."
)
@click.option(
    "--evidence-time",
    "evidence_time_text",
    metavar="TIME",
    help="When you accepted the chain (ISO 8601 or UNIX seconds). Default: the payment's timestamp.",
)
@click.option("--description", help="Free text describing the case.")
@output_file_options("the bundle")
@json_option(
    help_text='The bundle is one JSON document already; with --out, --json prints {"written": FILE}; failures as JSON.'
)
def bundle_command(
    intent_file: str,
    cart_file: str,
    payment_file: str,
    merchant_aud: str,
    kb_aud: str,
    kb_nonce: str,
    did_document_files: tuple[str, ...],
    jwks: tuple[str, ...],
    status_lists: tuple[str, ...],
    fetched_at_text: str | None,
    via_pairs: tuple[str, ...],
    trusted_issuers: tuple[str, ...],
    evidence_time_text: str | None,
    description: str | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Assemble an evidence bundle from a chain and the key material it was verified with.

    The three mandates are kept as the raw JSON received (the bytes that were hashed and signed);
    each DID document, JWK Set and status list token is recorded with when (--fetched-at) and how
    (--via) it was obtained: a credential that names a status list is judged, months later, on the
    list you checked at the purchase. Everything in a bundle is evidence: an analyst trusts only their own trust root.
    """
    from mudrika.cli._keycheck import read_did_documents
    from mudrika.payments.bundle import build_bundle
    from mudrika.payments.credential_status import RecordedStatusList
    from mudrika.payments.models import receive_cart, receive_intent, receive_payment

    intent = receive_intent(read_file(intent_file, max_bytes=1024 * 1024))
    cart = receive_cart(read_file(cart_file, max_bytes=1024 * 1024))
    payment = receive_payment(read_file(payment_file, max_bytes=1024 * 1024))
    fetched_at = parse_time_option(fetched_at_text, "--fetched-at") or datetime.now(UTC)
    evidence_time = parse_time_option(evidence_time_text, "--evidence-time") or (
        payment.model.payment_mandate_contents.timestamp_at
    )
    documents: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for path, did, document in read_did_documents(did_document_files, read_json_file):
        documents[did] = document
        sources[did] = f"DID document file {Path(path).name}"
    issuer_sets: dict[str, Any] = {}
    for issuer, path in split_pairs(jwks, option="--jwks", form="NAME=FILE"):
        issuer_sets[issuer] = read_json_file(path)
        sources[issuer] = f"JWK Set file {Path(path).name}"
    tokens: dict[str, str] = {}
    for uri, path in split_pairs(status_lists, option="--status-list", form="URI=FILE"):
        tokens[uri] = status_token_text(path)
        sources[uri] = f"status list token file {Path(path).name}"
    for owner, via in split_at_known_names(
        via_pairs,
        sources,
        option="--via",
        form="OWNER=TEXT",
        what="--did-document, --jwks or --status-list",
    ):
        sources[owner] = via
    stamp = fetched_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    recorded = [
        RecordedStatusList(uri=uri, token=token, at=stamp, via=sources.pop(uri))
        for uri, token in tokens.items()
    ]
    bundle = build_bundle(
        intent,
        cart,
        payment,
        evidence_time=evidence_time,
        merchant_audience=merchant_aud,
        kb_audience=kb_aud,
        kb_nonce=kb_nonce,
        trusted_issuers=trusted_issuers,
        did_documents=documents,
        jwks=issuer_sets,
        fetched={owner: {"at": stamp, "via": via} for owner, via in sources.items()},
        description=description,
        status_lists=recorded,
    )
    text = bundle.to_json() + "\n"
    if out_path is None:
        click.echo(text, nl=False)
        return
    written = write_output(out_path, text.encode("utf-8"), force=force)
    if as_json:
        emit_json({"written": str(written)})
