"""JwksCache: TTL, unknown-kid single flight (threads and asyncio), cooldown, stale-if-error,
encryption keys ignored, size caps, generation counter."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator

import httpx
import pytest

from mudrika.errors import IdpUnavailable, InvalidInput
from mudrika.trust.jsonrpc import InvalidToken
from mudrika.trust.keycloak.jwks import JwksCache, StaticKeySet, parse_jwks
from tests._support.tokenfactory import Clock, LocalRealm, realm_jwks


@pytest.fixture
def cache(realm: LocalRealm) -> Iterator[JwksCache]:
    with realm_jwks(realm, ttl=300, refresh_cooldown=10, max_stale=600) as jwks:
        yield jwks


def test_first_use_fetches_once_and_caches(cache: JwksCache, realm: LocalRealm) -> None:
    assert cache.generation == 0
    key = cache.key_for("k1")
    assert key.kid == "k1"
    assert key.algorithms == frozenset({"RS256"})
    for _ in range(5):
        cache.key_for("k1")
    assert realm.fetches == 1
    assert cache.generation == 1


def test_encryption_key_is_ignored(cache: JwksCache, realm: LocalRealm) -> None:
    cache.refresh()
    assert cache.kids == frozenset({"k1"})
    assert "enc-1" in {k["kid"] for k in realm.jwks()["keys"]}
    with pytest.raises(InvalidToken) as info:
        cache.key_for("enc-1")
    assert info.value.code == "unknown_kid"


def test_ttl_expiry_refetches(cache: JwksCache, realm: LocalRealm, clock: Clock) -> None:
    cache.key_for("k1")
    clock.advance(299)
    cache.key_for("k1")
    assert realm.fetches == 1
    clock.advance(2)
    cache.key_for("k1")
    assert realm.fetches == 2
    assert cache.generation == 1  # same keys: no new generation


def test_unknown_kid_refreshes_once_then_cooldown(cache: JwksCache, realm: LocalRealm, clock: Clock) -> None:
    cache.key_for("k1")
    realm.rotate("k2")
    assert cache.key_for("k2").kid == "k2"  # the new kid is accepted at once
    assert realm.fetches == 2
    assert cache.generation == 2
    for n in range(20):
        with pytest.raises(InvalidToken):
            cache.key_for(f"random-{n}")
    assert realm.fetches == 2  # the k2 refresh started the cooldown: random kids fetch nothing
    clock.advance(10)
    for n in range(20):
        with pytest.raises(InvalidToken):
            cache.key_for(f"again-{n}")
    assert realm.fetches == 3  # one refresh after the cooldown, then it holds again


def test_retired_key_is_gone_after_ttl(cache: JwksCache, realm: LocalRealm, clock: Clock) -> None:
    realm.rotate("k2")
    cache.key_for("k1")
    realm.retire("k1")
    assert cache.key_for("k1").kid == "k1"  # still inside the TTL
    clock.advance(301)
    with pytest.raises(InvalidToken):
        cache.key_for("k1")
    assert cache.kids == frozenset({"k2"})
    assert cache.generation == 2


def test_unknown_kid_single_flight_threads(cache: JwksCache, realm: LocalRealm) -> None:
    cache.key_for("k1")
    realm.rotate("k2")
    realm.delay = 0.2
    barrier = threading.Barrier(8)
    results: list[str | None] = []

    def worker() -> None:
        barrier.wait()
        results.append(cache.key_for("k2").kid)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["k2"] * 8
    assert realm.fetches == 2


@pytest.mark.anyio
async def test_unknown_kid_single_flight_asyncio(cache: JwksCache, realm: LocalRealm) -> None:
    await cache.akey_for("k1")
    realm.rotate("k2")
    realm.delay = 0.1
    keys = await asyncio.gather(*(cache.akey_for("k2") for _ in range(16)))
    assert {key.kid for key in keys} == {"k2"}
    assert realm.fetches == 2


@pytest.mark.anyio
async def test_first_fetch_single_flight_asyncio(cache: JwksCache, realm: LocalRealm) -> None:
    realm.delay = 0.05
    keys = await asyncio.gather(*(cache.akey_for("k1") for _ in range(10)))
    assert len(keys) == 10
    assert realm.fetches == 1


@pytest.mark.anyio
async def test_explicit_async_refresh_fetches_now_and_fails_closed_when_the_idp_is_down(
    cache: JwksCache, realm: LocalRealm
) -> None:
    await cache.arefresh()
    assert (realm.fetches, cache.generation) == (1, 1)
    assert (await cache.akey_for("k1")).kid == "k1"
    assert realm.fetches == 1  # the refreshed set serves the lookup
    await cache.arefresh()  # a second fetch with the same keys is still a success
    assert (realm.fetches, cache.generation) == (2, 1)
    realm.fail = True
    with pytest.raises(IdpUnavailable) as info:
        await cache.arefresh()
    assert info.value.code == "jwks_unavailable"
    assert (await cache.akey_for("k1")).kid == "k1"  # the last good set still serves lookups


def test_an_explicit_refresh_that_fails_says_so_even_while_an_older_set_serves(
    cache: JwksCache, realm: LocalRealm
) -> None:
    cache.refresh()
    realm.fail = True
    with pytest.raises(IdpUnavailable) as info:
        cache.refresh()
    assert info.value.code == "jwks_unavailable"
    assert cache.key_for("k1").kid == "k1"
    realm.fail = False
    cache.refresh()
    assert realm.fetches == 3


def test_stale_if_error_serves_last_good_set(cache: JwksCache, realm: LocalRealm, clock: Clock) -> None:
    cache.key_for("k1")
    realm.fail = True
    clock.advance(301)
    assert cache.key_for("k1").kid == "k1"  # refresh failed, last good set still serves
    assert realm.fetches == 2
    clock.advance(5)
    cache.key_for("k1")
    assert realm.fetches == 2  # failed refreshes are rate-limited by the cooldown
    clock.advance(600)
    with pytest.raises(IdpUnavailable):
        cache.key_for("k1")  # past ttl + max_stale: fail closed


def test_unknown_kid_while_idp_down_is_unavailable(cache: JwksCache, realm: LocalRealm) -> None:
    cache.key_for("k1")
    realm.fail = True
    with pytest.raises(IdpUnavailable):
        cache.key_for("k9")


def test_no_idp_no_keys_fails_closed(cache: JwksCache, realm: LocalRealm) -> None:
    realm.fail = True
    with pytest.raises(IdpUnavailable):
        cache.key_for("k1")
    with pytest.raises(IdpUnavailable):
        cache.refresh()


def test_transport_error_fails_closed(realm: LocalRealm, clock: Clock) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with httpx.Client(transport=httpx.MockTransport(broken)) as client:
        jwks = JwksCache(jwks_uri=realm.jwks_uri, algorithms={"RS256"}, clock=clock, http_client=client)
        with pytest.raises(IdpUnavailable):
            jwks.key_for("k1")


def test_body_size_cap(realm: LocalRealm, clock: Clock) -> None:
    realm.body_override = json.dumps({"keys": [], "pad": "x" * 5000}).encode()
    with httpx.Client(transport=realm.transport()) as client:
        jwks = JwksCache(
            jwks_uri=realm.jwks_uri, algorithms={"RS256"}, clock=clock, http_client=client, max_bytes=4096
        )
        with pytest.raises(IdpUnavailable):
            jwks.key_for("k1")


def test_key_count_cap(realm: LocalRealm, clock: Clock) -> None:
    with httpx.Client(transport=realm.transport()) as client:
        jwks = JwksCache(
            jwks_uri=realm.jwks_uri, algorithms={"RS256"}, clock=clock, http_client=client, max_keys=1
        )
        with pytest.raises(IdpUnavailable):
            jwks.key_for("k1")  # the JWKS holds 2 entries (signing + enc)


def test_malformed_body_keeps_last_good_set(cache: JwksCache, realm: LocalRealm, clock: Clock) -> None:
    cache.key_for("k1")
    realm.body_override = b'{"keys": [}'
    clock.advance(301)
    assert cache.key_for("k1").kid == "k1"
    assert cache.generation == 1


def test_parse_jwks_rules() -> None:
    realm = LocalRealm(Clock())
    document = realm.jwks()
    document["keys"].append({**document["keys"][0], "kid": "ps", "alg": "PS256"})
    document["keys"].append({k: v for k, v in document["keys"][0].items() if k != "kid"})
    document["keys"].append({"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"})
    document["keys"].append({**document["keys"][0], "kid": "ops", "use": None, "key_ops": ["encrypt"]})
    document["keys"][-1].pop("use")
    keys = parse_jwks(document, algorithms={"RS256"})
    assert set(keys) == {"k1"}
    with pytest.raises(InvalidInput):
        parse_jwks({"keys": [document["keys"][0], document["keys"][0]]}, algorithms={"RS256"})
    with pytest.raises(InvalidInput):
        parse_jwks({"nokeys": []}, algorithms={"RS256"})


def test_static_key_set() -> None:
    realm = LocalRealm(Clock())
    static = StaticKeySet(realm.jwks(), algorithms={"RS256"})
    assert static.kids == frozenset({"k1"})
    assert static.key_for("k1").kid == "k1"
    with pytest.raises(InvalidToken):
        static.key_for("k2")


def test_insecure_jwks_uri_refused() -> None:
    with pytest.raises(InvalidInput):
        JwksCache(jwks_uri="http://idp.example/certs", algorithms={"RS256"})
    with pytest.raises(InvalidInput):
        JwksCache(jwks_uri="ftp://idp.example/certs", algorithms={"RS256"})
    JwksCache(jwks_uri="http://127.0.0.1:8080/certs", algorithms={"RS256"}).close()
