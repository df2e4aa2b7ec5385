"""A self-contained, printable HTML rendering of a :class:`~mudrika.payments.report.VerificationReport`.

Why this shape: the page is read by a person who must decide a dispute, so what decides comes
first — the verdict banner with its paragraph (who paid whom, what, how much, when, on whose
signature), then the failures, each with its meaning and the values that differ, then a timeline
intent → cart → payment saying who signed what.  Passed checks and the raw signed bytes are there
for the record, folded in ``<details>`` (opened without scripts; ``verbose`` opens the checks).  Long
identifiers wrap inside their own box (``overflow-wrap: anywhere``) so nothing scrolls sideways,
and words are never split letter by letter.  Colours meet WCAG AA contrast on their backgrounds.

Why so defensive: almost every value came from a party to the dispute.  Every value is escaped with
:func:`html.escape` (quotes included), the page has no script and loads nothing, and a
Content-Security-Policy of ``default-src 'none'`` makes any injected resource inert anyway.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any, Final

from mudrika.payments.report._model import Check, MeaningTable, TimelineStage, VerificationReport

__all__ = ["render_html"]

_MAX_TEXT: Final = 200
_MAX_RAW: Final = 64 * 1024
_STYLE: Final = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0 auto;padding:1rem 1.5rem;max-width:72rem;color:#1a1a1a;
background:#fff;line-height:1.4}
h1{font-size:1.3rem;margin:.2rem 0 .6rem}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}
h3{font-size:1rem;margin:0 0 .3rem}
code,pre{font-family:ui-monospace,monospace;font-size:.85rem;overflow-wrap:anywhere;word-break:normal}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem;margin:0}
.verdict{border:3px solid;padding:.6rem 1rem;margin:0 0 1rem}
.verdict h2{margin:0 0 .3rem;font-size:1.2rem}
.v-OK{border-color:#0a6b2d;background:#eef8f0}.v-OK h2{color:#0a5a26}
.v-FAILED{border-color:#a40000;background:#fdf0f0}.v-FAILED h2{color:#8f0000}
.v-UNANCHORED{border-color:#8a4b00;background:#fff6e8}.v-UNANCHORED h2{color:#7a4200}
.failure{border-left:4px solid #a40000;padding:.3rem .8rem;margin:.5rem 0;background:#fff}
dl{display:grid;grid-template-columns:minmax(9rem,max-content) minmax(0,1fr);gap:.15rem .8rem;margin:.3rem 0}
dt{font-weight:600;color:#333}dd{margin:0;min-width:0}
table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:.9rem}
th,td{border:1px solid #bbb;padding:.25rem .45rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#eee}
.passed{color:#0a5a26}.failed{color:#8f0000;font-weight:bold}.skipped{color:#555}
ol.timeline{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.5rem}
ol.timeline li{flex:1 1 14rem;border:1px solid #bbb;padding:.4rem .6rem;min-width:0}
.note{color:#333}
.banner{border:3px solid #8a4b00;background:#fff6e8;padding:.6rem 1rem;margin:1rem 0}
.banner h2{margin:0 0 .3rem;color:#7a4200}
details{margin:.4rem 0}summary{cursor:pointer;font-weight:600}
@media print{body{max-width:none}.verdict,.failure{break-inside:avoid}}
"""

#: How the keys table shows each key record's anchoring.
_KEY_ANCHORING: Final = {"anchored": "yes", "unanchored": "NO", "not evaluated": "not evaluated"}


def _text(value: str | None, limit: int = _MAX_TEXT) -> str:
    if value is None:
        return ""
    return escape(value if len(value) <= limit else value[: limit - 1] + "…")


def _status_of(report: VerificationReport, check_id: str) -> str:
    try:
        return report.by_id(check_id).status
    except KeyError:
        return "absent"


def _failure(check: Check, meanings: MeaningTable) -> str:
    got_label, expected_label = meanings.value_labels(check)
    rows = [("rests on", escape(meanings.rests_on(check)))]
    if check.got is not None:
        rows.append((got_label, f"<code>{_text(check.got)}</code>"))
    if check.expected is not None:
        rows.append((expected_label, f"<code>{_text(check.expected)}</code>"))
    if check.detail:
        rows.append(("detail", _text(check.detail)))
    if check.key:
        rows.append(("key", f"<code>{_text(check.key)}</code>"))
    items = "".join(f"<dt>{escape(label)}</dt><dd>{value}</dd>" for label, value in rows)
    return (
        f'<div class="failure"><h3><code>{escape(check.id)}</code>: {escape(meanings.meaning(check))}</h3>'
        f"<dl>{items}</dl></div>"
    )


def _stage_state(report: VerificationReport, stage: TimelineStage) -> tuple[str, str]:
    """``(css class, words)`` of one timeline step: green only when its signature verified *and* the
    content presented is what was signed (a payment changed after signing is never green)."""
    signatures = [_status_of(report, check_id) for check_id in stage.signatures]
    content = [_status_of(report, check_id) for check_id in stage.content]
    recorded = [status for status in signatures if status != "absent"]
    if not recorded:
        return "skipped", stage.absent
    if "failed" in recorded:
        return "failed", "signature FAILED"
    if "failed" in content:
        return "failed", "signed content changed after it was signed (the signature holds over other content)"
    if "skipped" in recorded:
        return "skipped", "not checked (an earlier link failed)"
    if "skipped" in content:
        return "skipped", "signature verified; whether the content is what was signed was not checked"
    return "passed", "signature verified, content as signed"


def _timeline(report: VerificationReport) -> str:
    items = []
    for stage in report.meanings.timeline:
        css, said = _stage_state(report, stage)
        items.append(
            f"<li><strong>{escape(stage.name)}</strong> — signed by {escape(stage.signer)}<br>"
            f'<span class="{css}">{escape(said)}</span><br><span class="note">{escape(stage.what)}</span></li>'
        )
    return '<ol class="timeline">' + "".join(items) + "</ol>"


def _raw_section(mandates: Mapping[str, Any] | None) -> str:
    if not mandates:
        return ""
    parts = []
    for name in ("intent", "cart", "payment"):
        if name not in mandates:
            continue
        text = json.dumps(mandates[name], indent=2, ensure_ascii=False)
        if len(text) > _MAX_RAW:
            text = text[:_MAX_RAW] + "\n… (cut)"
        parts.append(
            f"<details><summary>{escape(name)} (raw JSON as received)</summary><pre>{escape(text)}</pre></details>"
        )
    return "<h2>Raw signed bytes</h2>" + "".join(parts)


def render_html(
    report: VerificationReport,
    *,
    title: str = "AP2 chain verification report",
    mandates: Mapping[str, Any] | None = None,
    verbose: bool = False,
) -> str:
    """A self-contained HTML page (no scripts, no external resources; every value escaped).

    ``mandates`` (``{"intent", "cart", "payment"}`` raw JSON) adds the collapsible raw signed bytes;
    ``verbose`` opens the list of passed checks.
    """
    data = report.to_dict(verbose=True)
    counts = data["counts"]
    verdict = report.verdict
    parts = [
        f"<h1>{escape(title)}</h1>",
        f'<section class="verdict v-{verdict}" id="verdict"><h2>Verdict: {escape(verdict)}</h2>'
        # The anchoring line is the summary's own sentence (one source: report.anchoring).
        f'<p class="anchoring" id="anchoring" data-anchoring="{escape(report.anchoring)}">'
        f"<strong>{escape(report.anchoring_sentence())}</strong></p>"
        f"<p>{escape(report.summary())}</p></section>",
    ]
    failures = report.failures
    if failures:
        parts.append(f'<section id="failures"><h2>Failures ({len(failures)})</h2>')
        parts.extend(_failure(check, report.meanings) for check in failures)
        parts.append("</section>")
    if report.comparisons:
        rows = "".join(
            f"<tr><td>{_text(c.name)}</td><td>{_text(c.meaning)}</td><td>{_text(c.left)}: "
            f"<code>{_text(c.left_value)}</code></td><td>{_text(c.right)}: <code>{_text(c.right_value)}</code></td></tr>"
            for c in report.comparisons
        )
        parts.append(
            "<h2>Values that differ</h2><p>Evidence from unsigned data: read from the mandates after a "
            "check failed, not covered by a verified signature.</p><table><tr><th>value</th><th>meaning</th>"
            f"<th>one side</th><th>other side</th></tr>{rows}</table>"
        )
    if report.meanings.timeline:
        parts.append("<h2>Timeline</h2>" + _timeline(report))
    if verdict == "UNANCHORED":
        reasons = "".join(f"<li>{_text(reason)}</li>" for reason in report.not_anchored_because())
        parts.append(
            '<div class="banner"><h2>UNANCHORED</h2><p>Some key or expectation this verdict rests on was '
            "supplied by the evidence itself, not by your trust root. A party to the dispute could have "
            f"produced this chain for itself.</p><ul>{reasons}</ul></div>"
        )
    parts.extend(f'<p class="note">{_text(text, 1000)}</p>' for text in report.statements)
    key_rows = "".join(
        f"<tr><td>{_text(key.role)}</td><td><code>{_text(key.kid)}</code></td>"
        f"<td><code>{escape(key.thumbprint)}</code></td>"
        f"<td>{_text(key.provenance + (f' ({key.note})' if key.note else ''))}</td>"
        f"<td>{_KEY_ANCHORING[key.anchoring]}</td></tr>"
        for key in report.keys
    )
    parts.append(
        "<h2>Keys the verdict rests on</h2><table><tr><th>role</th><th>kid</th>"
        "<th>RFC 7638 thumbprint</th><th>provenance</th><th>anchored</th></tr>"
        f"{key_rows}</table>"
    )
    expectations = "".join(
        f"<tr><td>{_text(name)}</td><td><code>{_text(item.get('value'))}</code></td>"
        f"<td>{_text(item.get('source'))}</td></tr>"
        for name, item in report.expectations.items()
    )
    parts.append(
        "<h2>Expectations</h2><table><tr><th>expectation</th><th>value</th><th>from</th></tr>"
        f"{expectations}</table>"
    )
    check_rows = "".join(
        f'<tr><td class="{escape(check.status)}">{escape(check.status)}</td>'
        f"<td><code>{escape(check.id)}</code></td><td>{escape(report.meanings.rests_on(check))}</td>"
        f"<td>{_text(check.got) if check.passed else _text(check.detail)}</td></tr>"
        for check in report.checks
        if not check.failed
    )
    opened = " open" if verbose else ""
    parts.append(
        f"<h2>Checks</h2><p>{int(counts['passed'])} passed, {int(counts['failed'])} failed, "
        f"{int(counts['skipped'])} not run.</p>"
        f"<details{opened}><summary>Passed and not-run checks ({int(counts['passed']) + int(counts['skipped'])})"
        "</summary><table><tr><th>status</th><th>check</th><th>rests on</th><th>value</th></tr>"
        f"{check_rows}</table></details>"
    )
    hashes = "".join(
        f"<tr><td>{escape(name)}</td><td><code>{escape(value)}</code></td></tr>"
        for name, value in report.hashes.items()
    )
    parts.append(
        "<h2>Mandate hashes</h2><table><tr><th>object</th><th>H = base64url(sha256(RFC 8785))</th></tr>"
        f"{hashes}</table>"
    )
    parts.append(_raw_section(mandates))
    parts.append(
        f'<p class="note">Evaluated at {escape(report.evaluated_at)} ({escape(report.mode)} key material; '
        f"trust root {escape(report.trust_root or 'none')}).</p>"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body><main>"
        + "".join(parts)
        + "</main></body></html>\n"
    )
