"""python-keycloak, unchanged, against the Keycloak-shaped test IdP (tests/node/keycloak_idp.mjs).

Why: mudrika's trust layer uses python-keycloak for discovery, client credentials and introspection.
If python-keycloak works against the peer exactly as against Keycloak (same paths, same token shape),
the verifier and middleware tests built on the peer exercise the code paths production will take.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from keycloak import KeycloakOpenID
from keycloak.exceptions import KeycloakError

from tests._support.idp import ADMIN_HEADER, KeycloakIdp

pytestmark = pytest.mark.integration

_PRIVATE_JWK_MEMBERS = {"d", "p", "q", "dp", "dq", "qi"}


def _openid(idp: KeycloakIdp, client_id: str, *, secret: str | None = None) -> KeycloakOpenID:
    client = idp.client(client_id)
    return KeycloakOpenID(
        server_url=idp.server_url,
        realm_name=idp.realm,
        client_id=client.client_id,
        client_secret_key=client.secret if secret is None else secret,
    )


@pytest.fixture
def gateway(keycloak_idp: KeycloakIdp) -> KeycloakOpenID:
    return _openid(keycloak_idp, "agent-gateway")


def _verify(token: str, certs: Mapping[str, Any], *, audience: str, issuer: str) -> dict[str, Any]:
    """Verify with pyjwt against the published key named by ``kid`` (signing keys only)."""
    kid = jwt.get_unverified_header(token)["kid"]
    matches = [k for k in certs["keys"] if k["kid"] == kid and k.get("use") == "sig"]
    assert len(matches) == 1, f"kid {kid} is not a published signing key"
    key = jwt.PyJWK(matches[0], algorithm="RS256")
    claims: dict[str, Any] = jwt.decode(
        token,
        key,
        algorithms=["RS256"],
        audience=audience,
        issuer=issuer,
        options={"require": ["exp", "iat", "iss", "sub", "jti"]},
    )
    return claims


def _kids(certs: Mapping[str, Any], use: str) -> set[str]:
    return {k["kid"] for k in certs["keys"] if k.get("use") == use}


# --- discovery and keys ------------------------------------------------------------------------


def test_well_known_has_keycloak_paths(keycloak_idp: KeycloakIdp, gateway: KeycloakOpenID) -> None:
    meta = gateway.well_known()
    oidc = f"{keycloak_idp.issuer}/protocol/openid-connect"
    assert meta["issuer"] == f"http://127.0.0.1:{keycloak_idp.port}/realms/mudrika"
    assert meta["issuer"] == keycloak_idp.issuer
    assert meta["token_endpoint"] == f"{oidc}/token" == keycloak_idp.token_endpoint
    assert meta["jwks_uri"] == f"{oidc}/certs" == keycloak_idp.jwks_uri
    assert meta["introspection_endpoint"] == f"{oidc}/token/introspect"
    assert meta["userinfo_endpoint"] == f"{oidc}/userinfo"
    assert meta["end_session_endpoint"] == f"{oidc}/logout"
    assert "client_credentials" in meta["grant_types_supported"]
    assert {"client_secret_basic", "client_secret_post"} <= set(meta["token_endpoint_auth_methods_supported"])


def test_certs_publish_a_signing_and_an_encryption_key(gateway: KeycloakOpenID) -> None:
    certs = gateway.certs()
    sig = [k for k in certs["keys"] if k.get("use") == "sig"]
    enc = [k for k in certs["keys"] if k.get("use") == "enc"]
    assert len(sig) == 1
    assert len(enc) == 1
    assert sig[0]["kty"] == "RSA"
    assert sig[0]["alg"] == "RS256"
    assert enc[0]["kty"] == "RSA"
    assert enc[0]["alg"] == "RSA-OAEP"
    assert sig[0]["kid"] != enc[0]["kid"]
    for key in certs["keys"]:
        assert not _PRIVATE_JWK_MEMBERS & set(key), "private key material published"


def test_realm_public_key_is_the_signing_key(gateway: KeycloakOpenID) -> None:
    certs = gateway.certs()
    (sig,) = [k for k in certs["keys"] if k.get("use") == "sig"]
    published = jwt.PyJWK(sig, algorithm="RS256").key
    der = base64.b64decode(gateway.public_key())
    realm_key = serialization.load_der_public_key(der)
    assert isinstance(published, rsa.RSAPublicKey)
    assert isinstance(realm_key, rsa.RSAPublicKey)
    assert realm_key.public_numbers() == published.public_numbers()


# --- client credentials ------------------------------------------------------------------------


def test_client_credentials_token_has_keycloak_shape(
    keycloak_idp: KeycloakIdp, gateway: KeycloakOpenID
) -> None:
    client = keycloak_idp.client("agent-gateway")
    response = gateway.token(grant_type="client_credentials")
    assert response["token_type"] == "Bearer"
    assert response["expires_in"] == 300
    assert response["scope"] == "openid profile email"
    # Keycloak's client-credentials flow returns neither a refresh token nor (here) an ID token.
    assert "refresh_token" not in response
    assert "id_token" not in response

    token = response["access_token"]
    certs = gateway.certs()
    header = jwt.get_unverified_header(token)
    assert header == {"alg": "RS256", "typ": "JWT", "kid": keycloak_idp.signing_kid}
    claims = _verify(token, certs, audience="agent-api", issuer=keycloak_idp.issuer)
    assert claims["typ"] == "Bearer"
    assert claims["azp"] == "agent-gateway"
    assert claims["clientId"] == "agent-gateway"
    assert claims["client_id"] == "agent-gateway"
    assert claims["aud"] == ["agent-api", "account"]
    assert claims["sub"] == client.service_account_id
    assert claims["preferred_username"] == "service-account-agent-gateway"
    assert claims["scope"] == "openid profile email"
    assert claims["realm_access"] == {"roles": list(client.realm_roles)}
    assert claims["resource_access"] == {
        "agent-api": {"roles": ["invoke", "read"]},
        "account": {"roles": ["manage-account", "view-profile"]},
    }
    assert claims["exp"] - claims["iat"] == 300


def test_client_secret_basic_client_gets_single_audience_token(keycloak_idp: KeycloakIdp) -> None:
    client = keycloak_idp.client("payments-agent")
    assert client.auth_method == "client_secret_basic"
    token = keycloak_idp.client_credentials_token("payments-agent")
    claims = _verify(token, keycloak_idp.jwks(), audience="payments-api", issuer=keycloak_idp.issuer)
    # Keycloak writes a single audience as a string.
    assert claims["aud"] == "payments-api"
    assert claims["azp"] == "payments-agent"
    assert claims["scope"] == "profile email"
    assert claims["realm_access"]["roles"][:2] == ["agent", "payments"]
    assert claims["resource_access"] == {"payments-api": {"roles": ["pay", "refund"]}}


def test_wrong_client_secret_is_refused(keycloak_idp: KeycloakIdp) -> None:
    with pytest.raises(KeycloakError) as caught:
        _openid(keycloak_idp, "agent-gateway", secret="not-the-secret").token(grant_type="client_credentials")
    assert caught.value.response_code in {400, 401}


def test_introspection_of_a_jwt_access_token(keycloak_idp: KeycloakIdp, gateway: KeycloakOpenID) -> None:
    client = keycloak_idp.client("agent-gateway")
    token = gateway.token(grant_type="client_credentials")["access_token"]
    info = gateway.introspect(token)
    assert info["active"] is True
    assert info["client_id"] == "agent-gateway"
    assert info["azp"] == "agent-gateway"
    assert info["sub"] == client.service_account_id
    assert info["username"] == client.username
    assert info["token_type"] == "Bearer"
    assert info["realm_access"] == {"roles": list(client.realm_roles)}
    assert info["iss"] == keycloak_idp.issuer


def test_introspection_says_inactive_for_garbage_and_refuses_bad_client(
    keycloak_idp: KeycloakIdp, gateway: KeycloakOpenID
) -> None:
    assert gateway.introspect("not-a-token") == {"active": False}
    token = gateway.token(grant_type="client_credentials")["access_token"]
    with pytest.raises(KeycloakError) as caught:
        _openid(keycloak_idp, "agent-gateway", secret="not-the-secret").introspect(token)
    assert caught.value.response_code == 401


def test_userinfo_for_a_service_account_token(keycloak_idp: KeycloakIdp, gateway: KeycloakOpenID) -> None:
    token = gateway.token(grant_type="client_credentials")["access_token"]
    info = gateway.userinfo(token)
    assert info == {
        "sub": keycloak_idp.client("agent-gateway").service_account_id,
        "email_verified": False,
        "preferred_username": "service-account-agent-gateway",
    }


# --- opaque tokens -----------------------------------------------------------------------------


def test_opaque_access_token_is_only_understood_by_introspection(
    keycloak_idp: KeycloakIdp,
) -> None:
    client = keycloak_idp.opaque_client()
    legacy = _openid(keycloak_idp, client.client_id)
    token = legacy.token(grant_type="client_credentials")["access_token"]
    with pytest.raises(jwt.DecodeError):
        jwt.get_unverified_header(token)
    info = legacy.introspect(token)
    assert info["active"] is True
    assert info["sub"] == client.service_account_id
    assert info["azp"] == info["client_id"] == client.client_id
    assert info["aud"] == "agent-api"
    assert info["typ"] == "Bearer"
    assert info["realm_access"] == {"roles": list(client.realm_roles)}
    assert info["resource_access"] == {"agent-api": {"roles": ["read"]}}
    assert info["exp"] - info["iat"] == 300
    # Another confidential client may introspect it too, as in Keycloak.
    assert keycloak_idp.introspect(keycloak_idp.opaque_token(), client_id="agent-gateway")["active"]


# --- async variants ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_variants(keycloak_idp: KeycloakIdp) -> None:
    openid = _openid(keycloak_idp, "agent-gateway")
    try:
        meta = await openid.a_well_known()
        assert meta["issuer"] == keycloak_idp.issuer
        certs = await openid.a_certs()
        assert _kids(certs, "sig") == {keycloak_idp.signing_kid}
        assert len(_kids(certs, "enc")) == 1
        response = await openid.a_token(grant_type="client_credentials")
        token = response["access_token"]
        claims = _verify(token, certs, audience="account", issuer=keycloak_idp.issuer)
        assert claims["typ"] == "Bearer"
        assert claims["azp"] == "agent-gateway"
        info = await openid.a_introspect(token)
        assert info["active"] is True
        assert info["jti"] == claims["jti"]
    finally:
        await openid.connection.aclose()


# --- minted tokens (for attack tests) ------------------------------------------------------------


def test_minted_id_and_refresh_tokens_have_keycloak_typ(keycloak_idp: KeycloakIdp) -> None:
    certs = keycloak_idp.jwks()
    id_token = keycloak_idp.mint("ID")
    id_claims = _verify(id_token, certs, audience="agent-gateway", issuer=keycloak_idp.issuer)
    assert id_claims["typ"] == "ID"
    assert id_claims["azp"] == "agent-gateway"
    refresh = keycloak_idp.mint("Refresh", client_id="payments-agent")
    refresh_claims = _verify(refresh, certs, audience=keycloak_idp.issuer, issuer=keycloak_idp.issuer)
    assert refresh_claims["typ"] == "Refresh"
    assert refresh_claims["azp"] == "payments-agent"
    # Validly signed, but not access tokens: introspection says inactive, like Keycloak.
    assert keycloak_idp.introspect(id_token) == {"active": False}
    assert keycloak_idp.introspect(refresh) == {"active": False}


def test_minted_claim_variants(keycloak_idp: KeycloakIdp) -> None:
    certs = keycloak_idp.jwks()
    token = keycloak_idp.mint(
        realm_access=None,
        aud="someone-else",
        claims={"allowed-origins": ["https://agent.example"]},
        header={"jku": "https://attacker.example/jwks"},
        alg="PS256",
    )
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "PS256"
    assert header["jku"] == "https://attacker.example/jwks"
    claims = jwt.decode(token, options={"verify_signature": False})
    assert "realm_access" not in claims
    assert claims["aud"] == "someone-else"
    assert claims["allowed-origins"] == ["https://agent.example"]
    assert claims["typ"] == "Bearer"

    expired = keycloak_idp.mint(ttl=-60)
    with pytest.raises(jwt.ExpiredSignatureError):
        _verify(expired, certs, audience="agent-api", issuer=keycloak_idp.issuer)
    assert keycloak_idp.introspect(expired) == {"active": False}
    # A well-formed minted access token is as good as an issued one.
    assert keycloak_idp.introspect(keycloak_idp.mint())["active"] is True


# --- key rotation and outages (private instances) ------------------------------------------------


def test_rotation_keeps_old_key_until_retired(fresh_keycloak_idp: KeycloakIdp) -> None:
    idp = fresh_keycloak_idp
    openid = _openid(idp, "agent-gateway")
    old_kid = idp.signing_kid
    before = openid.token(grant_type="client_credentials")["access_token"]
    opaque = idp.opaque_token()

    new_kid = idp.rotate()
    assert new_kid != old_kid
    assert idp.signing_kid == new_kid
    after = openid.token(grant_type="client_credentials")["access_token"]
    assert jwt.get_unverified_header(after)["kid"] == new_kid
    assert jwt.get_unverified_header(before)["kid"] == old_kid
    certs = openid.certs()
    assert _kids(certs, "sig") == {old_kid, new_kid}
    assert len(_kids(certs, "enc")) == 1
    _verify(before, certs, audience="agent-api", issuer=idp.issuer)
    _verify(after, certs, audience="agent-api", issuer=idp.issuer)
    assert openid.introspect(before)["active"] is True
    assert openid.introspect(opaque)["active"] is True  # opaque tokens do not depend on keys

    with pytest.raises(RuntimeError):
        idp.retire(new_kid)  # the signing key cannot be retired
    idp.retire(old_kid)
    certs = openid.certs()
    assert _kids(certs, "sig") == {new_kid}
    assert openid.introspect(before) == {"active": False}
    assert openid.introspect(after)["active"] is True


def test_stop_and_restart_simulate_an_outage(fresh_keycloak_idp: KeycloakIdp) -> None:
    idp = fresh_keycloak_idp
    openid = _openid(idp, "agent-gateway")
    kid = idp.signing_kid
    token = openid.token(grant_type="client_credentials")["access_token"]
    idp.stop()
    assert not idp.is_running()
    with pytest.raises(KeycloakError):
        openid.well_known()
    idp.start()
    assert idp.is_running()
    # Keys survive the restart, as Keycloak's live in its database.
    assert idp.signing_kid == kid
    _verify(token, openid.certs(), audience="agent-api", issuer=idp.issuer)
    assert openid.introspect(token)["active"] is True


def test_shared_instance_refuses_changes(keycloak_idp: KeycloakIdp) -> None:
    with pytest.raises(RuntimeError, match="fresh_keycloak_idp"):
        keycloak_idp.rotate()
    with pytest.raises(RuntimeError, match="fresh_keycloak_idp"):
        keycloak_idp.stop()
    with pytest.raises(RuntimeError, match="fresh_keycloak_idp"):
        keycloak_idp.start()
    with pytest.raises(RuntimeError, match="fresh_keycloak_idp"):
        keycloak_idp.retire(keycloak_idp.signing_kid)


def test_admin_endpoints_need_the_admin_secret(keycloak_idp: KeycloakIdp) -> None:
    url = f"{keycloak_idp.server_url}__test__/health"
    assert httpx.get(url, timeout=60).status_code == 401
    assert httpx.get(url, headers={ADMIN_HEADER: "guess"}, timeout=60).status_code == 401
    mint = f"{keycloak_idp.server_url}__test__/mint"
    assert httpx.post(mint, json={"typ": "Bearer"}, timeout=60).status_code == 401
