"""Access-token verification cost per request: mudrika vs python-keycloak ``decode_token`` vs the floor.

Rows (all with a 2048-bit RS256 Keycloak-shaped access token of ~1 KB):

* **ours, cache miss** - ``AccessTokenVerifier.verify`` with the verified-token cache off and the JWKS
  already cached: header, kid lookup, RS256 verify, strict JSON, claims, principal.
* **python-keycloak decode_token (defaults)** - what the verifier replaces.  It fetches the JWKS on
  every call: once over loopback HTTP from a local server (what production does, minus the network),
  once from an in-process ``httpx.MockTransport`` (its lower bound: no socket at all).
* **floor** - ``cryptography`` RS256 verify + ``json.loads`` + exp/iss/aud compares: the least any
  correct verifier must do.
* **jose.verify_jwt alone** - mudrika's single JOSE verification path (strict header/base64/JSON
  parsing, RFC 7515 checks) without the verifier around it: most of the distance to the floor.
* **ours, cache hit** - the same token again (SHA-256 of the token + LRU lookup).

Run: .venv/bin/python bench/bench_tokens.py
"""

from __future__ import annotations

import base64
import gc
import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from keycloak import KeycloakOpenID

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "src"))

from tests._support.tokenfactory import Clock, LocalRealm  # noqa: E402

from mudrika.crypto.jose import verify_jwt  # noqa: E402
from mudrika.trust.keycloak._http_bridge import install_transports  # noqa: E402
from mudrika.trust.keycloak.jwks import JwksCache  # noqa: E402
from mudrika.trust.keycloak.tokens import AccessTokenVerifier  # noqa: E402

REPEATS = 5


def best_per_call(cases: dict[str, tuple[Callable[[], object], int]]) -> dict[str, float]:
    """Best seconds per call of each case over REPEATS rounds; the cases are interleaved within each
    round so that load from other processes hits them alike."""
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(REPEATS):
        for name, (fn, iterations) in cases.items():
            gc.collect()
            start = time.perf_counter()
            for _ in range(iterations):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / iterations)
    return best


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def serve_jwks(document: dict[str, object]) -> ThreadingHTTPServer:
    body = json.dumps(document).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed ACK

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    clock = Clock()
    realm = LocalRealm(clock)
    token = realm.token()
    sync_client = httpx.Client(transport=realm.transport())
    jwks = JwksCache(jwks_uri=realm.jwks_uri, algorithms={"RS256"}, http_client=sync_client)
    jwks.refresh()
    common = {"issuer": realm.issuer, "audience": "agent-api", "azp_allowlist": None, "jwks": jwks}
    miss = AccessTokenVerifier(cache_size=0, **common)  # type: ignore[arg-type]
    hit = AccessTokenVerifier(**common)  # type: ignore[arg-type]
    hit.verify(token)

    oidc = KeycloakOpenID(
        server_url="https://idp.test/", realm_name="mudrika", client_id="agent-gateway", client_secret_key="s"
    )
    kc_http = httpx.Client(transport=realm.transport())
    install_transports(oidc.connection, kc_http, httpx.AsyncClient(transport=realm.async_transport()))
    assert oidc.decode_token(token)["typ"] == "Bearer"
    server = serve_jwks(realm.jwks())
    loopback = KeycloakOpenID(
        server_url=f"http://127.0.0.1:{server.server_address[1]}/",
        realm_name="mudrika",
        client_id="agent-gateway",
        client_secret_key="s",
    )
    assert loopback.decode_token(token)["typ"] == "Bearer"
    assert miss.verify(token).principal.subject

    public = realm.keys["k1"].public_key.to_cryptography()
    assert isinstance(public, rsa.RSAPublicKey)
    issuer = realm.issuer

    def floor() -> None:
        header_b64, payload_b64, signature_b64 = token.split(".")
        public.verify(
            _b64decode(signature_b64),
            f"{header_b64}.{payload_b64}".encode(),
            padding.PKCS1v15(),
            hashes.SHA256(),
        )
        claims = json.loads(_b64decode(payload_b64))
        now = time.time()
        if not (
            claims["exp"] > now
            and claims["iss"] == issuer
            and "agent-api" in claims["aud"]
            and claims["typ"] == "Bearer"
        ):
            raise ValueError("claims")

    floor()
    key = jwks.key_for("k1")
    best = best_per_call(
        {
            "miss": (lambda: miss.verify(token), 2000),
            "theirs": (lambda: oidc.decode_token(token), 200),
            "theirs_http": (lambda: loopback.decode_token(token), 200),
            "jose": (
                lambda: verify_jwt(
                    token, key=key, issuer=issuer, audience="agent-api", now=time.time(), leeway=30
                ),
                2000,
            ),
            "floor": (floor, 2000),
            "hit": (lambda: hit.verify(token), 100_000),
        }
    )
    ours_miss, theirs, theirs_http = best["miss"], best["theirs"], best["theirs_http"]
    jose_only, floor_cost, ours_hit = best["jose"], best["floor"], best["hit"]

    def us(seconds: float) -> str:
        return f"{seconds * 1e6:,.1f} µs"

    print("## Access-token verification (bench/bench_tokens.py)\n")
    print(f"RS256, 2048-bit key, token of {len(token)} bytes, JWKS cached; best of {REPEATS} runs.\n")
    print("| path | per request | ratio |")
    print("|---|---:|---:|")
    print(f"| mudrika `AccessTokenVerifier.verify`, cache miss | {us(ours_miss)} | 1.00× |")
    print(
        f"| python-keycloak `decode_token` (defaults, JWKS over loopback HTTP) | {us(theirs_http)} "
        f"| ours is {theirs_http / ours_miss:.1f}× faster |"
    )
    print(
        f"| python-keycloak `decode_token` (defaults, JWKS from an in-process mock) | {us(theirs)} "
        f"| ours is {theirs / ours_miss:.1f}× faster |"
    )
    print(f"| `mudrika.crypto.jose.verify_jwt` alone (no kid lookup, no principal) | {us(jose_only)} | — |")
    print(
        f"| floor: cryptography RS256 verify + json + exp/iss/aud | {us(floor_cost)} "
        f"| ours reaches {floor_cost / ours_miss:.2f}× of the floor |"
    )
    print(
        f"| mudrika verified-token cache hit | {us(ours_hit)} | {ours_miss / ours_hit:,.0f}× faster than a miss |"
    )
    print()
    print("Targets: ≥ 20× faster than decode_token; ≥ 0.8× of the floor; cache hit ≤ 5 µs.")
    sync_client.close()
    kc_http.close()
    server.shutdown()


if __name__ == "__main__":
    main()
