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
from mudrika.net.limits import FixedWindows

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
        self._clock = clock
        self._windows = FixedWindows(limit, window, max_keys=max_principals)

    def __repr__(self) -> str:
        return f"ClaimQuota(limit={self._limit}, window={self._window})"

    def allow(self, principal: str) -> bool:
        """Count one claim for ``principal``; False when it is over its quota (nothing counted)."""
        return self._windows.allow(principal, self._clock())
