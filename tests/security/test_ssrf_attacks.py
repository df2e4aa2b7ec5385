"""Server-side request forgery through DID resolution, performed against a real uvicorn server.

The server is the A2A middleware with the DID-signature scheme and the default resolver (did:key,
did:jwk, did:web through the strict egress policy; no didkit).  The attacker signs with a throwaway
key and names, as its ``keyid``, a did:web that points at this machine in one spelling or another.
A loopback listener (the canary) on the port the DID names records every connection: it must record
none, and every attempt must be answered like any other bad credential (401, -32010), so neither the
status nor the body tells an open port from a closed one.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.identity.resolver import DIDResolver
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    HttpMessageSigner,
    HttpSignatureVerifier,
    ResolverKeyLookup,
)
from mudrika.trust.middleware import A2AAuthMiddleware, DidSignatureAuthenticator
from tests._support.httpsig import did_key, sign_request
from tests._support.served import Canary, canary, serve_asgi
from tests._support.tokenfactory import demo_policy

pytestmark = pytest.mark.security

ORIGIN = "https://agent.example"
BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}).encode()


async def _app(request: Request) -> Response:
    return JSONResponse({"jsonrpc": "2.0", "result": "ok", "id": 1})


@pytest.fixture(scope="module")
def listener() -> Iterator[Canary]:
    with canary() as recorder:
        yield recorder


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    verifier = HttpSignatureVerifier(
        keys=ResolverKeyLookup(DIDResolver()),
        replay_store=MemoryReplayStore(1000),
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
    )
    app = A2AAuthMiddleware(
        Starlette(routes=[Route("/", _app, methods=["POST"])]),
        authenticators=[DidSignatureAuthenticator(verifier, public_origin=ORIGIN)],
        policy=demo_policy(),
    )
    with serve_asgi(app) as base:
        yield base


def _attack(server: str, keyid: str) -> httpx.Response:
    signer = HttpMessageSigner(KeyPair.generate("ed25519"), keyid)
    headers = sign_request(signer, "POST", ORIGIN + "/", BODY)
    return httpx.post(server + "/", content=BODY, headers=headers, timeout=60)


SPELLINGS = [
    "did:web:localhost%3A{port}",
    "did:web:localhost%3A{port}:user:alice",
    "did:web:0x7f000001%3A{port}",
    "did:web:0x7f.0x1%3A{port}",
    "did:web:0x7f.0.0.0x1%3A{port}",
    "did:web:0xa9fea9fe%3A{port}",  # 169.254.169.254, the cloud metadata address
    "did:web:127.1%3A{port}",
    "did:web:127.0.0.1%3A{port}",
    "did:web:0177.0.0.1%3A{port}",
    "did:web:2130706433%3A{port}",
    "did:web:LOCALHOST%3A{port}",
]


@pytest.mark.parametrize("template", SPELLINGS)
def test_no_spelling_of_loopback_reaches_the_canary(server: str, listener: Canary, template: str) -> None:
    did = template.format(port=listener.port)
    for _ in range(3):  # repeated: failures are cached, never retried against the target
        response = _attack(server, f"{did}#k")
        assert response.status_code == 401
        assert response.json()["error"]["code"] == -32010
    assert listener.connections == 0


def test_bracketed_ipv6_forms_are_not_even_did_syntax(server: str, listener: Canary) -> None:
    for host in ("[::ffff:127.0.0.1]", "[::1]", "[64:ff9b::7f00:1]"):
        with pytest.raises(InvalidInput, match="keyid is not a DID URL"):  # the signer itself refuses it
            HttpMessageSigner(KeyPair.generate("ed25519"), f"did:web:{host}%3A{listener.port}#k")
    assert listener.connections == 0


def test_open_and_closed_ports_answer_the_same(server: str, listener: Canary) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
    answers = {
        port: _attack(server, f"did:web:localhost%3A{port}:probe#k") for port in (listener.port, closed_port)
    }
    assert {r.status_code for r in answers.values()} == {401}
    assert len({r.content for r in answers.values()}) == 1
    assert listener.connections == 0


def test_methods_nobody_configured_are_not_resolved(server: str) -> None:
    # did:onion made didkit dial a local SOCKS proxy (127.0.0.1:9050); with didkit opt-in only,
    # the method is simply unsupported: refused as an unusable key, nothing dials out.
    try:
        socks = socket.socket()
        socks.bind(("127.0.0.1", 9050))
    except OSError:
        pytest.skip("127.0.0.1:9050 is in use here")
    socks.listen(8)
    socks.settimeout(0.5)
    try:
        for keyid in (
            "did:onion:fscst5exmlmr262byztwz4kzhggjlzumvc2ndvgytzoucr2tkgxf7mid#k",
            "did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a#k",
        ):
            response = _attack(server, keyid)
            assert response.status_code == 401
            assert response.json()["error"]["code"] == -32010
        with pytest.raises(TimeoutError):
            socks.accept()
    finally:
        socks.close()


def test_the_legitimate_did_key_agent_still_authenticates(server: str) -> None:
    key = KeyPair.generate("ed25519")
    signer = HttpMessageSigner(key, did_key(key)[1])
    response = httpx.post(
        server + "/", content=BODY, headers=sign_request(signer, "POST", ORIGIN + "/", BODY)
    )
    # Authenticated (no roles: the policy denies), i.e. resolution of a local method still works.
    assert response.status_code == 403
