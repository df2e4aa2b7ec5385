"""Access-token verification cost per request: mudrika vs joserfc, python-keycloak and the floor.

Rows (all with a 2048-bit RS256 Keycloak-shaped access token of ~1 KB), like for like:

* **ours, cache miss** - ``AccessTokenVerifier.verify`` with the verified-token cache off and the JWKS
  already cached: header, kid lookup, alg allow-list, RS256 verify, strict JSON, iss/aud/exp/iat/typ,
  principal.
* **joserfc, same checks** - ``joserfc.jwt.decode`` with a cached ``KeySet`` and ``algorithms=["RS256"]``,
  then ``JWTClaimsRegistry`` requiring iss, aud, exp, iat and typ with the same values and leeway.
  Target: ours at least as fast (>= 1.0x).
* **python-keycloak, cached JWKS** - ``decode_token(token, key=<JWKSet built once>)`` with jwcrypto's
  ``check_claims`` for iss/aud/exp (no refetch).  Target: ours >= 2x faster.
* **python-keycloak, defaults** - ``decode_token(token)``, which refetches the JWKS on every call (from an
  in-process ``httpx.MockTransport``; informative: what the verifier replaces).
* **floor** - base64url + ``json.loads`` of header and payload, alg/kid checks, ``cryptography`` RS256
  verify, iss/aud/exp/typ compares: the least a correct verifier does.  Target: ours >= 0.7x its speed.
* **ours, cache hit** - the same token again (SHA-256 of the token + LRU lookup).  Target: <= 3 µs.

Method: bench/_timing.py (interleaved repetitions, median and min–max, ratios per repetition).

Run: .venv/bin/python bench/bench_tokens.py
"""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path

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

from _timing import fmt, measure, ratio, verdict  # noqa: E402
from mudrika.crypto.jose import verify_jwt  # noqa: E402
from mudrika.trust.keycloak._http_bridge import install_transports  # noqa: E402
from mudrika.trust.keycloak.jwks import JwksCache  # noqa: E402
from mudrika.trust.keycloak.tokens import AccessTokenVerifier  # noqa: E402

REPETITIONS = 9


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


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
    assert miss.verify(token).principal.subject

    public = realm.keys["k1"].public_key.to_cryptography()
    assert isinstance(public, rsa.RSAPublicKey)
    issuer = realm.issuer

    def floor() -> None:
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

    floor()
    key = jwks.key_for("k1")
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

    def joserfc_same_checks() -> object:
        decoded = joserfc_jwt.decode(token, keyset, algorithms=["RS256"])
        registry.validate(decoded.claims)
        return decoded.claims

    cached_jwks = JWKSet()
    for cert in realm.jwks()["keys"]:  # type: ignore[index]
        cached_jwks.add(JWK(**cert))
    keycloak_claims = json.dumps({"iss": issuer, "aud": "agent-api", "exp": None})

    def keycloak_cached() -> object:
        return oidc.decode_token(token, key=cached_jwks, check_claims=json.loads(keycloak_claims))

    assert joserfc_same_checks()["typ"] == "Bearer"  # type: ignore[index]
    assert keycloak_cached()["typ"] == "Bearer"
    spread = measure(
        {
            "miss": lambda: miss.verify(token),
            "joserfc": joserfc_same_checks,
            "keycloak cached": keycloak_cached,
            "keycloak defaults": lambda: oidc.decode_token(token),
            "jose": lambda: verify_jwt(
                token, key=key, issuer=issuer, audience="agent-api", now=time.time(), leeway=30
            ),
            "floor": floor,
            "hit": lambda: hit.verify(token),
        },
        repetitions=REPETITIONS,
        number={
            "miss": 500,
            "joserfc": 500,
            "keycloak cached": 200,
            "keycloak defaults": 100,
            "jose": 500,
            "floor": 500,
            "hit": 100_000,
        },
    )
    vs_joserfc = ratio(spread["joserfc"], spread["miss"])
    vs_keycloak = ratio(spread["keycloak cached"], spread["miss"])
    vs_defaults = ratio(spread["keycloak defaults"], spread["miss"])
    vs_floor = ratio(spread["floor"], spread["miss"])
    print("## Access-token verification (bench/bench_tokens.py)\n")
    print(
        f"RS256, 2048-bit key, token of {len(token)} bytes, JWKS cached on every side unless a row says "
        f"otherwise. Median (min–max) of {REPETITIONS} interleaved repetitions; speed ratio = their time ÷ "
        "ours (> 1: ours faster), formed per repetition.\n"
    )
    print("| path | µs per request | ours (cache miss) speed ÷ theirs | target | verdict |")
    print("|---|---:|---:|---|---|")
    print(f"| mudrika `AccessTokenVerifier.verify`, cache miss | {fmt(spread['miss'])} | | | |")
    print(
        f"| joserfc `jwt.decode` + `JWTClaimsRegistry` (same checks, cached KeySet) | {fmt(spread['joserfc'])} "
        f"| {fmt(vs_joserfc, 2)} | ≥ 1.0× | {verdict(vs_joserfc, 1.0)} |"
    )
    print(
        f"| python-keycloak `decode_token(key=cached JWKSet, check_claims=iss/aud/exp)` "
        f"| {fmt(spread['keycloak cached'])} | {fmt(vs_keycloak, 2)} | ≥ 2× | {verdict(vs_keycloak, 2.0)} |"
    )
    print(
        f"| python-keycloak `decode_token` defaults (refetches the JWKS per call, in-process mock) "
        f"| {fmt(spread['keycloak defaults'])} | {fmt(vs_defaults, 2)} | (informative) | |"
    )
    print(
        f"| floor: header+payload JSON, alg/kid, `cryptography` RS256 verify, iss/aud/exp/typ "
        f"| {fmt(spread['floor'])} | {fmt(vs_floor, 2)} | ≥ 0.7× | {verdict(vs_floor, 0.7)} |"
    )
    print(
        f"| `mudrika.crypto.jose.verify_jwt` alone (no kid lookup, no principal) | {fmt(spread['jose'])} "
        f"| {fmt(ratio(spread['jose'], spread['miss']), 2)} | (informative) | |"
    )
    print(
        f"| mudrika verified-token cache hit | {fmt(spread['hit'], 2)} | | ≤ 3 µs "
        f"| {verdict(spread['hit'], 3.0, at_least=False)} |"
    )
    sync_client.close()
    kc_http.close()


if __name__ == "__main__":
    main()
