"""A REAL a2a-sdk 1.3 agent (uvicorn on 127.0.0.1) gating execution with the policy's cost gate.

The executor reads the seed's ``ExecutionRequest`` from the message's data part, asks
``Policy.decide_execution`` with the tenant a2a-sdk put in the call context (JSON-RPC
``params.tenant`` or the REST ``/{tenant}`` prefix) and turns a denial into the A2A task state with
``report_decision``.  The a2a-sdk client sees ``TASK_STATE_AUTH_REQUIRED`` /
``TASK_STATE_INPUT_REQUIRED`` / ``TASK_STATE_REJECTED`` with the seed's state in the metadata.

Authentication itself is the middleware's job (tested elsewhere); here a small ASGI shim stands in for
it and puts the principal for the DID named in ``X-Test-Caller-Did`` into ``scope["auth"]`` — the
place a2a-sdk's call-context builder reads ``state["auth"]`` from.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
from google.protobuf.struct_pb2 import Value  # type: ignore[import-untyped]
from starlette.applications import Starlette

from mudrika.trust.a2a.task_states import REASON_KEY, SEED_STATE_KEY, report_decision
from mudrika.trust.models import AgentExecutionCost, ExecutionRequest
from mudrika.trust.policy import Policy, Principal
from tests._support.net import free_port
from tests._support.served import serve_asgi

pytestmark = pytest.mark.integration

MEMBER = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
STRANGER = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
COST = AgentExecutionCost(
    agent_id="echo-agent",
    agent_name="Echo",
    credits_per_request=5,
    creator_did=MEMBER,
    minimum_trust_level="operator",  # type: ignore[arg-type]
)


def _policy() -> Policy:
    return Policy.from_document(
        {
            "version": 1,
            "roles": [{"role_id": "r1", "role_name": "agent", "trust_level": "operator", "realm_name": "m"}],
            "operations": {"message/send": {"min_level": "operator"}},
            "did_roles": {MEMBER: {"roles": ["agent"], "tenants": ["acme"]}},
        }
    )


@dataclass
class GatedAgent(AgentExecutor):
    policy: Policy

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        assert context.call_context is not None
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        principal = context.call_context.state.get("auth")
        if not isinstance(principal, Principal):
            principal = Principal.anonymous()
        data = MessageToDict(context.message.parts[0].data)
        decision = self.policy.decide_execution(
            principal,
            request=ExecutionRequest.model_validate(data),
            cost=COST,
            tenant=context.call_context.tenant,
        )
        if await report_decision(decision, updater):
            return
        await updater.complete(updater.new_agent_message([Part(text="executed")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


def caller_shim(app: ASGIApp, policy: Policy) -> ASGIApp:
    """Stand-in for the authentication middleware: the DID in X-Test-Caller-Did is "authenticated"."""

    async def shim(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            did = headers.get(b"x-test-caller-did")
            scope["auth"] = policy.principal_for_did(did.decode()) if did else Principal.anonymous()
        await app(scope, receive, send)

    return shim


@dataclass
class Served:
    url: str
    card: AgentCard


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="gated",
        description="executes for entitled callers",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0"),
            AgentInterface(protocol_binding="HTTP+JSON", url=url.rstrip("/"), protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["application/json"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="run", name="run", description="run", tags=["run"])],
    )
    policy = _policy()
    handler = DefaultRequestHandler(
        agent_executor=GatedAgent(policy), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/"),
        *create_rest_routes(handler),
    ]
    app = caller_shim(Starlette(routes=routes), policy)
    with serve_asgi(app, port=port):
        yield Served(url=url, card=card)


@pytest.fixture
async def http_for() -> AsyncIterator[Callable[[str | None], httpx.AsyncClient]]:
    clients: list[httpx.AsyncClient] = []

    def make(did: str | None) -> httpx.AsyncClient:
        headers = {"X-Test-Caller-Did": did} if did else {}
        client = httpx.AsyncClient(headers=headers, timeout=60)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


def _request(tenant: str, **overrides: Any) -> SendMessageRequest:
    fields: dict[str, Any] = {
        "requestId": str(uuid.uuid4()),
        "executorDid": MEMBER,
        "agentId": "echo-agent",
        "inputData": "hello",
        "estimatedCredits": 5,
        "trustLevel": "operator",
    } | overrides
    value = Value()
    value.struct_value.update(fields)
    message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(data=value)])
    return SendMessageRequest(tenant=tenant, message=message)


async def _final_state(
    served: Served, http: httpx.AsyncClient, binding: str, request: SendMessageRequest
) -> Any:
    config = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=[binding])
    client = ClientFactory(config).create(served.card)
    events = [event async for event in client.send_message(request)]
    return events[-1].task.status


BINDINGS = ["JSONRPC", "HTTP+JSON"]


@pytest.mark.anyio
@pytest.mark.parametrize("binding", BINDINGS)
async def test_entitled_caller_in_its_tenant_executes(served: Served, http_for: Any, binding: str) -> None:
    status = await _final_state(served, http_for(MEMBER), binding, _request("acme"))
    assert status.state == TaskState.TASK_STATE_COMPLETED
    assert status.message.parts[0].text == "executed"


@pytest.mark.anyio
@pytest.mark.parametrize("binding", BINDINGS)
async def test_other_tenant_is_rejected(served: Served, http_for: Any, binding: str) -> None:
    status = await _final_state(served, http_for(MEMBER), binding, _request("globex"))
    assert status.state == TaskState.TASK_STATE_REJECTED


@pytest.mark.anyio
@pytest.mark.parametrize("binding", BINDINGS)
async def test_unknown_caller_gets_auth_required(served: Served, http_for: Any, binding: str) -> None:
    request = _request("", executorDid=STRANGER)
    status = await _final_state(served, http_for(STRANGER), binding, request)
    assert status.state == TaskState.TASK_STATE_AUTH_REQUIRED
    assert status.message.parts[0].text  # §7.6.1: a status message explains the state


@pytest.mark.anyio
async def test_overstated_trust_gets_trust_verification_required(served: Served, http_for: Any) -> None:
    config = ClientConfig(httpx_client=http_for(MEMBER), streaming=False)
    client = ClientFactory(config).create(served.card)
    events = [event async for event in client.send_message(_request("acme", trustLevel="admin"))]
    task = events[-1].task
    assert task.status.state == TaskState.TASK_STATE_AUTH_REQUIRED
    metadata = MessageToDict(task.status.message.metadata)
    assert metadata == {SEED_STATE_KEY: "trust-verification-required", REASON_KEY: "insufficient_trust"}


@pytest.mark.anyio
async def test_too_few_credits_gets_payment_required(served: Served, http_for: Any) -> None:
    config = ClientConfig(httpx_client=http_for(MEMBER), streaming=False)
    client = ClientFactory(config).create(served.card)
    events = [event async for event in client.send_message(_request("acme", estimatedCredits=1))]
    task = events[-1].task
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert MessageToDict(task.status.message.metadata)[SEED_STATE_KEY] == "payment-required"
