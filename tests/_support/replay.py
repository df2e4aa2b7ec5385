"""Shared pieces of the replay-store tests: the claim races.

Every store (memory, SQLite, Redis) must let exactly one of many simultaneous claims of a key win;
the races live here once so each store's test only says which claim function it races.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable

import anyio
import httpx

__all__ = ["RACERS", "post_concurrently", "race_tasks", "race_threads"]

"""A fixed epoch for tests that drive a store's clock by hand."""

RACERS = 100
"""How many threads or tasks claim the same key at once."""


def race_threads(claim: Callable[[int], bool], racers: int = RACERS) -> list[bool]:
    """Run ``claim(i)`` in ``racers`` threads released together by a barrier; return every result."""
    barrier = threading.Barrier(racers)
    results: list[bool] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        barrier.wait()
        won = claim(i)
        with lock:
            results.append(won)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


async def race_tasks(aclaim: Callable[[], Awaitable[bool]], racers: int = RACERS) -> list[bool]:
    """Run ``aclaim()`` in ``racers`` tasks of one task group; return every result."""
    results: list[bool] = []

    async def one() -> None:
        results.append(await aclaim())

    async with anyio.create_task_group() as tg:
        for _ in range(racers):
            tg.start_soon(one)
    return results


async def post_concurrently(
    urls: list[str],
    count: int,
    send: Callable[[httpx.AsyncClient, str, int], Awaitable[httpx.Response]],
    *,
    concurrency: int,
    deadline: float,
) -> list[httpx.Response]:
    """Make ``count`` requests ``send(client, url, i)``, at most ``concurrency`` in flight, spread
    round-robin over the replicas' ``urls``; return the responses in the order they arrived.

    Fails the test (``TimeoutError``) when they do not all arrive within ``deadline`` seconds.
    """
    responses: list[httpx.Response] = []
    limiter = anyio.Semaphore(concurrency)
    # Expire idle connections well before the replicas do (SERVER_KEEP_ALIVE = 60 s), so a request
    # never goes out on a connection the server is closing at that instant.
    limits = httpx.Limits(
        max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=15.0
    )
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def one(i: int) -> None:
            async with limiter:
                responses.append(await send(client, urls[i % len(urls)], i))

        with anyio.fail_after(deadline):
            async with anyio.create_task_group() as tg:
                for i in range(count):
                    tg.start_soon(one, i)
    return responses
