"""Limits on attacker-chosen input: size-capped file reads, and bounded fixed-window counters.

Why one file reader: every document mudrika loads from disk (policy files, realm exports, evidence
bundles, trust roots) must read at most ``max_bytes + 1`` bytes, so an oversized file is refused
without being read whole, and must turn :class:`OSError` into :class:`~mudrika.errors.InvalidInput`
at the boundary, keeping the OS error's text but not its traceback.

Why one counter implementation: the DID resolver limits fetches per DID and per host, and the A2A
middleware limits replay-store claims per principal.  Both count attacker-chosen keys, so both need
the same two properties: the table of keys is bounded, and a table full of live windows refuses a
new key (fails closed) rather than forget a count an attacker could then reset.  ``net`` is the
lowest floor both ``identity`` and ``trust`` stand on.
"""

from __future__ import annotations

from pathlib import Path

from mudrika.errors import InvalidInput

__all__ = ["FixedWindows", "read_capped"]


def read_capped(path: str | Path, *, max_bytes: int, name: str) -> bytes:
    """The bytes of the file at ``path``; ``InvalidInput`` ``unreadable`` or ``too_large`` (over
    ``max_bytes``) otherwise.  ``name`` says what the file is in the message ("policy file")."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InvalidInput(
            f"cannot read {name} {path}: {exc.strerror}", code="unreadable", path=str(path)
        ) from None
    if len(data) > max_bytes:
        raise InvalidInput(
            f"{name} {path} is larger than {max_bytes} bytes",
            code="too_large",
            path=str(path),
            limit=max_bytes,
        )
    return data


class FixedWindows:
    """At most ``limit`` events per key in each ``window`` seconds, for at most ``max_keys`` keys.

    A key's window starts at its first event and covers ``[start, start + window)``.  The caller
    validates the numbers (each owner has its own configuration error) and passes the time, so one
    clock reading can serve several counters.
    """

    __slots__ = ("_counts", "_limit", "_max_keys", "_window")

    def __init__(self, limit: int, window: float, *, max_keys: int) -> None:
        self._limit = limit
        self._window = float(window)
        self._max_keys = max_keys
        self._counts: dict[str, tuple[float, int]] = {}

    def allow(self, key: str, now: float) -> bool:
        """Count one event for ``key`` at ``now``; False when it is over its limit (nothing counted)."""
        start, count = self._counts.get(key, (now, 0))
        if now - start >= self._window:
            start, count = now, 0
        if count >= self._limit:
            return False
        if key not in self._counts and len(self._counts) >= self._max_keys:
            self._counts = {k: v for k, v in self._counts.items() if now - v[0] < self._window}
            if len(self._counts) >= self._max_keys:
                return False
        self._counts[key] = (start, count + 1)
        return True
