"""Introspection, discovery and admin reads obey the one egress policy, like did:web and JWKS.

Why: python-keycloak sends its synchronous calls with ``requests``; the adapter bridges them onto
httpx clients whose transport is the egress policy, so a configured Keycloak name that resolves
(or is rebound) to a loopback, private or metadata address is never connected to.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from mudrika.errors import EgressDenied, MudrikaError
from mudrika.net.egress import EgressPolicy
from mudrika.trust.keycloak import KeycloakAdapter
from tests._support.served import Canary, canary

pytestmark = pytest.mark.security


@pytest.fixture
def listener() -> Iterator[Canary]:
    """A loopback listener that records every connection made to it."""
    with canary() as recorder:
        yield recorder


def keycloak_on(port: int, egress: EgressPolicy) -> KeycloakAdapter:
    """An adapter for a Keycloak named ``keycloak.example`` on ``port``, reached through ``egress``
    (whose resolver decides which address that name stands for)."""
    return KeycloakAdapter(
        server_url=f"https://keycloak.example:{port}/",
        realm="agents",
        client_id="gateway",
        client_secret="not-a-real-secret",
        egress=egress,
    )


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "10.0.0.7", "::ffff:127.0.0.1"])
def test_introspection_never_connects_to_a_name_rebound_to_a_private_address(
    listener: Canary, address: str
) -> None:
    rebound = EgressPolicy(resolve=lambda host, _port: [address])
    with (
        keycloak_on(listener.port, rebound) as adapter,
        pytest.raises(MudrikaError),
    ):  # fails closed (python-keycloak reports it as unreachable)
        adapter.introspect("opaque-token")
    assert listener.connections == 0


def test_the_listener_would_have_seen_a_connection_the_policy_allowed(listener: Canary) -> None:
    """The control: with private networks allowed, the same call does reach the listener."""
    allowed = EgressPolicy(allow_private_networks=True, resolve=lambda host, _port: ["127.0.0.1"])
    with (
        keycloak_on(listener.port, allowed) as adapter,
        pytest.raises(MudrikaError),
    ):  # the listener closes at once: no TLS, no answer
        adapter.introspect("opaque-token")
    assert listener.connections > 0


def test_the_policy_itself_refuses_the_rebound_name() -> None:
    rebound = EgressPolicy(resolve=lambda host, _port: ["127.0.0.1"])
    with (
        httpx.Client(transport=rebound.transport(), **rebound.client_options()) as client,
        pytest.raises(EgressDenied),
    ):
        client.get("https://keycloak.example/realms/agents")


@pytest.mark.anyio
async def test_async_introspection_obeys_the_same_policy(listener: Canary) -> None:
    rebound = EgressPolicy(resolve=lambda host, _port: ["127.0.0.1"])
    async with keycloak_on(listener.port, rebound) as adapter:
        with pytest.raises(MudrikaError):
            await adapter.aintrospect("opaque-token")
    assert listener.connections == 0
