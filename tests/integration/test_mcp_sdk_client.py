"""The MCP SDK's own OAuth client (``mcp`` 2.3.0, ``ClientCredentialsOAuthProvider``) finding its
way from nothing but our answers to a tool call: ``protect(..., protocol="mcp")`` in front of the
fixture server, a real Keycloak-shaped OpenID provider behind it, no token handed to the client.

What the client must get from us, and what these tests watch it use (every HTTP request it makes
goes through a recording transport):

1. our 401 on its first ``POST /mcp``, whose ``WWW-Authenticate`` names the RFC 9728 metadata URL;
2. that metadata, fetched from us at ``/.well-known/oauth-protected-resource/mcp``, whose
   ``resource`` must equal the URL it calls and whose ``authorization_servers`` is the realm;
3. the realm's OpenID configuration (it tries the RFC 8414 locations first, then Keycloak's
   ``<issuer>/.well-known/openid-configuration``), and only then the realm's token endpoint, with
   ``grant_type=client_credentials``, ``resource=<our URL>`` (RFC 8707; the MCP client sends it
   whatever the authorization server supports) and the scopes the realm advertises;
4. the same ``POST /mcp`` again with the token, which we accept when its ``aud`` is our URL.

Keycloak and ``resource``: stock Keycloak ignores the RFC 8707 ``resource`` parameter; the audience
of its tokens comes from audience mappers, and its MCP authorization-server guide has the realm put
the MCP server's URL in ``aud`` with one ("Included Custom Audience").  The test IdP does the same:
it accepts ``resource`` (an absolute URI without fragment) and leaves the token as the client's
configuration makes it, ``aud`` = the MCP URL for ``mcp-agent``.  (Keycloak 26.6 added an
experimental ``resource-indicators`` feature that narrows the token's ``aud`` to the audience the
``resource`` names, and answers ``invalid_target`` when it names none; where that audience is a
client id rather than the URL, the server is protected with ``audience=<that id>``.)  Because the
realm does not narrow, a client whose tokens are for another API still gets one when it asks for
our URL, and it is the resource server's audience check that must refuse it: the second test.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs

import httpx2
import jwt
import pytest
from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, TextContent

from mudrika.trust.middleware import protect
from mudrika.trust.policy import Policy
from tests._support.mcp_conformance import (
    MCP_CLIENT_ID,
    ASGIApp,
    McpRealm,
    Receive,
    Scope,
    Send,
    launch_mcp_realm,
)
from tests._support.mcp_everything import MCP_PATH, everything_app
from tests._support.served import serve_asgi

pytestmark = pytest.mark.integration

METADATA_PATH = "/.well-known/oauth-protected-resource" + MCP_PATH
#: A default client of the realm whose tokens are for ``agent-api`` and ``account``, not for us; it
#: holds the realm role ``agent`` too, so only the audience can be what refuses it.
OTHER_AUDIENCE_CLIENT = "agent-gateway"

#: The realm role ``agent`` may open a session, ping, use every tool and send notifications.
POLICY = {
    "version": 1,
    "roles": [
        {"role_id": "r-agent", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"}
    ],
    "operations": {
        name: {"min_level": "operator"} for name in ("initialize", "ping", "tools/*", "notifications/*")
    },
}


# --- what the client sent and what reached the app ------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One HTTP request the client made and the status and challenge it got back."""

    method: str
    url: str
    status: int
    authorization: str | None
    www_authenticate: str | None
    form: dict[str, list[str]] | None

    @property
    def path(self) -> str:
        return httpx2.URL(self.url).path


class RecordingTransport(httpx2.AsyncBaseTransport):
    """The real transport, with every request and the head of its response written down in order
    (the bodies of form posts too: the token request).  Auth-flow requests (discovery, token) go
    through the client's transport like the MCP requests, so the order is the client's own."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self.exchanges: list[Exchange] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        form = None
        if request.headers.get("content-type") == "application/x-www-form-urlencoded":
            form = parse_qs(request.content.decode("ascii"), strict_parsing=True)
        response = await self._inner.handle_async_request(request)
        self.exchanges.append(
            Exchange(
                method=request.method,
                url=str(request.url),
                status=response.status_code,
                authorization=request.headers.get("authorization"),
                www_authenticate=response.headers.get("www-authenticate"),
                form=form,
            )
        )
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class MemoryTokenStorage:
    """The SDK's ``TokenStorage`` in memory: one client's tokens for one test."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class AppRequests:
    """The HTTP requests that got past the gate to the MCP app (method, path)."""

    seen: list[tuple[str, str]] = field(default_factory=list)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def recording(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                self.seen.append((scope["method"], scope["path"]))
            await app(scope, receive, send)

        return recording


@dataclass(frozen=True)
class ServedMcp:
    realm: McpRealm
    app_requests: AppRequests

    @property
    def metadata_url(self) -> str:
        return self.realm.base_url + METADATA_PATH


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedMcp]:
    """The realm, and the fixture server behind ``protect`` on the port its tokens are for."""
    with launch_mcp_realm(tmp_path_factory.mktemp("mcp-sdk-realm")) as realm:
        app_requests = AppRequests()
        protected = protect(
            app_requests.wrap(everything_app()),
            policy=Policy.from_document(POLICY),
            realm=realm.issuer,
            protocol="mcp",
            resource=realm.resource,
        )
        with serve_asgi(protected, port=realm.port, lifespan="on"):
            yield ServedMcp(realm, app_requests)


def sdk_client(
    realm: McpRealm, client_id: str, storage: MemoryTokenStorage
) -> ClientCredentialsOAuthProvider:
    """The SDK's client-credentials provider for one of the realm's clients, bound to the realm's
    issuer (so its secret can only ever be sent there)."""
    client = realm.idp.client(client_id)
    return ClientCredentialsOAuthProvider(
        server_url=realm.resource,
        storage=storage,
        client_id=client.client_id,
        client_secret=client.secret,
        token_endpoint_auth_method=client.auth_method,
        issuer=realm.issuer,
    )


def http_client(auth: httpx2.Auth, transport: RecordingTransport) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(auth=auth, transport=transport, timeout=httpx2.Timeout(30.0, read=60.0))


def challenge_params(header: str | None) -> dict[str, str]:
    """The auth-params of a ``Bearer`` challenge (quoted values, no escapes in ours)."""
    assert header is not None
    assert header.startswith("Bearer "), header
    return dict(re.findall(r'([A-Za-z_]+)="([^"]*)"', header))


def discovery_then_token(exchanges: list[Exchange]) -> list[tuple[str, str, int]]:
    """The first six requests as (method, url, status): the 401, our metadata, the realm's
    metadata as the client looks for it, the token request."""
    return [(e.method, e.url, e.status) for e in exchanges[:6]]


def expected_discovery(realm: McpRealm) -> list[tuple[str, str, int]]:
    origin = realm.idp.server_url.rstrip("/")
    realm_path = "/realms/" + realm.idp.realm
    return [
        ("POST", realm.resource, 401),
        ("GET", realm.base_url + METADATA_PATH, 200),
        ("GET", origin + "/.well-known/oauth-authorization-server" + realm_path, 404),
        ("GET", origin + "/.well-known/openid-configuration" + realm_path, 404),
        ("GET", realm.idp.discovery_url, 200),
        ("POST", realm.idp.token_endpoint, 200),
    ]


# --- the tests --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sdk_client_discovers_the_realm_from_our_401_and_calls_a_tool(served: ServedMcp) -> None:
    realm = served.realm
    storage = MemoryTokenStorage()
    transport = RecordingTransport()
    async with (
        http_client(sdk_client(realm, MCP_CLIENT_ID, storage), transport) as http,
        streamable_http_client(realm.resource, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        result = await session.call_tool("whoami", {})

    # The tool ran for the caller the realm vouched for, as the SDK and as mudrika's policy see it.
    assert "whoami" in tools
    assert result.is_error is False
    content = result.content[0]
    assert isinstance(content, TextContent)
    caller = json.loads(content.text)
    assert caller["authorization_scheme"] == "Bearer"
    assert caller["access_token"]["client_id"] == MCP_CLIENT_ID
    assert caller["access_token"]["resource"] == realm.resource
    assert caller["access_token"]["issuer"] == realm.issuer
    assert caller["principal"]["subject"] == realm.idp.client(MCP_CLIENT_ID).service_account_id
    assert "agent" in caller["principal"]["roles"]

    # The path there: our 401, our metadata, the realm's metadata, one token request.
    exchanges = transport.exchanges
    assert discovery_then_token(exchanges) == expected_discovery(realm)
    first = exchanges[0]
    assert first.authorization is None
    assert challenge_params(first.www_authenticate) == {
        "realm": realm.idp.realm,
        "resource_metadata": served.metadata_url,
    }
    token_request = exchanges[5]
    assert token_request.form is not None
    assert token_request.form["grant_type"] == ["client_credentials"]
    assert token_request.form["resource"] == [realm.resource]
    # Neither our challenge nor our metadata names scopes, so the client asks for the realm's.
    advertised = httpx2.get(realm.idp.discovery_url).json()["scopes_supported"]
    assert token_request.form["scope"] == [" ".join(advertised)]
    assert "client_secret" not in token_request.form  # client_secret_basic: in the header
    secret = realm.idp.client(MCP_CLIENT_ID).secret
    basic = base64.b64encode(f"{MCP_CLIENT_ID}:{secret}".encode()).decode()
    assert token_request.authorization == f"Basic {basic}"
    assert [e for e in exchanges if e.url == realm.idp.token_endpoint] == [token_request]

    # Every MCP request after the token carried it and was let through.
    assert storage.tokens is not None
    bearer = f"Bearer {storage.tokens.access_token}"
    after = [e for e in exchanges[6:] if e.path == MCP_PATH]
    assert (after[0].method, after[0].status) == ("POST", 200)  # initialize, retried with the token
    assert all(e.authorization == bearer and e.status < 400 for e in after), after
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == realm.resource  # the audience mapper's, not the `resource` asked for


@pytest.mark.anyio
async def test_a_token_for_another_audience_is_refused_and_no_tool_runs(served: ServedMcp) -> None:
    realm = served.realm
    storage = MemoryTokenStorage()
    transport = RecordingTransport()
    reached_app = len(served.app_requests.seen)
    # The transport turns our 401 (an OAuth error body, not JSON-RPC) into the stand-in error
    # -32603 for the pending initialize, which the session raises out of its task groups.
    refused_initialize = pytest.RaisesExc(
        MCPError,
        check=lambda e: (e.code, e.message) == (INTERNAL_ERROR, "Server returned an error response"),
    )
    with pytest.RaisesGroup(refused_initialize, flatten_subgroups=True):
        async with (
            http_client(sdk_client(realm, OTHER_AUDIENCE_CLIENT, storage), transport) as http,
            streamable_http_client(realm.resource, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("whoami", {})

    # Discovery went as for any client; the realm issued the token (it ignores `resource`)...
    exchanges = transport.exchanges
    assert discovery_then_token(exchanges) == expected_discovery(realm)
    assert exchanges[5].form is not None
    assert exchanges[5].form["resource"] == [realm.resource]
    assert storage.tokens is not None
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["azp"] == OTHER_AUDIENCE_CLIENT
    assert claims["aud"] == ["agent-api", "account"]
    # ...and we refused it: 401, invalid_token, the challenge naming our metadata again.
    retried = exchanges[6]
    assert (retried.method, retried.url, retried.status) == ("POST", realm.resource, 401)
    assert retried.authorization == f"Bearer {storage.tokens.access_token}"
    assert challenge_params(retried.www_authenticate) == {
        "realm": realm.idp.realm,
        "error": "invalid_token",
        "resource_metadata": served.metadata_url,
    }
    assert all(e.status == 401 for e in exchanges if e.path == MCP_PATH)
    # Nothing got past the gate: no session, no tool.
    assert served.app_requests.seen[reached_app:] == []
