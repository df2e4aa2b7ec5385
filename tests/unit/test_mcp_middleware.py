"""An MCP server behind ``protect(..., protocol="mcp")``: each resource-server rule, in process.

A real MCP SDK server (``mcp`` 2.3.0, stateless, JSON answers) runs behind the middleware through
``httpx.ASGITransport``; tokens are signed by the local realm and checked against its JWKS with the
resource URL as the audience (RFC 8707).  The same rules over real HTTP, with the Keycloak-shaped
OpenID provider and the official conformance suite: tests/integration/test_mcp_conformance.py and
test_mcp_sdk_client.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context, MCPServer

from mudrika.errors import InvalidInput
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import (
    PRINCIPAL_KEY,
    McpAuthMiddleware,
    McpRoutes,
    ProtectedApp,
    ResourceServer,
    protect,
)
from mudrika.trust.policy import Policy
from tests._support.tokenfactory import Clock, LocalRealm

ORIGIN = "http://127.0.0.1:8000"
RESOURCE = ORIGIN + "/mcp"
METADATA = ORIGIN + "/.well-known/oauth-protected-resource/mcp"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
SESSIONLESS = {"mcp-protocol-version": "2026-07-28"}

POLICY = {
    "version": 1,
    "roles": [
        {"role_id": "r1", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"},
        {"role_id": "r2", "role_name": "root", "realm_name": "mudrika", "trust_level": "admin"},
    ],
    "operations": {
        "initialize": {"min_level": "operator"},
        "ping": {"min_level": "operator"},
        "notifications/*": {"min_level": "operator"},
        "tools/list": {"min_level": "operator"},
        "tools/call": {"min_level": "operator"},
        # One tool needs more than the others: an admin.
        "tools/call:wipe": {"min_level": "admin"},
        # One tool needs a token scope (a permission), whatever the level.
        "tools/call:refund": {"min_level": "operator", "permissions": ["payments:refund"]},
    },
}


def _server() -> MCPServer:
    server = MCPServer(name="shop-tools", version="1.0")

    @server.tool(description="Echo the text back")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Delete everything (admins only)")
    def wipe() -> str:
        return "wiped"

    @server.tool(description="Refund an order (needs payments:refund)")
    def refund(order: str) -> str:
        return f"refunded {order}"

    @server.tool(description="Who the server thinks called")
    def whoami(ctx: Context) -> dict[str, Any]:
        token = get_access_token()
        principal = ctx.request_context.request.scope["state"][PRINCIPAL_KEY]  # type: ignore[union-attr]
        assert token is not None
        return {
            "client_id": token.client_id,
            "subject": token.subject,
            "resource": token.resource,
            "label_is_not_the_token": token.token.startswith("sha256:") or len(token.token) < 80,
            "roles": sorted(principal.roles),
        }

    return server


class _Served:
    """The protected server and a client for it (the app's session manager running)."""

    def __init__(self, http: httpx.AsyncClient, realm: LocalRealm) -> None:
        self.http = http
        self.realm = realm

    def token(self, **claims: Any) -> str:
        defaults: dict[str, Any] = {"aud": [RESOURCE]}
        return self.realm.token(**(defaults | claims))

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, token: str | None = None, **headers: str
    ) -> httpx.Response:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
        if params is not None:
            body["params"] = params
        sent = {**ACCEPT, **headers}
        if token is not None:
            sent["authorization"] = f"Bearer {token}"
        return await self.http.post("/mcp", content=json.dumps(body), headers=sent)


def _protected(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, **options: Any
) -> tuple[ProtectedApp, MCPServer]:
    server = _server()
    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience=RESOURCE, azp_allowlist=None, jwks=jwks, clock=clock
    )
    app = protect(
        server.streamable_http_app(stateless_http=True, json_response=True),
        policy=Policy.from_document(POLICY),
        realm=realm.issuer,
        token_verifier=verifier,
        protocol="mcp",
        resource=RESOURCE,
        scopes_supported=["mcp:tools", "payments:refund"],
        **options,
    )
    return app, server


@pytest.fixture
async def served(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> AsyncIterator[_Served]:
    app, server = _protected(realm, jwks, clock)
    async with (
        server.session_manager.run(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http,
    ):
        yield _Served(http, realm)


def _challenges(response: httpx.Response) -> list[str]:
    return response.headers.get_list("www-authenticate")


# --- RFC 9728: the metadata -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_metadata_is_public_and_names_the_realm_and_scopes(served: _Served) -> None:
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        answer = await served.http.get(path)  # no credentials at all
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == {
            "resource": RESOURCE,
            "authorization_servers": [served.realm.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["mcp:tools", "payments:refund"],
            "mudrika_token_signing_alg_values": ["RS256"],
        }
    head = await served.http.head("/.well-known/oauth-protected-resource/mcp")
    assert (head.status_code, head.content) == (200, b"")
    # Only GET and HEAD: a POST there is a request like any other, and needs credentials.
    assert (await served.http.post("/.well-known/oauth-protected-resource/mcp")).status_code == 401


def test_the_metadata_path_is_derived_from_the_resource_url() -> None:
    root = ResourceServer.of("https://tools.example", ["https://kc.example/realms/r"])
    nested = ResourceServer.of("https://tools.example/team/a/mcp/", ["https://kc.example/realms/r"])
    assert root.metadata_path == "/.well-known/oauth-protected-resource"
    assert nested.metadata_path == "/.well-known/oauth-protected-resource/team/a/mcp"
    assert nested.metadata_url == "https://tools.example/.well-known/oauth-protected-resource/team/a/mcp"


@pytest.mark.parametrize(
    ("resource", "servers"),
    [
        ("http://tools.example/mcp", ["https://kc.example/realms/r"]),  # plain http off loopback
        ("https://tools.example/mcp?x=1", ["https://kc.example/realms/r"]),  # a query
        ("https://tools.example/mcp", []),  # no authorization server
        ("https://tools.example/mcp", ['https://kc.example/realms/"r"']),  # would break the challenge
    ],
)
def test_resource_metadata_refuses_what_a_client_could_not_use(resource: str, servers: list[str]) -> None:
    with pytest.raises(InvalidInput):
        ResourceServer.of(resource, servers)


# --- 401: the challenge ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_no_token_is_401_with_the_metadata_and_scopes_and_no_error_code(served: _Served) -> None:
    answer = await served.call("initialize", {})
    assert answer.status_code == 401
    assert _challenges(answer) == [
        f'Bearer realm="mudrika", resource_metadata="{METADATA}", scope="mcp:tools payments:refund"'
    ]
    assert answer.json() == {"error": "invalid_token", "error_description": "Authentication required"}


@pytest.mark.anyio
async def test_a_token_for_another_audience_is_401_invalid_token(served: _Served) -> None:
    answer = await served.call("tools/list", {}, token=served.token(aud=["agent-api"]))
    assert answer.status_code == 401
    (challenge,) = _challenges(answer)
    assert challenge.startswith('Bearer realm="mudrika", error="invalid_token", ')
    assert f'resource_metadata="{METADATA}"' in challenge


# --- 403: step-up and denials by name ------------------------------------------------------------


@pytest.mark.anyio
async def test_a_missing_scope_is_403_insufficient_scope_naming_it(served: _Served) -> None:
    answer = await served.call(
        "tools/call", {"name": "refund", "arguments": {"order": "o-1"}}, token=served.token()
    )
    assert answer.status_code == 403
    assert _challenges(answer) == [
        f'Bearer realm="mudrika", error="insufficient_scope", resource_metadata="{METADATA}", scope="payments:refund"'
    ]
    assert answer.json()["error"] == "insufficient_scope"
    # With the scope, the same call runs.
    allowed = await served.call(
        "tools/call",
        {"name": "refund", "arguments": {"order": "o-1"}},
        token=served.token(scope="profile payments:refund"),
    )
    assert allowed.status_code == 200
    assert allowed.json()["result"]["content"][0]["text"] == "refunded o-1"


@pytest.mark.anyio
async def test_a_tool_is_denied_by_name_while_its_neighbours_run(served: _Served) -> None:
    token = served.token()
    denied = await served.call("tools/call", {"name": "wipe", "arguments": {}}, token=token)
    assert denied.status_code == 403
    assert 'error="insufficient_scope"' in _challenges(denied)[0]
    echoed = await served.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, token=token)
    assert echoed.status_code == 200
    assert echoed.json()["result"]["content"][0]["text"] == "hi"
    admin = served.token(realm_access={"roles": ["root"]})
    assert (
        await served.call("tools/call", {"name": "wipe", "arguments": {}}, token=admin)
    ).status_code == 200


@pytest.mark.anyio
async def test_a_method_the_policy_does_not_name_is_denied_not_lost(served: _Served) -> None:
    answer = await served.call("resources/list", {}, token=served.token())
    # 403 (the caller may step up or ask the operator), never a 404 the client reads as "session gone".
    assert answer.status_code == 403


# --- MCP's own shapes ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_unknown_method_is_answered_here_in_mcp_shape(served: _Served) -> None:
    token = served.token()
    with_sessions = await served.call(
        "shop/teleport", {}, token=token, **{"mcp-protocol-version": "2025-11-25"}
    )
    assert with_sessions.status_code == 200
    assert with_sessions.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32601, "message": "Method not found"},
        "id": 7,
    }
    sessionless = await served.call("shop/teleport", {}, token=token, **SESSIONLESS)
    assert sessionless.status_code == 404
    assert sessionless.json()["error"]["code"] == -32601
    notification = await served.http.post(
        "/mcp",
        content=json.dumps({"jsonrpc": "2.0", "method": "shop/teleported"}),
        headers={**ACCEPT, "authorization": f"Bearer {token}"},
    )
    assert (notification.status_code, notification.content) == (202, b"")


async def _response_start(app: Any, method: str, headers: dict[str, str]) -> Any:
    """The ``http.response.start`` an ASGI app sends for ``method /mcp``; the call is then cancelled
    (a GET opens an event stream that does not end, which ``httpx.ASGITransport`` would wait for)."""
    started: list[Any] = []
    incoming = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> Any:
        if incoming:
            return incoming.pop()
        await anyio.sleep_forever()

    async with anyio.create_task_group() as group:

        async def send(message: Any) -> None:
            if message["type"] == "http.response.start":
                started.append(message)
                group.cancel_scope.cancel()

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": b"",
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()]
            + [(b"host", b"127.0.0.1:8000")],
            "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        group.start_soon(app, scope, receive, send)
    (start,) = started
    return start


@pytest.mark.anyio
async def test_get_and_delete_on_the_endpoint_reach_the_transport(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    app, server = _protected(realm, jwks, clock)
    token = realm.token(aud=[RESOURCE])
    async with server.session_manager.run():
        for method in ("GET", "DELETE"):
            unauthenticated = await _response_start(app, method, ACCEPT)
            assert unauthenticated["status"] == 401  # never a 404 "session not found"
            answered = await _response_start(app, method, {**ACCEPT, "authorization": f"Bearer {token}"})
            # What the MCP transport itself answers a stateless server: the event stream (GET), 405
            # (DELETE: no session to end); never a refusal of ours.
            assert answered["status"] == (200 if method == "GET" else 405)
            assert b"www-authenticate" not in dict(answered["headers"])


@pytest.mark.anyio
async def test_batches_and_non_mcp_paths_are_refused(served: _Served) -> None:
    token = served.token()
    batch = await served.http.post(
        "/mcp",
        content=json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
        headers={**ACCEPT, "authorization": f"Bearer {token}"},
    )
    assert (batch.status_code, batch.json()["error"]["code"]) == (400, -32600)
    other = await served.http.post(
        "/admin", content=b"{}", headers={**ACCEPT, "authorization": f"Bearer {token}"}
    )
    assert other.status_code == 404


@pytest.mark.anyio
async def test_the_tool_sees_the_verified_caller_and_never_the_token(served: _Served) -> None:
    answer = await served.call("tools/call", {"name": "whoami", "arguments": {}}, token=served.token())
    assert answer.status_code == 200
    seen = json.loads(answer.json()["result"]["content"][0]["text"])
    assert seen == {
        "client_id": "agent-gateway",
        "subject": "5f1c1c7e-8e2a-4a0e-9d53-7c5b0f1f2a10",
        "resource": RESOURCE,
        "label_is_not_the_token": True,
        "roles": ["account/view-profile", "agent", "agent-api/invoke", "offline_access"],
    }


@pytest.mark.anyio
async def test_a_client_answer_to_a_server_request_is_decided_as_the_session(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    seen: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["state"])
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience=RESOURCE, azp_allowlist=None, jwks=jwks, clock=clock
    )
    protected = protect(
        app,
        policy=Policy.from_document(POLICY),
        realm=realm.issuer,
        token_verifier=verifier,
        protocol="mcp",
        resource=RESOURCE,
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=protected), base_url=ORIGIN) as http:
        answer = await http.post(
            "/mcp",
            content=json.dumps({"jsonrpc": "2.0", "id": "s-1", "result": {"action": "accept"}}),
            headers={**ACCEPT, "authorization": f"Bearer {realm.token(aud=[RESOURCE])}"},
        )
    assert answer.status_code == 202
    (state,) = seen
    assert [decision.operation for decision in state["mudrika.decisions"]] == ["initialize"]


# --- signatures beside tokens, and wiring errors ------------------------------------------------


@pytest.mark.anyio
async def test_a_signature_challenge_stands_beside_bearer_when_signatures_are_accepted(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    app, server = _protected(realm, jwks, clock, public_origin=ORIGIN, replay_store=MemoryReplayStore())
    async with (
        server.session_manager.run(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http,
    ):
        answer = await http.post("/mcp", content=b"{}", headers=ACCEPT)
    assert answer.status_code == 401
    assert _challenges(answer) == [
        f'Bearer realm="mudrika", resource_metadata="{METADATA}", scope="mcp:tools payments:refund"',
        'Signature realm="mudrika"',
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"protocol": "mcp"},  # no resource
        {"protocol": "grpc", "resource": RESOURCE},  # not a protocol
        {"protocol": "mcp", "resource": RESOURCE, "public_origin": ORIGIN},  # signatures, no replay store
    ],
)
def test_mcp_wiring_is_refused_when_incomplete(options: dict[str, Any]) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("never reached")

    with pytest.raises(InvalidInput):
        protect(app, policy=Policy.from_document(POLICY), realm="https://kc.example/realms/r", **options)
    with pytest.raises(InvalidInput):
        McpRoutes("mcp")  # the endpoint is a path


def test_the_mcp_gate_is_an_mcp_middleware(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    app, _ = _protected(realm, jwks, clock)
    assert isinstance(app.middleware, McpAuthMiddleware)
    assert app.middleware.endpoint == "/mcp"
