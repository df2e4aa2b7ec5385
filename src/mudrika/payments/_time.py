"""Points in time as the AP2 signers and verifiers take them: one parser for the CLI and the API.

Why shared: a signer's ``now`` becomes ``iat`` and a verifier's ``now`` is compared with it, so both
read time through the same functions, and a naive time is refused on either side.  The CLI and the
Python API accept the same forms — an aware ``datetime``, UNIX seconds, or an ISO 8601 string with a
UTC offset (``2025-10-01T12:21:10Z``) — because every option goes through :func:`epoch`, and the
CLI's text through :func:`parse_time` (which also reads UNIX seconds written as text).
"""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, datetime
from typing import Final

from mudrika.errors import InvalidInput
from mudrika.payments._values import parse_timestamp

__all__ = ["Time", "epoch", "iso", "parse_time"]

Time = datetime | float | int | str
"""A point in time: an aware ``datetime``, UNIX seconds, or ISO 8601 text with a UTC offset."""

_SECONDS: Final = re.compile(r"[+-]?[0-9]{1,12}(\.[0-9]{1,9})?")


def epoch(now: Time) -> float:
    """UNIX seconds of ``now``; a naive datetime, text without an offset or a non-finite number is
    ``InvalidInput``."""
    if isinstance(now, str):
        return parse_time(now).timestamp()
    if isinstance(now, datetime):
        if now.tzinfo is None or now.utcoffset() is None:
            raise InvalidInput("time must be timezone-aware", code="naive_time")
        return now.timestamp()
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise InvalidInput(
            "time must be an aware datetime, UNIX seconds or ISO 8601 text with an offset", code="bad_time"
        )
    return float(now)


def parse_time(text: str) -> datetime:
    """ISO 8601 with a UTC offset (``2025-10-01T12:21:10Z``) or UNIX seconds (``1759321270``) → aware UTC."""
    if not isinstance(text, str):
        raise InvalidInput("time must be text", code="bad_time")
    stripped = text.strip()
    if _SECONDS.fullmatch(stripped):
        return datetime.fromtimestamp(float(stripped), UTC)
    return parse_timestamp(stripped)


@functools.lru_cache(maxsize=256)
def iso(seconds: float) -> str:
    """ISO 8601 UTC text of UNIX seconds (for reports)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
