"""The policy file's ``agent_roles``: open-web agents mapped to roles, checked at load, deny by default."""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.errors import InvalidInput
from mudrika.trust.policy import Policy

URN = "urn:ietf:params:oauth:jwk-thumbprint:sha-256:" + "A" * 43


def _policy(agent_roles: dict[str, Any]) -> Policy:
    return Policy.from_document(
        {
            "version": 1,
            "roles": [
                {"role_id": "1", "role_name": "crawler", "realm_name": "r", "trust_level": "viewer"},
                {"role_id": "2", "role_name": "partner", "realm_name": "r", "trust_level": "operator"},
                {"role_id": "3", "role_name": "pinned", "realm_name": "r", "trust_level": "analyst"},
            ],
            "operations": {"message/send": {"min_level": "operator"}},
            "agent_roles": agent_roles,
        }
    )


def test_exact_agent_then_key_then_wildcard() -> None:
    policy = _policy(
        {
            "web-bot-auth:https://partner.example": {"roles": ["partner"], "tenants": ["shop"]},
            f"web-bot-auth:{URN}": {"roles": ["pinned"]},
            "web-bot-auth:*": {"roles": ["crawler"]},
        }
    )
    exact = policy.agent_grant("web-bot-auth", "https://partner.example", URN)
    assert exact is not None
    assert (exact.roles, exact.tenants) == (frozenset({"partner"}), frozenset({"shop"}))
    by_key = policy.agent_grant("web-bot-auth", "https://other.example", URN)
    assert by_key is not None
    assert by_key.roles == frozenset({"pinned"})
    anyone = policy.agent_grant("web-bot-auth", "https://other.example")
    assert anyone is not None
    assert anyone.roles == frozenset({"crawler"})
    # The profile is part of the key: a TAP agent of the same URL gets nothing.
    assert policy.agent_grant("agent-payer-auth", "https://partner.example") is None


def test_no_entry_no_role() -> None:
    assert _policy({}).agent_grant("web-bot-auth", "https://partner.example") is None


@pytest.mark.parametrize(
    "key",
    [
        "https://partner.example",  # no profile
        "mudrika-did:https://partner.example",  # not an open-web profile (DIDs use did_roles)
        "web-bot-auth:http://partner.example",  # not https
        "web-bot-auth:partner.example",  # not a URL
        "web-bot-auth:urn:ietf:params:oauth:jwk-thumbprint:sha-256:short",
    ],
)
def test_bad_keys_fail_at_load(key: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        _policy({key: {"roles": ["crawler"]}})
    assert caught.value.code == "invalid_policy"
