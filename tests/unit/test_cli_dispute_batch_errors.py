"""``mudrika dispute verify --cases``: a case that cannot be checked is that case's ERROR row.

Whatever goes wrong with one case (a bundle the strict parser refuses, a case line that is not
JSON, a path no file can have, a bug in a verifier), the cases after it are still verified, the
summary still comes, and the exit code is the worst verdict's: ERROR (2) over FAILED/UNANCHORED (1)
over OK (0).  The first shape was a real leak: a bundle nested too deep with a bad escape raised
``json.JSONDecodeError`` out of the strict parser and ended the whole batch with ``internal_error``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.payments import batch
from mudrika.payments.bundle import BUNDLE_FORMAT
from mudrika.payments.trustroot import TrustRoot
from tests._support.cli import run_cli_json
from tests._support.evidence import BUNDLE, NONCE, TRUST_ROOT

#: Nested past every depth limit, with an escape JSON does not have before the depth point.
DEEP_WITH_BAD_ESCAPE = '["\\x",' + "[" * 200 + '"\\x"'


def _write_cases(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _genuine(case_id: str) -> str:
    return json.dumps({"id": case_id, "bundle": str(BUNDLE), "kb_nonce": NONCE})


def _verify(capsys: pytest.CaptureFixture[str], cases: Path, *extra: str) -> tuple[int, Any]:
    code, document, _ = run_cli_json(
        capsys, "dispute", "verify", "--cases", str(cases), "--trust-root", str(TRUST_ROOT), "--json", *extra
    )
    return code, document


@pytest.mark.usefixtures("no_network")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_unreadable_cases_are_error_rows_and_the_batch_goes_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, jobs: str
) -> None:
    deep_bundle = tmp_path / "deep.json"
    deep_bundle.write_text(DEEP_WITH_BAD_ESCAPE)
    cases = _write_cases(
        tmp_path / "cases.jsonl",
        [
            _genuine("first"),
            json.dumps({"id": "deep-bundle", "bundle": str(deep_bundle), "kb_nonce": NONCE}),
            DEEP_WITH_BAD_ESCAPE,  # the case line itself
            json.dumps({"id": "nul-in-path", "bundle": "bundle\u0000.json"}),
            _genuine("last"),
        ],
    )
    code, document = _verify(capsys, cases, "--jobs", jobs)
    assert code == 2
    rows = {row["path"]: row for row in document["results"]}
    assert len(document["results"]) == 5
    assert rows["first"]["verdict"] == "OK"
    assert rows["last"]["verdict"] == "OK"
    assert rows["deep-bundle"]["verdict"] == "ERROR"
    assert rows["deep-bundle"]["error"]["code"] == "too_deep"
    line_three = rows[f"{cases}:3"]
    assert line_three["verdict"] == "ERROR"
    assert line_three["error"]["code"] == "too_deep"
    assert rows["nul-in-path"]["error"]["code"] == "unreadable"
    assert document["summary"]["verdicts"] == {"OK": 2, "UNANCHORED": 0, "FAILED": 0, "ERROR": 3}


@pytest.mark.usefixtures("no_network")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_bug_in_one_case_is_that_cases_internal_error_row(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """A non-MudrikaError raised while checking one case: an ``internal_error`` row naming the
    exception's type (never its message), and every other case still verified."""
    genuine = batch.VERIFIERS[BUNDLE_FORMAT]

    def buggy(document: Any, root: TrustRoot | None, case: batch.Case, at: float | None) -> Any:
        if case.name == "buggy":
            raise ZeroDivisionError("secret-looking detail that must not be shown")
        return genuine(document, root, case, at)

    # The pool's workers are forked after the patch, so they run the buggy verifier too.
    monkeypatch.setitem(batch.VERIFIERS, BUNDLE_FORMAT, buggy)
    cases = _write_cases(tmp_path / "cases.jsonl", [_genuine("before"), _genuine("buggy"), _genuine("after")])
    code, document = _verify(capsys, cases, "--jobs", jobs)
    rows = {row["path"]: row for row in document["results"]}
    assert rows["before"]["verdict"] == "OK"
    assert rows["after"]["verdict"] == "OK"
    error = rows["buggy"]["error"]
    assert rows["buggy"]["verdict"] == "ERROR"
    assert error["code"] == "internal_error"
    assert error["fields"]["type"] == "builtins.ZeroDivisionError"
    assert error["fields"]["at"].startswith("test_cli_dispute_batch_errors.py:")
    assert "secret-looking" not in json.dumps(document)
    assert code == 2


@pytest.mark.usefixtures("no_network")
def test_the_exit_code_is_the_worst_verdict(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    unanchored = json.dumps({"id": "unanchored", "bundle": str(BUNDLE)})  # the bundle's own nonce
    all_ok = _write_cases(tmp_path / "ok.jsonl", [_genuine("a"), _genuine("b")])
    assert _verify(capsys, all_ok)[0] == 0
    with_unanchored = _write_cases(tmp_path / "un.jsonl", [_genuine("a"), unanchored])
    assert _verify(capsys, with_unanchored)[0] == 1
    with_error = _write_cases(tmp_path / "err.jsonl", [unanchored, "{", _genuine("b")])
    code, document = _verify(capsys, with_error)
    assert code == 2
    assert [row["verdict"] for row in document["results"]] == ["UNANCHORED", "ERROR", "OK"]


def test_verify_bundle_bytes_turns_a_bug_into_an_error_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pure batch function itself never raises for one bundle, bug or not."""

    def broken(document: Any, root: TrustRoot | None, case: batch.Case, at: float | None) -> Any:
        raise KeyError("nothing")

    monkeypatch.setitem(batch.VERIFIERS, BUNDLE_FORMAT, broken)
    result = batch.verify_bundle_bytes(BUNDLE.read_bytes(), trust_root=None, case=batch.Case(name="x"))
    assert result.outcome == "ERROR"
    assert result.first_failure == "internal_error"
    assert result.error is not None
    assert result.error["fields"]["type"] == "builtins.KeyError"
    deep = batch.verify_bundle_bytes(
        DEEP_WITH_BAD_ESCAPE.encode(), trust_root=None, case=batch.Case(name="deep")
    )
    assert deep.error is not None
    assert deep.error["code"] == "too_deep"
