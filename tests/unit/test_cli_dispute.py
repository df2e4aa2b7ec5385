"""``mudrika dispute verify``: offline, at the evidence time, exit codes 0/1/2, JSON and HTML output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mudrika.cli import main
from tests._support.evidence import BUNDLE, forbid_network


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_network(monkeypatch)


@pytest.mark.usefixtures("no_network")
def test_valid_at_evidence_time(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "dispute", "verify", str(BUNDLE))
    assert code == 0
    assert out == ""
    assert "every check passed" in err
    assert "replay.kb_nonce" in err


@pytest.mark.usefixtures("no_network")
def test_expired_now_passes_with_at_and_fails_later(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "dispute", "verify", str(BUNDLE), "--at", "2025-10-01T12:21:10Z", "--json")
    assert code == 0
    assert json.loads(out)["ok"] is True
    code, out, err = _run(capsys, "dispute", "verify", str(BUNDLE), "--at", "2026-06-01T00:00:00Z", "--json")
    assert code == 1
    report = json.loads(out)
    assert [c["id"] for c in report["checks"] if c["status"] == "failed"] == ["intent.expiry"]
    assert "FAILED" in err


def test_html_report_is_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    document = json.loads(BUNDLE.read_text())
    document["expectations"]["merchant_audience"] = '<img src=x onerror="alert(1)">'
    bundle = tmp_path / "hostile.json"
    bundle.write_text(json.dumps(document))
    html = tmp_path / "out" / "report.html"
    html.parent.mkdir()
    code, _, _ = _run(capsys, "dispute", "verify", str(bundle), "--html", str(html))
    assert code == 1
    text = html.read_text()
    assert "<img" not in text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text
    assert "<script" not in text


def test_malformed_bundle_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "mudrika.evidence/v1"}')
    code, _, err = _run(capsys, "dispute", "verify", str(bad))
    assert code == 2
    assert "malformed evidence bundle" in err
    assert _run(capsys, "dispute", "verify", str(BUNDLE), "--at", "not-a-time")[0] == 2
    assert _run(capsys, "dispute", "verify")[0] == 2


@pytest.mark.usefixtures("no_network")
def test_batch_with_a_process_pool(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    paths = []
    for index in range(4):
        path = tmp_path / f"b{index}.json"
        shutil.copy(BUNDLE, path)
        paths.append(str(path))
    code, out, _ = _run(capsys, "dispute", "verify", *paths, "--jobs", "2", "--json")
    assert code == 0
    results = json.loads(out)["results"]
    assert [r["path"] for r in results] == paths
    assert all(r["report"]["ok"] for r in results)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    code, out, _ = _run(capsys, "dispute", "verify", *paths[:2], str(broken), "--jobs", "0", "--json")
    assert code == 2
    assert json.loads(out)["results"][2]["code"] == "malformed_json"


def test_html_needs_exactly_one_bundle(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, _ = _run(
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
    code, _, err = _run(capsys, "dispute", "verify", str(bundle))
    assert code == 1
    # Interpreted markup would vanish (and become a hyperlink); shown literally, its brackets stay.
    assert "[link=" in err
