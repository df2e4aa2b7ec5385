"""Access-token attack matrix: one test per attack, each asserting the exact JSON-RPC code.

Codes (mudrika.trust.jsonrpc): -32010 invalid token, -32011 expired / not yet valid, -32012 bad
signature.  Boundary rule, made explicit: with leeway L a token is refused from ``exp + L`` on, so a
token that expired exactly 30 s ago is refused with leeway 30 (and 29 s ago is accepted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from cryptography.hazmat.primitives import serialization

from mudrika.crypto.keys import KeyPair
from mudrika.trust.jsonrpc import A2AAuthError, InvalidSignature, InvalidToken, TokenExpired, code_for
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from tests._support.tokenfactory import Clock, LocalRealm, compact, hs256_with, realm_jwks

pytestmark = pytest.mark.security

INVALID_TOKEN = -32010
TOKEN_EXPIRED = -32011
INVALID_SIGNATURE = -32012


@pytest.fixture
def verifier(realm: LocalRealm, clock: Clock) -> Iterator[AccessTokenVerifier]:
    with realm_jwks(realm) as jwks:
        yield AccessTokenVerifier(
            issuer=realm.issuer,
            audience=realm.audience,
            azp_allowlist=None,
            jwks=jwks,
            clock=clock,
            leeway=30,
        )


def _code(verifier: AccessTokenVerifier, token: str) -> int:
    with pytest.raises(Exception) as info:  # noqa: PT011 - the code is what is asserted
        verifier.verify(token)
    return int(code_for(info.value))


def _header(realm: LocalRealm, **extra: Any) -> dict[str, Any]:
    return {"alg": "RS256", "typ": "JWT", "kid": realm.signing_kid, **extra}


def test_alg_none(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    token = compact(_header(realm, alg="none"), realm.claims(), None, "none")
    assert _code(verifier, token) == INVALID_TOKEN


def test_hs256_signed_with_the_rsa_public_key(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    public_pem = (
        realm.keys["k1"]
        .public_key.to_cryptography()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    token = hs256_with(public_pem, _header(realm, alg="HS256"), realm.claims())
    assert _code(verifier, token) == INVALID_TOKEN


def test_attacker_key_with_the_same_kid(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    attacker = KeyPair.generate("rsa")
    assert _code(verifier, realm.token(key=attacker)) == INVALID_SIGNATURE


def test_embedded_jwk_header(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    attacker = KeyPair.generate("rsa")
    token = realm.token(key=attacker, header={"jwk": attacker.public_key.to_jwk()})
    assert _code(verifier, token) == INVALID_TOKEN


def test_jku_header(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    token = realm.token(header={"jku": "https://attacker.test/jwks.json"})
    assert _code(verifier, token) == INVALID_TOKEN


def test_x5u_header(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    token = realm.token(header={"x5u": "https://attacker.test/cert.pem"})
    assert _code(verifier, token) == INVALID_TOKEN


def test_no_kid(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    assert _code(verifier, realm.token(header={"kid": None})) == INVALID_TOKEN


def test_expired_by_30s_with_leeway_30_is_at_the_boundary_and_refused(
    verifier: AccessTokenVerifier, realm: LocalRealm, clock: Clock
) -> None:
    now = int(clock())
    assert _code(verifier, realm.token(exp=now - 30, iat=now - 330)) == TOKEN_EXPIRED
    # One second inside the leeway is still accepted: the boundary itself is what is refused.
    assert verifier.verify(realm.token(exp=now - 29, iat=now - 329)).principal.subject


def test_expired_by_120s(verifier: AccessTokenVerifier, realm: LocalRealm, clock: Clock) -> None:
    now = int(clock())
    assert _code(verifier, realm.token(exp=now - 120, iat=now - 420)) == TOKEN_EXPIRED


def test_no_exp(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    assert _code(verifier, realm.token(exp=None)) == INVALID_TOKEN


def test_nbf_in_the_future(verifier: AccessTokenVerifier, realm: LocalRealm, clock: Clock) -> None:
    # Not yet valid is not expired ("expired" makes a client refresh, which cannot help): -32010.
    assert _code(verifier, realm.token(nbf=int(clock()) + 120)) == INVALID_TOKEN


def test_wrong_aud(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    assert _code(verifier, realm.token(aud=["payments-api", "account"])) == INVALID_TOKEN


def test_missing_aud(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    assert _code(verifier, realm.token(aud=None)) == INVALID_TOKEN


def test_wrong_iss(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    assert _code(verifier, realm.token(iss="https://idp.test/realms/other")) == INVALID_TOKEN


def test_ps256_on_an_rs256_key(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    assert _code(verifier, realm.token(alg="PS256")) == INVALID_TOKEN


def test_id_token(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    token = realm.token(
        typ="ID", aud="agent-gateway", azp="agent-gateway", realm_access=None, resource_access=None
    )
    assert _code(verifier, token) == INVALID_TOKEN


def test_refresh_token(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    token = realm.token(typ="Refresh", aud=realm.issuer, realm_access=None, resource_access=None)
    assert _code(verifier, token) == INVALID_TOKEN


def test_oversized_token(verifier: AccessTokenVerifier, realm: LocalRealm) -> None:
    token = realm.token(padding="A" * 20_000)
    assert len(token) > 16 * 1024
    assert _code(verifier, token) == INVALID_TOKEN


@pytest.mark.parametrize(
    "claims",
    [
        {"realm_access": {"roles": ["agent-api/invoke"]}},  # would read as the client role agent-api/invoke
        {"resource_access": {"agent-api": {"roles": ["admin/all"]}}},
        {"resource_access": {"agent-api/admin": {"roles": ["x"]}}},
    ],
)
def test_role_names_with_a_slash_are_refused(
    verifier: AccessTokenVerifier, realm: LocalRealm, claims: Any
) -> None:
    assert _code(verifier, realm.token(**claims)) == INVALID_TOKEN


# --- the public API, sync and async, on forged and expired tokens -----------------------------------
# A red-team mutant turned the `raise` after logging a rejection into `pass`, and `averify` returned
# None for a forged token: the middleware happened to fail closed, any other caller did not.  Every
# attack below goes through every public entry point, and each must raise for its own reason.


def _attacker_signed(realm: LocalRealm, now: int) -> str:
    return realm.token(key=KeyPair.generate("rsa"))


ATTACKS: dict[str, tuple[Callable[[LocalRealm, int], str], type[A2AAuthError], str]] = {
    "forged signature, same kid": (_attacker_signed, InvalidSignature, "bad_signature"),
    "expired by 120 s": (
        lambda realm, now: realm.token(exp=now - 120, iat=now - 420),
        TokenExpired,
        "expired",
    ),
    "exactly at exp + leeway": (
        lambda realm, now: realm.token(exp=now - 30, iat=now - 330),
        TokenExpired,
        "expired",
    ),
    "not yet valid": (lambda realm, now: realm.token(nbf=now + 120), InvalidToken, "not_yet_valid"),
    "alg none": (
        lambda realm, now: compact(_header(realm, alg="none"), realm.claims(), None, "none"),
        InvalidToken,
        "alg_not_allowed",
    ),
    # "exp": null passed "exp is required" (the name is there) and then never expired.
    "exp null": (
        lambda realm, now: compact(
            _header(realm), {**realm.claims(), "exp": None}, realm.keys[realm.signing_kid], "RS256"
        ),
        InvalidToken,
        "malformed_claim",
    ),
    "ID token": (lambda realm, now: realm.token(typ="ID"), InvalidToken, "wrong_typ"),
    "other audience": (lambda realm, now: realm.token(aud=["payments-api"]), InvalidToken, "wrong_aud"),
}


def _sync(verifier: AccessTokenVerifier, token: str) -> object:
    return verifier.verify(token)


def _async(verifier: AccessTokenVerifier, token: str) -> object:
    async def call() -> object:
        return await verifier.averify(token)

    return anyio.run(call)


ENTRY_POINTS = {"verify": _sync, "averify": _async}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_every_public_entry_point_raises_for_the_attack_s_own_reason(
    verifier: AccessTokenVerifier, realm: LocalRealm, clock: Clock, attack: str, entry: str
) -> None:
    build, error, code = ATTACKS[attack]
    token = build(realm, int(clock()))
    with pytest.raises(error) as info:
        ENTRY_POINTS[entry](verifier, token)
    assert info.value.code == code
    assert verifier.cache_len == 0
