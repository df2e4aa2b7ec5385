"""A self-contained HTML rendering of a :class:`~mudrika.payments.chain.report.VerificationReport`.

Why so defensive: a dispute report is opened in a browser by an analyst, and almost every value in
it (``got``, a merchant name, a kid) came from a party to the dispute.  So every value is escaped
with :func:`html.escape` (quotes included), the page has no script and loads nothing, and a
Content-Security-Policy of ``default-src 'none'`` makes any injected resource inert anyway.
"""

from __future__ import annotations

from html import escape
from typing import Final

from mudrika.payments.chain.report import VerificationReport

__all__ = ["render_html"]

_MAX_TEXT: Final = 200
_STYLE: Final = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#1a1a1a}
h1{font-size:1.4rem}table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top;word-break:break-all}
th{background:#f2f2f2}.passed{color:#0a6b2d}.failed{color:#a40000;font-weight:bold}.skipped{color:#777}
.verdict{font-size:1.1rem;font-weight:bold}code{font-size:.8rem}
"""


def _cell(value: str | None) -> str:
    if value is None:
        return "<td></td>"
    return f"<td>{escape(value if len(value) <= _MAX_TEXT else value[: _MAX_TEXT - 1] + '…')}</td>"


def render_html(report: VerificationReport, *, title: str = "AP2 chain verification report") -> str:
    """A self-contained HTML page (no scripts, no external resources; every value escaped)."""
    data = report.to_dict()
    counts = data["counts"]
    verdict = "every check passed" if report.ok else "verification FAILED"
    rows = []
    for check in report.checks:
        rows.append(
            "<tr>"
            f'<td class="{escape(check.status)}">{escape(check.status)}</td>'
            f"<td><code>{escape(check.id)}</code></td>"
            + _cell(check.party)
            + _cell(check.expected)
            + _cell(check.got)
            + _cell(check.key)
            + _cell(check.detail)
            + "</tr>"
        )
    hashes = "".join(
        f"<tr><td>{escape(name)}</td><td><code>{escape(value)}</code></td></tr>"
        for name, value in report.hashes.items()
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f'<p class="verdict {"passed" if report.ok else "failed"}">{escape(verdict)}</p>'
        f"<p>Evaluated at {escape(report.evaluated_at)} ({escape(report.mode)} key material). "
        f"{int(counts['passed'])} passed, {int(counts['failed'])} failed, {int(counts['skipped'])} skipped.</p>"
        "<h2>Mandate hashes</h2><table><tr><th>object</th><th>H = base64url(sha256(RFC 8785))</th></tr>"
        f"{hashes}</table>"
        "<h2>Checks</h2><table><tr><th>status</th><th>check</th><th>party</th><th>expected</th>"
        "<th>got</th><th>key</th><th>detail</th></tr>" + "".join(rows) + "</table></body></html>\n"
    )
