"""Shared pieces of the SD-JWT tests."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

__all__ = ["UNBOUND"]

UNBOUND: Final[Mapping[str, Any]] = MappingProxyType(
    {"issuer": None, "require_key_binding": False, "expected_aud": None, "expected_nonce": None}
)
"""``sdjwt.verify`` expectations for a presentation checked without key binding and without an
expected issuer (the tests that look only at the issuer JWT and its Disclosures)."""
