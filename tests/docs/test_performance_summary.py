"""docs/performance.md's summary is the tables below it, row for row.

Why: the summary is what a reader looks at, and it once showed the dispute batch's seconds per
batch (1.75) against a speed-up target (≥ 1.8×), while the table below said 1.43×.  The summary is
regenerated from the sections by ``bench/run_all.py``'s own function; here it must equal what that
function makes of the page's sections now.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests._support.paths import REPO_ROOT as ROOT

PAGE = ROOT / "docs" / "performance.md"


def _run_all() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run_all", ROOT / "bench" / "run_all.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_run_all", module)
    spec.loader.exec_module(module)
    return module


def _sections(text: str) -> tuple[str, list[str]]:
    parts = text.split("\n## ")
    summary = next(part for part in parts if part.startswith("Summary of the targets"))
    return "## " + summary, [
        "## " + part for part in parts[1:] if not part.startswith("Summary of the targets")
    ]


def test_the_summary_is_the_tables_below_it() -> None:
    summary, sections = _sections(PAGE.read_text(encoding="utf-8"))
    expected = _run_all()._summary(sections)
    assert summary.strip() == expected.strip()


def test_a_speed_up_target_is_read_from_the_speed_up_column() -> None:
    section = (
        "## Batch (bench/x.py)\n\n"
        "| run | s per batch | speed-up over one | target ≥ 1.8× |\n"
        "|---|---:|---:|---|\n"
        "| two | 1.75 (1.62–2.40) | 1.43 (0.97–1.52) | **not met** |\n"
    )
    rows = _run_all()._summary([section]).splitlines()
    assert rows[-1] == "| Batch | two | 1.43 (0.97–1.52) | target ≥ 1.8× | **not met** |"
