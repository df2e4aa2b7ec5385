"""SD-JWT (RFC 9901): issue, present, parse and verify selective-disclosure JWTs with key binding.

The public face of the SD-JWT wing.  :func:`verify` is the recipe (issuer signature, disclosures,
validity, key binding, in RFC 9901 §7 order); the step functions beside it (:func:`parse`,
:func:`read_issuer_payload`, :func:`verify_issuer_jwt`, :func:`process_disclosures`,
:func:`verify_key_binding`) exist for verifiers such as the AP2 chain that must report each step as
its own named check.  The private
modules hold one RFC section each: ``_disclosure`` (§4.2), ``_process`` (§7.1 step 3), ``_issue``
(§4.1-4.2, choosing what is disclosable), ``_pointer`` (RFC 6901 paths) and ``_kb`` (§4.3, §7.3).
"""

from __future__ import annotations

from mudrika.crypto.sdjwt._disclosure import SD_ALG, Disclosure, SaltSource, digest_of
from mudrika.crypto.sdjwt._issue import NEVER_DISCLOSABLE
from mudrika.crypto.sdjwt._kb import KB_JWT_TYP, KeyBinding
from mudrika.crypto.sdjwt._presentation import (
    DEFAULT_LIMITS,
    DEFAULT_TYP,
    ParsedSdJwt,
    SdJwt,
    SdJwtLimits,
    UnverifiedIssuerPayload,
    VerifiedIssuerJwt,
    VerifiedSdJwt,
    check_validity,
    holder_key_from_cnf,
    issue,
    parse,
    present,
    process_disclosures,
    process_unverified_disclosures,
    read_issuer_payload,
    verify,
    verify_issuer_jwt,
    verify_key_binding,
)
from mudrika.crypto.sdjwt._process import ProcessedPayload

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_TYP",
    "KB_JWT_TYP",
    "NEVER_DISCLOSABLE",
    "SD_ALG",
    "Disclosure",
    "KeyBinding",
    "ParsedSdJwt",
    "ProcessedPayload",
    "SaltSource",
    "SdJwt",
    "SdJwtLimits",
    "UnverifiedIssuerPayload",
    "VerifiedIssuerJwt",
    "VerifiedSdJwt",
    "check_validity",
    "digest_of",
    "holder_key_from_cnf",
    "issue",
    "parse",
    "present",
    "process_disclosures",
    "process_unverified_disclosures",
    "read_issuer_payload",
    "verify",
    "verify_issuer_jwt",
    "verify_key_binding",
]
