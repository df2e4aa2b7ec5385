"""Every refusal a protected server sends lets the client find its way back, generated over the
whole space: every protocol ``protect`` fronts × every entry point of it × every refusal kind × with
and without signatures.

The rule (one home: ``AuthGate._challenges`` in ``trust/middleware/_gate.py``): with a resource
configured, every 401 and 403 carries a Bearer challenge naming the RFC 9728 metadata
(``resource_metadata``), a 403 says ``insufficient_scope``, a 401 lists a ``Signature`` challenge
exactly when signatures are accepted, no refusal is a 404, and the metadata itself is public.  The
protocol list is read from ``mudrika.trust.middleware.PROTOCOLS``: a protocol added without entry
points here fails :func:`test_every_protocol_has_entry_points`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import PROTOCOLS, protect
from mudrika.trust.policy import Policy
from tests._support.tokenfactory import Clock, LocalRealm

ORIGIN = "http://127.0.0.1:8000"
RESOURCES = {"a2a": ORIGIN + "/", "mcp": ORIGIN + "/mcp"}
METADATA = {
    "a2a": ORIGIN + "/.well-known/oauth-protected-resource",
    "mcp": ORIGIN + "/.well-known/oauth-protected-resource/mcp",
}
POLICY = {
    "version": 1,
    "roles": [{"role_id": "r1", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"}],
    "operations": {
        name: {"min_level": "operator"}
        for name in ("message/send", "tasks/get", "tasks/cancel", "initialize", "tools/*", "notifications/*")
    },
}
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
RPC_A2A = b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}'
RPC_MCP = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}'

#: The entry points of each protocol: (HTTP method, path, body).
ENTRY_POINTS: dict[str, list[tuple[str, str, bytes]]] = {
    "a2a": [("POST", "/", RPC_A2A), ("GET", "/tasks/t-1", b""), ("POST", "/tasks/t-1:cancel", b"{}")],
    "mcp": [("POST", "/mcp", RPC_MCP), ("GET", "/mcp", b""), ("DELETE", "/mcp", b"")],
}

#: How each refusal is provoked: the Authorization header it sends (None: none), and its status.
REFUSALS: dict[str, tuple[Callable[[LocalRealm, str], str | None], int]] = {
    "no credentials": (lambda realm, resource: None, 401),
    "malformed token": (lambda realm, resource: "Bearer not.a.token", 401),
    "another audience": (lambda realm, resource: "Bearer " + realm.token(aud=["agent-api"]), 401),
    "expired": (
        lambda realm, resource: "Bearer " + realm.token(aud=[resource], exp=int(realm.clock()) - 3600),
        401,
    ),
    "no role the policy knows": (
        lambda realm, resource: "Bearer " + realm.token(aud=[resource], realm_access={"roles": ["guest"]}),
        403,
    ),
}

CASES = [
    pytest.param(
        protocol,
        entry,
        refusal,
        signatures,
        id=f"{protocol}-{entry[0]} {entry[1]}-{refusal}-{'sig' if signatures else 'tokens'}",
    )
    for protocol in sorted(ENTRY_POINTS)
    for entry, refusal, signatures in itertools.product(ENTRY_POINTS[protocol], REFUSALS, (False, True))
]


async def _app(scope: Any, receive: Any, send: Any) -> None:
    """The protected server: reached only when the gate lets a request through (never, here)."""
    raise AssertionError(f"a refused request reached the app: {scope['method']} {scope['path']}")


def _protected(protocol: str, signatures: bool, realm: LocalRealm, jwks: JwksCache, clock: Clock) -> Any:
    resource = RESOURCES[protocol]
    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience=resource, azp_allowlist=None, jwks=jwks, clock=clock
    )
    options: dict[str, Any] = {}
    if signatures:
        options = {"public_origin": ORIGIN, "replay_store": MemoryReplayStore()}
    return protect(
        _app,
        policy=Policy.from_document(POLICY),
        realm=realm.issuer,
        token_verifier=verifier,
        protocol=protocol,
        resource=resource,
        **options,
    )


def test_every_protocol_has_entry_points() -> None:
    assert set(ENTRY_POINTS) == set(PROTOCOLS)


@pytest.mark.anyio
@pytest.mark.parametrize(("protocol", "entry", "refusal", "signatures"), CASES)
async def test_every_refusal_leads_back_to_the_metadata(
    protocol: str,
    entry: tuple[str, str, bytes],
    refusal: str,
    signatures: bool,
    realm: LocalRealm,
    jwks: JwksCache,
    clock: Clock,
) -> None:
    method, path, body = entry
    credential, status = REFUSALS[refusal]
    authorization = credential(realm, RESOURCES[protocol])
    headers = dict(JSON)
    if authorization is not None:
        headers["authorization"] = authorization
    app = _protected(protocol, signatures, realm, jwks, clock)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http:
        answer = await http.request(method, path, content=body, headers=headers)
        metadata = await http.get(METADATA[protocol])  # public, whatever the refusal
    assert answer.status_code == status
    challenges = answer.headers.get_list("www-authenticate")
    bearer = [line for line in challenges if line.startswith("Bearer ")]
    assert len(bearer) == 1
    assert f'resource_metadata="{METADATA[protocol]}"' in bearer[0]
    if status == 403:
        assert 'error="insufficient_scope"' in bearer[0]
        assert challenges == bearer
    else:
        signature_lines = [line for line in challenges if line.startswith("Signature ")]
        assert len(signature_lines) == (1 if signatures else 0)
        assert len(challenges) == len(bearer) + len(signature_lines)
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == RESOURCES[protocol]


@pytest.mark.anyio
async def test_a_signature_only_server_challenges_with_signature_alone() -> None:
    app = protect(
        _app,
        policy=Policy.from_document(POLICY),
        public_origin=ORIGIN,
        replay_store=MemoryReplayStore(),
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http:
        answer = await http.post("/", content=RPC_A2A, headers=JSON)
    assert answer.status_code == 401
    # No token scheme is configured, so a Bearer challenge would send the client the wrong way.
    assert answer.headers.get_list("www-authenticate") == ['Signature realm="a2a"']
