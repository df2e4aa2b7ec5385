"""Dispute batches: the unit of work is one pure, picklable function, bundle bytes (+ trust root) → result.

Why a pure function: a batch of thousands of disputed payments must scale across cores and, past
one machine, across a cluster — and a verdict must not depend on where it was computed.
:func:`verify_bundle_bytes` reads nothing but its arguments (no files, no clock, no network, no
global state other than a per-process cache of parsed trust roots), so a process pool, Dask or any
engine that can ship bytes and a function computes exactly the same :class:`BundleResult`.  It also
renders the report text in the worker, so the parent only prints: drawing reports serially in the
parent is what kept a pool from scaling.

Why :class:`Case`: the expectations that make a verdict anchorable — the nonce the processor
issued for *this* payment and the audiences (v0.1), the ``aud``/``nonce`` of every delegation hop
(v0.2), and the verifier's usage record of an open payment mandate (v0.2 budgets and recurrence) —
are the analyst's per-case data, never the bundle's word.  A batch takes one :class:`Case` per
bundle (from a JSON Lines case file); a value the case leaves out falls back to the trust root's
``verifier`` section, else to the bundle's own assertion, which the report flags as evidence and
which leaves the verdict UNANCHORED.

Batches: :func:`verify_batch` runs the function over any number of bundles on a
``concurrent.futures`` executor (the CLI's ``--jobs`` process pool) or a ``dask.distributed``
client (``--scheduler``), and yields the results in input order, so every engine prints the same
lines, writes the same JSON and comes to the same exit code as one process.

Profiles: :func:`verifier_for` picks the verifier by the bundle's ``format`` member, so another
evidence format slots in beside ``mudrika.evidence/v1`` without changing the batch.
"""

from __future__ import annotations

import functools
import os
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal, NamedTuple, Protocol

from pydantic import Field, TypeAdapter, ValidationError

from mudrika.crypto.jcs import loads_strict
from mudrika.errors import InvalidInput, MudrikaError
from mudrika.payments._time import Time, epoch
from mudrika.payments.bundle import BUNDLE_FORMAT, MAX_BUNDLE_BYTES, bundle_from_value, inspect_bundle
from mudrika.payments.chain import VerificationReport, render_text
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02.bundle import BUNDLE_FORMAT_V02, BundleHop, inspect_v02_case
from mudrika.payments.v02.constraints import MandateUsage, usage_from_value
from mudrika.payments.v02.hops import HopExpectation

__all__ = [
    "CASE_FIELDS",
    "IN_FLIGHT_PER_WORKER",
    "MAX_CHUNK",
    "MAX_CHUNK_DASK",
    "V02_CASE_FIELDS",
    "BundleResult",
    "Case",
    "DaskClient",
    "Inspected",
    "Job",
    "Outcome",
    "Render",
    "inspect_bundle_bytes",
    "parse_case",
    "verifier_for",
    "verify_batch",
    "verify_bundle_bytes",
    "verify_bundles",
    "warm_trust_root",
]

Outcome = Literal["OK", "FAILED", "UNANCHORED", "ERROR"]
Render = Literal["never", "failures", "always"]
"""When a result carries its text report: never, for verdicts that are not OK, or always."""

#: Members a case line may carry beside ``bundle`` (the analyst's expectations for that payment):
#: text members, then the v0.2 hop lists (``[{"aud": …, "nonce": …}, …]`` in chain order) and usage.
CASE_FIELDS: Final = ("id", "kb_nonce", "merchant_audience", "kb_audience")
V02_CASE_FIELDS: Final = ("checkout_hops", "payment_hops", "usage")
_MAX_CASE_TEXT: Final = 2048
_MAX_CASE_HOPS: Final = 8
_HOP_LIST: Final = TypeAdapter(Annotated[list[BundleHop], Field(min_length=1, max_length=_MAX_CASE_HOPS)])

Verifier = Callable[[Any, "TrustRoot | None", "Case", "Time | None"], VerificationReport]


@dataclass(frozen=True, slots=True)
class Case:
    """The analyst's expectations for one bundle; ``None`` means "not given" (see the module doc)."""

    name: str
    kb_nonce: str | None = None
    merchant_audience: str | None = None
    kb_audience: str | None = None
    checkout_hops: tuple[HopExpectation, ...] | None = None
    payment_hops: tuple[HopExpectation, ...] | None = None
    usage: MandateUsage | None = None
    later_status_lists: tuple[str, ...] = ()
    """Status list tokens the analyst fetched after the purchase: shown as notes, never judged."""

    def __repr__(self) -> str:
        # The nonce is the processor's secret challenge: never in a repr (HopExpectation hides its own).
        return f"Case(name={self.name!r}, kb_nonce={'<given>' if self.kb_nonce else None})"

    @property
    def names_v02(self) -> bool:
        """Does the case carry v0.2 expectations (which no v0.1 bundle can meet)?"""
        return self.checkout_hops is not None or self.payment_hops is not None or self.usage is not None


def _case_text(value: object, member: str, case: str) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_CASE_TEXT:
        raise InvalidInput(f"case member {member} must be non-empty text", code="bad_case", case=case)
    return value


def _case_hops(value: object, member: str, case: str) -> tuple[HopExpectation, ...]:
    """``[{"aud": …, "nonce": …}, …]``: the analyst's expectation for each hop, in chain order --
    the same shape, limits and strictness as a bundle's own recorded hops (:class:`BundleHop`)."""
    try:
        hops = _HOP_LIST.validate_python(value)
    except ValidationError:
        raise InvalidInput(
            f"case member {member} is a list of 1 to {_MAX_CASE_HOPS} objects with exactly 'aud' and 'nonce'",
            code="bad_case",
            case=case,
        ) from None
    return tuple(HopExpectation(hop.aud, hop.nonce, source="analyst") for hop in hops)


def parse_case(value: Any, *, name: str) -> tuple[Case, Any]:
    """One case line (a parsed JSON object): ``{"bundle": PATH-or-object, "kb_nonce", …}`` → (case, bundle).

    Unknown members are refused (a typo such as ``kb_once`` must not silently drop the nonce and
    leave the verdict resting on the bundle's word).
    """
    if not isinstance(value, Mapping) or "bundle" not in value:
        raise InvalidInput("a case is a JSON object with a 'bundle' member", code="bad_case", case=name)
    unknown = sorted(set(value) - {"bundle", *CASE_FIELDS, *V02_CASE_FIELDS})
    if unknown:
        raise InvalidInput("unknown case member", code="bad_case", case=name, members=unknown[:8])
    texts = {
        member: None if value.get(member) is None else _case_text(value[member], member, name)
        for member in CASE_FIELDS
    }
    hops = {
        member: None if value.get(member) is None else _case_hops(value[member], member, name)
        for member in ("checkout_hops", "payment_hops")
    }
    try:
        usage = None if value.get("usage") is None else usage_from_value(value["usage"])
    except InvalidInput as exc:
        raise InvalidInput(f"case member usage: {exc}", code="bad_case", case=name) from None
    bundle = value["bundle"]
    label = texts["id"] or (bundle if isinstance(bundle, str) else name)
    return (
        Case(
            name=label,
            kb_nonce=texts["kb_nonce"],
            merchant_audience=texts["merchant_audience"],
            kb_audience=texts["kb_audience"],
            checkout_hops=hops["checkout_hops"],
            payment_hops=hops["payment_hops"],
            usage=usage,
        ),
        bundle,
    )


@dataclass(frozen=True, slots=True)
class BundleResult:
    """What one bundle came to: picklable, comparable, and the same wherever it was computed."""

    name: str
    outcome: Outcome
    counts: Mapping[str, int]
    first_failure: str | None
    """``id: meaning`` of the first failed check (or the error's code)."""
    report: Mapping[str, Any] | None
    """The report as JSON (:meth:`VerificationReport.to_dict`), ``None`` for an unreadable bundle."""
    text: str | None
    """The rendered text report (only when asked for: failures, or verbose)."""
    error: Mapping[str, Any] | None = None
    """``{"code", "message", "fields"}`` when the bundle or its case could not even be checked."""

    @classmethod
    def from_error(cls, name: str, exc: MudrikaError) -> BundleResult:
        """The ERROR result of a bundle or case that could not even be checked (its code is the verdict's
        reason, as a failed check's id is for FAILED)."""
        return cls(
            name=name,
            outcome="ERROR",
            counts={"passed": 0, "failed": 0, "skipped": 0},
            first_failure=exc.code,
            report=None,
            text=None,
            error={"code": exc.code, "message": exc.message, "fields": dict(exc.fields)},
        )

    @classmethod
    def from_unexpected(cls, name: str, exc: BaseException) -> BundleResult:
        """The ERROR result of a bundle whose check ended in an exception that is not a
        :class:`MudrikaError` (a bug): ``internal_error`` with the exception's type and the place it
        was raised, never its message (which may hold anything, input included)."""
        kind = type(exc)
        fields: dict[str, Any] = {"type": f"{kind.__module__}.{kind.__qualname__}"}
        frames = traceback.extract_tb(exc.__traceback__)
        if frames:
            last = frames[-1]
            fields["at"] = f"{Path(last.filename).name}:{last.lineno} in {last.name}"
        return cls(
            name=name,
            outcome="ERROR",
            counts={"passed": 0, "failed": 0, "skipped": 0},
            first_failure="internal_error",
            report=None,
            text=None,
            error={
                "code": "internal_error",
                "message": f"unexpected internal error: {kind.__qualname__}",
                "fields": fields,
            },
        )

    @classmethod
    def from_report(
        cls,
        name: str,
        report: VerificationReport,
        *,
        verbose: bool = False,
        render: Render = "failures",
        keep_report: bool = True,
    ) -> BundleResult:
        """The result of a bundle that was checked: its verdict, counts, first failure, the report
        as JSON (unless ``keep_report`` is false), and the text report when ``render`` asks for it."""
        data = report.to_dict(verbose=verbose)
        first = report.first_failure
        want_text = render == "always" or (render == "failures" and not report.ok)
        return cls(
            name=name,
            outcome=report.verdict,
            counts=dict(data["counts"]),
            first_failure=f"{first.id}: {data['failures'][0]['meaning']}" if first is not None else None,
            report=data if keep_report else None,
            text=render_text(report, title=f"AP2 dispute report — {name}", verbose=verbose)
            if want_text
            else None,
        )

    @property
    def ok(self) -> bool:
        return self.outcome == "OK"

    def to_json(self) -> dict[str, Any]:
        """One JSON Lines record (``--json-out``)."""
        record: dict[str, Any] = {"bundle": self.name, "verdict": self.outcome, "counts": dict(self.counts)}
        if self.first_failure is not None:
            record["first_failure"] = self.first_failure
        if self.report is not None:
            record["report"] = dict(self.report)
        if self.error is not None:
            record["error"] = dict(self.error)
        return record


@functools.lru_cache(maxsize=8)
def _trust_root(raw: bytes) -> TrustRoot:
    """Parse a trust root once per process, keyed by its bytes (``bytes`` caches its own hash)."""
    return parse_trust_root(raw)


def warm_trust_root(raw: bytes) -> None:
    """Parse ``raw`` into this process's trust-root cache now: a pool forked afterwards starts with
    it parsed, instead of each worker parsing it for its first bundle."""
    _trust_root(raw)


def _inspect_v01(
    document: Any, trust_root: TrustRoot | None, case: Case, at: Time | None
) -> VerificationReport:
    if case.names_v02:
        raise InvalidInput(
            "checkout_hops, payment_hops and usage apply to v0.2 bundles; this is a v0.1 bundle",
            code="v02_case_for_v01_bundle",
        )
    bundle = bundle_from_value(document)
    return inspect_bundle(
        bundle,
        trust_root=trust_root,
        at=at,
        merchant_audience=case.merchant_audience,
        kb_audience=case.kb_audience,
        kb_nonce=case.kb_nonce,
        later_status_lists=case.later_status_lists,
    )


def _inspect_v02(
    document: Any, trust_root: TrustRoot | None, case: Case, at: Time | None
) -> VerificationReport:
    return inspect_v02_case(
        document,
        trust_root=trust_root,
        at=at,
        kb_nonce=case.kb_nonce,
        merchant_audience=case.merchant_audience,
        kb_audience=case.kb_audience,
        checkout_hops=case.checkout_hops,
        payment_hops=case.payment_hops,
        usage=case.usage,
        later_status_lists=case.later_status_lists,
    )


#: Evidence format → the function that verifies it (``format`` member of the bundle).
VERIFIERS: Final[dict[str, Verifier]] = {BUNDLE_FORMAT: _inspect_v01, BUNDLE_FORMAT_V02: _inspect_v02}


def verifier_for(document: Any) -> Verifier:
    """The verifier of this bundle's evidence format; ``not_a_bundle`` for a format nobody verifies."""
    form = document.get("format") if isinstance(document, Mapping) else None
    verifier = VERIFIERS.get(form) if isinstance(form, str) else None
    if verifier is None:
        raise InvalidInput(f"not a {BUNDLE_FORMAT} evidence bundle", code="not_a_bundle")
    return verifier


class Inspected(NamedTuple):
    """One bundle checked: its report, and the bundle as strictly parsed JSON (for a page that shows
    the raw mandates beside the report)."""

    report: VerificationReport
    document: Any


def inspect_bundle_bytes(
    bundle: bytes, *, trust_root: bytes | None, case: Case, at: Time | None = None
) -> Inspected:
    """Verify one bundle offline, in whichever evidence format it declares; raises for a malformed
    bundle, case or trust root (``InvalidInput``).  Arguments as :func:`verify_bundle_bytes`."""
    root = None if trust_root is None else _trust_root(trust_root)
    when = None if at is None else epoch(at)
    document = loads_strict(bundle, max_bytes=MAX_BUNDLE_BYTES, max_depth=64)
    return Inspected(verifier_for(document)(document, root, case, when), document)


def verify_bundle_bytes(
    bundle: bytes,
    *,
    trust_root: bytes | None,
    case: Case,
    at: Time | None = None,
    verbose: bool = False,
    render: Render = "failures",
    keep_report: bool = True,
) -> BundleResult:
    """Verify one bundle offline and return its :class:`BundleResult` (never raises for bad input).

    ``trust_root`` is the analyst's trust root as the bytes of its file (``None``: none, so at best
    UNANCHORED); ``case`` the analyst's expectations for this payment; ``at`` the evaluation time
    (default: the bundle's evidence time).  ``render`` says when to include the text report;
    ``keep_report=False`` leaves the JSON report out of the result (a batch that prints lines and a
    summary need not ship it back from a worker: it is most of a result's pickled size).
    A malformed bundle, case or trust root gives an ``ERROR`` result with the error's code, message
    and fields.  So does a bug (any other exception, as ``internal_error``): in a batch of thousands
    of bundles, one bundle that trips a bug must cost that bundle's verdict, never the verdicts of the
    bundles after it.
    """
    try:
        inspected = inspect_bundle_bytes(bundle, trust_root=trust_root, case=case, at=at)
        return BundleResult.from_report(
            case.name, inspected.report, verbose=verbose, render=render, keep_report=keep_report
        )
    except MudrikaError as exc:
        return BundleResult.from_error(case.name, exc)
    except Exception as exc:  # a bug in one bundle's check: that bundle's ERROR row, not the batch's end
        return BundleResult.from_unexpected(case.name, exc)


def verify_bundles(
    jobs: list[tuple[bytes, Case]],
    *,
    trust_root: bytes | None,
    at: Time | None = None,
    verbose: bool = False,
    render: Render = "failures",
    keep_report: bool = True,
) -> list[BundleResult]:
    """:func:`verify_bundle_bytes` over a few bundles in one call: a pool's unit of transfer.

    Shipping bundles a handful at a time amortises the cost of each inter-process round trip over
    several verifications; the results are exactly those of calling :func:`verify_bundle_bytes`
    on each bundle.
    """
    return [
        verify_bundle_bytes(
            data,
            trust_root=trust_root,
            case=case,
            at=at,
            verbose=verbose,
            render=render,
            keep_report=keep_report,
        )
        for data, case in jobs
    ]


#: The most bundles one task carries to a worker.  Chunks start at one bundle and double up to this,
#: so the first results come at once and every worker has work from the start, while a long batch
#: pays the round trip (submit, pickling, the future) once per 16 bundles: about 1 % of the work.
MAX_CHUNK: Final = 16
#: The same for a Dask cluster, where a task also costs the scheduler a round trip of its own (about
#: a millisecond of CPU, on a machine the workers may share): 64 bundles keep that near 1 % too.
MAX_CHUNK_DASK: Final = 64
#: Tasks in flight per worker: enough that no worker waits while the parent prints the oldest
#: task's results, few enough that a batch of any size runs in bounded memory.
IN_FLIGHT_PER_WORKER: Final = 4


class DaskClient(Protocol):
    """The part of ``distributed.Client`` a batch uses (so ``dask`` stays an optional import)."""

    def get_executor(self, **kwargs: Any) -> Executor: ...

    def nthreads(self) -> Mapping[str, int]: ...


Job = tuple[bytes, Case]
"""One bundle to verify: its bytes and the analyst's case."""


class _Task:
    """One chunk of the batch in flight: its entries in input order (a job, or a result known
    before any worker saw it) and the future of the jobs' results (``failure``: it could not be sent)."""

    __slots__ = ("entries", "failure", "future")

    def __init__(self, entries: list[Job | BundleResult]) -> None:
        self.entries = entries
        self.future: Future[list[BundleResult]] | None = None
        self.failure: Exception | None = None

    def results(self) -> Iterator[BundleResult]:
        """The chunk's results in input order; a task that failed as a whole (its worker died, its
        results could not be sent back, the pool was already broken) gives each of its bundles an
        ``internal_error`` row, so nothing is lost and the batch goes on."""
        done: Iterator[BundleResult] = iter(())
        failure = self.failure
        if self.future is not None:
            try:
                done = iter(self.future.result())
            except Exception as exc:  # a dead worker or a lost connection: this chunk's rows, not the batch
                failure = exc
        for entry in self.entries:
            if isinstance(entry, BundleResult):
                yield entry
            elif failure is not None:
                yield BundleResult.from_unexpected(entry[1].name, failure)
            else:
                yield next(done)


def _executor_of(engine: Executor | DaskClient) -> tuple[Executor, int, int]:
    """The executor to submit to, how many tasks it runs at once, and its largest chunk."""
    if isinstance(engine, Executor):
        # ProcessPoolExecutor and ThreadPoolExecutor keep their size here; any other executor is
        # assumed to have a worker per core.
        workers = getattr(engine, "_max_workers", None)
        size = workers if isinstance(workers, int) and workers > 0 else os.cpu_count() or 1
        return engine, size, MAX_CHUNK
    # A dask.distributed Client: pure=False, since two chunks alike must still both run (and
    # hashing every chunk's bytes to name its task would be wasted work).
    return engine.get_executor(pure=False), max(1, sum(engine.nthreads().values())), MAX_CHUNK_DASK


def verify_batch(
    jobs: Iterable[Job | BundleResult],
    *,
    trust_root: bytes | None,
    executor: Executor | DaskClient | None = None,
    at: Time | None = None,
    verbose: bool = False,
    render: Render = "failures",
    keep_report: bool = True,
    max_chunk: int | None = None,
) -> Iterator[BundleResult]:
    """:func:`verify_bundle_bytes` over a batch, yielding each result in input order.

    ``jobs`` is read lazily, one chunk ahead of the workers, so reading the next bundles overlaps
    verifying the last ones; a :class:`BundleResult` among them (a case that could not even be
    read) passes through in its place.  ``executor`` is where the work runs: ``None`` for this
    process, any :class:`concurrent.futures.Executor` (a process pool), or a
    ``distributed.Client`` (``dask``, imported by the caller: this module never needs it).  The
    trust root travels with every task as the verifier's bytes, never taken from a bundle.

    Whatever runs it, the results are the same and in the same order: workers compute
    :func:`verify_bundle_bytes`, a pure function of its arguments.  At most
    :data:`IN_FLIGHT_PER_WORKER` tasks per worker are in flight, so memory stays bounded.  A task
    that fails as a whole (its worker died) becomes ``internal_error`` rows for its own bundles.
    ``max_chunk`` caps the bundles per task (default :data:`MAX_CHUNK`, :data:`MAX_CHUNK_DASK` on
    a Dask client).
    """
    options: dict[str, Any] = {
        "trust_root": trust_root,
        "at": at,
        "verbose": verbose,
        "render": render,
        "keep_report": keep_report,
    }
    if executor is None:
        for job in jobs:
            yield (
                job if isinstance(job, BundleResult) else verify_bundle_bytes(job[0], case=job[1], **options)
            )
        return
    pool, workers, largest = _executor_of(executor)
    largest = largest if max_chunk is None else max(1, max_chunk)
    limit = workers * IN_FLIGHT_PER_WORKER
    window: deque[_Task] = deque()
    entries: list[Job | BundleResult] = []
    pending = 0  # jobs (not known results) in ``entries``
    size = 1

    def send() -> _Task:
        task = _Task(entries)
        work = [entry for entry in entries if not isinstance(entry, BundleResult)]
        if work:
            try:
                task.future = pool.submit(verify_bundles, work, **options)
            except Exception as exc:  # a broken pool (a worker was killed): these bundles' rows
                task.failure = exc
        return task

    for job in jobs:
        entries.append(job)
        if isinstance(job, BundleResult):
            continue
        pending += 1
        if pending < size:
            continue
        window.append(send())
        entries, pending, size = [], 0, min(size * 2, largest)
        while len(window) >= limit:
            yield from window.popleft().results()
    if entries:
        window.append(send())
    while window:
        yield from window.popleft().results()
