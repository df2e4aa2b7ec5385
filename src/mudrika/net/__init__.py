"""Outbound connections and request-derived log values: the floor every network-facing wing stands on.

:mod:`~mudrika.net.egress` is the one egress policy every outbound fetch goes through (did:web, JWKS,
introspection, resolver drivers); :mod:`~mudrika.net.logs` escapes request values for logs;
:mod:`~mudrika.net.limits` counts attacker-chosen keys (fetches per DID, claims per principal) in
bounded fixed windows.  ``net`` imports nothing of mudrika but :mod:`mudrika.errors`.
"""

from __future__ import annotations

from mudrika.net.egress import EgressPolicy, refusal_reason
from mudrika.net.limits import FixedWindows
from mudrika.net.logs import log_value

__all__ = ["EgressPolicy", "FixedWindows", "log_value", "refusal_reason"]
