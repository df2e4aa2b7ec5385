"""Replay-store throughput: claims/s for the memory, SQLite (WAL) and Redis (loopback) stores.

Each row compares a mudrika store with the raw driver doing the same atomic write (the anchor), so the
ratio is mudrika's overhead (key/expiry checks, error wrapping, locking).  Batches use the stores'
``claim_many`` (one SQLite transaction; one Redis pipeline of ``SET NX PX``).

Run: .venv/bin/python bench/bench_replay.py   (starts and stops its own redis-server on a free port)
"""

from __future__ import annotations

import gc
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "src"))

from tests._support.redis_server import redis_executable, start_redis_server  # noqa: E402

from mudrika.stores.replay import (  # noqa: E402
    MemoryReplayStore,
    RedisReplayStore,
    SqliteReplayStore,
)

REPEATS = 5
BATCH = 100


def compare(ours: Callable[[int], int], anchor: Callable[[int], int]) -> tuple[float, float]:
    """Best claims/s of ``ours`` and ``anchor`` over REPEATS runs each, interleaved so that load from
    other processes hits both alike.  ``run(r)`` returns how many claims it made in repeat ``r``."""
    best = [0.0, 0.0]
    for r in range(REPEATS):
        for i, run in enumerate((ours, anchor)):
            gc.collect()
            start = time.perf_counter()
            count = run(r)
            best[i] = max(best[i], count / (time.perf_counter() - start))
    return best[0], best[1]


Row = tuple[str, str, float, str, float]


def add(
    rows: list[Row],
    store: str,
    mode: str,
    ours: Callable[[int], int],
    anchor_name: str,
    anchor: Callable[[int], int],
) -> None:
    ours_rate, anchor_rate = compare(ours, anchor)
    rows.append((store, mode, ours_rate, anchor_name, anchor_rate))


def keys(tag: str, r: int, n: int) -> list[str]:
    return [f"jti:bench:{tag}:{r}:{i}" for i in range(n)]


def bench_memory(rows: list[Row]) -> None:
    n = 100_000
    exp = time.time() + 600

    def ours(r: int) -> int:
        store = MemoryReplayStore(max_entries=n)
        for key in keys("m", r, n):
            store.claim(key, exp)
        return n

    def anchor(r: int) -> int:
        live: dict[str, float] = {}
        for key in keys("m", r, n):
            live.setdefault(key, exp)
        return n

    def ours_batch(r: int) -> int:
        store = MemoryReplayStore(max_entries=n)
        ks = keys("mb", r, n)
        for i in range(0, n, BATCH):
            store.claim_many([(k, exp) for k in ks[i : i + BATCH]])
        return n

    add(rows, "memory", "single claim", ours, "dict.setdefault", anchor)
    add(rows, "memory", f"claim_many x{BATCH}", ours_batch, "dict.setdefault", anchor)


def bench_sqlite(rows: list[Row], workdir: Path) -> None:
    exp = time.time() + 600
    raw_sql = (
        "INSERT INTO mudrika_replay (key, expires_at) VALUES (?1, ?2)"
        " ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at"
        " WHERE mudrika_replay.expires_at <= ?3"
    )
    for sync in ("FULL", "NORMAL"):
        n_single, n_batch = 3000, 30_000
        path = workdir / f"bench-{sync}.sqlite3"

        def ours(r: int, sync: str = sync, path: Path = path, n: int = n_single) -> int:
            store = SqliteReplayStore(path, synchronous=sync)  # type: ignore[arg-type]
            for key in keys(f"s{sync}", r, n):
                store.claim(key, exp)
            store.close()
            return n

        def anchor(r: int, sync: str = sync, path: Path = path, n: int = n_single) -> int:
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute(f"PRAGMA synchronous = {sync}")
            now = time.time()
            for key in keys(f"a{sync}", r, n):
                conn.execute(raw_sql, (key, exp, now))
            conn.close()
            return n

        def ours_batch(r: int, sync: str = sync, path: Path = path, n: int = n_batch) -> int:
            store = SqliteReplayStore(path, synchronous=sync)  # type: ignore[arg-type]
            ks = keys(f"sb{sync}", r, n)
            for i in range(0, n, BATCH):
                store.claim_many([(k, exp) for k in ks[i : i + BATCH]])
            store.close()
            return n

        def anchor_batch(r: int, sync: str = sync, path: Path = path, n: int = n_batch) -> int:
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute(f"PRAGMA synchronous = {sync}")
            ks = keys(f"ab{sync}", r, n)
            now = time.time()
            for i in range(0, n, BATCH):
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(raw_sql, [(k, exp, now) for k in ks[i : i + BATCH]])
                conn.execute("COMMIT")
            conn.close()
            return n

        SqliteReplayStore(path).close()  # schema + WAL once
        label = f"sqlite WAL sync={sync}"
        add(rows, label, "single claim", ours, "sqlite3 upsert", anchor)
        add(rows, label, f"claim_many x{BATCH} (1 txn)", ours_batch, "executemany (1 txn)", anchor_batch)


def bench_redis(rows: list[Row]) -> None:
    server = start_redis_server()
    try:
        store = RedisReplayStore(server.url)
        raw = redis.Redis.from_url(server.url, socket_timeout=1, socket_connect_timeout=1)
        exp = time.time() + 600
        n_single, n_batch = 5000, 50_000

        def ours(r: int) -> int:
            for key in keys("r", r, n_single):
                store.claim(key, exp)
            return n_single

        def anchor(r: int) -> int:
            for key in keys("ra", r, n_single):
                raw.set("mudrika:replay:" + key, b"1", nx=True, px=600_000)
            return n_single

        def ours_batch(r: int) -> int:
            ks = keys("rb", r, n_batch)
            for i in range(0, n_batch, BATCH):
                store.claim_many([(k, exp) for k in ks[i : i + BATCH]])
            return n_batch

        def anchor_batch(r: int) -> int:
            ks = keys("rab", r, n_batch)
            for i in range(0, n_batch, BATCH):
                pipe = raw.pipeline(transaction=False)
                for k in ks[i : i + BATCH]:
                    pipe.set("mudrika:replay:" + k, b"1", nx=True, px=600_000)
                pipe.execute()
            return n_batch

        add(rows, "redis loopback", "single claim", ours, "redis-py SET NX PX", anchor)
        add(
            rows,
            "redis loopback",
            f"claim_many x{BATCH} (pipeline)",
            ours_batch,
            "redis-py pipeline",
            anchor_batch,
        )
        store.close()
        raw.close()
    finally:
        server.stop()
        shutil.rmtree(server.workdir, ignore_errors=True)


def main() -> None:
    rows: list[Row] = []
    bench_memory(rows)
    with tempfile.TemporaryDirectory(prefix="mudrika-bench-") as tmp:
        bench_sqlite(rows, Path(tmp))
    if redis_executable() is None:
        print("redis-server not installed: Redis rows skipped", file=sys.stderr)
    else:
        bench_redis(rows)
    print(f"Replay stores, claims/s, best of {REPEATS} (Python {sys.version.split()[0]})\n")
    print("| store | mode | mudrika claims/s | anchor | anchor claims/s | mudrika/anchor |")
    print("|---|---|---:|---|---:|---:|")
    for store, mode, ours, anchor_name, anchor in rows:
        print(f"| {store} | {mode} | {ours:,.0f} | {anchor_name} | {anchor:,.0f} | {ours / anchor:.2f} |")


if __name__ == "__main__":
    main()
