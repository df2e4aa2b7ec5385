"""Per-principal quota on single-use claims (RFC 9421 nonces, DPoP proof ``jti``).

Why: the replay store is shared capacity.  Authorisation before claiming keeps unauthorised callers
out of it; the quota keeps one *authorised* principal (a compromised agent, a buggy retry loop) from
filling it for everyone else.  Fixed windows per principal; the table of principals is bounded and,
when full of live windows, refuses new principals (fails closed) rather than forget a count.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Final

from mudrika.errors import InvalidInput

__all__ = ["DEFAULT_CLAIMS_PER_WINDOW", "DEFAULT_QUOTA_WINDOW", "ClaimQuota"]

DEFAULT_CLAIMS_PER_WINDOW: Final = 600
DEFAULT_QUOTA_WINDOW: Final = 60.0
_DEFAULT_MAX_PRINCIPALS: Final = 10_000


class ClaimQuota:
    """At most ``limit`` claims per principal in each ``window`` seconds (default 600 per 60 s)."""

    def __init__(
        self,
        limit: int = DEFAULT_CLAIMS_PER_WINDOW,
        window: float = DEFAULT_QUOTA_WINDOW,
        *,
        max_principals: int = _DEFAULT_MAX_PRINCIPALS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1 or max_principals < 1 or not (math.isfinite(window) and window > 0):
            raise InvalidInput("quota limits must be positive", code="bad_config")
        self._limit = limit
        self._window = float(window)
        self._max_principals = max_principals
        self._clock = clock
        self._windows: dict[str, tuple[float, int]] = {}

    def __repr__(self) -> str:
        return f"ClaimQuota(limit={self._limit}, window={self._window})"

    def allow(self, principal: str) -> bool:
        """Count one claim for ``principal``; False when it is over its quota (nothing counted)."""
        now = self._clock()
        start, count = self._windows.get(principal, (now, 0))
        if now - start >= self._window:
            start, count = now, 0
        if count >= self._limit:
            return False
        if principal not in self._windows and len(self._windows) >= self._max_principals:
            self._windows = {p: w for p, w in self._windows.items() if now - w[0] < self._window}
            if len(self._windows) >= self._max_principals:
                return False
        self._windows[principal] = (start, count + 1)
        return True
