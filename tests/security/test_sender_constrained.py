"""Sender-constrained tokens against a real uvicorn server: a token bound to a key (DPoP, ``cnf.jkt``)
or to a client certificate (RFC 8705, ``cnf.x5t#S256``) is useless to whoever merely copies it.

The proofs are made with joserfc (tests/_support/dpop.py), independently of the verifier.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import trustme
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.keycloak.dpop import DPoPVerifier, certificate_thumbprint
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator
from mudrika.trust.middleware._http import ASGIApp, Receive, Scope, Send
from tests._support.dpop import DPoPClient
from tests._support.served import serve_asgi
from tests._support.tokenfactory import Clock, LocalRealm, demo_policy, realm_jwks

pytestmark = pytest.mark.security

ORIGIN = "https://agent.example"
BODY = b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}'


async def _ok(request: Request) -> Response:
    return JSONResponse({"jsonrpc": "2.0", "result": "ok", "id": 1})


def _with_client_cert(app: ASGIApp, pem: str) -> ASGIApp:
    """A server that exposes the client certificate through the ASGI TLS extension."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {
                **scope,
                "extensions": {**scope.get("extensions", {}), "tls": {"client_cert_chain": [pem]}},
            }
        await app(scope, receive, send)

    return wrapped


@dataclass
class Served:
    base: str
    realm: LocalRealm
    store: MemoryReplayStore
    cert_pem: str
    with_cert: str


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    realm = LocalRealm(Clock())
    store = MemoryReplayStore(1000)
    cert_pem = trustme.CA().issue_cert("client.example").cert_chain_pems[0].bytes().decode()
    with realm_jwks(realm) as jwks:
        verifier = AccessTokenVerifier(
            issuer=realm.issuer, audience="agent-api", azp_allowlist=None, jwks=jwks, clock=realm.clock
        )
        dpop = DPoPVerifier(algorithms={"ES256"}, replay_store=store, public_origin=ORIGIN)
        app = A2AAuthMiddleware(
            Starlette(routes=[Route("/", _ok, methods=["POST"])]),
            authenticators=[BearerAuthenticator(verifier, dpop=dpop)],
            policy=demo_policy(),
        )
        with serve_asgi(app) as base, serve_asgi(_with_client_cert(app, cert_pem)) as with_cert:
            yield Served(base, realm, store, cert_pem, with_cert)


def _post(url: str, headers: dict[str, str] | list[tuple[str, str]]) -> httpx.Response:
    return httpx.post(url + "/", content=BODY, headers=headers)


def _denied(response: httpx.Response, status: int = 401, code: int = -32010) -> bool:
    return (response.status_code, response.json()["error"]["code"]) == (status, code)


def _bound(served: Served, client: DPoPClient, **claims: Any) -> str:
    return served.realm.token(cnf={"jkt": client.jkt}, **claims)


def test_dpop_bound_token_presented_as_bearer_is_refused(served: Served) -> None:
    client = DPoPClient()
    token = _bound(served, client)
    assert _denied(_post(served.base, {"Authorization": f"Bearer {token}"}))
    proof = client.proof("POST", ORIGIN + "/", token, iat=time.time())
    assert _denied(_post(served.base, {"Authorization": f"Bearer {token}", "DPoP": proof}))


def test_dpop_with_a_valid_proof_is_accepted_once(served: Served) -> None:
    client = DPoPClient()
    token = _bound(served, client)
    headers = {
        "Authorization": f"DPoP {token}",
        "DPoP": client.proof("POST", ORIGIN + "/", token, iat=time.time()),
    }
    assert _post(served.base, headers).status_code == 200
    assert _denied(_post(served.base, headers))  # the proof jti is single use
    fresh = {
        "Authorization": f"DPoP {token}",
        "DPoP": client.proof("POST", ORIGIN + "/", token, iat=time.time()),
    }
    assert _post(served.base, fresh).status_code == 200


@pytest.mark.parametrize(
    "make",
    [
        lambda c, t: {"Authorization": f"DPoP {t}"},  # no proof
        lambda c, t: {
            "Authorization": f"DPoP {t}",
            "DPoP": c.proof("POST", ORIGIN + "/other", t, iat=time.time()),
        },
        lambda c, t: {"Authorization": f"DPoP {t}", "DPoP": c.proof("GET", ORIGIN + "/", t, iat=time.time())},
        lambda c, t: {
            "Authorization": f"DPoP {t}",
            "DPoP": c.proof("POST", ORIGIN + "/", "other", iat=time.time()),
        },
        lambda c, t: {
            "Authorization": f"DPoP {t}",
            "DPoP": DPoPClient().proof("POST", ORIGIN + "/", t, iat=time.time()),
        },
        lambda c, t: {
            "Authorization": f"DPoP {t}",
            "DPoP": c.proof("POST", ORIGIN + "/", t, iat=time.time() - 3600),
        },
    ],
    ids=["no-proof", "other-uri", "other-method", "other-token", "other-key", "stale"],
)
def test_dpop_proofs_that_do_not_fit_are_refused(served: Served, make: Any) -> None:
    client = DPoPClient()
    token = _bound(served, client)
    assert _denied(_post(served.base, make(client, token)))


def test_two_dpop_headers_are_refused(served: Served) -> None:
    client = DPoPClient()
    token = _bound(served, client)
    proof = client.proof("POST", ORIGIN + "/", token, iat=time.time())
    headers = [("Authorization", f"DPoP {token}"), ("DPoP", proof), ("DPoP", proof)]
    assert _denied(_post(served.base, headers))


def test_dpop_scheme_with_an_unbound_token_is_refused(served: Served) -> None:
    token = served.realm.token()
    proof = DPoPClient().proof("POST", ORIGIN + "/", token, iat=time.time())
    assert _denied(_post(served.base, {"Authorization": f"DPoP {token}", "DPoP": proof}))
    assert _post(served.base, {"Authorization": f"Bearer {token}"}).status_code == 200


def test_a_denied_dpop_caller_consumes_no_replay_capacity(served: Served) -> None:
    client = DPoPClient()
    token = _bound(served, client, realm_access={"roles": []}, resource_access={})
    before = len(served.store)
    for _ in range(20):
        proof = client.proof("POST", ORIGIN + "/", token, iat=time.time())
        assert _denied(_post(served.base, {"Authorization": f"DPoP {token}", "DPoP": proof}), 403, -32013)
    assert len(served.store) == before


def test_certificate_bound_token_without_tls_client_certificate_is_refused(served: Served) -> None:
    der = ssl.PEM_cert_to_DER_cert(served.cert_pem)
    token = served.realm.token(cnf={"x5t#S256": certificate_thumbprint(der)})
    assert _denied(_post(served.base, {"Authorization": f"Bearer {token}"}))  # uvicorn exposes no cert


def test_certificate_bound_token_is_checked_against_the_client_certificate(served: Served) -> None:
    der = ssl.PEM_cert_to_DER_cert(served.cert_pem)
    token = served.realm.token(cnf={"x5t#S256": certificate_thumbprint(der)})
    assert _post(served.with_cert, {"Authorization": f"Bearer {token}"}).status_code == 200
    other = served.realm.token(cnf={"x5t#S256": certificate_thumbprint(b"another certificate")})
    assert _denied(_post(served.with_cert, {"Authorization": f"Bearer {other}"}))
    assert _denied(_post(served.with_cert, {"Authorization": f"DPoP {token}"}))


def test_unknown_confirmation_methods_are_refused(served: Served) -> None:
    for cnf in ({"jwk": {"kty": "EC"}}, {"jkt": "x", "x5t#S256": "y"}, "jkt", {}):
        token = served.realm.token(cnf=cnf)
        assert _denied(_post(served.base, {"Authorization": f"Bearer {token}"}))
