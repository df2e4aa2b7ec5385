"""Key directories fetched from a real HTTPS server on 127.0.0.1 (uvicorn with trustme certificates).

The agent's origin is ``https://localhost:<port>``; the cache trusts the trustme CA and opts in to
loopback with ``EgressPolicy(allow_private_networks=True)`` — except in the test that shows the
strict default refuses it.  The first server is :func:`directory_app` itself (what a mudrika agent
publishes, possession proofs included); the second serves the misbehaviour each test needs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import EgressDenied, UnavailableError, UntrustedKeyError
from mudrika.net.egress import EgressPolicy
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    DIRECTORY_MEDIA_TYPE,
    REGISTERED_ALGORITHMS,
    DirectoryCache,
    WebBotAuthSigner,
    WebSignatureVerifier,
    agent_ref,
    directory_app,
    directory_document,
)
from tests._support.net import free_port
from tests._support.served import LocalTLS, local_tls, serve_asgi

pytestmark = pytest.mark.integration

LOCAL = EgressPolicy(allow_private_networks=True)


@dataclass
class Behaviour:
    """What the misbehaving server answers next (tests set it before fetching)."""

    status: int = 200
    media_type: str = DIRECTORY_MEDIA_TYPE
    body: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    requests: int = 0


def _misbehaving(state: Behaviour) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        state.requests += 1
        headers = [(b"content-type", state.media_type.encode()), *state.headers]
        await send({"type": "http.response.start", "status": state.status, "headers": headers})
        await send({"type": "http.response.body", "body": state.body})

    return app


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> LocalTLS:
    return local_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def agent() -> KeyPair:
    return KeyPair.generate(KeyType.ED25519)


@pytest.fixture(scope="module")
def published(tls: LocalTLS, agent: KeyPair) -> Iterator[str]:
    port = free_port()
    app = directory_app([agent], authorities=[f"localhost:{port}"], max_age=600)
    with serve_asgi(app, port=port, **tls.server):
        yield f"https://localhost:{port}"


@pytest.fixture
def misbehaving(tls: LocalTLS) -> Iterator[tuple[str, Behaviour]]:
    state = Behaviour()
    port = free_port()
    with serve_asgi(_misbehaving(state), port=port, **tls.server):
        yield f"https://localhost:{port}", state


def _cache(tls: LocalTLS, origin: str, **options: Any) -> DirectoryCache:
    settings: dict[str, Any] = {"egress": LOCAL, "require_signatures": False, **options}
    return DirectoryCache(allow=[origin], verify=tls.client, **settings)


def test_published_directory_verifies_a_signed_request(tls: LocalTLS, published: str, agent: KeyPair) -> None:
    cache = _cache(tls, published, require_signatures=True)
    verifier = WebSignatureVerifier(
        agents=cache,
        tap_registry=None,
        tap_keys=None,
        replay_store=MemoryReplayStore(),
        origins=["https://shop.example"],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=60,
    )
    signer = WebBotAuthSigner(agent, signature_agent=published)
    headers = signer.sign("GET", "https://shop.example/item", {}).headers
    verified = asyncio.run(verifier.averify("GET", "https://shop.example/item", headers, b""))
    assert verified.agent == published
    # The possession proof verified, and the second request is served from the cache.
    directory = cache.keys_for(agent_ref(published))
    assert directory.signed == frozenset({agent.public_key.thumbprint()})
    assert cache.fetches == 1


def test_strict_egress_refuses_loopback(tls: LocalTLS, published: str) -> None:
    cache = DirectoryCache(
        allow=[published], egress=EgressPolicy(), require_signatures=False, verify=tls.client
    )
    with pytest.raises(EgressDenied):
        cache.keys_for(agent_ref(published))


def test_redirect_is_refused_not_followed(
    tls: LocalTLS, misbehaving: tuple[str, Behaviour], published: str
) -> None:
    origin, state = misbehaving
    state.status = 302
    state.headers = [(b"location", f"{published}/.well-known/http-message-signatures-directory".encode())]
    with pytest.raises(UntrustedKeyError) as caught:
        _cache(tls, origin).keys_for(agent_ref(origin))
    assert caught.value.code == "directory_redirect"
    assert state.requests == 1


@pytest.mark.parametrize("media_type", ["application/json", "text/html", ""])
def test_wrong_media_type_is_refused(
    tls: LocalTLS,
    misbehaving: tuple[str, Behaviour],
    agent: KeyPair,
    media_type: str,
) -> None:
    origin, state = misbehaving
    state.media_type, state.body = media_type, directory_document([agent.public_key])
    with pytest.raises(UntrustedKeyError) as caught:
        _cache(tls, origin).keys_for(agent_ref(origin))
    assert caught.value.code == "directory_media_type"


def test_oversize_directory_is_refused(tls: LocalTLS, misbehaving: tuple[str, Behaviour]) -> None:
    origin, state = misbehaving
    state.body = b'{"keys":[' + b" " * 70_000 + b"]}"
    with pytest.raises(UntrustedKeyError) as caught:
        _cache(tls, origin).keys_for(agent_ref(origin))
    assert caught.value.code == "directory_too_large"


def test_server_error_is_unavailable_and_not_refetched_at_once(
    tls: LocalTLS, misbehaving: tuple[str, Behaviour]
) -> None:
    origin, state = misbehaving
    state.status = 503
    cache = _cache(tls, origin)
    for _ in range(3):
        with pytest.raises(UnavailableError):
            cache.keys_for(agent_ref(origin))
    assert state.requests == 1  # the negative cache held the failure


@pytest.mark.parametrize(
    ("headers", "fetches"),
    [
        ([(b"cache-control", b"max-age=600")], 1),
        ([(b"cache-control", b"no-store")], 3),
        ([(b"cache-control", b"max-age=0")], 3),
        ([(b"expires", b"Thu, 01 Jan 2099 00:00:00 GMT"), (b"date", b"Thu, 01 Jan 2098 00:00:00 GMT")], 1),
    ],
    ids=["max-age", "no-store", "max-age-0", "expires"],
)
def test_cache_honours_http_caching(
    tls: LocalTLS,
    misbehaving: tuple[str, Behaviour],
    agent: KeyPair,
    headers: list[tuple[bytes, bytes]],
    fetches: int,
) -> None:
    origin, state = misbehaving
    state.body, state.headers = directory_document([agent.public_key]), headers
    cache = _cache(tls, origin)
    for _ in range(3):
        assert agent.public_key.thumbprint() in cache.keys_for(agent_ref(origin)).keys
    assert state.requests == fetches


def test_cache_age_is_capped(tls: LocalTLS, misbehaving: tuple[str, Behaviour], agent: KeyPair) -> None:
    origin, state = misbehaving
    state.body, state.headers = (
        directory_document([agent.public_key]),
        [(b"cache-control", b"max-age=999999")],
    )
    clock = [1000.0]
    cache = _cache(tls, origin, max_cache_age=60, clock=lambda: clock[0])
    cache.keys_for(agent_ref(origin))
    clock[0] += 61
    cache.keys_for(agent_ref(origin))
    assert state.requests == 2


def test_directory_not_allowed_is_never_fetched(tls: LocalTLS, misbehaving: tuple[str, Behaviour]) -> None:
    origin, state = misbehaving
    cache = _cache(tls, "https://other.example")
    with pytest.raises(UntrustedKeyError) as caught:
        cache.keys_for(agent_ref(origin))
    assert caught.value.code == "directory_not_allowed"
    assert state.requests == 0
