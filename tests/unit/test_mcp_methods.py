"""MCP calls as policy operations, the MCP SDK's own resource-server auth over mudrika's verifier,
and a refusal as the calling side reads it."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import AnyHttpUrl

from mudrika.errors import InvalidInput
from mudrika.trust.a2a.client import refusal_of
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.mcp.methods import (
    CLIENT_NOTIFICATIONS,
    MCP_METHODS,
    SESSION_OPERATION,
    is_known,
    operation_for,
    operation_for_call,
)
from mudrika.trust.mcp.sdk import McpTokenVerifier
from tests._support.tokenfactory import Clock, LocalRealm

RESOURCE = "http://127.0.0.1:8000/mcp"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


# --- the operations a call is decided as -------------------------------------------------------------


def test_a_tool_call_is_decided_by_name_then_method_then_family() -> None:
    assert operation_for_call("tools/call", {"name": "refund"}) == [
        "tools/call:refund",
        "tools/call",
        "tools/*",
    ]
    assert operation_for_call("prompts/get", {"name": "greet"}) == [
        "prompts/get:greet",
        "prompts/get",
        "prompts/*",
    ]
    assert operation_for_call("notifications/roots/list_changed", None) == [
        "notifications/roots/list_changed",
        "notifications/roots/*",
        "notifications/*",
    ]
    # A name that is not a non-empty string names nothing: the call is decided by its method.
    for params in ({"name": 7}, {"name": ""}, ["refund"], None):
        assert operation_for_call("tools/call", params) == ["tools/call", "tools/*"]
    # A long name is still its own operation: a cap would hand it to a looser rule.
    long_name = "x" * 10_000
    assert operation_for_call("tools/call", {"name": long_name})[0] == f"tools/call:{long_name}"


def test_the_most_specific_named_operation_wins_and_an_unnamed_call_is_its_method() -> None:
    named = {"tools/call:wipe", "tools/*"}
    assert operation_for("tools/call", {"name": "wipe"}, named.__contains__) == "tools/call:wipe"
    assert operation_for("tools/call", {"name": "echo"}, named.__contains__) == "tools/*"
    assert operation_for("resources/list", {}, named.__contains__) == "resources/list"


def test_the_table_knows_mcp_and_nothing_else() -> None:
    assert SESSION_OPERATION in MCP_METHODS
    assert all(is_known(name) for name in MCP_METHODS | CLIENT_NOTIFICATIONS)
    for name in ("tools/delete", "SendMessage", "notifications/made_up", "", "tools/call:x"):
        assert not is_known(name)


# --- the SDK's own auth, with mudrika's verifier behind it -----------------------------------------


@pytest.mark.anyio
async def test_the_sdk_resource_server_runs_on_mudrikas_verifier(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience=RESOURCE, azp_allowlist=None, jwks=jwks, clock=clock
    )
    adapter = McpTokenVerifier(verifier, resource=RESOURCE)
    server = MCPServer(
        name="sdk-auth",
        version="1.0",
        token_verifier=adapter,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(realm.issuer),
            resource_server_url=AnyHttpUrl(RESOURCE),
            validate_token_resource=True,
        ),
    )

    @server.tool(description="Who called")
    def whoami() -> dict[str, Any]:
        token = get_access_token()
        assert token is not None
        return {"client_id": token.client_id, "token": token.token, "resource": token.resource}

    app = server.streamable_http_app(stateless_http=True, json_response=True)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    # The SDK checks ``expires_at`` against the wall clock itself; the realm's clock is fixed in 2023.
    good = realm.token(aud=[RESOURCE], exp=int(time.time()) + 300)
    async with (
        server.session_manager.run(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000") as http,
    ):
        answer = await http.post(
            "/mcp", content=json.dumps(call), headers={**ACCEPT, "authorization": f"Bearer {good}"}
        )
        foreign = await http.post(
            "/mcp",
            content=json.dumps(call),
            headers={**ACCEPT, "authorization": f"Bearer {realm.token(aud=['agent-api'])}"},
        )
    assert answer.status_code == 200
    seen = json.loads(answer.json()["result"]["content"][0]["text"])
    assert seen["client_id"] == "agent-gateway"
    assert seen["resource"] == RESOURCE
    assert seen["token"] != good
    assert good not in json.dumps(seen)
    assert foreign.status_code == 401  # the SDK's answer when the adapter says None
    assert "mcp" in repr(adapter)
    assert good not in repr(adapter)
    with pytest.raises(InvalidInput):
        McpTokenVerifier(object(), resource=RESOURCE)  # type: ignore[arg-type]


# --- the calling side ----------------------------------------------------------------------------------


def _error(status: int, body: Any, *challenges: str) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "https://agent.example/")
    headers = [("www-authenticate", value) for value in challenges]
    response = httpx.Response(status, content=json.dumps(body).encode(), headers=headers, request=request)
    return httpx.HTTPStatusError("refused", request=request, response=response)


def test_refusal_of_reads_every_body_shape_down_the_cause_chain() -> None:
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "INVALID_TOKEN",
        "metadata": {"scheme": "Bearer"},
    }
    jsonrpc = _error(
        401,
        {"jsonrpc": "2.0", "error": {"code": -31401, "message": "Invalid token", "data": [info]}, "id": 1},
        'Bearer realm="a", error="invalid_token"',
        'Signature realm="a"',
    )
    try:
        raise RuntimeError("HTTP Error 401") from jsonrpc
    except RuntimeError as wrapped:
        seen = refusal_of(wrapped)
    assert seen is not None
    assert (seen.status, seen.reason, seen.scheme, seen.code, seen.message) == (
        401,
        "INVALID_TOKEN",
        "Bearer",
        -31401,
        "Invalid token",
    )
    assert seen.challenges == ('Bearer realm="a", error="invalid_token"', 'Signature realm="a"')
    rest = refusal_of(
        _error(
            403,
            {
                "error": {
                    "code": 403,
                    "status": "PERMISSION_DENIED",
                    "message": "Forbidden",
                    "details": [info | {"reason": "WRONG_TENANT"}],
                }
            },
        )
    )
    assert rest is not None
    assert (rest.reason, rest.code) == ("WRONG_TENANT", None)
    oauth = refusal_of(_error(403, {"error": "insufficient_scope", "error_description": "Forbidden"}))
    assert oauth is not None
    assert (oauth.reason, oauth.message) == ("insufficient_scope", "Forbidden")
    not_json = refusal_of(_error(502, "x"))
    assert not_json is not None
    assert (not_json.status, not_json.reason) == (502, None)
    assert refusal_of(ValueError("no response anywhere")) is None
