"""Attacks on shared capacity before and around authentication, against a real uvicorn server.

* Lock-out: a self-made did:key with no roles floods DID-signed requests.  Every one is denied (403)
  and, because the nonce is claimed only after the policy allowed the call, none of them lands in
  the (deliberately small) replay store; the legitimate agent still gets 200 afterwards.
* Claim quota: even an authorised principal cannot fill the store past its quota (HTTP 429).
* Pre-authentication limits: a request without any credential header, or with signature headers that
  fail on their own, is answered before its body is read; a body that stalls is cut off at the read deadline (408); past ``max_concurrent_reads``
  bodies in flight, the next request waits briefly for a slot and is then refused (503) instead of
  buffered.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mudrika.crypto.keys import KeyPair
from mudrika.identity.resolver import DIDResolver
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import REGISTERED_ALGORITHMS, HttpMessageSigner, HttpSignatureVerifier
from mudrika.trust.httpsig._keys import DIDKeyResolver, ResolverKeyLookup
from mudrika.trust.middleware import A2AAuthMiddleware, ClaimQuota, DidSignatureAuthenticator, Limits
from tests._support.httpsig import did_key, sign_request
from tests._support.served import serve_asgi
from tests._support.tokenfactory import demo_policy

pytestmark = pytest.mark.security

ORIGIN = "https://agent.example"
STORE_SIZE = 50
FLOOD = 400


def _body(request_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "message/send", "params": {}}).encode()


async def _ok(request: Request) -> Response:
    return JSONResponse({"jsonrpc": "2.0", "result": "ok", "id": 1})


def _port(base: str) -> int:
    """The port of a ``http://127.0.0.1:<port>`` base URL, for raw-socket requests to it."""
    return int(base.rsplit(":", 1)[1])


@dataclass
class Served:
    base: str
    store: MemoryReplayStore
    agent: KeyPair

    @property
    def port(self) -> int:
        return _port(self.base)


def _server(
    agent: KeyPair, *, quota: ClaimQuota | None = None, **limits: float
) -> tuple[A2AAuthMiddleware, MemoryReplayStore]:
    store = MemoryReplayStore(STORE_SIZE)
    resolver: DIDKeyResolver = DIDResolver()
    verifier = HttpSignatureVerifier(
        keys=ResolverKeyLookup(resolver),
        replay_store=store,
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
    )
    legitimate = did_key(agent)[0]
    authenticator = DidSignatureAuthenticator(
        verifier, public_origin=ORIGIN, roles_for=lambda did: {"agent"} if did == legitimate else set()
    )
    app = A2AAuthMiddleware(
        Starlette(routes=[Route("/", _ok, methods=["POST"])]),
        authenticators=[authenticator],
        policy=demo_policy(),
        limits=Limits(claim_quota=quota, **limits),  # type: ignore[arg-type]
    )
    return app, store


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    agent = KeyPair.generate("ed25519")
    # Generous waits: on a loaded machine a flood request whose body arrives at once must neither be
    # cut off (408) nor shed (503) because the server thread was starved; the stalled-body deadline
    # has its own server below.
    app, store = _server(agent, body_timeout=60.0, max_concurrent_reads=4, read_slot_wait=60.0)
    with serve_asgi(app) as base:
        yield Served(base, store, agent)


def _signed(key: KeyPair, body: bytes) -> dict[str, str]:
    return sign_request(HttpMessageSigner(key, did_key(key)[1]), "POST", ORIGIN + "/", body)


def test_a_flood_by_an_unauthorised_did_cannot_lock_the_agent_out(served: Served) -> None:
    intruder = KeyPair.generate("ed25519")

    async def flood() -> list[int]:
        limits = httpx.Limits(max_connections=32)
        async with httpx.AsyncClient(base_url=served.base, limits=limits, timeout=120) as client:

            async def one(i: int) -> int:
                body = _body(i)
                return (await client.post("/", content=body, headers=_signed(intruder, body))).status_code

            return list(await asyncio.gather(*(one(i) for i in range(FLOOD))))

    statuses = asyncio.run(flood())
    # Every request is denied: 403 by the policy, or -- should 32 connections queue for 4 read slots
    # longer than the (60 s) slot wait -- shed with 503 before its body is read.
    # Neither touches the replay store; most are policy denials.
    assert set(statuses) <= {403, 503}, sorted(set(statuses))
    assert statuses.count(403) > FLOOD // 2
    assert len(served.store) == 0  # no denied request consumed replay-store capacity
    body = _body(1)
    response = httpx.post(served.base + "/", content=body, headers=_signed(served.agent, body), timeout=60)
    assert response.status_code == 200
    assert len(served.store) == 1


def test_a_replayed_request_of_the_agent_is_still_refused(served: Served) -> None:
    body = _body(2)
    headers = _signed(served.agent, body)
    assert httpx.post(served.base + "/", content=body, headers=headers, timeout=60).status_code == 200
    replay = httpx.post(served.base + "/", content=body, headers=headers, timeout=60)
    assert (replay.status_code, replay.json()["error"]["code"]) == (401, -32010)


def test_an_authorised_principal_is_held_to_its_claim_quota() -> None:
    agent = KeyPair.generate("ed25519")
    app, store = _server(agent, quota=ClaimQuota(limit=5, window=3600))
    with serve_asgi(app) as base:
        statuses = []
        for i in range(8):
            body = _body(i)
            statuses.append(
                httpx.post(base + "/", content=body, headers=_signed(agent, body), timeout=60).status_code
            )
    assert statuses == [200] * 5 + [429] * 3
    assert len(store) == 5


def _raw(port: int, head: bytes, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(head + body)
    return sock


def _status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1])


def _head(length: int, *extra: bytes) -> bytes:
    lines = [b"POST / HTTP/1.1", b"Host: agent.example", b"Content-Type: application/json"]
    lines += [b"Content-Length: " + str(length).encode(), *extra]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def test_no_credentials_is_answered_before_the_body_is_read(served: Served) -> None:
    # 1 MiB announced, not one byte sent: the answer comes anyway.
    with _raw(served.port, _head(1024 * 1024)) as sock:
        assert _status(sock) == 401


def _signed_head(key: KeyPair, length: int) -> bytes:
    """Headers of a correctly signed request for a body of ``length`` bytes (that will never arrive)."""
    headers = _signed(key, b"{" + b" " * (length - 2) + b"}")
    return _head(
        length, *(f"{name}: {value}".encode() for name, value in headers.items() if name != "Content-Type")
    )


def test_malformed_signature_headers_are_refused_before_the_body(served: Served) -> None:
    with _raw(served.port, _head(1024 * 1024, b"Signature-Input: x", b"Signature: x")) as sock:
        assert _status(sock) == 401


def test_a_stalled_body_is_cut_off_at_the_deadline() -> None:
    agent = KeyPair.generate("ed25519")
    app, _ = _server(agent, body_timeout=1.0, max_concurrent_reads=4)
    with serve_asgi(app) as base, _raw(_port(base), _signed_head(agent, 1000), b"{") as sock:
        assert _status(sock) == 408


def test_concurrent_unauthenticated_reads_are_capped() -> None:
    agent = KeyPair.generate("ed25519")
    app, _ = _server(agent, body_timeout=30.0, max_concurrent_reads=2, read_slot_wait=0.05)
    with serve_asgi(app) as base:
        stalled = [_raw(_port(base), _signed_head(agent, 1000), b"{") for _ in range(2)]
        try:
            statuses = set()
            for i in range(200):  # until the server has both stalled bodies in flight
                body = _body(i)
                response = httpx.post(base + "/", content=body, headers=_signed(agent, body), timeout=60)
                statuses.add(response.status_code)
                if response.status_code == 503:
                    break
            assert 503 in statuses
            assert response.headers["retry-after"]
        finally:
            for sock in stalled:
                sock.close()
