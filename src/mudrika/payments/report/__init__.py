"""The verdict kernel both AP2 verifiers share: the check recorder, the report and its renderings.

Why one kernel beside the profiles, not inside one of them: the v0.1 chain (:mod:`~mudrika.payments.chain`)
and the v0.2 delegation chains (:mod:`~mudrika.payments.v02`) judge different evidence, but a dispute
analyst reads one kind of report — the same statuses, verdicts, anchoring rule, JSON, text and HTML —
whichever profile drew it.  So the recorder that collects named checks, the report model, and the text
and HTML renderings live here, and each profile imports them from this package; neither imports the
other.  What stays with a profile is its checks and what they mean: each hands a
:class:`MeaningTable` to every report it draws (:attr:`VerificationReport.meanings`), so a failed
check reads as a sentence in that profile's words.
"""

from __future__ import annotations

from mudrika.payments.report._asof import (
    attestation,
    record_credential_status,
    record_signing_time,
    status_key_evidence,
    status_statements,
)
from mudrika.payments.report._html import render_html
from mudrika.payments.report._model import (
    ANCHORED_SENTENCE,
    ERROR_KINDS,
    GENERIC_MEANING,
    REPORT_FORMAT,
    Anchoring,
    Check,
    CheckStatus,
    Comparison,
    ErrorKind,
    KeyEvidence,
    MeaningTable,
    TimelineStage,
    Verdict,
    VerificationReport,
    anchoring_of,
    error_kind_of,
)
from mudrika.payments.report._recorder import (
    CheckNotes,
    Deferred,
    FailureNotes,
    Recorder,
    StepFailed,
    Texts,
    fingerprint,
    found,
    no_texts,
    said_texts,
    same_text,
)
from mudrika.payments.report._text import printable, render_text

__all__ = [
    "ANCHORED_SENTENCE",
    "ERROR_KINDS",
    "GENERIC_MEANING",
    "REPORT_FORMAT",
    "Anchoring",
    "Check",
    "CheckNotes",
    "CheckStatus",
    "Comparison",
    "Deferred",
    "ErrorKind",
    "FailureNotes",
    "KeyEvidence",
    "MeaningTable",
    "Recorder",
    "StepFailed",
    "Texts",
    "TimelineStage",
    "Verdict",
    "VerificationReport",
    "anchoring_of",
    "attestation",
    "error_kind_of",
    "fingerprint",
    "found",
    "no_texts",
    "printable",
    "record_credential_status",
    "record_signing_time",
    "render_html",
    "render_text",
    "said_texts",
    "same_text",
    "status_key_evidence",
    "status_statements",
]
