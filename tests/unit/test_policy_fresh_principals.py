"""The compiled decision path for a principal seen for the first time decides what the rules say.

``Policy.decide`` no longer memoises grants by role set, and reads each operation's decision at the
caller's rank from a table built when the policy is loaded.  These tests hold it to a reference
written straight from the documented rules (stricter minimum wins, highest role level counts,
permissions are the union of the roles' and the principal's own, deny by default, anonymous callers
only for guest operations of a policy that allows them), over a generated matrix of principals x
operations, for a fresh principal, for the same principal asked again, and for equal principals.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.trust.levels import TrustLevel
from mudrika.trust.models import IdentityProvider, KeycloakRole
from mudrika.trust.policy import (
    ALLOWED,
    INSUFFICIENT_TRUST,
    MISSING_PERMISSION,
    NO_ROLE,
    UNKNOWN_OPERATION,
    Decision,
    OperationRule,
    Policy,
    Principal,
)

L = TrustLevel
GUID = "7C9E6679-7425-40DE-944B-E07FC1F90AE7"
_GUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

ROLES = [
    KeycloakRole(
        role_id="id-admin",
        role_name="admin",
        trust_level=L.ADMIN,
        realm_name="r",
        permissions=["a2a:message.send", "a2a:tasks.read", "payments:refund"],
        external_mappings={"azure_ad": [GUID], "okta": ["agent-admins"]},
    ),
    KeycloakRole(
        role_id="id-operator",
        role_name="operator",
        trust_level=L.OPERATOR,
        realm_name="r",
        permissions=["a2a:message.send"],
        operation_permissions={"tasks/cancel": L.MANAGER},
    ),
    KeycloakRole(
        role_id="id-viewer",
        role_name="viewer",
        trust_level=L.VIEWER,
        realm_name="r",
        permissions=["a2a:tasks.read"],
        external_mappings={"azure_ad": ["Agents-Viewers"]},
    ),
    KeycloakRole(
        role_id="id-auditor",
        role_name="auditor",
        trust_level=L.AUDITOR,
        realm_name="r",
        permissions=["audit:read"],
    ),
    KeycloakRole(role_id="id-support", role_name="support", trust_level=L.SUPPORT, realm_name="r"),
]
OPERATIONS = {
    "message/send": OperationRule(min_level=L.OPERATOR, permissions=["a2a:message.send"]),
    "tasks/get": OperationRule(min_level=L.VIEWER, permissions=["a2a:tasks.read"]),
    "tasks/cancel": OperationRule(min_level=L.OPERATOR),
    "payments/refund": OperationRule(min_level=L.ADMIN, permissions=["payments:refund"]),
    "audit/export": OperationRule(min_level=L.AUDITOR, permissions=["audit:read", "a2a:tasks.read"]),
    "health": OperationRule(min_level=L.GUEST),
    "card": OperationRule(min_level=L.GUEST, permissions=["public:read"]),
}
ASKED = [*OPERATIONS, "tasks/delete", ""]
ROLE_NAMES = ["admin", "operator", "viewer", "auditor", "support", "offline_access", "uma_authorization"]
PERMISSIONS = ["a2a:tasks.read", "audit:read", "public:read", "payments:refund"]
GROUPS = [GUID.lower(), GUID, "Agents-Viewers", "agents-viewers", "agent-admins", "unknown"]
PROVIDERS: list[IdentityProvider] = ["keycloak", "azure_ad", "okta"]


def reference(
    principal: Principal, operation: str, *, allow_anonymous: bool, roles: list[KeycloakRole] = ROLES
) -> Decision:
    """The rules, spelt out with no compilation, memo or table."""
    by_name = {r.role_name: r for r in roles}
    minimum: dict[str, TrustLevel] = {}
    for name, rule in OPERATIONS.items():
        if rule.min_level is not None:
            minimum[name] = rule.min_level
    for r in roles:
        for name, level in r.operation_permissions.items():
            if name not in minimum or level > minimum[name]:
                minimum[name] = level
    held = set(principal.roles)
    for r in roles:
        for group in principal.groups:
            names = r.external_mappings.get(principal.identity_provider, [])
            if principal.identity_provider == "azure_ad" and _GUID_RE.fullmatch(group):
                if group.lower() in {n.lower() for n in names if _GUID_RE.fullmatch(n)}:
                    held.add(r.role_name)
            elif group in names:
                held.add(r.role_name)
    levels = [by_name[name].trust_level for name in held if name in by_name]
    caller = max(levels, key=lambda level: level.rank) if levels else None
    permissions = set(principal.permissions)
    for name in held:
        if name in by_name:
            permissions |= set(by_name[name].permissions)
    required = minimum.get(operation)
    if required is None:
        return Decision(False, operation, None, caller, frozenset(), UNKNOWN_OPERATION)
    if caller is None and not (required is L.GUEST and allow_anonymous):
        return Decision(False, operation, required, None, frozenset(), NO_ROLE)
    if caller is not None and caller.rank < required.rank:
        return Decision(False, operation, required, caller, frozenset(), INSUFFICIENT_TRUST)
    missing = frozenset(OPERATIONS[operation].permissions if operation in OPERATIONS else ()) - permissions
    if missing:
        return Decision(False, operation, required, caller, missing, MISSING_PERMISSION)
    return Decision(True, operation, required, caller, frozenset(), ALLOWED)


def _subsets(items: list[str], largest: int) -> list[frozenset[str]]:
    return [frozenset(c) for size in range(largest + 1) for c in itertools.combinations(items, size)]


def _policy(allow_anonymous: bool) -> Policy:
    return Policy(roles=ROLES, operations=OPERATIONS, allow_anonymous=allow_anonymous)


def _same(got: Decision, want: Decision) -> None:
    assert tuple(got) == tuple(want)
    assert got.to_dict() == want.to_dict()


def test_token_principals_by_operations_match_the_rules() -> None:
    # Every subset of up to three roles x every subset of up to two direct permissions x every
    # operation asked (known, unknown, empty), with and without anonymous callers.
    for allow_anonymous in (False, True):
        policy = _policy(allow_anonymous)
        for roles in _subsets(ROLE_NAMES, 3):
            for permissions in _subsets(PERMISSIONS, 2):
                for operation in ASKED:
                    fresh = Principal(subject="s", roles=frozenset(roles), permissions=permissions)
                    want = reference(fresh, operation, allow_anonymous=allow_anonymous)
                    _same(policy.decide(fresh, operation), want)
                    _same(policy.decide(fresh, operation), want)  # the same principal, asked again


def test_a_principal_asked_about_many_operations_answers_each_as_a_fresh_one_would() -> None:
    policy = _policy(False)
    for roles in _subsets(ROLE_NAMES, 2):
        reused = Principal(subject="reused", roles=roles)
        for operation in [*ASKED, *reversed(ASKED)]:
            fresh = Principal(subject="fresh", roles=roles)
            _same(policy.decide(reused, operation), policy.decide(fresh, operation))
            _same(policy.decide(reused, operation), reference(fresh, operation, allow_anonymous=False))


def test_group_principals_by_operations_match_the_rules() -> None:
    for allow_anonymous in (False, True):
        policy = _policy(allow_anonymous)
        for provider in PROVIDERS:
            for groups in _subsets(GROUPS, 2):
                for roles in _subsets(["operator", "support", "offline_access"], 1):
                    for operation in ASKED:
                        caller = Principal(
                            subject="g", roles=roles, groups=groups, identity_provider=provider
                        )
                        want = reference(caller, operation, allow_anonymous=allow_anonymous)
                        _same(policy.decide(caller, operation), want)


def test_levels_reported_match_the_rules() -> None:
    policy = _policy(False)
    for roles in _subsets(ROLE_NAMES, 3):
        caller = Principal(subject="s", roles=roles)
        want = reference(caller, "health", allow_anonymous=True).caller_level
        assert policy.principal_level(caller) == want
        assert policy.principal_level(Principal(subject="s", roles=roles)) == want


def test_roles_given_as_other_collections_decide_alike() -> None:
    # The dataclass does not convert: a caller may hand in a set or a tuple; the decision is the same.
    policy = _policy(False)
    for roles in _subsets(ROLE_NAMES, 2):
        for operation in ASKED:
            want = policy.decide(Principal(subject="s", roles=roles), operation)
            as_set = Principal(subject="s", roles=set(roles), permissions=set())  # type: ignore[arg-type]
            _same(policy.decide(as_set, operation), want)


def test_tenant_checks_come_before_the_compiled_decision() -> None:
    policy = Policy(roles=ROLES, operations=OPERATIONS, require_tenant=True)
    admin = Principal(subject="a", roles=frozenset({"admin"}), tenants=frozenset({"t1"}))
    assert policy.decide(admin, "message/send").reason == "wrong_tenant"
    assert policy.decide(admin, "message/send", tenant="t2").reason == "wrong_tenant"
    assert policy.decide(admin, "message/send", tenant="t1").allowed
    denied = policy.decide(Principal(subject="b", roles=frozenset({"viewer"})), "tasks/get", tenant="t1")
    assert (denied.reason, denied.caller_level) == ("wrong_tenant", L.VIEWER)


@settings(max_examples=300, deadline=None)
@given(
    roles=st.frozensets(st.sampled_from(ROLE_NAMES)),
    permissions=st.frozensets(st.sampled_from([*PERMISSIONS, "other"])),
    groups=st.frozensets(st.sampled_from(GROUPS), max_size=3),
    provider=st.sampled_from(PROVIDERS),
    operation=st.one_of(st.sampled_from(ASKED), st.text(max_size=12)),
    allow_anonymous=st.booleans(),
)
def test_any_principal_matches_the_rules(
    roles: frozenset[str],
    permissions: frozenset[str],
    groups: frozenset[str],
    provider: IdentityProvider,
    operation: str,
    allow_anonymous: bool,
) -> None:
    policy = _policy(allow_anonymous)
    caller = Principal(
        subject="h", roles=roles, permissions=permissions, groups=groups, identity_provider=provider
    )
    want = reference(caller, operation, allow_anonymous=allow_anonymous)
    _same(policy.decide(caller, operation), want)
    _same(policy.decide(caller, operation), want)


def test_compiled_tables_are_per_policy_and_follow_each_policys_levels() -> None:
    strict: Mapping[str, OperationRule] = {"message/send": OperationRule(min_level=L.ADMIN)}
    lenient: Mapping[str, OperationRule] = {"message/send": OperationRule(min_level=L.VIEWER)}
    caller = Principal(subject="s", roles=frozenset({"operator"}))
    assert not Policy(roles=ROLES, operations=strict).decide(caller, "message/send").allowed
    assert Policy(roles=ROLES, operations=lenient).decide(caller, "message/send").allowed
