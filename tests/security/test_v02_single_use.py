"""Single use of an accepted v0.2 transaction on every replica that shares a replay store
(AP2 issue #346: the SDK never consumes an accepted closed Payment Mandate).

Replicas are separate store objects over one shared backend: one SQLite file, or one real
``redis-server`` on 127.0.0.1 started by the session fixture.  Racing replicas verify the same
evidence at once; exactly one is accepted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mudrika.errors import BindingError, ReplayError, UnavailableError
from mudrika.payments.v02 import verify_v02
from mudrika.stores.replay import MemoryReplayStore, RedisReplayStore, ReplayStore, SqliteReplayStore
from tests._support.ap2_v02 import Transaction, build
from tests._support.redis_server import RedisServer
from tests._support.replay import race_threads

pytestmark = pytest.mark.security


def verifier(transaction: Transaction) -> Callable[[ReplayStore], bool]:
    def accept(store: ReplayStore) -> bool:
        try:
            verify_v02(
                transaction.evidence(),
                trust_root=transaction.trust_root,
                checkout_hops=transaction.checkout_hops,
                payment_hops=transaction.payment_hops,
                now=transaction.now,
                usage=None,
                replay_store=store,
            )
        except ReplayError:
            return False
        return True

    return accept


def test_sqlite_replicas_accept_a_transaction_once(tmp_path: Path) -> None:
    transaction = build()
    accept = verifier(transaction)
    database = tmp_path / "replay.sqlite"
    replicas = [SqliteReplayStore(database) for _ in range(4)]
    try:
        results = race_threads(lambda i: accept(replicas[i % len(replicas)]), racers=8)
    finally:
        for replica in replicas:
            replica.close()
    assert sorted(results) == [False] * 7 + [True]


def test_redis_replicas_accept_a_transaction_once(redis_server: RedisServer) -> None:
    transaction = build()
    accept = verifier(transaction)
    namespace = f"mudrika-v02-{uuid.uuid4().hex}"
    replicas = [RedisReplayStore(redis_server.url, namespace=namespace) for _ in range(4)]
    try:
        results = race_threads(lambda i: accept(replicas[i % len(replicas)]), racers=8)
    finally:
        for replica in replicas:
            replica.close()
    assert sorted(results) == [False] * 7 + [True]


def test_a_store_that_cannot_answer_fails_closed() -> None:
    class Down(MemoryReplayStore):
        def claim(self, key: str, expires_at: float) -> bool:
            raise UnavailableError("replay store unavailable", code="replay_store_unavailable")

    transaction = build()
    arguments: dict[str, Any] = {
        "trust_root": transaction.trust_root,
        "checkout_hops": transaction.checkout_hops,
        "payment_hops": transaction.payment_hops,
        "now": transaction.now,
        "usage": None,
    }
    with pytest.raises(UnavailableError):
        verify_v02(transaction.evidence(), replay_store=Down(), **arguments)


def test_nothing_is_consumed_when_a_check_fails() -> None:
    # Authorise before consuming: a refused transaction must not burn the consent.
    transaction = build()
    store = MemoryReplayStore()
    broken = build(
        keys=transaction.keys, closed_payment_hook=lambda closed: closed.update(transaction_id="T" * 43)
    )
    arguments: dict[str, Any] = {
        "trust_root": transaction.trust_root,
        "checkout_hops": transaction.checkout_hops,
        "payment_hops": transaction.payment_hops,
        "usage": None,
        "replay_store": store,
    }
    with pytest.raises(BindingError) as caught:
        verify_v02(broken.evidence(), now=broken.now, **arguments)
    assert caught.value.code == "transaction_id_mismatch"
    # The checkout chain of the refused attempt (same open mandate, same checkout) still verifies once.
    verified = verify_v02(
        broken.evidence(payment=False, receipts=False), now=broken.now, **{**arguments, "payment_hops": ()}
    )
    assert verified.report.by_id("v02.single_use.checkout").passed
