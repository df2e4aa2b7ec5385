"""The offline AP2 v0.1 chain verifier: intent → cart → payment, every check named and reported.

:func:`verify_chain` returns the verified chain or raises; :func:`inspect_chain` never raises on a
failed check and returns a :class:`VerificationReport` listing every named check with what it
expected, what it got and whose key it rests on.  The chain is a small state machine: a link is
admitted only after the previous one verified (``_verifier``).  One module per stage (``_intent``,
``_cart``, ``_payment``), the cross-links (``_links``), the hashes the profile requires
(``_hashes``), key resolution (``_keys``), the JWS phases (``_jws``), the checks only this profile
makes (``_common``: time claims, signed hashes, replay keys) and what each check means
(``_meanings``); ``_compare`` reads the values a person needs after a failure, marked as evidence
from unsigned data.  The recorder, the report and its text and HTML renderings are the verdict
kernel shared with the v0.2 verifier (:mod:`mudrika.payments.report`); the names of it this package
exported before the kernel existed are still exported here.
"""

from __future__ import annotations

from mudrika.payments.chain._cart import (
    VerifiedCart,
    merchant_jti_key,
    verify_cart,
)
from mudrika.payments.chain._meanings import MEANINGS
from mudrika.payments.chain._payment import (
    kb_nonce_key,
)
from mudrika.payments.chain._verifier import (
    KeyMaterial,
    KeySource,
    ResolvedKey,
    VerifiedChain,
    inspect_chain,
    verify_chain,
)
from mudrika.payments.report import (
    ERROR_KINDS,
    REPORT_FORMAT,
    Check,
    CheckStatus,
    Comparison,
    ErrorKind,
    VerificationReport,
    error_kind_of,
    printable,
    render_html,
    render_text,
)

__all__ = [
    "ERROR_KINDS",
    "MEANINGS",
    "REPORT_FORMAT",
    "Check",
    "CheckStatus",
    "Comparison",
    "ErrorKind",
    "KeyMaterial",
    "KeySource",
    "ResolvedKey",
    "VerificationReport",
    "VerifiedCart",
    "VerifiedChain",
    "error_kind_of",
    "inspect_chain",
    "kb_nonce_key",
    "merchant_jti_key",
    "printable",
    "render_html",
    "render_text",
    "verify_cart",
    "verify_chain",
]
