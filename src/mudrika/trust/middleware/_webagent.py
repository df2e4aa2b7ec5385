"""Open-web agents for the A2A middleware: Web Bot Auth and Visa TAP signatures in, principal out.

Why one authenticator in front of the DID one: both schemes arrive in the same two fields
(``Signature``, ``Signature-Input``), and the middleware lets the first authenticator whose fields
are present decide.  :class:`AgentSignatureAuthenticator` reads the signature's ``tag`` (cheaply, no
verification) and hands a DID-profile request to the wrapped
:class:`~mudrika.trust.middleware.DidSignatureAuthenticator` unchanged, so DID callers see exactly
today's behaviour, prechecks included.

The principal of a verified agent: ``subject`` is ``"<profile>:<agent>"`` (the directory origin for
Web Bot Auth, ``<registry JWKS>#<keyid>`` for TAP), roles and tenants come from the policy file's
``agent_roles`` (``grants``: :meth:`~mudrika.trust.policy.Policy.agent_grant`, wired by
:func:`~mudrika.trust.middleware.protect`), and ``token_claims`` name the profile, the agent, the key
thumbprint and the algorithm.  Refusals are the verifier's typed errors, answered through the same
error profiles as DID signatures (scheme ``http-message-signature``).  The nonce is returned as a
pending claim: the middleware claims it only after the policy allowed the call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import quote

from mudrika.errors import InvalidInput
from mudrika.trust.httpsig import (
    PreChecked,
    VerifiedAgentRequest,
    WebPreChecked,
    WebSignatureVerifier,
    parse_target_uri,
    web_profile_of,
)
from mudrika.trust.middleware._auth import Authenticated, AuthRequest
from mudrika.trust.middleware._did import _PATH_SAFE, SCHEME, DidSignatureAuthenticator, has_signature
from mudrika.trust.policy import DidGrant, Principal

__all__ = ["AgentGrants", "AgentSignatureAuthenticator", "agent_principal"]

AgentGrants = Callable[[str, str, str], DidGrant | None]
"""``(profile, agent, key_urn) -> grant``: :meth:`mudrika.trust.policy.Policy.agent_grant`."""


def agent_principal(verified: VerifiedAgentRequest, grant: DidGrant | None) -> Principal:
    """The policy principal for a verified open-web agent (no DID: ``did`` stays None)."""
    return Principal(
        subject=f"{verified.profile}:{verified.agent}",
        roles=grant.roles if grant is not None else frozenset(),
        tenants=grant.tenants if grant is not None else frozenset(),
        identity_provider="custom",
        token_claims={
            "scheme": SCHEME,
            "profile": verified.profile,
            "agent": verified.agent,
            "identifier": verified.identifier,
            "keyid": verified.keyid,
            "thumbprint": verified.thumbprint,
            "alg": verified.algorithm,
            "created": verified.created,
            "expires": verified.expires,
        },
    )


class AgentSignatureAuthenticator:
    """Web Bot Auth and TAP requests (verified by ``verifier``); DID-profile requests go to ``did``.

    ``public_origin`` and ``path_prefix`` rebuild the URL clients signed, as for DID signatures.
    Without ``did`` a request whose tag is no open-web profile is refused (``wrong_tag``).
    """

    scheme: Final = SCHEME
    credential_headers: Final = frozenset({"signature", "signature-input"})

    def __init__(
        self,
        verifier: WebSignatureVerifier,
        *,
        public_origin: str,
        path_prefix: str = "",
        did: DidSignatureAuthenticator | None = None,
        grants: AgentGrants | None = None,
    ) -> None:
        target = parse_target_uri(public_origin)
        if target.path != "/" or target.query is not None:
            raise InvalidInput("public_origin has no path or query", code="httpsig_config")
        if path_prefix and (not path_prefix.startswith("/") or path_prefix.endswith("/")):
            raise InvalidInput("path_prefix must start with '/' and not end with it", code="httpsig_config")
        self._verifier = verifier
        self._did = did
        self._grants = grants
        self._origin = target.origin
        self._prefix = path_prefix

    def __repr__(self) -> str:
        return f"AgentSignatureAuthenticator({self._verifier!r}, did={self._did is not None})"

    def _url(self, request: AuthRequest) -> str:
        """The URL the client signed, rebuilt as the DID authenticator rebuilds it (raw path bytes when
        the server gives them, else the path re-encoded with RFC 3986 pchar left as is)."""
        raw = request.raw_path
        encoded = raw.decode("latin-1") if raw else quote(request.path, safe=_PATH_SAFE)
        url = self._origin + self._prefix + encoded
        if request.query_string:
            url += "?" + request.query_string.decode("latin-1")
        return url

    async def precheck(self, request: AuthRequest) -> WebPreChecked | PreChecked | None:
        if not has_signature(request.headers):
            return None
        if web_profile_of(request.headers) is None and self._did is not None:
            return await self._did.precheck(request)
        return self._verifier.precheck(request.method, self._url(request), request.headers)

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        if not has_signature(request.headers):
            return None
        prechecked = request.precheck if isinstance(request.precheck, WebPreChecked) else None
        if prechecked is None and web_profile_of(request.headers) is None and self._did is not None:
            return await self._did.authenticate(request)
        url = prechecked.url if prechecked is not None else self._url(request)
        pending = await self._verifier.aprepare(
            request.method, url, request.headers, request.body, prechecked=prechecked
        )
        verified = pending.unclaimed
        pending_claim: Callable[[], Awaitable[None]] | None = None
        if request.defer_claims:

            async def claim() -> None:
                await pending.claim()

            pending_claim = claim
        else:
            await pending.claim()
        grant = self._grants(verified.profile, verified.agent, verified.key_urn) if self._grants else None
        principal = agent_principal(verified, grant)
        label = hashlib.sha256(f"{principal.subject}\x00{verified.nonce}".encode()).hexdigest()[:16]
        return Authenticated(
            principal=principal,
            scheme=SCHEME,
            credential_id=f"httpsig:{label}",
            claims=dict(principal.token_claims or {}),
            pending_claim=pending_claim,
        )
