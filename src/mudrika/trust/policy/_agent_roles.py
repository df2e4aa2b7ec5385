"""Roles and tenants for open-web agents (Web Bot Auth, Visa TAP): the policy file's ``agent_roles``.

Why a sibling of ``did_roles`` rather than more patterns in it: an open-web agent is not a DID.  A
verified Web Bot Auth request proves that a key the agent's directory publishes signed it; a TAP
request that the registry's key did.  Neither says what the agent may do, so — deny by default — an
agent with no entry has no role.  Entries are ``"<profile>:<agent>"``:

* ``web-bot-auth:https://crawler.example`` — the agent whose directory origin this is (the
  ``Signature-Agent`` URL the key was resolved from; keys may rotate under it);
* ``web-bot-auth:https://crawler.example/jwks.json`` — a ``jwks_uri`` or ``cimd`` agent, by URL;
* ``agent-payer-auth:https://registry.example/.well-known/jwks#primary`` — a TAP agent: the registry's
  JWKS URL and the key id in it;
* ``<profile>:urn:ietf:params:oauth:jwk-thumbprint:sha-256:<thumbprint>`` — one key, whatever URL it
  came from (RFC 9278);
* ``<profile>:*`` — every agent that verified under that profile (e.g. ``viewer`` for any signed
  crawler).

An exact agent entry wins over a key entry, which wins over ``*``.  Checked when the policy loads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from mudrika.errors import InvalidInput
from mudrika.trust.policy._did_roles import DidGrant

__all__ = ["AGENT_PROFILES", "AgentRoleTable"]

AGENT_PROFILES: Final = frozenset({"web-bot-auth", "agent-browser-auth", "agent-payer-auth"})
_MAX_ENTRIES: Final = 10_000
_THUMBPRINT_URN: Final = re.compile(r"urn:ietf:params:oauth:jwk-thumbprint:sha-256:[A-Za-z0-9_-]{43}")
_URL: Final = re.compile(r"https://[a-z0-9.\-\[\]:]+(?:/[\x21-\x7e]*)?")


class AgentRoleTable:
    """The compiled ``agent_roles`` mapping; :meth:`grant_for` answers per verified agent."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, tuple[Iterable[str], Iterable[str]]]) -> None:
        if len(entries) > _MAX_ENTRIES:
            raise InvalidInput("too many agent_roles entries", code="invalid_policy", limit=_MAX_ENTRIES)
        self._entries: dict[tuple[str, str], DidGrant] = {}
        for name, (roles, tenants) in entries.items():
            profile, sep, agent = name.partition(":")
            if not sep or profile not in AGENT_PROFILES:
                raise InvalidInput(
                    f"agent_roles key {name!r} must start with one of {sorted(AGENT_PROFILES)} and ':'",
                    code="invalid_policy",
                    pattern=name[:200],
                )
            if agent != "*" and _THUMBPRINT_URN.fullmatch(agent) is None and _URL.fullmatch(agent) is None:
                raise InvalidInput(
                    f"agent_roles key {name!r}: the agent is an https URL (lower-case origin), a JWK "
                    "thumbprint URN or '*'",
                    code="invalid_policy",
                    pattern=name[:200],
                )
            self._entries[(profile, agent)] = DidGrant(roles=frozenset(roles), tenants=frozenset(tenants))

    def __len__(self) -> int:
        return len(self._entries)

    def grant_for(self, profile: str, agent: str, key_urn: str | None = None) -> DidGrant | None:
        """The roles and tenants for a verified agent, or None (no entry: no role, denied)."""
        if not self._entries:
            return None
        grant = self._entries.get((profile, agent))
        if grant is None and key_urn is not None:
            grant = self._entries.get((profile, key_urn))
        if grant is None:
            grant = self._entries.get((profile, "*"))
        return grant
