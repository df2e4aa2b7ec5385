"""A2AAuthMiddleware in front of a Starlette echo app, through httpx.ASGITransport."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mudrika.errors import IdpUnavailable, InvalidInput, ResolutionError, UnavailableError
from mudrika.trust.jsonrpc import InvalidToken
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import (
    PRINCIPAL_KEY,
    A2AAuthMiddleware,
    A2ARoutes,
    Authenticated,
    AuthRequest,
    BearerAuthenticator,
    Limits,
)
from mudrika.trust.policy import Principal
from tests._support.tokenfactory import Clock, LocalRealm, demo_policy


class Echo:
    """A JSON-RPC echo app that records every call that reaches it."""

    def __init__(self) -> None:
        self.calls: list[Any] = []
        self.seen: list[dict[str, Any]] = []
        routes = [
            Route("/", self.rpc, methods=["POST"]),
            Route("/tasks/{id}", self.rest, methods=["GET"]),
            Route("/.well-known/agent-card.json", self.card, methods=["GET"]),
        ]
        self.app = Starlette(routes=routes)

    async def rpc(self, request: Request) -> Response:
        body = await request.body()
        document = json.loads(body)
        self.calls.append(document)
        principal = request.scope["state"][PRINCIPAL_KEY]
        self.seen.append(
            {
                "user": request.user.display_name,
                "authenticated": request.user.is_authenticated,
                "scopes": request.auth.scopes,
                "principal": principal.subject,
                "content_length": request.headers.get("content-length"),
            }
        )
        if isinstance(document, list):
            return JSONResponse(
                [{"jsonrpc": "2.0", "result": call["method"], "id": call.get("id")} for call in document]
            )
        return JSONResponse({"jsonrpc": "2.0", "result": document["method"], "id": document.get("id")})

    async def rest(self, request: Request) -> Response:
        self.calls.append(("GET", request.path_params["id"]))
        return JSONResponse({"id": request.path_params["id"]})

    async def card(self, request: Request) -> Response:
        self.calls.append("card")
        assert request.scope["state"][PRINCIPAL_KEY] is None
        return JSONResponse({"name": "echo"})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def echo() -> Echo:
    return Echo()


@pytest.fixture
async def client(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, echo: Echo
) -> AsyncIterator[httpx.AsyncClient]:
    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience="agent-api", azp_allowlist=None, jwks=jwks, clock=clock
    )
    app = A2AAuthMiddleware(
        echo.app,
        authenticators=[BearerAuthenticator(verifier)],
        policy=demo_policy(),
        limits=Limits(max_body_bytes=4096),
        realm="mudrika",
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent.test"
    ) as http:
        yield http


def _call(method: str, request_id: Any = 1, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": request_id}


def _auth(realm: LocalRealm, **claims: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {realm.token(**claims)}"}


@pytest.mark.anyio
async def test_allowed_call_reaches_app_with_principal(
    client: httpx.AsyncClient, realm: LocalRealm, echo: Echo
) -> None:
    response = await client.post("/", json=_call("message/send", 7), headers=_auth(realm))
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "result": "message/send", "id": 7}
    assert echo.seen[0]["principal"] == "5f1c1c7e-8e2a-4a0e-9d53-7c5b0f1f2a10"
    assert echo.seen[0]["user"] == echo.seen[0]["principal"]
    assert echo.seen[0]["authenticated"] is True
    assert echo.seen[0]["scopes"] == ["email", "profile"]


@pytest.mark.anyio
async def test_a2a_v10_method_name_is_mapped(
    client: httpx.AsyncClient, realm: LocalRealm, echo: Echo
) -> None:
    response = await client.post("/", json=_call("SendMessage"), headers=_auth(realm))
    assert response.status_code == 200
    denied = await client.post("/", json=_call("CancelTask", "c1"), headers=_auth(realm))
    assert denied.status_code == 403
    assert denied.json()["error"]["code"] == -32013
    assert denied.json()["id"] == "c1"
    assert len(echo.calls) == 1


@pytest.mark.anyio
async def test_no_token(client: httpx.AsyncClient, echo: Echo) -> None:
    # Answered before the body is read (pre-auth limit), so the id is unknown: null (JSON-RPC 2.0 §5).
    response = await client.post("/", json=_call("message/send", "abc"))
    assert response.status_code == 401
    assert response.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32009, "message": "Authentication required"},
        "id": None,
    }
    assert response.headers["www-authenticate"] == 'Bearer realm="mudrika"'
    assert echo.calls == []


@pytest.mark.anyio
async def test_invalid_token_challenge(client: httpx.AsyncClient, realm: LocalRealm) -> None:
    response = await client.post("/", json=_call("message/send"), headers=_auth(realm, aud="elsewhere"))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == -32010
    assert response.headers["www-authenticate"] == 'Bearer realm="mudrika", error="invalid_token"'


@pytest.mark.anyio
async def test_policy_denial_is_403(client: httpx.AsyncClient, realm: LocalRealm, echo: Echo) -> None:
    response = await client.post("/", json=_call("tasks/cancel", 3), headers=_auth(realm))
    assert response.status_code == 403
    assert response.json() == {"jsonrpc": "2.0", "error": {"code": -32013, "message": "Forbidden"}, "id": 3}
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]
    assert echo.calls == []


@pytest.mark.anyio
async def test_other_scheme_is_no_credentials(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/", json=_call("message/send"), headers={"Authorization": "Basic dXNlcjpwYXNz"}
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == -32009


@pytest.mark.anyio
async def test_two_authorization_headers_refused(client: httpx.AsyncClient, realm: LocalRealm) -> None:
    token = realm.token()
    headers = [("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {token}")]
    response = await client.post("/", json=_call("message/send"), headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == -32010


@pytest.mark.anyio
async def test_public_path_needs_no_token(client: httpx.AsyncClient, echo: Echo) -> None:
    response = await client.get("/.well-known/agent-card.json")
    assert response.status_code == 200
    assert echo.calls == ["card"]
    posted = await client.post("/.well-known/agent-card.json", content=b"{}")
    assert posted.status_code == 401


@pytest.mark.anyio
async def test_rest_route_allowed_and_denied(
    client: httpx.AsyncClient, realm: LocalRealm, echo: Echo
) -> None:
    response = await client.get("/tasks/t-1", headers=_auth(realm))
    assert response.status_code == 200
    assert echo.calls == [("GET", "t-1")]
    cancel = await client.post("/tasks/t-1:cancel", headers=_auth(realm))
    assert cancel.status_code == 403
    assert cancel.json() == {"jsonrpc": "2.0", "error": {"code": -32013, "message": "Forbidden"}, "id": None}
    unknown = await client.get("/admin/secrets", headers=_auth(realm))
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == -32601
    assert len(echo.calls) == 1


@pytest.mark.anyio
async def test_unknown_method_never_reaches_app(
    client: httpx.AsyncClient, realm: LocalRealm, echo: Echo
) -> None:
    response = await client.post("/", json=_call("admin/shutdown", 9), headers=_auth(realm))
    assert response.status_code == 404
    assert response.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32601, "message": "Method not found"},
        "id": 9,
    }
    assert echo.calls == []


@pytest.mark.anyio
async def test_parse_errors(client: httpx.AsyncClient, realm: LocalRealm, echo: Echo) -> None:
    for body in (b"{not json", b"\xff\xfe{}", b'{"a": NaN}', b"[" * 1500 + b"]" * 1500):
        response = await client.post("/", content=body, headers=_auth(realm))
        assert response.status_code == 400
        assert response.json() == {
            "jsonrpc": "2.0",
            "error": {"code": -32700, "message": "Parse error"},
            "id": None,
        }
    documents: list[Any] = [[], "x", 3, {"method": 5, "id": 1}]
    for document in documents:
        response = await client.post("/", json=document, headers=_auth(realm))
        assert response.status_code == 400
        assert response.json()["error"]["code"] == -32600
    assert echo.calls == []


@pytest.mark.anyio
async def test_body_cap_with_content_length(client: httpx.AsyncClient, realm: LocalRealm, echo: Echo) -> None:
    response = await client.post("/", content=b" " * 5000, headers=_auth(realm))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == -32600
    assert echo.calls == []


@pytest.mark.anyio
async def test_body_cap_chunked(client: httpx.AsyncClient, realm: LocalRealm, echo: Echo) -> None:
    produced = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal produced
        for _ in range(100):
            produced += 1
            yield b" " * 1000

    response = await client.post("/", content=chunks(), headers=_auth(realm))
    assert response.status_code == 413
    assert echo.calls == []


@pytest.mark.anyio
async def test_batch_all_allowed_forwarded_unchanged(
    client: httpx.AsyncClient, realm: LocalRealm, echo: Echo
) -> None:
    batch = [_call("message/send", 1), _call("tasks/get", 2)]
    response = await client.post("/", json=batch, headers=_auth(realm))
    assert response.status_code == 200
    assert echo.calls == [batch]
    assert [item["id"] for item in response.json()] == [1, 2]


@pytest.mark.anyio
async def test_batch_mixed_forwards_only_allowed(
    client: httpx.AsyncClient, realm: LocalRealm, echo: Echo
) -> None:
    batch = [
        _call("message/send", 1),
        _call("tasks/cancel", 2),
        {"jsonrpc": "2.0", "method": "tasks/cancel"},  # a denied notification: no answer
        _call("nope/nope", 3),
        _call("message/stream", 4),  # streams cannot be part of a batch answer
        "garbage",
        _call("tasks/get", 5),
    ]
    response = await client.post("/", json=batch, headers=_auth(realm))
    assert response.status_code == 200
    assert echo.calls == [[_call("message/send", 1), _call("tasks/get", 5)]]
    forwarded_length = len(json.dumps(echo.calls[0], separators=(",", ":")))
    assert echo.seen[0]["content_length"] == str(forwarded_length)
    answers = {item["id"]: item for item in response.json() if item["id"] is not None}
    assert answers[1]["result"] == "message/send"
    assert answers[5]["result"] == "tasks/get"
    assert answers[2]["error"]["code"] == -32013
    assert answers[3]["error"]["code"] == -32601
    assert answers[4]["error"]["code"] == -32600
    assert len(response.json()) == 6  # 2 results + 3 id'd errors + 1 for the garbage entry


@pytest.mark.anyio
async def test_batch_all_denied(client: httpx.AsyncClient, realm: LocalRealm, echo: Echo) -> None:
    batch = [_call("tasks/cancel", 1), _call("CancelTask", 2)]
    response = await client.post("/", json=batch, headers=_auth(realm))
    assert response.status_code == 403
    assert [item["error"]["code"] for item in response.json()] == [-32013, -32013]
    assert echo.calls == []


@pytest.mark.anyio
async def test_batch_auth_failure_echoes_every_id(echo: Echo) -> None:
    # A scheme that needs the body (here a stand-in signature scheme) fails after reading it, so
    # every id can be echoed; header-only schemes (Bearer) fail before, with id null.
    class Forged:
        credential_headers = frozenset({"signature"})

        async def authenticate(self, request: AuthRequest) -> Authenticated | None:
            assert request.body  # read before deciding
            raise InvalidToken("bad signature", code="bad_signature")

    app = A2AAuthMiddleware(echo.app, authenticators=[Forged()], policy=demo_policy())
    batch = [_call("message/send", 1), _call("tasks/get", 2), {"jsonrpc": "2.0", "method": "tasks/get"}]
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent.test"
    ) as http:
        response = await http.post("/", json=batch, headers={"Signature": "forged"})
    assert response.status_code == 401
    assert [(item["id"], item["error"]["code"]) for item in response.json()] == [(1, -32010), (2, -32010)]


@pytest.mark.anyio
async def test_bearer_failures_are_answered_before_the_body(
    client: httpx.AsyncClient, realm: LocalRealm, echo: Echo
) -> None:
    batch = [_call("message/send", 1), _call("tasks/get", 2)]
    response = await client.post("/", json=batch, headers=_auth(realm, aud="elsewhere"))
    assert (response.status_code, response.json()["error"]["code"], response.json()["id"]) == (
        401,
        -32010,
        None,
    )
    assert response.headers["connection"] == "close"
    without = await client.post("/", json=batch)  # no credentials: answered before the body is read
    assert (without.status_code, without.json()["id"]) == (401, None)
    assert echo.calls == []


@pytest.mark.anyio
async def test_idp_unavailable_is_503(client: httpx.AsyncClient, realm: LocalRealm, echo: Echo) -> None:
    realm.fail = True
    response = await client.post("/", json=_call("message/send", 4), headers=_auth(realm))
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert response.json() == {  # decided from the headers, before the body (and its id) was read
        "jsonrpc": "2.0",
        "error": {"code": -32010, "message": "Authentication unavailable"},
        "id": None,
    }
    assert echo.calls == []


@pytest.mark.anyio
async def test_non_http_scopes_pass_through() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    class Never:
        async def authenticate(self, request: AuthRequest) -> Authenticated | None:
            raise AssertionError("must not be called")

    middleware = A2AAuthMiddleware(app, authenticators=[Never()], policy=demo_policy())

    async def receive() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def send(message: Any) -> None:
        return None

    await middleware({"type": "lifespan"}, receive, send)
    await middleware({"type": "websocket", "path": "/", "headers": []}, receive, send)
    assert seen == ["lifespan", "websocket"]


class _Static:
    """A second scheme: proves authenticators are pluggable and see the buffered body."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        if not request.header_values("signature"):
            return None
        self.bodies.append(request.body)
        if request.header_values("signature") != ["ok"]:
            raise IdpUnavailable("resolver down", code="resolution_failed")
        principal = Principal(subject="did:example:agent", roles=frozenset({"agent"}))
        return Authenticated(principal=principal, scheme="Signature", credential_id="sig")


@pytest.mark.anyio
async def test_pluggable_authenticator(echo: Echo) -> None:
    static = _Static()

    class Broken:
        async def authenticate(self, request: AuthRequest) -> Authenticated | None:
            if request.header_values("x-broken"):
                raise RuntimeError("bug")
            return None

    app = A2AAuthMiddleware(echo.app, authenticators=[Broken(), static], policy=demo_policy())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent.test"
    ) as http:
        body = json.dumps(_call("message/send")).encode()
        response = await http.post("/", content=body, headers={"Signature": "ok"})
        assert response.status_code == 200
        assert static.bodies == [body]
        assert echo.seen[0]["principal"] == "did:example:agent"
        down = await http.post("/", content=body, headers={"Signature": "bad"})
        assert down.status_code == 503
        broken = await http.post("/", content=body, headers={"X-Broken": "1"})
        assert broken.status_code == 401
        assert broken.json()["error"]["code"] == -32010


@pytest.mark.anyio
@pytest.mark.parametrize(
    "error",
    [
        UnavailableError("replay store down", code="replay_store_unavailable"),
        ResolutionError("resolver down", code="internalError"),
    ],
)
async def test_any_unavailable_dependency_fails_closed_with_503(echo: Echo, error: UnavailableError) -> None:
    class Down:
        async def authenticate(self, request: AuthRequest) -> Authenticated | None:
            raise error

    app = A2AAuthMiddleware(echo.app, authenticators=[Down()], policy=demo_policy())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent.test"
    ) as http:
        response = await http.post("/", json=_call("message/send"))
    assert response.status_code == 503
    assert response.headers["retry-after"]
    assert response.json()["error"]["code"] == -32010
    assert echo.calls == []


@pytest.mark.anyio
async def test_authenticators_see_the_raw_path(echo: Echo) -> None:
    seen: list[bytes | None] = []

    class Recorder:
        async def authenticate(self, request: AuthRequest) -> Authenticated | None:
            seen.append(request.raw_path)
            return None

    app = A2AAuthMiddleware(echo.app, authenticators=[Recorder()], policy=demo_policy())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent.test"
    ) as http:
        await http.get("/tasks/a%7Eb")
    assert seen == [b"/tasks/a%7Eb"]


class _NoAuth:
    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        return None


def _a2a_rest_app(v03: bool, prefix: str = "") -> Starlette:
    from a2a.server.routes import create_rest_routes

    class Handler:
        def __getattr__(self, name: str) -> object:
            return lambda *args, **kwargs: None

    return Starlette(routes=create_rest_routes(Handler(), enable_v0_3_compat=v03, path_prefix=prefix))  # type: ignore[arg-type]


class _Wrapper:
    """Some other ASGI middleware between ours and the app (it shows the app as ``.app``)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


@pytest.mark.parametrize("prefix", ["", "/a2a"])
@pytest.mark.parametrize("v03", [False, True])
@pytest.mark.parametrize("wrap", [lambda app: app, _Wrapper], ids=["direct", "wrapped"])
def test_the_rest_route_table_is_read_from_the_wrapped_app(v03: bool, prefix: str, wrap: Any) -> None:
    app = wrap(_a2a_rest_app(v03, prefix))
    gate = A2AAuthMiddleware(
        app, authenticators=[_NoAuth()], policy=demo_policy(), routes=A2ARoutes(rest_prefix=prefix)
    )
    assert gate.enable_v0_3_compat is v03
    same = A2AAuthMiddleware(
        app,
        authenticators=[_NoAuth()],
        policy=demo_policy(),
        routes=A2ARoutes(rest_prefix=prefix, enable_v0_3_compat=v03),
    )
    assert same.enable_v0_3_compat is v03
    with pytest.raises(InvalidInput) as info:
        A2AAuthMiddleware(
            app,
            authenticators=[_NoAuth()],
            policy=demo_policy(),
            routes=A2ARoutes(rest_prefix=prefix, enable_v0_3_compat=not v03),
        )
    assert (info.value.code, info.value.fields["option"]) == ("bad_config", "enable_v0_3_compat")


@pytest.mark.parametrize("configured", [None, False, True])
def test_an_app_that_shows_no_routes_gets_the_configured_table_or_the_sdk_default(
    configured: bool | None,
) -> None:
    async def opaque(scope: Any, receive: Any, send: Any) -> None:
        return None

    gate = A2AAuthMiddleware(
        opaque,
        authenticators=[_NoAuth()],
        policy=demo_policy(),
        routes=A2ARoutes(enable_v0_3_compat=configured),
    )
    assert gate.enable_v0_3_compat is bool(configured)
