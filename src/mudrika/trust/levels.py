"""Ordered trust levels for agents and the humans or services behind them.

Why an ordered enum and not plain strings: every policy question we answer is "is the caller's level at
least the operation's minimum?", so the order must be defined once, here, and comparisons between a level
and an arbitrary string must fail loudly instead of silently falling back to alphabetical order (which is
what a ``str`` subclass would do if we let it).

Order, highest first: super_admin > admin > manager > operator > editor > analyst > auditor > support >
viewer > guest.  The string value of each member is its snake_case name, which is what agent cards, policy
files and the Keycloak ``trust_level`` role attribute carry.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from mudrika.errors import InvalidInput

__all__ = ["TrustLevel", "parse"]

# Longest accepted input: the longest name plus generous whitespace; anything longer is not a level.
_MAX_INPUT = 64


class TrustLevel(StrEnum):
    """A trust level; members compare by rank (``TrustLevel.ADMIN > TrustLevel.VIEWER``).

    Equality stays string equality (``TrustLevel.ADMIN == "admin"``) so levels round-trip through JSON,
    but ordering is only defined between two ``TrustLevel`` members: ``TrustLevel.ADMIN < "zzz"`` raises
    ``TypeError`` rather than comparing spellings.
    """

    GUEST = "guest"
    VIEWER = "viewer"
    SUPPORT = "support"
    AUDITOR = "auditor"
    ANALYST = "analyst"
    EDITOR = "editor"
    OPERATOR = "operator"
    MANAGER = "manager"
    ADMIN = "admin"
    SUPER_ADMIN = "super_admin"

    @property
    def rank(self) -> int:
        """Integer rank, 0 for ``guest`` up to 9 for ``super_admin``; the policy hot path compares these."""
        return _RANK[self]

    @classmethod
    def parse(cls, value: str) -> TrustLevel:
        """Parse a level name: case-insensitive, surrounding whitespace ignored, ``-`` accepted for ``_``."""
        return parse(value)

    def _check(self, other: Any) -> int:
        if not isinstance(other, TrustLevel):
            raise TypeError(f"cannot order TrustLevel against {type(other).__name__}; parse the value first")
        return _RANK[other]

    def __lt__(self, other: Any) -> bool:
        return _RANK[self] < self._check(other)

    def __le__(self, other: Any) -> bool:
        return _RANK[self] <= self._check(other)

    def __gt__(self, other: Any) -> bool:
        return _RANK[self] > self._check(other)

    def __ge__(self, other: Any) -> bool:
        return _RANK[self] >= self._check(other)


# Definition order above is lowest first, so the rank is the position.
_RANK: dict[TrustLevel, int] = {level: index for index, level in enumerate(TrustLevel)}
_BY_NAME: dict[str, TrustLevel] = {level.value: level for level in TrustLevel}
_VALID = ", ".join(level.value for level in sorted(TrustLevel, reverse=True))


def parse(value: str) -> TrustLevel:
    """Return the ``TrustLevel`` named by ``value`` or raise ``InvalidInput`` listing the valid names."""
    if isinstance(value, TrustLevel):
        return value
    if not isinstance(value, str):
        raise InvalidInput(
            f"trust level must be a string, not {type(value).__name__}; valid values: {_VALID}",
            code="invalid_trust_level",
        )
    if len(value) > _MAX_INPUT:
        raise InvalidInput(
            f"trust level is too long ({len(value)} characters); valid values: {_VALID}",
            code="invalid_trust_level",
        )
    key = value.strip().lower().replace("-", "_")
    level = _BY_NAME.get(key)
    if level is None:
        raise InvalidInput(
            f"unknown trust level {value.strip()!r}; valid values: {_VALID}",
            code="invalid_trust_level",
            got=value.strip(),
            valid=[level.value for level in sorted(TrustLevel, reverse=True)],
        )
    return level
