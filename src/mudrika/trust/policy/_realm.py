"""Keycloak realm-export import: roles, composites, groups and users into trust-level lookups.

Why import an export instead of asking the server on every request: the policy must answer in
microseconds and keep answering when Keycloak is down (fail closed only for what actually needs the
IdP).  A realm export — or the same data read through the admin API by
:class:`mudrika.trust.keycloak.KeycloakAdapter` — is compiled once into plain dictionaries.

Shape read (the one ``kc.sh export`` and the admin console's partial export write)::

    {"realm": "agents",
     "roles": {"realm": [RoleRepresentation...], "client": {"<clientId>": [RoleRepresentation...]}},
     "groups": [{"name": ..., "realmRoles": [...], "clientRoles": {...}, "subGroups": [...]}],
     "users": [{"username": ..., "realmRoles": [...], "clientRoles": {...}, "groups": ["/a/b"]}],
     "defaultRole": {"name": "default-roles-agents"}}

A RoleRepresentation may be ``"composite": true`` with ``"composites": {"realm": [names], "client":
{"<clientId>": [names]}}`` and carries ``"attributes": {"trust_level": ["admin"], ...}``.

Naming: realm roles keep their name (``admin``); client roles are ``<clientId>/<role>``
(``billing-api/refund``), the form python-keycloak uses.  A realm role spelt like a client role is
refused as ambiguous.

Role attributes understood (every value is a list, as Keycloak stores them):
``trust_level`` (exactly one level), ``permissions``, ``operation_permissions`` (``"<op>=<level>"``
entries), and ``azure_ad_groups`` / ``okta_groups`` / ``auth0_groups`` / ``custom_groups`` (external
group names or object GUIDs whose members hold the role).

Composite roles: holding a composite holds everything it contains, transitively.  Cycles are legal in
Keycloak; here every role of a cycle reaches every other, so they share the union of their contents.
The closure is computed once with Tarjan's strongly-connected-components algorithm (iterative, so a deep
chain cannot exhaust the Python stack), each component's closure built from its successors' with C-level
set unions; the total size of all closures is capped so a hostile export cannot exhaust memory.  A role's *effective* trust level is the highest level found anywhere in its closure, and
its effective permissions are the union over the closure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mudrika.errors import InvalidInput
from mudrika.net.limits import read_capped
from mudrika.trust.levels import TrustLevel, parse
from mudrika.trust.models import KeycloakRole

__all__ = [
    "MAX_EXPORT_BYTES",
    "TRUST_ATTRIBUTE",
    "RealmRoles",
    "import_realm_export",
    "load_realm_export",
]

MAX_EXPORT_BYTES = 32 * 1024 * 1024
_MAX_ROLES = 20_000
_MAX_GROUPS = 20_000
_MAX_USERS = 200_000
_MAX_DEPTH = 64
_MAX_CLOSURE_TOTAL = 2_000_000

TRUST_ATTRIBUTE = "trust_level"
_PERMISSIONS_ATTRIBUTE = "permissions"
_OPERATIONS_ATTRIBUTE = "operation_permissions"
_EXTERNAL_ATTRIBUTES = {
    "azure_ad_groups": "azure_ad",
    "okta_groups": "okta",
    "auth0_groups": "auth0",
    "custom_groups": "custom",
}


@dataclass(frozen=True, slots=True)
class RealmRoles:
    """What a realm export says about roles, compiled for lookups.

    ``roles``: qualified role name -> ``KeycloakRole`` with its *effective* trust level, permissions and
    operation minimums; only roles whose closure reaches a ``trust_level`` attribute appear (a role with
    no level grants no level).  ``closure``: every role -> itself plus every role it implies.
    ``groups``: group path (``/parent/child``) -> effective roles (own, inherited from parent groups,
    expanded through composites).  ``users``: username -> effective roles (direct, default role,
    groups, expanded).
    """

    realm_name: str
    roles: Mapping[str, KeycloakRole]
    closure: Mapping[str, frozenset[str]]
    groups: Mapping[str, frozenset[str]]
    users: Mapping[str, frozenset[str]]

    def expand(self, roles: Iterable[str]) -> frozenset[str]:
        """Roles plus everything their composites imply; unknown names are kept as given."""
        out: set[str] = set()
        for name in roles:
            out |= self.closure.get(name, frozenset((name,)))
        return frozenset(out)

    def effective_roles(self, *, roles: Iterable[str] = (), groups: Iterable[str] = ()) -> frozenset[str]:
        """Effective roles of someone holding ``roles`` directly and belonging to ``groups`` (paths)."""
        out = set(self.expand(roles))
        for path in groups:
            out |= self.groups.get(path, frozenset())
        return frozenset(out)

    def user_roles(self, username: str) -> frozenset[str]:
        """Effective roles of a user listed in the export; raises ``InvalidInput`` for an unknown user."""
        try:
            return self.users[username]
        except KeyError:
            raise InvalidInput(
                f"user {username!r} is not in the realm export", code="unknown_user", user=username
            ) from None

    def level_of(self, role: str) -> TrustLevel | None:
        found = self.roles.get(role)
        return None if found is None else found.trust_level


def reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads``: a repeated key is refused, not silently last-wins,
    so a file cannot say one thing to a reviewer and another to the parser."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidInput(f"duplicate JSON key {key!r}", code="duplicate_key", key=key)
        out[key] = value
    return out


def load_realm_export(path: str | Path) -> dict[str, Any]:
    """Read a realm export file (size-capped, duplicate keys refused) and return the raw mapping."""
    file = Path(path)
    data = read_capped(file, max_bytes=MAX_EXPORT_BYTES, name="realm export")
    try:
        document = json.loads(data, object_pairs_hook=reject_duplicate_keys)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f"realm export {file} is not valid JSON: {exc}", code="invalid_json", path=str(file)
        ) from None
    if not isinstance(document, dict):
        raise InvalidInput(f"realm export {file} must be a JSON object", code="invalid_realm_export")
    return document


# --- small typed readers: every malformed piece names its JSON path --------------------------------


def _fail(where: str, what: str) -> InvalidInput:
    return InvalidInput(f"realm export {where}: {what}", code="invalid_realm_export", path=where)


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, "expected an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(where, "expected an array")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(where, "expected a non-empty string")
    return value


def _str_list(value: Any, where: str) -> list[str]:
    return [_str(item, f"{where}[{i}]") for i, item in enumerate(_list(value, where))]


def _client_map(value: Any, where: str) -> dict[str, list[str]]:
    if value is None:
        return {}
    return {
        _str(client, where): _str_list(names, f"{where}.{client}")
        for client, names in _obj(value, where).items()
    }


def _qualify(names_by_client: Mapping[str, list[str]]) -> list[str]:
    return [f"{client}/{name}" for client, names in names_by_client.items() for name in names]


@dataclass(slots=True)
class _RawRole:
    role_id: str
    name: str
    where: str
    composites: list[str]
    attributes: dict[str, list[str]]


def _read_role(raw: Any, qualified: str, where: str) -> _RawRole:
    role = _obj(raw, where)
    composites: list[str] = []
    if role.get("composites") is not None:
        comp = _obj(role["composites"], f"{where}.composites")
        composites += _str_list(comp.get("realm"), f"{where}.composites.realm")
        composites += _qualify(_client_map(comp.get("client"), f"{where}.composites.client"))
    attributes = {
        _str(key, f"{where}.attributes"): _str_list(values, f"{where}.attributes.{key}")
        for key, values in _obj(role.get("attributes") or {}, f"{where}.attributes").items()
    }
    role_id = role.get("id")
    return _RawRole(
        role_id=_str(role_id, f"{where}.id") if role_id is not None else qualified,
        name=qualified,
        where=where,
        composites=composites,
        attributes=attributes,
    )


def _read_roles(export: Mapping[str, Any]) -> dict[str, _RawRole]:
    roles_section = _obj(export.get("roles") or {}, "roles")
    out: dict[str, _RawRole] = {}

    def add(role: _RawRole) -> None:
        if role.name in out:
            raise _fail(role.where, f"role name {role.name!r} is defined twice (or is ambiguous)")
        out[role.name] = role

    for i, raw in enumerate(_list(roles_section.get("realm"), "roles.realm")):
        where = f"roles.realm[{i}]"
        add(_read_role(raw, _str(_obj(raw, where).get("name"), f"{where}.name"), where))
    for client, client_roles in _obj(roles_section.get("client") or {}, "roles.client").items():
        for i, raw in enumerate(_list(client_roles, f"roles.client.{client}")):
            where = f"roles.client.{client}[{i}]"
            name = _str(_obj(raw, where).get("name"), f"{where}.name")
            add(_read_role(raw, f"{client}/{name}", where))
    if len(out) > _MAX_ROLES:
        raise _fail("roles", f"more than {_MAX_ROLES} roles")
    return out


def _check_known(names: Iterable[str], known: Mapping[str, object], where: str) -> None:
    for name in names:
        if name not in known:
            raise InvalidInput(
                f"realm export {where}: unknown role {name!r}",
                code="unknown_role_reference",
                path=where,
                role=name,
            )


# --- composite closure ---------------------------------------------------------------------------


def _components(raw: Mapping[str, _RawRole]) -> tuple[list[str], list[int], list[list[int]], list[list[int]]]:
    """Strongly connected components of the composite graph (Tarjan, iterative).

    Returns the role names, each role's component, each component's members and each component's
    successor components.  Tarjan emits a component only after every component reachable from it,
    so walking components in emission order always finds the successors already finished.
    """
    names = list(raw)
    index_of = {name: i for i, name in enumerate(names)}
    edges = [[index_of[c] for c in raw[name].composites] for name in names]
    count = len(names)
    index = [-1] * count
    low = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    component_of = [-1] * count
    components: list[list[int]] = []
    counter = 0

    for root in range(count):
        if index[root] != -1:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            node, edge_pos = work.pop()
            if edge_pos == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack[node] = True
            if edge_pos < len(edges[node]):
                work.append((node, edge_pos + 1))
                child = edges[node][edge_pos]
                if index[child] == -1:
                    work.append((child, 0))
                elif on_stack[child]:
                    low[node] = min(low[node], index[child])
                continue
            # All edges of ``node`` done: propagate low-link to the parent, maybe close a component.
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members: list[int] = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component_of[member] = len(components)
                    members.append(member)
                    if member == node:
                        break
                components.append(members)

    successors = [
        sorted({component_of[c] for m in members for c in edges[m]} - {position})
        for position, members in enumerate(components)
    ]
    return names, component_of, components, successors


@dataclass(slots=True)
class _Aggregate:
    """What holding any role of one component grants: closure, best level, permissions, op minimums."""

    closure: frozenset[str]
    level: TrustLevel | None
    permissions: frozenset[str]
    operations: dict[str, TrustLevel]


def _merge_ops(into: dict[str, TrustLevel], other: Mapping[str, TrustLevel]) -> None:
    for operation, level in other.items():
        current = into.get(operation)
        if current is None or level > current:
            into[operation] = level


def _aggregate(raw: Mapping[str, _RawRole]) -> dict[str, _Aggregate]:
    """Per role, the aggregate of its composite closure; roles of one cycle share one aggregate.

    Work is proportional to the size of the closures produced, which is capped: a composite graph
    whose closures add up to more than ``_MAX_CLOSURE_TOTAL`` entries is refused rather than
    letting a hostile export consume memory quadratically.
    """
    names, component_of, components, successors = _components(raw)
    aggregates: list[_Aggregate] = []
    total = 0
    for position, members in enumerate(components):
        member_names = [names[m] for m in members]
        closure: set[str] = set(member_names)
        levels = [lvl for name in member_names if (lvl := _declared_level(raw[name])) is not None]
        permissions: set[str] = set()
        operations: dict[str, TrustLevel] = {}
        for name in member_names:
            permissions.update(raw[name].attributes.get(_PERMISSIONS_ATTRIBUTE, []))
            _merge_ops(operations, _declared_operations(raw[name]))
        for successor in successors[position]:
            done = aggregates[successor]
            closure |= done.closure
            permissions |= done.permissions
            if done.level is not None:
                levels.append(done.level)
            _merge_ops(operations, done.operations)
        total += len(closure)
        if total > _MAX_CLOSURE_TOTAL:
            raise _fail("roles", f"composite roles expand to more than {_MAX_CLOSURE_TOTAL} role entries")
        aggregates.append(
            _Aggregate(
                closure=frozenset(closure),
                level=max(levels) if levels else None,
                permissions=frozenset(permissions),
                operations=operations,
            )
        )
    return {name: aggregates[component_of[i]] for i, name in enumerate(names)}


# --- roles with effective levels -----------------------------------------------------------------


def _declared_level(role: _RawRole) -> TrustLevel | None:
    values = role.attributes.get(TRUST_ATTRIBUTE)
    if not values:
        return None
    if len(values) != 1:
        raise _fail(f"{role.where}.attributes.{TRUST_ATTRIBUTE}", "must hold exactly one trust level")
    try:
        return parse(values[0])
    except InvalidInput as exc:
        raise _fail(f"{role.where}.attributes.{TRUST_ATTRIBUTE}", exc.message) from None


def _declared_operations(role: _RawRole) -> dict[str, TrustLevel]:
    out: dict[str, TrustLevel] = {}
    where = f"{role.where}.attributes.{_OPERATIONS_ATTRIBUTE}"
    for entry in role.attributes.get(_OPERATIONS_ATTRIBUTE, []):
        operation, sep, level = entry.rpartition("=")
        if not sep or not operation:
            raise _fail(where, f"entry {entry!r} is not '<operation>=<level>'")
        try:
            parsed = parse(level)
        except InvalidInput as exc:
            raise _fail(where, exc.message) from None
        _merge_ops(out, {operation: parsed})
    return out


def _build_roles(
    realm: str, raw: Mapping[str, _RawRole], aggregates: Mapping[str, _Aggregate]
) -> dict[str, KeycloakRole]:
    out: dict[str, KeycloakRole] = {}
    for name, role in raw.items():
        aggregate = aggregates[name]
        if aggregate.level is None:
            continue
        external = {
            provider: list(role.attributes[attribute])
            for attribute, provider in _EXTERNAL_ATTRIBUTES.items()
            if role.attributes.get(attribute)
        }
        out[name] = KeycloakRole(
            role_id=role.role_id,
            role_name=name,
            permissions=sorted(aggregate.permissions),
            trust_level=aggregate.level,
            realm_name=realm,
            external_mappings=external,
            operation_permissions=dict(aggregate.operations),
        )
    return out


# --- groups and users ----------------------------------------------------------------------------


def _read_groups(
    export: Mapping[str, Any], known: Mapping[str, object], closure: Mapping[str, frozenset[str]]
) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    # (raw group, JSON path, parent path, inherited roles, depth); iterative to bound the depth.
    work: list[tuple[Any, str, str, frozenset[str], int]] = [
        (raw, f"groups[{i}]", "", frozenset(), 1)
        for i, raw in enumerate(_list(export.get("groups"), "groups"))
    ]
    while work:
        raw, where, parent, inherited, depth = work.pop()
        if depth > _MAX_DEPTH:
            raise _fail(where, f"groups nested deeper than {_MAX_DEPTH}")
        group = _obj(raw, where)
        path = f"{parent}/{_str(group.get('name'), f'{where}.name')}"
        own = _str_list(group.get("realmRoles"), f"{where}.realmRoles")
        own += _qualify(_client_map(group.get("clientRoles"), f"{where}.clientRoles"))
        _check_known(own, known, where)
        effective = set(inherited)
        for name in own:
            effective |= closure[name]
        frozen = frozenset(effective)
        if path in out:
            raise _fail(where, f"group path {path!r} appears twice")
        out[path] = frozen
        if len(out) > _MAX_GROUPS:
            raise _fail("groups", f"more than {_MAX_GROUPS} groups")
        for j, sub in enumerate(_list(group.get("subGroups"), f"{where}.subGroups")):
            work.append((sub, f"{where}.subGroups[{j}]", path, frozen, depth + 1))
    return out


def _default_roles(export: Mapping[str, Any], known: Mapping[str, object]) -> list[str]:
    names: list[str] = []
    if export.get("defaultRole") is not None:
        default = _obj(export["defaultRole"], "defaultRole")
        names.append(_str(default.get("name"), "defaultRole.name"))
    names += _str_list(export.get("defaultRoles"), "defaultRoles")
    # Keycloak creates the default composite role itself; an export may omit its definition.
    return [name for name in names if name in known]


def _read_users(
    export: Mapping[str, Any],
    known: Mapping[str, object],
    closure: Mapping[str, frozenset[str]],
    groups: Mapping[str, frozenset[str]],
) -> dict[str, frozenset[str]]:
    defaults = _default_roles(export, known)
    users = _list(export.get("users"), "users")
    if len(users) > _MAX_USERS:
        raise _fail("users", f"more than {_MAX_USERS} users")
    out: dict[str, frozenset[str]] = {}
    for i, raw in enumerate(users):
        where = f"users[{i}]"
        user = _obj(raw, where)
        username = _str(user.get("username"), f"{where}.username")
        direct = _str_list(user.get("realmRoles"), f"{where}.realmRoles")
        direct += _qualify(_client_map(user.get("clientRoles"), f"{where}.clientRoles"))
        _check_known(direct, known, where)
        effective: set[str] = set()
        for name in [*defaults, *direct]:
            effective |= closure[name]
        for path in _str_list(user.get("groups"), f"{where}.groups"):
            if path not in groups:
                raise InvalidInput(
                    f"realm export {where}: unknown group {path!r}", code="unknown_group", path=where
                )
            effective |= groups[path]
        out[username] = frozenset(effective)
    return out


def import_realm_export(export: Mapping[str, Any]) -> RealmRoles:
    """Compile a parsed realm export into :class:`RealmRoles` (raises ``InvalidInput`` with a JSON path)."""
    export = _obj(export, "$")
    realm = _str(export.get("realm"), "realm")
    raw = _read_roles(export)
    for role in raw.values():
        _check_known(role.composites, raw, f"{role.where}.composites")
    aggregates = _aggregate(raw)
    closure = {name: aggregate.closure for name, aggregate in aggregates.items()}
    roles = _build_roles(realm, raw, aggregates)
    groups = _read_groups(export, raw, closure)
    users = _read_users(export, raw, closure, groups)
    return RealmRoles(realm_name=realm, roles=roles, closure=closure, groups=groups, users=users)
