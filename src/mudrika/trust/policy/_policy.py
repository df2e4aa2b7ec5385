"""Operation policy: who may call which A2A operation, decided in well under a microsecond.

Why compile: the middleware asks one question per request — may this principal call this operation?
Everything that can be worked out in advance is worked out when the policy is loaded:

* every known operation's minimum level, as an integer rank, taking the STRICTER (higher) of the
  agent card's ``allowedOperations``, every role's ``operationPermissions`` and the policy file;
* the permissions each operation requires, as a frozenset;
* role name -> rank and role name -> granted permissions;
* external IdP group -> roles (Azure AD names and object GUIDs — GUIDs compared case-insensitively —
  Okta, Auth0, custom; Keycloak group paths when built from a realm export);
* per operation, the ``Decision`` for a caller of each rank (and for one with no mapped role), so a
  decision that allows or refuses on level alone is read, never built.

At request time ``decide`` works out the principal's *grant* (its rank and effective permissions: one
dictionary lookup per token role, kept on the principal for its next decisions) and reads the
operation's compiled decision at that rank; only a ``missing_permission`` or ``unknown_operation``
deny is built per request.  Nothing is interpreted per request and a deny never raises.

Deny by default: an operation the policy does not name is refused (``unknown_operation``); a principal
none of whose roles maps to a level is refused (``no_role``) unless the operation's minimum is
``guest`` and the policy explicitly allows anonymous callers.

Tenants (A2A 1.0 ``tenant``): a call that names a tenant is allowed only for a principal that belongs
to it (``wrong_tenant`` otherwise), so a caller entitled in one tenant is not entitled in another;
``require_tenant: true`` also refuses calls that name none.  DID callers get roles and tenants from
``did_roles`` (see ``_did_roles``); token callers get tenants from ``tenant_claim``.
The seed's cost gate (:meth:`Policy.decide_execution`) checks an ``ExecutionRequest`` against the
agent's ``AgentExecutionCost`` with the level *this policy* grants, never the level the request claims.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Final, Literal, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from mudrika.errors import InvalidInput
from mudrika.net.limits import read_capped
from mudrika.trust.levels import TrustLevel
from mudrika.trust.models import (
    AgentExecutionCost,
    AgentTrust,
    ConfiguredName,
    ExecutionRequest,
    IdentityProvider,
    KeycloakRole,
    Level,
)
from mudrika.trust.policy._agent_roles import AgentRoleTable
from mudrika.trust.policy._did_roles import DidGrant, DidRoleTable
from mudrika.trust.policy._realm import (
    RealmRoles,
    import_realm_export,
    load_realm_export,
    reject_duplicate_keys,
)
from mudrika.trust.policy._tenants import MAX_TENANT_LENGTH, tenants_from_claims

# The realm importer is imported from its private module (trust.keycloak re-exports it) so loading a
# policy does not pull in python-keycloak and requests (about half a second) unless adapters are used.

ALLOWED: Final = "allowed"
UNKNOWN_OPERATION: Final = "unknown_operation"
NO_ROLE: Final = "no_role"
INSUFFICIENT_TRUST: Final = "insufficient_trust"
MISSING_PERMISSION: Final = "missing_permission"
WRONG_TENANT: Final = "wrong_tenant"
EXECUTOR_MISMATCH: Final = "executor_mismatch"
WRONG_AGENT: Final = "wrong_agent"
PAYMENT_REQUIRED: Final = "payment_required"
#: The operation name :meth:`Policy.decide_execution` decisions carry.
EXECUTE_OPERATION: Final = "agent/execute"

Reason = Literal[
    "allowed",
    "unknown_operation",
    "no_role",
    "insufficient_trust",
    "missing_permission",
    "wrong_tenant",
    "executor_mismatch",
    "wrong_agent",
    "payment_required",
]

MAX_POLICY_BYTES = 1024 * 1024
# Bound on the role/group-set memo of callers with IdP groups (their group names are normalised once
# per distinct set, not per request); clearing when full keeps memory bounded.
_MEMO_LIMIT = 65_536
_EMPTY: frozenset[str] = frozenset()
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_policy_ids = itertools.count(1)


# --- decisions and principals --------------------------------------------------------------------


class Decision(NamedTuple):
    """The outcome of one policy question.  ``reason`` is machine-readable; see the module constants.

    Immutable (a named tuple: building one costs less than half a frozen dataclass, which matters on
    the deny path that cannot be cached).  Truth-testing a decision raises ``TypeError``: a tuple is
    always truthy, so ``if policy.decide(...)`` would allow everything; read ``.allowed``.
    """

    allowed: bool
    operation: str
    required_level: TrustLevel | None
    caller_level: TrustLevel | None
    missing_permissions: frozenset[str]
    reason: Reason

    def __bool__(self) -> bool:
        raise TypeError("a Decision has no truth value; test decision.allowed")

    def to_dict(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "operation": self.operation,
            "required_level": None if self.required_level is None else self.required_level.value,
            "caller_level": None if self.caller_level is None else self.caller_level.value,
            "missing_permissions": sorted(self.missing_permissions),
            "reason": self.reason,
        }


#: A principal's standing under one policy: its rank (-1 when no role maps to a level) and its
#: effective permissions.  A plain pair, not an object: a server brings a new principal with every
#: request, and what the first decision for it allocates (and leaves for the garbage collector to
#: trace while the principal lives) is part of every request's cost.
_Grant = tuple[int, frozenset[str]]


#: One operation, compiled: ``(decisions, guards)``.  ``decisions[r]`` is the decision for a caller
#: of rank ``r`` whose permissions suffice (allowed, or ``insufficient_trust`` below the minimum);
#: ``decisions[-1]`` -- a caller with no mapped role -- is ``no_role``, or allowed for a ``guest``
#: operation of a policy that admits anonymous callers.  ``guards[r]`` is the permission set an
#: allowing ``decisions[r]`` still requires (None: nothing to check).  Plain tuples, read by index:
#: attribute reads on a named tuple take the interpreter's slow path, and this is read per request.
_Rule = tuple[tuple[Decision, ...], tuple[frozenset[str] | None, ...]]


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller as the policy sees it.

    ``roles`` are Keycloak role names (client roles as ``<clientId>/<role>``); ``groups`` are the
    groups the identity provider reported (Azure AD names or object GUIDs, Okta groups, Keycloak group
    paths); ``permissions`` are granted directly (e.g. token scopes); ``tenants`` are the A2A tenants
    the caller belongs to (from the token's tenant claim or, for DID callers, the policy's
    ``did_roles``).  ``token_claims`` may hold a short, secret-free summary for logs (never the token
    itself).

    The private ``_grants`` memo holds this principal's rank and permissions per policy so a principal
    reused across requests is evaluated once; it is excluded from equality, hashing and ``repr``.
    """

    subject: str
    roles: frozenset[str] = _EMPTY
    groups: frozenset[str] = _EMPTY
    permissions: frozenset[str] = _EMPTY
    did: str | None = None
    identity_provider: IdentityProvider = "keycloak"
    tenants: frozenset[str] = _EMPTY
    token_claims: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    _grants: dict[int, _Grant] = field(default_factory=dict, init=False, compare=False, repr=False)

    @classmethod
    def anonymous(cls) -> Principal:
        """A caller that presented no credentials: no roles, no groups, no permissions."""
        return cls(subject="")


# --- the policy file -----------------------------------------------------------------------------


class OperationRule(BaseModel):
    """Per-operation settings in a policy file: a minimum level and/or required permissions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_level: Level | None = None
    permissions: list[ConfiguredName] = Field(default_factory=list, max_length=256)


TenantName = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TENANT_LENGTH, pattern=r"^[^/]+$")]


class DidRoleRule(BaseModel):
    """One ``did_roles`` entry: the roles a DID (or did:web pattern) holds, and its tenants."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # At least one role: an entry that grants none is a mistake (its DID would still be denied).
    roles: list[ConfiguredName] = Field(min_length=1, max_length=256)
    tenants: list[TenantName] = Field(default_factory=list, max_length=256)


class PolicyFile(BaseModel):
    """The policy file format (YAML or JSON); documented in docs/trust.md and docs/a2a.md."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1]
    allow_anonymous: StrictBool = False
    realm_export: str | None = None
    agent_trust: AgentTrust | None = None
    roles: list[KeycloakRole] = Field(default_factory=list, max_length=10_000)
    operations: dict[str, OperationRule] = Field(default_factory=dict, max_length=10_000)
    did_roles: dict[str, DidRoleRule] = Field(default_factory=dict, max_length=10_000)
    agent_roles: dict[str, DidRoleRule] = Field(default_factory=dict, max_length=10_000)
    tenant_claim: Annotated[StrictStr, Field(min_length=1, max_length=256)] | None = None
    tenant_prefix: Annotated[StrictStr, Field(max_length=256)] = ""
    require_tenant: StrictBool = False


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML safe loader that refuses duplicate keys (YAML silently keeps the last one otherwise)."""


def _construct_unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise InvalidInput(
                f"duplicate key {key!r} at line {key_node.start_mark.line + 1}", code="duplicate_key", key=key
            )
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _format_errors(error: ValidationError) -> list[str]:
    return [f"{'.'.join(str(part) for part in item['loc']) or '$'}: {item['msg']}" for item in error.errors()]


def _read_policy_document(file: Path) -> Any:
    data = read_capped(file, max_bytes=MAX_POLICY_BYTES, name="policy file")
    try:
        if file.suffix.lower() == ".json":
            return json.loads(data, object_pairs_hook=reject_duplicate_keys)
        return yaml.load(data, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except InvalidInput as exc:
        raise InvalidInput(f"policy file {file}: {exc.message}", code=exc.code, path=str(file)) from None
    except (ValueError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InvalidInput(
            f"policy file {file} is not valid {'JSON' if file.suffix.lower() == '.json' else 'YAML'}: {exc}",
            code="invalid_policy",
            path=str(file),
        ) from None


# --- the compiled policy -------------------------------------------------------------------------


def _group_key(provider: str, group: str) -> str:
    # Azure AD object ids are GUIDs, whose hex digits are case-insensitive; names stay exact.
    if provider == "azure_ad" and _GUID.fullmatch(group):
        return group.lower()
    return group


class Policy:
    """A compiled operation policy.  Build with the constructor, :meth:`from_file` or
    :meth:`from_realm_export`; ask with :meth:`decide`.

    ``roles`` and ``operations`` are required: there is no implicit "allow everything" policy.
    """

    __slots__ = (
        "_agent_roles",
        "_anon_ok",
        "_did_roles",
        "_groups",
        "_id",
        "_memo",
        "_op_level",
        "_op_perms",
        "_op_rank",
        "_require_tenant",
        "_role_info",
        "_role_perms",
        "_role_rank",
        "_rules",
        "_tenant_claim",
        "_tenant_prefix",
        "_verify_trust",
    )

    def __init__(
        self,
        *,
        roles: Iterable[KeycloakRole],
        operations: Mapping[str, OperationRule],
        agent_trust: AgentTrust | None = None,
        allow_anonymous: bool = False,
        keycloak_groups: Mapping[str, Iterable[str]] | None = None,
        did_roles: Mapping[str, DidRoleRule] | None = None,
        agent_roles: Mapping[str, DidRoleRule] | None = None,
        tenant_claim: str | None = None,
        tenant_prefix: str = "",
        require_tenant: bool = False,
    ) -> None:
        all_roles = list(roles)
        if agent_trust is not None:
            all_roles += agent_trust.inherited_roles
        self._id = next(_policy_ids)
        self._anon_ok = bool(allow_anonymous)
        self._verify_trust = agent_trust.trust_verification_required if agent_trust is not None else True

        # 1. Roles: name -> level and permissions; the same name twice must agree.
        by_name: dict[str, KeycloakRole] = {}
        for role in all_roles:
            seen = by_name.get(role.role_name)
            if seen is not None and seen != role:
                raise InvalidInput(
                    f"role {role.role_name!r} is defined twice with different contents",
                    code="conflicting_role",
                    role=role.role_name,
                )
            by_name[role.role_name] = role
        self._role_rank: dict[str, int] = {name: r.trust_level.rank for name, r in by_name.items()}
        self._role_perms: dict[str, frozenset[str]] = {
            name: frozenset(r.permissions) for name, r in by_name.items() if r.permissions
        }
        # Both at once for the fresh-principal path: one lookup per role the caller holds.
        self._role_info: dict[str, tuple[int, frozenset[str]]] = {
            name: (rank, self._role_perms.get(name, _EMPTY)) for name, rank in self._role_rank.items()
        }

        # 2. Operation minimums: the stricter requirement wins, whichever source states it.
        minimum: dict[str, TrustLevel] = {}

        def require(operation: str, level: TrustLevel) -> None:
            current = minimum.get(operation)
            if current is None or level > current:
                minimum[operation] = level

        for operation, rule in operations.items():
            if rule.min_level is not None:
                require(operation, rule.min_level)
        if agent_trust is not None:
            for operation, level in agent_trust.allowed_operations.items():
                require(operation, level)
        for role in by_name.values():
            for operation, level in role.operation_permissions.items():
                require(operation, level)
        unlevelled = sorted(op for op in operations if op not in minimum)
        if unlevelled:
            raise InvalidInput(
                f"operation(s) {unlevelled} have no minimum trust level from any source",
                code="operation_without_level",
                operations=unlevelled,
            )
        self._op_level: dict[str, TrustLevel] = minimum
        self._op_rank: dict[str, int] = {op: level.rank for op, level in minimum.items()}
        self._op_perms: dict[str, frozenset[str]] = {
            op: frozenset(rule.permissions) for op, rule in operations.items() if rule.permissions
        }
        self._rules: dict[str, _Rule] = {op: self._compile(op, level) for op, level in minimum.items()}

        # 3. External groups -> roles, per identity provider.
        groups: dict[str, dict[str, set[str]]] = {}
        for role in by_name.values():
            for provider, names in role.external_mappings.items():
                table = groups.setdefault(provider, {})
                for name in names:
                    table.setdefault(_group_key(provider, name), set()).add(role.role_name)
        for path, role_names in (keycloak_groups or {}).items():
            groups.setdefault("keycloak", {}).setdefault(path, set()).update(role_names)
        self._groups: dict[str, dict[str, frozenset[str]]] = {
            provider: {key: frozenset(value) for key, value in table.items()}
            for provider, table in groups.items()
        }
        self._memo: dict[tuple[frozenset[str], frozenset[str], str, frozenset[str]], _Grant] = {}

        # 4. DID callers and tenants.
        self._did_roles = DidRoleTable(
            {pattern: (rule.roles, rule.tenants) for pattern, rule in (did_roles or {}).items()}
        )
        self._agent_roles = AgentRoleTable(
            {name: (rule.roles, rule.tenants) for name, rule in (agent_roles or {}).items()}
        )
        self._tenant_claim = tenant_claim
        self._tenant_prefix = tenant_prefix
        self._require_tenant = bool(require_tenant)

    # -- loading ----------------------------------------------------------------------------------

    @classmethod
    def from_document(cls, document: Mapping[str, Any], *, base_dir: Path | None = None) -> Policy:
        """Build from an already-parsed policy document (see :class:`PolicyFile`)."""
        try:
            spec = PolicyFile.model_validate(document)
        except ValidationError as exc:
            problems = _format_errors(exc)
            raise InvalidInput(
                "invalid policy: " + "; ".join(problems), code="invalid_policy", errors=problems
            ) from None
        roles = list(spec.roles)
        keycloak_groups: dict[str, frozenset[str]] = {}
        if spec.realm_export is not None:
            realm_path = Path(spec.realm_export)
            if not realm_path.is_absolute() and base_dir is not None:
                realm_path = base_dir / realm_path
            realm = import_realm_export(load_realm_export(realm_path))
            roles += realm.roles.values()
            keycloak_groups = dict(realm.groups)
        return cls(
            roles=roles,
            operations=spec.operations,
            agent_trust=spec.agent_trust,
            allow_anonymous=spec.allow_anonymous,
            keycloak_groups=keycloak_groups,
            did_roles=spec.did_roles,
            agent_roles=spec.agent_roles,
            tenant_claim=spec.tenant_claim,
            tenant_prefix=spec.tenant_prefix,
            require_tenant=spec.require_tenant,
        )

    @classmethod
    def from_file(cls, path: str | Path) -> Policy:
        """Load a YAML (``.yaml``/``.yml``/other) or JSON (``.json``) policy file.

        Errors are ``InvalidInput`` naming the file and the offending path inside it
        (``operations.message/send.min_level: …``).  A relative ``realm_export`` is resolved against
        the policy file's directory.
        """
        file = Path(path)
        document = _read_policy_document(file)
        if not isinstance(document, dict):
            raise InvalidInput(
                f"policy file {file} must hold a mapping at the top level", code="invalid_policy"
            )
        try:
            return cls.from_document(document, base_dir=file.parent)
        except InvalidInput as exc:
            fields = {**exc.fields, "path": str(file)}
            raise InvalidInput(f"{file}: {exc.message}", code=exc.code, **fields) from None

    @classmethod
    def from_realm_export(
        cls,
        export: RealmRoles | Mapping[str, Any] | str | Path,
        *,
        operations: Mapping[str, OperationRule],
        agent_trust: AgentTrust | None = None,
        allow_anonymous: bool = False,
    ) -> Policy:
        """Build from a Keycloak realm export (a path, the parsed JSON, or a realm already imported
        with :func:`import_realm_export`): roles carry the levels of their ``trust_level`` attributes
        (through composites) and Keycloak group paths map to roles."""
        if isinstance(export, RealmRoles):
            realm = export
        else:
            realm = import_realm_export(
                load_realm_export(export) if isinstance(export, str | Path) else export
            )
        return cls(
            roles=realm.roles.values(),
            operations=operations,
            agent_trust=agent_trust,
            allow_anonymous=allow_anonymous,
            keycloak_groups=realm.groups,
        )

    # -- introspection ----------------------------------------------------------------------------

    @property
    def allow_anonymous(self) -> bool:
        """Whether callers with no mapped role may call ``guest``-level operations (default False)."""
        return self._anon_ok

    @property
    def trust_verification_required(self) -> bool:
        """The agent card's ``trustVerificationRequired`` (True when the policy has no card)."""
        return self._verify_trust

    @property
    def operations(self) -> frozenset[str]:
        return frozenset(self._op_level)

    def minimum_level(self, operation: str) -> TrustLevel | None:
        """The compiled minimum for ``operation`` (None: unknown, hence denied)."""
        return self._op_level.get(operation)

    def required_permissions(self, operation: str) -> frozenset[str]:
        return self._op_perms.get(operation, _EMPTY)

    def role_level(self, role: str) -> TrustLevel | None:
        rank = self._role_rank.get(role)
        return None if rank is None else _LEVELS[rank]

    def principal_level(self, principal: Principal) -> TrustLevel | None:
        """The highest level among the principal's roles (direct or via IdP groups); None if none maps."""
        return _LEVEL_OF_RANK[self._grant(principal)[0]]

    # -- deciding ---------------------------------------------------------------------------------

    def _grant(self, principal: Principal) -> _Grant:
        grant = principal._grants.get(self._id)
        return grant if grant is not None else self._standing(principal)

    def _standing(self, principal: Principal) -> _Grant:
        """Work out a principal's grant (it has none under this policy yet) and keep it on the principal.

        Why no cache in front of the common case: a server builds a new principal from every token,
        so what counts is the cost for a principal seen for the first time.  Token roles only (no
        IdP groups) take one dictionary lookup per role, and the union of permissions is formed only
        when a second role adds some, so a one-role caller's grant shares its role's permission set.
        Callers with IdP groups go through the memo keyed by role and group sets, which saves the
        group-name normalisation (a GUID pattern per group).
        """
        if principal.groups:
            grant = self._grant_with_groups(principal)
        else:
            # A one-role caller's grant is its role's entry itself (nothing allocated); a second role
            # or direct permissions make a new pair.
            permissions = principal.permissions
            if not permissions:
                grant = _NO_GRANT
            else:
                grant = (-1, permissions if type(permissions) is frozenset else frozenset(permissions))
            info = self._role_info
            for role in principal.roles:
                entry = info.get(role)
                if entry is None:
                    continue
                if grant is _NO_GRANT:
                    grant = entry
                    continue
                held, granted = grant[1], entry[1]
                grant = (
                    entry[0] if entry[0] > grant[0] else grant[0],
                    held | granted if held and granted else held or granted,
                )
        principal._grants[self._id] = grant
        return grant

    def _grant_with_groups(self, principal: Principal) -> _Grant:
        key = (principal.roles, principal.groups, principal.identity_provider, principal.permissions)
        grant = self._memo.get(key)
        if grant is None:
            roles = set(principal.roles)
            table = self._groups.get(principal.identity_provider)
            if table:
                provider = principal.identity_provider
                for group in principal.groups:
                    mapped = table.get(_group_key(provider, group))
                    if mapped:
                        roles |= mapped
            rank = -1
            permissions = set(principal.permissions)
            for role in roles:
                role_rank = self._role_rank.get(role)
                if role_rank is not None and role_rank > rank:
                    rank = role_rank
                granted = self._role_perms.get(role)
                if granted:
                    permissions |= granted
            grant = (rank, frozenset(permissions))
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[key] = grant
        return grant

    def _compile(self, operation: str, level: TrustLevel) -> _Rule:
        """The :data:`_Rule` of a known operation (built once, when the policy is loaded)."""
        required = level.rank
        needed = self._op_perms.get(operation, _EMPTY)
        decisions = [
            Decision(True, operation, level, caller, _EMPTY, ALLOWED)
            if rank >= required
            else Decision(False, operation, level, caller, _EMPTY, INSUFFICIENT_TRUST)
            for rank, caller in enumerate(_LEVELS)
        ]
        # No mapped role: only a guest-level operation of a policy that allows anonymous callers.
        if required == 0 and self._anon_ok:
            decisions.append(Decision(True, operation, level, None, _EMPTY, ALLOWED))
        else:
            decisions.append(Decision(False, operation, level, None, _EMPTY, NO_ROLE))
        guards = tuple(needed if decision.allowed and needed else None for decision in decisions)
        return tuple(decisions), guards

    # -- DID callers and tenants ----------------------------------------------------------------

    @property
    def require_tenant(self) -> bool:
        """Whether a call that names no tenant is refused (``require_tenant`` in the policy file)."""
        return self._require_tenant

    @property
    def tenant_claim(self) -> str | None:
        """The token claim (dotted path) that names a token caller's tenants, if configured."""
        return self._tenant_claim

    def did_grant(self, did: str) -> DidGrant | None:
        """The roles and tenants ``did_roles`` gives a DID caller, or None (no entry: no role)."""
        return self._did_roles.grant_for(did)

    def agent_grant(self, profile: str, agent: str, key_urn: str | None = None) -> DidGrant | None:
        """The roles and tenants ``agent_roles`` gives an open-web agent (Web Bot Auth, TAP), or None."""
        return self._agent_roles.grant_for(profile, agent, key_urn)

    def principal_for_did(self, did: str) -> Principal:
        """The principal for a caller authenticated by ``did`` (subject and DID both the DID).

        A DID without a ``did_roles`` entry gets no role and no tenant, so it is denied by default.
        """
        grant = self._did_roles.grant_for(did)
        if grant is None:
            return Principal(subject=did, did=did)
        return Principal(subject=did, did=did, roles=grant.roles, tenants=grant.tenants)

    def tenants_for_claims(self, claims: Mapping[str, Any]) -> frozenset[str]:
        """A token caller's tenants from the configured ``tenant_claim`` (empty when not configured)."""
        if self._tenant_claim is None:
            return _EMPTY
        return tenants_from_claims(claims, claim=self._tenant_claim, prefix=self._tenant_prefix)

    def _tenant_refused(self, principal: Principal, tenant: str | None) -> bool:
        # A named tenant must be one of the principal's; no tenant is refused only when required.
        if tenant:
            return tenant not in principal.tenants
        return self._require_tenant

    # -- deciding ---------------------------------------------------------------------------------

    def decide(self, principal: Principal, operation: str, *, tenant: str | None = None) -> Decision:
        """May ``principal`` call ``operation`` (in ``tenant``, when the call names one)?

        Never raises for a deny; see ``Decision.reason``.  ``tenant`` is the A2A tenant the call
        names (JSON-RPC ``params.tenant`` or the REST ``/{tenant}`` prefix); ``""`` and None mean none.

        The principal's grant is worked out on its first decision (:meth:`_standing`) and kept on it;
        the decision is then the operation's compiled :class:`_Rule` read at the caller's rank, with
        the permission check only for an allowing entry: nothing is built unless it is a
        ``missing_permission`` or ``unknown_operation`` deny.
        """
        if (tenant or self._require_tenant) and self._tenant_refused(principal, tenant):
            level = _LEVEL_OF_RANK[self._grant(principal)[0]]
            return Decision(False, operation, self._op_level.get(operation), level, _EMPTY, WRONG_TENANT)
        grants = principal._grants
        grant = grants.get(self._id)
        if grant is None:
            if principal.groups or principal.permissions or len(principal.roles) != 1:
                grant = self._standing(principal)
            else:
                # The commonest caller, inline: one token role and nothing else.  Its grant is its
                # role's entry (no mapped role: the shared no-role grant); see _standing.
                (role,) = principal.roles
                grant = self._role_info.get(role, _NO_GRANT)
                grants[self._id] = grant
        rank, permissions = grant
        rule = self._rules.get(operation)
        if rule is None:
            # Deny by default: an operation the policy does not name.
            return Decision(False, operation, None, _LEVEL_OF_RANK[rank], _EMPTY, UNKNOWN_OPERATION)
        decisions, guards = rule
        needed = guards[rank]
        if needed is not None and not needed <= permissions:
            decision = decisions[rank]
            return Decision(
                False,
                operation,
                decision.required_level,
                decision.caller_level,
                needed - permissions,
                MISSING_PERMISSION,
            )
        return decisions[rank]

    def decide_execution(
        self,
        principal: Principal,
        *,
        request: ExecutionRequest,
        cost: AgentExecutionCost,
        tenant: str | None = None,
    ) -> Decision:
        """The seed's cost gate: may ``principal`` execute the agent ``cost`` describes?

        In order: (1) the tenant, as :meth:`decide`; (2) the request is for this agent
        (``wrong_agent``); (3) the executor is the authenticated caller (``executor_mismatch``);
        (4) the caller's level *under this policy* reaches ``cost.minimum_trust_level`` and the level
        the request claims is not above it (``no_role`` / ``insufficient_trust``); (5) the credits
        offered cover ``credits_per_request`` (``payment_required``).
        """
        required = cost.minimum_trust_level
        # 1. Tenant.
        if self._tenant_refused(principal, tenant):
            level = _LEVEL_OF_RANK[self._grant(principal)[0]]
            return Decision(False, EXECUTE_OPERATION, required, level, _EMPTY, WRONG_TENANT)
        rank = self._grant(principal)[0]
        level = _LEVEL_OF_RANK[rank]
        # 2. The request names the agent this cost belongs to.
        if request.agent_id != cost.agent_id:
            return Decision(False, EXECUTE_OPERATION, required, level, _EMPTY, WRONG_AGENT)
        # 3. The executor is whoever authenticated, never whoever the request says.
        if principal.did is None or principal.did != request.executor_did:
            return Decision(False, EXECUTE_OPERATION, required, level, _EMPTY, EXECUTOR_MISMATCH)
        # 4. Trust: the policy's level for the caller, not the level the request claims.
        if rank < 0:
            return Decision(False, EXECUTE_OPERATION, required, None, _EMPTY, NO_ROLE)
        if rank < required.rank or request.trust_level.rank > rank:
            return Decision(False, EXECUTE_OPERATION, required, level, _EMPTY, INSUFFICIENT_TRUST)
        # 5. Credits offered against the price.
        if request.estimated_credits < cost.credits_per_request:
            return Decision(False, EXECUTE_OPERATION, required, level, _EMPTY, PAYMENT_REQUIRED)
        return Decision(True, EXECUTE_OPERATION, required, level, _EMPTY, ALLOWED)


_LEVELS: tuple[TrustLevel, ...] = tuple(TrustLevel)
#: Rank -> level, with rank -1 (no mapped role) -> None as the last entry.
_LEVEL_OF_RANK: tuple[TrustLevel | None, ...] = (*_LEVELS, None)
#: The grant of a caller with no mapped role and no permissions of its own (shared, never copied).
_NO_GRANT: Final[_Grant] = (-1, _EMPTY)
