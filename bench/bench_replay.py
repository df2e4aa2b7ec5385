"""Replay-store throughput: claims/s for the memory, SQLite (WAL) and Redis (loopback) stores.

Each row compares a mudrika store with the raw driver doing the same atomic write (the anchor), so the
ratio is mudrika's overhead (key/expiry checks, error wrapping, locking).  Batches use the stores'
``claim_many`` (one SQLite transaction; one Redis pipeline of ``SET NX PX``).

Redis rows have two anchors: the *named* one, ``redis-benchmark`` (C, from Debian's redis-tools), run
with one connection (``-c 1``) sending the same ``SET <key> 1 NX PX 600000`` one at a time or
pipelined 100 deep (``-P 100``) -- the server's own ceiling for this command over loopback -- and
redis-py doing the same writes from Python beside it.  Every figure is the median (min–max) of
interleaved repetitions (bench/_timing.py), ratios formed per repetition.

Run: .venv/bin/python bench/bench_replay.py   (starts and stops its own redis-server on a free port)
"""

from __future__ import annotations

import csv
import gc
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from tests._support.redis_server import redis_executable, start_redis_server  # noqa: E402

from _timing import Spread, fmt, ratio  # noqa: E402
from mudrika.stores.replay import (  # noqa: E402
    MemoryReplayStore,
    RedisReplayStore,
    SqliteReplayStore,
)

REPETITIONS = 5
BATCH = 100
Runner = Callable[[int], int]


def rates(runners: dict[str, Runner]) -> dict[str, Spread]:
    """Claims/s of each runner over REPETITIONS interleaved repetitions (``run(r)`` returns how many
    claims it made in repetition ``r``), so that load from other processes hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in runners}
    for r in range(REPETITIONS):
        for name, run in runners.items():
            gc.collect()
            start = time.perf_counter()
            count = run(r)
            samples[name].append(count / (time.perf_counter() - start))
    return {name: Spread.of(values) for name, values in samples.items()}


Row = tuple[str, str, Spread, str, Spread]


def add(rows: list[Row], store: str, mode: str, ours: Runner, anchor_name: str, anchor: Runner) -> None:
    measured = rates({"ours": ours, "anchor": anchor})
    rows.append((store, mode, measured["ours"], anchor_name, measured["anchor"]))


def keys(tag: str, r: int, n: int) -> list[str]:
    return [f"jti:bench:{tag}:{r}:{i}" for i in range(n)]


def bench_memory(rows: list[Row]) -> None:
    n = 50_000
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
        n_single, n_batch = (300 if sync == "FULL" else 2000), 20_000
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


def redis_benchmark(port: int, count: int, pipeline: int) -> float:
    """Requests/s ``redis-benchmark`` reports for ``count`` ``SET key 1 NX PX 600000`` on one connection."""
    executable = shutil.which("redis-benchmark")
    if executable is None:
        raise RuntimeError("redis-benchmark not installed (Debian: redis-tools)")
    done = subprocess.run(
        [
            executable,
            *("-h", "127.0.0.1", "-p", str(port), "-c", "1", "-P", str(pipeline)),
            *("-n", str(count), "-r", "100000000", "--csv"),
            *("SET", "mudrika:replay:rb:__rand_int__", "1", "NX", "PX", "600000"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    row = next(csv.reader(done.stdout.splitlines()[1:]))
    return float(row[1])


def bench_redis(rows: list[Row]) -> None:
    server = start_redis_server()
    try:
        store = RedisReplayStore(server.url)
        raw = redis.Redis.from_url(server.url, socket_timeout=1, socket_connect_timeout=1)
        exp = time.time() + 600
        n_single, n_batch = 2000, 20_000

        def ours(r: int) -> int:
            for key in keys("r", r, n_single):
                store.claim(key, exp)
            return n_single

        def redis_py(r: int) -> int:
            for key in keys("ra", r, n_single):
                raw.set("mudrika:replay:" + key, b"1", nx=True, px=600_000)
            return n_single

        def ours_batch(r: int) -> int:
            ks = keys("rb", r, n_batch)
            for i in range(0, n_batch, BATCH):
                store.claim_many([(k, exp) for k in ks[i : i + BATCH]])
            return n_batch

        def redis_py_batch(r: int) -> int:
            ks = keys("rab", r, n_batch)
            for i in range(0, n_batch, BATCH):
                pipe = raw.pipeline(transaction=False)
                for k in ks[i : i + BATCH]:
                    pipe.set("mudrika:replay:" + k, b"1", nx=True, px=600_000)
                pipe.execute()
            return n_batch

        for mode, mine, beside, count, pipeline in (
            ("single claim", ours, redis_py, n_single, 1),
            (f"claim_many x{BATCH} (pipeline)", ours_batch, redis_py_batch, n_batch, BATCH),
        ):
            benchmark_rates: list[float] = []

            def named(
                r: int, count: int = count, pipeline: int = pipeline, sink: list[float] = benchmark_rates
            ) -> int:
                # redis-benchmark times itself (excluding its start-up); its own figure is recorded.
                sink.append(redis_benchmark(server.port, count, pipeline))
                return 0

            measured = rates({"ours": mine, "redis-py": beside, "redis-benchmark": named})
            rows.append(
                (
                    "redis loopback",
                    mode,
                    measured["ours"],
                    "redis-benchmark -c 1 -P " + str(pipeline),
                    Spread.of(benchmark_rates),
                )
            )
            rows.append(
                ("redis loopback", mode, measured["ours"], "redis-py (same writes)", measured["redis-py"])
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
    print("## Replay stores (bench/bench_replay.py)\n")
    print(
        f"Claims/s, median (min–max) of {REPETITIONS} interleaved repetitions (Python "
        f"{sys.version.split()[0]}); mudrika ÷ anchor > 1 means mudrika is faster. No targets: the "
        "ratio is mudrika's overhead over the raw write. Cold by construction: every claim is a new key "
        "(a claim that hit would be a replay), and no store caches anything in front of its backend.\n"
    )
    print("| store | mode | mudrika claims/s | anchor | anchor claims/s | mudrika ÷ anchor |")
    print("|---|---|---:|---|---:|---:|")
    for store, mode, ours, anchor_name, anchor in rows:
        paired = ratio(ours, anchor)
        print(f"| {store} | {mode} | {fmt(ours, 0)} | {anchor_name} | {fmt(anchor, 0)} | {fmt(paired, 2)} |")


if __name__ == "__main__":
    main()
