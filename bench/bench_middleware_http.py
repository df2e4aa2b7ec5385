"""HTTP throughput of a JSON-RPC app under uvicorn, with and without the A2A auth middleware (P7).

Both servers are the same Starlette app (``POST /`` echoes the JSON-RPC call) run by uvicorn (one
worker, no access log) on 127.0.0.1; the protected one sits behind ``A2AAuthMiddleware`` with a
Bearer ``AccessTokenVerifier`` (key set loaded, verified-token cache of ``CACHE_SIZE`` entries) and
the operation policy.  The load generator is npm ``autocannon`` (tests/node/node_modules) driven by
bench/autocannon_tokens.mjs, loopback only, at 1, 8, 32 and 128 connections, three ways:

* **unprotected** -- the plain app (the anchor);
* **repeated token** -- every request carries the same valid token: after the first request the
  verifier answers from its cache (the middleware's steady-state cost per request);
* **distinct tokens (cache misses)** -- requests take ``POOL_SIZE`` distinct valid tokens in order,
  cycling; the pool is larger than the verifier's cache, so a token has always been evicted (LRU)
  before it comes round again and *every* request pays a full RS256 verification.
  Target: >= 0.75x the unprotected throughput at every connection count;
* **floor (bare verification)** -- the plain app behind the least any token check must do per
  request, and nothing else: take the ``Authorization`` header, ``verify_jwt`` (RS256 signature,
  iss/aud/exp/iat) against the one key, no cache, no policy, no error answers.  It shows what the
  target leaves to everything else a middleware does, on this machine, with the same distinct
  tokens.

Each repetition runs the three back to back at each connection count (interleaved), and ratios are
formed per repetition; rows give the median (min–max) of ``--repetitions`` runs (bench/_timing.py).

Run: .venv/bin/python bench/bench_middleware_http.py [--duration 1] [--repetitions 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "src"))

sys.path.insert(0, str(REPO_ROOT / "bench"))

from tests._support.net import free_port, wait_listening  # noqa: E402
from tests._support.processes import stop_process  # noqa: E402

from _timing import Spread, fmt, ratio, verdict  # noqa: E402

AUTOCANNON = REPO_ROOT / "tests" / "node" / "node_modules" / "autocannon" / "autocannon.js"
DRIVER = Path(__file__).resolve().parent / "autocannon_tokens.mjs"
CONNECTIONS = (1, 8, 32, 128)
CACHE_SIZE = 1000
POOL_SIZE = 1500  # > CACHE_SIZE: cycling in order, every token is evicted before its next use
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


def build_app(mode: str, jwks_file: str) -> object:
    """The ASGI app for ``--serve``: the echo app, wrapped or not."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from tests._support.tokenfactory import ISSUER, demo_policy

    from mudrika.crypto.jose import verify_jwt
    from mudrika.trust.keycloak.jwks import StaticKeySet
    from mudrika.trust.keycloak.tokens import AccessTokenVerifier
    from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator

    async def rpc(request: Request) -> JSONResponse:
        call = json.loads(await request.body())
        return JSONResponse({"jsonrpc": "2.0", "result": {"echo": call["method"]}, "id": call.get("id")})

    app = Starlette(routes=[Route("/", rpc, methods=["POST"])])
    # Both servers build the middleware, so both processes hold the same modules and objects (a
    # larger heap makes every garbage collection dearer); only the protected one routes through it.
    keys = StaticKeySet(json.loads(Path(jwks_file).read_text()), algorithms={"RS256"})
    verifier = AccessTokenVerifier(
        issuer=ISSUER, audience="agent-api", azp_allowlist=None, jwks=keys, cache_size=CACHE_SIZE
    )
    protected = A2AAuthMiddleware(app, authenticators=[BearerAuthenticator(verifier)], policy=demo_policy())
    (key,) = (keys.key_for(kid) for kid in keys.kids)

    async def floor(scope: Any, receive: Any, send: Any) -> None:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                verify_jwt(
                    value[7:], key=key, issuer=ISSUER, audience="agent-api", now=time.time(), leeway=30
                )
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


def load(port: int, body_file: str, tokens_file: str, duration: float, connections: int) -> dict[str, float]:
    """One autocannon run; refuses any non-2xx answer or socket error (they would inflate the rate)."""
    command = [
        shutil.which("node") or "node",
        str(DRIVER),
        str(AUTOCANNON),
        f"http://127.0.0.1:{port}/",
        str(connections),
        str(duration),
        body_file,
        tokens_file,
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
    pool = [realm.token(exp=expires, jti=f"bench-{index}") for index in range(POOL_SIZE)]
    samples: dict[tuple[int, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        jwks_file = str(Path(tmp) / "jwks.json")
        Path(jwks_file).write_text(json.dumps(realm.jwks()))
        body_file = str(Path(tmp) / "body.json")
        Path(body_file).write_text(BODY)
        one_file, pool_file = str(Path(tmp) / "one.txt"), str(Path(tmp) / "pool.txt")
        Path(one_file).write_text(pool[0] + "\n")
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
            for _, port, tokens in runs:  # warm both servers (imports, first verification)
                load(port, body_file, tokens, 0.5, 8)
            for _ in range(args.repetitions):
                for connections in CONNECTIONS:
                    for mode, port, tokens in runs:
                        result = load(port, body_file, tokens, args.duration, connections)
                        samples.setdefault((connections, mode), []).append(result)
        finally:
            plain.stop()
            protected.stop()
            floor.stop()

    print(title)
    print(
        f"uvicorn (1 worker) on 127.0.0.1; autocannon for {args.duration:g} s per run; POST / JSON-RPC "
        f"`message/send` with a Bearer RS256 token; verifier cache {CACHE_SIZE:,} entries, distinct-token "
        f"pool {POOL_SIZE:,} (every request a cache miss). Requests/s: median (min–max) of "
        f"{args.repetitions} repetitions, the four runs interleaved; ratio to unprotected per "
        "repetition. *floor* = the plain app behind a bare `verify_jwt` of each distinct token (no "
        "cache, policy or middleware): the most any protected server can reach here, so a "
        "connection count whose floor ratio is below 0.75 cannot meet the target with any middleware on "
        "this machine.\n"
    )
    print(
        "| load (P7) | unprotected req/s | repeated token req/s | ratio | p99 ms (unprot. / rep. / dist.) "
        "| floor ratio (bare verification) | distinct tokens req/s | ratio (distinct) | target | verdict |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---:|---|---|")
    for connections in CONNECTIONS:
        rate = {
            mode: Spread.of([run["rps"] for run in samples[(connections, mode)]])
            for mode in ("plain", "repeated", "distinct", "floor")
        }
        p99 = {
            mode: statistics.median(run["p99"] for run in samples[(connections, mode)])
            for mode in ("plain", "repeated", "distinct")
        }
        repeated, distinct = ratio(rate["repeated"], rate["plain"]), ratio(rate["distinct"], rate["plain"])
        floor_share = ratio(rate["floor"], rate["plain"])
        print(
            f"| {connections} connection{'s' if connections > 1 else ''} | {fmt(rate['plain'], 0)} | {fmt(rate['repeated'], 0)} | {fmt(repeated, 2)} "
            f"| {p99['plain']:g} / {p99['repeated']:g} / {p99['distinct']:g} | {fmt(floor_share, 2)} "
            f"| {fmt(rate['distinct'], 0)} | {fmt(distinct, 2)} | distinct ≥ 0.75× | {verdict(distinct, 0.75)} |"
        )


if __name__ == "__main__":
    main()
