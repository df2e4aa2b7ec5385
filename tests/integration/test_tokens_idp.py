"""AccessTokenVerifier against the Keycloak-shaped IdP peer (tests/node/keycloak_idp.mjs).

Real tokens from the token endpoint, the real JWKS (with its RSA-OAEP encryption key), key rotation
and retirement through the peer's test endpoints, an outage by stopping the peer, and introspection
of opaque tokens through python-keycloak (KeycloakAdapter).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mudrika.errors import IdpUnavailable
from mudrika.trust.jsonrpc import InvalidToken, code_for
from mudrika.trust.keycloak.adapters import KeycloakAdapter
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from tests._support.idp import KeycloakIdp
from tests._support.tokenfactory import Clock

pytestmark = pytest.mark.integration


def _jwks(idp: KeycloakIdp, clock: Clock | None = None, *, ttl: float = 300.0) -> JwksCache:
    return JwksCache(jwks_uri=idp.jwks_uri, algorithms={"RS256"}, clock=clock or time.monotonic, ttl=ttl)


def _verifier(idp: KeycloakIdp, jwks: JwksCache, clock: Clock | None = None) -> AccessTokenVerifier:
    return AccessTokenVerifier(
        issuer=idp.issuer, audience="agent-api", azp_allowlist=None, jwks=jwks, clock=clock or time.time
    )


@pytest.fixture
def jwks(keycloak_idp: KeycloakIdp) -> Iterator[JwksCache]:
    cache = _jwks(keycloak_idp)
    yield cache
    cache.close()


def test_valid_token_from_the_token_endpoint(keycloak_idp: KeycloakIdp, jwks: JwksCache) -> None:
    verifier = _verifier(keycloak_idp, jwks)
    token = keycloak_idp.client_credentials_token("agent-gateway")
    verified = verifier.verify(token)
    client = keycloak_idp.client("agent-gateway")
    assert verified.principal.subject == client.service_account_id
    assert "agent" in verified.principal.roles
    assert "agent-api/invoke" in verified.principal.roles
    assert verified.claims["azp"] == "agent-gateway"
    assert jwks.kids == frozenset({keycloak_idp.signing_kid})  # the encryption key is not trusted
    assert keycloak_idp.health()["enc_kid"] not in jwks.kids


@pytest.mark.anyio
async def test_valid_token_async(keycloak_idp: KeycloakIdp, jwks: JwksCache) -> None:
    verifier = _verifier(keycloak_idp, jwks)
    verified = await verifier.averify(keycloak_idp.client_credentials_token("agent-gateway"))
    assert verified.source == "jwt"
    await jwks.aclose()


def test_token_for_another_audience_is_refused(keycloak_idp: KeycloakIdp, jwks: JwksCache) -> None:
    token = keycloak_idp.client_credentials_token("payments-agent")
    with pytest.raises(InvalidToken) as info:
        _verifier(keycloak_idp, jwks).verify(token)
    assert info.value.code == "wrong_aud"


def test_azp_allowlist_for_realms_without_audience_mapper(keycloak_idp: KeycloakIdp, jwks: JwksCache) -> None:
    verifier = AccessTokenVerifier(
        issuer=keycloak_idp.issuer, audience=None, azp_allowlist={"payments-agent"}, jwks=jwks
    )
    assert (
        verifier.verify(keycloak_idp.client_credentials_token("payments-agent")).claims["azp"]
        == "payments-agent"
    )
    with pytest.raises(InvalidToken):
        verifier.verify(keycloak_idp.client_credentials_token("agent-gateway"))


def test_rotation_new_kid_accepted_at_once(fresh_keycloak_idp: KeycloakIdp) -> None:
    idp = fresh_keycloak_idp
    jwks = _jwks(idp)
    verifier = _verifier(idp, jwks)
    verifier.verify(idp.client_credentials_token("agent-gateway"))
    new_kid = idp.rotate()
    token = idp.client_credentials_token("agent-gateway")
    verified = verifier.verify(token)
    assert verified.kid == new_kid
    assert jwks.fetch_count == 2
    assert jwks.generation == 2
    jwks.close()


def test_retired_key_rejected_after_ttl(fresh_keycloak_idp: KeycloakIdp) -> None:
    idp = fresh_keycloak_idp
    clock = Clock()
    jwks = _jwks(idp, clock, ttl=60)
    verifier = _verifier(idp, jwks, clock)
    old_kid = idp.signing_kid
    old_token = idp.mint(client_id="agent-gateway", ttl=3600)  # long-lived, signed by the old key
    verifier.verify(old_token)
    idp.rotate()
    idp.retire(old_kid)
    assert verifier.verify(old_token).kid == old_kid  # still inside the TTL (cached)
    clock.advance(61)
    with pytest.raises(InvalidToken) as info:
        verifier.verify(old_token)
    assert info.value.code == "unknown_kid"
    assert int(code_for(info.value)) == -32010
    assert old_kid not in jwks.kids
    jwks.close()


def test_idp_down_and_no_cached_key_fails_closed(fresh_keycloak_idp: KeycloakIdp) -> None:
    idp = fresh_keycloak_idp
    token = idp.client_credentials_token("agent-gateway")
    idp.stop()
    jwks = _jwks(idp)
    with pytest.raises(IdpUnavailable):
        _verifier(idp, jwks).verify(token)
    jwks.close()


def test_idp_down_with_cached_key_keeps_serving(fresh_keycloak_idp: KeycloakIdp) -> None:
    idp = fresh_keycloak_idp
    clock = Clock()
    jwks = _jwks(idp, clock, ttl=60)
    verifier = _verifier(idp, jwks)
    verifier.verify(idp.client_credentials_token("agent-gateway"))
    second = idp.client_credentials_token("agent-gateway")
    idp.stop()
    clock.advance(61)  # the key set is stale and the refresh fails: stale-if-error
    assert verifier.verify(second).principal.subject
    jwks.close()


def test_opaque_token_introspected_through_python_keycloak(
    keycloak_idp: KeycloakIdp, jwks: JwksCache
) -> None:
    gateway = keycloak_idp.client("agent-gateway")
    with KeycloakAdapter(
        server_url=keycloak_idp.server_url,
        realm=keycloak_idp.realm,
        client_id=gateway.client_id,
        client_secret=gateway.secret,
    ) as adapter:
        verifier = AccessTokenVerifier(
            issuer=keycloak_idp.issuer,
            audience="agent-api",
            azp_allowlist=None,
            jwks=jwks,
            introspector=adapter,
        )
        opaque = keycloak_idp.opaque_token()
        assert opaque.count(".") != 2
        verified = verifier.verify(opaque)
        assert verified.source == "introspection"
        assert "agent-api/read" in verified.principal.roles
        with pytest.raises(InvalidToken) as info:
            verifier.verify("Zm9yZ2VkLW9wYXF1ZS10b2tlbg")
        assert info.value.code == "inactive"


def test_id_and_refresh_tokens_from_the_realm_are_refused(keycloak_idp: KeycloakIdp, jwks: JwksCache) -> None:
    verifier = _verifier(keycloak_idp, jwks)
    for typ in ("ID", "Refresh"):
        token = keycloak_idp.mint(typ, client_id="agent-gateway", aud="agent-api")
        with pytest.raises(InvalidToken) as info:
            verifier.verify(token)
        assert info.value.code == "wrong_typ"
