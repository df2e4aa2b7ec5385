"""HTTP throughput of a JSON-RPC app under uvicorn, with and without the A2A auth middleware.

Both servers are the same Starlette app (``POST /`` echoes the JSON-RPC call) run by uvicorn (one
worker, no access log) on 127.0.0.1; the protected one sits behind ``A2AAuthMiddleware`` with a
Bearer ``AccessTokenVerifier`` (verified-token cache on, key set loaded) and the operation policy.
The load generator is npm ``autocannon`` from tests/node/node_modules (loopback only, bounded
duration).  Every request carries the same valid token, so after the first request the verifier
answers from its cache: the row measures the middleware's steady-state cost per request (body
read and replay, header scan, cache hit, JSON parse, method map, policy decision, scope copy).

Run: .venv/bin/python bench/bench_middleware_http.py [--duration 10] [--connections 32]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "src"))

from tests._support.net import free_port, wait_listening  # noqa: E402

AUTOCANNON = REPO_ROOT / "tests" / "node" / "node_modules" / "autocannon" / "autocannon.js"
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
    verifier = AccessTokenVerifier(issuer=ISSUER, audience="agent-api", azp_allowlist=None, jwks=keys)
    protected = A2AAuthMiddleware(app, authenticators=[BearerAuthenticator(verifier)], policy=demo_policy())
    return app if mode == "plain" else protected


def serve(mode: str, port: int, jwks_file: str) -> None:
    import uvicorn

    app = build_app(mode, jwks_file)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off")  # type: ignore[arg-type]


def load(mode: str, jwks_file: str, token: str, duration: int, connections: int) -> dict[str, float]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", mode, "--port", str(port), "--jwks", jwks_file],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'src'}"},
    )
    try:
        wait_listening(port, timeout=20.0)
        command = [
            shutil.which("node") or "node",
            str(AUTOCANNON),
            "-c",
            str(connections),
            "-d",
            str(duration),
            "-m",
            "POST",
            "-H",
            "Content-Type=application/json",
            "-H",
            f"Authorization=Bearer {token}",
            "-b",
            BODY,
            "-j",
            f"http://127.0.0.1:{port}/",
        ]
        out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=duration + 60)
        result = json.loads(out.stdout)
        ok = result["2xx"]
        if result["non2xx"] or result["errors"]:
            raise RuntimeError(f"{mode}: {result['non2xx']} non-2xx answers, {result['errors']} errors")
        return {
            "rps": result["requests"]["average"],
            "p50": result["latency"]["p50"],
            "p99": result["latency"]["p99"],
            "ok": ok,
        }
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", choices=["plain", "protected"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--jwks", default="")
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.jwks)
        return
    if shutil.which("node") is None or not AUTOCANNON.is_file():
        print(
            "## A2A middleware over HTTP (bench/bench_middleware_http.py)\n\nSkipped: node/autocannon missing."
        )
        return

    from tests._support.tokenfactory import Clock, LocalRealm

    realm = LocalRealm(Clock())
    token = realm.token(exp=int(time.time()) + 3600)
    with tempfile.TemporaryDirectory() as tmp:
        jwks_file = str(Path(tmp) / "jwks.json")
        Path(jwks_file).write_text(json.dumps(realm.jwks()))
        results = {}
        for mode in ("plain", "protected", "plain", "protected"):
            run = load(mode, jwks_file, token, args.duration, args.connections)
            if mode not in results or run["rps"] > results[mode]["rps"]:
                results[mode] = run

    plain, protected = results["plain"], results["protected"]
    print("## A2A middleware over HTTP (bench/bench_middleware_http.py)\n")
    print(
        f"uvicorn (1 worker) on 127.0.0.1, autocannon {args.connections} connections × {args.duration} s, "
        "POST / JSON-RPC `message/send` with a Bearer token; best of 2 runs each, alternated.\n"
    )
    print("| server | requests/s | p50 latency | p99 latency | ratio |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| Starlette echo, unprotected | {plain['rps']:,.0f} | {plain['p50']} ms | {plain['p99']} ms | 1.00× |"
    )
    print(
        f"| same app behind `A2AAuthMiddleware` (token cache on) | {protected['rps']:,.0f} | {protected['p50']} ms "
        f"| {protected['p99']} ms | {protected['rps'] / plain['rps']:.2f}× |"
    )
    print("\nTarget: protected ≥ 0.85× unprotected throughput.")


if __name__ == "__main__":
    main()
