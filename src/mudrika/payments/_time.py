"""Points in time as the AP2 signers and verifiers take them: an aware ``datetime`` or UNIX seconds.

Why shared: a signer's ``now`` becomes ``iat`` and a verifier's ``now`` is compared with it, so both
read time through the same two functions and a naive datetime is refused on either side.
"""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime

from mudrika.errors import InvalidInput

__all__ = ["Time", "epoch", "iso"]

Time = datetime | float | int
"""A point in time: an aware ``datetime`` or UNIX seconds."""


def epoch(now: Time) -> float:
    """UNIX seconds of ``now``; a naive datetime or a non-finite number is ``InvalidInput``."""
    if isinstance(now, datetime):
        if now.tzinfo is None or now.utcoffset() is None:
            raise InvalidInput("time must be timezone-aware", code="naive_time")
        return now.timestamp()
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise InvalidInput("time must be an aware datetime or UNIX seconds", code="bad_time")
    return float(now)


@functools.lru_cache(maxsize=256)
def iso(seconds: float) -> str:
    """ISO 8601 UTC text of UNIX seconds (for reports)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
