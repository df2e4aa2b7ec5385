"""The gaps of python-keycloak 7's ``KeycloakOpenID.decode_token`` (its defaults) that
:class:`~mudrika.trust.keycloak.tokens.AccessTokenVerifier` closes, shown against the Keycloak-shaped peer.

Each test is an assertion pair: python-keycloak accepts (or does what is described), ours refuses.
Observed with python-keycloak 7.1.1: every claimed gap reproduces, and RS384 tokens are accepted too
(its jwcrypto JWT has no algorithm allow-list bound to the key).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from keycloak import KeycloakOpenID

from mudrika.trust.jsonrpc import InvalidToken, TokenExpired, code_for
from mudrika.trust.keycloak._http_bridge import install_transports
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from tests._support.idp import KeycloakIdp

pytestmark = [pytest.mark.interop, pytest.mark.integration]


class Counted:
    """python-keycloak with its HTTP routed through an httpx client that counts JWKS fetches."""

    def __init__(self, idp: KeycloakIdp) -> None:
        self.urls: list[str] = []
        self._http = httpx.Client(event_hooks={"request": [self._seen]})
        self._ahttp = httpx.AsyncClient()
        client = idp.client("agent-gateway")
        self.oidc = KeycloakOpenID(
            server_url=idp.server_url,
            realm_name=idp.realm,
            client_id=client.client_id,
            client_secret_key=client.secret,
        )
        install_transports(self.oidc.connection, self._http, self._ahttp)
        self.certs_url = idp.jwks_uri

    def _seen(self, request: httpx.Request) -> None:
        self.urls.append(str(request.url))

    @property
    def jwks_fetches(self) -> int:
        return self.urls.count(self.certs_url)

    def decode(self, token: str) -> dict[str, Any]:
        claims: dict[str, Any] = self.oidc.decode_token(token)
        return claims

    def close(self) -> None:
        self._http.close()


@pytest.fixture
def theirs(keycloak_idp: KeycloakIdp) -> Iterator[Counted]:
    counted = Counted(keycloak_idp)
    yield counted
    counted.close()


@pytest.fixture
def jwks(keycloak_idp: KeycloakIdp) -> Iterator[JwksCache]:
    cache = JwksCache(jwks_uri=keycloak_idp.jwks_uri, algorithms={"RS256"})
    yield cache
    cache.close()


@pytest.fixture
def ours(keycloak_idp: KeycloakIdp, jwks: JwksCache) -> AccessTokenVerifier:
    return AccessTokenVerifier(
        issuer=keycloak_idp.issuer, audience="agent-api", azp_allowlist=None, jwks=jwks, leeway=30
    )


def test_refetches_the_key_set_on_every_call(
    keycloak_idp: KeycloakIdp, theirs: Counted, ours: AccessTokenVerifier, jwks: JwksCache
) -> None:
    tokens = [keycloak_idp.client_credentials_token("agent-gateway") for _ in range(5)]
    for token in tokens:
        theirs.decode(token)
        ours.verify(token)
    assert theirs.jwks_fetches == 5
    assert jwks.fetch_count == 1


def test_sixty_second_skew(keycloak_idp: KeycloakIdp, theirs: Counted, ours: AccessTokenVerifier) -> None:
    expired_45s_ago = keycloak_idp.mint(client_id="agent-gateway", ttl=-45)
    assert theirs.decode(expired_45s_ago)["typ"] == "Bearer"
    with pytest.raises(TokenExpired) as info:
        ours.verify(expired_45s_ago)
    assert int(code_for(info.value)) == -32011


def test_no_typ_check_id_token(keycloak_idp: KeycloakIdp, theirs: Counted, ours: AccessTokenVerifier) -> None:
    id_token = keycloak_idp.mint("ID", client_id="agent-gateway", aud="agent-api")
    assert theirs.decode(id_token)["typ"] == "ID"
    with pytest.raises(InvalidToken) as info:
        ours.verify(id_token)
    assert info.value.code == "wrong_typ"


def test_no_typ_check_refresh_token(
    keycloak_idp: KeycloakIdp, theirs: Counted, ours: AccessTokenVerifier
) -> None:
    refresh = keycloak_idp.mint("Refresh", client_id="agent-gateway")
    assert theirs.decode(refresh)["typ"] == "Refresh"
    with pytest.raises(InvalidToken):
        ours.verify(refresh)


def test_no_aud_check(keycloak_idp: KeycloakIdp, theirs: Counted, ours: AccessTokenVerifier) -> None:
    for_payments = keycloak_idp.client_credentials_token("payments-agent")
    assert theirs.decode(for_payments)["aud"] == "payments-api"
    with pytest.raises(InvalidToken) as info:
        ours.verify(for_payments)
    assert info.value.code == "wrong_aud"


def test_no_iss_check(keycloak_idp: KeycloakIdp, theirs: Counted, ours: AccessTokenVerifier) -> None:
    other_issuer = keycloak_idp.mint(client_id="agent-gateway", iss="https://elsewhere.test/realms/mudrika")
    assert theirs.decode(other_issuer)["iss"] == "https://elsewhere.test/realms/mudrika"
    with pytest.raises(InvalidToken) as info:
        ours.verify(other_issuer)
    assert info.value.code == "wrong_iss"


@pytest.mark.parametrize("alg", ["PS256", "RS384"])
def test_algorithm_not_bound_to_the_key(
    keycloak_idp: KeycloakIdp, theirs: Counted, ours: AccessTokenVerifier, alg: str
) -> None:
    token = keycloak_idp.mint(client_id="agent-gateway", alg=alg)
    assert theirs.decode(token)["typ"] == "Bearer"
    with pytest.raises(InvalidToken) as info:
        ours.verify(token)
    assert info.value.code == "alg_not_allowed"
