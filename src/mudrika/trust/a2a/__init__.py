"""The A2A protocol surface the trust layer must know: method names, REST routes, operations.

:mod:`~mudrika.trust.a2a.methods` maps both JSON-RPC method generations (0.3 ``message/send`` and
1.0 ``SendMessage``) and the REST routes a2a-sdk mounts onto one operation vocabulary, so the
policy is written once per operation whatever binding a caller uses.

The A2A 1.0 trust objects live in their own modules, imported by name (not re-exported here, so the
middleware's import of the method table stays light): :mod:`~mudrika.trust.a2a.cards` (Agent Card
signatures, §8.4), :mod:`~mudrika.trust.a2a.push` (signed push notifications, §13.2),
:mod:`~mudrika.trust.a2a.artifacts` (signatures over artifact and message parts) and
:mod:`~mudrika.trust.a2a.task_states` (policy decisions as A2A task states).
"""

from __future__ import annotations

from mudrika.trust.a2a.methods import (
    A2A_V03_METHODS,
    A2A_V10_METHODS,
    OPERATIONS,
    REST_ROUTES,
    STREAMING_OPERATIONS,
    RestRoute,
    operation_for_method,
    operation_for_route,
)

__all__ = [
    "A2A_V03_METHODS",
    "A2A_V10_METHODS",
    "OPERATIONS",
    "REST_ROUTES",
    "STREAMING_OPERATIONS",
    "RestRoute",
    "operation_for_method",
    "operation_for_route",
]
