"""The middleware in front of a REAL a2a-sdk 1.3 server (uvicorn on 127.0.0.1), called through the
a2a-sdk client with Keycloak-shaped tokens from the IdP peer.

Allowed calls reach the echo agent; denied ones get the exact JSON-RPC error and never reach it.
The policy (tests/_support/tokenfactory.demo_policy): realm role ``agent`` is an operator, who may
send messages and read tasks but not cancel them (admin).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn
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
from starlette.applications import Starlette

from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator
from tests._support.idp import KeycloakIdp
from tests._support.net import free_port, wait_listening
from tests._support.tokenfactory import demo_policy

pytestmark = pytest.mark.integration


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class EchoAgent(AgentExecutor):
    """Answers every message with ``echo: <text>`` and remembers who asked."""

    users: list[str] = field(default_factory=list)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        user = context.call_context.user if context.call_context is not None else None
        self.users.append(user.user_name if user is not None else "")
        await event_queue.enqueue_event(new_text_message("echo: " + context.get_user_input()))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.users.append("cancel")


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


@pytest.fixture(scope="module")
def served(keycloak_idp: KeycloakIdp) -> Iterator[Served]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    card = _card(url)
    agent = EchoAgent()
    handler = DefaultRequestHandler(agent_executor=agent, task_store=InMemoryTaskStore(), agent_card=card)
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/"),
        *create_rest_routes(handler),
    ]
    jwks = JwksCache(jwks_uri=keycloak_idp.jwks_uri, algorithms={"RS256"})
    verifier = AccessTokenVerifier(
        issuer=keycloak_idp.issuer, audience="agent-api", azp_allowlist=None, jwks=jwks
    )
    app = A2AAuthMiddleware(
        Starlette(routes=routes),
        authenticators=[BearerAuthenticator(verifier)],
        policy=demo_policy(),
        realm="mudrika",
    )
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_listening(port)
        yield Served(url=url, agent=agent, card=card)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        jwks.close()


@pytest.fixture
async def http(keycloak_idp: KeycloakIdp) -> AsyncIterator[httpx.AsyncClient]:
    token = keycloak_idp.client_credentials_token("agent-gateway")
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as client:
        yield client


def _message(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    )


def _denial(exc: BaseException) -> tuple[int, dict[str, Any]]:
    cause = exc.__cause__
    assert isinstance(cause, httpx.HTTPStatusError)
    body: dict[str, Any] = cause.response.json()
    return cause.response.status_code, body


@pytest.mark.anyio
async def test_allowed_send_reaches_the_agent(
    served: Served, http: httpx.AsyncClient, keycloak_idp: KeycloakIdp
) -> None:
    client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(served.card)
    before = len(served.agent.users)
    events = [event async for event in client.send_message(_message("hello"))]
    assert events[0].message.parts[0].text == "echo: hello"
    assert served.agent.users[before:] == [keycloak_idp.client("agent-gateway").service_account_id]


@pytest.mark.anyio
async def test_allowed_send_over_rest_binding(served: Served, http: httpx.AsyncClient) -> None:
    config = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=["HTTP+JSON"])
    client = ClientFactory(config).create(served.card)
    events = [event async for event in client.send_message(_message("rest"))]
    assert events[0].message.parts[0].text == "echo: rest"


@pytest.mark.anyio
async def test_get_task_allowed_reaches_the_app(served: Served, http: httpx.AsyncClient) -> None:
    client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(served.card)
    with pytest.raises(Exception) as info:  # noqa: PT011 - the app's own "task not found"
        await client.get_task(GetTaskRequest(id="no-such-task"))
    assert type(info.value).__name__ == "TaskNotFoundError"  # answered by a2a-sdk, not by us


@pytest.mark.anyio
async def test_denied_cancel_gets_exact_error(served: Served, http: httpx.AsyncClient) -> None:
    client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(served.card)
    before = list(served.agent.users)
    with pytest.raises(A2AClientError) as info:
        await client.cancel_task(CancelTaskRequest(id="t-1"))
    status, body = _denial(info.value)
    assert status == 403
    assert body["error"] == {"code": -32013, "message": "Forbidden"}
    assert served.agent.users == before


@pytest.mark.anyio
async def test_denied_cancel_over_rest_binding(served: Served, http: httpx.AsyncClient) -> None:
    config = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=["HTTP+JSON"])
    client = ClientFactory(config).create(served.card)
    with pytest.raises(A2AClientError) as info:
        await client.cancel_task(CancelTaskRequest(id="t-1"))
    status, body = _denial(info.value)
    assert status == 403
    assert body["error"]["code"] == -32013


@pytest.mark.anyio
async def test_no_token_gets_authentication_required(served: Served) -> None:
    async with httpx.AsyncClient(timeout=10) as bare:
        client = ClientFactory(ClientConfig(httpx_client=bare, streaming=False)).create(served.card)
        with pytest.raises(A2AClientError) as info:
            async for _ in client.send_message(_message("anonymous")):
                pass
        status, body = _denial(info.value)
        assert status == 401
        assert body["error"] == {"code": -32009, "message": "Authentication required"}
        card = await bare.get(served.url + ".well-known/agent-card.json")
        assert card.status_code == 200  # the agent card stays public


@pytest.mark.anyio
async def test_token_for_another_audience_is_invalid(served: Served, keycloak_idp: KeycloakIdp) -> None:
    token = keycloak_idp.client_credentials_token("payments-agent")
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as other:
        client = ClientFactory(ClientConfig(httpx_client=other, streaming=False)).create(served.card)
        with pytest.raises(A2AClientError) as info:
            async for _ in client.send_message(_message("wrong audience")):
                pass
        status, body = _denial(info.value)
        assert status == 401
        assert body["error"]["code"] == -32010


@pytest.mark.anyio
async def test_mixed_batch_forwards_only_allowed_calls(served: Served, http: httpx.AsyncClient) -> None:
    before = list(served.agent.users)
    batch = [
        {"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "x"}, "id": 1},
        {"jsonrpc": "2.0", "method": "CancelTask", "params": {"id": "x"}, "id": 2},
    ]
    response = await http.post(served.url, json=batch, headers={"A2A-Version": "1.0"})
    assert response.status_code == 200
    answers = response.json()
    denied = [item for item in answers if item.get("id") == 2]
    assert denied == [{"jsonrpc": "2.0", "error": {"code": -32013, "message": "Forbidden"}, "id": 2}]
    # a2a-sdk 1.3 refuses JSON-RPC batches as a whole; its single error object is kept in the answer.
    app_answer = [item for item in answers if item.get("id") is None]
    assert app_answer[0]["error"]["code"] == -32600
    assert served.agent.users == before
