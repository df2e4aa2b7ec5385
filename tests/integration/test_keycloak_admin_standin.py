"""python-keycloak 7 adapters against an in-process Keycloak stand-in.

THIS IS THE PROJECT'S ONLY STAND-IN: no Keycloak server can run in this environment, so
``KeycloakAdapter`` (and underneath it python-keycloak's own ``KeycloakOpenID``/``KeycloakAdmin`` request
code) talks to ``tests/_support/keycloak_admin_standin.py``, a Starlette app answering in Keycloak's
REST shapes.  Every request goes through ``httpx.ASGITransport``: the async adapter gets an
``httpx.AsyncClient`` on that transport; the sync adapter gets an ``httpx.Client`` whose transport
awaits the same ``ASGITransport`` in a blocking portal (python-keycloak's ``requests`` session is
bridged onto it by the adapter).  What this proves: request shapes, transport injection, snapshot
assembly and error wrapping.  What it cannot prove: that a real Keycloak answers identically.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest

from mudrika.errors import IdpUnavailable, InvalidInput
from mudrika.trust.keycloak.adapters import (
    KeycloakAdapter,
    RealmRoles,
    import_realm_export,
    load_realm_export,
    policy_from_realm,
)
from mudrika.trust.levels import TrustLevel
from mudrika.trust.policy import OperationRule, Principal
from tests._support.keycloak_admin_standin import KeycloakStandIn, sync_asgi_client
from tests._support.net import free_port
from tests._support.paths import FIXTURES

pytestmark = pytest.mark.integration

CLIENT_ID = "a2a-gateway"
SECRET = "stand-in-secret-" + "x" * 16
SERVER = "http://127.0.0.1:8080/"
UMA = {
    "token-alice": [{"rsid": "1", "rsname": "ledger", "scopes": ["read"]}],
    "token-bob": [{"rsid": "2", "rsname": "refunds", "scopes": ["create"]}],
}


@pytest.fixture(scope="module")
def export() -> dict[str, Any]:
    return load_realm_export(FIXTURES / "keycloak" / "agents-realm.json")


@pytest.fixture(scope="module")
def expected(export: dict[str, Any]) -> RealmRoles:
    return import_realm_export(export)


@pytest.fixture
def standin(export: dict[str, Any]) -> KeycloakStandIn:
    return KeycloakStandIn(export, client_id=CLIENT_ID, client_secret=SECRET, uma_grants=UMA, uma_delay=0.05)


@pytest.fixture
def adapter(standin: KeycloakStandIn) -> Iterator[KeycloakAdapter]:
    with sync_asgi_client(standin.app) as client:
        yield KeycloakAdapter(
            server_url=SERVER, realm="agents", client_id=CLIENT_ID, client_secret=SECRET, http_client=client
        )


@pytest.fixture
async def async_adapter(standin: KeycloakStandIn) -> AsyncIterator[KeycloakAdapter]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=standin.app)) as client:
        yield KeycloakAdapter(
            server_url=SERVER,
            realm="agents",
            client_id=CLIENT_ID,
            client_secret=SECRET,
            async_http_client=client,
        )


def assert_same_realm(got: RealmRoles, expected: RealmRoles) -> None:
    assert got.realm_name == expected.realm_name
    assert got.roles == expected.roles
    assert got.closure == expected.closure
    assert got.groups == expected.groups


# --- sync -----------------------------------------------------------------------------------------


def test_discovery_certs_token_introspection(adapter: KeycloakAdapter) -> None:
    metadata = adapter.well_known()
    assert metadata["issuer"] == "http://127.0.0.1:8080/realms/agents"
    jwks = adapter.certs()
    assert jwks["keys"][0]["kty"] == "EC"
    token = adapter.client_credentials_token()
    assert token["token_type"] == "Bearer"
    assert adapter.introspect(token["access_token"])["active"] is True
    assert adapter.introspect("not-a-token")["active"] is False


def test_admin_snapshot_matches_the_export(adapter: KeycloakAdapter, expected: RealmRoles) -> None:
    assert {r["name"] for r in adapter.realm_roles()} == {r["name"] for r in expected_realm_roles()}
    snapshot = adapter.fetch_realm_export()
    assert set(snapshot) == {"realm", "roles", "groups"}
    assert_same_realm(import_realm_export(snapshot), expected)
    assert_same_realm(adapter.load_realm(), expected)


def expected_realm_roles() -> list[dict[str, Any]]:
    roles: list[dict[str, Any]] = load_realm_export(FIXTURES / "keycloak" / "agents-realm.json")["roles"][
        "realm"
    ]
    return roles


def test_policy_from_live_snapshot(adapter: KeycloakAdapter) -> None:
    policy = policy_from_realm(
        adapter.load_realm(),
        operations={
            "payments/refund": OperationRule(min_level=TrustLevel.OPERATOR, permissions=["payments:refund"])
        },
    )
    night_shift = Principal(subject="alice", groups=frozenset({"/operations/leads/night-shift"}))
    assert policy.decide(night_shift, "payments/refund").allowed
    assert policy.decide(
        Principal(subject="t", groups=frozenset({"/operations/trainees"})), "payments/refund"
    ).reason == ("missing_permission")


def test_uma_permissions_sync(adapter: KeycloakAdapter) -> None:
    assert adapter.uma_permissions("token-alice", ["ledger#read"]) == UMA["token-alice"]


def test_wrong_secret_is_invalid_input(standin: KeycloakStandIn) -> None:
    with sync_asgi_client(standin.app) as client:
        bad = KeycloakAdapter(
            server_url=SERVER, realm="agents", client_id=CLIENT_ID, client_secret="wrong", http_client=client
        )
        with pytest.raises(InvalidInput) as info:
            bad.fetch_realm_export()
        assert info.value.code == "idp_rejected_credentials"
        assert "wrong" not in info.value.message
        with pytest.raises(InvalidInput) as info:
            bad.client_credentials_token()
        assert info.value.code == "idp_rejected_credentials"


def test_server_errors_are_idp_unavailable(adapter: KeycloakAdapter, standin: KeycloakStandIn) -> None:
    standin.fail_with = 503
    with pytest.raises(IdpUnavailable) as info:
        adapter.well_known()
    assert info.value.code == "idp_error"
    assert info.value.fields["status"] == 503
    with pytest.raises(IdpUnavailable):
        adapter.fetch_realm_export()


def test_not_found_realm_is_invalid_input(standin: KeycloakStandIn) -> None:
    with sync_asgi_client(standin.app) as client:
        other = KeycloakAdapter(
            server_url=SERVER,
            realm="elsewhere",
            client_id=CLIENT_ID,
            client_secret=SECRET,
            http_client=client,
        )
        with pytest.raises(InvalidInput) as info:
            other.certs()
        assert info.value.code == "idp_rejected"
        assert info.value.fields["status"] == 404


def test_unreachable_server_is_idp_unavailable() -> None:
    with KeycloakAdapter(
        server_url=f"http://127.0.0.1:{free_port()}",
        realm="agents",
        client_id=CLIENT_ID,
        client_secret=SECRET,
        timeout=2.0,
    ) as nowhere:
        with pytest.raises(IdpUnavailable) as info:
            nowhere.well_known()
        assert info.value.code == "idp_unreachable"
        with pytest.raises(IdpUnavailable):
            nowhere.realm_roles()


# --- async ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_openid_calls(async_adapter: KeycloakAdapter) -> None:
    assert (await async_adapter.awell_known())["issuer"].endswith("/realms/agents")
    assert (await async_adapter.acerts())["keys"][0]["crv"] == "P-256"
    token = await async_adapter.aclient_credentials_token()
    assert (await async_adapter.aintrospect(token["access_token"]))["active"] is True
    assert (await async_adapter.aintrospect("nope"))["active"] is False


@pytest.mark.anyio
async def test_async_admin_snapshot(async_adapter: KeycloakAdapter, expected: RealmRoles) -> None:
    assert len(await async_adapter.arealm_roles()) == len(expected_realm_roles())
    assert_same_realm(await async_adapter.aload_realm(), expected)


@pytest.mark.anyio
async def test_concurrent_uma_calls_do_not_share_bearer_tokens(
    async_adapter: KeycloakAdapter, standin: KeycloakStandIn
) -> None:
    results: dict[str, list[dict[str, Any]]] = {}

    async def ask(token: str) -> None:
        results[token] = await async_adapter.auma_permissions(token, ["x#y"])

    async with anyio.create_task_group() as group:
        for _ in range(3):
            for token in UMA:
                group.start_soon(ask, token)
    assert results == UMA
    # The shared OpenID connection never carried a caller's token, so later calls go out without one.
    standin.seen.clear()
    await async_adapter.awell_known()
    assert standin.seen == [("/realms/agents/.well-known/openid-configuration", False)]


@pytest.mark.anyio
async def test_async_errors_are_wrapped(standin: KeycloakStandIn) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=standin.app)) as client:
        bad = KeycloakAdapter(
            server_url=SERVER,
            realm="agents",
            client_id=CLIENT_ID,
            client_secret="wrong",
            async_http_client=client,
        )
        with pytest.raises(InvalidInput) as info:
            await bad.afetch_realm_export()
        assert info.value.code == "idp_rejected_credentials"
        standin.fail_with = 502
        with pytest.raises(IdpUnavailable):
            await bad.acerts()
    nowhere = KeycloakAdapter(
        server_url=f"http://127.0.0.1:{free_port()}/",
        realm="agents",
        client_id=CLIENT_ID,
        client_secret=SECRET,
    )
    async with nowhere:
        with pytest.raises(IdpUnavailable) as info_down:
            await nowhere.awell_known()
        assert info_down.value.code == "idp_unreachable"


# --- configuration --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("http://keycloak.example.com/", "insecure_server_url"),
        ("ftp://keycloak.example.com/", "invalid_server_url"),
        ("keycloak.example.com", "invalid_server_url"),
    ],
)
def test_server_url_checks(url: str, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        KeycloakAdapter(server_url=url, realm="r", client_id="c", client_secret="s")
    assert info.value.code == code


def test_server_url_normalised_and_secret_not_in_repr() -> None:
    with KeycloakAdapter(
        server_url="https://sso.example.com/auth", realm="r", client_id="c", client_secret="top-secret"
    ) as adapter:
        assert adapter.server_url == "https://sso.example.com/auth/"
        assert "top-secret" not in repr(adapter)
    with KeycloakAdapter(
        server_url="http://kc.internal/", realm="r", client_id="c", client_secret="s", allow_http=True
    ) as plain:
        assert plain.server_url == "http://kc.internal/"
    with pytest.raises(InvalidInput):
        KeycloakAdapter(server_url="https://sso.example.com/", realm="r", client_id="c", client_secret="")
