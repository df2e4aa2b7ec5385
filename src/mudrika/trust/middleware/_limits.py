"""The gate's limits, one typed value: what an unauthenticated or authorised caller may cost us.

Why one object: the same caps guard every protocol the middleware fronts (A2A, MCP), and they are
checked together, once, when the middleware is built.  A mistyped limit is a start-up error, never a
silently ignored keyword; ``dataclasses.replace`` changes one without restating the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from mudrika.errors import InvalidInput
from mudrika.trust.middleware._quota import ClaimQuota

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONCURRENT_READS",
    "DEFAULT_READ_SLOT_WAIT",
    "DEFAULT_RETRY_AFTER",
    "Limits",
]

DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
DEFAULT_MAX_BATCH: Final = 64
DEFAULT_BODY_TIMEOUT: Final = 10.0
DEFAULT_MAX_CONCURRENT_READS: Final = 32
DEFAULT_READ_SLOT_WAIT: Final = 1.0
DEFAULT_RETRY_AFTER: Final = 5


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on every request, before and after authentication (docs/trust.md, "Pre-authentication limits").

    ``max_body_bytes``: the body cap (413 past it, counted while streaming); ``max_batch``: calls in
    one JSON-RPC batch; ``body_timeout``: seconds to receive the whole body (408 past it);
    ``max_concurrent_reads``: bodies read at once before authentication completes, and
    ``read_slot_wait``: how long a request waits for a read slot (503 after); ``retry_after``: the
    seconds a 429/503 tells the client to wait; ``claim_quota``: single-use claims per principal
    (None: the default :class:`ClaimQuota`, one per middleware).
    """

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_batch: int = DEFAULT_MAX_BATCH
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    max_concurrent_reads: int = DEFAULT_MAX_CONCURRENT_READS
    read_slot_wait: float = DEFAULT_READ_SLOT_WAIT
    retry_after: int = DEFAULT_RETRY_AFTER
    claim_quota: ClaimQuota | None = None

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_batch", "max_concurrent_reads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InvalidInput(f"{name} must be a positive integer", code="bad_config", option=name)
        if (
            isinstance(self.retry_after, bool)
            or not isinstance(self.retry_after, int)
            or self.retry_after < 0
        ):
            raise InvalidInput(
                "retry_after must be a non-negative integer", code="bad_config", option="retry_after"
            )
        if not _number(self.body_timeout) or not self.body_timeout > 0:
            raise InvalidInput("body_timeout must be positive", code="bad_config", option="body_timeout")
        if not _number(self.read_slot_wait) or not self.read_slot_wait >= 0:
            raise InvalidInput("read_slot_wait must be >= 0", code="bad_config", option="read_slot_wait")
        if self.claim_quota is not None and not isinstance(self.claim_quota, ClaimQuota):
            raise InvalidInput("claim_quota must be a ClaimQuota", code="bad_config", option="claim_quota")


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
