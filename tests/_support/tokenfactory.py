"""A local, in-process stand-in for a Keycloak realm's signing side: keys, JWKS, token minting.

Unit and security tests use it to mint Keycloak-shaped access tokens (and hostile variants) with
``mudrika.crypto`` keys, and to serve the JWKS through an ``httpx.MockTransport`` that counts fetches
and can be made slow or failing.  Integration tests use the real node peer (tests/_support/idp.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.keys import KeyPair
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.levels import TrustLevel
from mudrika.trust.models import KeycloakRole
from mudrika.trust.policy import OperationRule, Policy

__all__ = ["T0", "Clock", "LocalRealm", "compact", "demo_policy", "hs256_with", "realm_jwks"]

ISSUER = "https://idp.test/realms/mudrika"
JWKS_URI = f"{ISSUER}/protocol/openid-connect/certs"

T0 = 1_700_000_000.0
"""A fixed epoch for tests whose realm clock is driven by hand."""

_KEYS: dict[str, KeyPair] = {}


def _rsa(name: str) -> KeyPair:
    # RSA generation is slow; tests share a few named keys per process.
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = KeyPair.generate("rsa")
    return key


class Clock:
    """A settable clock: ``clock()`` returns ``clock.now``."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def compact(
    header: Mapping[str, Any], payload: Mapping[str, Any] | bytes, key: KeyPair | None, alg: str
) -> str:
    """A compact JWS built by hand (so tests can put anything in the header, even ``alg: none``)."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
    signing_input = (
        f"{b64url_encode(json.dumps(header, separators=(',', ':')).encode())}.{b64url_encode(raw)}"
    )
    if key is None:
        return signing_input + "."
    return f"{signing_input}.{b64url_encode(key.sign(signing_input.encode(), alg))}"


def hs256_with(secret: bytes, header: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
    signing_input = (
        f"{b64url_encode(json.dumps(header).encode())}.{b64url_encode(json.dumps(payload).encode())}"
    )
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url_encode(mac)}"


class LocalRealm:
    """Signing keys of a realm (``kid`` -> key), its JWKS (plus an RSA-OAEP ``enc`` key, as Keycloak
    publishes), and a mock JWKS endpoint with a fetch counter, a failure switch and a delay."""

    def __init__(self, clock: Clock, *, issuer: str = ISSUER, audience: str = "agent-api") -> None:
        self.clock = clock
        self.issuer = issuer
        self.jwks_uri = f"{issuer}/protocol/openid-connect/certs"
        self.audience = audience
        self.keys: dict[str, KeyPair] = {"k1": _rsa("k1")}
        self.signing_kid = "k1"
        self.enc_key = _rsa("enc")
        self.fetches = 0
        self.fail = False
        self.delay = 0.0
        self.body_override: bytes | None = None
        self._lock = threading.Lock()

    # --- keys -----------------------------------------------------------------------------------

    def rotate(self, kid: str = "k2") -> str:
        self.keys[kid] = _rsa(kid)
        self.signing_kid = kid
        return kid

    def retire(self, kid: str) -> None:
        del self.keys[kid]

    def jwks(self) -> dict[str, Any]:
        keys: list[dict[str, Any]] = [
            {**key.public_key.to_jwk(), "kid": kid, "use": "sig", "alg": "RS256"}
            for kid, key in self.keys.items()
        ]
        keys.append({**self.enc_key.public_key.to_jwk(), "kid": "enc-1", "use": "enc", "alg": "RSA-OAEP"})
        return {"keys": keys}

    # --- tokens ---------------------------------------------------------------------------------

    def claims(self, **overrides: Any) -> dict[str, Any]:
        """Keycloak service-account access-token claims; an override of None removes the claim."""
        now = int(self.clock())
        claims: dict[str, Any] = {
            "exp": now + 300,
            "iat": now,
            "jti": "onrtcc:" + hashlib.sha256(str(time.perf_counter_ns()).encode()).hexdigest()[:16],
            "iss": self.issuer,
            "aud": [self.audience, "account"],
            "sub": "5f1c1c7e-8e2a-4a0e-9d53-7c5b0f1f2a10",
            "typ": "Bearer",
            "azp": "agent-gateway",
            "acr": "1",
            "realm_access": {"roles": ["agent", "offline_access"]},
            "resource_access": {"agent-api": {"roles": ["invoke"]}, "account": {"roles": ["view-profile"]}},
            "scope": "profile email",
            "clientId": "agent-gateway",
            "preferred_username": "service-account-agent-gateway",
        }
        for name, value in overrides.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        return claims

    def token(
        self,
        *,
        kid: str | None = None,
        key: KeyPair | None = None,
        alg: str = "RS256",
        header: Mapping[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        kid = self.signing_kid if kid is None else kid
        signer = key if key is not None else self.keys[kid]
        full_header: dict[str, Any] = {"alg": alg, "typ": "JWT", "kid": kid}
        for name, value in (header or {}).items():
            if value is None:
                full_header.pop(name, None)
            else:
                full_header[name] = value
        return compact(full_header, self.claims(**claims), signer, alg)

    # --- the JWKS endpoint ----------------------------------------------------------------------

    def _answer(self) -> httpx.Response:
        with self._lock:
            self.fetches += 1
        if self.fail:
            return httpx.Response(503, json={"error": "down"})
        if self.body_override is not None:
            return httpx.Response(200, content=self.body_override)
        return httpx.Response(200, json=self.jwks())

    def transport(self) -> httpx.MockTransport:
        def handler(request: httpx.Request) -> httpx.Response:
            if self.delay:
                time.sleep(self.delay)
            return self._answer()

        return httpx.MockTransport(handler)

    def async_transport(self) -> httpx.MockTransport:
        async def handler(request: httpx.Request) -> httpx.Response:
            if self.delay:
                await asyncio.sleep(self.delay)
            return self._answer()

        return httpx.MockTransport(handler)

    def clients(self) -> tuple[httpx.Client, httpx.AsyncClient]:
        return httpx.Client(transport=self.transport()), httpx.AsyncClient(transport=self.async_transport())


@contextmanager
def realm_jwks(realm: LocalRealm, **options: Any) -> Iterator[JwksCache]:
    """An RS256 :class:`JwksCache` on the realm's clock that fetches through the realm's mock
    endpoint (sync and async); ``options`` are further ``JwksCache`` settings (ttl, cooldown...)."""
    sync_client, async_client = realm.clients()
    try:
        yield JwksCache(
            jwks_uri=realm.jwks_uri,
            algorithms={"RS256"},
            clock=realm.clock,
            http_client=sync_client,
            async_http_client=async_client,
            **options,
        )
    finally:
        sync_client.close()


def demo_policy() -> Policy:
    """The policy the middleware tests use: realm role ``agent`` is an operator, ``auditor-role`` an
    auditor.  Operators may send messages and read tasks, but only admins may cancel."""
    roles = [
        KeycloakRole(role_id="r1", role_name="agent", trust_level=TrustLevel.OPERATOR, realm_name="mudrika"),
        KeycloakRole(
            role_id="r2", role_name="auditor-role", trust_level=TrustLevel.AUDITOR, realm_name="mudrika"
        ),
    ]
    operations = {
        "message/send": OperationRule(min_level=TrustLevel.OPERATOR),
        "message/stream": OperationRule(min_level=TrustLevel.OPERATOR),
        "tasks/get": OperationRule(min_level=TrustLevel.VIEWER),
        "tasks/list": OperationRule(min_level=TrustLevel.VIEWER),
        "tasks/resubscribe": OperationRule(min_level=TrustLevel.VIEWER),
        "tasks/cancel": OperationRule(min_level=TrustLevel.ADMIN),
        "agent/getAuthenticatedExtendedCard": OperationRule(min_level=TrustLevel.VIEWER),
        "tasks/pushNotificationConfig/set": OperationRule(min_level=TrustLevel.ADMIN),
    }
    return Policy(roles=roles, operations=operations)
