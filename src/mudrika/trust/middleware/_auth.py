"""Authentication for the middleware: what an authenticator sees, what it returns, how it says "not mine".

Why its own module: the gate (:mod:`._gate`), the bearer-token scheme (:mod:`._bearer`), the DID and
open-web signature schemes and the MCP SDK adapter all speak these types, and none of them should
need the others to do so.  Nothing here decides whether a call is allowed.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Final, Protocol

from mudrika.trust.middleware._http import Scope, header_values
from mudrika.trust.policy import Principal

__all__ = [
    "AuthFailure",
    "AuthRequest",
    "Authenticated",
    "AuthenticatedUser",
    "Authenticator",
    "Credentials",
    "client_cert",
    "credential_header_union",
    "declared_headers",
    "scheme_of",
]


@dataclass(frozen=True, slots=True)
class AuthRequest:
    """What an authenticator may look at: the request line, all headers and the buffered body."""

    method: str
    path: str
    query_string: bytes
    headers: Sequence[tuple[bytes, bytes]]
    body: bytes
    #: The path exactly as the client sent it (ASGI ``raw_path``), percent-encoding untouched; schemes
    #: that sign the request URL (RFC 9421 ``@target-uri``) need the bytes, not the decoded ``path``.
    raw_path: bytes | None = None
    #: True when the caller (the middleware) claims single-use values itself after authorisation: an
    #: authenticator then returns them in :attr:`Authenticated.pending_claim` instead of claiming.
    defer_claims: bool = False
    #: DER of the TLS client certificate, when the server exposes it (ASGI TLS extension); RFC 8705
    #: certificate-bound tokens are checked against it.
    client_cert: bytes | None = None
    #: What the deciding authenticator's ``precheck`` computed from the headers before the body was
    #: read, handed back with the body (each authenticator recognises only its own result).
    precheck: object = None

    def header_values(self, name: str) -> list[str]:
        return header_values(self.headers, name.lower().encode("latin-1"))


@dataclass(frozen=True, slots=True)
class AuthenticatedUser:
    """Starlette's ``BaseUser`` interface, duck-typed (so ``trust`` needs no Starlette at runtime)."""

    principal: Principal

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.principal.subject

    @property
    def identity(self) -> str:
        return self.principal.subject


@dataclass(frozen=True, slots=True)
class Credentials(Principal):
    """The principal as ``scope["auth"]``: a :class:`~mudrika.trust.policy.Principal` that also has
    Starlette's ``AuthCredentials`` interface (``scopes``: the principal's permissions).

    Why a Principal: a2a-sdk 1.3 copies ``scope["auth"]`` into ``ServerCallContext.state["auth"]``,
    so an agent finds the policy principal (roles, tenants, DID) exactly there, as
    ``isinstance(context.call_context.state["auth"], Principal)``, and can hand it to the policy
    (e.g. ``Policy.decide_execution``); Starlette's ``request.auth.scopes`` keeps working.
    """

    scopes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, principal: Principal) -> Credentials:
        values = {name: getattr(principal, name) for name in _PRINCIPAL_FIELDS}
        return cls(**values, scopes=sorted(principal.permissions))


#: The fields a :class:`Principal` is built from, listed once (``fields()`` is dear per request).
_PRINCIPAL_FIELDS: Final = tuple(item.name for item in fields(Principal) if item.init)


@dataclass(frozen=True, slots=True)
class Authenticated:
    """A successful authentication: who, by which scheme, and a log label for the credential.

    ``user`` and ``credentials`` (the Starlette-style scope entries) are derived once, here, so an
    authenticator that reuses an ``Authenticated`` for a cached credential costs nothing per request.
    """

    principal: Principal
    scheme: str
    credential_id: str
    claims: Mapping[str, Any] = field(default_factory=dict)
    #: Single-use values still to claim (RFC 9421 nonce, DPoP ``jti``): the middleware awaits it only
    #: after the policy allowed the call.  Raises ``ReplayError`` / ``UnavailableError``.
    pending_claim: Callable[[], Awaitable[None]] | None = field(default=None, repr=False, compare=False)
    user: AuthenticatedUser = field(init=False, repr=False, compare=False)
    credentials: Credentials = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "user", AuthenticatedUser(self.principal))
        object.__setattr__(self, "credentials", Credentials.of(self.principal))


class Authenticator(Protocol):
    """One authentication scheme.

    Return None when this scheme's credentials are absent (the next authenticator is tried); return
    :class:`Authenticated` when they verify; raise an error from :mod:`mudrika.trust.jsonrpc` (or any
    ``VerificationError`` / ``InvalidInput`` / ``IdpUnavailable``) when they are present but bad —
    a bad credential is never "absent".

    An authenticator may declare ``credential_headers`` (lower-case header names whose absence means
    "no credentials of this scheme"); when every configured authenticator does, a request carrying
    none of them is answered -32009 before its body is read.
    """

    async def authenticate(self, request: AuthRequest) -> Authenticated | None: ...


class AuthFailure(Exception):
    """An authentication failure and the scheme it happened in (so the answer can name it)."""

    def __init__(self, scheme: str | None, cause: BaseException) -> None:
        super().__init__(scheme)
        self.scheme = scheme
        self.cause = cause


def scheme_of(authenticator: Any, headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    """The scheme an authenticator checked: ``DPoP`` when a Bearer authenticator read a DPoP token."""
    if authenticator is None:
        return None
    scheme = getattr(authenticator, "scheme", None)
    if not isinstance(scheme, str):
        return None
    if scheme == "Bearer":
        values = header_values(headers, b"authorization")
        if len(values) == 1 and values[0].strip()[:5].lower() == "dpop ":
            return "DPoP"
    return scheme


def declared_headers(authenticator: Authenticator) -> frozenset[bytes] | None:
    """An authenticator's ``credential_headers`` as ASGI spells header names (lower-case bytes); None
    when it does not declare them (then only its ``authenticate`` can tell "no credentials")."""
    declared = getattr(authenticator, "credential_headers", None)
    if declared is None:
        return None
    return frozenset(name.lower().encode("latin-1") for name in declared)


def credential_header_union(
    declared: Sequence[tuple[Authenticator, frozenset[bytes] | None]],
) -> frozenset[bytes] | None:
    """The union of the authenticators' credential headers; None when one does not declare them
    (then only reading the body and asking every authenticator can tell "no credentials")."""
    names: set[bytes] = set()
    for _, headers in declared:
        if headers is None:
            return None
        names.update(headers)
    return frozenset(names)


def client_cert(scope: Scope) -> bytes | None:
    """DER of the client's leaf certificate from the ASGI TLS extension, if the server provides it."""
    tls = (scope.get("extensions") or {}).get("tls")
    if not isinstance(tls, Mapping):
        return None
    chain = tls.get("client_cert_chain")
    if not isinstance(chain, Sequence) or not chain or not isinstance(chain[0], str):
        return None
    try:
        return ssl.PEM_cert_to_DER_cert(chain[0])
    except ValueError:
        return None
