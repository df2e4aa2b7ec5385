"""The DID-signed request scheme for the A2A middleware: RFC 9421 signature in, policy principal out.

Why a separate module from :mod:`mudrika.trust.httpsig`: the verifier knows HTTP messages; the
middleware knows authenticators and principals.  This module is the seam:
:class:`DidSignatureAuthenticator` is the middleware's second :class:`~mudrika.trust.middleware.Authenticator`
beside Bearer, and :func:`authenticate_signed_request` does the same for a plain method/URL/headers/body.
Both verify into a :class:`~mudrika.trust.httpsig.VerifiedRequest` and hand the policy a
:class:`~mudrika.trust.policy.Principal` whose subject and ``did`` are the signer's DID.

Errors are the verifier's typed errors; the middleware answers them through
:func:`mudrika.trust.jsonrpc.refusal_for` with the scheme named (never "Invalid token": no token was
sent): no signature headers -> AUTHENTICATION_REQUIRED (-32009 in the ``bindu`` profile), malformed /
missing parameter / untrusted key / created in the future -> INVALID_SIGNED_REQUEST (-32010), a
replayed nonce -> REPLAYED_REQUEST (-32010), a request signed for another origin -> WRONG_AUDIENCE
(``wrong_audience``, -32010), expired -> SIGNATURE_EXPIRED (-32011), bad signature or body not
matching the signed digest -> INVALID_SIGNATURE (-32012).  A replay store or resolver that is down
raises ``UnavailableError``: HTTP 503, fail closed.

Roles: the middleware gives a DID signer the roles and tenants of the policy file's ``did_roles``
(:meth:`~mudrika.trust.policy.Policy.did_grant`) without any code; ``roles_for`` (e.g. an agent
registry) is optional and its roles are added to the policy's.

Inside the middleware (``AuthRequest.defer_claims``) the nonce is not claimed here: the authenticator
returns the verified signer with a pending claim, and the middleware claims only after its policy
allowed the call, so a signer with no roles never consumes replay-store capacity.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from mudrika.errors import BindingError, InvalidInput, SignatureError
from mudrika.trust.httpsig import HttpSignatureVerifier, PreChecked, VerifiedRequest, parse_target_uri
from mudrika.trust.middleware._auth import Authenticated, AuthRequest
from mudrika.trust.policy import Principal

SCHEME: Final = "http-message-signature"
RolesFor = Callable[[str], Iterable[str]]
_MAX_ROLES: Final = 256
# RFC 3986 pchar and "/": characters a path carries unencoded (quote never encodes A-Z a-z 0-9 _ . - ~).
_PATH_SAFE: Final = "/!$&'()*+,;=:@"


@dataclass(frozen=True, slots=True)
class SignedRequestAuth:
    """The outcome of a verified DID-signed request: the policy principal and what was verified."""

    principal: Principal
    request: VerifiedRequest

    @property
    def body(self) -> bytes:
        """The request body that was read and checked against the signed digest."""
        return self.request.body


def principal_for(verified: VerifiedRequest, *, roles_for: RolesFor | None = None) -> Principal:
    """The policy principal for a verified request: subject and ``did`` are the signer's DID.

    ``roles_for`` maps a DID to the roles this server grants it (e.g. from an agent registry); without
    it the principal has no roles of its own (behind :class:`~mudrika.trust.middleware.A2AAuthMiddleware`
    the policy's ``did_roles`` still apply; elsewhere use :meth:`Policy.principal_for_did`).
    """
    roles: frozenset[str] = frozenset()
    if roles_for is not None:
        roles = frozenset(roles_for(verified.did))
        if len(roles) > _MAX_ROLES or not all(isinstance(role, str) for role in roles):
            raise InvalidInput("roles_for must return at most 256 role names", code="httpsig_config")
    return Principal(
        subject=verified.did,
        roles=roles,
        did=verified.did,
        identity_provider="custom",
        token_claims={
            "scheme": SCHEME,
            "keyid": verified.keyid,
            "alg": verified.algorithm,
            "created": verified.created,
            "expires": verified.expires,
        },
    )


def has_signature(headers: Iterable[tuple[bytes, bytes]] | Mapping[str, str]) -> bool:
    """Whether a request carries this scheme (a ``Signature-Input`` or ``Signature`` field).

    The middleware uses it to choose between Bearer and this scheme; a request with neither gets -32009.
    """
    names: Iterable[str | bytes] = headers.keys() if isinstance(headers, Mapping) else (k for k, _ in headers)
    for name in names:
        lowered = name.lower()
        if lowered in (b"signature-input", b"signature", "signature-input", "signature"):
            return True
    return False


def authenticate_signed_request(
    method: str,
    url: str,
    headers: Any,
    body: bytes | Iterable[bytes],
    *,
    verifier: HttpSignatureVerifier,
    roles_for: RolesFor | None = None,
    now: float | None = None,
) -> SignedRequestAuth:
    """Verify a DID-signed request and build its principal (sync); raises the verifier's typed errors."""
    verified = verifier.verify(method, url, headers, body, now=now)
    return SignedRequestAuth(principal_for(verified, roles_for=roles_for), verified)


async def aauthenticate_signed_request(
    method: str,
    url: str,
    headers: Any,
    body: bytes | AsyncIterable[bytes],
    *,
    verifier: HttpSignatureVerifier,
    roles_for: RolesFor | None = None,
    now: float | None = None,
) -> SignedRequestAuth:
    """Async form of :func:`authenticate_signed_request` (async key lookup, streamed body, async claim)."""
    verified = await verifier.averify(method, url, headers, body, now=now)
    return SignedRequestAuth(principal_for(verified, roles_for=roles_for), verified)


class DidSignatureAuthenticator:
    """The middleware's second scheme beside Bearer (:class:`mudrika.trust.middleware.Authenticator`).

    Returns ``None`` when the request carries no ``Signature``/``Signature-Input`` (so the next scheme is
    tried, and no scheme at all gives -32009); otherwise verifies with ``verifier`` and returns the
    :class:`~mudrika.trust.middleware.Authenticated` principal, or raises the verifier's typed error.

    ``public_origin`` (e.g. ``"https://agent.example"``) is how clients address this server, and
    ``path_prefix`` the path it is mounted under (ASGI ``root_path``), so the URL the signature covers
    is rebuilt as clients sent it, whatever the proxy in between did to scheme and ``Host``.  The
    middleware hands authenticators the decoded route path, which is re-encoded here (RFC 3986 pchar
    left as is); a client that percent-encoded a character that needs no encoding fails closed.
    """

    scheme: Final = SCHEME
    credential_headers: Final = frozenset({"signature", "signature-input"})

    def __init__(
        self,
        verifier: HttpSignatureVerifier,
        *,
        public_origin: str,
        path_prefix: str = "",
        roles_for: RolesFor | None = None,
    ) -> None:
        target = parse_target_uri(public_origin)
        if target.path != "/" or target.query is not None:
            raise InvalidInput("public_origin has no path or query", code="httpsig_config")
        if path_prefix and (not path_prefix.startswith("/") or path_prefix.endswith("/")):
            raise InvalidInput("path_prefix must start with '/' and not end with it", code="httpsig_config")
        self._verifier = verifier
        self._origin = target.origin
        self._prefix = path_prefix
        self._roles_for = roles_for

    def __repr__(self) -> str:
        return f"DidSignatureAuthenticator(public_origin={self._origin!r}, path_prefix={self._prefix!r})"

    def url_for(self, path: str, query_string: bytes, raw_path: bytes | None = None) -> str:
        """The absolute URL the client signed: public origin, mount prefix, encoded path, raw query.

        The raw path bytes are used when the server provides them, so a client that percent-encoded a
        character that needed none still matches what it signed.
        """
        encoded = raw_path.decode("latin-1") if raw_path else quote(path, safe=_PATH_SAFE)
        url = self._origin + self._prefix + encoded
        if query_string:
            url += "?" + query_string.decode("latin-1")
        return url

    async def precheck(self, request: AuthRequest) -> PreChecked | None:
        """Refuse, before the body is read, a signature that fails on its headers alone (malformed,
        expired, for another origin, an algorithm not allowed); the middleware calls this first and
        hands the result back in ``AuthRequest.precheck`` so the headers are parsed once."""
        if not has_signature(request.headers):
            return None
        url = self.url_for(request.path, request.query_string, request.raw_path)
        return self._verifier.precheck(request.method, url, request.headers)

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        prechecked = request.precheck if isinstance(request.precheck, PreChecked) else None
        if prechecked is not None:
            url = prechecked.url  # the precheck found the signature and rebuilt the URL already
        elif has_signature(request.headers):
            url = self.url_for(request.path, request.query_string, request.raw_path)
        else:
            return None
        try:
            return await self._authenticate(request, url, prechecked)
        except SignatureError as exc:
            self._raise_if_addressed_elsewhere(request, exc)
            raise

    def _raise_if_addressed_elsewhere(self, request: AuthRequest, exc: SignatureError) -> None:
        """Name a signature that failed because the request was addressed to another origin.

        The signed ``@target-uri``/``@authority`` is not sent, only the ``Host`` the client used; a
        signature that does not verify over our public origin while ``Host`` names another origin is
        ``wrong_audience`` (docs/replay.md), not a forgery.  Only the diagnosis changes: the request
        is refused either way.  (Behind a proxy that rewrites ``Host``, such failures stay
        ``bad_signature``.)
        """
        hosts = request.header_values("host")
        if len(hosts) != 1 or exc.code != "bad_signature":
            return
        scheme = self._origin.partition("://")[0]
        try:
            addressed = parse_target_uri(f"{scheme}://{hosts[0].strip()}/").origin
        except InvalidInput:
            return
        if addressed != self._origin:
            raise BindingError("request addressed to another origin", code="wrong_audience") from exc

    async def _authenticate(
        self, request: AuthRequest, url: str, prechecked: PreChecked | None
    ) -> Authenticated:
        pending_claim: Callable[[], Awaitable[None]] | None = None
        if request.defer_claims:
            pending = await self._verifier.aprepare(
                request.method, url, request.headers, request.body, prechecked=prechecked
            )
            verified = pending.unclaimed

            async def claim() -> None:
                await pending.claim()

            pending_claim = claim
        else:
            verified = await self._verifier.averify(request.method, url, request.headers, request.body)
        principal = principal_for(verified, roles_for=self._roles_for)
        label = hashlib.sha256(f"{verified.did}\x00{verified.nonce}".encode()).hexdigest()[:16]
        return Authenticated(
            principal=principal,
            scheme=SCHEME,
            credential_id=f"httpsig:{label}",
            claims=dict(principal.token_claims or {}),
            pending_claim=pending_claim,
        )
