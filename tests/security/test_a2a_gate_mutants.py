"""The A2A half of the gate's rules that its first mutation check found no test for.

Each test states one behaviour a client or a deployer relies on: the default public paths, the
ids a refusal echoes for a single call, a batch and a REST call, the extension refusal's echo, the
log line of a malformed extension header, and a configuration mistake refused at start-up.  The
gate is an :class:`A2AAuthMiddleware` in front of a recording ASGI app, with authenticators
standing in for the real schemes, so each test watches the gate alone.
"""

from __future__ import annotations

import json
import logging
from collections.abc import MutableMapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, Router

from mudrika.errors import InvalidInput, ReplayError, SignatureError
from mudrika.trust.jsonrpc import (
    TOO_MANY_REQUESTS,
    UNAVAILABLE,
    AuthenticationRequired,
    ErrorProfile,
    Refusal,
    refusal_for,
    refusal_for_denial,
)
from mudrika.trust.middleware import A2AAuthMiddleware, A2ARoutes, AuthRequest
from mudrika.trust.middleware._a2a import DEFAULT_PUBLIC_PATHS, _Answering, _merge
from mudrika.trust.middleware._auth import Authenticated
from mudrika.trust.middleware._gate import Echo
from mudrika.trust.middleware._http import ResponseCapture
from mudrika.trust.policy import Policy, Principal

ORIGIN = "http://127.0.0.1:8000"
EXTENSION = "https://extensions.example/required/v1"
POLICY = Policy.from_document(
    {
        "version": 1,
        "roles": [
            {"role_id": "r1", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"}
        ],
        "operations": {"message/send": {"min_level": "operator"}},
    }
)


class _App:
    """The server behind the gate: records every request that reaches it and answers each JSON-RPC
    call it was handed (``"ok"`` per call with an id), with a header of its own."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.states: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []
        self.headers: list[list[tuple[bytes, bytes]]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.paths.append(scope["path"])
        self.states.append(scope.get("state", {}))
        self.headers.append(list(scope.get("headers", [])))
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.bodies.append(body)
        document = json.loads(body) if body.strip()[:1] in (b"[", b"{") else {}
        calls = document if isinstance(document, list) else [document]
        results = [{"jsonrpc": "2.0", "result": "ok", "id": call["id"]} for call in calls if "id" in call]
        answer = json.dumps(results if isinstance(document, list) else (results or [{}])[0]).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(answer)).encode()),
            (b"x-app", b"its own"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})


@dataclass
class _BodyScheme:
    """A scheme that reads the body (as RFC 9421 does): it fails with ``failure`` or authenticates."""

    failure: Exception | None = None
    scheme: str = "http-message-signature"
    credential_headers: tuple[str, ...] | None = None

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        if self.failure is not None:
            raise self.failure
        return Authenticated(Principal("agent-7", roles=frozenset({"agent"})), self.scheme, "label-7")


def _gate(
    app: Any = None, *, scheme: Any = None, routes: A2ARoutes | None = None, policy: Policy = POLICY
) -> A2AAuthMiddleware:
    """The gate under test: ``app`` (a recording one by default) behind one body-reading scheme."""
    return A2AAuthMiddleware(
        _App() if app is None else app,
        authenticators=[_BodyScheme() if scheme is None else scheme],
        policy=policy,
        routes=routes,
    )


async def _send(
    gate: Any, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url=ORIGIN) as http:
        return await http.request(
            method, path, content=body, headers={"content-type": "application/json", **(headers or {})}
        )


# --- start-up and public paths ---------------------------------------------------------------------


def test_an_unknown_error_profile_is_a_configuration_error() -> None:
    with pytest.raises(InvalidInput) as info:
        A2ARoutes(error_profile="seed")
    assert info.value.code == "bad_config"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "path", ["/.well-known/agent-card.json", "/.well-known/agent.json", "/.well-known/did.json"]
)
async def test_each_documented_public_path_is_served_without_credentials(path: str) -> None:
    assert path in DEFAULT_PUBLIC_PATHS
    app = _App()
    answer = await _send(_gate(app), "GET", path)
    assert (answer.status_code, app.paths) == (200, [path])


# --- the ids a refusal echoes ---------------------------------------------------------------------

_UNAUTHENTICATED = refusal_for(AuthenticationRequired("no credentials", code="no_credentials"))
_DENIED = refusal_for_denial("no_role")


@pytest.mark.parametrize(
    ("refusal", "body", "expected_ids"),
    [
        # One call: its id, whatever the refusal.
        (TOO_MANY_REQUESTS, b'{"id": 7}', 7),
        (_UNAUTHENTICATED, b'{"id": 7}', 7),
        # A batch refused as unauthenticated or denied: one answer per call, as a list (even of one).
        (_UNAUTHENTICATED, b'[{"id": 1}, {"id": 2}]', [1, 2]),
        (_DENIED, b'[{"id": 1}, {"id": 2}]', [1, 2]),
        (_UNAUTHENTICATED, b'[{"id": 1}]', [1]),
        # Any other refusal of a batch is one answer: the only id, else none.
        (TOO_MANY_REQUESTS, b'[{"id": 1}]', 1),
        (UNAVAILABLE, b'[{"id": 1}, {"id": 2}]', None),
    ],
)
def test_the_ids_a_refusal_echoes(refusal: Refusal, body: bytes, expected_ids: Any) -> None:
    answer = _Answering(ErrorProfile.BINDU, rest=False).body(refusal, Echo(body=body))
    if isinstance(expected_ids, list):
        assert isinstance(answer, list)
        assert [item["id"] for item in answer] == expected_ids
        assert {item["error"]["code"] for item in answer} == {
            refusal.error_object(ErrorProfile.BINDU)["code"]
        }
    else:
        assert isinstance(answer, dict)
        assert answer["id"] == expected_ids


@pytest.mark.anyio
@pytest.mark.parametrize(("method", "path", "echoed"), [("POST", "/", 5), ("POST", "/message:send", None)])
async def test_an_authentication_refusal_echoes_ids_only_for_json_rpc(
    method: str, path: str, echoed: int | None
) -> None:
    """A refusal after the body was read echoes the call's id on the JSON-RPC endpoint only: a REST
    body's ``id`` member is the resource's business, not a request id (bindu spelling, which puts an
    ``id`` in REST answers too)."""
    gate = _gate(scheme=_BodyScheme(failure=SignatureError("bad", code="bad_signature")))
    answer = await _send(gate, method, path, b'{"jsonrpc": "2.0", "id": 5, "method": "message/send"}')
    assert answer.status_code == 401
    assert answer.json()["id"] == echoed


# --- extensions -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_malformed_extensions_header_is_refused_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    app = _App()
    gate = _gate(app)
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _send(
            gate, "POST", "/", b'{"id": 1, "method": "message/send"}', {"A2A-Extensions": "not a uri"}
        )
    assert (answer.status_code, app.paths) == (400, [])
    assert any("bad A2A-Extensions from agent-7" in record.getMessage() for record in caplog.records)


_OTHER_EXTENSION = "https://extensions.example/also-required/v1"
_INFO = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    "reason": "EXTENSION_SUPPORT_REQUIRED",
    "domain": "a2a-protocol.org",
    "metadata": {"extensions": ",".join(sorted([EXTENSION, _OTHER_EXTENSION]))},
}
_MESSAGE = "Extension support required"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "body", "version", "expected"),
    [
        (
            "/",
            b'{"id": 9, "method": "message/send"}',
            "1.0",
            {"jsonrpc": "2.0", "error": {"code": -32008, "message": _MESSAGE, "data": [_INFO]}, "id": 9},
        ),
        (
            "/",
            b'{"id": 9, "method": "message/send"}',
            None,
            {"jsonrpc": "2.0", "error": {"code": -32008, "message": _MESSAGE}, "id": 9},
        ),
        (
            "/",
            b'[{"id": 1, "method": "message/send"}, {"id": 2, "method": "message/send"}]',
            None,
            {"jsonrpc": "2.0", "error": {"code": -32008, "message": _MESSAGE}, "id": None},
        ),
        (
            "/message:send",
            b'{"id": 9, "message": {}}',
            "1.0",
            {
                "error": {
                    "code": 400,
                    "status": "FAILED_PRECONDITION",
                    "message": _MESSAGE,
                    "details": [_INFO],
                }
            },
        ),
        (
            "/message:send",
            b'{"id": 9, "message": {}}',  # a REST body's "id" is not a request id
            None,
            {"jsonrpc": "2.0", "error": {"code": -32008, "message": _MESSAGE}, "id": None},
        ),
    ],
)
async def test_the_extension_refusal_is_spelled_for_each_binding_and_profile(
    path: str, body: bytes, version: str | None, expected: dict[str, Any]
) -> None:
    """A2A's ``ExtensionSupportRequiredError``, whole: JSON-RPC −32008 with the ``ErrorInfo`` under
    A2A 1.0 (``data``), without it for older clients; REST 400 ``FAILED_PRECONDITION`` with it in
    ``details``; every missing extension named, sorted, comma-separated; an id only for one call."""
    gate = _gate(routes=A2ARoutes(required_extensions=[_OTHER_EXTENSION, EXTENSION]))
    answer = await _send(gate, "POST", path, body, {"A2A-Version": version} if version else None)
    assert (answer.status_code, answer.json()) == (400, expected)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "a2a_spelling"),
    [
        ("a2a-version=1.0", True),
        ("A2A-Version=1.0", True),
        ("x=0.3&a2a-version=1.0", True),
        ("xa2a-version=1.0", False),  # a longer name that only contains it
        ("a2a-version=0.3", False),
        ("&".join(f"f{index}=1" for index in range(63)) + "&a2a-version=1.0", True),  # 64 fields: read
        ("&".join(f"f{index}=1" for index in range(64)) + "&a2a-version=1.0", False),  # 65: not read at all
        ("", False),
    ],
)
async def test_the_a2a_version_query_parameter_chooses_the_spelling(query: str, a2a_spelling: bool) -> None:
    """A2A 1.0 §3.6.1 allows the version as a query parameter: its exact name, any case, wherever it
    stands among the others; anything else leaves the older (bindu) spelling."""
    failing = _BodyScheme(
        failure=SignatureError("bad", code="bad_signature"), credential_headers=("Signature",)
    )
    gate = _gate(scheme=failing)
    signed = {"Signature": "sig=:AAAA:"}
    answer = await _send(gate, "POST", "/?" + query if query else "/", b'{"id": 1}', signed)
    # The same refusal spelled by the header, for each spelling: code and challenge alike.
    version = {"A2A-Version": "1.0" if a2a_spelling else "0.3"}
    spelled = await _send(gate, "POST", "/", b'{"id": 1}', {**signed, **version})
    assert answer.status_code == spelled.status_code == 401
    assert answer.json()["error"]["code"] == spelled.json()["error"]["code"]
    assert (answer.json()["error"]["code"] != -32012) is a2a_spelling
    assert answer.headers.get_list("www-authenticate") == spelled.headers.get_list("www-authenticate")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("method", "status"),
    [
        ("message/send", 200),  # an A2A method: its own operation
        ("custom/send", 200),  # an extra method, decided as the operation it maps to (allowed)
        ("custom/cancel", 403),  # an extra method mapped to an operation the policy does not grant
        ("ext/ping", 200),  # a method the policy names itself: its own operation
        ("nobody/knows", 404),  # none of those: never forwarded
    ],
)
async def test_a_call_is_decided_as_the_operation_its_method_names(method: str, status: int) -> None:
    app = _App()
    policy = Policy.from_document(
        {
            "version": 1,
            "roles": [
                {"role_id": "r1", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"}
            ],
            "operations": {"message/send": {"min_level": "operator"}, "ext/ping": {"min_level": "operator"}},
        }
    )
    gate = _gate(
        app,
        routes=A2ARoutes(extra_methods={"custom/send": "message/send", "custom/cancel": "tasks/cancel"}),
        policy=policy,
    )
    answer = await _send(gate, "POST", "/", f'{{"jsonrpc": "2.0", "id": 3, "method": "{method}"}}'.encode())
    assert answer.status_code == status
    assert app.paths == (["/"] if status == 200 else [])


@pytest.mark.anyio
async def test_a_rest_request_no_route_takes_is_refused_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    app = _App()
    gate = _gate(app)
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _send(gate, "POST", "/no/such:route", b"{}")
    assert (answer.status_code, answer.json()["error"]["code"], app.paths) == (404, -32601, [])
    assert any("no A2A route for POST /no/such:route" in record.getMessage() for record in caplog.records)


@pytest.mark.anyio
async def test_an_empty_batch_is_an_invalid_request_before_anything_else() -> None:
    """``[]`` is not a batch (JSON-RPC 2.0 §6): −32600 even where every call would also need an
    extension the request does not activate."""
    gate = _gate(routes=A2ARoutes(required_extensions=[EXTENSION]))
    answer = await _send(gate, "POST", "/", b"[]")
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, -32600)


@pytest.mark.anyio
async def test_an_unknown_method_is_logged_with_its_caller(caplog: pytest.LogCaptureFixture) -> None:
    gate = _gate()
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _send(gate, "POST", "/", b'{"jsonrpc": "2.0", "id": 4, "method": "nobody/knows"}')
    assert (answer.status_code, answer.json()["id"]) == (404, 4)
    assert any("unknown JSON-RPC method from agent-7" in record.getMessage() for record in caplog.records)


def _batch(*calls: tuple[str, int | None]) -> bytes:
    return json.dumps(
        [
            {"jsonrpc": "2.0", "method": method, **({} if request_id is None else {"id": request_id})}
            for method, request_id in calls
        ]
    ).encode()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("calls", "status"),
    [
        ((("nobody/knows", 1), ("nobody/either", 2)), 404),  # unknown methods: 404
        ((("nobody/knows", None),), 404),  # an unknown notification: no answer of its own, still 404
        ((("message/stream", 1),), 400),  # a stream cannot be answered inside a batch
        ((("tasks/resubscribe", 1),), 400),  # nor a resubscription (a stream too)
        ((("nobody/knows", 1), ("message/stream", 2)), 404),  # 404 outranks 400
    ],
)
async def test_a_batch_with_no_call_forwarded_answers_with_the_weightiest_status(
    calls: tuple[tuple[str, int | None], ...], status: int
) -> None:
    app = _App()
    gate = _gate(app)
    answer = await _send(gate, "POST", "/", _batch(*calls))
    assert (answer.status_code, app.paths) == (status, [])
    answered = answer.json() if isinstance(answer.json(), list) else [answer.json()]
    expected_ids: list[int | None] = [request_id for _, request_id in calls if request_id is not None] or [
        None
    ]
    assert [item["id"] for item in answered] == expected_ids


@pytest.mark.anyio
async def test_a_forwarded_batch_carries_one_decision_per_call() -> None:
    app = _App()
    gate = _gate(app)
    answer = await _send(gate, "POST", "/", _batch(("message/send", 1), ("message/send", 2)))
    assert answer.status_code == 200
    (state,) = app.states
    assert [decision.allowed for decision in state["mudrika.decisions"]] == [True, True]
    assert state["mudrika.tenants"] == (None, None)


@pytest.mark.anyio
async def test_a_call_denied_inside_a_batch_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    gate = _gate()
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _send(gate, "POST", "/", _batch(("tasks/cancel", 1)))
    assert answer.status_code == 403
    assert any("denied tasks/cancel for agent-7" in record.getMessage() for record in caplog.records)


@pytest.mark.anyio
async def test_a_batch_forwarded_whole_comes_back_as_the_app_answered() -> None:
    """Every call allowed and none refused: the app's own answer, byte for byte with its headers
    (nothing merged, nothing re-serialised)."""
    app = _App()
    gate = _gate(app)
    answer = await _send(gate, "POST", "/", _batch(("message/send", 1), ("message/send", 2)))
    assert answer.headers["x-app"] == "its own"
    assert (
        answer.content
        == b'[{"jsonrpc": "2.0", "result": "ok", "id": 1}, {"jsonrpc": "2.0", "result": "ok", "id": 2}]'
    )


@pytest.mark.anyio
async def test_a_denied_notification_never_reaches_the_app_even_with_nothing_to_answer_for_it() -> None:
    """A batch whose only refused member is a notification has no error to add, yet the app must
    get only the allowed calls."""
    app = _App()
    gate = _gate(app)
    answer = await _send(
        gate,
        "POST",
        "/",
        _batch(("message/send", 1), ("tasks/cancel", None)),
        {"transfer-encoding": "chunked"},
    )
    assert answer.status_code == 200
    forwarded = app.bodies[0]
    assert [call["method"] for call in json.loads(forwarded)] == ["message/send"]
    # The shorter body is framed by its own length, never by the client's framing headers.
    framing = [
        (name, value) for name, value in app.headers[0] if name in (b"content-length", b"transfer-encoding")
    ]
    assert framing == [(b"content-length", str(len(forwarded)).encode())]
    assert [item["id"] for item in answer.json()] == [1]


@pytest.mark.anyio
async def test_a_partly_refused_batch_merges_the_errors_into_the_apps_answer() -> None:
    app = _App()
    gate = _gate(app)
    answer = await _send(gate, "POST", "/", _batch(("message/send", 1), ("tasks/cancel", 2)))
    assert answer.status_code == 200
    assert [(item["id"], "error" in item) for item in answer.json()] == [(1, False), (2, True)]


@pytest.mark.anyio
async def test_a_denied_batch_carries_the_insufficient_scope_challenge_and_others_none() -> None:
    gate = _gate()
    denied = await _send(gate, "POST", "/", _batch(("tasks/cancel", 1)))
    unknown = await _send(gate, "POST", "/", _batch(("nobody/knows", 1)))
    assert denied.status_code == 403
    assert "insufficient_scope" in denied.headers["www-authenticate"]
    assert (unknown.status_code, "www-authenticate" in unknown.headers) == (404, False)


@pytest.mark.anyio
async def test_a_batch_whose_single_use_claim_fails_is_refused_unforwarded() -> None:
    async def replayed() -> None:
        raise ReplayError("nonce seen", code="replay")

    @dataclass
    class _Claiming(_BodyScheme):
        async def authenticate(self, request: AuthRequest) -> Authenticated | None:
            return Authenticated(
                Principal("agent-7", roles=frozenset({"agent"})),
                self.scheme,
                "label-7",
                pending_claim=replayed,
            )

    app = _App()
    gate = _gate(app, scheme=_Claiming())
    answer = await _send(gate, "POST", "/", _batch(("message/send", 1), ("message/send", 2)))
    assert (answer.status_code, app.paths) == (401, [])


_ERROR = {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": 2}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "content_type", "body", "expected"),
    [
        (
            200,
            b"application/json",
            b'[{"id": 1, "result": "ok"}]',
            (200, [{"id": 1, "result": "ok"}, _ERROR]),
        ),
        (
            200,
            b"Application/JSON; charset=utf-8",
            b'{"id": 1, "result": "ok"}',
            (200, [{"id": 1, "result": "ok"}, _ERROR]),
        ),
        # Anything the gate cannot merge goes back as the app sent it (its errors are not lost).
        (500, b"application/json", b'[{"id": 1, "result": "ok"}]', (500, b'[{"id": 1, "result": "ok"}]')),
        (200, b"text/plain", b"[1]", (200, b"[1]")),
        (200, b"application/json", b"[not json", (200, b"[not json")),
        (200, b"application/json", b'"a string"', (200, b'"a string"')),
    ],
)
async def test_the_apps_batch_answer_is_merged_only_when_it_is_json(
    status: int, content_type: bytes, body: bytes, expected: tuple[int, Any], caplog: pytest.LogCaptureFixture
) -> None:
    captured = ResponseCapture()
    await captured(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type), (b"x-app", b"1")],
        }
    )
    await captured({"type": "http.response.body", "body": body})
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        await _merge(send, captured, [_ERROR])
    passed_on = [record for record in caplog.records if "passed on without merging" in record.getMessage()]
    assert len(passed_on) == (0 if isinstance(expected[1], list) else 1)
    out = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    got = sent[0]["status"], json.loads(out) if isinstance(expected[1], list) else out
    assert got == expected


def _v03_server() -> Starlette:
    async def endpoint(request: Request) -> Response:
        return Response(b"{}")

    return Starlette(routes=[Route("/v1/message:send", endpoint, methods=["POST"])])


class _Wrapper:
    """An ASGI middleware that shows nothing but the app it wraps (``.app``)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


def _wrapped(app: Any, layers: int) -> Any:
    for _ in range(layers):
        app = _Wrapper(app)
    return app


@pytest.mark.parametrize(
    ("app", "served"),
    [
        (_v03_server(), True),
        (_wrapped(_v03_server(), 2), True),
        (_wrapped(_v03_server(), 15), True),  # the deepest a server is looked for
        (_wrapped(_v03_server(), 16), False),  # past it: shows nothing, so a2a-sdk's default (off)
        (Router(routes=_v03_server().routes), True),  # a router itself
        (SimpleNamespace(router=Router(routes=_v03_server().routes)), True),  # an app showing its router
        (SimpleNamespace(router=SimpleNamespace(routes=None), app=_v03_server()), True),
        (Starlette(routes=[]), False),
        (_App(), False),
    ],
)
def test_the_03_routes_are_discovered_through_wrappers_and_routers(app: Any, served: bool) -> None:
    gate = _gate(app)
    assert gate.enable_v0_3_compat is served
