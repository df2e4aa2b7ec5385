"""The operation policy: who may call which A2A operation, at which trust level.

A :class:`Policy` is compiled once at load time from YAML/JSON or from a Keycloak realm export and
answers :meth:`Policy.decide` in microseconds without raising (deny by default: an unknown
operation, a missing role or too low a trust level is a :class:`Decision` that says no, and why).
``_policy`` holds the model and the compiled decision table; ``_realm`` turns a realm export
(composites, client roles, groups, attributes) into roles with trust levels.
"""

from __future__ import annotations

from mudrika.trust.policy._policy import (
    ALLOWED,
    INSUFFICIENT_TRUST,
    MISSING_PERMISSION,
    NO_ROLE,
    UNKNOWN_OPERATION,
    Decision,
    OperationRule,
    Policy,
    PolicyFile,
    Principal,
)
from mudrika.trust.policy._realm import (
    MAX_EXPORT_BYTES,
    RealmRoles,
    import_realm_export,
    load_realm_export,
)

__all__ = [
    "ALLOWED",
    "INSUFFICIENT_TRUST",
    "MAX_EXPORT_BYTES",
    "MISSING_PERMISSION",
    "NO_ROLE",
    "UNKNOWN_OPERATION",
    "Decision",
    "OperationRule",
    "Policy",
    "PolicyFile",
    "Principal",
    "RealmRoles",
    "import_realm_export",
    "load_realm_export",
]
