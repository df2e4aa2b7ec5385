"""HTTP throughput of a JSON-RPC app under uvicorn, with and without the A2A auth middleware (P7).

Both servers are the same Starlette app (``POST /`` echoes the JSON-RPC call) run by uvicorn (one
worker, no access log) on 127.0.0.1; the protected one sits behind ``A2AAuthMiddleware`` with a
Bearer ``AccessTokenVerifier`` (key set loaded, verified-token cache of ``CACHE_SIZE`` entries) and
the operation policy.  The load generator is npm ``autocannon`` (tests/node/node_modules) driven by
bench/autocannon_tokens.mjs, loopback only, at 1, 8, 32 and 128 connections, four ways:

* **unprotected** -- the plain app (no verification at all);
* **warm: repeated token** -- every request carries the same valid token: after its second request
  the verifier answers from its cache (the middleware's steady-state cost per request, cache hits);
* **cold: floor (bare verification)** -- the plain app behind the least any token check must do per
  request, and nothing else: take the ``Authorization`` header, ``verify_jwt`` (RS256 signature,
  iss/aud/exp/iat) against the one key, no cache, no policy, no error answers;
* **cold: distinct tokens** -- the protected app, every request with a token it has not met among
  the last ``POOL_SIZE`` requests: ``POOL_SIZE`` valid tokens (own ``jti``, ``sub`` and ``exp``) signed
  before timing, taken in order, each run continuing where the last run to that server stopped.  The
  pool is larger than every window the middleware remembers tokens in (the verifier's cache and its
  record of first sightings, ``CACHE_SIZE``; the Bearer authenticator's record of labels, 4,096), so
  no result is ever stored or served from a cache: every request pays a full RS256 verification, a
  new principal and a policy decision for it.  Target: >= 0.9x the floor's throughput at every
  connection count.

Each repetition runs the four back to back at each connection count (interleaved), and ratios are
formed per repetition; rows give the median (min–max) of ``--repetitions`` runs (bench/_timing.py).
The throughput of the one-worker server is also stated per core beside this machine's OpenSSL ceiling
for one RS256 verify per request (bench/_ceiling.py); the load generator shares the machine's cores.

Run: .venv/bin/python bench/bench_middleware_http.py [--duration 1] [--repetitions 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "src"))

sys.path.insert(0, str(REPO_ROOT / "bench"))

from tests._support.net import free_port, wait_listening  # noqa: E402
from tests._support.processes import stop_process  # noqa: E402

from _ceiling import per_core_cell  # noqa: E402
from _timing import Spread, fmt, measure_async, ratio, verdict  # noqa: E402

AUTOCANNON = REPO_ROOT / "tests" / "node" / "node_modules" / "autocannon" / "autocannon.js"
DRIVER = Path(__file__).resolve().parent / "autocannon_tokens.mjs"
CONNECTIONS = (1, 8, 32, 128)
CACHE_SIZE = 1000
#: Larger than every window of remembered tokens (CACHE_SIZE; the Bearer authenticator's 4,096 labels):
#: a token comes again only after that many others, when nothing of it is remembered any more.
POOL_SIZE = 5000
#: Target: distinct-token throughput as a share of the floor's (bare verification) at each load.
TARGET = 0.9
BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "method": "message/send",
        "id": 1,
        "params": {
            "message": {"role": "user", "messageId": "m-1", "parts": [{"kind": "text", "text": "hi"}]}
        },
    }
)


def verifications(jwks_file: str) -> tuple[Any, Callable[[str | bytes], object]]:
    """The middleware's verifier (key set loaded, cache of ``CACHE_SIZE``) and the floor's bare
    ``verify_jwt`` of one token against the one key, built from the same JWKS file."""
    from tests._support.tokenfactory import ISSUER

    from mudrika.crypto.jose import verify_jwt
    from mudrika.trust.keycloak.jwks import StaticKeySet
    from mudrika.trust.keycloak.tokens import AccessTokenVerifier

    keys = StaticKeySet(json.loads(Path(jwks_file).read_text()), algorithms={"RS256"})
    verifier = AccessTokenVerifier(
        issuer=ISSUER, audience="agent-api", azp_allowlist=None, jwks=keys, cache_size=CACHE_SIZE
    )
    (key,) = (keys.key_for(kid) for kid in keys.kids)

    def bare_verify(token: str | bytes) -> object:
        return verify_jwt(token, key=key, issuer=ISSUER, audience="agent-api", now=time.time(), leeway=30)

    return verifier, bare_verify


def build_app(mode: str, jwks_file: str) -> object:
    """The ASGI app for ``--serve``: the echo app, wrapped or not."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from tests._support.tokenfactory import demo_policy

    from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator

    async def rpc(request: Request) -> JSONResponse:
        call = json.loads(await request.body())
        return JSONResponse({"jsonrpc": "2.0", "result": {"echo": call["method"]}, "id": call.get("id")})

    app = Starlette(routes=[Route("/", rpc, methods=["POST"])])
    # Both servers build the middleware, so both processes hold the same modules and objects (a
    # larger heap makes every garbage collection dearer); only the protected one routes through it.
    verifier, bare_verify = verifications(jwks_file)
    protected = A2AAuthMiddleware(app, authenticators=[BearerAuthenticator(verifier)], policy=demo_policy())

    async def floor(scope: Any, receive: Any, send: Any) -> None:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                bare_verify(value[7:])
        await app(scope, receive, send)

    return {"plain": app, "protected": protected, "floor": floor}[mode]


def serve(mode: str, port: int, jwks_file: str) -> None:
    import uvicorn

    app = build_app(mode, jwks_file)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off")  # type: ignore[arg-type]


class Server:
    """One uvicorn server process on a free loopback port, stopped by :meth:`stop`."""

    def __init__(self, mode: str, jwks_file: str) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", mode, "--port", str(self.port), "--jwks", jwks_file],
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'src'}"},
        )
        wait_listening(self.port, timeout=20.0)

    def stop(self) -> None:
        stop_process(self.process, timeout=10)


def load(
    port: int, body_file: str, tokens_file: str, duration: float, connections: int, start: int = 0
) -> dict[str, float]:
    """One autocannon run, taking tokens from line ``start`` of ``tokens_file`` on; refuses any
    non-2xx answer or socket error (they would inflate the rate)."""
    command = [
        shutil.which("node") or "node",
        str(DRIVER),
        str(AUTOCANNON),
        f"http://127.0.0.1:{port}/",
        str(connections),
        str(duration),
        body_file,
        tokens_file,
        str(start),
    ]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=duration + 60)
    result = json.loads(out.stdout)
    if result["non2xx"] or result["errors"] or result["timeouts"]:
        raise RuntimeError(
            f"{result['non2xx']} non-2xx answers, {result['errors']} errors, {result['timeouts']} timeouts"
        )
    return {
        "rps": result["requests"]["total"] / duration,
        "p50": result["latency"]["p50"],
        "p99": result["latency"]["p99"],
        "sent": result["sent"],
    }


#: In-process rows: calls per batch and repetitions (each cold call takes a new token of the pool).
IN_PROCESS_CALLS = 300
IN_PROCESS_REPETITIONS = 7


async def _asgi_post(app: Any, token: str, body: bytes) -> None:
    """One POST through ``app`` as uvicorn would hand it over (the body already received)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/",
        "raw_path": b"/",
        "root_path": "",
        "query_string": b"",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"authorization", f"Bearer {token}".encode()),
        ],
    }
    delivered = False
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(scope, receive, send)
    if status != [200]:
        raise RuntimeError(f"in-process request answered {status}")


class _Answered:
    """A verifier that hands back each token's result verified before timing (a distinct result per
    token, so the middleware meets a new principal on every call, as it does cold)."""

    def __init__(self, results: dict[str, Any]) -> None:
        self._results = results

    async def averify(self, token: str) -> Any:
        return self._results[token]

    def holds(self, token: str, result: object) -> bool:
        return False


def _pipeline_alone(jwks_file: str, pool: list[str]) -> Any:
    """The protected app with every verification done before timing: what the middleware's own
    pipeline (and the app) cost per request, for the decomposition under the in-process table."""
    from tests._support.tokenfactory import demo_policy

    from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator

    verifier, _ = verifications(jwks_file)
    answered = {token: asyncio.run(verifier.averify(token)) for token in pool}
    app: Any = build_app("plain", jwks_file)
    stand_in: Any = _Answered(answered)  # duck-typed: the two methods the Bearer authenticator calls
    return A2AAuthMiddleware(app, authenticators=[BearerAuthenticator(stand_in)], policy=demo_policy())


def per_request_in_process(jwks_file: str, pool: list[str], one_file: str) -> dict[str, Spread]:
    """µs of server work per request without HTTP or a load generator: the same apps, called in-process.

    Why: on two cores shared with autocannon (and, here, with other work) the HTTP rows move a lot;
    these say what the middleware itself costs per request beside the floor, which bounds the HTTP
    ratio whatever the load generator does.
    """
    apps = {mode: build_app(mode, jwks_file) for mode in ("plain", "floor", "protected")}
    warm_app = build_app("protected", jwks_file)
    warm_token = Path(one_file).read_text().strip()
    body = BODY.encode()
    streams = {mode: iter(pool) for mode in ("floor", "protected")}

    def cold(mode: str) -> Any:
        app, tokens = apps[mode], streams[mode]
        return lambda: _asgi_post(app, next(tokens), body)

    # The two verifications on their own (no app, no middleware), each with its own stream of the
    # pool: what the middleware and the floor spend beyond them is the rest of their pipelines.
    verifier, bare_verify = verifications(jwks_file)
    alone = {mode: iter(pool) for mode in ("verifier", "bare")}
    pipeline = _pipeline_alone(jwks_file, pool)
    pipeline_tokens = iter(pool)
    # The two halves again, one call of each per request, sharing nothing (their own verifier, their
    # own streams): if this costs what a cold request costs, the extra is the alternation itself.
    alternated_verifier, _ = verifications(jwks_file)
    alternated = {mode: iter(pool) for mode in ("verifier", "pipeline")}

    async def verifier_alone() -> None:
        await verifier.averify(next(alone["verifier"]))

    async def bare_alone() -> None:
        bare_verify(next(alone["bare"]))

    async def verifier_then_pipeline() -> None:
        await alternated_verifier.averify(next(alternated["verifier"]))
        await _asgi_post(pipeline, next(alternated["pipeline"]), body)

    return measure_async(
        {
            "plain": lambda: _asgi_post(apps["plain"], warm_token, body),
            "floor": cold("floor"),
            "cold": cold("protected"),
            "warm": lambda: _asgi_post(warm_app, warm_token, body),
            "bare": bare_alone,
            "verifier": verifier_alone,
            "pipeline": lambda: _asgi_post(pipeline, next(pipeline_tokens), body),
            "alternated": verifier_then_pipeline,
        },
        repetitions=IN_PROCESS_REPETITIONS,
        number=IN_PROCESS_CALLS,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", choices=["plain", "protected", "floor"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--jwks", default="")
    parser.add_argument("--duration", type=float, default=1.0)
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.jwks)
        return
    title = "## A2A middleware over HTTP (bench/bench_middleware_http.py)\n"
    if shutil.which("node") is None or not AUTOCANNON.is_file():
        print(f"{title}\nSkipped: node/autocannon missing (scripts/setup.sh --with-node installs them).")
        return

    from tests._support.tokenfactory import Clock, LocalRealm

    realm = LocalRealm(Clock())
    expires = int(time.time()) + 3600
    pool = [
        realm.token(
            exp=expires - index % 600, jti=f"bench-{index}", sub=f"5f1c1c7e-0000-4000-8000-{index:012d}"
        )
        for index in range(POOL_SIZE)
    ]
    samples: dict[tuple[int, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        jwks_file = str(Path(tmp) / "jwks.json")
        Path(jwks_file).write_text(json.dumps(realm.jwks()))
        body_file = str(Path(tmp) / "body.json")
        Path(body_file).write_text(BODY)
        one_file, pool_file = str(Path(tmp) / "one.txt"), str(Path(tmp) / "pool.txt")
        # The warm runs' token is not in the pool: the cold runs to the same server never meet it.
        Path(one_file).write_text(realm.token(exp=expires, jti="bench-warm") + "\n")
        Path(pool_file).write_text("\n".join(pool) + "\n")
        plain, protected = Server("plain", jwks_file), Server("protected", jwks_file)
        floor = Server("floor", jwks_file)
        try:
            runs = (
                ("plain", plain.port, one_file),
                ("repeated", protected.port, one_file),
                ("distinct", protected.port, pool_file),
                ("floor", floor.port, pool_file),
            )
            # Where each server's next run takes up the pool: every token is used once before any
            # comes again (a server is the one process that could remember it).
            offsets = {port: 0 for _, port, _ in runs}
            for _, port, tokens in runs:  # warm every server (imports, first verification)
                warm_up = load(port, body_file, tokens, 0.5, 8, offsets[port] if tokens == pool_file else 0)
                if tokens == pool_file:
                    offsets[port] += int(warm_up["sent"])
            for _ in range(args.repetitions):
                for connections in CONNECTIONS:
                    for mode, port, tokens in runs:
                        begin = offsets[port] if tokens == pool_file else 0
                        result = load(port, body_file, tokens, args.duration, connections, begin)
                        if tokens == pool_file:
                            offsets[port] += int(result["sent"])
                        samples.setdefault((connections, mode), []).append(result)
        finally:
            plain.stop()
            protected.stop()
            floor.stop()
        in_process = per_request_in_process(jwks_file, pool, one_file)

    print(title)
    print(
        f"uvicorn (1 worker) on 127.0.0.1; autocannon for {args.duration:g} s per run; POST / JSON-RPC "
        f"`message/send` with a Bearer RS256 token; verifier cache {CACHE_SIZE:,} entries. **Cold** runs "
        f"(floor, distinct): {POOL_SIZE:,} distinct tokens (own jti, sub and exp) signed before timing, taken "
        "in order, each run continuing where the last run to that server stopped, so a token comes again "
        "only after every window the middleware remembers tokens in has forgotten it (the verifier's cache "
        "and first-sighting record, the Bearer authenticator's labels): no cache hits and no stores. "
        "**Warm**: one token, served from the verifier's cache. *floor* = the plain app behind a bare "
        "`verify_jwt` of each token (no cache, policy or middleware). Requests/s: median (min–max) of "
        f"{args.repetitions} repetitions, the four runs interleaved; ratios per repetition. *Per core*: the "
        "one-worker server's requests per second beside this machine's OpenSSL ceiling for one RS256 "
        "verify per request (autocannon runs on the same two cores).\n"
    )
    print(
        "| load (P7) | unprotected req/s | warm: repeated token req/s (÷ unprot.) "
        "| cold: floor req/s (÷ unprot.) | cold: distinct tokens req/s | per core, distinct (RS256 ceiling) "
        "| p99 ms (unprot. / warm / floor / distinct) | distinct ÷ floor | target | verdict |"
    )
    print("|---|---:|---:|---:|---:|---|---|---:|---|---|")
    for connections in CONNECTIONS:
        rate = {
            mode: Spread.of([run["rps"] for run in samples[(connections, mode)]])
            for mode in ("plain", "repeated", "distinct", "floor")
        }
        p99 = {
            mode: statistics.median(run["p99"] for run in samples[(connections, mode)])
            for mode in ("plain", "repeated", "floor", "distinct")
        }
        warm = ratio(rate["repeated"], rate["plain"])
        floor_share = ratio(rate["floor"], rate["plain"])
        of_floor = ratio(rate["distinct"], rate["floor"])
        per_core = per_core_cell(1e6 / rate["distinct"].median, {"RS256": 1})
        print(
            f"| {connections} connection{'s' if connections > 1 else ''} | {fmt(rate['plain'], 0)} "
            f"| {fmt(rate['repeated'], 0)} ({warm.median:.2f}) | {fmt(rate['floor'], 0)} ({floor_share.median:.2f}) "
            f"| {fmt(rate['distinct'], 0)} | {per_core} "
            f"| {p99['plain']:g} / {p99['repeated']:g} / {p99['floor']:g} / {p99['distinct']:g} "
            f"| {fmt(of_floor, 2)} | ≥ {TARGET}× floor | {verdict(of_floor, TARGET)} |"
        )
    print(
        f"\nThe same apps called in-process (no HTTP, no load generator: µs of server work per request, "
        f"median (min–max) of {IN_PROCESS_REPETITIONS} interleaved batches of {IN_PROCESS_CALLS} calls; cold "
        "rows take a new token of the pool per call, the warm row repeats one cached token):\n"
    )
    print("| in-process, per request | µs | per core (RS256 ceiling) | floor ÷ it (speed) |")
    print("|---|---:|---|---:|")
    labels = {
        "plain": "unprotected app",
        "floor": "cold: floor (bare `verify_jwt` + app)",
        "cold": "cold: middleware, distinct tokens",
        "warm": "warm: middleware, repeated token (cache hit)",
        "bare": "cold: bare `verify_jwt` alone (no app)",
        "verifier": "cold: the middleware's verifier alone (`averify`, no app, no middleware)",
        "pipeline": "cold: middleware with each token verified before timing (its pipeline and the app)",
        "alternated": "cold: the verifier alone, then the pipeline row's request, one of each per call",
    }
    for mode, label in labels.items():
        verifies = {"RS256": 1} if mode in ("floor", "cold", "bare", "verifier") else None
        cell = per_core_cell(in_process[mode].median, verifies)
        share = (
            "" if mode in ("plain", "floor", "bare") else fmt(ratio(in_process["floor"], in_process[mode]), 2)
        )
        if mode == "verifier":
            share = f"{fmt(ratio(in_process['bare'], in_process[mode]), 2)} (bare ÷ it)"
        if mode in ("pipeline", "alternated"):
            cell, share = "", ""
        print(f"| {label} | {fmt(in_process[mode])} | {cell} | {share} |")
    parts = {mode: in_process[mode].median for mode in ("cold", "verifier", "pipeline", "alternated")}
    together = parts["cold"] - parts["verifier"] - parts["pipeline"]
    alternated_extra = parts["alternated"] - parts["verifier"] - parts["pipeline"]
    if together > 0 and alternated_extra >= 0.8 * together:
        reading = (
            "most of the extra comes from interleaving the two code paths on one core, not from anything one "
            "half leaves for the other."
        )
    else:
        reading = "interleaving alone does not account for the extra; something the halves share does."
    print(
        f"\nRead together (medians): the middleware's pipeline and the app cost {parts['pipeline']:.1f} µs with "
        f"the verification taken out, the verifier {parts['verifier']:.1f} µs on its own; a cold request costs "
        f"{parts['cold']:.1f} µs, so running the two together adds {together:.1f} µs that neither costs alone. "
        f"Alternating the two halves, with no object or state shared between them, costs "
        f"{parts['alternated']:.1f} µs per pair, {alternated_extra:.1f} µs more than the two apart: {reading} "
        "(Which processor cache it is cannot be measured here: the virtual machine exposes no hardware "
        "counters.)"
    )


if __name__ == "__main__":
    main()
