"""Tenants of a token caller, read from one configurable claim.

Why configurable: identity providers put tenancy in different places.  Keycloak 26 organisations
put the caller's organisations in ``organization`` — a list of aliases, or an object keyed by alias
when organisation attributes are mapped; a realm that models tenants as groups puts them in
``groups`` as paths such as ``/tenants/acme``.  The policy file names the claim (``tenant_claim``,
a dotted path for nested claims) and, for group paths, the prefix that marks a tenant
(``tenant_prefix``: ``/tenants/`` turns ``/tenants/acme`` into ``acme`` and ignores other groups).

Anything that is not a string, a list of strings or an object is ignored: a malformed claim grants
no tenant, which denies every tenant-scoped call (fail closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["MAX_TENANT_LENGTH", "tenants_from_claims"]

MAX_TENANT_LENGTH: Final = 128
_MAX_TENANTS: Final = 256


def _lookup(claims: Mapping[str, Any], path: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def tenants_from_claims(claims: Mapping[str, Any], *, claim: str, prefix: str = "") -> frozenset[str]:
    """The tenants named by ``claims[claim]`` (dotted path), keeping only values under ``prefix``."""
    value = _lookup(claims, claim)
    if isinstance(value, str):
        names: list[Any] = [value]
    elif isinstance(value, list):
        names = value[:_MAX_TENANTS]
    elif isinstance(value, Mapping):
        names = list(value)[:_MAX_TENANTS]
    else:
        return frozenset()
    tenants: set[str] = set()
    for name in names:
        if not isinstance(name, str) or not name.startswith(prefix):
            continue
        tenant = name[len(prefix) :]
        if 0 < len(tenant) <= MAX_TENANT_LENGTH and "/" not in tenant:
            tenants.add(tenant)
    return frozenset(tenants)
