"""The protected-server gate attacked from outside: every request is one a hostile caller can send,
against a REAL server behind the gate (a2a-sdk 1.3's own Starlette routes, the MCP SDK's streamable
HTTP server, or a plain Starlette app that records the exact bytes it was handed).

Why a red-team file apart from the attack matrix: the gate names the operation (and the tenant, and
the activated extensions) from its own reading of the request, and the server re-reads the same
request to run it.  Every test here asserts both sides: what the gate answered *and* exactly what
the server ran (which handler, in which tenant, with which extensions, or nothing at all), so a
reading where the two disagree cannot pass unnoticed.  The two findings of this review (an A2A 0.3
call naming a tenant; the 0.3 extension header on an A2A 1.0 call) come first; the attack classes
that held follow, each with its strongest cases.
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import pytest
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import TaskNotFoundError
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mudrika.errors import InvalidInput
from mudrika.trust.a2a.extensions import MAX_EXTENSIONS
from mudrika.trust.a2a.methods import (
    A2A_V03_METHODS,
    A2A_V10_METHODS,
    STREAMING_OPERATIONS,
    is_v03_route,
    operation_for_method,
)
from mudrika.trust.jsonrpc import InvalidSignature
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.levels import TrustLevel
from mudrika.trust.middleware import (
    A2AAuthMiddleware,
    A2ARoutes,
    Authenticated,
    AuthRequest,
    BearerAuthenticator,
    Limits,
    protect,
)
from mudrika.trust.models import KeycloakRole
from mudrika.trust.policy import OperationRule, Policy, Principal
from tests._support.tokenfactory import Clock, LocalRealm, realm_jwks

pytestmark = pytest.mark.security

URI = "https://extensions.example/required/v1"
# --- a real a2a-sdk server whose handler records what it ran ------------------------------------


@dataclass(frozen=True)
class Ran:
    """One call a2a-sdk ran: the handler, the tenant and the extensions of its ServerCallContext."""

    handler: str
    tenant: str
    extensions: frozenset[str] = frozenset()


def _reply() -> Message:
    return Message(message_id="reply", role=Role.ROLE_AGENT, parts=[Part(text="ok")])


@dataclass
class SpyHandler(RequestHandler):
    """a2a-sdk's request-handler interface: each method records the call, then answers (a message
    for sends, "task not found" for the rest, so no store is needed)."""

    ran: list[Ran] = field(default_factory=list)

    def _record(self, handler: str, context: ServerCallContext) -> None:
        self.ran.append(Ran(handler, context.tenant, frozenset(context.requested_extensions)))

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        self._record("tasks/get", context)
        raise TaskNotFoundError

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        self._record("tasks/list", context)
        raise TaskNotFoundError

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        self._record("tasks/cancel", context)
        raise TaskNotFoundError

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        self._record("message/send", context)
        return _reply()

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        self._record("message/stream", context)
        yield _reply()

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        self._record("tasks/pushNotificationConfig/set", context)
        raise TaskNotFoundError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        self._record("tasks/pushNotificationConfig/get", context)
        raise TaskNotFoundError

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        self._record("tasks/resubscribe", context)
        events: list[Event] = []  # none: an async generator (as the interface wants) that refuses
        for event in events:
            yield event
        raise TaskNotFoundError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        self._record("tasks/pushNotificationConfig/list", context)
        raise TaskNotFoundError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        self._record("tasks/pushNotificationConfig/delete", context)
        raise TaskNotFoundError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        self._record("agent/getAuthenticatedExtendedCard", context)
        raise TaskNotFoundError


def _card() -> AgentCard:
    return AgentCard(
        name="spy",
        description="records what it runs",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url="http://agent.test/", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="spy", name="spy", description="spy", tags=["spy"])],
    )


def _sdk_app(handler: SpyHandler, *, v03: bool) -> Starlette:
    return Starlette(
        routes=[
            *create_agent_card_routes(_card()),
            *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=v03),
            *create_rest_routes(handler, enable_v0_3_compat=v03),
        ]
    )


#: Every operation the spy can run, and the realm roles of the callers the tests use.
ALL_OPERATIONS = (
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/list",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
)
ADMIN_ONLY = frozenset(
    {"tasks/cancel", "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/delete"}
)


def _policy(*, require_tenant: bool = False) -> Policy:
    """``agent`` is an operator (everything but cancel and push set/delete), ``boss`` an admin;
    token callers' tenants come from the ``organization`` claim."""
    roles = [
        KeycloakRole(role_id="r1", role_name="agent", trust_level=TrustLevel.OPERATOR, realm_name="mudrika"),
        KeycloakRole(role_id="r2", role_name="boss", trust_level=TrustLevel.ADMIN, realm_name="mudrika"),
    ]
    operations = {
        name: OperationRule(min_level=TrustLevel.ADMIN if name in ADMIN_ONLY else TrustLevel.OPERATOR)
        for name in ALL_OPERATIONS
    }
    return Policy(
        roles=roles, operations=operations, tenant_claim="organization", require_tenant=require_tenant
    )


@pytest.fixture
def realm() -> LocalRealm:
    return LocalRealm(Clock())


@pytest.fixture
def jwks(realm: LocalRealm) -> Iterator[JwksCache]:
    with realm_jwks(realm) as cache:
        yield cache


def _bearer(realm: LocalRealm, jwks: JwksCache, *, by_azp: bool = False) -> BearerAuthenticator:
    """Tokens of ``realm`` for its audience, or (``by_azp``) for the ``agent-gateway`` client only."""
    verifier = AccessTokenVerifier(
        issuer=realm.issuer,
        audience=None if by_azp else realm.audience,
        azp_allowlist={"agent-gateway"} if by_azp else None,
        jwks=jwks,
        clock=realm.clock,
    )
    return BearerAuthenticator(verifier)


@dataclass
class Sdk:
    """The gate in front of a real a2a-sdk app, and an httpx client of the gate."""

    gate: A2AAuthMiddleware
    handler: SpyHandler
    http: httpx.AsyncClient


@pytest.fixture
async def build(realm: LocalRealm, jwks: JwksCache) -> AsyncIterator[Any]:
    clients: list[httpx.AsyncClient] = []

    def make(*, v03: bool = False, require_tenant: bool = False, required: Sequence[str] = ()) -> Sdk:
        handler = SpyHandler()
        gate = A2AAuthMiddleware(
            _sdk_app(handler, v03=v03),
            authenticators=[_bearer(realm, jwks)],
            policy=_policy(require_tenant=require_tenant),
            routes=A2ARoutes(enable_v0_3_compat=v03, required_extensions=required),
        )
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://agent.test")
        clients.append(http)
        return Sdk(gate, handler, http)

    yield make
    for http in clients:
        await http.aclose()


def _auth(realm: LocalRealm, *, roles: Sequence[str] = ("agent",), **claims: Any) -> dict[str, str]:
    claims.setdefault("organization", ["acme"])
    return {"authorization": f"Bearer {realm.token(realm_access={'roles': list(roles)}, **claims)}"}


V10 = {"a2a-version": "1.0"}
MESSAGE_V10 = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
MESSAGE_V03 = {
    "kind": "message",
    "messageId": "m1",
    "role": "user",
    "parts": [{"kind": "text", "text": "hi"}],
}


def _rpc(method: str, params: Mapping[str, Any], request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)}


# --- finding 1: an A2A 0.3 call naming a tenant ---------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("require_tenant", [False, True])
@pytest.mark.parametrize(
    ("method", "params"),
    [("message/send", {"message": MESSAGE_V03}), ("tasks/get", {"id": "t1"})],
)
async def test_an_a2a_03_call_naming_a_tenant_is_refused_never_run_in_none(
    build: Any, realm: LocalRealm, require_tenant: bool, method: str, params: dict[str, Any]
) -> None:
    # Before the fix the gate decided this call in tenant "acme" (the caller's) and a2a-sdk's 0.3
    # adapter, which has no tenant, ran it in tenant "" -- past require_tenant, and with the scope
    # saying "acme" while the agent's ServerCallContext said "".
    sdk = build(v03=True, require_tenant=require_tenant)
    answer = await sdk.http.post("/", json=_rpc(method, {**params, "tenant": "acme"}), headers=_auth(realm))
    assert (answer.status_code, answer.json()["error"]["code"], answer.json()["id"]) == (400, -32600, 1)
    assert sdk.handler.ran == []


@pytest.mark.anyio
@pytest.mark.parametrize("entry", ["single call", "batch"])
@pytest.mark.parametrize("method", sorted(A2A_V03_METHODS | set(A2A_V10_METHODS)))
async def test_the_03_tenant_rule_holds_for_every_method_and_entry_point(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder, method: str, entry: str
) -> None:
    """Generated from the method tables, so a method added to either generation gets its cases: an
    A2A 0.3 method naming a tenant is refused as invalid and never forwarded, as a single call and
    inside a batch; an A2A 1.0 method is not touched by the rule (its tenant reaches the app), except
    a streaming one inside a batch, which a batch cannot carry at all."""
    call = _rpc(method, {"tenant": "acme"})
    answer = await plain.post(
        "/", json=call if entry == "single call" else [call], headers=_auth(realm, roles=("boss",))
    )
    streaming_in_batch = entry == "batch" and operation_for_method(method) in STREAMING_OPERATIONS
    if method in A2A_V03_METHODS or streaming_in_batch:
        errors = answer.json() if entry == "batch" else [answer.json()]
        assert (answer.status_code, [error["error"]["code"] for error in errors]) == (400, [-32600])
        assert recorder.raw == []
    else:
        assert answer.status_code == 200
        (scope,) = recorder.scopes
        assert scope["state"]["mudrika.tenants"] == ("acme",)


@pytest.mark.anyio
async def test_tenants_stay_what_the_server_runs_for_both_generations(build: Any, realm: LocalRealm) -> None:
    sdk = build(v03=True)
    named = await sdk.http.post(
        "/",
        json=_rpc("SendMessage", {"message": MESSAGE_V10, "tenant": "acme"}),
        headers={**_auth(realm), **V10},
    )
    unnamed = await sdk.http.post(
        "/", json=_rpc("message/send", {"message": MESSAGE_V03}), headers=_auth(realm)
    )
    empty = await sdk.http.post(
        "/", json=_rpc("message/send", {"message": MESSAGE_V03, "tenant": ""}), headers=_auth(realm)
    )
    assert [named.status_code, unnamed.status_code, empty.status_code] == [200, 200, 200]
    assert sdk.handler.ran == [Ran("message/send", "acme"), Ran("message/send", ""), Ran("message/send", "")]
    strict = build(v03=True, require_tenant=True)
    refused = await strict.http.post(
        "/", json=_rpc("message/send", {"message": MESSAGE_V03}), headers=_auth(realm)
    )
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, -32013)
    assert strict.handler.ran == []


# --- finding 2: the 0.3 extension header on an A2A 1.0 call -------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "body", "header", "version", "allowed"),
    [
        # A2A 1.0 calls: only A2A-Extensions activates an extension (a2a-sdk reads nothing else).
        ("/", _rpc("SendMessage", {"message": MESSAGE_V10}), "X-A2A-Extensions", V10, False),
        ("/message:send", {"message": MESSAGE_V10}, "X-A2A-Extensions", V10, False),
        ("/", _rpc("SendMessage", {"message": MESSAGE_V10}), "A2A-Extensions", V10, True),
        ("/message:send", {"message": MESSAGE_V10}, "A2A-Extensions", V10, True),
        # A2A 0.3 calls: a2a-sdk's 0.3 adapter reads both headers.
        ("/", _rpc("message/send", {"message": MESSAGE_V03}), "X-A2A-Extensions", {}, True),
        ("/v1/message:send", {"message": MESSAGE_V03}, "X-A2A-Extensions", {}, True),
    ],
)
async def test_a_required_extension_counts_only_in_the_header_the_server_reads(
    build: Any,
    realm: LocalRealm,
    path: str,
    body: dict[str, Any],
    header: str,
    version: dict[str, str],
    allowed: bool,
) -> None:
    # Before the fix X-A2A-Extensions satisfied required_extensions on an A2A 1.0 call, and the agent
    # then ran it with the extension inactive (ServerCallContext.requested_extensions empty).
    sdk = build(v03=True, required=[URI])
    answer = await sdk.http.post(path, json=body, headers={**_auth(realm), **version, header: URI})
    if allowed:
        assert answer.status_code == 200
        assert sdk.handler.ran == [Ran("message/send", "", frozenset({URI}))]
        return
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["code"], error.get("status")) in {(-32008, None), (400, "FAILED_PRECONDITION")}
    assert sdk.handler.ran == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("batch", "forwarded"),
    [
        ([_rpc("message/send", {}, 1), _rpc("tasks/get", {}, 2)], True),  # all A2A 0.3: the 0.3 header counts
        ([_rpc("message/send", {}, 1), _rpc("SendMessage", {}, 2)], False),  # one 1.0 call: it does not
    ],
)
async def test_the_03_extension_header_counts_for_a_batch_only_when_every_call_is_03(
    realm: LocalRealm, jwks: JwksCache, recorder: Recorder, batch: list[dict[str, Any]], forwarded: bool
) -> None:
    gate = A2AAuthMiddleware(
        recorder.app(),
        authenticators=[_bearer(realm, jwks)],
        policy=_policy(),
        routes=A2ARoutes(required_extensions=[URI]),
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=gate), base_url="http://agent.test"
    ) as http:
        answer = await http.post("/", json=batch, headers={**_auth(realm), "X-A2A-Extensions": URI})
    if forwarded:
        assert answer.status_code == 200
        assert [json.loads(raw) for raw in recorder.raw] == [batch]
        assert recorder.scopes[0]["state"]["mudrika.extensions"] == frozenset({URI})
    else:
        assert (answer.status_code, answer.json()["error"]["code"]) == (400, -32008)
        assert recorder.raw == []


@pytest.mark.parametrize(
    ("method", "path", "v03", "expected"),
    [
        ("POST", "/v1/message:send", True, True),
        ("GET", "/v1/card", True, True),
        ("POST", "/v1/message:send", False, False),  # no 0.3 routes: tenant "v1" of the 1.0 mount
        ("DELETE", "/v1/tasks/t/pushNotificationConfigs/p", True, False),  # 0.3 has no delete: the mount's
        ("GET", "/v1/tasks", True, False),  # 0.3 has no task list: the mount's
        ("POST", "/message:send", True, False),
        ("POST", "/acme/v1/message:send", True, False),
    ],
)
def test_only_the_03_routes_the_server_registers_are_03(
    method: str, path: str, v03: bool, expected: bool
) -> None:
    assert is_v03_route(method, path, v03_compat=v03) is expected


# --- class 1: operation confusion and parser differentials (single calls, real a2a-sdk) ------------


#: SendMessage's params up to (not including) their closing brace, so a test can add members.
_OPEN_SEND = '{"message":' + json.dumps(MESSAGE_V10)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("raw", "status", "code", "ran"),
    [
        # duplicate members: the gate and the server both keep the last, so the call decided is the one run
        (
            '{"jsonrpc":"2.0","id":1,"method":"CancelTask","method":"GetTask","params":{"id":"t"}}',
            200,
            None,
            [Ran("tasks/get", "")],
        ),
        (
            '{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"CancelTask","params":{"id":"t"}}',
            403,
            -31403,
            [],
        ),
        (
            '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":'
            + _OPEN_SEND
            + ',"tenant":"globex","tenant":"acme"}}',
            200,
            None,
            [Ran("message/send", "acme")],
        ),
        (
            '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":'
            + _OPEN_SEND
            + ',"tenant":"acme","tenant":"globex"}}',
            403,
            -31403,
            [],
        ),
        # escapes name the same member / method; case is not folded
        ('{"jsonrpc":"2.0","id":1,"\\u006dethod":"CancelTask","params":{"id":"t"}}', 403, -31403, []),
        ('{"jsonrpc":"2.0","id":1,"method":"\\u0043ancelTask","params":{"id":"t"}}', 403, -31403, []),
        ('{"jsonrpc":"2.0","id":1,"method":"cancelTask","params":{"id":"t"}}', 404, -32601, []),
        ('{"jsonrpc":"2.0","id":1,"method":"CancelTask\\u0000","params":{"id":"t"}}', 404, -32601, []),
        ('{"jsonrpc":"2.0","id":1,"method":"\\ud800","params":{}}', 404, -32601, []),
        # what the server's parser might accept and ours does not: refused, never forwarded
        ('\ufeff{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}', 400, -32700, []),
        (
            '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":NaN}}',
            400,
            -32700,
            [],
        ),
        ('{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}} /* x */', 400, -32700, []),
        (
            '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}{"method":"CancelTask"}',
            400,
            -32700,
            [],
        ),
        ('{"jsonrpc":"2.0","id":' + "9" * 5000 + ',"method":"GetTask","params":{"id":"t"}}', 400, -32700, []),
        (
            '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":' + "[" * 50_000 + "]" * 50_000 + "}",
            400,
            -32700,
            [],
        ),
        # one call or a batch: the gate and the server agree which it is
        ('[{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"t"}}]', 403, None, []),
        ("[]", 400, -32600, []),
        ('"GetTask"', 400, -32600, []),
        # whitespace around a call changes nothing
        (
            ' \r\n\t{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}\n ',
            200,
            None,
            [Ran("tasks/get", "")],
        ),
    ],
)
async def test_the_call_decided_is_the_call_the_server_runs(
    build: Any, realm: LocalRealm, raw: str, status: int, code: int | None, ran: list[Ran]
) -> None:
    sdk = build()
    body = raw.encode("utf-8", "surrogatepass")
    headers = {**_auth(realm), **V10, "content-type": "application/json"}
    answer = await sdk.http.post("/", content=body, headers=headers)
    assert answer.status_code == status
    if code is not None:
        assert answer.json()["error"]["code"] == code
    assert sdk.handler.ran == ran


# --- class 1 and 5: batches (a plain app that records the exact bytes it is handed) -----------------


@dataclass
class Recorder:
    """A JSON-RPC app answering ``ok`` to every call; it keeps the raw bodies and the scopes."""

    raw: list[bytes] = field(default_factory=list)
    scopes: list[dict[str, Any]] = field(default_factory=list)

    async def rpc(self, request: Request) -> Response:
        body = await request.body()
        self.raw.append(body)
        self.scopes.append(dict(request.scope))
        document = json.loads(body)
        calls = document if isinstance(document, list) else [document]
        answers = [{"jsonrpc": "2.0", "result": "ok", "id": call.get("id")} for call in calls if "id" in call]
        return JSONResponse(answers if isinstance(document, list) else answers[0])

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/", self.rpc, methods=["POST"])])


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def plain(realm: LocalRealm, jwks: JwksCache, recorder: Recorder) -> AsyncIterator[httpx.AsyncClient]:
    gate = A2AAuthMiddleware(
        recorder.app(),
        authenticators=[_bearer(realm, jwks)],
        policy=_policy(),
        limits=Limits(max_body_bytes=8192, max_batch=8),
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=gate), base_url="http://agent.test"
    ) as http:
        yield http


def _call(method: Any, request_id: Any = None) -> dict[str, Any]:
    call: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": {}}
    if request_id is not None:
        call["id"] = request_id
    return call


@pytest.mark.anyio
async def test_a_mixed_batch_reaches_the_app_as_exactly_its_allowed_calls(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    batch = [
        _call("SendMessage", 1),  # allowed
        _call("CancelTask", 2),  # denied (admin only)
        _call("Nope", 3),  # unknown
        _call("SendStreamingMessage", 4),  # a stream cannot be part of a batch answer
        _call("GetTask"),  # allowed notification
        _call("CancelTask"),  # denied notification: no answer at all
        5,  # not a call
        _call(7, 8),  # a method that is not a string
        {**_call("GetTask", 9), "params": {"tenant": "globex"}},  # another tenant
        {**_call("GetTask", 10), "params": {"tenant": "acme"}},  # its own tenant
    ]
    answer = await plain.post("/", json=batch[:8], headers=_auth(realm))
    assert answer.status_code == 200
    assert [json.loads(raw) for raw in recorder.raw] == [[_call("SendMessage", 1), _call("GetTask")]]
    codes = {item["id"]: item.get("error", {}).get("code") for item in answer.json()}
    assert codes == {1: None, 2: -32013, 3: -32601, 4: -32600, None: -32600, 8: -32600}
    assert len(answer.json()) == 6
    tenants = await plain.post("/", json=batch[8:], headers=_auth(realm))
    assert [item["id"] for item in tenants.json()] == [10, 9]
    assert json.loads(recorder.raw[1]) == [batch[9]]
    assert recorder.scopes[1]["state"]["mudrika.tenants"] == ("acme",)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("request_id", "echoed"),
    [(7, 7), ("abc", "abc"), (None, None), (1.5, None), (True, None), ({"a": 1}, None), ("x" * 300, None)],
)
async def test_any_id_is_forwarded_as_sent_and_echoed_only_when_legal(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder, request_id: Any, echoed: Any
) -> None:
    allowed = json.dumps({**_call("SendMessage"), "id": request_id}).encode()
    answer = await plain.post("/", content=allowed, headers=_auth(realm))
    assert answer.status_code == 200
    assert recorder.raw == [allowed]  # a single call reaches the app byte for byte
    denied = await plain.post("/", json={**_call("CancelTask"), "id": request_id}, headers=_auth(realm))
    assert (denied.status_code, denied.json()["id"]) == (403, echoed)
    assert len(recorder.raw) == 1


@pytest.mark.anyio
async def test_duplicate_members_inside_a_batch_are_forwarded_as_decided(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    raw = '[{"jsonrpc":"2.0","id":1,"method":"CancelTask","method":"GetTask","params":{}}]'
    answer = await plain.post("/", content=raw, headers=_auth(realm))
    assert answer.status_code == 200
    assert recorder.raw == [b'[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}]']


@pytest.mark.anyio
@pytest.mark.parametrize("size", [9, 64])
async def test_a_batch_over_the_limit_is_refused_whole(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder, size: int
) -> None:
    answer = await plain.post("/", json=[_call("GetTask", n) for n in range(size)], headers=_auth(realm))
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, -32600)
    assert recorder.raw == []


@pytest.mark.anyio
async def test_extension_lists_are_read_as_the_server_reads_them(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    headers = {**_auth(realm), "A2A-Extensions": " urn:a, ,urn:b,,urn:a "}
    answer = await plain.post("/", json=_call("SendMessage", 1), headers=headers)
    assert answer.status_code == 200
    assert recorder.scopes[0]["state"]["mudrika.extensions"] == frozenset({"urn:a", "urn:b"})


@pytest.mark.anyio
@pytest.mark.parametrize(
    "headers",
    [
        {"A2A-Extensions": "urn:a\tx"},
        {"A2A-Extensions": "urn:a\x7f"},
        {"A2A-Extensions": "https://e.example/" + "x" * 512},
        # a flood split across the two headers is still a flood
        {
            "A2A-Extensions": ",".join(f"urn:a:{n}" for n in range(MAX_EXTENSIONS // 2 + 1)),
            "X-A2A-Extensions": ",".join(f"urn:b:{n}" for n in range(MAX_EXTENSIONS // 2 + 1)),
        },
    ],
)
async def test_bad_extension_headers_are_refused_before_the_app(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder, headers: dict[str, str]
) -> None:
    answer = await plain.post("/", json=_call("SendMessage", 1), headers={**_auth(realm), **headers})
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, -32600)
    assert recorder.raw == []


# --- class 2: REST route confusion (the gate's route table against a2a-sdk's Starlette routing) -----

_PATHS = (
    "/message:send",
    "/message:stream",
    "/tasks",
    "/tasks/",
    "/tasks/t1",
    "/tasks/t1/",
    "/tasks/t1:cancel",
    "/tasks/t1:subscribe",
    "/tasks/t1/pushNotificationConfigs",
    "/tasks/t1/pushNotificationConfigs/p1",
    "/extendedAgentCard",
    "/card",
    "/acme/message:send",
    "/acme/tasks",
    "/acme/tasks/t1:cancel",
    "/acme/tasks/t1/pushNotificationConfigs/p1",
    "/v1/message:send",
    "/v1/tasks/t1",
    "/v1/card",
    "/v1/tasks/t1:cancel",
    "/v1/tasks/t1/pushNotificationConfigs/p1",
    "//message:send",
    "/acme//message:send",
    "/./message:send",
    "/acme/../message:send",
    "/message:send/",
    "/Message:send",
    "/acme/v1/message:send",
    "/tasks/tasks",
    "/tasks/a:subscribe:cancel",
    "/acme;x/message:send",
    "/message:send;x",
    "/message%3Asend",
    "/acme%2Fx/message:send",
    "/tasks/t1%2F:cancel",
    "/",
    "/acme/",
)
_VERBS = ("GET", "HEAD", "POST", "DELETE", "PUT")


async def _asgi(
    app: Any,
    method: str,
    raw_path: str,
    headers: Mapping[str, str],
    body: bytes = b"",
    *,
    root_path: str = "",
) -> tuple[int, bytes]:
    """One request straight to an ASGI app (paths httpx would normalise are sent as they are)."""
    from urllib.parse import unquote

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": root_path + unquote(raw_path),
        "raw_path": (root_path + raw_path).encode(),
        "root_path": root_path,
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        + [(b"host", b"agent.test"), (b"content-length", str(len(body)).encode())],
        "server": ("agent.test", 80),
        "client": ("192.0.2.1", 4711),
    }
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    answer: dict[str, Any] = {"status": 0, "body": b""}

    async def send(message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    await app(scope, receive, send)
    return answer["status"], answer["body"]


@dataclass
class ScopeSpy:
    """Between the gate and the app: the scopes the gate forwarded (its decisions and tenants)."""

    app: Any
    decided: list[tuple[list[str], list[str]]] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            state = scope["state"]
            self.decided.append(
                (
                    [d.operation for d in state["mudrika.decisions"]],
                    [t or "" for t in state["mudrika.tenants"]],
                )
            )
        await self.app(scope, receive, send)


@pytest.mark.anyio
@pytest.mark.parametrize(("v03", "root_path"), [(False, ""), (True, ""), (True, "/agents")])
async def test_every_rest_route_the_gate_decides_is_the_handler_a2a_sdk_runs(
    realm: LocalRealm, jwks: JwksCache, v03: bool, root_path: str
) -> None:
    handler = SpyHandler()
    spy = ScopeSpy(_sdk_app(handler, v03=v03))
    gate = A2AAuthMiddleware(
        spy,
        authenticators=[_bearer(realm, jwks)],
        policy=_policy(),
        routes=A2ARoutes(enable_v0_3_compat=v03),
    )
    headers = {**_auth(realm, roles=["boss"], organization=["acme", "v1", "tasks", "x"]), **V10}
    body = json.dumps({"message": MESSAGE_V10}).encode()
    ran = 0
    for path in _PATHS:
        for verb in _VERBS:
            handler.ran.clear()
            spy.decided.clear()
            status, _ = await _asgi(
                gate, verb, path, headers, body if verb != "GET" else b"", root_path=root_path
            )
            where = (verb, path, status)
            if not spy.decided:
                assert handler.ran == [], where  # refused by the gate: nothing ran
                # 400: a POST to the JSON-RPC endpoint "/" is JSON-RPC, and a REST body is no call.
                assert status in {403, 404} or where == ("POST", "/", 400), where
                continue
            operations, tenants = spy.decided[0]
            decided = list(zip(operations, tenants, strict=True))
            assert [(r.handler, r.tenant) for r in handler.ran] in ([], decided), where
            ran += len(handler.ran)
    assert ran >= 30  # the grid reaches the handlers, not only the refusals


def test_a_json_rpc_endpoint_that_is_also_a_rest_route_is_refused_at_start_up(
    realm: LocalRealm, jwks: JwksCache
) -> None:
    # Before the fix: an app registering its REST routes before its JSON-RPC endpoint at
    # "/agent/message:send" had this call decided as GetTask with no tenant (the body's method) and
    # run by Starlette as REST SendMessage in tenant "agent", a tenant the caller does not belong to.
    handler = SpyHandler()
    app = Starlette(
        routes=[*create_rest_routes(handler), *create_jsonrpc_routes(handler, rpc_url="/agent/message:send")]
    )

    def wrap(path: str) -> A2AAuthMiddleware:
        return A2AAuthMiddleware(
            app,
            authenticators=[_bearer(realm, jwks)],
            policy=_policy(),
            routes=A2ARoutes(jsonrpc_paths=[path]),
        )

    with pytest.raises(InvalidInput) as refused:
        wrap("/agent/message:send")
    assert (refused.value.code, refused.value.fields["option"]) == ("bad_config", "jsonrpc_paths")
    assert handler.ran == []


@pytest.mark.parametrize(
    ("path", "v03", "shared"),
    [
        ("/agent/message:send", False, True),  # the /{tenant} mount's
        ("/tasks/t1:cancel", False, True),
        ("/tasks/t1:subscribe", True, True),
        ("/acme/tasks/t1/pushNotificationConfigs", False, True),
        ("/v1/message:send", True, True),  # the 0.3 route
        ("/", False, False),
        ("/a2a", True, False),
        ("/rpc/", False, False),
        ("/tasks/t1", False, False),  # GET only
    ],
)
def test_only_json_rpc_paths_that_share_no_rest_route_are_accepted(
    realm: LocalRealm, jwks: JwksCache, path: str, v03: bool, shared: bool
) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("never called at start-up")

    def wrap() -> A2AAuthMiddleware:
        routes = A2ARoutes(jsonrpc_paths=[path], enable_v0_3_compat=v03)
        return A2AAuthMiddleware(app, authenticators=[_bearer(realm, jwks)], policy=_policy(), routes=routes)

    if shared:
        with pytest.raises(InvalidInput):
            wrap()
    else:
        assert wrap().jsonrpc_paths == frozenset({path})


@pytest.mark.anyio
@pytest.mark.parametrize("verb", ["POST", "PUT", "DELETE"])
async def test_a_public_path_is_public_for_get_and_head_only(
    build: Any, realm: LocalRealm, verb: str
) -> None:
    sdk = build()
    anonymous = await sdk.http.request(verb, "/.well-known/agent-card.json", json={})
    assert (anonymous.status_code, anonymous.json()["error"]["code"]) == (401, -32009)
    signed = await sdk.http.request(verb, "/.well-known/agent-card.json", json={}, headers=_auth(realm))
    assert (signed.status_code, signed.json()["error"]["code"]) == (404, -32601)
    card = await sdk.http.get("/.well-known/agent-card.json")
    assert (card.status_code, card.json()["name"]) == (200, "spy")
    assert sdk.handler.ran == []


# --- class 3: body handling ---------------------------------------------------------------------------


@dataclass
class Wire:
    """A client's side of one request: the body messages it sends, and what it receives back."""

    messages: list[dict[str, Any]]
    received: int = 0
    sent: list[Mapping[str, Any]] = field(default_factory=list)

    async def receive(self) -> dict[str, Any]:
        self.received += 1
        if self.messages:
            return self.messages.pop(0)
        return {"type": "http.disconnect"}

    async def send(self, message: Mapping[str, Any]) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int | None:
        starts = [m["status"] for m in self.sent if m["type"] == "http.response.start"]
        return starts[0] if starts else None


def _scope(headers: Sequence[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": "/",
        "raw_path": b"/",
        "root_path": "",
        "query_string": b"",
        "headers": list(headers),
    }


@pytest.fixture
def plain_gate(realm: LocalRealm, jwks: JwksCache, recorder: Recorder) -> A2AAuthMiddleware:
    return A2AAuthMiddleware(
        recorder.app(),
        authenticators=[_bearer(realm, jwks)],
        policy=_policy(),
        limits=Limits(max_body_bytes=8192),
    )


def _token_header(realm: LocalRealm) -> tuple[bytes, bytes]:
    ((name, value),) = _auth(realm).items()
    return name.encode(), value.encode()


CALL = json.dumps(_call("SendMessage", 1)).encode()


@pytest.mark.anyio
@pytest.mark.parametrize(
    "lengths", [[b"20", b"99999"], [b"99999", b"20"], [b"+20"], [b" 20"], [b"0x20"], [b"-1"], [b"20, 20"]]
)
async def test_content_length_games_are_refused_before_the_body(
    plain_gate: A2AAuthMiddleware, realm: LocalRealm, recorder: Recorder, lengths: list[bytes]
) -> None:
    wire = Wire([{"type": "http.request", "body": CALL, "more_body": False}])
    headers = [_token_header(realm), *((b"content-length", value) for value in lengths)]
    await plain_gate(_scope(headers), wire.receive, wire.send)
    assert (wire.status, wire.received, recorder.raw) == (413, 0, [])


@pytest.mark.anyio
@pytest.mark.parametrize("declared", [None, b"5", str(len(CALL) + 100).encode()])
async def test_the_app_is_handed_exactly_the_bytes_that_were_decided(
    plain_gate: A2AAuthMiddleware, realm: LocalRealm, recorder: Recorder, declared: bytes | None
) -> None:
    # In pieces, with or without a Content-Length (and one that lies): the app reads the body the
    # gate decided, whole, once; after it the client's own stream (here: disconnect).
    pieces = [CALL[:7], b"", CALL[7:30], CALL[30:]]
    messages = [{"type": "http.request", "body": piece, "more_body": True} for piece in pieces]
    messages[-1]["more_body"] = False
    wire = Wire(messages)
    headers = [_token_header(realm)] + ([] if declared is None else [(b"content-length", declared)])
    await plain_gate(_scope(headers), wire.receive, wire.send)
    assert wire.status == 200
    assert recorder.raw == [CALL]


@pytest.mark.anyio
async def test_a_body_over_the_cap_in_pieces_stops_being_read_at_the_cap(
    plain_gate: A2AAuthMiddleware, realm: LocalRealm, recorder: Recorder
) -> None:
    messages = [{"type": "http.request", "body": b" " * 1000, "more_body": True} for _ in range(100)]
    wire = Wire(messages)
    await plain_gate(_scope([_token_header(realm)]), wire.receive, wire.send)
    assert (wire.status, wire.received, recorder.raw) == (413, 9, [])


@pytest.mark.anyio
async def test_a_client_that_leaves_mid_body_gets_nothing_forwarded(
    plain_gate: A2AAuthMiddleware, realm: LocalRealm, recorder: Recorder
) -> None:
    wire = Wire([{"type": "http.request", "body": CALL[:10], "more_body": True}, {"type": "http.disconnect"}])
    await plain_gate(_scope([_token_header(realm)]), wire.receive, wire.send)
    assert (wire.sent, recorder.raw) == ([], [])


@pytest.mark.anyio
@pytest.mark.parametrize("credential", [None, b"Bearer not-a-token", b"Basic dXNlcjpwYXNz"])
async def test_no_body_byte_is_read_for_a_caller_without_a_valid_token(
    plain_gate: A2AAuthMiddleware, recorder: Recorder, credential: bytes | None
) -> None:
    wire = Wire([{"type": "http.request", "body": CALL, "more_body": False}])
    headers = [] if credential is None else [(b"authorization", credential)]
    await plain_gate(_scope(headers), wire.receive, wire.send)
    assert (wire.status, wire.received, recorder.raw) == (401, 0, [])


@pytest.mark.anyio
async def test_a_scheme_nobody_accepts_never_holds_a_read_slot(
    realm: LocalRealm, jwks: JwksCache, recorder: Recorder
) -> None:
    # Before the fix a token-only gate read the body of an "Authorization: Basic" request before
    # finding nobody to authenticate it: a client that never sent that body held a read slot until
    # body_timeout, and with every slot held a valid token got 503.
    gate = A2AAuthMiddleware(
        recorder.app(),
        authenticators=[_bearer(realm, jwks)],
        policy=_policy(),
        limits=Limits(max_concurrent_reads=1, read_slot_wait=0, body_timeout=0.5),
    )
    never = anyio.Event()
    reads = 0

    async def stalled() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        await never.wait()
        raise AssertionError("the body never comes")

    basic = Wire([])
    valid = Wire([{"type": "http.request", "body": CALL, "more_body": False}])
    async with anyio.create_task_group() as group:
        group.start_soon(gate, _scope([(b"authorization", b"Basic dXNlcjpwYXNz")]), stalled, basic.send)
        await anyio.wait_all_tasks_blocked()
        await gate(_scope([_token_header(realm)]), valid.receive, valid.send)
    assert (basic.status, reads) == (401, 0)
    assert valid.status == 200
    assert recorder.raw == [CALL]


@pytest.mark.anyio
async def test_a_credential_header_nobody_takes_is_refused_as_no_credentials_closing_the_connection(
    realm: LocalRealm, jwks: JwksCache, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    """The refusal before the body is the same answer as "no credentials at all": 401 −32009, logged
    as ``no_credentials``, and the connection closed (the unread body stays the client's)."""
    gate = A2AAuthMiddleware(recorder.app(), authenticators=[_bearer(realm, jwks)], policy=_policy())
    wire = Wire([{"type": "http.request", "body": CALL, "more_body": False}])
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        await gate(_scope([(b"authorization", b"Basic dXNlcjpwYXNz")]), wire.receive, wire.send)
    (start,) = [m for m in wire.sent if m["type"] == "http.response.start"]
    assert (start["status"], wire.received, recorder.raw) == (401, 0, [])
    assert (b"connection", b"close") in start["headers"]
    body = json.loads(b"".join(m.get("body", b"") for m in wire.sent if m["type"] == "http.response.body"))
    assert body["error"]["code"] == -32009
    assert any(": no_credentials (" in record.getMessage() for record in caplog.records)


# --- class 4: credential confusion ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_two_authorization_headers_are_refused_before_the_body(
    plain_gate: A2AAuthMiddleware, realm: LocalRealm, recorder: Recorder
) -> None:
    wire = Wire([{"type": "http.request", "body": CALL, "more_body": False}])
    first = _token_header(realm)
    second = (b"authorization", f"Bearer {realm.token(sub='another-caller')}".encode())
    await plain_gate(_scope([first, second]), wire.receive, wire.send)
    assert (wire.status, wire.received, recorder.raw) == (401, 0, [])
    body = json.loads(b"".join(m.get("body", b"") for m in wire.sent if m["type"] == "http.response.body"))
    assert body["error"]["code"] == -32010


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("scheme", "claims"),
    [
        ("DPoP", {}),  # an unbound token under the DPoP scheme
        (
            "Bearer",
            {"cnf": {"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}},
        ),  # a DPoP-bound token as Bearer
        ("Bearer", {"cnf": {"jkt": "x", "x5t#S256": "y"}}),  # two confirmations
        ("Bearer", {"aud": ["another-api"]}),
        ("Bearer", {"iss": "https://idp.test/realms/other"}),
        ("Bearer", {"azp": "stranger", "aud": None}),  # not on the allowlist (checked by azp below)
        ("Bearer", {"realm_access": {"roles": "agent"}}),  # roles as a string, not a list
        ("Bearer", {"realm_access": {"roles": ["agent", 5]}}),
        ("Bearer", {"realm_access": ["agent"]}),
        ("Bearer", {"resource_access": {"agent-api": {"roles": "invoke"}}}),
        ("Bearer", {"resource_access": {"agent/api": {"roles": ["invoke"]}}}),
    ],
)
async def test_tokens_that_must_not_be_accepted_are_refused(
    realm: LocalRealm, jwks: JwksCache, recorder: Recorder, scheme: str, claims: dict[str, Any]
) -> None:
    gate = A2AAuthMiddleware(
        recorder.app(),
        authenticators=[_bearer(realm, jwks, by_azp="azp" in claims)],
        policy=_policy(),
    )
    token = realm.token(organization=["acme"], **claims)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=gate), base_url="http://agent.test"
    ) as http:
        answer = await http.post(
            "/", json=_call("SendMessage", 1), headers={"authorization": f"{scheme} {token}"}
        )
    assert (answer.status_code, answer.json()["error"]["code"]) == (401, -32010)
    assert recorder.raw == []


@pytest.mark.anyio
async def test_a_token_cannot_reach_a_tenant_it_does_not_name(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    call = {**_call("SendMessage", 1), "params": {"tenant": "globex"}}
    answer = await plain.post("/", json=call, headers=_auth(realm, organization=["acme"]))
    assert answer.status_code == 403
    assert answer.json()["error"] == {"code": -32013, "message": "Forbidden for this tenant"}
    assert recorder.raw == []


@pytest.mark.anyio
async def test_a_tampered_token_is_refused_after_its_original_was_cached(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    token = realm.token(organization=["acme"])
    # One character in the middle of the signature changed: still canonical base64url (a changed
    # last character can leave non-zero padding bits, which is a malformed token, not a forgery).
    head, _, signature = token.rpartition(".")
    middle = len(signature) // 2
    swapped = "B" if signature[middle] != "B" else "C"
    tampered = f"{head}.{signature[:middle]}{swapped}{signature[middle + 1 :]}"
    for _ in range(3):  # seen, then cached by the verifier, then memoised by the authenticator
        assert (
            await plain.post("/", json=_call("SendMessage", 1), headers={"authorization": f"Bearer {token}"})
        ).status_code == 200
    refused = await plain.post(
        "/", json=_call("SendMessage", 1), headers={"authorization": f"Bearer {tampered}"}
    )
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, -32012)  # bad signature
    assert len(recorder.raw) == 3


@pytest.mark.anyio
async def test_memoised_principals_never_pass_to_another_caller_across_garbage_collection(
    plain: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    # The gate's grants memo and the Bearer memo are keyed by object identity and token label; with
    # many callers whose objects are freed and reallocated (forced collections between requests),
    # every forwarded call must still carry its own caller's subject and tenants.
    callers = [(f"caller-{n}", f"tenant-{n}") for n in range(48)]
    tokens = {subject: realm.token(sub=subject, organization=[tenant]) for subject, tenant in callers}
    sent: list[tuple[str, str]] = []
    for round_ in range(3):  # first sight, verifier-cached, memoised
        for index, (subject, tenant) in enumerate(callers):
            call = {**_call("SendMessage", index), "params": {"tenant": tenant}}
            answer = await plain.post("/", json=call, headers={"authorization": f"Bearer {tokens[subject]}"})
            assert answer.status_code == 200, (round_, subject)
            sent.append((subject, tenant))
            if index % 6 == 0:
                gc.collect()
        # Refresh half the tokens so new objects take the places of freed ones.
        for subject, tenant in callers[::2]:
            tokens[subject] = realm.token(sub=subject, organization=[tenant])
        gc.collect()
    seen = [
        (scope["state"]["mudrika.principal"].subject, *scope["state"]["mudrika.principal"].tenants)
        for scope in recorder.scopes
    ]
    assert seen == sent
    assert [scope["state"]["mudrika.tenants"] for scope in recorder.scopes] == [(t,) for _, t in sent]


@dataclass
class Signatures:
    """A body-reading signature scheme (as RFC 9421 is) whose signer is an admin: ``Signature: good``
    verifies, any other value is a bad signature."""

    scheme: str = "Signature"
    credential_headers: frozenset[str] = frozenset({"signature"})
    needs_body: bool = True
    calls: int = 0

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        self.calls += 1
        values = request.header_values("signature")
        if not values:
            return None
        if values != ["good"]:
            raise InvalidSignature("bad signature", code="bad_signature")
        return Authenticated(
            Principal("did:web:boss.example", roles=frozenset({"boss"})), self.scheme, "sig-1"
        )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tokens_first", "signature", "status", "subject"),
    [
        # The first configured scheme whose credentials are present decides; the other is never asked,
        # so a signature beside a token neither lends the token its signer's roles nor is checked.
        (True, "good", 403, None),
        (True, "forged", 403, None),
        (False, "good", 200, "did:web:boss.example"),
        # A bad signature is a refusal, never a fall back to the token beside it.
        (False, "forged", 401, None),
    ],
)
async def test_a_token_and_a_signature_on_one_request_are_never_combined(
    realm: LocalRealm,
    jwks: JwksCache,
    recorder: Recorder,
    tokens_first: bool,
    signature: str,
    status: int,
    subject: str | None,
) -> None:
    signatures = Signatures()
    bearer = _bearer(realm, jwks)
    gate = A2AAuthMiddleware(
        recorder.app(),
        authenticators=[bearer, signatures] if tokens_first else [signatures, bearer],
        policy=_policy(),
    )
    headers = {**_auth(realm), "signature": signature}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=gate), base_url="http://agent.test"
    ) as http:
        answer = await http.post("/", json=_call("CancelTask", 1), headers=headers)  # admin only
    assert answer.status_code == status
    assert signatures.calls == (0 if tokens_first else 1)
    assert [scope["state"]["mudrika.principal"].subject for scope in recorder.scopes] == (
        [] if subject is None else [subject]
    )


# --- the MCP gate in front of a real MCP SDK server -----------------------------------------------

MCP_ORIGIN = "http://127.0.0.1:8000"
MCP_RESOURCE = MCP_ORIGIN + "/mcp"
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
MCP_POLICY = {
    "version": 1,
    "roles": [
        {"role_id": "r1", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"},
        {"role_id": "r2", "role_name": "boss", "realm_name": "mudrika", "trust_level": "admin"},
    ],
    "operations": {
        "initialize": {"min_level": "operator"},
        "notifications/*": {"min_level": "operator"},
        "tools/call": {"min_level": "operator"},
        "tools/call:wipe": {"min_level": "admin"},
    },
}


@dataclass
class McpServed:
    """The protected MCP server, a client of it, and the tools that ran."""

    http: httpx.AsyncClient
    ran: list[str]


@pytest.fixture(params=[True, False], ids=["stateless", "sessions"])
async def mcp(request: pytest.FixtureRequest, realm: LocalRealm, jwks: JwksCache) -> AsyncIterator[McpServed]:
    server = MCPServer(name="tools", version="1.0")
    ran: list[str] = []

    @server.tool(description="Echo the text back")
    def echo(text: str) -> str:
        ran.append("echo")
        return text

    @server.tool(description="Delete everything (admins only)")
    def wipe() -> str:
        ran.append("wipe")
        return "wiped"

    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience=MCP_RESOURCE, azp_allowlist=None, jwks=jwks, clock=realm.clock
    )
    app = protect(
        server.streamable_http_app(stateless_http=request.param, json_response=True),
        policy=Policy.from_document(MCP_POLICY),
        realm=realm.issuer,
        token_verifier=verifier,
        protocol="mcp",
        resource=MCP_RESOURCE,
    )
    async with (
        server.session_manager.run(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=MCP_ORIGIN) as http,
    ):
        yield McpServed(http, ran)


def _mcp_token(realm: LocalRealm, **claims: Any) -> dict[str, str]:
    return {"authorization": f"Bearer {realm.token(aud=[MCP_RESOURCE], **claims)}"}


async def _mcp_session(mcp: McpServed, realm: LocalRealm, **claims: Any) -> dict[str, str]:
    """The headers of an initialized session for a caller with ``claims`` (none when stateless)."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    answer = await mcp.http.post(
        "/mcp", json=initialize, headers={**MCP_HEADERS, **_mcp_token(realm, **claims)}
    )
    assert answer.status_code == 200
    session = answer.headers.get("mcp-session-id")
    return {"mcp-protocol-version": "2025-06-18", **({"mcp-session-id": session} if session else {})}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("raw", "status", "ran"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wipe","arguments":{}}}', 403, []),
        # duplicate members: both sides keep the last
        (
            '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wipe","name":"echo","arguments":{"text":"x"}}}',
            200,
            ["echo"],
        ),
        (
            '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","name":"wipe","arguments":{}}}',
            403,
            [],
        ),
        (
            '{"jsonrpc":"2.0","id":7,"\\u006dethod":"tools/call","params":{"\\u006eame":"wipe","arguments":{}}}',
            403,
            [],
        ),
        # a name the policy does not single out is decided as tools/call, and the server knows no such tool
        *(
            (
                '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":'
                + json.dumps(name)
                + ',"arguments":{}}}',
                200,
                [],
            )
            for name in ("wipe ", " wipe", "Wipe", "\uff57\uff49\uff50\uff45", "wipe\u0000", "wi\u200bpe")
        ),
        # a request that is also shaped as a response is decided as the request it names
        (
            '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wipe","arguments":{}},"result":{}}',
            403,
            [],
        ),
        # a notification naming a tool is decided as that tool, and the server runs nothing for it
        ('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"wipe","arguments":{}}}', 403, []),
        (
            '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}',
            202,
            [],
        ),
        # a batch is refused whole (MCP has none since 2025-06-18)
        (
            '[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}]',
            400,
            [],
        ),
    ],
)
async def test_the_tool_decided_is_the_tool_the_mcp_server_runs(
    mcp: McpServed, realm: LocalRealm, raw: str, status: int, ran: list[str]
) -> None:
    session = await _mcp_session(mcp, realm)
    headers = {**MCP_HEADERS, **_mcp_token(realm), **session}
    answer = await mcp.http.post("/mcp", content=raw.encode("utf-8", "surrogatepass"), headers=headers)
    assert answer.status_code == status
    assert mcp.ran == ran


@pytest.mark.anyio
@pytest.mark.parametrize("mcp", [False], indirect=True, ids=["sessions"])
async def test_an_mcp_session_answers_only_the_caller_that_opened_it(
    mcp: McpServed, realm: LocalRealm
) -> None:
    # The gate hands the SDK each caller's (client, issuer, subject); the SDK binds the session to it.
    session = await _mcp_session(mcp, realm, sub="alice")
    assert "mcp-session-id" in session
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}},
    }
    answers = [
        await mcp.http.post(
            "/mcp", json=call, headers={**MCP_HEADERS, **session, **_mcp_token(realm, **claims)}
        )
        for claims in ({"sub": "alice"}, {"sub": "bob"}, {"sub": "alice", "azp": "another-client"})
    ]
    assert [answer.status_code for answer in answers] == [200, 404, 404]
    assert mcp.ran == ["echo"]
