"""Web Bot Auth and TAP agents through :func:`protect` in front of a real a2a-sdk 1.3 app on uvicorn.

The policy file maps agents to roles with ``agent_roles`` (the sibling of ``did_roles``); the agents
sign with mudrika's ``httpx`` auth classes.  Covered: an agent with a role gets 200 and the executor
sees its principal; an agent with no entry gets 403 and never consumes the replay store; a replayed
request gets 401 ``REPLAYED_REQUEST``; a TAP payer with a role gets 200; a DID signer still passes
through the same wiring unchanged.
"""

from __future__ import annotations

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
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface
from starlette.applications import Starlette

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    DidSignatureAuth,
    HttpMessageSigner,
    StaticDirectories,
    TrustedAgentAuth,
    TrustedAgentSigner,
    WebBotAuth,
    WebBotAuthSigner,
)
from mudrika.trust.middleware import protect
from tests._support.net import free_port
from tests._support.served import serve_asgi

pytestmark = pytest.mark.integration

ALLOWED = "https://crawler.example"
UNLISTED = "https://stranger.example"
REGISTRY = "https://registry.example/.well-known/jwks"


@dataclass
class RecordingAgent(AgentExecutor):
    callers: list[str] = field(default_factory=list)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        user = context.call_context.user if context.call_context is not None else None
        self.callers.append(user.user_name if user is not None else "")
        await event_queue.enqueue_event(new_text_message("ok"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.callers.append("cancel")


@dataclass
class Site:
    base: str
    agent: RecordingAgent
    store: MemoryReplayStore
    keys: dict[str, KeyPair]
    did_key: KeyPair


def _policy(directory: Path, did: str) -> Path:
    path = directory / "policy.yaml"
    path.write_text(
        "version: 1\n"
        "roles:\n"
        "  - {role_id: r-1, role_name: agent, realm_name: agents, trust_level: operator}\n"
        "operations:\n"
        "  message/send: {min_level: operator}\n"
        "did_roles:\n"
        f'  "{did}": {{roles: [agent]}}\n'
        "agent_roles:\n"
        f'  "web-bot-auth:{ALLOWED}": {{roles: [agent]}}\n'
        f'  "agent-payer-auth:{REGISTRY}#payer-1": {{roles: [agent]}}\n'
    )
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    keys = {name: KeyPair.generate(KeyType.ED25519) for name in (ALLOWED, UNLISTED, "payer-1")}
    did_key = KeyPair.generate(KeyType.ED25519)
    did = f"did:key:{did_key.public_key.to_multikey()}"
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="shop",
        description="answers ok",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=origin + "/", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    agent = RecordingAgent()
    handler = DefaultRequestHandler(agent_executor=agent, task_store=InMemoryTaskStore(), agent_card=card)
    store = MemoryReplayStore()
    directories = {url: {"keys": [keys[url].public_key.to_jwk()]} for url in (ALLOWED, UNLISTED)}
    registry = {"keys": [{**keys["payer-1"].public_key.to_jwk(), "kid": "payer-1"}]}
    app = protect(
        Starlette(routes=create_jsonrpc_routes(handler, rpc_url="/")),
        policy=_policy(tmp_path_factory.mktemp("policy"), did),
        public_origin=origin,
        replay_store=store,
        web_agents=StaticDirectories(directories),
        tap_registry=REGISTRY,
        tap_keys=StaticDirectories({REGISTRY: registry}),
    )
    with serve_asgi(app, port=port):
        yield Site(origin, agent, store, keys, did_key)


def _body() -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":'
        b'{"role":"ROLE_USER","messageId":"' + uuid.uuid4().hex.encode() + b'","parts":[{"text":"hi"}]}}}'
    )


def _post(site: Site, auth: httpx.Auth) -> tuple[httpx.Response, httpx.Request]:
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    with httpx.Client(auth=auth, timeout=10) as client:
        response = client.post(site.base + "/", content=_body(), headers=headers)
    return response, response.request


def _reason(response: httpx.Response) -> tuple[str, Any]:
    (info,) = response.json()["error"]["data"]
    return info["reason"], info["metadata"].get("scheme")


def test_agent_with_a_role_is_served_then_replay_is_refused(site: Site) -> None:
    before = len(site.agent.callers)
    response, request = _post(site, WebBotAuth(WebBotAuthSigner(site.keys[ALLOWED], signature_agent=ALLOWED)))
    assert response.status_code == 200, response.text
    assert site.agent.callers[before:] == [f"web-bot-auth:{ALLOWED}"]
    with httpx.Client(timeout=10) as client:
        again = client.send(request)
    assert again.status_code == 401
    assert _reason(again) == ("REPLAYED_REQUEST", "http-message-signature")
    assert len(site.agent.callers) == before + 1


def test_agent_without_a_role_is_forbidden_and_claims_nothing(site: Site) -> None:
    before = len(site.agent.callers)
    response, request = _post(
        site, WebBotAuth(WebBotAuthSigner(site.keys[UNLISTED], signature_agent=UNLISTED))
    )
    assert response.status_code == 403
    assert _reason(response)[0] == "PERMISSION_DENIED"
    # Denied before the claim: the same request is denied again (403), never "already used" (401).
    with httpx.Client(timeout=10) as client:
        assert client.send(request).status_code == 403
    assert len(site.agent.callers) == before


def test_tap_payer_with_a_role_is_served(site: Site) -> None:
    signer = TrustedAgentSigner(site.keys["payer-1"], "payer-1", tag="agent-payer-auth")
    response, _ = _post(site, TrustedAgentAuth(signer))
    assert response.status_code == 200, response.text
    assert site.agent.callers[-1] == f"agent-payer-auth:{REGISTRY}#payer-1"


def test_did_signers_pass_through_the_same_wiring(site: Site) -> None:
    keyid = f"did:key:{site.did_key.public_key.to_multikey()}#{site.did_key.public_key.to_multikey()}"
    response, _ = _post(site, DidSignatureAuth(HttpMessageSigner(site.did_key, keyid)))
    assert response.status_code == 200, response.text
    assert site.agent.callers[-1] == keyid.split("#", maxsplit=1)[0]
