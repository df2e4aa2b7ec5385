"""The analyst's trust root: the only place a chain verdict's trust comes from.

:class:`TrustRoot` (``mudrika.trust-root/v1``, JSON Schema in ``trust-root.schema.json`` next to
this package) lists the credential issuers and their keys, the pinned merchants, the accepted
algorithms and credential types, the leeway and maximum ages, and whether legacy chains whose
intent is not bound to the payment are acceptable; an entry's ``key_windows`` say when each key was
valid (judged by :func:`judge_signing_time`, re-exported here with its types).  :func:`load_trust_root` reads one strictly;
:func:`schema_text` returns the shipped JSON Schema.
"""

from __future__ import annotations

from importlib import resources

from mudrika.identity.anchoring import (
    AnchoredKey,
    Attestation,
    KeyValidity,
    RevocationReason,
    TimeCode,
    TimeJudgement,
    judge_signing_time,
)
from mudrika.payments.trustroot._model import (
    MAX_TRUST_ROOT_BYTES,
    TRUST_ROOT_FORMAT,
    KeySet,
    KeyWindow,
    MaxAges,
    PinnedMerchant,
    Section,
    StatusRules,
    TrustedIssuer,
    TrustRoot,
    UnsafeNoTrustRoot,
    VerifierIdentity,
    format_utc_time,
    json_schema,
    load_trust_root,
    parse_trust_root,
    parse_utc_time,
)

__all__ = [
    "MAX_TRUST_ROOT_BYTES",
    "SCHEMA_FILE",
    "TRUST_ROOT_FORMAT",
    "AnchoredKey",
    "Attestation",
    "KeySet",
    "KeyValidity",
    "KeyWindow",
    "MaxAges",
    "PinnedMerchant",
    "RevocationReason",
    "Section",
    "StatusRules",
    "TimeCode",
    "TimeJudgement",
    "TrustRoot",
    "TrustedIssuer",
    "UnsafeNoTrustRoot",
    "VerifierIdentity",
    "format_utc_time",
    "json_schema",
    "judge_signing_time",
    "load_trust_root",
    "parse_trust_root",
    "parse_utc_time",
    "schema_text",
]

#: File name of the JSON Schema shipped as package data in this package.
SCHEMA_FILE = "trust-root.schema.json"


def schema_text() -> str:
    """The JSON Schema of ``mudrika.trust-root/v1`` as shipped with the package."""
    return resources.files(__name__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
