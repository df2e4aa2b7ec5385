"""Eviction is replay: the Redis store refuses a server whose ``maxmemory-policy`` may evict claims,
at start, or — when Redis was unreachable at start — before the first claim (failing it closed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mudrika.errors import InvalidInput, UnavailableError
from mudrika.stores.replay import RedisReplayStore
from tests._support.net import free_port
from tests._support.redis_server import RedisServer, require_redis_executable

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    node = RedisServer(
        require_redis_executable(), free_port(), tmp_path, ["--maxmemory-policy", "allkeys-lru"]
    )
    try:
        yield node
    finally:
        node.stop()


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-ttl", "allkeys-random"])
def test_an_evicting_policy_is_refused_at_start(server: RedisServer, policy: str) -> None:
    server.extra_args = ["--maxmemory-policy", policy]
    server.start()
    with pytest.raises(InvalidInput) as info:
        RedisReplayStore(server.url)
    assert (info.value.code, info.value.fields["policy"]) == ("redis_eviction_policy", policy)


def test_noeviction_is_accepted(server: RedisServer) -> None:
    server.extra_args = ["--maxmemory-policy", "noeviction"]
    server.start()
    store = RedisReplayStore(server.url)
    try:
        assert store.claim("k", 0) is True
        assert store.claim("k", 0) is False
    finally:
        store.close()


def test_a_policy_found_bad_later_fails_every_claim_closed(server: RedisServer) -> None:
    store = RedisReplayStore(server.url)  # Redis is not running yet: the check is deferred
    server.start()
    with pytest.raises(UnavailableError) as info:
        store.claim("k", 0)
    assert info.value.code == "replay_store_misconfigured"
    store.close()
    waived = RedisReplayStore(server.url, check_eviction_policy=False)
    assert waived.claim("k", 0) is True  # the operator said they verified it themselves
    waived.close()
