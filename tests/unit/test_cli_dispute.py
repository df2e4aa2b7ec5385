"""``mudrika dispute verify``: offline, at the evidence time, exit codes 0/1/2, JSON and HTML output;
the report a person can adjudicate; batches (files, directories, stdin, case files, --json-out)."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests._support.cli import run_cli
from tests._support.evidence import BUNDLE, NONCE, TRUST_ROOT
from tests._support.paths import FIXTURES

#: The analyst's side of the fixture case: the trust root and the processor's nonce.
CASE = ("--trust-root", str(TRUST_ROOT), "--kb-nonce", NONCE)
AUDIENCE = "https://payments.processor.example"


def _report(out: str) -> Any:
    """The report of the one bundle in a ``--json`` document (the same shape as a batch's)."""
    (row,) = json.loads(out)["results"]
    return row["report"]


@pytest.mark.usefixtures("no_network")
def test_valid_at_evidence_time(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "dispute", "verify", str(BUNDLE), *CASE)
    assert code == 0
    assert out == ""
    assert "VERDICT: OK" in err
    assert "Verdict OK: every check passed and every key is anchored in your trust root." in err
    # Who paid whom, what, how much, when, and whose signature each fact rests on.
    assert "paid Stride Athletics (did:web:stride-athletics.example) USD 138.49" in err
    assert "rest on the merchant's signature" in err
    assert "PASSED: 77 checks (--verbose lists them)" in err
    assert "replay.kb_nonce" not in err  # passed checks are collapsed to a count
    assert "UNANCHORED" not in err
    # Every key the verdict rests on, thumbprint and provenance on one unwrapped line.
    merchant_line = next(line for line in err.splitlines() if line.startswith("  merchant: "))
    assert "thumbprint=W1COp5sh4XJjdJJhehqepuwWoGMjOeyWIwof0QHuZV4 provenance=trust-root" in merchant_line
    code, _, err = run_cli(capsys, "dispute", "verify", str(BUNDLE), *CASE, "--verbose")
    assert code == 0
    assert "PASSED (77)" in err
    assert "  replay.kb_nonce = first use" in err


@pytest.mark.usefixtures("no_network")
def test_without_the_analysts_trust_the_verdict_is_unanchored(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "dispute", "verify", str(BUNDLE), "--json")
    assert code == 1
    report = _report(out)
    assert report["verdict"] == "UNANCHORED"
    assert report["counts"]["failed"] == 0
    assert report["trust_root"] is None
    assert "Verdict UNANCHORED: every check passed" in err
    assert "no trust root was given" in err
    code, out, err = run_cli(
        capsys, "dispute", "verify", str(BUNDLE), "--trust-root", str(TRUST_ROOT), "--json"
    )
    assert code == 1
    assert _report(out)["unanchored_because"] == [
        "kb_nonce was asserted by the evidence, not by the analyst or the trust root"
    ]


@pytest.mark.usefixtures("no_network")
def test_a_malformed_trust_root_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = json.loads(TRUST_ROOT.read_text())
    root["surprise"] = True
    path = tmp_path / "root.json"
    path.write_text(json.dumps(root))
    code, _, err = run_cli(capsys, "dispute", "verify", str(BUNDLE), "--trust-root", str(path))
    assert code == 2
    assert "malformed trust root" in err


@pytest.mark.usefixtures("no_network")
def test_expired_now_passes_with_at_and_fails_later(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "dispute", "verify", str(BUNDLE), *CASE, "--at", "2025-10-01T12:21:10Z", "--json"
    )
    assert code == 0
    assert _report(out)["ok"] is True
    code, out, err = run_cli(
        capsys, "dispute", "verify", str(BUNDLE), *CASE, "--at", "2026-06-01T00:00:00Z", "--json"
    )
    assert code == 1
    report = _report(out)
    assert [c["id"] for c in report["checks"] if c["status"] == "failed"] == ["intent.expiry"]
    assert [f["meaning"] for f in report["failures"]] == [
        "the intent had expired when the payment was evaluated"
    ]
    assert "VERDICT: FAILED" in err
    # UNIX seconds are accepted wherever ISO 8601 is (one parser for the CLI and the API).
    assert run_cli(capsys, "dispute", "verify", str(BUNDLE), *CASE, "--at", "1759321270")[0] == 0


def test_html_report_is_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    document = json.loads(BUNDLE.read_text())
    document["expectations"]["merchant_audience"] = '<img src=x onerror="alert(1)">'
    bundle = tmp_path / "hostile.json"
    bundle.write_text(json.dumps(document))
    html = tmp_path / "out" / "report.html"
    html.parent.mkdir()
    code, _, _ = run_cli(capsys, "dispute", "verify", str(bundle), "--html", str(html))
    assert code == 1
    text = html.read_text()
    assert "<img" not in text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text
    assert "<script" not in text


@pytest.mark.usefixtures("no_network")
def test_html_report_has_the_unanchored_banner(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    assert run_cli(capsys, "dispute", "verify", str(BUNDLE), "--html", str(html))[0] == 1
    text = html.read_text()
    assert '<div class="banner"><h2>UNANCHORED</h2>' in text
    assert "a JWK Set snapshot carried with the evidence" in text
    anchored = tmp_path / "anchored.html"
    assert run_cli(capsys, "dispute", "verify", str(BUNDLE), *CASE, "--html", str(anchored))[0] == 0
    text = anchored.read_text()
    assert "<h2>UNANCHORED</h2>" not in text
    assert "Keys the verdict rests on" in text
    assert "<summary>cart (raw JSON as received)</summary>" in text
    assert "ij40EeFkDAwv1WZlfp1kSw2umINfw6ap3QkrNPcUkyM" in text


def test_malformed_bundle_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "mudrika.evidence/v1"}')
    code, _, err = run_cli(capsys, "dispute", "verify", str(bad))
    assert code == 2
    assert "malformed evidence bundle" in err
    assert run_cli(capsys, "dispute", "verify", str(BUNDLE), "--at", "not-a-time")[0] == 2
    assert run_cli(capsys, "dispute", "verify")[0] == 2


@pytest.mark.usefixtures("no_network")
def test_batch_with_a_process_pool(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    paths = []
    for index in range(4):
        path = tmp_path / f"b{index}.json"
        shutil.copy(BUNDLE, path)
        paths.append(str(path))
    root = ("--trust-root", str(TRUST_ROOT))
    code, out, _ = run_cli(capsys, "dispute", "verify", *paths, *root, "--jobs", "2", "--json")
    # Each bundle's nonce is only the bundle's word (--kb-nonce names one payment): UNANCHORED.
    assert code == 1
    results = json.loads(out)["results"]
    assert [r["path"] for r in results] == paths
    assert all(r["report"]["verdict"] == "UNANCHORED" for r in results)
    assert all(r["report"]["counts"]["failed"] == 0 for r in results)
    assert run_cli(capsys, "dispute", "verify", *paths, "--kb-nonce", NONCE)[0] == 2
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    code, out, _ = run_cli(capsys, "dispute", "verify", *paths[:2], str(broken), "--jobs", "0", "--json")
    assert code == 2
    assert json.loads(out)["results"][2]["error"]["code"] == "malformed_json"


def test_html_needs_exactly_one_bundle(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, _ = run_cli(
        capsys, "dispute", "verify", str(BUNDLE), str(BUNDLE), "--html", str(tmp_path / "r.html")
    )
    assert code == 2


def test_console_markup_in_values_is_shown_literally(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = json.loads(BUNDLE.read_text())
    document["expectations"]["kb_nonce"] = "[bold red]x[/]"
    document["expectations"]["merchant_audience"] = "[link=https://evil.example]click[/link]"
    bundle = tmp_path / "markup.json"
    bundle.write_text(json.dumps(document))
    code, _, err = run_cli(capsys, "dispute", "verify", str(bundle))
    assert code == 1
    # Interpreted markup would vanish (and become a hyperlink); shown literally, its brackets stay.
    assert "[link=" in err


def _tampered(tmp_path: Path, name: str = "tampered.json") -> Path:
    """The fixture bundle with the amount raised to 1384.90 after the user signed."""
    document = json.loads(BUNDLE.read_text())
    contents = document["mandates"]["payment"]["payment_mandate_contents"]
    contents["payment_details_total"]["amount"]["value"] = 1384.90
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


@pytest.mark.usefixtures("no_network")
def test_a_changed_amount_is_explained_with_both_values(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run_cli(capsys, "dispute", "verify", str(_tampered(tmp_path)), *CASE)
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    # The verdict first, then the failures; passed checks only as a count.
    assert lines[1] == "VERDICT: FAILED"
    assert lines[2].startswith(
        "Verdict FAILED: 1 check failed; first user.kb.transaction_data: "
        "the payment contents changed after the user signed them."
    )
    assert lines.index("FAILURES (1)") < lines.index(
        "VALUES THAT DIFFER (evidence from unsigned data: read from the mandates, not verified)"
    )
    assert "  1. user.kb.transaction_data: the payment contents changed after the user signed them" in lines
    assert "     rests on:           the user's signature" in lines
    signed = next(line for line in lines if line.startswith("     signed value:"))
    recomputed = next(line for line in lines if line.startswith("     recomputed value:"))
    assert signed != recomputed
    assert "     cart (merchant):          USD 138.49" in lines
    assert "     payment (user):           USD 1,384.90" in lines
    assert any(line.startswith("PASSED: ") and "checks (--verbose lists them)" in line for line in lines)


@pytest.mark.usefixtures("no_network")
def test_json_puts_the_same_structure_and_nothing_else_on_stdout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run_cli(capsys, "dispute", "verify", str(_tampered(tmp_path)), *CASE, "--json")
    assert code == 1
    report = _report(out)  # one JSON document, no human tables
    assert report["verdict"] == "FAILED"
    assert report["summary"].startswith("Verdict FAILED: 1 check failed")
    (failure,) = report["failures"]
    assert failure["id"] == "user.kb.transaction_data"
    assert failure["meaning"] == "the payment contents changed after the user signed them"
    assert failure["rests_on"] == "the user's signature"
    assert failure["signed_value"] != failure["recomputed_value"]
    (comparison,) = report["comparisons"]
    assert comparison["values"] == {"cart (merchant)": "USD 138.49", "payment (user)": "USD 1,384.90"}
    assert comparison["evidence"].startswith("unsigned data")
    assert report["passed"] == {"count": report["counts"]["passed"], "listed": False}
    assert all(check["status"] != "passed" for check in report["checks"])
    code, out, _ = run_cli(capsys, "dispute", "verify", str(_tampered(tmp_path)), *CASE, "--json", "-v")
    assert sum(check["status"] == "passed" for check in _report(out)["checks"]) == report["counts"]["passed"]


def _cases(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    return path


@pytest.mark.usefixtures("no_network")
def test_a_case_file_gives_each_bundle_its_own_nonce(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for index in range(3):
        shutil.copy(BUNDLE, tmp_path / f"b{index}.json")
    _tampered(tmp_path, "b3.json")
    cases = _cases(
        tmp_path,
        [{"id": f"case-{i}", "bundle": f"b{i}.json", "kb_nonce": NONCE} for i in range(4)],
    )
    out_file = tmp_path / "results.jsonl"
    code, out, err = run_cli(
        capsys, "dispute", "verify", "--cases", str(cases), "--trust-root", str(TRUST_ROOT),
        "--jobs", "2", "--json-out", str(out_file),
    )  # fmt: skip
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    # One line per bundle as it finishes; the full report only for the failure; then the summary.
    for index in range(3):
        assert any(line.startswith("OK         case-" + str(index)) for line in lines)
    assert any(line.startswith("FAILED     case-3") and "user.kb.transaction_data" in line for line in lines)
    assert lines.count("VERDICT: FAILED") == 1
    assert "VERDICT: OK" not in lines
    assert "SUMMARY: 4 bundles" in lines
    assert "  OK                 3" in lines
    assert "  FAILED             1" in lines
    records = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert sorted(record["bundle"] for record in records) == [f"case-{i}" for i in range(4)]
    verdicts = {record["bundle"]: record["verdict"] for record in records}
    assert verdicts == {"case-0": "OK", "case-1": "OK", "case-2": "OK", "case-3": "FAILED"}
    # The bundles' own nonces are the evidence's word: without the case file, never OK.
    code, out, _ = run_cli(capsys, "dispute", "verify", str(tmp_path / "b0.json"), str(tmp_path / "b1.json"),
                        "--trust-root", str(TRUST_ROOT), "--json")  # fmt: skip
    assert code == 1
    assert json.loads(out)["summary"]["verdicts"]["UNANCHORED"] == 2


@pytest.mark.usefixtures("no_network")
def test_an_unknown_case_member_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = _cases(tmp_path, [{"bundle": str(BUNDLE), "kb_once": NONCE}, {"bundle": str(BUNDLE)}])
    code, out, err = run_cli(capsys, "dispute", "verify", "--cases", str(cases), "--json")
    assert code == 2
    results = json.loads(out)["results"]
    assert results[0]["error"]["code"] == "bad_case"
    assert results[0]["error"]["fields"]["members"] == ["kb_once"]
    assert results[1]["verdict"] == "UNANCHORED"
    assert "ERROR      " in err


@pytest.mark.usefixtures("no_network")
def test_stdin_takes_one_bundle_or_json_lines_of_cases(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(BUNDLE.read_bytes())))
    code, out, _ = run_cli(capsys, "dispute", "verify", "-", *CASE, "--json")
    assert code == 0
    assert _report(out)["verdict"] == "OK"
    lines = b"".join(
        json.dumps({"id": name, "bundle": str(BUNDLE), "kb_nonce": NONCE}).encode() + b"\n" for name in "ab"
    )
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(lines)))
    code, out, _ = run_cli(capsys, "dispute", "verify", "-", "--trust-root", str(TRUST_ROOT), "--json")
    assert code == 0
    results = json.loads(out)["results"]
    assert [(r["path"], r["verdict"]) for r in results] == [("a", "OK"), ("b", "OK")]


@pytest.mark.parametrize("argv", [("-",), ("--cases", "-")])
def test_oversized_stdin_is_refused_not_cut_short(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    line = json.dumps({"id": "a", "bundle": str(BUNDLE), "kb_nonce": NONCE}).encode() + b"\n"
    monkeypatch.setattr("mudrika.cli.dispute._MAX_CASES_BYTES", len(line) * 2 - 1)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(line * 2)))
    code, out, err = run_cli(capsys, "dispute", "verify", *argv, "--json")
    assert code == 2
    assert json.loads(out)["error"]["code"] == "too_large"
    assert "stdin is larger than" in err


@pytest.mark.usefixtures("no_network")
def test_a_directory_is_every_bundle_in_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name in ("one.json", "two.json"):
        shutil.copy(BUNDLE, tmp_path / name)
    (tmp_path / "notes.txt").write_text("not a bundle")
    code, out, _ = run_cli(capsys, "dispute", "verify", str(tmp_path), "--json")
    assert code == 1
    assert [Path(r["path"]).name for r in json.loads(out)["results"]] == ["one.json", "two.json"]


def test_control_characters_in_values_are_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    document = json.loads(BUNDLE.read_text())
    document["expectations"]["merchant_audience"] = "evil\x1b[2J\nVERDICT: OK"
    bundle = tmp_path / "escape.json"
    bundle.write_text(json.dumps(document))
    code, _, err = run_cli(capsys, "dispute", "verify", str(bundle))
    assert code == 1
    assert "\x1b" not in err
    assert "evil\\x1b[2J\\x0aVERDICT: OK" in err


def _key_files(tmp_path: Path) -> tuple[Path, Path]:
    document = json.loads(BUNDLE.read_text())
    did_document = tmp_path / "merchant-did.json"
    did_document.write_text(json.dumps(document["keys"]["did_documents"]["did:web:stride-athletics.example"]))
    jwks = tmp_path / "issuer-jwks.json"
    jwks.write_text(json.dumps(document["keys"]["jwks"]["https://wallet-issuer.example"]))
    for name in ("intent", "cart", "payment"):
        (tmp_path / f"{name}.json").write_text(json.dumps(document["mandates"][name]))
    return did_document, jwks


@pytest.mark.usefixtures("no_network")
def test_dispute_bundle_records_where_each_key_came_from(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    did_document, jwks = _key_files(tmp_path)
    out = tmp_path / "bundle.json"
    code, _, err = run_cli(
        capsys, "dispute", "bundle",
        "--intent", str(tmp_path / "intent.json"), "--cart", str(tmp_path / "cart.json"),
        "--payment", str(tmp_path / "payment.json"),
        "--merchant-aud", "https://payments.processor.example", "--kb-aud", "https://payments.processor.example",
        "--kb-nonce", NONCE, "--did-document", str(did_document),
        "--jwks", f"https://wallet-issuer.example={jwks}",
        "--via", "did:web:stride-athletics.example=https GET https://stride-athletics.example/.well-known/did.json",
        "--fetched-at", "1759320000", "--evidence-time", "2025-10-01T12:21:10Z", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    bundle = json.loads(out.read_text())
    assert bundle["evidence_time"] == "2025-10-01T12:21:10Z"
    assert bundle["keys"]["fetched"] == {
        "did:web:stride-athletics.example": {
            "at": "2025-10-01T12:00:00Z",
            "via": "https GET https://stride-athletics.example/.well-known/did.json",
        },
        "https://wallet-issuer.example": {
            "at": "2025-10-01T12:00:00Z",
            "via": "JWK Set file issuer-jwks.json",
        },
    }
    # The bundle is evidence; the analyst's trust root and nonce make the verdict.
    code, out_text, err = run_cli(capsys, "dispute", "verify", str(out), *CASE, "--json")
    assert code == 0, err
    assert _report(out_text)["verdict"] == "OK"
    code, _, err = run_cli(capsys, "dispute", "verify", str(out), "--trust-root", str(TRUST_ROOT))
    assert code == 1
    assert "kb_nonce was asserted by the evidence" in err
    # A --via for key material the bundle does not carry is a usage error.
    code, _, _ = run_cli(
        capsys, "dispute", "bundle",
        "--intent", str(tmp_path / "intent.json"), "--cart", str(tmp_path / "cart.json"),
        "--payment", str(tmp_path / "payment.json"), "--merchant-aud", "a", "--kb-aud", "a",
        "--kb-nonce", "n", "--via", "did:web:elsewhere.example=x",
    )  # fmt: skip
    assert code == 2


@pytest.mark.usefixtures("no_network")
def test_dispute_bundle_via_splits_where_a_named_owner_ends(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Both sides of a --via may hold '=' (a fetch with a query; an owner with one): the owners
    already given decide where the name ends."""
    did_document, jwks = _key_files(tmp_path)
    out = tmp_path / "bundle.json"
    common = [
        "dispute", "bundle",
        "--intent", str(tmp_path / "intent.json"), "--cart", str(tmp_path / "cart.json"),
        "--payment", str(tmp_path / "payment.json"),
        "--merchant-aud", "https://payments.processor.example", "--kb-aud", "https://payments.processor.example",
        "--kb-nonce", NONCE, "--did-document", str(did_document),
        "--jwks", f"https://wallet-issuer.example/?tenant=a={jwks}",
        "--fetched-at", "1759320000", "--evidence-time", "2025-10-01T12:21:10Z",
    ]  # fmt: skip
    code, _, err = run_cli(
        capsys, *common, "--out", str(out),
        "--via", "did:web:stride-athletics.example=https GET https://stride-athletics.example/did.json?v=2",
        "--via", "https://wallet-issuer.example/?tenant=a=https GET https://wallet-issuer.example/jwks?x=1",
    )  # fmt: skip
    assert code == 0, err
    fetched = json.loads(out.read_text())["keys"]["fetched"]
    assert fetched["did:web:stride-athletics.example"]["via"] == (
        "https GET https://stride-athletics.example/did.json?v=2"
    )
    assert (
        fetched["https://wallet-issuer.example/?tenant=a"]["via"]
        == "https GET https://wallet-issuer.example/jwks?x=1"
    )
    # No owner given ends at any '=': a usage error naming what it may name.
    code, _, err = run_cli(
        capsys, *common, "--out", str(tmp_path / "b2.json"), "--via", "https://other.example/?a=b"
    )
    assert code == 2
    assert "names no --did-document, --jwks or --status-list" in err
    # An empty TEXT is refused too.
    code, _, _ = run_cli(
        capsys,
        *common,
        "--out",
        str(tmp_path / "b3.json"),
        "--via",
        "https://wallet-issuer.example/?tenant=a=",
    )
    assert code == 2


@pytest.mark.usefixtures("no_network")
def test_a_batch_on_a_terminal_shows_progress_and_still_every_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    for index in range(3):
        shutil.copy(BUNDLE, tmp_path / f"b{index}.json")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "60")  # a narrow terminal: identifiers still are not wrapped
    code, out, err = run_cli(capsys, "dispute", "verify", str(tmp_path), "--trust-root", str(TRUST_ROOT))
    assert code == 1
    assert out == ""
    assert "\x1b[" in err  # the progress bar was drawn
    lines = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", part) for part in re.split(r"[\r\n]", err)]
    for index in range(3):
        path = str(tmp_path / f"b{index}.json")
        assert any(line.startswith("UNANCHORED ") and path in line for line in lines)
    # A DID on a terminal stays a DID (never an emoji, never wrapped).
    assert any(line.startswith("  user (intent): did:key:z6Mk") for line in lines)
    assert "SUMMARY: 3 bundles" in lines


@pytest.mark.usefixtures("no_network")
def test_the_html_page_puts_what_decides_first(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    assert run_cli(capsys, "dispute", "verify", str(_tampered(tmp_path)), *CASE, "--html", str(html))[0] == 1
    page = html.read_text()
    order = [
        '<section class="verdict v-FAILED" id="verdict">',
        '<section id="failures"><h2>Failures (1)</h2>',
        "<h2>Values that differ</h2>",
        "<h2>Timeline</h2>",
        "<h2>Keys the verdict rests on</h2>",
        "<details><summary>Passed and not-run checks",
        "<h2>Raw signed bytes</h2>",
    ]
    positions = [page.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert "<dt>signed value</dt>" in page
    assert "<dt>recomputed value</dt>" in page
    assert "break-all" not in page
    assert "<script" not in page
    assert "payment (user): <code>USD 1,384.90</code>" in page


@pytest.mark.usefixtures("no_network")
def test_a_case_without_audiences_takes_them_from_the_command_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cases = _cases(
        tmp_path,
        [
            {"id": "wrong-aud", "bundle": str(BUNDLE), "kb_nonce": NONCE},
            {"id": "own-aud", "bundle": str(BUNDLE), "kb_nonce": NONCE, "kb_audience": AUDIENCE},
        ],
    )
    code, out, _ = run_cli(
        capsys, "dispute", "verify", "--cases", str(cases), "--trust-root", str(TRUST_ROOT),
        "--kb-aud", "https://someone-else.example", "--json",
    )  # fmt: skip
    assert code == 1
    results = {r["path"]: r for r in json.loads(out)["results"]}
    assert results["wrong-aud"]["report"]["failures"][0]["id"] == "user.kb.aud"
    assert results["own-aud"]["verdict"] == "OK"


@pytest.mark.usefixtures("no_network")
def test_one_json_shape_whatever_the_number_of_inputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shutil.copy(BUNDLE, tmp_path / "b1.json")
    code, out, _ = run_cli(capsys, "dispute", "verify", str(BUNDLE), *CASE, "--json")
    assert code == 0
    one = json.loads(out)
    code, out, _ = run_cli(capsys, "dispute", "verify", str(BUNDLE), str(tmp_path / "b1.json"), "--json")
    assert code == 1
    two = json.loads(out)
    assert set(one) == set(two) == {"results", "summary"}
    assert [set(row) for row in one["results"]] == [{"path", "verdict", "report"}]
    assert [set(row) for row in two["results"]] == [{"path", "verdict", "report"}] * 2
    row = one["results"][0]
    assert (row["path"], row["verdict"], row["report"]["verdict"]) == (str(BUNDLE), "OK", "OK")
    assert one["summary"]["bundles"] == 1
    assert one["summary"]["verdicts"] == {"OK": 1, "UNANCHORED": 0, "FAILED": 0, "ERROR": 0}
    assert set(one["summary"]) == set(two["summary"])


@pytest.mark.usefixtures("no_network")
def test_summary_only_prints_the_summary_and_no_bundle_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for index in range(2):
        shutil.copy(BUNDLE, tmp_path / f"b{index}.json")
    _tampered(tmp_path, "b2.json")
    cases = _cases(tmp_path, [{"bundle": f"b{i}.json", "kb_nonce": NONCE} for i in range(3)])
    argv = ("dispute", "verify", "--cases", str(cases), "--trust-root", str(TRUST_ROOT), "--summary-only")
    code, out, err = run_cli(capsys, *argv)
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == "SUMMARY: 3 bundles"
    assert "  OK                 2" in lines
    assert "  FAILED             1" in lines
    assert not [line for line in lines if line.startswith(("OK ", "FAILED ", "VERDICT"))]
    code, out, _ = run_cli(capsys, *argv, "--json")
    assert code == 1
    document = json.loads(out)
    assert set(document) == {"summary"}
    assert document["summary"]["verdicts"]["FAILED"] == 1


def test_progress_counts_every_result_it_printed() -> None:
    from rich.console import Console

    from mudrika.cli.dispute import _Progress

    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100, highlight=False, markup=False, emoji=False)
    progress = _Progress(3, console=console)
    try:
        for done in range(1, 4):
            progress.advance([f"OK         bundle-{done}"])
            shown = re.findall(r"(\d)/3", screen.getvalue())
            assert shown[-1] == str(done), screen.getvalue()  # the bar drawn below line N says N
    finally:
        progress.stop()


@pytest.mark.usefixtures("no_network")
def test_inspect_lists_what_a_bundle_claims_marked_unverified(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "dispute", "inspect", str(BUNDLE))
    assert code == 0
    assert out == ""
    lines = err.splitlines()
    assert lines[1].startswith("claims: what the bundle asserts, unverified.")
    assert all(
        heading in lines
        for heading in ("parties (claimed):", "audiences (claimed):", "nonces (claimed):", "keys (claimed):")
    )
    # The signed audience and nonce an analyst must confirm, and where each sits in the bundle.
    assert any(
        "https://payments.processor.example" in line and "mandates.cart.merchant_authorization aud" in line
        for line in lines
    )
    assert any(NONCE in line and "(key-binding JWT) nonce" in line for line in lines)
    merchant_key = next(
        line for line in lines if "thumbprint=W1COp5sh4XJjdJJhehqepuwWoGMjOeyWIwof0QHuZV4" in line
    )
    assert "did:web:stride-athletics.example#cart-signing-1" in merchant_key
    assert "keys.did_documents[did:web:stride-athletics.example]" in merchant_key
    assert "via https GET https://stride-athletics.example/.well-known/did.json" in merchant_key
    assert "VERDICT" not in err  # nothing is verified
    assert "OK" not in lines
    code, out, _ = run_cli(capsys, "dispute", "inspect", str(BUNDLE), "--json")
    assert code == 0
    claims = json.loads(out)["claims"]
    assert claims["verified"] is False
    assert claims["note"].startswith("claims: what the bundle asserts, unverified.")
    assert {"role": "merchant (cart signer)", "value": "did:web:stride-athletics.example",
            "where": "mandates.cart.merchant_authorization iss"} in claims["parties"]  # fmt: skip
    assert {(key["kid"], key["thumbprint"]) for key in claims["keys"] if key["thumbprint"]} == {
        (None, "51SJ_xYAeimw4Hm8zpJ81jgRtCxwwbSmu_5-scaOMv8"),  # the user's key, from the credential's cnf
        ("did:web:stride-athletics.example#cart-signing-1", "W1COp5sh4XJjdJJhehqepuwWoGMjOeyWIwof0QHuZV4"),
        ("wallet-issuer-2025-1", "ij40EeFkDAwv1WZlfp1kSw2umINfw6ap3QkrNPcUkyM"),
    }
    assert claims["problems"] == []


@pytest.mark.usefixtures("no_network")
def test_inspect_reads_a_v02_bundle_and_survives_a_damaged_token(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = json.loads((FIXTURES / "ap2-v02" / "bundle.json").read_text())
    document["checkout_receipt"] = "not.a\x1b[31m.jwt"
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(document))
    code, out, err = run_cli(capsys, "dispute", "inspect", str(path), "--json")
    assert code == 0
    claims = json.loads(out)["claims"]
    assert {"role": "checkout hop 1 nonce (signed)", "value": "checkout-nonce-7f3a",
            "where": "checkout_chain hop 1 nonce"} in claims["nonces"]  # fmt: skip
    assert [problem["where"] for problem in claims["problems"]] == ["checkout_receipt"]
    code, _, err = run_cli(capsys, "dispute", "inspect", str(path))
    assert code == 0
    assert "\x1b" not in err
    assert "payment hop 1 aud (signed)" in err


def test_inspect_refuses_a_malformed_bundle_like_verify(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"format": "mudrika.evidence/v1"}')
    code, out, _ = run_cli(capsys, "dispute", "inspect", str(path), "--json")
    assert code == 2
    assert json.loads(out)["error"]["code"] == "bad_bundle"
