"""Realm-export import: composites (with a cycle), client roles, groups/subgroups, users, attributes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.errors import InvalidInput
from mudrika.trust.keycloak.adapters import (
    RealmRoles,
    import_realm_export,
    load_realm_export,
    policy_from_realm,
)
from mudrika.trust.levels import TrustLevel
from mudrika.trust.policy import OperationRule, Policy, Principal
from tests._support.paths import FIXTURES

L = TrustLevel
REALM_FILE = FIXTURES / "keycloak" / "agents-realm.json"


@pytest.fixture(scope="module")
def export() -> dict[str, Any]:
    return load_realm_export(REALM_FILE)


@pytest.fixture(scope="module")
def realm(export: dict[str, Any]) -> RealmRoles:
    return import_realm_export(export)


def test_realm_name_and_declared_levels(realm: RealmRoles) -> None:
    assert realm.realm_name == "agents"
    assert realm.level_of("agent-admin") is L.ADMIN
    assert realm.level_of("agent-manager") is L.MANAGER  # attribute spelt "Manager"
    assert realm.level_of("agent-operator") is L.OPERATOR
    assert realm.level_of("agent-viewer") is L.VIEWER
    assert realm.level_of("auditor") is L.AUDITOR
    assert realm.level_of("agent-guest") is L.GUEST


def test_composite_takes_the_highest_level_it_contains(realm: RealmRoles) -> None:
    # agent-super-admin declares super_admin and contains agent-admin: super_admin stays.
    assert realm.level_of("agent-super-admin") is L.SUPER_ADMIN
    # read-only-bundle has no level of its own but contains agent-viewer.
    assert realm.level_of("read-only-bundle") is L.VIEWER
    assert realm.roles["read-only-bundle"].permissions == ["a2a:tasks.read"]


def test_roles_without_any_level_are_not_mapped(realm: RealmRoles) -> None:
    assert realm.level_of("offline_access") is None
    assert realm.level_of("payments-api/read-ledger") is None
    assert "offline_access" in realm.closure


def test_client_roles_are_qualified_and_composites_cross_clients(realm: RealmRoles) -> None:
    refund = realm.roles["payments-api/refund"]
    assert refund.trust_level is L.OPERATOR
    assert refund.role_id == "d2b2e8a1-0001-4f3a-8b62-2c3d4e5f6a01"
    assert refund.realm_name == "agents"
    assert realm.closure["payments-api/refund"] == {"payments-api/refund", "payments-api/read-ledger"}
    assert set(refund.permissions) == {"payments:refund", "payments:ledger.read"}
    editor = realm.roles["a2a-gateway/gateway-editor"]
    assert editor.trust_level is L.EDITOR
    assert realm.closure["a2a-gateway/gateway-editor"] == {
        "a2a-gateway/gateway-editor",
        "agent-viewer",
        "payments-api/read-ledger",
    }


def test_transitive_composites(realm: RealmRoles) -> None:
    assert realm.closure["agent-super-admin"] == {
        "agent-super-admin",
        "agent-admin",
        "agent-manager",
        "agent-operator",
        "payments-api/refund",
        "payments-api/read-ledger",
    }
    assert set(realm.roles["agent-admin"].permissions) == {
        "agents:manage",
        "a2a:message.send",
        "a2a:tasks.read",
        "payments:refund",
        "payments:ledger.read",
    }


def test_composite_cycle_members_share_their_union(realm: RealmRoles) -> None:
    cycle = {"cycle-analyst", "cycle-reporter", "cycle-helpdesk"}
    for name in cycle:
        assert realm.closure[name] == cycle
        # analyst is the highest level anywhere in the cycle; reporter declares none at all.
        assert realm.level_of(name) is L.ANALYST
        assert set(realm.roles[name].permissions) == {"reports:read", "tickets:write"}


def test_attributes_become_mappings_and_operation_minimums(realm: RealmRoles) -> None:
    admin = realm.roles["agent-admin"]
    assert admin.external_mappings == {
        "azure_ad": ["Agent-Admins", "7C9E6679-7425-40DE-944B-E07FC1F90AE7"],
        "okta": ["agent-admins"],
    }
    assert realm.roles["agent-manager"].operation_permissions == {"tasks/cancel": L.MANAGER}
    # Operation minimums travel up through composites too.
    assert admin.operation_permissions == {"tasks/cancel": L.MANAGER}


def test_groups_inherit_parent_roles_and_expand_composites(realm: RealmRoles) -> None:
    assert realm.groups["/operations"] == {"agent-operator"}
    assert realm.groups["/operations/trainees"] == {"agent-operator"}
    assert realm.groups["/operations/leads"] == {"agent-manager", "agent-operator"}
    assert realm.groups["/operations/leads/night-shift"] == {
        "agent-manager",
        "agent-operator",
        "payments-api/refund",
        "payments-api/read-ledger",
    }
    assert realm.groups["/audit"] == {"auditor", "cycle-analyst", "cycle-reporter", "cycle-helpdesk"}
    assert realm.groups["/partners"] == {
        "a2a-gateway/gateway-editor",
        "agent-viewer",
        "payments-api/read-ledger",
    }


def test_users_effective_roles(realm: RealmRoles) -> None:
    defaults = {"default-roles-agents", "agent-guest"}
    assert (
        realm.user_roles("alice")
        == defaults | {"offline_access"} | realm.groups["/operations/leads/night-shift"]
    )
    assert realm.user_roles("bob") == defaults | {
        "read-only-bundle",
        "agent-viewer",
        "payments-api/read-ledger",
    }
    assert realm.user_roles("carol") == defaults | realm.groups["/audit"]
    assert realm.user_roles("dave") == defaults | realm.groups["/partners"] | {"agent-operator"}
    assert realm.user_roles("erin") == defaults
    with pytest.raises(InvalidInput) as info:
        realm.user_roles("mallory")
    assert info.value.code == "unknown_user"


def test_effective_roles_helper(realm: RealmRoles) -> None:
    assert realm.expand(["agent-manager", "not-a-role"]) == {"agent-manager", "agent-operator", "not-a-role"}
    assert realm.effective_roles(roles=["auditor"], groups=["/operations", "/nope"]) == {
        "auditor",
        "agent-operator",
    }


def test_policy_from_realm_decides_for_users(realm: RealmRoles) -> None:
    policy = policy_from_realm(
        realm,
        operations={
            "message/send": OperationRule(min_level=L.OPERATOR, permissions=["a2a:message.send"]),
            "payments/refund": OperationRule(min_level=L.OPERATOR, permissions=["payments:refund"]),
            "reports/read": OperationRule(min_level=L.SUPPORT, permissions=["reports:read"]),
        },
    )

    def user(name: str) -> Principal:
        return Principal(subject=name, roles=realm.user_roles(name))

    assert policy.decide(user("alice"), "payments/refund").allowed
    assert policy.principal_level(user("alice")) is L.MANAGER
    assert policy.decide(user("bob"), "message/send").reason == "insufficient_trust"
    assert policy.decide(user("carol"), "reports/read").allowed
    assert policy.decide(user("erin"), "message/send").reason == "insufficient_trust"
    assert policy.principal_level(user("erin")) is L.GUEST


def test_a_policy_from_the_imported_realm_equals_one_from_its_export(
    realm: RealmRoles, export: dict[str, Any]
) -> None:
    operations = {"payments/refund": OperationRule(min_level=L.OPERATOR, permissions=["payments:refund"])}
    built = [
        policy_from_realm(realm, operations=operations),
        Policy.from_realm_export(realm, operations=operations),
        Policy.from_realm_export(export, operations=operations),
        Policy.from_realm_export(REALM_FILE, operations=operations),
    ]
    for name in ("alice", "bob", "carol", "erin"):
        principal = Principal(subject=name, roles=realm.user_roles(name))
        answers = {(p.principal_level(principal), p.decide(principal, "payments/refund")) for p in built}
        assert len(answers) == 1


# --- malformed exports -------------------------------------------------------------------------


def mutate(export: dict[str, Any], change: Any) -> dict[str, Any]:
    copied = copy.deepcopy(export)
    change(copied)
    return copied


def _realm_role(export: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in export["roles"]["realm"] if r["name"] == name)


@pytest.mark.parametrize(
    ("change", "code", "fragment"),
    [
        (
            lambda e: _realm_role(e, "agent-admin")["composites"]["realm"].append("ghost"),
            "unknown_role_reference",
            "roles.realm[2].composites",
        ),
        (
            lambda e: _realm_role(e, "agent-admin")["composites"]["client"].update({"nope": ["x"]}),
            "unknown_role_reference",
            "nope/x",
        ),
        (lambda e: e["groups"][0]["realmRoles"].append("ghost"), "unknown_role_reference", "groups[0]"),
        (lambda e: e["users"][0]["groups"].append("/ghosts"), "unknown_group", "users[0]"),
        (lambda e: e["users"][1]["realmRoles"].append("ghost"), "unknown_role_reference", "users[1]"),
        (
            lambda e: _realm_role(e, "auditor")["attributes"].update({"trust_level": ["root"]}),
            "invalid_realm_export",
            "attributes.trust_level",
        ),
        (
            lambda e: _realm_role(e, "auditor")["attributes"].update({"trust_level": ["viewer", "admin"]}),
            "invalid_realm_export",
            "exactly one",
        ),
        (
            lambda e: _realm_role(e, "auditor")["attributes"].update(
                {"operation_permissions": ["no-equals"]}
            ),
            "invalid_realm_export",
            "operation_permissions",
        ),
        (
            lambda e: _realm_role(e, "auditor")["attributes"].update({"operation_permissions": ["op=boss"]}),
            "invalid_realm_export",
            "operation_permissions",
        ),
        (lambda e: e["roles"]["realm"].append({"name": "auditor"}), "invalid_realm_export", "defined twice"),
        (
            lambda e: e["roles"]["realm"].append({"name": "payments-api/refund"}),
            "invalid_realm_export",
            "ambiguous",
        ),
        (lambda e: e["roles"]["realm"].append({"name": ""}), "invalid_realm_export", "name"),
        (lambda e: e["roles"]["realm"].append("admin"), "invalid_realm_export", "expected an object"),
        (lambda e: e.update({"groups": {"name": "x"}}), "invalid_realm_export", "groups"),
        (
            lambda e: e["groups"].append(copy.deepcopy(e["groups"][1])),
            "invalid_realm_export",
            "appears twice",
        ),
        (lambda e: e.pop("realm"), "invalid_realm_export", "realm"),
        (
            lambda e: _realm_role(e, "auditor").update({"attributes": {"permissions": "audit:read"}}),
            "invalid_realm_export",
            "attributes.permissions",
        ),
    ],
)
def test_malformed_exports_are_refused_with_a_path(
    export: dict[str, Any], change: Any, code: str, fragment: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        import_realm_export(mutate(export, change))
    assert info.value.code == code
    assert fragment in info.value.message


def test_non_object_export() -> None:
    with pytest.raises(InvalidInput):
        import_realm_export([])  # type: ignore[arg-type]


def _chain(length: int) -> list[dict[str, Any]]:
    roles: list[dict[str, Any]] = [
        {"name": f"r{i}", "composite": True, "composites": {"realm": [f"r{i + 1}"]}} for i in range(length)
    ]
    roles.append(
        {
            "name": f"r{length}",
            "composites": {"realm": [f"r{length}"]},
            "attributes": {"trust_level": ["editor"]},
        }
    )
    return roles


def test_self_composite_and_long_chains_do_not_recurse() -> None:
    # Longer than Python's default recursion limit: the SCC walk must be iterative.
    realm = import_realm_export({"realm": "deep", "roles": {"realm": _chain(1500)}})
    assert len(realm.closure["r0"]) == 1501
    assert realm.closure["r1500"] == {"r1500"}
    assert realm.level_of("r0") is L.EDITOR


def test_composite_explosion_is_capped() -> None:
    # A 2,500-role chain expands to ~3.1 M closure entries, over the 2 M cap.
    with pytest.raises(InvalidInput, match="composite roles expand"):
        import_realm_export({"realm": "deep", "roles": {"realm": _chain(2500)}})


def test_two_cycles_joined_by_an_edge() -> None:
    roles = [
        {"name": "a", "composites": {"realm": ["b"]}},
        {"name": "b", "composites": {"realm": ["a", "c"]}},
        {"name": "c", "composites": {"realm": ["d"]}, "attributes": {"trust_level": ["auditor"]}},
        {"name": "d", "composites": {"realm": ["c"]}},
        {"name": "e"},
    ]
    realm = import_realm_export({"realm": "x", "roles": {"realm": roles}})
    assert realm.closure["a"] == realm.closure["b"] == {"a", "b", "c", "d"}
    assert realm.closure["c"] == realm.closure["d"] == {"c", "d"}
    assert realm.closure["e"] == {"e"}
    assert set(realm.roles) == {"a", "b", "c", "d"}
    assert realm.level_of("a") is L.AUDITOR


def test_groups_nested_too_deep_are_refused() -> None:
    group: dict[str, Any] = {"name": "g64"}
    for depth in range(64, 0, -1):
        group = {"name": f"g{depth}", "subGroups": [group]}
    with pytest.raises(InvalidInput, match="deeper"):
        import_realm_export({"realm": "x", "groups": [group]})


def test_legacy_default_roles_list_is_honoured() -> None:
    realm = import_realm_export(
        {
            "realm": "x",
            "defaultRoles": ["basic"],
            "roles": {"realm": [{"name": "basic", "attributes": {"trust_level": ["viewer"]}}]},
            "users": [{"username": "u"}],
        }
    )
    assert realm.user_roles("u") == {"basic"}


def test_load_realm_export_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        load_realm_export(tmp_path / "missing.json")
    assert info.value.code == "unreadable"
    dup = tmp_path / "dup.json"
    dup.write_text('{"realm": "a", "realm": "b"}')
    with pytest.raises(InvalidInput) as info:
        load_realm_export(dup)
    assert info.value.code == "duplicate_key"
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(InvalidInput) as info:
        load_realm_export(bad)
    assert info.value.code == "invalid_json"
    arr = tmp_path / "arr.json"
    arr.write_text(json.dumps([1]))
    with pytest.raises(InvalidInput) as info:
        load_realm_export(arr)
    assert info.value.code == "invalid_realm_export"
