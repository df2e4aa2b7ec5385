"""``verify_batch`` and ``dispute verify --jobs``: the same results, in the same order, on any engine.

Why: a batch's verdicts must not depend on where they were computed, and an analyst comparing two
runs (one process, a pool, a cluster) must see the same bytes.  Each engine is held to the serial
run, result by result and byte by byte of the command's output; a worker that dies costs the rows
of its own bundles, never the rows of the others.
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from mudrika.errors import InvalidInput
from mudrika.payments import batch
from mudrika.payments.batch import BundleResult, Case, verify_batch, verify_bundle_bytes
from mudrika.payments.bundle import BUNDLE_FORMAT
from mudrika.payments.trustroot import TrustRoot
from tests._support.cli import run_cli
from tests._support.dispute_batch import batch_of
from tests._support.evidence import NONCE, TRUST_ROOT

ROOT = TRUST_ROOT.read_bytes()
JOBS = batch_of(12)


def _serial(jobs: list[tuple[bytes, Case]], **options: Any) -> list[BundleResult]:
    return [verify_bundle_bytes(data, trust_root=ROOT, case=case, **options) for data, case in jobs]


def _unreadable(name: str) -> BundleResult:
    return BundleResult.from_error(name, InvalidInput("cannot read it", code="unreadable"))


@pytest.mark.parametrize("max_chunk", [1, 3, 16])
def test_a_process_pool_gives_the_serial_results_in_input_order(max_chunk: int) -> None:
    with ProcessPoolExecutor(max_workers=2) as pool:
        pooled = list(verify_batch(JOBS, trust_root=ROOT, executor=pool, max_chunk=max_chunk))
    assert pooled == _serial(JOBS)
    assert [result.name for result in pooled] == [case.name for _, case in JOBS]
    assert {result.outcome for result in pooled} == {"OK", "FAILED", "UNANCHORED"}


def test_every_engine_and_none_agree() -> None:
    serial = list(verify_batch(JOBS, trust_root=ROOT))
    with ThreadPoolExecutor(max_workers=3) as threads:
        threaded = list(verify_batch(iter(JOBS), trust_root=ROOT, executor=threads))
    assert serial == threaded == _serial(JOBS)


def test_a_known_result_passes_through_in_its_place() -> None:
    """A case that could not be read is its ERROR row, between the rows of its neighbours."""
    entries: list[tuple[bytes, Case] | BundleResult] = [
        _unreadable("first"),
        *JOBS[:5],
        _unreadable("middle"),
        _unreadable("middle-2"),
        *JOBS[5:],
        _unreadable("last"),
    ]
    expected = [
        entry
        if isinstance(entry, BundleResult)
        else verify_bundle_bytes(entry[0], trust_root=ROOT, case=entry[1])
        for entry in entries
    ]
    with ProcessPoolExecutor(max_workers=2) as pool:
        assert list(verify_batch(entries, trust_root=ROOT, executor=pool, max_chunk=4)) == expected
    assert list(verify_batch(entries, trust_root=ROOT)) == expected
    only_known = [_unreadable("a"), _unreadable("b")]
    with ThreadPoolExecutor(max_workers=2) as threads:
        assert list(verify_batch(only_known, trust_root=ROOT, executor=threads)) == only_known


def test_keep_report_false_drops_only_the_report() -> None:
    full = _serial(JOBS, render="always", verbose=True)
    light = list(verify_batch(JOBS, trust_root=ROOT, render="always", verbose=True, keep_report=False))
    assert all(result.report is None for result in light)
    assert [(r.name, r.outcome, r.counts, r.first_failure, r.text) for r in light] == [
        (r.name, r.outcome, r.counts, r.first_failure, r.text) for r in full
    ]


class _LosesOneTask(Executor):
    """An executor whose task holding the bundle named ``lost`` fails as a whole (as when its worker
    dies or its connection drops), and which refuses every task after it (a broken pool)."""

    def __init__(self, lost: str) -> None:
        self.lost = lost
        self.broken = False

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        if self.broken:
            raise RuntimeError("the pool is broken")
        future: Future[Any] = Future()
        jobs: list[tuple[bytes, Case]] = args[0]
        if any(case.name == self.lost for _, case in jobs):
            self.broken = True
            future.set_exception(ConnectionResetError("worker lost"))
        else:
            future.set_result(fn(*args, **kwargs))
        return future


def test_a_task_that_fails_as_a_whole_costs_only_its_own_rows() -> None:
    lost = JOBS[6][1].name
    results = list(verify_batch(JOBS, trust_root=ROOT, executor=_LosesOneTask(lost), max_chunk=4))
    assert [result.name for result in results] == [case.name for _, case in JOBS]
    serial = _serial(JOBS)
    # Chunks of 1, 2 and 4 bundles: the first three (bundles 0-6) went out, the third was lost.
    assert results[:3] == serial[:3]
    for result in results[3:]:
        assert result.outcome == "ERROR"
        assert result.error is not None
        assert result.error["code"] == "internal_error"
    lost_rows = [r.error["fields"]["type"] for r in results[3:7] if r.error is not None]
    assert lost_rows == ["builtins.ConnectionResetError"] * 4
    refused = {r.error["fields"]["type"] for r in results[7:] if r.error is not None}
    assert refused == {"builtins.RuntimeError"}


@pytest.mark.skipif(sys.platform != "linux", reason="the pool's workers must inherit the patch (fork)")
def test_a_worker_that_dies_costs_rows_not_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real worker process killed mid-batch: every bundle still has its row, in order."""
    genuine = batch.VERIFIERS[BUNDLE_FORMAT]

    def deadly(document: Any, root: TrustRoot | None, case: Case, at: float | None) -> Any:
        if case.name == JOBS[4][1].name:
            os._exit(3)  # the process dies: no exception, no result
        return genuine(document, root, case, at)

    monkeypatch.setitem(batch.VERIFIERS, BUNDLE_FORMAT, deadly)
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(verify_batch(JOBS, trust_root=ROOT, executor=pool, max_chunk=2))
    assert [result.name for result in results] == [case.name for _, case in JOBS]
    dead = results[4]
    assert dead.outcome == "ERROR"
    assert dead.error is not None
    assert dead.error["fields"]["type"] == "concurrent.futures.process.BrokenProcessPool"
    assert all(result.outcome in {"OK", "FAILED", "UNANCHORED", "ERROR"} for result in results)


# -- the command: byte-identical output whatever --jobs says ----------------------------------------------


def _case_file(tmp_path: Path, jobs: list[tuple[bytes, Case]]) -> Path:
    lines = []
    for index, (data, case) in enumerate(jobs):
        path = tmp_path / f"bundle-{index}.json"
        path.write_bytes(data)
        line: dict[str, str] = {"id": case.name, "bundle": path.name}
        if case.kb_nonce is not None:
            line["kb_nonce"] = case.kb_nonce
        lines.append(json.dumps(line))
    lines.insert(3, "not json")  # a case that cannot be read: its ERROR row, in its place
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(lines) + "\n")
    return cases


@pytest.mark.usefixtures("no_network")
@pytest.mark.parametrize(
    "extra",
    [(), ("--json",), ("--summary-only",), ("--verbose",), ("--summary-only", "--json")],
    ids=["lines", "json", "summary", "verbose", "summary-json"],
)
def test_jobs_2_prints_what_jobs_1_prints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: tuple[str, ...]
) -> None:
    cases = _case_file(tmp_path, batch_of(10))
    runs = {}
    for jobs in ("1", "2", "0"):
        out_file = tmp_path / f"rows-{jobs}.jsonl"
        argv = ("dispute", "verify", "--cases", str(cases), "--trust-root", str(TRUST_ROOT), "--jobs", jobs)
        code, out, err = run_cli(capsys, *argv, "--json-out", str(out_file), *extra)
        runs[jobs] = (code, out, err.replace(str(out_file), "ROWS"), out_file.read_bytes())
    assert runs["1"] == runs["2"] == runs["0"]
    code, out, err, rows = runs["1"]
    assert code == 2  # the unreadable case line
    assert len(rows.splitlines()) == 11
    assert [json.loads(row)["bundle"] for row in rows.splitlines()][2:5] == [
        "0002-other-nonce",
        f"{cases}:4",
        "0003-genuine",
    ]
    if "--json" in extra and "--summary-only" not in extra:
        assert [row["verdict"] for row in json.loads(out)["results"]][:5] == [
            "OK",
            "FAILED",
            "FAILED",
            "ERROR",
            "OK",
        ]


@pytest.mark.usefixtures("no_network")
def test_one_bundle_with_summary_only_goes_through_the_batch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cases = tmp_path / "one.jsonl"
    data, case = batch_of(1)[0]
    (tmp_path / "b.json").write_bytes(data)
    cases.write_text(json.dumps({"id": case.name, "bundle": "b.json", "kb_nonce": NONCE}) + "\n")
    argv = ("dispute", "verify", "--cases", str(cases), "--trust-root", str(TRUST_ROOT), "--summary-only")
    assert run_cli(capsys, *argv, "--jobs", "2") == run_cli(capsys, *argv)
    code, _, err = run_cli(capsys, *argv)
    assert code == 0
    assert "  OK                 1" in err.splitlines()


def test_scheduler_and_jobs_are_one_or_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    cases = ("dispute", "verify", str(TRUST_ROOT), str(TRUST_ROOT))
    code, _, err = run_cli(capsys, *cases, "--jobs", "2", "--scheduler", "tcp://127.0.0.1:1")
    assert code == 2
    assert "--scheduler" in err


def test_scheduler_needs_an_address(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "dispute", "verify", str(TRUST_ROOT), str(TRUST_ROOT), "--scheduler", "x", "--json"
    )
    assert code == 2
    assert json.loads(out)["error"]["code"] == "bad_scheduler"


def test_without_dask_scheduler_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    code, out, _ = run_cli(
        capsys,
        "dispute",
        "verify",
        str(TRUST_ROOT),
        str(TRUST_ROOT),
        "--scheduler",
        "tcp://127.0.0.1:1",
        "--json",
    )
    assert code == 2
    document = json.loads(out)["error"]
    assert document["code"] == "dask_not_installed"
    assert "distributed" in document["message"]


def _death_signal_after_the_initializer() -> int:
    import ctypes

    from mudrika.cli.dispute import die_with_parent

    die_with_parent(os.getppid())
    found = ctypes.c_int()
    ctypes.CDLL(None).prctl(2, ctypes.byref(found), 0, 0, 0)  # PR_GET_PDEATHSIG
    return found.value


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_asks_to_end_with_the_command() -> None:
    """A killed command must not leave its forked workers waiting forever on their queue."""
    import multiprocessing
    import signal

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
        assert pool.submit(_death_signal_after_the_initializer).result() == signal.SIGTERM
