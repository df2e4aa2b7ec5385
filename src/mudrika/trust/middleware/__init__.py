"""The pure-ASGI middleware: authenticate every call, authorise it by policy, then forward it.

One pipeline, two protocols.  :class:`AuthGate` is the protocol-neutral gate (``_gate``): cheap
refusals before the body, a capped and timed body read, authentication by one of its
:class:`Authenticator` schemes (``_auth`` the types; ``_bearer`` Keycloak access tokens;
``_did`` RFC 9421 DID-signed requests; ``_webagent`` open-web agents, Web Bot Auth and Visa TAP), the
policy file's grants, the policy, single-use claims after authorisation, then the app.  Its
protocols are route-and-method tables over it: :class:`A2AAuthMiddleware` (``_a2a``: A2A JSON-RPC and
REST, :class:`A2ARoutes`) and :class:`McpAuthMiddleware` (``_mcp``: an MCP streamable-HTTP endpoint,
:class:`McpRoutes`).  :class:`Limits` (``_limits``) caps what a request may cost;
:class:`ResourceServer` (``_resource``) makes the server an RFC 9728 protected resource.
``_http`` is the raw ASGI plumbing, ``_protect`` the two-line wiring :func:`protect` (realm, audience,
policy file; optionally signatures with a shared replay store, closed at ASGI lifespan shutdown).
"""

from __future__ import annotations

from mudrika.trust.middleware._a2a import DEFAULT_PUBLIC_PATHS, ERROR_PROFILES, A2AAuthMiddleware, A2ARoutes
from mudrika.trust.middleware._auth import (
    Authenticated,
    AuthenticatedUser,
    Authenticator,
    AuthRequest,
    Credentials,
)
from mudrika.trust.middleware._bearer import BearerAuthenticator
from mudrika.trust.middleware._did import (
    SCHEME,
    DidSignatureAuthenticator,
    SignedRequestAuth,
    aauthenticate_signed_request,
    authenticate_signed_request,
    has_signature,
    principal_for,
)
from mudrika.trust.middleware._gate import (
    AUTH_KEY,
    DECISIONS_KEY,
    EXTENSIONS_KEY,
    PRINCIPAL_KEY,
    TENANTS_KEY,
    AuthGate,
)
from mudrika.trust.middleware._limits import Limits
from mudrika.trust.middleware._mcp import McpAuthMiddleware, McpRoutes
from mudrika.trust.middleware._protect import KEYCLOAK_JWKS_PATH, PROTOCOLS, ProtectedApp, protect
from mudrika.trust.middleware._quota import ClaimQuota
from mudrika.trust.middleware._resource import ResourceServer
from mudrika.trust.middleware._webagent import AgentGrants, AgentSignatureAuthenticator, agent_principal

__all__ = [
    "AUTH_KEY",
    "DECISIONS_KEY",
    "DEFAULT_PUBLIC_PATHS",
    "ERROR_PROFILES",
    "EXTENSIONS_KEY",
    "KEYCLOAK_JWKS_PATH",
    "PRINCIPAL_KEY",
    "PROTOCOLS",
    "SCHEME",
    "TENANTS_KEY",
    "A2AAuthMiddleware",
    "A2ARoutes",
    "AgentGrants",
    "AgentSignatureAuthenticator",
    "AuthGate",
    "AuthRequest",
    "Authenticated",
    "AuthenticatedUser",
    "Authenticator",
    "BearerAuthenticator",
    "ClaimQuota",
    "Credentials",
    "DidSignatureAuthenticator",
    "Limits",
    "McpAuthMiddleware",
    "McpRoutes",
    "ProtectedApp",
    "ResourceServer",
    "SignedRequestAuth",
    "aauthenticate_signed_request",
    "agent_principal",
    "authenticate_signed_request",
    "has_signature",
    "principal_for",
    "protect",
]
