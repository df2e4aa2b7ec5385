"""Two-line wiring: :func:`protect` puts the gate in front of an A2A or MCP app.

Why: the common case (Keycloak access tokens, a policy file, optionally DID-signed agent requests
with a shared replay store) otherwise costs a dozen imports and objects, each with a secure setting
that is easy to get wrong (``azp_allowlist``, the JWKS URL, the egress policy, the replay store's
lifetime).  :func:`protect` builds them all from the realm URL, the audience and the policy file:

* :class:`~mudrika.trust.keycloak.jwks.JwksCache` on the realm's JWKS endpoint
  (``<realm>/protocol/openid-connect/certs``), fetched lazily through the egress policy (nothing is
  contacted while wiring), https only (plain http for a loopback realm), RS256 only unless told
  otherwise;
* :class:`~mudrika.trust.keycloak.tokens.AccessTokenVerifier` with ``iss`` = the realm URL and the
  audience (or, instead, an ``azp`` allow-list) and :class:`BearerAuthenticator`;
* when ``public_origin`` is given, RFC 9421 DID-signed requests too: an
  :class:`~mudrika.trust.httpsig.HttpSignatureVerifier` (registered algorithms, no ``tag``
  requirement, the given replay store) and :class:`DidSignatureAuthenticator`, keys resolved from
  the signer's DID (``did:key`` natively; ``did:web`` through the egress policy);
* the :class:`~mudrika.trust.policy.Policy` (DID callers get the file's ``did_roles``), the error
  profile (``auto``: per request from ``A2A-Version``).

The returned :class:`ProtectedApp` is an ASGI app that also owns what it built and what it was
handed to hold (the replay store): the ASGI ``lifespan`` shutdown closes them after the app's own
shutdown, so a Redis pool is not left to the application to remember.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Final, Protocol

from mudrika.errors import InvalidInput
from mudrika.identity.resolver import DIDResolver
from mudrika.net.egress import EgressPolicy
from mudrika.stores.replay import ReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    AgentKeys,
    HttpSignatureVerifier,
    KeyLookup,
    ResolverKeyLookup,
    WebSignatureVerifier,
    parse_target_uri,
)
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware._a2a import A2AAuthMiddleware, A2ARoutes
from mudrika.trust.middleware._auth import Authenticator
from mudrika.trust.middleware._bearer import BearerAuthenticator
from mudrika.trust.middleware._card import CardSecurity
from mudrika.trust.middleware._did import DidSignatureAuthenticator
from mudrika.trust.middleware._gate import AuthGate
from mudrika.trust.middleware._http import ASGIApp, Message, Receive, Scope, Send
from mudrika.trust.middleware._limits import Limits
from mudrika.trust.middleware._mcp import McpAuthMiddleware, McpRoutes
from mudrika.trust.middleware._resource import ResourceServer
from mudrika.trust.middleware._webagent import AgentSignatureAuthenticator
from mudrika.trust.policy import Policy

__all__ = ["KEYCLOAK_JWKS_PATH", "PROTOCOLS", "ProtectedApp", "protect"]

_log = logging.getLogger("mudrika.trust.middleware")

#: Where Keycloak publishes a realm's signing keys, relative to the realm URL (its issuer).
KEYCLOAK_JWKS_PATH: Final = "/protocol/openid-connect/certs"
#: The protocols :func:`protect` fronts: two route-and-method tables over one gate.
PROTOCOLS: Final = frozenset({"a2a", "mcp"})


class _Closable(Protocol):
    async def aclose(self) -> None: ...


class ProtectedApp:
    """The protected ASGI app :func:`protect` returns.

    Every HTTP request goes through :attr:`middleware`; the ``lifespan`` scope reaches the app
    unchanged, and when the app has completed its shutdown the resources this wiring holds (JWKS
    cache, replay store) are closed, then the server is told.  :meth:`aclose` closes them directly
    (for servers run without lifespan).  :meth:`security_schemes` gives the Agent Card entries that
    declare what this gate accepts.
    """

    def __init__(
        self,
        middleware: AuthGate[Any],
        resources: Iterable[_Closable],
        security: CardSecurity | None = None,
    ) -> None:
        self.middleware = middleware
        self._resources = tuple(resources)
        self._security = security if security is not None else CardSecurity(issuer=None)
        self._closed = False

    def security_schemes(self) -> dict[str, Any]:
        """The A2A 1.0 Agent Card's ``securitySchemes`` and ``securityRequirements`` for this gate.

        An ``openIdConnectSecurityScheme`` (named ``oidc``) pointing at the realm's OpenID discovery
        document when bearer tokens are accepted, and an ``httpAuthSecurityScheme`` with scheme
        ``Signature`` (named ``httpSignature``) when signed requests are; each is one alternative
        requirement.  Merge the result into the card (``{**card, **app.security_schemes()}``).
        """
        return self._security.card_fields()

    def __repr__(self) -> str:
        return f"ProtectedApp(authenticators={len(self.middleware.authenticators)}, resources={len(self._resources)})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.middleware(scope, receive, send)
            return

        async def send_after_closing(message: Message) -> None:
            if message["type"] == "lifespan.shutdown.complete":
                await self.aclose()
            await send(message)

        await self.middleware(scope, receive, send_after_closing)

    async def aclose(self) -> None:
        """Close what this wiring holds (once; later calls do nothing).  A resource that fails to
        close is logged and the others are still closed."""
        if self._closed:
            return
        self._closed = True
        for resource in self._resources:
            try:
                await resource.aclose()
            except Exception as exc:
                _log.warning("closing %s failed: %s", type(resource).__name__, type(exc).__name__)


def protect(
    app: ASGIApp,
    *,
    policy: Policy | str | Path,
    realm: str | None = None,
    audience: str | Collection[str] | None = None,
    azp_allowlist: Collection[str] | None = None,
    token_algorithms: Collection[str] = ("RS256",),
    public_origin: str | None = None,
    replay_store: ReplayStore | None = None,
    did_keys: KeyLookup | None = None,
    signature_algorithms: Collection[str] = REGISTERED_ALGORITHMS,
    signature_tag: str | None = None,
    web_agents: AgentKeys | None = None,
    tap_registry: str | None = None,
    tap_keys: AgentKeys | None = None,
    agent_max_age: float = 60.0,
    egress: EgressPolicy | None = None,
    protocol: str = "a2a",
    routes: A2ARoutes | McpRoutes | None = None,
    resource: str | None = None,
    scopes_supported: Collection[str] = (),
    limits: Limits | None = None,
    public_paths: Collection[str] | None = None,
    token_verifier: AccessTokenVerifier | None = None,
) -> ProtectedApp:
    """Protect ``app`` (an a2a-sdk or MCP SDK Starlette app, or any ASGI app) with tokens, signatures
    and policy.

    ``policy`` is a :class:`Policy` or the path of a policy file.  ``protocol`` is ``"a2a"`` (A2A
    JSON-RPC and REST, docs/a2a.md) or ``"mcp"`` (an MCP streamable-HTTP endpoint, docs/mcp.md);
    ``routes`` where that protocol answers (:class:`A2ARoutes` or :class:`McpRoutes`; default: the
    protocol's defaults), ``limits`` what a request may cost (:class:`Limits`), ``public_paths`` what
    ``GET``/``HEAD`` may reach without credentials (default: the protocol's own, e.g. the agent card).

    Tokens: Keycloak bearer tokens are accepted when ``realm`` (the realm URL, which is the tokens'
    ``iss``) is given, with ``audience`` and/or an ``azp_allowlist`` (``token_verifier`` replaces the
    verifier built from them, e.g. one over a static key set in development).  ``resource`` (the URL
    clients call) makes the server an RFC 9728 protected resource: its metadata is served publicly
    (``authorization_servers`` = the realm, ``scopes_supported``), every 401 names it in
    ``resource_metadata``, and, when no ``audience`` is given, tokens must name ``resource`` as their
    audience (RFC 8707).  MCP requires ``resource``.

    Signatures: DID-signed requests (RFC 9421) are accepted when ``public_origin`` (how clients
    address this server: the signatures' audience) is given, with the ``replay_store`` every replica
    shares (Redis in a deployment); keys come from ``did_keys``, by default the signer's DID resolved
    for ``authentication``.  ``signature_tag`` requires that RFC 9421 ``tag``.  Open-web agents
    (docs/webbotauth.md) are accepted beside DID signers when ``web_agents`` and/or ``tap_registry`` +
    ``tap_keys`` are given, ``agent_max_age`` bounding how long after ``created`` a signature is
    accepted; their roles come from the policy file's ``agent_roles``.  ``egress`` is the outbound
    policy for JWKS and did:web fetches.
    """
    if protocol not in PROTOCOLS:
        raise InvalidInput("protocol must be a2a or mcp", code="bad_config", option="protocol")
    if realm is None and public_origin is None and token_verifier is None:
        raise InvalidInput(
            "protect needs realm (tokens) and/or public_origin (signatures)", code="bad_config"
        )
    if protocol == "mcp" and resource is None:
        raise InvalidInput("an MCP server needs resource, the URL clients call", code="bad_config")
    loaded = policy if isinstance(policy, Policy) else Policy.from_file(policy)
    authenticators: list[Authenticator] = []
    resources: list[_Closable] = []
    challenge_realm = "a2a" if protocol == "a2a" else "mcp"
    issuer: str | None = None
    if realm is not None:
        issuer = realm.rstrip("/")
        target = parse_target_uri(issuer)
        if target.query is not None or target.path == "/":
            raise InvalidInput("realm is the realm URL, e.g. https://kc/realms/<name>", code="bad_config")
        challenge_realm = issuer.rsplit("/", 1)[-1]
    if token_verifier is not None:
        if audience is not None or azp_allowlist is not None:
            raise InvalidInput("give audience/azp_allowlist to the token_verifier itself", code="bad_config")
        authenticators.append(BearerAuthenticator(token_verifier))
    elif issuer is not None:
        jwks = JwksCache(
            jwks_uri=issuer + KEYCLOAK_JWKS_PATH,
            algorithms=frozenset(token_algorithms),
            egress=egress,
        )
        resources.append(jwks)
        if audience is None and azp_allowlist is None and resource is not None:
            audience = resource  # RFC 8707: the token must have been issued for this resource
        verifier = AccessTokenVerifier(
            issuer=issuer,
            audience=audience,
            azp_allowlist=azp_allowlist,
            jwks=jwks,
            algorithms=frozenset(token_algorithms),
        )
        authenticators.append(BearerAuthenticator(verifier))
    elif audience is not None or azp_allowlist is not None:
        raise InvalidInput("audience and azp_allowlist need realm", code="bad_config")
    if public_origin is not None:
        if replay_store is None:
            raise InvalidInput("DID signatures need the shared replay_store", code="bad_config")
        keys = did_keys if did_keys is not None else ResolverKeyLookup(DIDResolver(egress=egress))
        signatures = HttpSignatureVerifier(
            keys=keys,
            replay_store=replay_store,
            origins=[public_origin],
            algorithms=signature_algorithms,
            tag=signature_tag,
        )
        did_scheme = DidSignatureAuthenticator(signatures, public_origin=public_origin)
        if web_agents is not None or tap_keys is not None:
            agents = WebSignatureVerifier(
                agents=web_agents,
                tap_registry=tap_registry,
                tap_keys=tap_keys,
                replay_store=replay_store,
                origins=[public_origin],
                algorithms=signature_algorithms,
                max_age=agent_max_age,
            )
            authenticators.append(
                AgentSignatureAuthenticator(
                    agents, public_origin=public_origin, did=did_scheme, grants=loaded.agent_grant
                )
            )
        else:
            authenticators.append(did_scheme)
        resources.append(replay_store)
    elif replay_store is not None or did_keys is not None or web_agents is not None or tap_keys is not None:
        raise InvalidInput("replay_store, did_keys and agent keys need public_origin", code="bad_config")
    metadata = None
    if resource is not None:
        if issuer is None:
            raise InvalidInput("resource metadata names the realm: give realm", code="bad_config")
        metadata = ResourceServer.of(
            resource,
            [issuer],
            scopes_supported=scopes_supported,
            token_algorithms=token_algorithms,
        )
    # One gate, two route tables: the gate checks that ``routes`` is the protocol's own.
    gate: type[AuthGate[Any]] = McpAuthMiddleware if protocol == "mcp" else A2AAuthMiddleware
    middleware = gate(
        app,
        authenticators=authenticators,
        policy=loaded,
        routes=routes,
        limits=limits,
        public_paths=public_paths,
        realm=challenge_realm,
        resource=metadata,
    )
    security = CardSecurity(
        issuer=token_verifier.issuer.rstrip("/") if token_verifier is not None else issuer,
        scopes=tuple(scopes_supported),
        signatures=public_origin is not None,
        web_agents=web_agents is not None or tap_keys is not None,
    )
    return ProtectedApp(middleware, resources, security)
