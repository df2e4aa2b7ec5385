"""What every replay store shares: key and expiry checks, retention rules, error wrapping.

Why a shared base: the three stores must agree exactly on which inputs are refused and for how long a
claim is held, or a deployment that moves from the memory store to Redis would quietly change what
counts as a replay.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from typing import Final

from mudrika.errors import InvalidInput, UnavailableError

__all__ = [
    "DEFAULT_MAX_TTL",
    "DEFAULT_MIN_RETENTION",
    "MAX_BATCH",
    "MAX_KEY_BYTES",
    "Clock",
    "ReplayStoreBase",
    "check_key",
    "unavailable",
]

logger = logging.getLogger("mudrika.stores.replay")

Clock = Callable[[], float]

MAX_KEY_BYTES: Final = 512
"""Longest key accepted, in UTF-8 bytes.  Keys are caller-built (``"jti:<iss>:<jti>"``) from token
fields an attacker partly controls, so the cap bounds the memory and Redis bytes one claim can cost."""

DEFAULT_MIN_RETENTION: Final = 30.0
"""Seconds a claim is held at least, even when ``expires_at`` is already past.  A verifier that
accepts a token up to ``leeway`` seconds after its ``exp`` would otherwise record a claim that expires
at once and accept the same token again; 30 s covers the largest leeway mudrika allows."""

DEFAULT_MAX_TTL: Final = 31 * 24 * 3600.0
"""Claims further in the future than this are refused: such an expiry is a bug or an attempt to pin
store capacity, and no AP2 mandate or token mudrika verifies lives that long."""

MAX_BATCH: Final = 10_000
"""Largest ``claim_many`` batch, so one call cannot hold a store's lock or connection unboundedly."""


def check_key(key: str) -> None:
    """Refuse keys that are not non-empty text of at most :data:`MAX_KEY_BYTES` UTF-8 bytes."""
    if type(key) is str and key.isascii() and 0 < len(key) <= MAX_KEY_BYTES:
        # ASCII text is its own UTF-8 encoding, so its length is its size: no copy to measure it.
        # Every key the verifiers build (a prefix and a base64url digest) takes this path.
        return
    if not isinstance(key, str):
        raise InvalidInput("replay key must be a string", code="replay_key_invalid")
    if not key:
        raise InvalidInput("replay key is empty", code="replay_key_empty")
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput("replay key is not valid UTF-8 text", code="replay_key_invalid") from None
    if size > MAX_KEY_BYTES:
        raise InvalidInput("replay key too long", code="replay_key_too_long", limit=MAX_KEY_BYTES, got=size)


def unavailable(backend: str, exc: BaseException | None = None, *, detail: str = "") -> UnavailableError:
    """Build the error every store raises when it cannot answer; details go to the log only.

    The message is generic on purpose: driver messages can carry host names or paths.  Callers must
    treat the error as "not accepted" (fail closed).
    """
    if exc is not None:
        logger.warning("replay store %s unavailable: %s: %s", backend, type(exc).__name__, exc)
    elif detail:
        logger.warning("replay store %s unavailable: %s", backend, detail)
    return UnavailableError(
        "replay store unavailable",
        code="replay_store_unavailable",
        backend=backend,
        reason=type(exc).__name__ if exc is not None else detail,
    )


class ReplayStoreBase:
    """Retention arithmetic shared by the stores.

    A claim is held until ``max(expires_at, now + min_retention)``; ``expires_at`` more than
    ``max_ttl`` seconds ahead, or not a finite number, is :class:`InvalidInput`.

    The time rule (the same for every verifier and store in mudrika, docs/replay.md): validity is a
    half-open interval.  A claim made with deadline ``D`` is held while ``now < D`` and may be
    forgotten at ``now == D``; every verifier claims with ``D`` = the last instant it would accept
    plus nothing — it accepts only while ``now < expires + leeway`` and claims until exactly that
    instant — so at the boundary the verifier already refuses what the store forgets.
    """

    def __init__(
        self,
        *,
        clock: Clock = time.time,
        min_retention: float = DEFAULT_MIN_RETENTION,
        max_ttl: float = DEFAULT_MAX_TTL,
    ) -> None:
        if not (math.isfinite(min_retention) and min_retention >= 0):
            raise InvalidInput("min_retention must be a finite number >= 0", code="replay_config")
        if not (math.isfinite(max_ttl) and max_ttl > 0 and max_ttl >= min_retention):
            raise InvalidInput("max_ttl must be finite, > 0 and >= min_retention", code="replay_config")
        self._clock = clock
        self._min_retention = float(min_retention)
        self._max_ttl = float(max_ttl)

    def _deadline(self, expires_at: float, now: float) -> float:
        """The UNIX time until which a claim made at ``now`` is held."""
        if type(expires_at) is float and math.isfinite(expires_at) and expires_at - now <= self._max_ttl:
            # The common case (a verifier's float deadline) passes every check below: decided in one
            # line.  Anything else (an int, a bool, NaN, infinity, too far ahead) takes the full path.
            held_at_least = now + self._min_retention
            return held_at_least if held_at_least > expires_at else expires_at  # max(), without the call
        if isinstance(expires_at, bool) or not isinstance(expires_at, int | float):
            raise InvalidInput("expires_at must be a UNIX timestamp", code="replay_expiry_invalid")
        if not math.isfinite(expires_at):
            raise InvalidInput("expires_at must be finite", code="replay_expiry_invalid")
        if expires_at - now > self._max_ttl:
            raise InvalidInput(
                "expires_at too far in the future", code="replay_expiry_too_far", limit=self._max_ttl
            )
        return max(float(expires_at), now + self._min_retention)

    def _batch(self, items: Iterable[tuple[str, float]], now: float) -> list[tuple[str, float]]:
        """Check a whole batch before touching the store, so bad input never half-applies."""
        batch: list[tuple[str, float]] = []
        for key, expires_at in items:
            if len(batch) >= MAX_BATCH:
                raise InvalidInput("claim batch too large", code="replay_batch_too_large", limit=MAX_BATCH)
            check_key(key)
            batch.append((key, self._deadline(expires_at, now)))
        return batch
