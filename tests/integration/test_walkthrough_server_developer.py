"""The server developer's walkthrough, end to end, as README.md and docs/trust.md tell it.

A developer without Keycloak builds an a2a-sdk agent and protects it: ``mudrika dev issuer`` (its own
process, a free port) stands in for the realm; the policy file is written in the format docs/trust.md
shows; the a2a-sdk app is wrapped with ``protect(app, realm=<the dev issuer's URL>, ...)``; its card
carries ``ProtectedApp.security_schemes()``; uvicorn serves it on 127.0.0.1.  Then the same developer
plays the client: the public card names the issuer, a token comes from the issuer the card names
(discovery, then the ``client_credentials`` token endpoint) and another from ``mudrika dev token``,
and the a2a-sdk client, with its own ``AuthInterceptor`` attaching the token for the card's scheme,
is answered for an operator, refused 403 ``PERMISSION_DENIED`` for a viewer and 401
``AUTHENTICATION_REQUIRED`` (a ``Bearer`` challenge) without a token; ``refusal_of`` reads each
refusal out of the SDK's ``A2AClientError``; and the server log has one WARNING line per refusal.

Why one test: the walkthrough's value is that the steps fit together with nothing but what the docs
give; each step alone is tested elsewhere.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.errors import A2AClientError
from a2a.helpers.proto_helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    SendMessageRequest,
)
from google.protobuf import json_format  # type: ignore[import-untyped]
from starlette.applications import Starlette

from mudrika.trust.a2a.client import refusal_of
from mudrika.trust.middleware import protect
from tests._support.net import free_port
from tests._support.paths import REPO_ROOT
from tests._support.processes import stop_process
from tests._support.served import serve_asgi

pytestmark = pytest.mark.integration

#: The policy, in the format of docs/trust.md "Policy file format": an operator may send messages,
#: a viewer may only read tasks.
POLICY = """\
version: 1
roles:
  - {role_id: r-1, role_name: agent-operator, realm_name: dev, trust_level: operator}
  - {role_id: r-2, role_name: agent-viewer, realm_name: dev, trust_level: viewer}
operations:
  message/send: {min_level: operator}
  tasks/get: {min_level: viewer}
"""
AUDIENCE = "agent-api"
CLIENT_ID, CLIENT_SECRET = "shop-agent", "dev-secret"
MIDDLEWARE_LOG = "mudrika.trust.middleware"


def _mudrika(*argv: str) -> list[str]:
    """``mudrika <argv>`` run from this checkout's sources (the installed script may be another tree's)."""
    return [sys.executable, "-c", "import sys; from mudrika.cli import main; sys.exit(main())", *argv]


_ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src") + os.pathsep + str(REPO_ROOT)}


@contextmanager
def _dev_issuer(directory: Path) -> Iterator[dict[str, Any]]:
    """``mudrika dev issuer`` on a free port, as docs/trust.md "Developing without Keycloak" starts it;
    yields the JSON document it prints once it listens, and stops it however the test ends."""
    argv = _mudrika(
        "dev", "issuer", "--issuer-dir", str(directory), "--port", "0", "--json",
        "--role", "agent-operator", "--aud", AUDIENCE, "--client", f"{CLIENT_ID}:{CLIENT_SECRET}",
    )  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_ENV)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:  # the document is printed once the port is bound
            lines.append(line)
            if line.rstrip() == "}":
                break
        assert lines, proc.stderr.read() if proc.stderr else ""
        yield json.loads("".join(lines))
    finally:
        stop_process(proc, timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


class EchoAgent(AgentExecutor):
    """The README's agent: answers every message with ``echo: <text>``; counts what reached it."""

    def __init__(self) -> None:
        self.calls = 0

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.calls += 1
        await event_queue.enqueue_event(new_text_message("echo: " + context.get_user_input()))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Nothing long-running to cancel."""


def _card(url: str) -> AgentCard:
    return AgentCard(
        name="echo",
        description="echoes text",
        version="1.0.0",
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0")],
        capabilities=AgentCapabilities(),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="repeats the message", tags=["echo"])],
    )


class OneToken(CredentialService):
    """The client's credentials: one token for one scheme name of the card (or none at all)."""

    def __init__(self, scheme: str, token: str | None) -> None:
        self.scheme, self.token = scheme, token

    async def get_credentials(
        self, security_scheme_name: str, context: ClientCallContext | None
    ) -> str | None:
        return self.token if security_scheme_name == self.scheme else None


async def _send(http: httpx.AsyncClient, card: AgentCard, credentials: CredentialService, text: str) -> str:
    """One ``SendMessage`` through the a2a-sdk client; the agent's text answer."""
    client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(
        card, interceptors=[AuthInterceptor(credentials)]
    )
    request = SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    )
    answers = [event async for event in client.send_message(request)]
    text_part: str = answers[0].message.parts[0].text
    return text_part


@pytest.mark.anyio
async def test_a_server_developer_protects_an_a2a_agent_with_the_dev_issuer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=MIDDLEWARE_LOG)
    with _dev_issuer(tmp_path / ".dev-issuer") as issuer:
        realm = issuer["issuer"]
        assert realm.startswith("http://127.0.0.1:")

        # The server: README's echo agent, the policy file, protect() with the dev issuer as realm.
        policy = tmp_path / "policy.yaml"
        policy.write_text(POLICY)
        port = free_port()
        card = _card(f"http://127.0.0.1:{port}/")
        agent = EchoAgent()
        handler = DefaultRequestHandler(agent_executor=agent, task_store=InMemoryTaskStore(), agent_card=card)
        a2a_app = Starlette(
            routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
        )
        app = protect(a2a_app, realm=realm, audience=AUDIENCE, policy=policy)
        # The card routes serialise the card per request, so the schemes merged now are served.
        json_format.ParseDict(app.security_schemes(), card)

        try:
            with serve_asgi(app, port=port) as base:
                async with httpx.AsyncClient(timeout=60) as http:
                    # The client: the public card, read without credentials, names the issuer.
                    public = await http.get(base + "/.well-known/agent-card.json")
                    assert public.status_code == 200
                    document = public.json()
                    discovery_url = document["securitySchemes"]["oidc"]["openIdConnectSecurityScheme"][
                        "openIdConnectUrl"
                    ]
                    assert discovery_url == realm + "/.well-known/openid-configuration"
                    assert document["securityRequirements"] == [{"schemes": {"oidc": {}}}]

                    # A token from the issuer the card names: discovery, then client_credentials.
                    discovery = (await http.get(discovery_url)).json()
                    granted = await http.post(
                        discovery["token_endpoint"],
                        data={"grant_type": "client_credentials"},
                        auth=(CLIENT_ID, CLIENT_SECRET),
                    )
                    assert granted.status_code == 200, granted.text
                    operator_token = granted.json()["access_token"]
                    # A token with another role, from the command line.
                    minted = subprocess.run(
                        _mudrika("dev", "token", "--issuer-dir", str(tmp_path / ".dev-issuer"),
                                 "--role", "agent-viewer", "--aud", AUDIENCE),
                        check=True, capture_output=True, text=True, env=_ENV,
                    )  # fmt: skip
                    viewer_token = minted.stdout.strip()

                    resolved = await A2ACardResolver(http, base).get_agent_card()
                    assert list(resolved.security_schemes) == ["oidc"]

                    answer = await _send(http, resolved, OneToken("oidc", operator_token), "hello")
                    assert answer == "echo: hello"
                    assert agent.calls == 1

                    with pytest.raises(A2AClientError) as viewer:
                        await _send(http, resolved, OneToken("oidc", viewer_token), "may I?")
                    denied = refusal_of(viewer.value)
                    assert denied is not None
                    assert (denied.status, denied.reason, denied.scheme, denied.code) == (
                        403, "PERMISSION_DENIED", "Bearer", -31403
                    )  # fmt: skip
                    assert denied.challenges == ('Bearer realm="dev", error="insufficient_scope"',)

                    with pytest.raises(A2AClientError) as anonymous:
                        await _send(http, resolved, OneToken("oidc", None), "anyone?")
                    unauthenticated = refusal_of(anonymous.value)
                    assert unauthenticated is not None
                    assert (unauthenticated.status, unauthenticated.reason, unauthenticated.code) == (
                        401, "AUTHENTICATION_REQUIRED", -31401
                    )  # fmt: skip
                    assert [c.split(" ", 1)[0] for c in unauthenticated.challenges] == ["Bearer"]
                    assert 'realm="dev"' in unauthenticated.challenges[0]

                    assert agent.calls == 1  # neither refusal reached the agent
        finally:
            await app.aclose()  # served with lifespan off: close the JWKS client here

    refusals = [r for r in caplog.records if r.name == MIDDLEWARE_LOG and r.levelno == logging.WARNING]
    lines = [r.getMessage() for r in refusals]
    assert len(lines) == 2, lines
    assert lines[0].startswith("denied message/send for ")
    assert "(insufficient_trust, credential " in lines[0]
    assert lines[1] == "refused POST /: no_credentials (AUTHENTICATION_REQUIRED, -)"
    assert operator_token not in caplog.text
    assert viewer_token not in caplog.text
