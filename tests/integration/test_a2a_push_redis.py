"""a2a-sdk 1.3's own push sender, signed by mudrika, received by the guard under uvicorn with Redis.

The agent side is a2a-sdk's ``BasePushNotificationSender`` with an ``httpx`` client on the egress
policy's transport, whose request hook is ``PushSigner.httpx_hook`` and whose URL validator is
``webhook_url_validator`` (loopback allowed explicitly: tests only target 127.0.0.1).  The receiver is ``PushNotificationGuard`` with a
``RedisReplayStore`` on a real ``redis-server``: a replayed call is 401, a call while Redis is down is
503 and never reaches the webhook.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from a2a.server.context import ServerCallContext
from a2a.server.tasks import BasePushNotificationSender, InMemoryPushNotificationConfigStore
from a2a.types.a2a_pb2 import Task, TaskPushNotificationConfig, TaskState, TaskStatus

from mudrika.crypto.keys import KeyPair
from mudrika.identity.methods import key as did_key
from mudrika.identity.resolver import DIDResolver
from mudrika.net.egress import EgressPolicy
from mudrika.stores.replay import RedisReplayStore
from mudrika.trust.a2a.push import (
    NOTIFICATION_TOKEN_HEADER,
    PUSH_SCOPE_KEY,
    PUSH_SIGNATURE_HEADER,
    PushNotificationGuard,
    PushSigner,
    webhook_url_validator,
)
from tests._support.net import free_port
from tests._support.redis_server import RedisServer
from tests._support.served import closing_on_shutdown, serve_asgi

pytestmark = pytest.mark.integration

TOKEN = "config-token-for-this-webhook"


@dataclass
class Webhook:
    received: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        message = await receive()
        self.received.append({"body": message.get("body", b""), "push": scope.get(PUSH_SCOPE_KEY)})
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


@dataclass
class Receiver:
    url: str
    webhook: Webhook
    agent_pair: KeyPair
    agent_kid: str


@pytest.fixture(scope="module")
def receiver(redis_server: RedisServer) -> Iterator[Receiver]:
    pair = KeyPair.generate("p256")
    did = did_key.create(pair.public_key)
    port = free_port()
    url = f"http://127.0.0.1:{port}/hooks/a2a"
    webhook = Webhook()
    store = RedisReplayStore(redis_server.url, socket_timeout=30, connect_timeout=30)
    guard = PushNotificationGuard(
        webhook,
        path="/hooks/a2a",
        audience=url,
        trusted_agents=[did],
        algorithms=["ES256"],
        resolver=DIDResolver.offline({}),
        replay_store=store,
        expected_token=TOKEN,
    )
    with serve_asgi(closing_on_shutdown(guard, store.aclose), port=port, lifespan="on"):
        yield Receiver(
            url=url, webhook=webhook, agent_pair=pair, agent_kid=f"{did}#{did.removeprefix('did:key:')}"
        )


class Recorder:
    """Keeps the last signed request the sender made (to replay it by hand) and the answer to it."""

    def __init__(self) -> None:
        self.last: httpx.Request | None = None
        self.status: int | None = None

    async def __call__(self, request: httpx.Request) -> None:
        self.last = request

    async def response(self, response: httpx.Response) -> None:
        self.status = response.status_code


async def _send_task_update(receiver: Receiver, recorder: Recorder, task_id: str) -> None:
    signer = PushSigner(receiver.agent_pair, kid=receiver.agent_kid)
    store = InMemoryPushNotificationConfigStore()
    config = TaskPushNotificationConfig(id="cfg-1", task_id=task_id, url=receiver.url, token=TOKEN)
    await store.set_info(task_id, config, ServerCallContext())
    hooks: dict[str, list[Any]] = {"request": [signer.httpx_hook, recorder], "response": [recorder.response]}
    # Loopback only because tests may target nothing else: an explicit, logged opt-in.
    egress = EgressPolicy(allow_private_networks=True, schemes=("http",))
    async with httpx.AsyncClient(
        transport=egress.async_transport(), event_hooks=hooks, **egress.client_options()
    ) as http:
        sender = BasePushNotificationSender(
            http, store, push_url_validator=webhook_url_validator(egress=egress)
        )
        task = Task(id=task_id, context_id="ctx-1", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))
        await sender.send_notification(task_id, task)


@pytest.mark.anyio
async def test_a2a_sdk_sender_signed_by_mudrika_reaches_the_webhook_once(receiver: Receiver) -> None:
    recorder = Recorder()
    before = len(receiver.webhook.received)
    await _send_task_update(receiver, recorder, "task-1")
    assert recorder.status == 200
    assert len(receiver.webhook.received) == before + 1
    delivered = receiver.webhook.received[-1]
    assert b"task-1" in delivered["body"]
    assert delivered["push"]["iss"] == receiver.agent_kid.split("#")[0]

    # The exact same call again (same JWT, same jti): refused by the Redis-backed claim.
    request = recorder.last
    assert request is not None
    assert PUSH_SIGNATURE_HEADER in request.headers
    assert request.headers[NOTIFICATION_TOKEN_HEADER] == TOKEN
    async with httpx.AsyncClient(timeout=60) as http:
        replay = await http.post(receiver.url, content=request.content, headers=dict(request.headers))
    assert replay.status_code == 401
    assert len(receiver.webhook.received) == before + 1


@pytest.mark.anyio
async def test_redis_down_fails_closed_with_503(receiver: Receiver, redis_server: RedisServer) -> None:
    recorder = Recorder()
    before = len(receiver.webhook.received)
    redis_server.stop()
    try:
        await _send_task_update(receiver, recorder, "task-2")  # a2a-sdk logs the failure, best effort
        assert recorder.status == 503
        assert len(receiver.webhook.received) == before
    finally:
        redis_server.start()
