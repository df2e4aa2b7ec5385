"""Single use of an accepted v0.2 transaction on every replica that shares a replay store
(AP2 issue #346: the SDK never consumes an accepted closed Payment Mandate).

Replicas are separate store objects over one shared backend: one SQLite file, or one real
``redis-server`` on 127.0.0.1 started by the session fixture.  Racing replicas verify the same
evidence at once; exactly one is accepted.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from mudrika.errors import BindingError, ReplayError, UnavailableError
from mudrika.payments.v02 import verify_v02
from mudrika.stores.replay import MemoryReplayStore, RedisReplayStore, ReplayStore, SqliteReplayStore
from tests._support.ap2_v02 import Transaction, build
from tests._support.redis_server import RedisServer
from tests._support.replay import race_threads

pytestmark = pytest.mark.security


def race_replicas(transaction: Transaction, replicas: list[ReplayStore]) -> list[bool]:
    """Eight threads verify the same evidence at once, spread over ``replicas`` (closed afterwards);
    whether each was accepted (a replay is a refusal, anything else fails the test)."""

    def accept(i: int) -> bool:
        try:
            verify_v02(
                transaction.evidence(),
                replay_store=replicas[i % len(replicas)],
                **transaction.verifier_arguments(),
            )
        except ReplayError:
            return False
        return True

    try:
        return race_threads(accept, racers=8)
    finally:
        for replica in replicas:
            replica.close()


def test_sqlite_replicas_accept_a_transaction_once(tmp_path: Path) -> None:
    database = tmp_path / "replay.sqlite"
    replicas: list[ReplayStore] = [SqliteReplayStore(database) for _ in range(4)]
    assert sorted(race_replicas(build(), replicas)) == [False] * 7 + [True]


def test_redis_replicas_accept_a_transaction_once(redis_server: RedisServer) -> None:
    namespace = f"mudrika-v02-{uuid.uuid4().hex}"
    replicas: list[ReplayStore] = [RedisReplayStore(redis_server.url, namespace=namespace) for _ in range(4)]
    assert sorted(race_replicas(build(), replicas)) == [False] * 7 + [True]


def test_a_store_that_cannot_answer_fails_closed() -> None:
    class Down(MemoryReplayStore):
        def claim(self, key: str, expires_at: float) -> bool:
            raise UnavailableError("replay store unavailable", code="replay_store_unavailable")

    transaction = build()
    with pytest.raises(UnavailableError):
        verify_v02(transaction.evidence(), replay_store=Down(), **transaction.verifier_arguments())


def test_nothing_is_consumed_when_a_check_fails() -> None:
    # Authorise before consuming: a refused transaction must not burn the consent.
    transaction = build()
    store = MemoryReplayStore()
    broken = build(
        keys=transaction.keys, closed_payment_hook=lambda closed: closed.update(transaction_id="T" * 43)
    )
    arguments = {**transaction.verifier_arguments(), "now": broken.now, "replay_store": store}
    with pytest.raises(BindingError) as caught:
        verify_v02(broken.evidence(), **arguments)
    assert caught.value.code == "transaction_id_mismatch"
    # The checkout chain of the refused attempt (same open mandate, same checkout) still verifies once.
    verified = verify_v02(broken.evidence(payment=False, receipts=False), **{**arguments, "payment_hops": ()})
    assert verified.report.by_id("v02.single_use.checkout").passed
