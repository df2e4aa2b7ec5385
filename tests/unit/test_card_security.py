"""The Agent Card's security entries come from protect()'s configuration, and a2a-sdk acts on them.

Each configuration is turned into ``securitySchemes`` + ``securityRequirements``, put on a real
a2a-sdk ``AgentCard`` (parsed strictly by the SDK's own protobuf types, so an unknown field or a
wrong shape fails), and handed to the SDK's client-side ``AuthInterceptor``: with a credential for
the scheme the card names, the interceptor attaches the bearer token, which it does only for a
scheme it recognises as OAuth2 / OpenID Connect / HTTP bearer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from a2a.client import ClientCallContext
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.interceptors import BeforeArgs
from a2a.types import AgentCard
from google.protobuf import json_format  # type: ignore[import-untyped]

from mudrika.crypto.keys import KeyPair
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.keycloak import AccessTokenVerifier, StaticKeySet
from mudrika.trust.middleware import ProtectedApp, protect

REALM = "https://kc.example/realms/agents"
ORIGIN = "https://agent.example"
POLICY = (
    "version: 1\nroles:\n  - {role_id: r-1, role_name: agent, realm_name: agents, trust_level: operator}\n"
    "operations:\n  message/send: {min_level: operator}\n"
)


async def _never(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("not called")


def _protected(tmp_path: Path, **options: Any) -> ProtectedApp:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    return protect(_never, policy=policy, **options)


def _card(protected: ProtectedApp) -> AgentCard:
    document = {
        "name": "shop agent",
        "description": "buys things",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": ORIGIN + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
        **protected.security_schemes(),
    }
    card = AgentCard()
    json_format.ParseDict(document, card)  # strict: an unknown field or a wrong shape raises
    return card


class Credentials(CredentialService):
    """Hands out one credential per scheme name, and records which names were asked for."""

    def __init__(self, credentials: dict[str, str]) -> None:
        self.credentials = credentials
        self.asked: list[str] = []

    async def get_credentials(
        self, security_scheme_name: str, context: ClientCallContext | None
    ) -> str | None:
        self.asked.append(security_scheme_name)
        return self.credentials.get(security_scheme_name)


async def _authorization(card: AgentCard, credentials: Credentials) -> str | None:
    args = BeforeArgs(input=None, method="SendMessage", agent_card=card)
    await AuthInterceptor(credentials).before(args)
    if args.context is None or args.context.service_parameters is None:
        return None
    return args.context.service_parameters.get("Authorization")


@pytest.mark.anyio
async def test_a_token_server_declares_its_realm_and_the_sdk_sends_the_bearer(tmp_path: Path) -> None:
    protected = _protected(tmp_path, realm=REALM, audience="agent-api", scopes_supported=["a2a"])
    card = _card(protected)
    scheme = card.security_schemes["oidc"]
    assert scheme.WhichOneof("scheme") == "open_id_connect_security_scheme"
    assert (
        scheme.open_id_connect_security_scheme.open_id_connect_url
        == REALM + "/.well-known/openid-configuration"
    )
    assert [list(r.schemes) for r in card.security_requirements] == [["oidc"]]
    assert list(card.security_requirements[0].schemes["oidc"].list) == ["a2a"]
    credentials = Credentials({"oidc": "eyJ.token.sig"})
    assert await _authorization(card, credentials) == "Bearer eyJ.token.sig"
    assert credentials.asked == ["oidc"]


@pytest.mark.anyio
async def test_a_signature_server_declares_the_signature_scheme_beside_the_token(tmp_path: Path) -> None:
    protected = _protected(
        tmp_path, realm=REALM, audience="agent-api", public_origin=ORIGIN, replay_store=MemoryReplayStore()
    )
    card = _card(protected)
    assert set(card.security_schemes) == {"oidc", "httpSignature"}
    signature = card.security_schemes["httpSignature"]
    assert signature.WhichOneof("scheme") == "http_auth_security_scheme"
    assert signature.http_auth_security_scheme.scheme == "Signature"
    assert [list(r.schemes) for r in card.security_requirements] == [["oidc"], ["httpSignature"]]
    # The token scheme still drives the SDK's interceptor; the signature is added by DidSignatureAuth.
    assert await _authorization(card, Credentials({"oidc": "tok"})) == "Bearer tok"
    await protected.aclose()


@pytest.mark.anyio
async def test_a_signature_only_server_declares_no_token_scheme(tmp_path: Path) -> None:
    protected = _protected(tmp_path, public_origin=ORIGIN, replay_store=MemoryReplayStore())
    card = _card(protected)
    assert list(card.security_schemes) == ["httpSignature"]
    credentials = Credentials({"httpSignature": "anything"})
    assert await _authorization(card, credentials) is None  # nothing for a bearer interceptor to attach
    assert credentials.asked == ["httpSignature"]
    await protected.aclose()


def test_a_static_key_verifier_names_its_own_issuer(tmp_path: Path) -> None:
    jwk = {**KeyPair.generate("rsa").public_key.to_jwk(), "kid": "k1", "alg": "RS256"}
    verifier = AccessTokenVerifier(
        issuer=REALM,
        audience="agent-api",
        azp_allowlist=None,
        jwks=StaticKeySet({"keys": [jwk]}, algorithms={"RS256"}),
    )
    card = _card(_protected(tmp_path, token_verifier=verifier))
    url = card.security_schemes["oidc"].open_id_connect_security_scheme.open_id_connect_url
    assert url == REALM + "/.well-known/openid-configuration"
