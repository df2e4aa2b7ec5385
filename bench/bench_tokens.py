"""Access-token verification cost per request: mudrika vs joserfc, python-keycloak and the floor.

Rows (2048-bit RS256 Keycloak-shaped access tokens of ~1 KB), like for like.  The headline rows are
**cold**: every timed call verifies a token no side has seen (``POOL`` tokens, each with its own
``jti``, ``sub`` and ``exp``, signed before timing; every row walks the pool once from the start, so
no token comes twice to any verifier).

* **ours, cold** - ``AccessTokenVerifier.verify`` in its default configuration (verified-token cache
  on, 10,000 entries), JWKS already fetched: size cap, header, kid, alg allow-list, RS256 verify,
  strict JSON, iss/aud/exp/nbf/iat/typ, principal.  The verified-token cache cannot hit (no token
  repeats) and stores nothing (a result is stored when its token comes a second time).  The one memo
  that stays warm is jose's checked-header memo: every token a key signs carries the same header, so
  a server meets it warm after its first token; the next row clears it too.
* **ours, every memo cleared** - the same, with jose's header memo emptied before each call
  (informative: the header is decoded and checked on every token).
* **joserfc, same checks** - ``joserfc.jwt.decode`` with a cached ``KeySet`` and ``algorithms=["RS256"]``,
  then ``JWTClaimsRegistry`` requiring iss, aud, exp, iat and typ with the same values and leeway.
  Target: ours at least as fast (>= 1.0x).
* **python-keycloak, cached JWKS** - ``decode_token(token, key=<JWKSet built once>)`` with jwcrypto's
  ``check_claims`` for iss/aud/exp (no refetch).  Target: ours >= 2x faster.
* **python-keycloak, defaults** - ``decode_token(token)``, which refetches the JWKS on every call (from an
  in-process ``httpx.MockTransport``; informative: what the verifier replaces).
* **floor** - base64url + ``json.loads`` of header and payload, alg/kid checks, ``cryptography`` RS256
  verify, iss/aud/exp/typ compares: the least a correct verifier does.  Target: ours >= 0.75x its speed.
* **ours, warm (cache hit)** - one token again and again, after it was verified twice (SHA-256 of the
  token + LRU lookup).  Target: <= 3 µs.

Every row that verifies a signature states its throughput on one core beside this machine's OpenSSL
ceiling for one RS256 verify (bench/_ceiling.py).

Method: bench/_timing.py (interleaved repetitions, median and min–max, ratios per repetition).

Run: .venv/bin/python bench/bench_tokens.py
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from joserfc import jwt as joserfc_jwt
from joserfc.jwk import KeySet
from joserfc.jwt import JWTClaimsRegistry
from jwcrypto.jwk import JWK, JWKSet
from keycloak import KeycloakOpenID

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "src"))

sys.path.insert(0, str(REPO_ROOT / "bench"))

from tests._support.tokenfactory import Clock, LocalRealm  # noqa: E402

from _ceiling import per_core_cell  # noqa: E402
from _timing import fmt, measure, ratio, verdict  # noqa: E402
from mudrika.crypto.jose import _CHECKED_HEADERS  # noqa: E402
from mudrika.trust.keycloak._http_bridge import install_transports  # noqa: E402
from mudrika.trust.keycloak.jwks import JwksCache  # noqa: E402
from mudrika.trust.keycloak.tokens import AccessTokenVerifier  # noqa: E402

REPETITIONS = 9
#: Calls per batch of the cold rows (python-keycloak's are dearer: fewer calls, the same pool).
BATCH = {
    "cold": 300,
    "cleared": 300,
    "joserfc": 300,
    "keycloak cached": 150,
    "keycloak defaults": 60,
    "floor": 300,
}
#: One token per timed call of the largest row, plus its warm-up call.
POOL = REPETITIONS * max(BATCH.values()) + 1


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def distinct_tokens(realm: LocalRealm, count: int) -> list[str]:
    """``count`` valid access tokens, no two alike (own ``jti``, ``sub`` and ``exp``), signed now."""
    expires = int(time.time()) + 3600
    return [
        realm.token(jti=f"cold-{n}", sub=f"5f1c1c7e-0000-4000-8000-{n:012d}", exp=expires - n % 600)
        for n in range(count)
    ]


def consuming(pool: list[str], call: Callable[[str], object]) -> Callable[[], object]:
    """A timed function that hands ``call`` the next token of ``pool`` each time (a new one per call)."""
    tokens = iter(pool)
    return lambda: call(next(tokens))


def main() -> None:
    clock = Clock()
    realm = LocalRealm(clock)
    pool = distinct_tokens(realm, POOL)
    sync_client = httpx.Client(transport=realm.transport())
    jwks = JwksCache(jwks_uri=realm.jwks_uri, algorithms={"RS256"}, http_client=sync_client)
    jwks.refresh()
    common = {"issuer": realm.issuer, "audience": "agent-api", "azp_allowlist": None, "jwks": jwks}
    ours = AccessTokenVerifier(**common)  # type: ignore[arg-type]
    cleared = AccessTokenVerifier(**common)  # type: ignore[arg-type]
    warm = AccessTokenVerifier(**common)  # type: ignore[arg-type]
    repeated = realm.token()
    warm.verify(repeated)
    warm.verify(repeated)  # the second verification stores the result
    assert warm.verify(repeated) is warm.verify(repeated)

    oidc = KeycloakOpenID(
        server_url="https://idp.test/", realm_name="mudrika", client_id="agent-gateway", client_secret_key="s"
    )
    kc_http = httpx.Client(transport=realm.transport())
    install_transports(oidc.connection, kc_http, httpx.AsyncClient(transport=realm.async_transport()))

    public = realm.keys["k1"].public_key.to_cryptography()
    assert isinstance(public, rsa.RSAPublicKey)
    issuer = realm.issuer

    def floor(token: str) -> None:
        header_b64, payload_b64, signature_b64 = token.split(".")
        header = json.loads(_b64decode(header_b64))
        if header["alg"] != "RS256" or header["kid"] != "k1":
            raise ValueError("header")
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

    keyset = KeySet.import_key_set(realm.jwks())  # type: ignore[arg-type]
    registry = JWTClaimsRegistry(
        now=lambda: int(time.time()),
        leeway=30,
        iss={"essential": True, "value": issuer},
        aud={"essential": True, "value": "agent-api"},
        exp={"essential": True},
        iat={"essential": True},
        typ={"essential": True, "value": "Bearer"},
    )

    def joserfc_same_checks(token: str) -> object:
        decoded = joserfc_jwt.decode(token, keyset, algorithms=["RS256"])
        registry.validate(decoded.claims)
        return decoded.claims

    cached_jwks = JWKSet()
    for cert in realm.jwks()["keys"]:
        cached_jwks.add(JWK(**cert))
    keycloak_claims = json.dumps({"iss": issuer, "aud": "agent-api", "exp": None})

    def keycloak_cached(token: str) -> dict[str, Any]:
        return oidc.decode_token(token, key=cached_jwks, check_claims=json.loads(keycloak_claims))

    def every_memo_cleared(token: str) -> object:
        _CHECKED_HEADERS.clear()
        return cleared.verify(token)

    # Each row's warm-up call spends the last token of the pool, which no timed call uses.
    spare = pool[-1]
    floor(spare)
    assert joserfc_same_checks(spare)["typ"] == "Bearer"  # type: ignore[index]
    assert keycloak_cached(spare)["typ"] == "Bearer"
    assert oidc.decode_token(spare)["typ"] == "Bearer"
    assert ours.verify(spare).principal.subject
    assert cleared.verify(spare).kid == "k1"
    timed = pool[:-1]
    spread = measure(
        {
            "cold": consuming(timed, ours.verify),
            "cleared": consuming(timed, every_memo_cleared),
            "joserfc": consuming(timed, joserfc_same_checks),
            "keycloak cached": consuming(timed, keycloak_cached),
            "keycloak defaults": consuming(timed, oidc.decode_token),
            "floor": consuming(timed, floor),
            "warm": lambda: warm.verify(repeated),
        },
        repetitions=REPETITIONS,
        number={**BATCH, "warm": 100_000},
    )
    assert ours.cache_len == 0, "a cold row stored results: tokens repeated"
    vs_joserfc = ratio(spread["joserfc"], spread["cold"])
    vs_keycloak = ratio(spread["keycloak cached"], spread["cold"])
    vs_defaults = ratio(spread["keycloak defaults"], spread["cold"])
    vs_floor = ratio(spread["floor"], spread["cold"])
    vs_cleared = ratio(spread["floor"], spread["cleared"])
    rs256 = {"RS256": 1}

    def per_core(name: str) -> str:
        return str(per_core_cell(spread[name].median, rs256))

    print("## Access-token verification (bench/bench_tokens.py)\n")
    print(
        f"RS256, 2048-bit key, tokens of about {len(pool[0])} bytes, JWKS cached on every side unless a row "
        f"says otherwise. **Cold** rows: {len(timed):,} distinct tokens (own jti, sub and exp) signed before "
        "timing, a new one for every timed call, none twice to any verifier: mudrika's verified-token cache "
        "(on, default size) never hits and stores nothing (a result is stored when its token comes a second "
        "time); jose's checked-header memo stays warm (every token a key signs has the same header) except "
        "in the row that clears it before each call. The **warm** row repeats one token whose result is "
        f"cached. Median (min–max) of {REPETITIONS} interleaved repetitions; speed ratio = their time ÷ "
        "ours (> 1: ours faster), formed per repetition. *Per core*: calls per second on one core, beside "
        "this machine's OpenSSL ceiling for one RS256 verify.\n"
    )
    print(
        "| path | µs per request | per core (RS256 ceiling) | ours (cold) speed ÷ theirs | target | verdict |"
    )
    print("|---|---:|---|---:|---|---|")
    print(
        f"| mudrika `AccessTokenVerifier.verify`, cold (default config) | {fmt(spread['cold'])} "
        f"| {per_core('cold')} | | | |"
    )
    print(
        f"| joserfc `jwt.decode` + `JWTClaimsRegistry` (same checks, cached KeySet), cold "
        f"| {fmt(spread['joserfc'])} | {per_core('joserfc')} | {fmt(vs_joserfc, 2)} | ≥ 1.0× "
        f"| {verdict(vs_joserfc, 1.0)} |"
    )
    print(
        f"| python-keycloak `decode_token(key=cached JWKSet, check_claims=iss/aud/exp)`, cold "
        f"| {fmt(spread['keycloak cached'])} | {per_core('keycloak cached')} | {fmt(vs_keycloak, 2)} | ≥ 2× "
        f"| {verdict(vs_keycloak, 2.0)} |"
    )
    print(
        f"| python-keycloak `decode_token` defaults (refetches the JWKS per call, in-process mock), cold "
        f"| {fmt(spread['keycloak defaults'])} | {per_core('keycloak defaults')} | {fmt(vs_defaults, 2)} "
        "| (informative) | |"
    )
    print(
        f"| floor: header+payload JSON, alg/kid, `cryptography` RS256 verify, iss/aud/exp/typ, cold "
        f"| {fmt(spread['floor'])} | {per_core('floor')} | {fmt(vs_floor, 2)} | ≥ 0.75× | {verdict(vs_floor, 0.75)} |"
    )
    print(
        f"| mudrika cold with jose's header memo cleared before each call (floor ÷ it) "
        f"| {fmt(spread['cleared'])} | {per_core('cleared')} | {fmt(vs_cleared, 2)} | (informative) | |"
    )
    print(
        f"| mudrika verified-token cache hit, warm (one token, cached) | {fmt(spread['warm'], 2)} "
        f"| {per_core_cell(spread['warm'].median)} | | ≤ 3 µs | {verdict(spread['warm'], 3.0, at_least=False)} |"
    )
    sync_client.close()
    kc_http.close()


if __name__ == "__main__":
    main()
