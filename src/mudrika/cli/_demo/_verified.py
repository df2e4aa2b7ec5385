"""An offline verification as the demo keeps it: the report, its text, and the HTML page written.

Why one type: the analyst's side of the demo verifies the v0.1 bundle, its tampered copy and the
v0.2 bundle the same way (the human text for the terminal, a self-contained page beside the
evidence), and step (4) tells them all alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mudrika.crypto.keystore import write_file_atomic
from mudrika.payments.chain import VerificationReport, render_html, render_text

__all__ = ["Verified", "keep_report"]


@dataclass(frozen=True, slots=True)
class Verified:
    """An offline verification: the report, its human text and where its HTML page was written."""

    report: VerificationReport
    text: str
    html: Path

    def failing(self) -> list[dict[str, Any]]:
        """Each failed check with the values that differ (what the check expected, what it got)."""
        return [
            {"check": check.id, "code": check.code, "expected": check.expected, "got": check.got}
            for check in self.report.failures
        ]


def keep_report(
    report: VerificationReport, *, title: str, html: Path, mandates: Mapping[str, Any] | None = None
) -> Verified:
    """Write ``report``'s HTML page to ``html`` (never over an existing file) and keep its text."""
    page = render_html(report, title=title, mandates=mandates)
    write_file_atomic(html, page.encode(), force=False, private_dir=False)
    return Verified(report=report, text=render_text(report, title=title), html=html)
