"""MemoryReplayStore: first claim wins, expiry, retention, caps, fail-closed when full, concurrency."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.errors import InvalidInput, ReplayError, UnavailableError
from mudrika.stores.replay import (
    MAX_KEY_BYTES,
    MemoryReplayStore,
    ReplayStore,
    aclaim_or_raise,
    claim_or_raise,
)
from tests._support.replay import race_tasks, race_threads
from tests._support.tokenfactory import T0, Clock


@pytest.fixture
def store(clock: Clock) -> MemoryReplayStore:
    return MemoryReplayStore(max_entries=1000, clock=clock, min_retention=5)


def test_is_a_replay_store(store: MemoryReplayStore) -> None:
    assert isinstance(store, ReplayStore)


def test_first_claim_wins(store: MemoryReplayStore) -> None:
    assert store.claim("jti:iss:a", T0 + 60) is True
    assert store.claim("jti:iss:a", T0 + 60) is False
    assert store.claim("jti:iss:a", T0 + 120) is False
    assert store.claim("jti:iss:b", T0 + 60) is True


def test_expiry_re_allows(store: MemoryReplayStore, clock: Clock) -> None:
    assert store.claim("k", T0 + 60)
    clock.now = T0 + 59.999
    assert not store.claim("k", T0 + 120)
    clock.now = T0 + 60
    assert store.claim("k", T0 + 120)
    assert not store.claim("k", T0 + 120)


def test_past_expiry_is_held_for_min_retention(store: MemoryReplayStore, clock: Clock) -> None:
    # A token accepted within the verifier's leeway after its exp must still be single use.
    assert store.claim("late", T0 - 10)
    clock.now = T0 + 4.9
    assert not store.claim("late", T0 - 10)
    clock.now = T0 + 5
    assert store.claim("late", T0 - 10)


def test_expiry_too_far_is_invalid(clock: Clock) -> None:
    store = MemoryReplayStore(clock=clock, max_ttl=3600)
    assert store.claim("ok", T0 + 3600)
    with pytest.raises(InvalidInput) as info:
        store.claim("far", T0 + 3600.5)
    assert info.value.code == "replay_expiry_too_far"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), True, "1700000000", None])
def test_bad_expiry_is_invalid(store: MemoryReplayStore, bad: object) -> None:
    with pytest.raises(InvalidInput) as info:
        store.claim("k", bad)  # type: ignore[arg-type]
    assert info.value.code == "replay_expiry_invalid"
    assert len(store) == 0


def test_key_caps(store: MemoryReplayStore) -> None:
    assert store.claim("k" * MAX_KEY_BYTES, T0 + 1)
    # 256 two-byte characters are 512 bytes: at the cap; one more byte is over it.
    assert store.claim("é" * (MAX_KEY_BYTES // 2), T0 + 1)
    for key, code in [
        ("", "replay_key_empty"),
        ("k" * (MAX_KEY_BYTES + 1), "replay_key_too_long"),
        ("é" * (MAX_KEY_BYTES // 2) + "x", "replay_key_too_long"),
        ("\ud800", "replay_key_invalid"),
        (b"bytes", "replay_key_invalid"),
    ]:
        with pytest.raises(InvalidInput) as info:
            store.claim(key, T0 + 1)  # type: ignore[arg-type]
        assert info.value.code == code


def test_full_store_fails_closed_and_never_evicts(clock: Clock) -> None:
    store = MemoryReplayStore(max_entries=3, clock=clock, min_retention=0)
    for key in ("a", "b", "c"):
        assert store.claim(key, T0 + 10)
    with pytest.raises(UnavailableError) as info:
        store.claim("d", T0 + 10)
    assert info.value.code == "replay_store_full"
    # The live claims are all still there: no eviction re-opened a replay.
    for key in ("a", "b", "c"):
        assert store.claim(key, T0 + 10) is False
    # Once they expire, room comes back.
    clock.now = T0 + 10
    assert store.claim("d", T0 + 20)
    assert len(store) == 1


def test_purge_drops_only_expired(store: MemoryReplayStore, clock: Clock) -> None:
    store.claim("short", T0 + 10)
    store.claim("long", T0 + 100)
    clock.now = T0 + 50
    assert store.purge() == 1
    assert len(store) == 1
    assert not store.claim("long", T0 + 100)


def test_claim_many(store: MemoryReplayStore) -> None:
    store.claim("seen", T0 + 60)
    assert store.claim_many([("x", T0 + 60), ("seen", T0 + 60), ("x", T0 + 60), ("y", T0 + 60)]) == [
        True,
        False,
        False,
        True,
    ]


def test_claim_many_checks_every_item_before_claiming(store: MemoryReplayStore) -> None:
    with pytest.raises(InvalidInput):
        store.claim_many([("fine", T0 + 60), ("", T0 + 60)])
    assert store.claim("fine", T0 + 60)


def test_claim_or_raise(store: MemoryReplayStore) -> None:
    claim_or_raise(store, "jti:iss:1", T0 + 60)
    with pytest.raises(ReplayError) as info:
        claim_or_raise(store, "jti:iss:1", T0 + 60)
    assert info.value.code == "replay"


def test_closed_store_is_unavailable(store: MemoryReplayStore) -> None:
    store.claim("k", T0 + 60)
    store.close()
    with pytest.raises(UnavailableError) as info:
        store.claim("other", T0 + 60)
    assert info.value.code == "replay_store_closed"


def test_threads_same_key_exactly_one_wins() -> None:
    store = MemoryReplayStore()
    results = race_threads(lambda _: store.claim("jti:race:1", time.time() + 60))
    assert len(results) == 100
    assert results.count(True) == 1


@pytest.mark.anyio
async def test_async_gather_exactly_one_wins() -> None:
    store = MemoryReplayStore()
    results = await race_tasks(lambda: store.aclaim("jti:race:2", time.time() + 60))
    assert results.count(True) == 1
    assert len(results) == 100
    with pytest.raises(ReplayError):
        await aclaim_or_raise(store, "jti:race:2", time.time() + 60)
    await store.aclose()


def test_bad_config() -> None:
    with pytest.raises(InvalidInput):
        MemoryReplayStore(max_entries=0)
    with pytest.raises(InvalidInput):
        MemoryReplayStore(min_retention=-1)
    with pytest.raises(InvalidInput):
        MemoryReplayStore(min_retention=10, max_ttl=5)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 20), st.integers(0, 5)),
        max_size=40,
    )
)
def test_matches_reference_model(ops: list[tuple[str, int, int]]) -> None:
    """Against a plain dict model: a key is refused exactly while an earlier winning claim is live."""
    clock = Clock(0.0)
    store = MemoryReplayStore(max_entries=10, clock=clock, min_retention=0)
    model: dict[str, float] = {}
    for key, ttl, advance in ops:
        clock.now += advance
        expected = not (key in model and model[key] > clock.now)
        if expected:
            model[key] = clock.now + ttl
        assert store.claim(key, clock.now + ttl) is expected
