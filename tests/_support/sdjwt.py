"""Shared pieces of the SD-JWT tests."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from mudrika.crypto import sdjwt
from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import PublicKey

__all__ = ["UNBOUND", "verify_bound"]

UNBOUND: Final[Mapping[str, Any]] = MappingProxyType(
    {"issuer": None, "require_key_binding": False, "expected_aud": None, "expected_nonce": None}
)
"""``sdjwt.verify`` expectations for a presentation checked without key binding and without an
expected issuer (the tests that look only at the issuer JWT and its Disclosures)."""


def verify_bound(
    presentation: str,
    issuer_key: PublicKey,
    *,
    issuer: str,
    now: float,
    aud: str,
    nonce: str,
    **changes: Any,
) -> sdjwt.VerifiedSdJwt:
    """``sdjwt.verify`` of a presentation that must carry a key binding for ``aud`` and ``nonce``,
    at most 300 s old, with ``changes`` replacing any of those arguments."""
    arguments: dict[str, Any] = {
        "issuer_key": TrustedKey.for_key(issuer_key),
        "issuer": issuer,
        "now": now,
        "require_key_binding": True,
        "expected_aud": aud,
        "expected_nonce": nonce,
        "kb_max_age": 300,
        **changes,
    }
    return sdjwt.verify(presentation, **arguments)
