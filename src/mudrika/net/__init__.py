"""Outbound connections, input limits and request-derived log values: the floor every network-facing
wing stands on.

:mod:`~mudrika.net.egress` is the one egress policy every outbound fetch goes through (did:web, JWKS,
introspection, resolver drivers); :mod:`~mudrika.net.logs` escapes request values for logs;
:mod:`~mudrika.net.limits` reads files under a size cap and counts attacker-chosen keys (fetches
per DID, claims per principal) in bounded fixed windows.  ``net`` imports nothing of mudrika but
:mod:`mudrika.errors`.

The egress names are loaded on first access: a loader that only needs :func:`read_capped` (a policy
file, an evidence bundle) must not pay for the HTTP stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mudrika.net.limits import FixedWindows, read_capped
from mudrika.net.logs import log_value

if TYPE_CHECKING:
    from mudrika.net.egress import EgressPolicy, refusal_reason

_LAZY_EGRESS = frozenset({"EgressPolicy", "refusal_reason"})


def __getattr__(name: str) -> object:
    if name in _LAZY_EGRESS:
        from mudrika.net import egress

        return getattr(egress, name)
    raise AttributeError(f"module 'mudrika.net' has no attribute {name!r}")


__all__ = ["EgressPolicy", "FixedWindows", "log_value", "read_capped", "refusal_reason"]
