"""The plain-text rendering of a verification report: what a person reads on a terminal or in a log.

Why plain text and not a table: identifiers (DIDs, thumbprints, hashes) must stay on one line so
they can be compared out of band and grepped; a table wraps them at the terminal width, and off a
terminal at 80 columns.  So every value is one ``label: value`` line, never wrapped, and in the same
order as the JSON and HTML renderings: the verdict paragraph, the failures (each with what it means
and the values that differ), what did not run, the passed checks as a count (listed only when
verbose), then the keys and expectations.

Every value came from a party to the dispute, so control characters are shown escaped, never
obeyed (an ANSI escape in a merchant name cannot recolour or rewrite the report).
"""

from __future__ import annotations

from typing import Final

from mudrika.payments.report._model import VerificationReport

__all__ = ["printable", "render_text"]

_MAX_TEXT: Final = 200
#: A sentence of ours that quotes identifiers (a DID may be long): bounded, but never near a real one.
_MAX_SENTENCE: Final = 4000


def printable(text: str | None, *, limit: int = _MAX_TEXT) -> str:
    """Party-supplied text on one line: control characters made visible, cut to ``limit``."""
    if text is None:
        return ""
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    if cut.isprintable():
        return cut
    return "".join(char if char.isprintable() else f"\\x{ord(char):02x}" for char in cut)


def render_text(report: VerificationReport, *, title: str, verbose: bool = False) -> str:
    """The report as text lines (no trailing newline); see the module docstring for the order."""
    lines = [printable(title), f"VERDICT: {report.verdict}", printable(report.summary(), limit=4000)]
    failures = report.failures
    meanings = report.meanings
    if failures:
        lines.append(f"FAILURES ({len(failures)})")
        for number, check in enumerate(failures, 1):
            got_label, expected_label = meanings.value_labels(check)
            lines.append(f"  {number}. {check.id}: {meanings.meaning(check)}")
            lines.append(f"     rests on:           {meanings.rests_on(check)}")
            if check.got is not None:
                lines.append(f"     {got_label + ':':<20}{printable(check.got)}")
            if check.expected is not None:
                lines.append(f"     {expected_label + ':':<20}{printable(check.expected)}")
            if check.detail:
                lines.append(f"     detail:             {printable(check.detail)}")
            if check.key:
                lines.append(f"     key:                {printable(check.key)}")
    if report.comparisons:
        lines.append("VALUES THAT DIFFER (evidence from unsigned data: read from the mandates, not verified)")
        for comparison in report.comparisons:
            lines.append(f"  {comparison.name}: {comparison.meaning}")
            # A label longer than the column (the payment date's) widens it, so values never touch it.
            width = max(26, len(comparison.left) + 2, len(comparison.right) + 2)
            lines.append(f"     {comparison.left + ':':<{width}}{printable(comparison.left_value)}")
            lines.append(f"     {comparison.right + ':':<{width}}{printable(comparison.right_value)}")
    skipped = report.skipped
    if skipped:
        reasons = sorted({check.detail or "" for check in skipped})
        lines.append(f"NOT RUN ({len(skipped)}): " + "; ".join(printable(reason) for reason in reasons))
        if verbose:
            lines.extend(f"  - {check.id}" for check in skipped)
    passed = [check for check in report.checks if check.passed]
    if verbose:
        lines.append(f"PASSED ({len(passed)})")
        for check in passed:
            got = f" = {printable(check.got)}" if check.got else ""
            lines.append(f"  {check.id}{got}")
    else:
        lines.append(f"PASSED: {len(passed)} checks (--verbose lists them)")
    if report.statements:
        lines.extend(f"NOTE: {printable(statement, limit=1000)}" for statement in report.statements)
    if report.anchoring != "anchored":
        lines.append(
            "NOT ANCHORED BECAUSE" if report.anchoring == "unanchored" else "ANCHORING NOT EVALUATED"
        )
        # Our own sentences around DIDs and kids: long enough that a DID is never cut (a party's
        # free text elsewhere keeps the shorter cap).
        lines.extend(
            f"  - {printable(reason, limit=_MAX_SENTENCE)}" for reason in report.not_anchored_because()
        )
    lines.append("KEYS (RFC 7638 thumbprint, provenance)")
    for key in report.keys:
        anchored = {"anchored": "anchored", "unanchored": "NOT ANCHORED", "not evaluated": "not evaluated"}[
            key.anchoring
        ]
        note = f" ({printable(key.note)})" if key.note else ""
        lines.append(
            f"  {key.role}: {printable(key.kid)} thumbprint={key.thumbprint} "
            f"provenance={key.provenance}{note} {anchored}"
        )
    lines.append("EXPECTATIONS")
    for name, item in report.expectations.items():
        lines.append(f"  {name}: {printable(item.get('value'))} (from {item.get('source')})")
    lines.append(
        f"evaluated at {report.evaluated_at}, {report.mode} keys, trust root {report.trust_root or 'none'}"
    )
    return "\n".join(lines)
