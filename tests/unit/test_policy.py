"""Operation policy: stricter-wins compilation, deny by default, role/group mapping, loading."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.errors import InvalidInput
from mudrika.trust.levels import TrustLevel
from mudrika.trust.models import AgentTrust, KeycloakRole
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
from tests._support.paths import FIXTURES

GUID = "7C9E6679-7425-40DE-944B-E07FC1F90AE7"
L = TrustLevel


def role(
    name: str,
    level: TrustLevel,
    *,
    permissions: tuple[str, ...] = (),
    ops: dict[str, TrustLevel] | None = None,
    external: dict[str, list[str]] | None = None,
) -> KeycloakRole:
    return KeycloakRole(
        role_id=f"id-{name}",
        role_name=name,
        trust_level=level,
        realm_name="agents",
        permissions=list(permissions),
        operation_permissions=ops or {},
        external_mappings=external or {},
    )


def trust(allowed: dict[str, TrustLevel], roles: list[KeycloakRole] | None = None) -> AgentTrust:
    return AgentTrust(
        identity_provider="keycloak",
        inherited_roles=roles or [],
        creator_id="creator",
        creation_timestamp=datetime(2025, 1, 1, tzinfo=UTC),
        allowed_operations=allowed,
    )


ROLES = [
    role(
        "admin",
        L.ADMIN,
        permissions=("payments:refund", "a2a:message.send"),
        external={"azure_ad": ["Agent-Admins", GUID], "okta": ["agent-admins"]},
    ),
    role("operator", L.OPERATOR, permissions=("a2a:message.send",), external={"okta": ["ops"]}),
    role("viewer", L.VIEWER, permissions=("a2a:tasks.read",)),
    role("auditor", L.AUDITOR),
    role("guest", L.GUEST),
]

OPERATIONS = {
    "message/send": OperationRule(min_level=L.OPERATOR, permissions=["a2a:message.send"]),
    "tasks/get": OperationRule(min_level=L.VIEWER, permissions=["a2a:tasks.read"]),
    "payments/refund": OperationRule(min_level=L.ADMIN, permissions=["payments:refund"]),
    "agent/card": OperationRule(min_level=L.GUEST),
}


@pytest.fixture
def policy() -> Policy:
    return Policy(roles=ROLES, operations=OPERATIONS)


def who(
    *roles: str, groups: tuple[str, ...] = (), provider: str = "keycloak", perms: tuple[str, ...] = ()
) -> Principal:
    return Principal(
        subject="s",
        roles=frozenset(roles),
        groups=frozenset(groups),
        permissions=frozenset(perms),
        identity_provider=provider,  # type: ignore[arg-type]
    )


# --- compilation: the stricter minimum wins --------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "card", "role_op", "expected"),
    [
        (L.OPERATOR, L.VIEWER, L.MANAGER, L.MANAGER),
        (L.MANAGER, L.VIEWER, L.OPERATOR, L.MANAGER),
        (L.VIEWER, L.ADMIN, L.OPERATOR, L.ADMIN),
        (None, L.EDITOR, L.ANALYST, L.EDITOR),
        (None, None, L.SUPPORT, L.SUPPORT),
        (L.GUEST, None, None, L.GUEST),
    ],
)
def test_stricter_requirement_wins(
    config: TrustLevel | None, card: TrustLevel | None, role_op: TrustLevel | None, expected: TrustLevel
) -> None:
    operations = {"tasks/cancel": OperationRule(min_level=config)} if config else {}
    agent = trust({"tasks/cancel": card} if card else {})
    roles = [role("r", L.VIEWER, ops={"tasks/cancel": role_op} if role_op else None)]
    compiled = Policy(roles=roles, operations=operations, agent_trust=agent)
    assert compiled.minimum_level("tasks/cancel") is expected


def test_stricter_wins_across_several_roles_and_inherited_roles() -> None:
    compiled = Policy(
        roles=[role("a", L.VIEWER, ops={"op": L.ANALYST}), role("b", L.VIEWER, ops={"op": L.EDITOR})],
        operations={"op": OperationRule(min_level=L.AUDITOR)},
        agent_trust=trust({"op": L.SUPPORT}, roles=[role("c", L.VIEWER, ops={"op": L.OPERATOR})]),
    )
    assert compiled.minimum_level("op") is L.OPERATOR
    caller = who("a")
    decision = compiled.decide(caller, "op")
    assert not decision.allowed
    assert decision.required_level is L.OPERATOR


def test_inherited_roles_of_the_card_map_levels() -> None:
    compiled = Policy(roles=[], operations=OPERATIONS, agent_trust=trust({}, roles=[role("x", L.ADMIN)]))
    assert compiled.role_level("x") is L.ADMIN
    assert compiled.decide(who("x"), "agent/card").allowed


def test_operation_with_permissions_but_no_level_is_a_load_error() -> None:
    with pytest.raises(InvalidInput) as info:
        Policy(roles=ROLES, operations={"op": OperationRule(permissions=["p"])})
    assert info.value.code == "operation_without_level"


def test_conflicting_role_definitions_are_refused() -> None:
    with pytest.raises(InvalidInput) as info:
        Policy(roles=[role("x", L.ADMIN), role("x", L.VIEWER)], operations={})
    assert info.value.code == "conflicting_role"


def test_identical_role_twice_is_fine() -> None:
    compiled = Policy(roles=[role("x", L.ADMIN)], operations={}, agent_trust=trust({}, [role("x", L.ADMIN)]))
    assert compiled.role_level("x") is L.ADMIN


# --- deciding ---------------------------------------------------------------------------------------


def test_allowed_decision(policy: Policy) -> None:
    decision = policy.decide(who("operator"), "message/send")
    assert decision == Decision(True, "message/send", L.OPERATOR, L.OPERATOR, frozenset(), ALLOWED)


def test_unknown_operation_denied(policy: Policy) -> None:
    decision = policy.decide(who("admin"), "tasks/delete")
    assert not decision.allowed
    assert decision.reason == UNKNOWN_OPERATION
    assert decision.required_level is None
    assert decision.caller_level is L.ADMIN


def test_empty_policy_denies_everything() -> None:
    empty = Policy(roles=ROLES, operations={})
    assert empty.decide(who("admin"), "message/send").reason == UNKNOWN_OPERATION


def test_insufficient_trust(policy: Policy) -> None:
    decision = policy.decide(who("viewer", perms=("payments:refund",)), "payments/refund")
    assert not decision.allowed
    assert decision.reason == INSUFFICIENT_TRUST
    assert (decision.required_level, decision.caller_level) == (L.ADMIN, L.VIEWER)


def test_highest_role_level_counts(policy: Policy) -> None:
    caller = who("viewer", "guest", "admin", "auditor")
    assert policy.principal_level(caller) is L.ADMIN
    assert policy.decide(caller, "payments/refund").allowed


def test_unmapped_roles_give_no_level(policy: Policy) -> None:
    caller = who("offline_access", "uma_authorization")
    assert policy.principal_level(caller) is None
    decision = policy.decide(caller, "tasks/get")
    assert decision.reason == NO_ROLE
    assert decision.caller_level is None


def test_unmapped_roles_do_not_lower_a_mapped_one(policy: Policy) -> None:
    assert policy.principal_level(who("offline_access", "operator")) is L.OPERATOR


def test_no_role_denied_even_for_guest_operations_by_default(policy: Policy) -> None:
    decision = policy.decide(Principal.anonymous(), "agent/card")
    assert not decision.allowed
    assert decision.reason == NO_ROLE


def test_anonymous_allowed_only_for_guest_operations_when_enabled() -> None:
    open_policy = Policy(roles=ROLES, operations=OPERATIONS, allow_anonymous=True)
    assert open_policy.decide(Principal.anonymous(), "agent/card").allowed
    assert open_policy.decide(Principal.anonymous(), "tasks/get").reason == NO_ROLE
    assert open_policy.decide(Principal.anonymous(), "nope").reason == UNKNOWN_OPERATION


def test_anonymous_still_needs_the_operations_permissions() -> None:
    ops = {"agent/card": OperationRule(min_level=L.GUEST, permissions=["cards:read"])}
    open_policy = Policy(roles=ROLES, operations=ops, allow_anonymous=True)
    denied = open_policy.decide(Principal.anonymous(), "agent/card")
    assert denied.reason == MISSING_PERMISSION
    assert open_policy.decide(who(perms=("cards:read",)), "agent/card").allowed


def test_missing_permission_lists_what_is_missing(policy: Policy) -> None:
    compiled = Policy(
        roles=[role("refunder", L.ADMIN)],
        operations={"payments/refund": OperationRule(min_level=L.OPERATOR, permissions=["a", "b", "c"])},
    )
    decision = compiled.decide(who("refunder", perms=("b",)), "payments/refund")
    assert not decision.allowed
    assert decision.reason == MISSING_PERMISSION
    assert decision.missing_permissions == frozenset({"a", "c"})
    assert decision.caller_level is L.ADMIN


def test_permissions_come_from_roles_and_from_the_principal(policy: Policy) -> None:
    # viewer's role grants a2a:tasks.read
    assert policy.decide(who("viewer"), "tasks/get").allowed
    # auditor has the level but not the permission, unless granted directly (e.g. a token scope)
    assert policy.decide(who("auditor"), "tasks/get").reason == MISSING_PERMISSION
    assert policy.decide(who("auditor", perms=("a2a:tasks.read",)), "tasks/get").allowed


def test_decision_refuses_truth_testing(policy: Policy) -> None:
    decision = policy.decide(who("viewer"), "payments/refund")
    with pytest.raises(TypeError, match=r"decision\.allowed"):
        bool(decision)
    with pytest.raises(AttributeError):
        decision.allowed = True  # type: ignore[misc]


def test_decision_to_dict(policy: Policy) -> None:
    decision = policy.decide(who("auditor"), "tasks/get")
    assert decision.to_dict() == {
        "allowed": False,
        "operation": "tasks/get",
        "required_level": "viewer",
        "caller_level": "auditor",
        "missing_permissions": ["a2a:tasks.read"],
        "reason": "missing_permission",
    }
    assert (
        Decision(False, "x", None, None, frozenset(), UNKNOWN_OPERATION).to_dict()["required_level"] is None
    )


# --- external IdP groups -------------------------------------------------------------------------


def test_azure_group_name_maps_to_role(policy: Policy) -> None:
    caller = who(groups=("Agent-Admins",), provider="azure_ad")
    assert policy.principal_level(caller) is L.ADMIN


def test_azure_group_names_are_exact(policy: Policy) -> None:
    assert policy.principal_level(who(groups=("agent-admins",), provider="azure_ad")) is None


@pytest.mark.parametrize("spelling", [GUID, GUID.lower(), "7c9E6679-7425-40de-944B-e07FC1F90AE7"])
def test_azure_group_guid_is_case_insensitive(policy: Policy, spelling: str) -> None:
    caller = who(groups=(spelling,), provider="azure_ad")
    assert policy.principal_level(caller) is L.ADMIN
    assert policy.decide(caller, "payments/refund").allowed


def test_okta_groups_map_to_roles(policy: Policy) -> None:
    assert policy.principal_level(who(groups=("ops",), provider="okta")) is L.OPERATOR
    assert policy.principal_level(who(groups=("ops", "agent-admins"), provider="okta")) is L.ADMIN


def test_groups_only_count_for_their_own_provider(policy: Policy) -> None:
    assert policy.principal_level(who(groups=("Agent-Admins",), provider="okta")) is None
    assert policy.principal_level(who(groups=("agent-admins",), provider="keycloak")) is None
    assert policy.principal_level(who(groups=("ops",), provider="azure_ad")) is None


def test_group_roles_union_with_direct_roles(policy: Policy) -> None:
    caller = who("viewer", groups=("ops",), provider="okta")
    assert policy.principal_level(caller) is L.OPERATOR
    assert policy.decide(caller, "tasks/get").allowed
    assert policy.decide(caller, "message/send").allowed


# --- caching behaviour (correctness, not timing) --------------------------------------------------


def test_decisions_are_cached_per_principal_and_shared_by_equal_principals(policy: Policy) -> None:
    first = who("operator")
    again = who("operator")
    assert first == again
    assert policy.decide(first, "message/send") is policy.decide(first, "message/send")
    assert policy.decide(again, "message/send") is policy.decide(first, "message/send")


def test_principal_memo_is_per_policy(policy: Policy) -> None:
    caller = who("operator")
    strict = Policy(roles=[role("operator", L.VIEWER)], operations=OPERATIONS)
    assert policy.decide(caller, "message/send").allowed
    assert strict.decide(caller, "message/send").reason == INSUFFICIENT_TRUST
    assert policy.decide(caller, "message/send").allowed


def test_principal_cache_is_invisible_to_equality_and_repr(policy: Policy) -> None:
    caller = who("operator")
    before = repr(caller)
    policy.decide(caller, "message/send")
    assert repr(caller) == before
    assert caller == who("operator")
    assert hash(caller) == hash(who("operator"))


@settings(max_examples=150, deadline=None)
@given(
    roles=st.frozensets(st.sampled_from(["admin", "operator", "viewer", "auditor", "guest", "nobody", ""])),
    groups=st.frozensets(st.text(max_size=40), max_size=4),
    provider=st.sampled_from(["keycloak", "azure_ad", "okta", "auth0", "custom"]),
    operation=st.one_of(st.sampled_from(sorted(OPERATIONS)), st.text(max_size=30)),
)
def test_decide_never_raises_and_allows_only_known_operations(
    roles: frozenset[str], groups: frozenset[str], provider: str, operation: str
) -> None:
    compiled = Policy(roles=ROLES, operations=OPERATIONS)
    caller = Principal(subject="p", roles=roles, groups=groups, identity_provider=provider)  # type: ignore[arg-type]
    decision = compiled.decide(caller, operation)
    if decision.allowed:
        assert operation in OPERATIONS
        assert decision.caller_level is not None
        assert decision.required_level is not None
        assert decision.caller_level >= decision.required_level
        assert decision.reason == ALLOWED
    else:
        assert decision.reason in {UNKNOWN_OPERATION, NO_ROLE, INSUFFICIENT_TRUST, MISSING_PERMISSION}


# --- loading from files ---------------------------------------------------------------------------


def test_yaml_fixture_loads_and_decides() -> None:
    loaded = Policy.from_file(FIXTURES / "policy" / "agent-policy.yaml")
    assert loaded.operations == frozenset(
        {"message/send", "tasks/get", "tasks/cancel", "payments/refund", "agent/getAuthenticatedExtendedCard"}
    )
    # tasks/cancel: card says operator, policy says operator, agent-operator's operationPermissions say manager.
    assert loaded.minimum_level("tasks/cancel") is L.MANAGER
    assert loaded.required_permissions("message/send") == frozenset({"a2a:message.send"})
    assert loaded.trust_verification_required is True
    assert loaded.decide(who("agent-operator"), "message/send").allowed
    assert loaded.decide(who("agent-operator"), "tasks/cancel").reason == INSUFFICIENT_TRUST
    assert loaded.decide(who("agent-manager"), "tasks/cancel").allowed
    azure = who(groups=(GUID.lower(),), provider="azure_ad")
    assert loaded.decide(azure, "payments/refund").allowed
    assert loaded.decide(who(groups=("agent-operators",), provider="okta"), "payments/refund").reason == (
        INSUFFICIENT_TRUST
    )


def test_json_fixture_with_anonymous_access() -> None:
    loaded = Policy.from_file(FIXTURES / "policy" / "anonymous-policy.json")
    assert loaded.allow_anonymous
    assert loaded.decide(Principal.anonymous(), "agent/card").allowed
    assert loaded.decide(Principal.anonymous(), "tasks/get").reason == NO_ROLE


def test_realm_backed_policy_fixture() -> None:
    loaded = Policy.from_file(FIXTURES / "policy" / "realm-policy.yaml")
    assert loaded.role_level("agent-admin") is L.ADMIN
    assert loaded.role_level("payments-api/refund") is L.OPERATOR
    assert loaded.role_level("offline_access") is None
    # Keycloak group paths from the export map to roles (subgroups inherit their parents' roles).
    night = who(groups=("/operations/leads/night-shift",))
    assert loaded.principal_level(night) is L.MANAGER
    assert loaded.decide(night, "payments/refund").allowed
    assert loaded.decide(who(groups=("/operations",)), "payments/refund").reason == MISSING_PERMISSION
    # Composite roles carry the levels and permissions of what they contain.
    assert loaded.decide(who("read-only-bundle"), "tasks/get").allowed
    # The Azure mapping on agent-admin comes from the role's azure_ad_groups attribute.
    assert loaded.principal_level(who(groups=(GUID.lower(),), provider="azure_ad")) is L.ADMIN
    # Operation minimums from role attributes: tasks/cancel=manager on agent-manager.
    assert loaded.minimum_level("tasks/cancel") is L.MANAGER


def test_from_realm_export_classmethod() -> None:
    compiled = Policy.from_realm_export(
        FIXTURES / "keycloak" / "agents-realm.json",
        operations={"audit/export": OperationRule(min_level=L.AUDITOR, permissions=["audit:read"])},
    )
    assert compiled.decide(who(groups=("/audit",)), "audit/export").allowed
    assert compiled.decide(who("cycle-analyst"), "audit/export").reason == MISSING_PERMISSION


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def base_doc(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": 1,
        "roles": [{"roleId": "1", "roleName": "r", "realmName": "x", "trustLevel": "viewer"}],
        "operations": {"op": {"min_level": "viewer"}},
    }
    doc.update(extra)
    return doc


def test_snake_case_yaml_equivalent_to_json(tmp_path: Path) -> None:
    yaml_path = write(
        tmp_path,
        "p.yml",
        "version: 1\nroles:\n  - {role_id: '1', role_name: r, realm_name: x, trust_level: Viewer}\n"
        "operations:\n  op: {min_level: viewer}\n",
    )
    json_path = write(tmp_path, "p.json", json.dumps(base_doc()))
    for path in (yaml_path, json_path):
        loaded = Policy.from_file(path)
        assert loaded.decide(who("r"), "op").allowed


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        (base_doc(extra_key=1), "extra_key"),
        (base_doc(version=2), "version"),
        (base_doc(operations={"op": {"min_level": "boss"}}), "operations.op.min_level"),
        (base_doc(operations={"op": {"minimum": "viewer"}}), "operations.op.minimum"),
        (
            base_doc(roles=[{"roleId": "1", "roleName": "r", "realmName": "x", "trustLevel": "z"}]),
            "roles.0.trustLevel",
        ),
        (base_doc(allow_anonymous="yes"), "allow_anonymous"),
        (base_doc(agent_trust={"identityProvider": "keycloak"}), "agent_trust.creatorId"),
    ],
)
def test_invalid_documents_name_the_offending_path(
    tmp_path: Path, doc: dict[str, Any], fragment: str
) -> None:
    path = write(tmp_path, "bad.json", json.dumps(doc))
    with pytest.raises(InvalidInput) as info:
        Policy.from_file(path)
    assert info.value.code == "invalid_policy"
    assert fragment in info.value.message
    assert str(path) in info.value.message


@pytest.mark.parametrize(
    ("name", "text", "code"),
    [
        ("dup.yaml", "version: 1\nversion: 1\n", "duplicate_key"),
        ("dup.json", '{"version": 1, "version": 1}', "duplicate_key"),
        ("bad.yaml", "version: [1\n", "invalid_policy"),
        ("bad.json", "{version: 1}", "invalid_policy"),
        ("list.yaml", "- 1\n- 2\n", "invalid_policy"),
        ("empty.yaml", "", "invalid_policy"),
        ("nolevel.yaml", "version: 1\noperations:\n  op: {permissions: [p]}\n", "operation_without_level"),
    ],
)
def test_malformed_files(tmp_path: Path, name: str, text: str, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        Policy.from_file(write(tmp_path, name, text))
    assert info.value.code == code


def test_yaml_tags_that_build_objects_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "evil.yaml", "version: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(InvalidInput):
        Policy.from_file(path)


def test_missing_and_oversized_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        Policy.from_file(tmp_path / "absent.yaml")
    assert info.value.code == "unreadable"
    big = write(tmp_path, "big.yaml", "# " + "x" * (1024 * 1024) + "\n")
    with pytest.raises(InvalidInput) as info:
        Policy.from_file(big)
    assert info.value.code == "too_large"


def test_relative_realm_export_is_resolved_next_to_the_policy(tmp_path: Path) -> None:
    realm = FIXTURES / "keycloak" / "agents-realm.json"
    (tmp_path / "realm.json").write_bytes(realm.read_bytes())
    path = write(
        tmp_path, "p.yaml", "version: 1\nrealm_export: realm.json\noperations:\n  op: {min_level: admin}\n"
    )
    assert Policy.from_file(path).decide(who("agent-super-admin"), "op").allowed
    broken = write(tmp_path, "q.yaml", "version: 1\nrealm_export: nowhere.json\n")
    with pytest.raises(InvalidInput) as info:
        Policy.from_file(broken)
    assert info.value.code == "unreadable"
