"""The official MCP conformance suite (``@modelcontextprotocol/conformance`` 0.1.16, every server
scenario) against the MCP app under test, served by uvicorn on 127.0.0.1.

The app under test comes from one hook, :func:`protected_mcp_app`: the fixture server
(``tests/_support/mcp_everything.py``) behind ``protect(..., protocol="mcp")``, with a real token of
the Keycloak-shaped OpenID provider, reached through :func:`with_bearer` because the suite's runner
cannot send a token.  Every scenario must pass by the suite's own baseline rule (no FAILURE and no
WARNING check), except the few in :data:`NOT_APPLICABLE`, each with the reason measured for it; an
entry that starts passing fails the test, so the table cannot go stale.

Also here: the resumption the one not-applicable scenario cannot reach, checked directly; the
bearer-injecting wrapper; and the Keycloak-shaped realm whose tokens are issued for the MCP server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from mudrika.trust.middleware import protect
from mudrika.trust.policy import Policy
from tests._support import mcp_conformance
from tests._support.mcp_conformance import (
    ASGIApp,
    McpRealm,
    Message,
    Receive,
    ScenarioResult,
    Scope,
    Send,
    launch_mcp_realm,
    parse_results,
    run_conformance,
    server_scenarios,
    with_bearer,
)
from tests._support.mcp_everything import MCP_PATH, RETRY_INTERVAL_MS, everything_app
from tests._support.served import serve_asgi

pytestmark = pytest.mark.integration

#: Every server scenario of the pinned suite (``conformance list --server``), in its order.
SERVER_SCENARIOS = (
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
)

#: Scenarios that cannot pass against an ``mcp`` 2.3.0 server, with the reason measured for each.
#: They must still have no FAILURE check; only their WARNINGs are accepted.
NOT_APPLICABLE: dict[str, str] = {
    "server-sse-polling": (
        "its probe POSTs tools/call with 'MCP-Protocol-Version: 2025-03-26', and mcp 2.3.0 sends the "
        "SSE priming event (id, empty data, retry) and offers Context.close_sse_stream() only to "
        "clients at 2025-11-25 or later (older ones cannot parse an empty-data event), so the call "
        "answers on its POST stream: WARNINGs server-sse-priming-event and server-sse-retry-field. "
        "test_sse_stream_closed_mid_call_resumes_with_last_event_id checks the resumption at 2025-11-25."
    ),
}


#: The policy the conformance run is decided by: the realm role ``agent`` (what ``mcp-agent`` holds)
#: may use every MCP method the scenarios call, by family (``tools/*`` …) as an operator would write it.
CONFORMANCE_POLICY = {
    "version": 1,
    "roles": [
        {"role_id": "r-agent", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"}
    ],
    "operations": {
        name: {"min_level": "operator"}
        for name in (
            "initialize",
            "ping",
            "tools/*",
            "resources/*",
            "prompts/*",
            "notifications/*",
            "logging/setLevel",
            "completion/complete",
        )
    },
}


def protected_mcp_app(base_url: str, realm: McpRealm) -> ASGIApp:
    """The MCP app the whole module tests, served at ``base_url`` (MCP endpoint ``base_url + "/mcp"``,
    the ``aud`` of ``realm.token()``): the fixture server behind ``protect(..., protocol="mcp")``,
    its tokens checked against the realm's JWKS and the resource audience, every call decided by
    :data:`CONFORMANCE_POLICY`.  ``with_bearer`` stands in for a client holding a token, because the
    conformance runner connects with no headers at all."""
    assert realm.base_url == base_url
    protected = protect(
        everything_app(),
        policy=Policy.from_document(CONFORMANCE_POLICY),
        realm=realm.issuer,
        protocol="mcp",
        resource=base_url + MCP_PATH,
    )
    return with_bearer(protected, realm.token())


@pytest.fixture(scope="module")
def mcp_realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpRealm]:
    """The OpenID provider, with a client whose tokens are issued for this module's MCP server."""
    with launch_mcp_realm(tmp_path_factory.mktemp("mcp-realm")) as realm:
        yield realm


@pytest.fixture(scope="module")
def served_mcp(mcp_realm: McpRealm) -> Iterator[str]:
    """The app under test, served with its lifespan (which runs the MCP session manager)."""
    app = protected_mcp_app(mcp_realm.base_url, mcp_realm)
    with serve_asgi(app, port=mcp_realm.port, lifespan="on") as base_url:
        yield base_url


@pytest.fixture(scope="module")
def conformance_results(
    served_mcp: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, ScenarioResult]:
    """One run of the whole server suite (``--suite all``: the active and the pending scenarios)."""
    return run_conformance(served_mcp + MCP_PATH, tmp_path_factory.mktemp("mcp-conformance"))


def test_the_pinned_suite_has_exactly_these_scenarios() -> None:
    assert server_scenarios() == list(SERVER_SCENARIOS)


def test_every_scenario_left_results(conformance_results: dict[str, ScenarioResult]) -> None:
    assert sorted(conformance_results) == sorted(SERVER_SCENARIOS)
    assert all(result.checks > 0 for result in conformance_results.values())


@pytest.mark.parametrize("scenario", SERVER_SCENARIOS)
def test_conformance_scenario(scenario: str, conformance_results: dict[str, ScenarioResult]) -> None:
    result = conformance_results[scenario]
    assert result.failures == ()
    if scenario in NOT_APPLICABLE:
        assert not result.passed, f"{scenario} passes now: remove it from NOT_APPLICABLE"
    else:
        assert result.warnings == ()
        assert result.passed


# --- the harness itself -------------------------------------------------------------------------------


def test_results_are_read_per_scenario_with_failures_and_warnings(tmp_path: Path) -> None:
    checks = [
        {"id": "a", "status": "SUCCESS", "description": "fine"},
        {
            "id": "b",
            "status": "FAILURE",
            "description": "tools",
            "errorMessage": "Tool 0: missing description",
        },
        {"id": "c", "status": "WARNING", "description": "priming event should be sent"},
        {"id": "d", "status": "INFO", "description": "request seen"},
    ]
    folder = tmp_path / "server-tools-list-2026-11-27T05-30-13-779Z"
    folder.mkdir()
    (folder / "checks.json").write_text(json.dumps(checks), encoding="utf-8")
    clean = tmp_path / "server-ping-2026-11-27T05-30-13-800Z"
    clean.mkdir()
    (clean / "checks.json").write_text(json.dumps(checks[:1]), encoding="utf-8")

    results = parse_results(tmp_path)

    assert results["tools-list"] == ScenarioResult(
        name="tools-list",
        checks=4,
        failures=("b: Tool 0: missing description",),
        warnings=("c: priming event should be sent",),
    )
    assert not results["tools-list"].passed
    assert results["ping"].passed


def test_a_result_folder_of_another_shape_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "client-initialize").mkdir()
    (tmp_path / "client-initialize" / "checks.json").write_text("[]", encoding="utf-8")
    with pytest.raises(ValueError, match="unexpected result folder name"):
        parse_results(tmp_path)


def test_missing_node22_skips_with_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(mcp_conformance, "NODE22", tmp_path / "node")
    with pytest.raises(pytest.skip.Exception, match=r"Node 22.*scripts/setup.sh --with-node"):
        mcp_conformance.conformance_command()


# --- the resumption server-sse-polling cannot reach ---------------------------------------------------

MODERN_HANDSHAKE = "2025-11-25"


@dataclass
class SseEvent:
    id: str | None = None
    event: str | None = None
    retry: int | None = None
    data: list[str] = field(default_factory=list)

    def message(self) -> dict[str, Any] | None:
        text = "\n".join(self.data)
        return json.loads(text) if text.strip() else None


def _sse_events(response: httpx.Response) -> Iterator[SseEvent]:
    """The events of a ``text/event-stream`` body, as they arrive (WHATWG SSE field rules)."""
    current = SseEvent()
    seen_field = False
    for line in response.iter_lines():
        if not line:
            if seen_field:
                yield current
            current, seen_field = SseEvent(), False
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        seen_field = True
        if name == "id":
            current.id = value
        elif name == "event":
            current.event = value
        elif name == "retry" and value.isdigit():
            current.retry = int(value)
        elif name == "data":
            current.data.append(value)
    if seen_field:
        yield current


class RawMcpSession:
    """Just enough of the streamable HTTP client side to watch the SSE stream of one call."""

    ACCEPT = "application/json, text/event-stream"

    def __init__(self, client: httpx.Client, endpoint: str) -> None:
        self.client = client
        self.endpoint = endpoint
        self.session_id = ""
        response = client.post(
            endpoint,
            headers={"Accept": self.ACCEPT},
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": MODERN_HANDSHAKE,
                    "capabilities": {},
                    "clientInfo": {"name": "mudrika-tests", "version": "1"},
                },
            },
        )
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        initialized = client.post(
            endpoint,
            headers=self.headers(),
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        assert initialized.status_code == 202

    def headers(self, **more: str) -> dict[str, str]:
        return {
            "Accept": self.ACCEPT,
            "Mcp-Session-Id": self.session_id,
            "MCP-Protocol-Version": MODERN_HANDSHAKE,
            **more,
        }


def test_sse_stream_closed_mid_call_resumes_with_last_event_id(served_mcp: str) -> None:
    """``test_reconnection`` at 2025-11-25: the POST stream opens with a priming event (id, empty
    data, the server's retry), closes before the result, and a GET with ``Last-Event-ID`` delivers it."""
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "test_reconnection"}}
    with httpx.Client(timeout=60) as client:
        session = RawMcpSession(client, served_mcp + MCP_PATH)
        with client.stream("POST", session.endpoint, headers=session.headers(), json=call) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            first_stream = list(_sse_events(response))
        priming = first_stream[0]
        assert priming.id
        assert priming.message() is None
        assert priming.retry == RETRY_INTERVAL_MS
        assert all((event.message() or {}).get("id") != 7 for event in first_stream)

        last_event_id = first_stream[-1].id
        assert last_event_id is not None
        resumed = session.headers(**{"Last-Event-ID": last_event_id})
        with client.stream("GET", session.endpoint, headers=resumed) as response:
            assert response.status_code == 200
            answer = next(
                message
                for event in _sse_events(response)
                if (message := event.message()) is not None and message.get("id") == 7
            )
    assert answer["result"]["content"] == [
        {"type": "text", "text": "Reconnection test completed successfully"}
    ]


# --- the bearer wrapper -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_with_bearer_replaces_authorization_on_http_only() -> None:
    seen: list[Scope] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        raise AssertionError(f"nothing is sent: {message}")

    wrapped = with_bearer(app, "t0k3n")
    http_scope = {
        "type": "http",
        "headers": [
            (b"authorization", b"Basic dXNlcjpwdw=="),
            (b"accept", b"*/*"),
            (b"Authorization", b"Bearer someone-else"),
        ],
    }
    lifespan_scope = {"type": "lifespan"}
    await wrapped(http_scope, receive, send)
    await wrapped(lifespan_scope, receive, send)

    assert seen[0]["headers"] == [(b"accept", b"*/*"), (b"authorization", b"Bearer t0k3n")]
    assert http_scope["headers"][0] == (b"authorization", b"Basic dXNlcjpwdw==")  # caller's scope unchanged
    assert seen[1] is lifespan_scope


@pytest.mark.parametrize("token", ["", "two words", "line\nbreak"])
def test_with_bearer_refuses_a_token_that_is_not_one_word(token: str) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="one non-empty word"):
        with_bearer(app, token)


@pytest.mark.anyio
async def test_with_bearer_in_front_of_the_bare_app_reaches_the_tool() -> None:
    """The header arrives through uvicorn and the SDK's transport, and the lifespan still starts the
    session manager; the bare app verifies nothing, so the SDK sees no access token."""
    with serve_asgi(with_bearer(everything_app(), "t0k3n"), lifespan="on") as base_url:
        async with (
            streamable_http_client(base_url + MCP_PATH) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("whoami", {})
    assert result.is_error is False
    content = result.content[0]
    assert isinstance(content, TextContent)
    assert json.loads(content.text) == {
        "access_token": None,
        "authorization_scheme": "Bearer",
        "principal": None,
    }


# --- the realm ----------------------------------------------------------------------------------------


def test_realm_issues_tokens_for_the_mcp_resource(mcp_realm: McpRealm) -> None:
    """``mcp-agent`` tokens come from the real token endpoint, signed by the realm, with the MCP
    server's URL as their only audience: what the resource server will require."""
    token = mcp_realm.token()
    keys = jwt.PyJWKSet.from_dict(mcp_realm.idp.jwks())
    kid = jwt.get_unverified_header(token)["kid"]
    key = next(k for k in keys.keys if k.key_id == kid)
    claims = jwt.decode(
        token, key=key, algorithms=["RS256"], audience=mcp_realm.resource, issuer=mcp_realm.issuer
    )
    assert claims["aud"] == mcp_realm.resource == f"http://127.0.0.1:{mcp_realm.port}/mcp"
    assert claims["azp"] == "mcp-agent"
    assert "agent" in claims["realm_access"]["roles"]
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(token, key=key, algorithms=["RS256"], audience=mcp_realm.base_url + "/other")


def test_the_app_is_served_where_the_realm_tokens_are_for(mcp_realm: McpRealm, served_mcp: str) -> None:
    assert served_mcp + MCP_PATH == mcp_realm.resource
