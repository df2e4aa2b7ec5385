"""The MCP gate's rules that the mutation check (scripts/mutation.py) found no test for.

Each test states one behaviour a client or an operator relies on: every method MCP defines reaches
the server when the policy allows it, each refusal's OAuth error body, the configuration errors a
deployer reads, the endpoint a deployment names, the JSON-RPC answers given without forwarding, the
log lines of refusals, the RFC 9728 metadata and challenge parameters, and a server without the MCP
SDK installed.  The MCP server is a recording ASGI app (or the gate is called directly), so each test
watches the gate alone.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp.server.auth.middleware.auth_context import get_access_token

from mudrika.errors import IdpUnavailable, InvalidInput, ReplayError
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import (
    DECISIONS_KEY,
    AuthenticatedUser,
    AuthRequest,
    ClaimQuota,
    Limits,
    McpAuthMiddleware,
    McpRoutes,
    ResourceServer,
    protect,
)
from mudrika.trust.middleware._auth import Authenticated
from mudrika.trust.policy import Policy, Principal
from tests._support.tokenfactory import Clock, LocalRealm

ORIGIN = "http://127.0.0.1:8000"
RESOURCE = ORIGIN + "/mcp"
ISSUER = "https://kc.example/realms/mudrika"
METADATA = ORIGIN + "/.well-known/oauth-protected-resource/mcp"
JSON = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

#: The requests a client sends an MCP server, as the 2025-06-18, 2025-11-25 and 2026-07-28 revisions
#: list them (the schema's ClientRequest), and the client's notifications (ClientNotification).
SPEC_REQUESTS = (
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
)
SPEC_NOTIFICATIONS = (
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/tasks/status",
)

ROLES = [{"role_id": "r1", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"}]
POLICY = Policy.from_document(
    {
        "version": 1,
        "roles": ROLES,
        "operations": {name: {"min_level": "operator"} for name in (*SPEC_REQUESTS, *SPEC_NOTIFICATIONS)},
    }
)


class _Server:
    """The MCP server behind the gate: records the scope of every call that reaches it, and what
    ``get_access_token()`` returned inside it."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []
        self.sdk_tokens: list[Any] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        self.sdk_tokens.append(get_access_token())
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})

    @property
    def operations(self) -> list[str]:
        return [decision.operation for scope in self.scopes for decision in scope["state"][DECISIONS_KEY]]


def _gate(realm: LocalRealm, jwks: JwksCache, clock: Clock, server: _Server) -> Any:
    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience=RESOURCE, azp_allowlist=None, jwks=jwks, clock=clock
    )
    return protect(
        server,
        policy=POLICY,
        realm=realm.issuer,
        token_verifier=verifier,
        protocol="mcp",
        resource=RESOURCE,
    )


async def _post(app: Any, body: bytes | dict[str, Any], path: str = "/mcp", **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http:
        return await http.post(path, content=content, headers={**JSON, **headers})


def _bearer(realm: LocalRealm) -> dict[str, str]:
    return {"authorization": "Bearer " + realm.token(aud=[RESOURCE])}


@dataclass
class _Caller:
    """An authenticator for the refusals a token alone cannot provoke: a scheme whose credential
    carries a single-use value (a DPoP ``jti``, an RFC 9421 nonce) claimed only after the policy
    allowed the call, or whose identity provider is down."""

    claim: Callable[[], Awaitable[None]] | None = None
    failure: Exception | None = None
    scheme: str = "Bearer"

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        if self.failure is not None:
            raise self.failure
        principal = Principal("agent-7", roles=frozenset({"agent"}))
        return Authenticated(principal, self.scheme, "label-7", pending_claim=self.claim)


def _middleware(server: _Server, caller: _Caller, **options: Any) -> McpAuthMiddleware:
    return McpAuthMiddleware(
        server,
        authenticators=[caller],
        policy=POLICY,
        resource=ResourceServer.of(RESOURCE, [ISSUER]),
        **options,
    )


async def _claimed() -> None:
    return None


def _tool_call(request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "echo"}}


# --- the method table -----------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("method", SPEC_REQUESTS)
async def test_every_request_mcp_defines_reaches_the_server_when_the_policy_allows_it(
    method: str, realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    server = _Server()
    answer = await _post(
        _gate(realm, jwks, clock, server), {"jsonrpc": "2.0", "id": 1, "method": method}, **_bearer(realm)
    )
    assert answer.status_code == 200
    assert server.operations == [method]


@pytest.mark.anyio
@pytest.mark.parametrize("method", SPEC_NOTIFICATIONS)
async def test_every_notification_mcp_defines_reaches_the_server_when_the_policy_allows_it(
    method: str, realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    server = _Server()
    answer = await _post(
        _gate(realm, jwks, clock, server), {"jsonrpc": "2.0", "method": method}, **_bearer(realm)
    )
    assert answer.status_code == 200
    assert server.operations == [method]


# --- refusal bodies: OAuth error codes by status ---------------------------------------------------


@pytest.mark.anyio
async def test_a_bad_token_is_refused_with_an_invalid_token_body(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    server = _Server()
    answer = await _post(_gate(realm, jwks, clock, server), _tool_call(), authorization="Bearer not.a.token")
    assert answer.status_code == 401
    assert answer.json() == {"error": "invalid_token", "error_description": "Invalid token"}
    assert server.scopes == []


@pytest.mark.anyio
async def test_an_unreachable_identity_provider_is_503_temporarily_unavailable() -> None:
    server = _Server()
    caller = _Caller(failure=IdpUnavailable("the realm's JWKS could not be fetched"))
    answer = await _post(_middleware(server, caller), _tool_call(), authorization="Bearer t")
    assert answer.status_code == 503
    assert answer.json()["error"] == "temporarily_unavailable"
    assert "retry-after" in answer.headers
    assert server.scopes == []


@pytest.mark.anyio
async def test_a_caller_over_its_claim_quota_is_429_too_many_requests() -> None:
    server = _Server()
    caller = _Caller(claim=_claimed)
    app = _middleware(server, caller, limits=Limits(claim_quota=ClaimQuota(limit=1, window=3600)))
    first = await _post(app, _tool_call(1), authorization="Bearer t")
    second = await _post(app, _tool_call(2), authorization="Bearer t")
    assert first.status_code == 200
    assert second.status_code == 429
    assert second.json()["error"] == "too_many_requests"
    assert len(server.scopes) == 1


@pytest.mark.anyio
async def test_a_replayed_single_use_value_never_reaches_the_tool() -> None:
    async def replayed() -> None:
        raise ReplayError("this jti was already used")

    server = _Server()
    answer = await _post(_middleware(server, _Caller(claim=replayed)), _tool_call(), authorization="Bearer t")
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_token"
    assert server.scopes == []


# --- configuration a deployer gets wrong ----------------------------------------------------------


def _config_error(build: Callable[[], object]) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        build()
    return caught.value


def test_wiring_mistakes_are_refused_as_bad_config_naming_the_option() -> None:
    relative = _config_error(lambda: McpRoutes("mcp"))
    assert (relative.code, relative.fields.get("option")) == ("bad_config", "endpoint")
    server = _Server()
    no_metadata = _config_error(
        lambda: McpAuthMiddleware(server, authenticators=[_Caller()], policy=POLICY, resource=RESOURCE)  # type: ignore[arg-type]
    )
    assert no_metadata.code == "bad_config"
    routes_as_text = _config_error(
        lambda: McpAuthMiddleware(
            server,
            authenticators=[_Caller()],
            policy=POLICY,
            resource=ResourceServer.of(RESOURCE, [ISSUER]),
            routes="/tools",  # type: ignore[arg-type]
        )
    )
    assert (routes_as_text.code, routes_as_text.fields.get("option")) == ("bad_config", "routes")


@pytest.mark.anyio
async def test_the_endpoint_a_deployment_names_is_the_only_one_served() -> None:
    server = _Server()
    app = _middleware(server, _Caller(), routes=McpRoutes("/tools"))
    assert (await _post(app, _tool_call(), path="/tools", authorization="Bearer t")).status_code == 200
    assert (await _post(app, _tool_call(), path="/mcp", authorization="Bearer t")).status_code == 404
    assert server.operations == ["tools/call"]


@pytest.mark.anyio
async def test_challenges_name_the_mcp_realm_unless_told_otherwise() -> None:
    caller = _Caller(failure=ReplayError("seen"))
    answer = await _post(_middleware(_Server(), caller), _tool_call(), authorization="Bearer t")
    assert answer.headers["www-authenticate"].startswith('Bearer realm="mcp", error="invalid_token"')


# --- answers given without forwarding --------------------------------------------------------------


@pytest.mark.anyio
async def test_another_path_is_404_in_oauth_shape_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    server = _Server()
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _post(_middleware(server, _Caller()), b"{}", path="/admin", authorization="Bearer t")
    assert answer.status_code == 404
    assert answer.json() == {"error": "not_found", "error_description": "No such endpoint"}
    assert any("/admin" in record.getMessage() and "POST" in record.getMessage() for record in caplog.records)
    assert server.scopes == []


@pytest.mark.anyio
async def test_a_body_that_is_not_json_is_a_parse_error_never_forwarded() -> None:
    server = _Server()
    answer = await _post(
        _middleware(server, _Caller()), b'{"jsonrpc": "2.0", "id": 1,', authorization="Bearer t"
    )
    assert answer.status_code == 400
    assert answer.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "Parse error"},
        "id": None,
    }
    assert server.scopes == []


@pytest.mark.anyio
async def test_a_method_that_is_not_text_is_an_invalid_request_echoing_the_id() -> None:
    server = _Server()
    answer = await _post(
        _middleware(server, _Caller()), {"jsonrpc": "2.0", "id": 9, "method": 5}, authorization="Bearer t"
    )
    assert answer.status_code == 400
    assert answer.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "Invalid Request"},
        "id": 9,
    }
    assert server.scopes == []


@pytest.mark.anyio
async def test_a_client_error_answer_to_a_server_request_is_decided_as_the_session() -> None:
    server = _Server()
    answer = await _post(
        _middleware(server, _Caller()),
        {"jsonrpc": "2.0", "id": "s-1", "error": {"code": -1, "message": "user declined"}},
        authorization="Bearer t",
    )
    assert answer.status_code == 200
    assert server.operations == ["initialize"]


@pytest.mark.anyio
async def test_an_unknown_method_is_logged_with_its_caller(caplog: pytest.LogCaptureFixture) -> None:
    server = _Server()
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _post(
            _middleware(server, _Caller()),
            {"jsonrpc": "2.0", "id": 1, "method": "shop/teleport"},
            authorization="Bearer t",
        )
    assert answer.json()["error"]["code"] == -32601
    assert any(
        "unknown MCP method" in record.getMessage() and "agent-7" in record.getMessage()
        for record in caplog.records
    )
    assert server.scopes == []


@pytest.mark.anyio
async def test_an_unknown_notification_is_accepted_with_an_empty_body_of_declared_length() -> None:
    server = _Server()
    answer = await _post(
        _middleware(server, _Caller()),
        {"jsonrpc": "2.0", "method": "shop/teleported"},
        authorization="Bearer t",
    )
    assert answer.status_code == 202
    assert answer.headers["content-length"] == "0"
    assert answer.content == b""
    assert server.scopes == []


# --- the caller as the MCP SDK reads it -------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "missing",
    [
        # No MCP SDK at all (its auth modules cannot be imported).
        ("mcp.server.auth.middleware.bearer_auth", "mcp.server.auth.middleware.auth_context"),
        # An SDK mudrika's adapter cannot load.
        ("mudrika.trust.mcp.sdk",),
    ],
    ids=["no-sdk", "no-adapter"],
)
async def test_without_the_mcp_sdk_the_server_still_sees_mudrikas_caller(
    missing: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in missing:
        monkeypatch.setitem(sys.modules, name, None)
    server = _Server()
    answer = await _post(_middleware(server, _Caller()), _tool_call(), authorization="Bearer t")
    assert answer.status_code == 200
    (scope,) = server.scopes
    assert isinstance(scope["user"], AuthenticatedUser)
    assert scope["user"].principal.subject == "agent-7"
    assert server.sdk_tokens == [None]


@pytest.mark.anyio
async def test_the_sdk_caller_does_not_outlive_its_request() -> None:
    server = _Server()
    app = _middleware(server, _Caller())
    messages = [{"type": "http.request", "body": json.dumps(_tool_call()).encode(), "more_body": False}]
    sent: list[Any] = []

    async def receive() -> Any:
        return messages.pop()

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"authorization", b"Bearer t"), (b"content-type", b"application/json")],
        "state": {},
    }
    await app(scope, receive, send)  # in this task: a context variable left set would show below
    assert sent[0]["status"] == 200
    assert server.sdk_tokens[0] is not None
    assert server.sdk_tokens[0].subject == "agent-7"
    assert get_access_token() is None


# --- RFC 9728: the metadata and the challenge parameters -----------------------------------------


@pytest.mark.parametrize(
    "resource",
    [
        "http://127.0.0.1:8000/mcp",
        "http://127.9.9.9/mcp",
        "http://[::1]:8000/mcp",
        "http://localhost:8000/mcp",
    ],
)
def test_plain_http_is_accepted_on_a_loopback_host(resource: str) -> None:
    assert ResourceServer.of(resource, [ISSUER]).resource == resource


@pytest.mark.parametrize(
    "resource",
    [
        "http://x127.0.0.1/mcp",
        "http://127.0.0.1.example/mcp",
        "http://localhost.example/mcp",
        "http://[::2]/mcp",
    ],
)
def test_plain_http_is_refused_on_a_name_that_only_looks_like_loopback(resource: str) -> None:
    refused = _config_error(lambda: ResourceServer.of(resource, [ISSUER]))
    assert (refused.code, refused.fields.get("option")) == ("bad_config", "resource")


def test_resource_metadata_mistakes_are_refused_as_bad_config() -> None:
    query = _config_error(lambda: ResourceServer.of("https://tools.example/mcp?x=1", [ISSUER]))
    assert (query.code, query.fields.get("option")) == ("bad_config", "resource")
    assert _config_error(lambda: ResourceServer.of("https://tools.example/mcp", [])).code == "bad_config"
    spaced = _config_error(
        lambda: ResourceServer.of("https://tools.example/mcp", [ISSUER], scopes_supported=["mcp tools"])
    )
    assert spaced.code == "bad_config"


def test_every_scope_token_character_of_oauth_is_accepted() -> None:
    # RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ); "!" is the lowest.
    server = ResourceServer.of("https://tools.example/mcp", [ISSUER], scopes_supported=["tools!", "a~z"])
    assert server.document()["scopes_supported"] == ["tools!", "a~z"]


def test_the_metadata_path_keeps_every_character_of_the_resource_path() -> None:
    server = ResourceServer.of("https://tools.example/tax_", [ISSUER])
    assert server.metadata_path == "/.well-known/oauth-protected-resource/tax_"
    taxes = ResourceServer.of("https://tools.example/tax/", [ISSUER])
    assert taxes.metadata_path == "/.well-known/oauth-protected-resource/tax"


def test_the_metadata_publishes_rs256_unless_told_and_only_the_members_given() -> None:
    plain = ResourceServer("https://tools.example/mcp", (ISSUER,))
    assert plain.document() == {
        "resource": "https://tools.example/mcp",
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "mudrika_token_signing_alg_values": ["RS256"],
    }
    assert ResourceServer.of("https://tools.example/mcp", [ISSUER]).document() == plain.document()
    named = ResourceServer.of("https://tools.example/mcp", [ISSUER], name="Shop tools")
    assert named.document()["resource_name"] == "Shop tools"


def test_a_challenge_names_scopes_only_when_there_are_some_to_ask_for() -> None:
    bare = ResourceServer.of(RESOURCE, [ISSUER])
    assert bare.parameters(401) == f', resource_metadata="{METADATA}"'
    scoped = ResourceServer.of(RESOURCE, [ISSUER], scopes_supported=["mcp:tools"])
    assert scoped.parameters(401) == f', resource_metadata="{METADATA}", scope="mcp:tools"'
    # A 403 asks for what the operation lacks, never for every scope the server knows.
    assert scoped.parameters(403) == f', resource_metadata="{METADATA}"'
    assert scoped.parameters(403, ["payments:refund"]) == (
        f', resource_metadata="{METADATA}", scope="payments:refund"'
    )


def test_a_permission_with_quotes_or_backslashes_cannot_break_the_challenge() -> None:
    server = ResourceServer.of(RESOURCE, [ISSUER])
    assert server.parameters(403, ['pay"ments\\refund']) == (
        f', resource_metadata="{METADATA}", scope="pay\\"ments\\\\refund"'
    )
