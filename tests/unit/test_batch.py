"""The unit of batch work: a pure, picklable function from bundle bytes (+ trust root) to a result."""

from __future__ import annotations

import json
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from mudrika.errors import InvalidInput
from mudrika.payments.batch import Case, parse_case, verifier_for, verify_bundle_bytes
from tests._support.dispute_batch import batch_of
from tests._support.evidence import BUNDLE, NONCE, TRUST_ROOT
from tests._support.offline import forbid_network

ROOT = TRUST_ROOT.read_bytes()


def _verify(job: tuple[bytes, Case]) -> object:
    data, case = job
    return verify_bundle_bytes(data, trust_root=ROOT, case=case)


def test_each_kind_of_case_gets_its_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_network(monkeypatch)
    results = [verify_bundle_bytes(data, trust_root=ROOT, case=case) for data, case in batch_of(5)]
    assert [(r.name, r.outcome) for r in results] == [
        ("0000-genuine", "OK"),
        ("0001-amount-raised", "FAILED"),
        ("0002-other-nonce", "FAILED"),
        ("0003-genuine", "OK"),
        ("0004-no-case-nonce", "UNANCHORED"),
    ]
    assert results[1].first_failure == (
        "user.kb.transaction_data: the payment contents changed after the user signed them"
    )
    assert results[2].first_failure is not None
    assert results[2].first_failure.startswith("user.kb.nonce: ")
    # Text reports are rendered in the worker, and only for what is not OK (by default).
    assert results[0].text is None
    assert results[1].text is not None
    assert results[1].text.splitlines()[1] == "VERDICT: FAILED"
    assert results[4].report is not None
    assert results[4].report["expectations"]["kb_nonce"]["source"] == "evidence"


def test_results_are_picklable_and_the_same_in_a_process_pool() -> None:
    jobs = batch_of(10)
    local = [_verify(job) for job in jobs]
    assert pickle.loads(pickle.dumps(local)) == local
    with ProcessPoolExecutor(max_workers=2) as pool:
        pooled = list(pool.map(_verify, jobs))
    assert pooled == local


def test_the_function_is_pure() -> None:
    data, case = batch_of(2)[1]
    first = verify_bundle_bytes(data, trust_root=ROOT, case=case, render="always", verbose=True)
    second = verify_bundle_bytes(data, trust_root=ROOT, case=case, render="always", verbose=True)
    assert first == second
    assert first.report is not None
    assert first.report["passed"]["listed"] is True


def test_bad_input_is_an_error_result_never_an_exception() -> None:
    result = verify_bundle_bytes(b"{", trust_root=ROOT, case=Case(name="broken"))
    assert result.outcome == "ERROR"
    assert result.error is not None
    assert result.error["code"] == "malformed_json"
    result = verify_bundle_bytes(BUNDLE.read_bytes(), trust_root=b"{}", case=Case(name="x"))
    assert result.outcome == "ERROR"
    other = json.dumps({"format": "mudrika.evidence/v9"}).encode()
    assert verify_bundle_bytes(other, trust_root=None, case=Case(name="v9")).first_failure == "not_a_bundle"
    with pytest.raises(InvalidInput):
        verifier_for({"format": "something-else"})


def test_cases_refuse_unknown_members_and_never_show_the_nonce() -> None:
    case, bundle = parse_case({"id": "c1", "bundle": "b.json", "kb_nonce": NONCE}, name="line 1")
    assert (case.name, bundle) == ("c1", "b.json")
    assert NONCE not in repr(case)
    with pytest.raises(InvalidInput) as caught:
        parse_case({"bundle": "b.json", "kb_once": NONCE}, name="line 2")
    assert caught.value.code == "bad_case"
    with pytest.raises(InvalidInput):
        parse_case({"bundle": "b.json", "kb_nonce": ""}, name="line 3")
    with pytest.raises(InvalidInput):
        parse_case(["b.json"], name="line 4")


def test_the_api_takes_the_same_time_forms_as_the_cli() -> None:
    data = BUNDLE.read_bytes()
    case = Case(name="t", kb_nonce=NONCE)
    late = [
        verify_bundle_bytes(data, trust_root=ROOT, case=case, at=at).outcome
        for at in ("2026-06-01T00:00:00Z", 1780272000, "1780272000")
    ]
    assert late == ["FAILED", "FAILED", "FAILED"]
    on_time = verify_bundle_bytes(data, trust_root=ROOT, case=case, at="2025-10-01T12:21:10+00:00")
    assert on_time.outcome == "OK"
    naive = verify_bundle_bytes(data, trust_root=ROOT, case=case, at="2025-10-01T12:21:10")
    assert naive.error is not None
    assert naive.error["code"] == "naive_timestamp"


def test_inspect_bundle_takes_iso_text_too() -> None:
    from mudrika.payments.bundle import inspect_bundle, load_bundle

    report = inspect_bundle(load_bundle(BUNDLE), trust_root=None, at="2025-10-01T12:21:10Z")
    assert report.evaluated_at == "2025-10-01T12:21:10Z"
