"""Memory a server spends on uploads nobody authenticated: RSS growth of uvicorn under 150 stalled uploads.

The attack (issue 10, item 3): open 150 connections, each announcing a 1 MiB JSON-RPC body and sending
all of it but the last byte, then stall.  A server that buffers the body before it authenticates holds
up to 1 MiB per connection for as long as the client likes.  Five servers, the same Starlette app
behind uvicorn (one worker, one process each, h11), each started fresh for every repetition:

* **anchor: buffer, then authenticate** -- reads the whole body (capped at 1 MiB, no deadline), then
  looks for an ``Authorization`` header: the order of the landed middleware the issue measured;
* **A2AAuthMiddleware, no credentials** -- the attack as above, against mudrika's middleware: a request
  with no credential header is answered before a byte of its body is read;
* **A2AAuthMiddleware, bogus Bearer header** -- the same uploads carrying ``Authorization: Bearer x``:
  a header-only scheme is decided before the body is read, so the bogus token is refused at once;
* **A2AAuthMiddleware, bogus signature headers** -- ``Signature``/``Signature-Input`` that fail on
  their own: refused by the header pre-check before the body is read;
* **A2AAuthMiddleware, validly signed headers** -- a correct RFC 9421 signature (unknown did:key)
  over the 1 MiB body: the signature covers the body, so these bodies are read before the signature
  can be checked, bounded by ``max_concurrent_reads`` (32) x the body cap and cut at the 10 s read
  deadline.

RSS is read from ``/proc/<pid>/status`` (VmRSS) after start-up and again once the uploads have stalled
for 1 s; the row is the growth in MiB, median (min–max) over ``--repetitions`` runs, the five servers
interleaved in each repetition.  Target for the unauthenticated uploads: growth < 10 MiB.

Run: .venv/bin/python bench/bench_preauth_memory.py [--repetitions 5] [--uploads 150]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from tests._support.net import free_port, wait_listening  # noqa: E402
from tests._support.processes import stop_process  # noqa: E402

from _timing import Spread, fmt, verdict  # noqa: E402

BODY_BYTES = 1024 * 1024
TARGET_MIB = 10.0
KINDS = ("anchor", "ours", "ours-bearer", "ours-bogus-signature", "ours-signature")
LABELS = {
    "anchor": "anchor: buffer, then authenticate",
    "ours": "A2AAuthMiddleware, no credentials",
    "ours-bearer": "A2AAuthMiddleware, bogus Bearer header",
    "ours-bogus-signature": "A2AAuthMiddleware, bogus signature headers",
    "ours-signature": "A2AAuthMiddleware, validly signed headers",
}
CREDENTIALS = {
    "anchor": b"",
    "ours": b"",
    "ours-bearer": b"Authorization: Bearer x\r\n",
    "ours-bogus-signature": b"Signature-Input: sig=();created=1\r\nSignature: sig=:AA==:\r\n",
}
ORIGIN = "https://agent.bench"
BODY = b"[" + b" " * (BODY_BYTES - 2) + b"]"


def _credentials(kind: str) -> bytes:
    if kind != "ours-signature":
        return CREDENTIALS[kind]
    from mudrika.crypto.keys import KeyPair
    from mudrika.trust.httpsig import HttpMessageSigner

    key = KeyPair.generate("ed25519")
    keyid = f"did:key:{key.public_key.to_multikey()}#{key.public_key.to_multikey()}"
    signed = HttpMessageSigner(key, keyid).sign(
        "POST", ORIGIN + "/", {"Content-Type": "application/json"}, BODY
    )
    return b"".join(f"{name}: {value}\r\n".encode() for name, value in signed.as_dict().items())


# --- the servers (run in a child process: ``--serve KIND --port N``) ---------------------------------


def _inner_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def rpc(request: Request) -> Response:
        return JSONResponse({"jsonrpc": "2.0", "result": "ok", "id": 1})

    return Starlette(routes=[Route("/", rpc, methods=["POST"])])


def _anchor(inner: Any) -> Any:
    """Buffer (1 MiB cap, no deadline), then look for credentials: the order the issue measured."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > BODY_BYTES:
                break
            chunks.append(chunk)
            more = message.get("more_body", False)
        if not any(key == b"authorization" for key, _ in scope["headers"]):
            body = b'{"jsonrpc":"2.0","error":{"code":-32009,"message":"Authentication required"},"id":null}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await inner(scope, receive, send)

    return app


def _ours(inner: Any) -> Any:
    from mudrika.crypto.keys import KeyPair
    from mudrika.stores.replay import MemoryReplayStore
    from mudrika.trust.httpsig import REGISTERED_ALGORITHMS, HttpSignatureVerifier, StaticKeyLookup
    from mudrika.trust.keycloak.jwks import StaticKeySet
    from mudrika.trust.keycloak.tokens import AccessTokenVerifier
    from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator, DidSignatureAuthenticator
    from mudrika.trust.policy import Policy

    jwk = {**KeyPair.generate("p256").public_key.to_jwk(), "kid": "k1", "alg": "ES256"}
    verifier = AccessTokenVerifier(
        issuer="https://idp.bench/realms/r",
        audience="agent-api",
        azp_allowlist=None,
        jwks=StaticKeySet({"keys": [jwk]}, algorithms={"ES256"}),
        algorithms={"ES256"},
    )
    signatures = HttpSignatureVerifier(
        keys=StaticKeyLookup({}),
        replay_store=MemoryReplayStore(),
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
    )
    return A2AAuthMiddleware(
        inner,
        authenticators=[
            BearerAuthenticator(verifier),
            DidSignatureAuthenticator(signatures, public_origin=ORIGIN),
        ],
        policy=Policy(roles=[], operations={}),
    )


def serve(kind: str, port: int) -> None:
    import uvicorn

    inner = _inner_app()
    app = _anchor(inner) if kind == "anchor" else _ours(inner)
    uvicorn.run(
        app, host="127.0.0.1", port=port, log_level="error", access_log=False, http="h11", lifespan="off"
    )


# --- the measurement ----------------------------------------------------------------------------------


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@contextmanager
def _server(kind: str) -> Iterator[tuple[int, int]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, "--port", str(port)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port)
        yield proc.pid, port
    finally:
        stop_process(proc, timeout=10)


def _stall_uploads(port: int, uploads: int, credentials: bytes) -> list[socket.socket]:
    head = (
        b"POST / HTTP/1.1\r\nHost: agent.bench\r\nContent-Type: application/json\r\n"
        + credentials
        + b"Content-Length: %d\r\n\r\n" % BODY_BYTES
    )
    body = BODY[:-1]  # all but the last byte: the upload never completes
    sockets, pending = [], []
    for _ in range(uploads):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.setblocking(False)
        sockets.append(sock)
        pending.append(memoryview(head + body))
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(len(view) for view in pending):
        progressed = False
        for i, sock in enumerate(sockets):
            view = pending[i]
            if not len(view):
                continue
            try:
                sent = sock.send(view[:65536])
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                pending[i] = memoryview(b"")  # the server answered and closed: nothing more to send
                continue
            pending[i] = view[sent:]
            progressed = progressed or sent > 0
        if not progressed:
            time.sleep(0.05)
    return sockets


def measure(kind: str, uploads: int) -> float:
    with _server(kind) as (pid, port):
        time.sleep(0.5)
        before = _rss_mib(pid)
        sockets = _stall_uploads(port, uploads, _credentials(kind))
        try:
            time.sleep(1.0)
            after = _rss_mib(pid)
        finally:
            for sock in sockets:
                sock.close()
    return after - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--uploads", type=int, default=150)
    parser.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.port)
        return 0
    growth: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for _ in range(args.repetitions):
        for kind in KINDS:  # interleaved: a disturbance hits them all alike
            growth[kind].append(measure(kind, args.uploads))
    spreads = {kind: Spread.of(values) for kind, values in growth.items()}
    print("## Pre-authentication memory (bench/bench_preauth_memory.py)\n")
    print(
        f"RSS growth of one uvicorn process under {args.uploads} stalled uploads (1 MiB announced, all but the "
        f"last byte sent), median (min–max) of {args.repetitions} runs, servers interleaved.\n"
    )
    print("| server | RSS growth (MiB) | target | verdict |")
    print("|---|---|---|---|")
    for kind in KINDS:
        spread = spreads[kind]
        if kind == "ours":  # the attack: uploads with no credential header at all
            target, met = f"≤ {TARGET_MIB:.0f} MiB", verdict(spread, TARGET_MIB, at_least=False)
        else:
            target, met = "(informative)", ""
        print(f"| {LABELS[kind]} | {fmt(spread, 1)} | {target} | {met} |")
    print(
        "\nA request without credentials, with a header-only credential (Bearer, DPoP) or with signature "
        "headers that fail on their own is decided before its body is read.  Uploads whose RFC 9421 "
        "signature headers are well formed must be read before the signature can be checked (it covers the "
        "body): their cost is bounded by `max_concurrent_reads` x `max_body_bytes` (32 x 1 MiB by default) "
        "and by the 10 s read deadline, not removed; the last row shows what that bound costs here."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
