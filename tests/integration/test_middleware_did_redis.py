"""DID-signed requests from a standard RFC 9421 signer through the wiring the docs show.

The whole path, with real components: a request signed by the PyPI ``http-message-signatures``
package (no mudrika code on the client, no ``tag``), sent over real HTTP to a uvicorn server on
127.0.0.1 running a real a2a-sdk 1.3 app behind :func:`mudrika.trust.middleware.protect`, whose
nonces go to a real ``redis-server`` this module starts (its own, so stopping it disturbs nobody).
The signer's roles come from the policy file's ``did_roles`` (no ``roles_for=``), as docs/replay.md
configures it.  Covered: accepted once (200, the agent runs), replay (401, ``REPLAYED_REQUEST``),
another origin (401, ``WRONG_AUDIENCE``), Redis down (503, the agent never runs), and the ASGI
lifespan shutdown closing the replay store.
"""

from __future__ import annotations

import base64
import datetime as dt
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers.proto_helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface
from http_message_signatures import HTTPMessageSigner, MappingKeyResolver, algorithms
from starlette.applications import Starlette

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import UnavailableError
from mudrika.stores.replay import RedisReplayStore
from mudrika.trust.middleware import ProtectedApp, protect
from tests._support.redis_server import RedisServer, private_redis_server
from tests._support.served import serve_asgi

pytestmark = pytest.mark.integration

PUBLIC_ORIGIN = "https://agent.example"


@dataclass
class CountingAgent(AgentExecutor):
    """Answers ``ok`` and records the principal subject a2a-sdk's call context carries."""

    callers: list[str] = field(default_factory=list)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        user = context.call_context.user if context.call_context is not None else None
        self.callers.append(user.user_name if user is not None else "")
        await event_queue.enqueue_event(new_text_message("ok"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.callers.append("cancel")


@dataclass
class Deployment:
    base: str
    agent: CountingAgent
    redis: RedisServer
    app: ProtectedApp
    key: KeyPair
    keyid: str


@pytest.fixture(scope="module")
def private_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with private_redis_server(tmp_path_factory.mktemp("redis-did")) as server:
        yield server


def _policy_file(directory: Path, did: str) -> Path:
    # The policy file as docs/replay.md writes it: roles, operations, and the signer in did_roles.
    path = directory / "policy.yaml"
    path.write_text(
        "version: 1\n"
        "roles:\n"
        "  - {role_id: r-1, role_name: agent, realm_name: agents, trust_level: operator}\n"
        "operations:\n"
        "  message/send: {min_level: operator}\n"
        "  tasks/cancel: {min_level: admin}\n"
        "did_roles:\n"
        f'  "{did}": {{roles: [agent]}}\n'
    )
    return path


def _a2a_app(agent: CountingAgent) -> Starlette:
    card = AgentCard(
        name="signed",
        description="answers ok",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=PUBLIC_ORIGIN + "/", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    handler = DefaultRequestHandler(agent_executor=agent, task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_jsonrpc_routes(handler, rpc_url="/"), *create_rest_routes(handler)])


@pytest.fixture(scope="module")
def deployment(private_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    key = KeyPair.generate(KeyType.ED25519)
    multikey = key.public_key.to_multikey()
    did = f"did:key:{multikey}"
    agent = CountingAgent()
    store = RedisReplayStore(private_redis.url, namespace=f"test-{uuid.uuid4().hex}")
    app = protect(
        _a2a_app(agent),
        policy=_policy_file(tmp_path_factory.mktemp("policy"), did),
        public_origin=PUBLIC_ORIGIN,
        replay_store=store,
    )
    with serve_asgi(app, lifespan="on") as url:
        yield Deployment(url, agent, private_redis, app, key, f"{did}#{multikey}")


def _signed(deployment: Deployment, *, origin: str = PUBLIC_ORIGIN) -> httpx.Request:
    """A JSON-RPC SendMessage signed by http-message-signatures for ``origin``, then addressed to the
    loopback server (the signed URL is the public one, as behind a TLS-terminating proxy)."""
    body = (
        b'{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":'
        b'{"role":"ROLE_USER","messageId":"' + uuid.uuid4().hex.encode() + b'","parts":[{"text":"hi"}]}}}'
    )
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    request = httpx.Request("POST", origin + "/", content=body, headers=headers)
    private = deployment.key.to_cryptography()
    resolver = MappingKeyResolver(
        public_keys={deployment.keyid: private.public_key()}, private_keys={deployment.keyid: private}
    )
    created = dt.datetime.now(dt.UTC)
    HTTPMessageSigner(signature_algorithm=algorithms.ED25519, key_resolver=resolver).sign(
        request,
        key_id=deployment.keyid,
        created=created,
        expires=created + dt.timedelta(seconds=60),
        nonce=base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("="),
        label="sig1",
        covered_component_ids=["@method", "@target-uri", "content-type"],
        body=body,
    )
    assert "tag=" not in request.headers["signature-input"]
    return httpx.Request("POST", deployment.base + "/", content=body, headers=request.headers)


def _send(request: httpx.Request) -> httpx.Response:
    with httpx.Client(timeout=60) as client:
        return client.send(request)


def _reason(response: httpx.Response) -> tuple[str, Any]:
    (info,) = response.json()["error"]["data"]
    return info["reason"], info["metadata"].get("scheme")


def test_standard_signer_gets_did_roles_from_the_policy_then_replay_is_refused(
    deployment: Deployment,
) -> None:
    request = _signed(deployment)
    before = len(deployment.agent.callers)
    first = _send(request)
    assert first.status_code == 200, first.text
    assert first.json()["result"]["message"]["parts"][0]["text"] == "ok"
    assert deployment.agent.callers[before:] == [deployment.keyid.split("#")[0]]
    again = _send(request)
    assert again.status_code == 401
    assert again.headers["www-authenticate"].startswith('Signature realm="a2a"')
    assert _reason(again) == ("REPLAYED_REQUEST", "http-message-signature")
    assert again.json()["error"]["message"] == "Request already used"  # never "Invalid token"
    assert len(deployment.agent.callers) == before + 1


def test_request_signed_for_another_origin_is_wrong_audience(deployment: Deployment) -> None:
    signed = _signed(deployment, origin="https://other-agent.example")
    before = len(deployment.agent.callers)
    response = _send(signed)
    assert response.status_code == 401
    assert _reason(response) == ("WRONG_AUDIENCE", "http-message-signature")
    assert len(deployment.agent.callers) == before


def test_seed_profile_names_the_signature_scheme_too(deployment: Deployment) -> None:
    request = _signed(deployment)
    del request.headers["a2a-version"]  # not signed; a 0.3 client sends none
    assert _send(request).status_code == 200
    again = _send(request)
    assert again.status_code == 401
    assert again.json()["error"] == {"code": -32010, "message": "Request already used"}


def test_redis_down_fails_closed_with_503(deployment: Deployment) -> None:
    before = len(deployment.agent.callers)
    deployment.redis.stop()
    try:
        response = _send(_signed(deployment))
    finally:
        deployment.redis.start()
    assert response.status_code == 503
    assert response.headers["retry-after"]
    assert _reason(response) == ("AUTHENTICATION_UNAVAILABLE", "http-message-signature")
    assert len(deployment.agent.callers) == before
    assert _send(_signed(deployment)).status_code == 200  # back once Redis is


@pytest.mark.anyio
async def test_lifespan_shutdown_closes_the_replay_store(private_redis: RedisServer, tmp_path: Path) -> None:
    store = RedisReplayStore(private_redis.url, namespace=f"test-{uuid.uuid4().hex}")
    assert await store.aclaim("before-shutdown", dt.datetime.now(dt.UTC).timestamp() + 60)
    app = protect(
        _a2a_app(CountingAgent()),
        policy=_policy_file(tmp_path, "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"),
        public_origin=PUBLIC_ORIGIN,
        replay_store=store,
    )
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: Any) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    with pytest.raises(UnavailableError) as info:
        await store.aclaim("after-shutdown", dt.datetime.now(dt.UTC).timestamp() + 60)
    assert info.value.code == "replay_store_closed"
