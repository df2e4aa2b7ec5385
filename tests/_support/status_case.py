"""The one status-list case the credential-status tests judge: the issuer, its list, the pinned kid,
the purchase moment and the credential's index, named once for every file that builds it."""

from __future__ import annotations

from typing import Final

__all__ = ["DAY", "IDX", "ISSUER", "KID", "PURCHASE", "URI"]

ISSUER: Final = "https://issuer.example"
URI: Final = "https://issuer.example/statuslists/1"
KID: Final = "issuer-key-1"
PURCHASE: Final = 1_767_225_600  # 2026-01-01 00:00:00 UTC
DAY: Final = 86_400
IDX: Final = 42
