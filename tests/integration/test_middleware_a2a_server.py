"""The middleware in front of a REAL a2a-sdk 1.3 server (uvicorn on 127.0.0.1), called through the
a2a-sdk client with Keycloak-shaped tokens from the IdP peer, on both bindings (JSON-RPC, HTTP+JSON).

Allowed calls reach the echo agent, which sees the principal and tenant through a2a-sdk's own call
context; denied ones get the exact error and never reach it.  The a2a-sdk client sends
``A2A-Version: 1.0``, so refusals use the ``a2a`` error profile: the client surfaces an HTTP 401/403
(never ``VersionNotSupportedError``), and the body's code is outside every range A2A 1.0 assigns.

The policy: realm role ``agent`` is an operator, who may send messages and read tasks but not cancel
them (admin); the token's ``organization`` claim (``tenant_claim``) names the caller's tenants.  The app is wrapped in the Starlette
``Middleware(A2AAuthMiddleware, ...)`` form the docs show.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.helpers.proto_helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, TaskNotFoundError, VersionNotSupportedError
from starlette.applications import Starlette
from starlette.middleware import Middleware

from mudrika.trust.a2a.client import refusal_of
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.levels import TrustLevel
from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator
from mudrika.trust.models import KeycloakRole
from mudrika.trust.policy import OperationRule, Policy, Principal
from tests._support.idp import KeycloakIdp
from tests._support.served import serve_asgi

pytestmark = pytest.mark.integration

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


@dataclass(frozen=True)
class Seen:
    """What the agent saw of one call, through a2a-sdk's ServerCallContext."""

    user_name: str
    tenant: str
    principal: Principal | None


@dataclass
class EchoAgent(AgentExecutor):
    """Answers every message with ``echo: <text>`` and remembers who asked, in which tenant."""

    seen: list[Seen] = field(default_factory=list)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        call = context.call_context
        assert call is not None
        principal = call.state.get("auth")  # scope["auth"]: the policy Principal
        assert isinstance(principal, Principal)
        self.seen.append(Seen(call.user.user_name, call.tenant, principal))
        await event_queue.enqueue_event(new_text_message("echo: " + context.get_user_input()))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.seen.append(Seen("cancel", "", None))


@dataclass
class Served:
    url: str
    agent: EchoAgent
    card: AgentCard


def _card(url: str) -> AgentCard:
    return AgentCard(
        name="echo",
        description="echoes text",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0"),
            AgentInterface(protocol_binding="HTTP+JSON", url=url.rstrip("/"), protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )


def _tenant_policy() -> Policy:
    """demo_policy's roles and operations, plus token tenants from the ``organization`` claim."""
    roles = [
        KeycloakRole(role_id="r1", role_name="agent", trust_level=TrustLevel.OPERATOR, realm_name="mudrika"),
    ]
    operations = {
        "message/send": OperationRule(min_level=TrustLevel.OPERATOR),
        "tasks/get": OperationRule(min_level=TrustLevel.VIEWER),
        "tasks/cancel": OperationRule(min_level=TrustLevel.ADMIN),
    }
    return Policy(roles=roles, operations=operations, tenant_claim="organization")


@pytest.fixture(scope="module")
def served(keycloak_idp: KeycloakIdp) -> Iterator[Served]:
    agent = EchoAgent()
    jwks = JwksCache(jwks_uri=keycloak_idp.jwks_uri, algorithms={"RS256"})
    verifier = AccessTokenVerifier(
        issuer=keycloak_idp.issuer, audience="agent-api", azp_allowlist=None, jwks=jwks
    )
    holder: dict[str, AgentCard] = {}

    def build(url: str) -> Starlette:
        card = _card(url)
        holder["card"] = card
        handler = DefaultRequestHandler(agent_executor=agent, task_store=InMemoryTaskStore(), agent_card=card)
        routes = [
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/"),
            *create_rest_routes(handler),
        ]
        gate = Middleware(
            A2AAuthMiddleware,
            authenticators=[BearerAuthenticator(verifier)],
            policy=_tenant_policy(),
            realm="mudrika",
        )
        return Starlette(routes=routes, middleware=[gate])

    app = _LateApp(build)
    try:
        with serve_asgi(app) as base:
            app.bind(base + "/")
            yield Served(url=base + "/", agent=agent, card=holder["card"])
    finally:
        jwks.close()


class _LateApp:
    """The a2a-sdk app needs its own URL in its card; the port is known only once uvicorn has it."""

    def __init__(self, build: Any) -> None:
        self._build = build
        self._app: Any = None

    def bind(self, url: str) -> None:
        self._app = self._build(url)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert self._app is not None
        await self._app(scope, receive, send)


@pytest.fixture
async def http(keycloak_idp: KeycloakIdp) -> AsyncIterator[httpx.AsyncClient]:
    """A client whose token names tenant ``acme`` (Keycloak organisations claim)."""
    token = keycloak_idp.mint(client_id="agent-gateway", organization={"acme": {"id": "1"}})
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        yield client


def _client(http: httpx.AsyncClient, served: Served, binding: str) -> Any:
    config = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=[binding])
    return ClientFactory(config).create(served.card)


def _message(text: str, tenant: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        tenant=tenant,
        message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)]),
    )


def _denial(exc: BaseException) -> tuple[int, httpx.Headers, dict[str, Any]]:
    # The a2a-sdk client surfaces our refusal as an HTTP error, never as one of A2A's own errors.
    assert type(exc) is A2AClientError
    assert not isinstance(exc, VersionNotSupportedError)
    cause = exc.__cause__
    assert isinstance(cause, httpx.HTTPStatusError)
    body: dict[str, Any] = cause.response.json()
    # What a client developer reads instead of walking the cause: the same status, reason and scheme.
    seen = refusal_of(exc)
    assert seen is not None
    assert seen.status == cause.response.status_code
    details = body["error"].get("data") or body["error"].get("details")
    assert (seen.reason, seen.scheme) == (details[0]["reason"], details[0]["metadata"].get("scheme"))
    assert seen.challenges == tuple(cause.response.headers.get_list("www-authenticate"))
    return cause.response.status_code, cause.response.headers, body


def _reason(details: list[dict[str, Any]]) -> tuple[str, str | None]:
    (info,) = details
    assert info["@type"] == ERROR_INFO
    assert info["domain"] == "mudrika.trust"
    return info["reason"], info["metadata"].get("scheme")


BINDINGS = ["JSONRPC", "HTTP+JSON"]


@pytest.mark.anyio
@pytest.mark.parametrize("binding", BINDINGS)
async def test_allowed_send_reaches_the_agent_with_principal_and_tenant(
    served: Served, http: httpx.AsyncClient, binding: str
) -> None:
    before = len(served.agent.seen)
    events = [event async for event in _client(http, served, binding).send_message(_message("hi", "acme"))]
    assert events[0].message.parts[0].text == "echo: hi"
    (seen,) = served.agent.seen[before:]
    assert seen.tenant == "acme"  # a2a-sdk's ServerCallContext.tenant (params or /{tenant} route)
    assert seen.principal is not None
    assert seen.principal.tenants == frozenset({"acme"})
    assert "agent" in seen.principal.roles
    assert seen.user_name == seen.principal.subject  # ServerCallContext.user from scope["user"]


@pytest.mark.anyio
@pytest.mark.parametrize("binding", BINDINGS)
async def test_call_naming_another_tenant_is_denied(
    served: Served, http: httpx.AsyncClient, binding: str
) -> None:
    before = list(served.agent.seen)
    with pytest.raises(A2AClientError) as info:
        async for _ in _client(http, served, binding).send_message(_message("hi", "globex")):
            pass
    status, headers, body = _denial(info.value)
    assert status == 403
    assert headers["www-authenticate"] == 'Bearer realm="mudrika", error="insufficient_scope"'
    if binding == "JSONRPC":
        assert body["error"]["code"] == -31403
        details = body["error"]["data"]
    else:  # google.rpc.Status, A2A 1.0 §11.6
        assert body["error"]["code"] == 403
        assert body["error"]["status"] == "PERMISSION_DENIED"
        details = body["error"]["details"]
    assert _reason(details) == ("WRONG_TENANT", "Bearer")
    assert served.agent.seen == before


@pytest.mark.anyio
async def test_get_task_allowed_reaches_the_app(served: Served, http: httpx.AsyncClient) -> None:
    client = _client(http, served, "JSONRPC")
    with pytest.raises(TaskNotFoundError) as info:  # answered by a2a-sdk, not by us
        await client.get_task(GetTaskRequest(id="no-such-task"))
    assert type(info.value).__name__ == "TaskNotFoundError"


@pytest.mark.anyio
@pytest.mark.parametrize("binding", BINDINGS)
async def test_denied_cancel_is_permission_denied(
    served: Served, http: httpx.AsyncClient, binding: str
) -> None:
    before = list(served.agent.seen)
    with pytest.raises(A2AClientError) as info:
        await _client(http, served, binding).cancel_task(CancelTaskRequest(id="t-1"))
    status, _, body = _denial(info.value)
    assert status == 403
    details = body["error"]["data"] if binding == "JSONRPC" else body["error"]["details"]
    assert _reason(details) == ("PERMISSION_DENIED", "Bearer")
    assert served.agent.seen == before


@pytest.mark.anyio
@pytest.mark.parametrize("binding", BINDINGS)
async def test_no_token_is_authentication_required_never_version_not_supported(
    served: Served, binding: str
) -> None:
    async with httpx.AsyncClient(timeout=60) as bare:
        with pytest.raises(A2AClientError) as info:
            async for _ in _client(bare, served, binding).send_message(_message("anonymous")):
                pass
        status, headers, body = _denial(info.value)
        assert status == 401
        assert headers["www-authenticate"] == 'Bearer realm="mudrika"'
        if binding == "JSONRPC":
            assert body["error"]["code"] == -31401
            assert body["error"]["code"] not in JSON_RPC_ERROR_CODE_MAP.values()
            assert body["error"]["message"] == "Authentication required"
            details = body["error"]["data"]
        else:
            assert body["error"]["status"] == "UNAUTHENTICATED"
            details = body["error"]["details"]
        assert _reason(details) == ("AUTHENTICATION_REQUIRED", None)
        card = await bare.get(served.url + ".well-known/agent-card.json")
        assert card.status_code == 200  # the agent card stays public


@pytest.mark.anyio
async def test_token_for_another_audience_is_invalid_token(served: Served, keycloak_idp: KeycloakIdp) -> None:
    token = keycloak_idp.client_credentials_token("payments-agent")
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as other:
        with pytest.raises(A2AClientError) as info:
            async for _ in _client(other, served, "JSONRPC").send_message(_message("wrong audience")):
                pass
        status, headers, body = _denial(info.value)
        assert status == 401
        assert headers["www-authenticate"] == 'Bearer realm="mudrika", error="invalid_token"'
        assert _reason(body["error"]["data"]) == ("INVALID_TOKEN", "Bearer")


@pytest.mark.anyio
async def test_json_rpc_03_caller_gets_the_bindu_codes(served: Served) -> None:
    # No A2A-Version header: A2A 1.0 §3.6.2 says 0.3, and 0.3 clients get the seed's codes.  No
    # credentials is refused before the body is read, so the id is null (it was never seen).
    call = {"jsonrpc": "2.0", "method": "message/send", "params": {}, "id": "r1"}
    async with httpx.AsyncClient(timeout=60) as bare:
        response = await bare.post(served.url, json=call)
    assert response.status_code == 401
    assert response.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32009, "message": "Authentication required"},
        "id": None,
    }


@pytest.mark.anyio
async def test_mixed_batch_forwards_only_allowed_calls(served: Served, http: httpx.AsyncClient) -> None:
    before = list(served.agent.seen)
    batch = [
        {"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "x"}, "id": 1},
        {"jsonrpc": "2.0", "method": "CancelTask", "params": {"id": "x"}, "id": 2},
    ]
    response = await http.post(served.url, json=batch, headers={"A2A-Version": "1.0"})
    assert response.status_code == 200
    answers = response.json()
    (denied,) = [item for item in answers if item.get("id") == 2]
    assert denied["error"]["code"] == -31403
    assert _reason(denied["error"]["data"]) == ("PERMISSION_DENIED", "Bearer")
    # a2a-sdk 1.3 refuses JSON-RPC batches as a whole; its single error object is kept in the answer.
    app_answer = [item for item in answers if item.get("id") is None]
    assert app_answer[0]["error"]["code"] == -32600
    assert served.agent.seen == before


# --- the route table is the wrapped server's: /v1/... is tenant "v1" unless 0.3 compat is served ------


@dataclass
class Compat:
    url: str
    agent: EchoAgent
    v03: bool


@pytest.fixture(scope="module", params=[False, True], ids=["sdk-default-routes", "v0_3-compat-routes"])
def compat_served(request: pytest.FixtureRequest, keycloak_idp: KeycloakIdp) -> Iterator[Compat]:
    """The real a2a-sdk REST app as ``create_rest_routes`` builds it by default (no 0.3 routes: the
    red team's setting) and with ``enable_v0_3_compat=True``; the middleware is NOT told which."""
    v03: bool = request.param
    agent = EchoAgent()
    jwks = JwksCache(jwks_uri=keycloak_idp.jwks_uri, algorithms={"RS256"})
    verifier = AccessTokenVerifier(
        issuer=keycloak_idp.issuer, audience="agent-api", azp_allowlist=None, jwks=jwks
    )

    def build(url: str) -> Starlette:
        card = _card(url)
        handler = DefaultRequestHandler(agent_executor=agent, task_store=InMemoryTaskStore(), agent_card=card)
        routes = [
            *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=v03),
            *create_rest_routes(handler, enable_v0_3_compat=v03),
        ]
        gate = Middleware(
            A2AAuthMiddleware,
            authenticators=[BearerAuthenticator(verifier)],
            policy=_tenant_policy(),
            realm="mudrika",
        )
        return Starlette(routes=routes, middleware=[gate])

    app = _LateApp(build)
    try:
        with serve_asgi(app) as base:
            app.bind(base + "/")
            yield Compat(url=base, agent=agent, v03=v03)
    finally:
        jwks.close()


def _rest_send_body(v03: bool) -> dict[str, Any]:
    message_id = str(uuid.uuid4())
    # A2A 0.3's HTTP+JSON message carries its parts as "content" (the 0.3 proto); 1.0 renamed it.
    parts_field = "content" if v03 else "parts"
    return {"message": {"messageId": message_id, "role": "ROLE_USER", parts_field: [{"text": "hi"}]}}


#: Every 0.3 route a caller can aim at "/v1/...", as (HTTP method, path, operation).
V1_REQUESTS = [
    ("POST", "/v1/message:send", "message/send"),
    ("GET", "/v1/tasks/t-1", "tasks/get"),
    ("POST", "/v1/tasks/t-1:cancel", "tasks/cancel"),
    ("GET", "/v1/tasks/t-1/pushNotificationConfigs", "tasks/pushNotificationConfig/list"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("verb", "path", "operation"), V1_REQUESTS, ids=[r[1] for r in V1_REQUESTS])
async def test_an_acme_caller_never_gets_the_agent_run_in_tenant_v1(
    compat_served: Compat, http: httpx.AsyncClient, verb: str, path: str, operation: str
) -> None:
    before = len(compat_served.agent.seen)
    body = _rest_send_body(compat_served.v03) if operation == "message/send" else None
    response = await http.request(
        verb,
        compat_served.url + path,
        json=body,
        # a2a-sdk's /v1 routes answer only 0.3 callers; a 1.0 caller gets the a2a error profile, whose
        # refusals name their reason.
        headers={"A2A-Version": "0.3" if compat_served.v03 else "1.0"},
    )
    seen = compat_served.agent.seen[before:]
    assert all(call.tenant != "v1" for call in seen)
    if compat_served.v03:
        # The 0.3 route: no tenant, so the decision is the operation's own (cancel needs an admin and
        # push configs are not in the policy: both 403) and the agent runs untenanted for send.
        if operation == "message/send":
            assert response.status_code == 200, response.text
            assert [call.tenant for call in seen] == [""]
    else:
        # Starlette's /{tenant} mount: tenant "v1", which the acme-only caller does not belong to.
        assert response.status_code == 403, response.text
        details = response.json()["error"]["details"]
        assert _reason(details)[0] == "WRONG_TENANT"
        assert seen == []


@pytest.mark.anyio
async def test_the_acme_route_still_runs_in_acme(compat_served: Compat, http: httpx.AsyncClient) -> None:
    before = len(compat_served.agent.seen)
    response = await http.post(
        compat_served.url + "/acme/message:send", json=_rest_send_body(False), headers={"A2A-Version": "1.0"}
    )
    assert response.status_code == 200, response.text
    assert [call.tenant for call in compat_served.agent.seen[before:]] == ["acme"]
