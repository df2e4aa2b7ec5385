"""mudrika's verified caller in the MCP SDK's terms, and its token verifier behind the SDK's own auth.

Why: a tool decides what to do for *whom*; the MCP SDK tells a tool who called through
``get_access_token()`` (an ``AccessToken``) and ``ctx.request_context.request.scope["user"]``.  When
mudrika's middleware guards the server, :func:`sdk_identity` builds those from the principal the
middleware verified, so a tool reads the same caller whichever layer authenticated it; the
middleware's own ``scope["state"]["mudrika.principal"]`` (roles, tenants, DID) stays beside them.
:class:`McpTokenVerifier` is the other way round, for servers that keep the SDK's resource-server
support: mudrika's :class:`~mudrika.trust.keycloak.AccessTokenVerifier` behind the SDK's
``TokenVerifier`` protocol.

``AccessToken.token`` holds the credential's log label (a hash), never the credential: a tool needs to
know who called, and an ``AccessToken`` that a tool logs or returns must not leak a bearer token.

The MCP SDK is optional: it is imported only when one of these is used.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mudrika.errors import InvalidInput, UnavailableError, VerificationError
from mudrika.net.logs import log_value
from mudrika.trust.keycloak.tokens import AccessTokenVerifier

if TYPE_CHECKING:
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken
    from starlette.authentication import AuthCredentials

    from mudrika.trust.middleware import Authenticated

__all__ = ["McpTokenVerifier", "sdk_identity"]

_log = logging.getLogger("mudrika.trust.mcp")


def _access_token(
    *,
    label: str,
    client_id: str,
    subject: str,
    scopes: list[str],
    resource: str | None,
    claims: dict[str, Any],
    expires_at: int | None,
) -> AccessToken:
    from mcp.server.auth.provider import AccessToken

    return AccessToken(
        token=label,
        client_id=client_id,
        scopes=scopes,
        expires_at=expires_at,
        resource=resource,
        subject=subject,
        claims=claims,
    )


def sdk_identity(auth: Authenticated, *, resource: str | None) -> tuple[AuthenticatedUser, AuthCredentials]:
    """``scope["user"]`` and ``scope["auth"]`` as the MCP SDK reads them, for a caller the middleware
    verified (a token holder, a DID signer or an open-web agent).

    ``client_id`` is the token's ``azp`` (else its subject), or the signer's DID or agent; ``claims``
    carry ``iss`` (the token issuer, or the signing scheme), so the SDK binds each session to the
    (client, issuer, subject) that opened it; ``scopes`` are the principal's permissions.
    """
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from starlette.authentication import AuthCredentials

    principal = auth.principal
    claims = auth.claims
    issuer = claims.get("iss")
    azp = claims.get("azp")
    expires = claims.get("exp")
    client_id = azp if isinstance(azp, str) and azp else (principal.did or principal.subject)
    scopes = sorted(principal.permissions)
    token = _access_token(
        label=auth.credential_id,
        client_id=client_id,
        subject=principal.subject,
        scopes=scopes,
        resource=resource,
        claims={
            "iss": issuer if isinstance(issuer, str) else auth.scheme,
            "roles": sorted(principal.roles),
            "tenants": sorted(principal.tenants),
            "did": principal.did,
        },
        expires_at=expires if type(expires) is int else None,
    )
    return AuthenticatedUser(token), AuthCredentials(scopes)


class McpTokenVerifier:
    """The MCP SDK's ``TokenVerifier`` over mudrika's :class:`AccessTokenVerifier`.

    ``verifier`` carries the trust (issuer, audience, keys, algorithms); ``resource`` is this
    server's URL, reported as the token's resource only because ``verifier`` checked the audience.
    A token that fails verification, or a key set that cannot be fetched, gives None: the SDK answers
    401 (fail closed); the reason goes to the ``mudrika.trust.mcp`` logger, never the token.
    """

    def __init__(self, verifier: AccessTokenVerifier, *, resource: str) -> None:
        if not isinstance(verifier, AccessTokenVerifier):
            raise InvalidInput("verifier must be an AccessTokenVerifier", code="bad_config")
        self._verifier = verifier
        self._resource = resource

    def __repr__(self) -> str:
        return f"McpTokenVerifier(resource={self._resource!r})"

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            verified = await self._verifier.averify(token)
        except UnavailableError as exc:
            _log.warning("verification unavailable: %s", log_value(exc.code, limit=64))
            return None
        except (VerificationError, InvalidInput) as exc:
            _log.warning("credential refused: %s", log_value(exc.code, limit=64))
            return None
        principal = verified.principal
        claims = verified.claims
        azp = claims.get("azp")
        expires = claims.get("exp")
        issuer = claims.get("iss")
        return _access_token(
            label=verified.token_id,
            client_id=azp if isinstance(azp, str) and azp else principal.subject,
            subject=principal.subject,
            scopes=sorted(principal.permissions),
            resource=self._resource,
            claims={"iss": issuer, "roles": sorted(principal.roles)},
            expires_at=expires if type(expires) is int else None,
        )
