"""The pure-ASGI A2A middleware: authenticate every call, authorise it by policy, then forward it.

:class:`A2AAuthMiddleware` sits in front of an A2A server (JSON-RPC and REST bindings).  Each
request is authenticated by one of its :class:`Authenticator` schemes (:class:`BearerAuthenticator`
for Keycloak access tokens, :class:`DidSignatureAuthenticator` for RFC 9421 DID-signed requests),
then every JSON-RPC call in it is decided by the :class:`~mudrika.trust.policy.Policy`.  ``_asgi``
is the middleware, ``_did`` the DID-signature scheme, ``_http`` the raw ASGI plumbing, ``_protect``
the two-line wiring :func:`protect` (Keycloak realm + audience + policy file, optionally DID
signatures with a shared replay store, closed at ASGI lifespan shutdown), ``_webagent`` open-web
agents (Web Bot Auth, Visa TAP) in front of the DID scheme.
"""

from __future__ import annotations

from mudrika.trust.middleware._asgi import (
    AUTH_KEY,
    DECISIONS_KEY,
    DEFAULT_PUBLIC_PATHS,
    ERROR_PROFILES,
    EXTENSIONS_KEY,
    PRINCIPAL_KEY,
    TENANTS_KEY,
    A2AAuthMiddleware,
    Authenticated,
    AuthenticatedUser,
    Authenticator,
    AuthRequest,
    BearerAuthenticator,
    Credentials,
)
from mudrika.trust.middleware._did import (
    SCHEME,
    DidSignatureAuthenticator,
    SignedRequestAuth,
    aauthenticate_signed_request,
    authenticate_signed_request,
    has_signature,
    principal_for,
)
from mudrika.trust.middleware._protect import KEYCLOAK_JWKS_PATH, ProtectedApp, protect
from mudrika.trust.middleware._webagent import AgentGrants, AgentSignatureAuthenticator, agent_principal

__all__ = [
    "AUTH_KEY",
    "DECISIONS_KEY",
    "DEFAULT_PUBLIC_PATHS",
    "ERROR_PROFILES",
    "EXTENSIONS_KEY",
    "KEYCLOAK_JWKS_PATH",
    "PRINCIPAL_KEY",
    "SCHEME",
    "TENANTS_KEY",
    "A2AAuthMiddleware",
    "AgentGrants",
    "AgentSignatureAuthenticator",
    "AuthRequest",
    "Authenticated",
    "AuthenticatedUser",
    "Authenticator",
    "BearerAuthenticator",
    "Credentials",
    "DidSignatureAuthenticator",
    "ProtectedApp",
    "SignedRequestAuth",
    "aauthenticate_signed_request",
    "agent_principal",
    "authenticate_signed_request",
    "has_signature",
    "principal_for",
    "protect",
]
