"""The operation policy: who may call which A2A operation, at which trust level.

A :class:`Policy` is compiled once at load time from YAML/JSON or from a Keycloak realm export and
answers :meth:`Policy.decide` in microseconds without raising (deny by default: an unknown
operation, a missing role, too low a trust level or another tenant is a :class:`Decision` that says
no, and why).  ``_did_roles`` compiles the ``did_roles`` table for DID callers; ``_tenants`` reads a
token caller's tenants from the configured claim.
``_policy`` holds the model and the compiled decision table; ``_realm`` turns a realm export
(composites, client roles, groups, attributes) into roles with trust levels.
"""

from __future__ import annotations

from mudrika.trust.policy._agent_roles import AGENT_PROFILES, AgentRoleTable
from mudrika.trust.policy._did_roles import DidGrant
from mudrika.trust.policy._policy import (
    ALLOWED,
    EXECUTE_OPERATION,
    EXECUTOR_MISMATCH,
    INSUFFICIENT_TRUST,
    MISSING_PERMISSION,
    NO_ROLE,
    PAYMENT_REQUIRED,
    UNKNOWN_OPERATION,
    WRONG_AGENT,
    WRONG_TENANT,
    Decision,
    DidRoleRule,
    OperationRule,
    Policy,
    PolicyFile,
    Principal,
)
from mudrika.trust.policy._realm import (
    MAX_EXPORT_BYTES,
    TRUST_ATTRIBUTE,
    RealmRoles,
    import_realm_export,
    load_realm_export,
)
from mudrika.trust.policy._tenants import tenants_from_claims

__all__ = [
    "AGENT_PROFILES",
    "ALLOWED",
    "EXECUTE_OPERATION",
    "EXECUTOR_MISMATCH",
    "INSUFFICIENT_TRUST",
    "MAX_EXPORT_BYTES",
    "MISSING_PERMISSION",
    "NO_ROLE",
    "PAYMENT_REQUIRED",
    "TRUST_ATTRIBUTE",
    "UNKNOWN_OPERATION",
    "WRONG_AGENT",
    "WRONG_TENANT",
    "AgentRoleTable",
    "Decision",
    "DidGrant",
    "DidRoleRule",
    "OperationRule",
    "Policy",
    "PolicyFile",
    "Principal",
    "RealmRoles",
    "import_realm_export",
    "load_realm_export",
    "tenants_from_claims",
]
