"""Middleware attack matrix: one test per case, each asserting the exact JSON-RPC code (or status)."""

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

from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator, Limits
from tests._support.tokenfactory import Clock, LocalRealm, demo_policy

pytestmark = pytest.mark.security


class Recorder:
    def __init__(self) -> None:
        self.bodies: list[Any] = []
        self.app = Starlette(routes=[Route("/", self.rpc, methods=["POST"])])

    async def rpc(self, request: Request) -> Response:
        document = json.loads(await request.body())
        self.bodies.append(document)
        calls = document if isinstance(document, list) else [document]
        answers = [{"jsonrpc": "2.0", "result": "ok", "id": call.get("id")} for call in calls]
        return JSONResponse(answers if isinstance(document, list) else answers[0])


@pytest.fixture
def realm() -> LocalRealm:
    return LocalRealm(Clock())


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def client(realm: LocalRealm, recorder: Recorder) -> AsyncIterator[httpx.AsyncClient]:
    sync_client, async_client = realm.clients()
    jwks = JwksCache(
        jwks_uri=realm.jwks_uri,
        algorithms={"RS256"},
        clock=realm.clock,
        http_client=sync_client,
        async_http_client=async_client,
    )
    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience=realm.audience, azp_allowlist=None, jwks=jwks, clock=realm.clock
    )
    app = A2AAuthMiddleware(
        recorder.app,
        authenticators=[BearerAuthenticator(verifier)],
        policy=demo_policy(),
        limits=Limits(max_body_bytes=8192),
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent.test"
    ) as http:
        yield http
    sync_client.close()
    await async_client.aclose()


def _call(method: str, request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": {}, "id": request_id}


@pytest.mark.anyio
async def test_lowercase_bearer_scheme_is_accepted(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    response = await client.post(
        "/", json=_call("message/send"), headers={"authorization": f"bearer {realm.token()}"}
    )
    assert response.status_code == 200
    assert response.json()["result"] == "ok"
    assert len(recorder.bodies) == 1


@pytest.mark.anyio
async def test_token_in_query_string_is_ignored(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    response = await client.post("/", params={"access_token": realm.token()}, json=_call("message/send", 5))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == -32009
    assert response.json()["id"] is None  # answered before the body (and its id) was read
    assert recorder.bodies == []


@pytest.mark.anyio
async def test_oversized_chunked_body_is_413(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    sent = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal sent
        while sent < 10_000_000:
            sent += 4096
            yield b" " * 4096

    response = await client.post("/", content=endless(), headers={"Authorization": f"Bearer {realm.token()}"})
    assert response.status_code == 413
    assert response.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "Request too large"},
        "id": None,
    }
    assert sent < 10_000_000  # reading stopped at the cap, the stream was not drained
    assert recorder.bodies == []


@pytest.mark.anyio
async def test_non_utf8_body_is_parse_error(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    body = '{"jsonrpc":"2.0","method":"message/send","id":1,"params":{"text":"é"}}'.encode("latin-1")
    response = await client.post(
        "/",
        content=body,
        headers={"Authorization": f"Bearer {realm.token()}", "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "Parse error"},
        "id": None,
    }
    assert recorder.bodies == []


@pytest.mark.anyio
async def test_unknown_method_is_method_not_found(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    response = await client.post(
        "/", json=_call("tasks/deleteEverything", "u1"), headers={"Authorization": f"Bearer {realm.token()}"}
    )
    assert response.status_code == 404
    assert response.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32601, "message": "Method not found"},
        "id": "u1",
    }
    assert recorder.bodies == []


@pytest.mark.anyio
async def test_batch_mixing_allowed_and_denied_calls(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    batch = [_call("message/send", 1), _call("tasks/cancel", 2), _call("CancelTask", 3), _call("GetTask", 4)]
    response = await client.post("/", json=batch, headers={"Authorization": f"Bearer {realm.token()}"})
    assert response.status_code == 200
    assert recorder.bodies == [[_call("message/send", 1), _call("GetTask", 4)]]  # denied calls never reach it
    by_id = {item["id"]: item for item in response.json()}
    assert by_id[1]["result"] == "ok"
    assert by_id[4]["result"] == "ok"
    assert by_id[2]["error"] == {"code": -32013, "message": "Forbidden"}
    assert by_id[3]["error"] == {"code": -32013, "message": "Forbidden"}


# --- error profiles, tenants and extensions: the answer's spelling never changes the decision ----


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["0.3", "1.0", "9.9", "1.0\x00", "x" * 300, ""])
async def test_a2a_version_changes_only_the_spelling_never_the_decision(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder, version: str
) -> None:
    headers = {"Authorization": f"Bearer {realm.token()}", "A2A-Version": version}
    denied = await client.post("/", json=_call("tasks/cancel", 5), headers=headers)
    assert denied.status_code == 403
    assert denied.json()["error"]["code"] in (-32013, -31403)
    assert denied.json()["id"] == 5
    assert recorder.bodies == []


@pytest.mark.anyio
async def test_a2a_profile_body_carries_no_credential_or_check_detail(
    client: httpx.AsyncClient, realm: LocalRealm
) -> None:
    token = realm.token(iss="https://attacker.example/realms/x")
    answer = await client.post(
        "/", json=_call("message/send"), headers={"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
    )
    assert answer.status_code == 401
    text = answer.text
    assert token not in text
    assert "attacker" not in text
    (info,) = answer.json()["error"]["data"]
    assert info == {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "INVALID_TOKEN",
        "domain": "mudrika.trust",
        "metadata": {"scheme": "Bearer"},
    }


@pytest.mark.anyio
@pytest.mark.parametrize("tenant", [123, None, {"name": "acme"}, ["acme"], True])
async def test_non_string_tenant_is_refused_not_ignored(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder, tenant: Any
) -> None:
    # A tenant the middleware could not read must not reach an app that might read it differently.
    call = {"jsonrpc": "2.0", "method": "message/send", "params": {"tenant": tenant}, "id": 1}
    answer = await client.post("/", json=call, headers={"Authorization": f"Bearer {realm.token()}"})
    assert answer.status_code == 400  # JSON null is not a string either
    assert answer.json()["error"]["code"] == -32600
    assert recorder.bodies == []


@pytest.mark.anyio
async def test_a_token_without_tenants_cannot_name_one(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    # (A2A 1.0's SendMessage: an A2A 0.3 method naming a tenant is refused as invalid before this.)
    call = {"jsonrpc": "2.0", "method": "SendMessage", "params": {"tenant": "acme"}, "id": 1}
    answer = await client.post("/", json=call, headers={"Authorization": f"Bearer {realm.token()}"})
    assert answer.status_code == 403
    assert answer.json()["error"] == {"code": -32013, "message": "Forbidden for this tenant"}
    assert recorder.bodies == []


@pytest.mark.anyio
async def test_extension_header_flood_is_refused(
    client: httpx.AsyncClient, realm: LocalRealm, recorder: Recorder
) -> None:
    flood = ",".join(f"https://e.example/{n}" for n in range(1000))
    headers = {"Authorization": f"Bearer {realm.token()}", "A2A-Extensions": flood}
    answer = await client.post("/", json=_call("message/send"), headers=headers)
    assert answer.status_code == 400
    assert recorder.bodies == []
