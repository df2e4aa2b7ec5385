"""Push-notification signatures: the agent's JWT, the receiver's guard, and webhook URL screening."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import httpx
import pytest

from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import EgressDenied, InvalidInput
from mudrika.identity.methods import key as did_key
from mudrika.identity.resolver import DIDResolver
from mudrika.net.egress import EgressPolicy
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.a2a.push import (
    NOTIFICATION_TOKEN_HEADER,
    PUSH_JWT_TYP,
    PUSH_SCOPE_KEY,
    PUSH_SIGNATURE_HEADER,
    PushNotificationGuard,
    PushSigner,
    body_digest,
    check_webhook_url,
    webhook_url_validator,
)
from tests._support.tokenfactory import Clock

NOW = 1_750_000_000.0
URL = "https://client.example/hooks/a2a"
TOKEN = "per-config-secret-token"


class Agent:
    def __init__(self) -> None:
        self.pair = KeyPair.generate("p256")
        self.did = did_key.create(self.pair.public_key)
        self.kid = f"{self.did}#{self.did.removeprefix('did:key:')}"
        self.signer = PushSigner(self.pair, kid=self.kid, clock=lambda: NOW)


class Webhook:
    """The receiving application: records what the guard let through."""

    def __init__(self) -> None:
        self.received: list[tuple[bytes, dict[str, Any]]] = []

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.received.append((body, dict(scope.get(PUSH_SCOPE_KEY, {}))))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@pytest.fixture
def agent() -> Agent:
    return Agent()


@pytest.fixture
def webhook() -> Webhook:
    return Webhook()


def _guard(webhook: Webhook, trusted: str, **overrides: Any) -> PushNotificationGuard:
    """The receiver's guard as the tests configure it: ``trusted`` the one agent DID it trusts, a
    fresh memory replay store, the configured token, a clock a second after :data:`NOW`."""
    settings: dict[str, Any] = {
        "path": "/hooks/a2a",
        "audience": URL,
        "trusted_agents": [trusted],
        "algorithms": ["ES256"],
        "resolver": DIDResolver.offline({}),
        "replay_store": MemoryReplayStore(),
        "expected_token": TOKEN,
        "clock": lambda: NOW + 1,
        **overrides,
    }
    return PushNotificationGuard(webhook, **settings)


@pytest.fixture
async def client(agent: Agent, webhook: Webhook) -> AsyncIterator[httpx.AsyncClient]:
    guard = _guard(webhook, agent.did)
    transport = httpx.ASGITransport(app=guard)
    async with httpx.AsyncClient(transport=transport, base_url="https://client.example") as http:
        yield http


def _body() -> bytes:
    return json.dumps(
        {"statusUpdate": {"taskId": "t-1", "status": {"state": "TASK_STATE_COMPLETED"}}}
    ).encode()


def _headers(agent: Agent, body: bytes, *, url: str = URL, token: str = TOKEN) -> dict[str, str]:
    return {PUSH_SIGNATURE_HEADER: agent.signer.sign(url, body), NOTIFICATION_TOKEN_HEADER: token}


@pytest.mark.anyio
async def test_signed_call_reaches_the_app(agent: Agent, webhook: Webhook, client: httpx.AsyncClient) -> None:
    body = _body()
    response = await client.post("/hooks/a2a", content=body, headers=_headers(agent, body))
    assert response.status_code == 204
    [(received, claims)] = webhook.received
    assert received == body
    assert claims["iss"] == agent.did


@pytest.mark.anyio
async def test_replay_is_refused(agent: Agent, webhook: Webhook, client: httpx.AsyncClient) -> None:
    body = _body()
    headers = _headers(agent, body)
    assert (await client.post("/hooks/a2a", content=body, headers=headers)).status_code == 204
    again = await client.post("/hooks/a2a", content=body, headers=headers)
    assert again.status_code == 401
    assert again.json() == {"error": "unauthorized"}
    assert len(webhook.received) == 1


@pytest.mark.anyio
async def test_a_replay_inside_the_leeway_after_exp_is_refused(agent: Agent, webhook: Webhook) -> None:
    """The guard accepts a token until ``exp + leeway``, so the jti must be held that long too."""
    clock = Clock(NOW + 1)
    guard = _guard(webhook, agent.did, replay_store=MemoryReplayStore(clock=clock), leeway=5.0, clock=clock)
    body = _body()
    headers = _headers(agent, body)  # iat NOW, exp NOW + 60
    transport = httpx.ASGITransport(app=guard)
    async with httpx.AsyncClient(transport=transport, base_url="https://client.example") as http:
        assert (await http.post("/hooks/a2a", content=body, headers=headers)).status_code == 204
        clock.now = NOW + 60 + 2.5  # past exp, still inside the leeway: the token itself is accepted
        again = await http.post("/hooks/a2a", content=body, headers=headers)
    assert again.status_code == 401
    assert len(webhook.received) == 1


@pytest.mark.anyio
async def test_a_trusted_agent_whose_did_cannot_be_found_is_refused_not_unavailable(webhook: Webhook) -> None:
    """A missing DID document is a deny (401): an outage answer (503) would invite retries and let a
    sender make the receiver look down."""
    pair = KeyPair.generate("p256")
    did = "did:web:gone.example"
    guard = _guard(webhook, did)
    body = _body()
    signature = PushSigner(pair, kid=f"{did}#key-1", clock=lambda: NOW).sign(URL, body)
    transport = httpx.ASGITransport(app=guard)
    async with httpx.AsyncClient(transport=transport, base_url="https://client.example") as http:
        response = await http.post(
            "/hooks/a2a",
            content=body,
            headers={PUSH_SIGNATURE_HEADER: signature, NOTIFICATION_TOKEN_HEADER: TOKEN},
        )
    assert response.status_code == 401
    assert webhook.received == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    "case",
    ["other_body", "other_audience", "wrong_token", "no_token", "no_signature", "untrusted_agent", "typ"],
)
async def test_refusals(agent: Agent, webhook: Webhook, client: httpx.AsyncClient, case: str) -> None:
    body = _body()
    headers = _headers(agent, body)
    if case == "other_body":
        body = body.replace(b"COMPLETED", b"FAILED")
    elif case == "other_audience":
        headers = _headers(agent, body, url="https://elsewhere.example/hooks/a2a")
    elif case == "wrong_token":
        headers[NOTIFICATION_TOKEN_HEADER] = "guess"
    elif case == "no_token":
        del headers[NOTIFICATION_TOKEN_HEADER]
    elif case == "no_signature":
        del headers[PUSH_SIGNATURE_HEADER]
    elif case == "untrusted_agent":
        headers = _headers(Agent(), body)
    elif case == "typ":
        claims = {
            "iss": agent.did,
            "aud": URL,
            "iat": NOW,
            "exp": NOW + 60,
            "jti": "j",
            "bodySha256": body_digest(body),
        }
        headers[PUSH_SIGNATURE_HEADER] = sign_jwt(claims, agent.pair, kid=agent.kid, typ="JWT")
    response = await client.post("/hooks/a2a", content=body, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("A2A-Push")
    assert webhook.received == []


@pytest.mark.anyio
async def test_lifetime_over_five_minutes_is_refused(
    agent: Agent, webhook: Webhook, client: httpx.AsyncClient
) -> None:
    body = _body()
    claims = {
        "iss": agent.did,
        "aud": URL,
        "iat": NOW,
        "exp": NOW + 301,
        "jti": "j",
        "bodySha256": body_digest(body),
    }
    token = sign_jwt(claims, agent.pair, kid=agent.kid, typ=PUSH_JWT_TYP)
    headers = {PUSH_SIGNATURE_HEADER: token, NOTIFICATION_TOKEN_HEADER: TOKEN}
    assert (await client.post("/hooks/a2a", content=body, headers=headers)).status_code == 401


@pytest.mark.anyio
async def test_cheap_rejections_come_first(agent: Agent, client: httpx.AsyncClient) -> None:
    assert (await client.get("/hooks/a2a")).status_code == 405
    big = b"x" * (1024 * 1024 + 1)
    assert (await client.post("/hooks/a2a", content=big, headers=_headers(agent, big))).status_code == 413


@pytest.mark.anyio
async def test_a_repeated_content_length_cannot_hide_an_oversized_one(agent: Agent, webhook: Webhook) -> None:
    guard = _guard(webhook, agent.did, expected_token=None)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        raise AssertionError("a refused upload is never read")

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/hooks/a2a",
        "headers": [(b"content-length", b"10"), (b"content-length", str(2 * 1024 * 1024).encode())],
    }
    await guard(scope, receive, send)
    assert sent[0]["status"] == 413
    assert webhook.received == []


@pytest.mark.anyio
async def test_other_paths_pass_through(client: httpx.AsyncClient, webhook: Webhook) -> None:
    assert (await client.post("/health", content=b"")).status_code == 204
    assert webhook.received == [(b"", {})]


def test_signer_refuses_long_lifetimes_and_non_did_kids(agent: Agent) -> None:
    with pytest.raises(InvalidInput):
        PushSigner(agent.pair, kid=agent.kid, lifetime=301)
    with pytest.raises(InvalidInput):
        PushSigner(agent.pair, kid="key-1")
    assert "private" not in repr(agent.signer).lower()


STRICT = EgressPolicy()


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("http://client.example/hook", "egress_denied"),
        ("ftp://client.example/hook", "egress_denied"),
        ("https://127.0.0.1/hook", "egress_denied"),
        ("https://[::1]/hook", "egress_denied"),
        ("https://[::ffff:10.0.0.1]/hook", "egress_denied"),
        ("https://10.1.2.3/hook", "egress_denied"),
        ("https://169.254.169.254/latest/meta-data", "egress_denied"),
        ("https://100.64.0.1/hook", "egress_denied"),
        ("https://2130706433/hook", "egress_denied"),
        ("https://0x7f.1/hook", "egress_denied"),
        ("https://127.1/hook", "egress_denied"),
        ("https://user:pw@client.example/hook", "bad_webhook_url"),
        ("https:///hook", "bad_webhook_url"),
    ],
)
def test_webhook_urls_refused(url: str, code: str) -> None:
    with pytest.raises((InvalidInput, EgressDenied)) as info:
        check_webhook_url(url, egress=STRICT)
    assert isinstance(info.value, InvalidInput | EgressDenied)
    assert info.value.code == code


@pytest.mark.parametrize(
    "url", ["https://client.example/hook", "https://8.8.8.8/hook", "https://[2001:4860::8888]/h"]
)
def test_webhook_urls_accepted(url: str) -> None:
    assert check_webhook_url(url, egress=STRICT) == url


def test_private_networks_only_by_explicit_opt_in() -> None:
    url = "http://127.0.0.1:8080/hook"
    lab = EgressPolicy(allow_private_networks=True, schemes=("http", "https"))
    assert check_webhook_url(url, egress=lab) == url
    with pytest.raises(EgressDenied):
        check_webhook_url("http://169.254.169.254/", egress=lab)  # metadata: refused even then


@pytest.mark.anyio
async def test_validator_resolves_names_and_checks_every_address() -> None:
    answers = {"client.example": ["93.184.215.14"], "rebind.example": ["93.184.215.14", "10.0.0.5"]}

    def resolve(host: str, port: int) -> list[str]:
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "unknown name")
        return answers[host]

    validate = webhook_url_validator(egress=EgressPolicy(resolve=resolve))
    assert await validate("https://client.example/hook")
    assert not await validate("https://rebind.example/hook")  # one private answer refuses the name
    assert not await validate("https://127.0.0.1/hook")
    assert not await validate("https://unknown.example/hook")  # resolution failure: refused


@pytest.mark.anyio
async def test_long_rsa_did_key_fits_the_replay_store(webhook: Webhook) -> None:
    pair = KeyPair.generate("rsa")
    did = did_key.create(pair.public_key)
    assert len(did) > 300
    kid = f"{did}#{did.removeprefix('did:key:')}"
    guard = _guard(webhook, did, algorithms=["RS256"], expected_token=None, clock=lambda: NOW)
    body = _body()
    headers = {PUSH_SIGNATURE_HEADER: PushSigner(pair, kid=kid, clock=lambda: NOW).sign(URL, body)}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=guard), base_url="https://c") as http:
        assert (await http.post("/hooks/a2a", content=body, headers=headers)).status_code == 204
        assert (await http.post("/hooks/a2a", content=body, headers=headers)).status_code == 401
