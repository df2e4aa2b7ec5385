"""A ``cimd`` Signature-Agent resolved end to end over real HTTPS (uvicorn on 127.0.0.1, trustme TLS).

Web Bot Auth lets an agent name a Client ID Metadata Document (``Signature-Agent: sig1="…";type=cimd``)
whose ``jwks_uri`` or inline ``jwks`` gives its keys.  These tests serve that card — and the JWKS it
points to — from one local HTTPS server and verify signed requests through ``DirectoryCache`` with
the egress policy's development allowance (loopback opted in), then show the refusals of the same
fetcher: a card of the wrong media type, an oversize card, a card that names another ``client_id``,
and a ``jwks_uri`` on an origin the cache does not allow.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import UntrustedKeyError
from mudrika.net.egress import EgressPolicy
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    DirectoryCache,
    WebBotAuthSigner,
    WebSignatureVerifier,
)
from tests._support.net import free_port
from tests._support.served import LocalTLS, local_tls, serve_asgi

pytestmark = pytest.mark.integration

LOCAL = EgressPolicy(allow_private_networks=True)
SHOP = "https://shop.example"
PAGE = f"{SHOP}/products/42"


@dataclass
class Served:
    """The documents the server answers with, by path (tests set them before verifying)."""

    documents: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)


def _app(state: Served) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        state.requests.append(scope["path"])
        media_type, body = state.documents.get(scope["path"], ("text/plain", b"not found"))
        status = 200 if scope["path"] in state.documents else 404
        headers = [(b"content-type", media_type.encode()), (b"cache-control", b"max-age=600")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> LocalTLS:
    return local_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def agent() -> KeyPair:
    return KeyPair.generate(KeyType.ED25519)


@pytest.fixture
def server(tls: LocalTLS) -> Iterator[tuple[str, Served]]:
    state = Served()
    port = free_port()
    with serve_asgi(_app(state), port=port, **tls.server):
        yield f"https://localhost:{port}", state


def _verifier(cache: DirectoryCache) -> WebSignatureVerifier:
    return WebSignatureVerifier(
        agents=cache,
        tap_registry=None,
        tap_keys=None,
        replay_store=MemoryReplayStore(),
        origins=[SHOP],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=60,
    )


def _cache(tls: LocalTLS, *allow: str, **options: Any) -> DirectoryCache:
    return DirectoryCache(
        allow=list(allow), egress=LOCAL, require_signatures=False, verify=tls.client, **options
    )


def _card(card_url: str, **keys: Any) -> tuple[str, bytes]:
    return "application/json", json.dumps({"client_id": card_url, "client_name": "crawler", **keys}).encode()


def _jwks(agent: KeyPair) -> tuple[str, bytes]:
    return "application/jwk-set+json", json.dumps({"keys": [agent.public_key.to_jwk()]}).encode()


def _signed(agent: KeyPair, card_url: str) -> dict[str, str]:
    signer = WebBotAuthSigner(agent, signature_agent=card_url, agent_type="cimd")
    return dict(signer.sign("GET", PAGE, {}).headers)


def test_cimd_with_jwks_uri_verifies_and_is_cached(
    tls: LocalTLS, server: tuple[str, Served], agent: KeyPair
) -> None:
    origin, state = server
    card_url = f"{origin}/agents/crawler.json"
    state.documents["/agents/crawler.json"] = _card(card_url, jwks_uri=f"{origin}/agents/jwks.json")
    state.documents["/agents/jwks.json"] = _jwks(agent)
    headers = _signed(agent, card_url)
    assert "type=cimd" in headers["Signature-Agent"]
    cache = _cache(tls, origin)
    verifier = _verifier(cache)

    verified = verifier.verify("GET", PAGE, headers, b"")
    assert verified.profile == "web-bot-auth"
    # The policy name and the identifier of a CIMD agent are the card URL it resolved from.
    assert verified.agent == card_url
    assert verified.identifier == card_url
    assert verified.thumbprint == agent.public_key.thumbprint()
    assert state.requests == ["/agents/crawler.json", "/agents/jwks.json"]

    # A second request (a new nonce) is verified from the cache: nothing is fetched again.
    again = asyncio.run(verifier.averify("GET", PAGE, _signed(agent, card_url), b""))
    assert again.agent == card_url
    assert cache.fetches == 2


def test_cimd_with_inline_jwks_verifies_from_one_fetch(
    tls: LocalTLS, server: tuple[str, Served], agent: KeyPair
) -> None:
    origin, state = server
    card_url = f"{origin}/card.json"
    state.documents["/card.json"] = _card(card_url, jwks={"keys": [agent.public_key.to_jwk()]})
    cache = _cache(tls, origin)
    verified = asyncio.run(_verifier(cache).averify("GET", PAGE, _signed(agent, card_url), b""))
    assert verified.identifier == card_url
    assert state.requests == ["/card.json"]


def test_a_key_not_in_the_card_does_not_verify(
    tls: LocalTLS, server: tuple[str, Served], agent: KeyPair
) -> None:
    origin, state = server
    card_url = f"{origin}/card.json"
    stranger = KeyPair.generate(KeyType.ED25519)
    state.documents["/card.json"] = _card(card_url, jwks={"keys": [stranger.public_key.to_jwk()]})
    with pytest.raises(UntrustedKeyError) as caught:
        _verifier(_cache(tls, origin)).verify("GET", PAGE, _signed(agent, card_url), b"")
    assert caught.value.code == "unknown_key"


@pytest.mark.parametrize("media_type", ["text/html", "application/jwk-set+json", ""])
def test_card_of_the_wrong_media_type_is_refused(
    tls: LocalTLS, server: tuple[str, Served], agent: KeyPair, media_type: str
) -> None:
    origin, state = server
    card_url = f"{origin}/card.json"
    state.documents["/card.json"] = (
        media_type,
        _card(card_url, jwks={"keys": [agent.public_key.to_jwk()]})[1],
    )
    with pytest.raises(UntrustedKeyError) as caught:
        _verifier(_cache(tls, origin)).verify("GET", PAGE, _signed(agent, card_url), b"")
    assert caught.value.code == "directory_media_type"


def test_jwks_of_the_wrong_media_type_is_refused(
    tls: LocalTLS, server: tuple[str, Served], agent: KeyPair
) -> None:
    origin, state = server
    card_url = f"{origin}/card.json"
    state.documents["/card.json"] = _card(card_url, jwks_uri=f"{origin}/jwks.json")
    state.documents["/jwks.json"] = ("text/html", _jwks(agent)[1])
    with pytest.raises(UntrustedKeyError) as caught:
        _verifier(_cache(tls, origin)).verify("GET", PAGE, _signed(agent, card_url), b"")
    assert caught.value.code == "directory_media_type"


@pytest.mark.parametrize("document", ["card", "jwks"])
def test_oversize_card_or_jwks_is_refused(
    tls: LocalTLS, server: tuple[str, Served], agent: KeyPair, document: str
) -> None:
    origin, state = server
    card_url = f"{origin}/card.json"
    padding = " " * 5_000
    state.documents["/card.json"] = _card(card_url, jwks_uri=f"{origin}/jwks.json")
    state.documents["/jwks.json"] = _jwks(agent)
    media_type, body = state.documents[f"/{document}.json"]
    state.documents[f"/{document}.json"] = (media_type, body[:-1] + padding.encode() + body[-1:])
    cache = _cache(tls, origin, max_bytes=4_096)
    with pytest.raises(UntrustedKeyError) as caught:
        _verifier(cache).verify("GET", PAGE, _signed(agent, card_url), b"")
    assert caught.value.code == "directory_too_large"


def test_card_for_another_client_id_is_refused(
    tls: LocalTLS, server: tuple[str, Served], agent: KeyPair
) -> None:
    origin, state = server
    card_url = f"{origin}/card.json"
    state.documents["/card.json"] = _card(f"{origin}/other.json", jwks={"keys": [agent.public_key.to_jwk()]})
    with pytest.raises(UntrustedKeyError) as caught:
        _verifier(_cache(tls, origin)).verify("GET", PAGE, _signed(agent, card_url), b"")
    assert caught.value.code == "directory_malformed"


def test_jwks_uri_on_an_origin_not_allowed_is_never_fetched(
    tls: LocalTLS, server: tuple[str, Served], agent: KeyPair
) -> None:
    origin, state = server
    card_url = f"{origin}/card.json"
    state.documents["/card.json"] = _card(card_url, jwks_uri="https://keys.elsewhere.example/jwks.json")
    with pytest.raises(UntrustedKeyError) as caught:
        _verifier(_cache(tls, origin)).verify("GET", PAGE, _signed(agent, card_url), b"")
    assert caught.value.code == "directory_not_allowed"
    assert state.requests == ["/card.json"]
