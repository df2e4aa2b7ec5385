"""Keycloak as the identity provider: access-token verification, the JWKS cache and admin adapters.

* :mod:`~mudrika.trust.keycloak.tokens`: :class:`AccessTokenVerifier`, the one path by which an
  access token becomes a :class:`~mudrika.trust.policy.Principal` (issuer, audience, algorithms
  required, RFC 9068 / Keycloak claims).
* :mod:`~mudrika.trust.keycloak.jwks`: :class:`JwksCache`, the realm's signing keys with TTL,
  single-flight refresh on an unknown kid and stale-if-error.
* :mod:`~mudrika.trust.keycloak.adapters`: python-keycloak for discovery, introspection and admin
  reads (never its ``decode_token``), and a policy built from a live realm.
* :mod:`~mudrika.trust.keycloak.dpop`: sender-constrained tokens — DPoP proofs (RFC 9449) and
  certificate-bound tokens (RFC 8705).
"""

from __future__ import annotations

from mudrika.trust.keycloak.adapters import (
    TRUST_ATTRIBUTE,
    KeycloakAdapter,
    policy_from_realm,
)
from mudrika.trust.keycloak.dpop import (
    DEFAULT_DPOP_ALGORITHMS,
    DPoPVerifier,
    PendingProof,
    access_token_hash,
    certificate_thumbprint,
    check_certificate_binding,
)
from mudrika.trust.keycloak.jwks import (
    DEFAULT_MAX_JWKS_BYTES,
    DEFAULT_MAX_KEYS,
    JwksCache,
    StaticKeySet,
    parse_jwks,
)
from mudrika.trust.keycloak.tokens import (
    DEFAULT_MAX_TOKEN_BYTES,
    MAX_LEEWAY,
    AccessTokenVerifier,
    Introspector,
    VerifiedToken,
    token_id,
)

__all__ = [
    "DEFAULT_DPOP_ALGORITHMS",
    "DEFAULT_MAX_JWKS_BYTES",
    "DEFAULT_MAX_KEYS",
    "DEFAULT_MAX_TOKEN_BYTES",
    "MAX_LEEWAY",
    "TRUST_ATTRIBUTE",
    "AccessTokenVerifier",
    "DPoPVerifier",
    "Introspector",
    "JwksCache",
    "KeycloakAdapter",
    "PendingProof",
    "StaticKeySet",
    "VerifiedToken",
    "access_token_hash",
    "certificate_thumbprint",
    "check_certificate_binding",
    "parse_jwks",
    "policy_from_realm",
    "token_id",
]
