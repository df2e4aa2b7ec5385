"""Pure ASGI middleware: authenticate, map the A2A call to an operation, ask the policy, or deny.

Why pure ASGI (no Starlette ``BaseHTTPMiddleware``): it must see the raw body stream to cap it,
must hand the app a replay of exactly the bytes it checked, and must not break streaming (SSE)
responses of the calls it lets through.

Refusals are spelled in the request's error profile (:mod:`mudrika.trust.jsonrpc`): ``bindu``, the
seed's -32009...-32013 (JSON-RPC 0.3 clients, no ``A2A-Version``), or ``a2a`` (A2A 1.0: codes outside
the JSON-RPC reserved range, a ``google.rpc.ErrorInfo`` in ``error.data`` naming the reason and the
scheme that failed, ``google.rpc.Status`` bodies on REST routes); ``error_profile`` fixes one.  The
codes below are the ``bindu`` ones.

Per HTTP request, in this order:

1. Non-HTTP scopes (``lifespan``, ``websocket``) pass through untouched.  ``GET``/``HEAD`` on a public
   path (agent card, DID document; configurable) passes through with no principal.
2. Cheap rejections, before a byte of the body is read (pre-authentication limits):

   * no credential header at all (when every authenticator declares its ``credential_headers``:
     ``Authorization`` for Bearer/DPoP, ``Signature``/``Signature-Input`` for RFC 9421) -> HTTP 401,
     -32009, id null (the body, and so the id, was never read), ``Connection: close``;
   * a scheme whose credentials are all in headers (Bearer, DPoP: ``needs_body = False``) is
     authenticated now, so a bad token is refused before its body is read; a scheme that needs the
     body (RFC 9421) has its headers checked now (``precheck``: syntax, time window, audience,
     algorithm);
   * ``max_concurrent_reads`` (default 32) bodies already being read: the request waits for a read
     slot at most ``read_slot_wait`` (default 1 s), then gets HTTP 503 with ``Retry-After``, so stalled
     uploads cannot pin more than that many buffers;
   * a declared ``Content-Length`` over the cap -> HTTP 413 (JSON-RPC -32600 "Request too large").

3. The body is read with a streamed cap (default 1 MiB; the running byte count passing the cap is
   answered at once with 413) and a deadline (``body_timeout``, default 10 s; past it HTTP 408).
   Then authentication by the first :class:`Authenticator` whose credentials are present (an
   authenticator gets method, path, headers, the buffered body and the TLS client certificate).
   Bad -> the exact code (-32010/-32011/-32012), HTTP 401 with ``WWW-Authenticate``.  IdP, resolver
   or store unreachable -> HTTP 503, ``Retry-After``, JSON-RPC -32010 "Authentication unavailable"
   (fail closed; detail in logs).  Authentication comes before parsing: an unauthenticated caller
   learns nothing about the parser.  Single-use values (RFC 9421 nonces, DPoP proof ``jti``) are
   *not* claimed yet: the authenticator hands back a pending claim.
4. JSON-RPC endpoint (``POST`` on ``jsonrpc_paths``): the body must be UTF-8 JSON (otherwise HTTP 400,
   -32700 "Parse error", id null).  Each call's method is mapped to its canonical operation
   (:mod:`mudrika.trust.a2a.methods`, both A2A generations; a method the policy itself names is its
   own operation).  Any other request: its REST route is mapped the same way, through the route
   table of the server being wrapped: the 0.3 ``/v1/…`` routes exist only when the app serves them
   (``enable_v0_3_compat``, discovered from the app's Starlette routes when it has them; a given
   value that disagrees with the app is refused at start-up), otherwise ``/v1/message:send`` is
   what Starlette makes of it: ``message:send`` in tenant ``v1``.
5. ``Policy.decide(principal, operation, tenant=...)``, the tenant being the one the call names
   (JSON-RPC ``params.tenant``, or the ``/{tenant}`` REST mount), after the principal got what the
   policy file grants it (a DID signer's ``did_roles``, a token caller's ``tenant_claim`` tenants).
   A request that does not activate an extension in ``required_extensions`` (``A2A-Extensions``)
   was refused before this step with A2A's ``ExtensionSupportRequiredError``.  An unknown method
   or route is never forwarded: HTTP 404, -32601 "Method not found" (we answer for the app: deny by default).  A denied call: HTTP 403,
   -32013, with the request id echoed.  Only when at least one call is allowed are the pending
   single-use claims made, within the principal's claim quota (``claim_quota``; over it HTTP 429):
   a principal that may not call the operation never consumes replay-store capacity, so a flood of
   denied requests cannot fill the store and lock the legitimate agents out.
6. Batches: calls that are denied, unknown, malformed, or streaming (a stream cannot be part of a
   batch answer) are answered by the middleware; ONLY the allowed calls are forwarded, as a rewritten
   batch, and the app's JSON answer is merged with our error objects (notifications get none).  If
   the app's answer is not a JSON document (or not HTTP 200) it is passed on unchanged.  a2a-sdk 1.3
   refuses batches with one error object (id null); that object is kept in the merged array.

What the app sees (the documented scope keys): ``scope["state"]["mudrika.principal"]`` (the
:class:`~mudrika.trust.policy.Principal`, None on public paths), ``scope["state"]["mudrika.auth"]``
(:class:`Authenticated`), ``scope["state"]["mudrika.decisions"]`` (the allowed
:class:`~mudrika.trust.policy.Decision` objects), ``scope["state"]["mudrika.tenants"]`` (the tenant
each forwarded call named), ``scope["state"]["mudrika.extensions"]`` (the activated extension URIs),
and Starlette-compatible ``scope["user"]`` (``is_authenticated``, ``display_name``, ``identity``)
and ``scope["auth"]`` (:class:`Credentials`: the principal itself, with ``.scopes`` = its
permissions), which a2a-sdk turns into ``ServerCallContext.user`` and
``ServerCallContext.state["auth"]``.

Tokens are read from exactly one ``Authorization`` header, scheme case-insensitive; a token in the
query string (``?access_token=``) is ignored.  Error bodies are generic; details go to the
``mudrika.trust.middleware`` logger, with the credential's hash label, never the credential, and every
request-derived value (path, method name, subject) escaped and capped by
:func:`mudrika.net.logs.log_value`.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final, Protocol
from urllib.parse import parse_qsl

import anyio

from mudrika.errors import InvalidInput, UnavailableError, VerificationError
from mudrika.net.logs import log_value
from mudrika.trust.a2a import methods as a2a_methods
from mudrika.trust.a2a.extensions import EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER, requested_extensions
from mudrika.trust.jsonrpc import (
    ERROR_INFO_TYPE,
    TOO_MANY_REQUESTS,
    UNAVAILABLE,
    A2AAuthError,
    AuthenticationRequired,
    ErrorProfile,
    InvalidToken,
    Refusal,
    echo_id,
    profile_for_version,
    refusal_for,
    refusal_for_denial,
)
from mudrika.trust.keycloak.dpop import DPoPVerifier, check_certificate_binding
from mudrika.trust.keycloak.tokens import AccessTokenVerifier, VerifiedToken
from mudrika.trust.middleware._http import (
    ASGIApp,
    Receive,
    ResponseCapture,
    Scope,
    Send,
    body_timed_out,
    header_values,
    read_body,
    replay,
    send_json,
)
from mudrika.trust.middleware._quota import ClaimQuota
from mudrika.trust.policy import Decision, Policy, Principal

_log = logging.getLogger("mudrika.trust.middleware")

PRINCIPAL_KEY: Final = "mudrika.principal"
AUTH_KEY: Final = "mudrika.auth"
DECISIONS_KEY: Final = "mudrika.decisions"
TENANTS_KEY: Final = "mudrika.tenants"
EXTENSIONS_KEY: Final = "mudrika.extensions"
#: ``error_profile`` values: ``auto`` picks ``bindu`` or ``a2a`` per request from its ``A2A-Version``.
ERROR_PROFILES: Final = frozenset({"auto", "bindu", "a2a"})
# Schemes whose credential is a token; a DID-signed request is any other scheme.
_TOKEN_SCHEMES: Final = frozenset({"Bearer", "DPoP"})
DEFAULT_PUBLIC_PATHS: Final = frozenset(
    {"/.well-known/agent-card.json", "/.well-known/agent.json", "/.well-known/did.json"}
)
#: The extension header names as ASGI presents them (lower-case bytes), derived once from the constants.
_EXTENSIONS_FIELD: Final = EXTENSIONS_HEADER.lower().encode("ascii")
_LEGACY_EXTENSIONS_FIELD: Final = LEGACY_EXTENSIONS_HEADER.lower().encode("ascii")
_NO_EXTENSIONS: Final[frozenset[str]] = frozenset()
DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
DEFAULT_MAX_BATCH: Final = 64
DEFAULT_BODY_TIMEOUT: Final = 10.0
DEFAULT_MAX_CONCURRENT_READS: Final = 32
DEFAULT_READ_SLOT_WAIT: Final = 1.0
_MEMO_LIMIT: Final = 4096

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
#: A2A 1.0 §5.4 ``ExtensionSupportRequiredError``.
EXTENSION_SUPPORT_REQUIRED: Final = -32008
METHOD_NOT_FOUND: Final = -32601
_MESSAGES: Final = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
}


# --- authentication ------------------------------------------------------------------------------


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


class BearerAuthenticator:
    """RFC 6750 §2.1 ``Authorization: Bearer <token>`` and RFC 9449 ``Authorization: DPoP <token>``,
    verified by an :class:`AccessTokenVerifier`.

    The scheme name is case-insensitive (``bearer`` works); more than one ``Authorization`` header is
    refused (-32010) rather than guessing which one counts; §2.3 query-string tokens are not read.

    Sender-constrained tokens (:mod:`mudrika.trust.keycloak.dpop`): a token with ``cnf.jkt`` is
    accepted only under the ``DPoP`` scheme with exactly one valid ``DPoP`` proof header (``dpop``, a
    :class:`~mudrika.trust.keycloak.DPoPVerifier`, must be configured; the proof ``jti`` is claimed
    after authorisation); a token with ``cnf.x5t#S256`` only over a TLS connection whose client
    certificate it names.  A bound token under ``Bearer``, an unbound token under ``DPoP`` and any
    other ``cnf`` are refused (-32010).
    """

    scheme = "Bearer"
    credential_headers: Final = frozenset({"authorization"})
    #: The token is in a header: the middleware authenticates before it reads the body.
    needs_body: Final = False

    def __init__(self, verifier: AccessTokenVerifier, *, dpop: DPoPVerifier | None = None) -> None:
        self._verifier = verifier
        self._dpop = dpop
        # The verifier's cache hands back the same VerifiedToken for the same token; reuse the
        # Authenticated built for it (keyed by identity, the object kept to rule out id reuse).
        self._memo: dict[int, tuple[VerifiedToken, Authenticated]] = {}

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        values = header_values(request.headers, b"authorization")
        if not values:
            return None
        if len(values) > 1:
            raise InvalidToken("more than one Authorization header", code="multiple_authorization")
        scheme, _, credential = values[0].strip().partition(" ")
        kind = scheme.lower()
        if kind not in ("bearer", "dpop"):
            return None
        credential = credential.strip()
        if not credential:
            raise InvalidToken("empty bearer credential", code="malformed_token")
        verified = await self._verifier.averify(credential)
        if "cnf" in verified.claims:
            pending = await self._sender_constraint(kind, credential, verified, request)
            return Authenticated(
                principal=verified.principal,
                scheme="DPoP" if kind == "dpop" else self.scheme,
                credential_id=verified.token_id,
                claims=verified.claims,
                pending_claim=pending,
            )
        if kind == "dpop":
            raise InvalidToken("DPoP scheme with a token that is not DPoP-bound", code="dpop_unbound")
        memo = self._memo.get(id(verified))
        if memo is not None and memo[0] is verified:
            return memo[1]
        result = Authenticated(
            principal=verified.principal,
            scheme=self.scheme,
            credential_id=verified.token_id,
            claims=verified.claims,
        )
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[id(verified)] = (verified, result)
        return result

    async def _sender_constraint(
        self, kind: str, token: str, verified: VerifiedToken, request: AuthRequest
    ) -> Callable[[], Awaitable[None]] | None:
        cnf = verified.claims["cnf"]
        if not isinstance(cnf, Mapping) or len(cnf) != 1:
            raise InvalidToken("unsupported confirmation claim", code="unsupported_cnf")
        if "x5t#S256" in cnf:
            if kind != "bearer":
                raise InvalidToken("certificate-bound token under the DPoP scheme", code="wrong_scheme")
            check_certificate_binding(verified.claims, request.client_cert)
            return None
        if "jkt" not in cnf:
            raise InvalidToken("unsupported confirmation claim", code="unsupported_cnf")
        if kind != "dpop":
            raise InvalidToken("DPoP-bound token presented as a bearer token", code="bound_token_as_bearer")
        if self._dpop is None:
            raise InvalidToken("DPoP-bound token and no DPoP verifier configured", code="dpop_unsupported")
        proofs = header_values(request.headers, b"dpop")
        if len(proofs) != 1:  # RFC 9449 §4.3 step 1: exactly one DPoP header
            raise InvalidToken("exactly one DPoP proof required", code="dpop_proof_count")
        path = request.raw_path.decode("latin-1") if request.raw_path else request.path
        proof = self._dpop.check(
            proofs[0].strip(),
            method=request.method,
            htu=self._dpop.htu_for(path),
            access_token=token,
            claims=verified.claims,
        )
        if request.defer_claims:
            return proof.claim
        await proof.claim()
        return None


# --- per-request helpers -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Answering:
    """How this request's refusals are spelled: its error profile, and whether it is a REST call."""

    profile: ErrorProfile
    rest: bool
    #: The extension URIs the request activated (``A2A-Extensions``), once authenticated.
    extensions: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class _Exchange:
    """One authenticated request on its way through steps 4-6: the ASGI triple it arrived on, who
    sent it, and how its refusals are spelled.  Built once, after authentication, so the steps pass
    one value instead of five."""

    scope: Scope
    receive: Receive
    send: Send
    auth: Authenticated
    how: _Answering


@dataclass(frozen=True, slots=True)
class _Echo:
    """What a refusal echoes of the request: the ids of a call already parsed, or the raw body, which
    is parsed for its ids only when a refusal is actually sent."""

    body: bytes = b""
    ids: list[Any] | None = None

    def ids_and_batch(self) -> tuple[list[Any] | None, bool]:
        if self.ids is not None or not self.body:
            return self.ids, False
        return _ids_for_echo(self.body), self.body.lstrip().startswith(b"[")


_NO_ECHO: Final = _Echo()


class _Failed(Exception):
    """An authentication failure and the scheme it happened in (so the answer can name it)."""

    def __init__(self, scheme: str | None, cause: BaseException) -> None:
        super().__init__(scheme)
        self.scheme = scheme
        self.cause = cause


def _scheme_of(authenticator: Any, headers: Sequence[tuple[bytes, bytes]]) -> str | None:
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


_BAD_TENANT: Final = "\x00"


def _call_tenant(call: Mapping[str, Any]) -> str | None:
    """The A2A 1.0 ``tenant`` a JSON-RPC call names in its params (None: none); a ``tenant`` that
    is not a string is :data:`_BAD_TENANT` (the call is refused as invalid, never guessed at)."""
    params = call.get("params")
    if not isinstance(params, dict) or "tenant" not in params:
        return None
    tenant = params["tenant"]
    if not isinstance(tenant, str):
        return _BAD_TENANT
    return tenant or None


# --- JSON-RPC helpers ----------------------------------------------------------------------------


def _rpc_error(code: int, request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": _MESSAGES[code]}, "id": echo_id(request_id)}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def _parse(body: bytes) -> Any:
    """Strict UTF-8 JSON (RFC 8259 §8.1); NaN/Infinity refused.  Raises ValueError."""
    try:
        return _DECODER.decode(body.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError("not UTF-8 JSON") from exc


def _ids_for_echo(body: bytes) -> list[Any] | None:
    """Request ids to echo in an authentication failure: one per call (None: a single call/unknown)."""
    try:
        document = _parse(body)
    except ValueError:
        return None
    if isinstance(document, dict):
        return [document.get("id")]
    if isinstance(document, list) and document:
        return [item["id"] for item in document if isinstance(item, dict) and "id" in item]
    return None


class A2AAuthMiddleware:
    """The A2A authentication/authorisation gate (see the module docstring for every rule).

    ``authenticators`` and ``policy`` are required; there is no unauthenticated mode.
    ``jsonrpc_paths`` are the JSON-RPC endpoints (a2a-sdk's ``rpc_url``); ``rest_prefix`` is the
    ``path_prefix`` of its REST routes and ``enable_v0_3_compat`` whether they include the A2A 0.3
    ``/v1/…`` routes (a2a-sdk's option of the same name; None: read from the app's routes, or
    a2a-sdk's default, off, when the app shows none); ``extra_methods`` maps further JSON-RPC method
    names (e.g. an extension's) to operations.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticators: Sequence[Authenticator],
        policy: Policy,
        jsonrpc_paths: Collection[str] = ("/",),
        rest_prefix: str = "",
        enable_v0_3_compat: bool | None = None,
        public_paths: Collection[str] = DEFAULT_PUBLIC_PATHS,
        extra_methods: Mapping[str, str] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_batch: int = DEFAULT_MAX_BATCH,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        max_concurrent_reads: int = DEFAULT_MAX_CONCURRENT_READS,
        read_slot_wait: float = DEFAULT_READ_SLOT_WAIT,
        claim_quota: ClaimQuota | None = None,
        realm: str = "a2a",
        retry_after: int = 5,
        error_profile: str = "auto",
        required_extensions: Collection[str] = (),
    ) -> None:
        if not authenticators:
            raise InvalidInput("at least one authenticator is required", code="bad_config")
        if error_profile not in ERROR_PROFILES:
            raise InvalidInput("error_profile must be auto, bindu or a2a", code="bad_config")
        if max_body_bytes <= 0 or max_batch <= 0 or retry_after < 0 or max_concurrent_reads <= 0:
            raise InvalidInput("limits must be positive", code="bad_config")
        if not (body_timeout > 0 and read_slot_wait >= 0):
            raise InvalidInput("body_timeout must be positive, read_slot_wait >= 0", code="bad_config")
        self.app = app
        self.authenticators = tuple(authenticators)
        self.policy = policy
        self.jsonrpc_paths = frozenset(jsonrpc_paths)
        self.rest_prefix = rest_prefix
        self.enable_v0_3_compat = _v03_compat_of(app, rest_prefix, enable_v0_3_compat)
        self.public_paths = frozenset(public_paths)
        self.extra_methods = dict(extra_methods or {})
        self.max_body_bytes = max_body_bytes
        self.max_batch = max_batch
        self.body_timeout = float(body_timeout)
        self.max_concurrent_reads = max_concurrent_reads
        self.read_slot_wait = float(read_slot_wait)
        self.claim_quota = claim_quota if claim_quota is not None else ClaimQuota()
        self.realm = realm
        self._retry_after = str(retry_after).encode()
        self._read_slots: anyio.CapacityLimiter | None = None
        self._declared_headers = tuple(
            (authenticator, _declared_headers(authenticator)) for authenticator in self.authenticators
        )
        self._credential_headers = _credential_header_union(self._declared_headers)
        self.error_profile = error_profile
        self._fixed_profile = None if error_profile == "auto" else ErrorProfile(error_profile)
        self._grants_memo: dict[int, tuple[Authenticated, Authenticated]] = {}
        self.required_extensions = requested_extensions(required_extensions)

    # -- entry point --------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Step 1: only HTTP is ours.
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        path = _route_path(scope)
        if path in self.public_paths and method in {"GET", "HEAD"}:
            await self.app(_annotate(scope, None, (), ()), receive, send)
            return
        is_rpc = method == "POST" and path in self.jsonrpc_paths
        how = _Answering(self._profile(scope), rest=not is_rpc)
        headers: Sequence[tuple[bytes, bytes]] = scope["headers"]
        present = {key for key, _ in headers}
        # Step 2: cheap rejections before any body byte is read.
        if self._credential_headers is not None and self._credential_headers.isdisjoint(present):
            _log.info("no credentials for %s %s", log_value(method, limit=16), log_value(path))
            # Connection: close -- the unread body is the client's problem, not a buffer of ours.
            failure = _Failed(None, AuthenticationRequired("no credentials", code="no_credentials"))
            await self._refuse(send, failure, how, method=method, path=path, close=True)
            return
        request = AuthRequest(
            method=method,
            path=path,
            query_string=scope.get("query_string", b""),
            headers=headers,
            body=b"",
            raw_path=scope.get("raw_path"),
            defer_claims=True,
            client_cert=_client_cert(scope),
        )
        # A scheme that needs no body (Bearer, DPoP) is decided before a byte of the body is read; one
        # that needs it (RFC 9421) first has its headers checked, if it offers a ``precheck``.
        auth: Authenticated | None = None
        prechecked: object = None
        deciding = self._deciding_scheme(present)
        try:
            if deciding is not None and getattr(deciding, "needs_body", True) is False:
                auth = await deciding.authenticate(request)
            elif deciding is not None and hasattr(deciding, "precheck"):
                prechecked = await deciding.precheck(request)
        except Exception as exc:
            failure = _Failed(_scheme_of(deciding, headers), exc)
            await self._refuse(send, failure, how, method=method, path=path, close=True)
            return
        slots = self._slots()
        if not await self._take_read_slot(slots):
            _log.warning("pre-auth read limit (%d) reached; refusing", self.max_concurrent_reads)
            await self._send_refusal(send, UNAVAILABLE, how, close=True)
            return
        # Step 3: the body, capped while streaming, under a deadline.
        try:
            with anyio.move_on_after(self.body_timeout) as deadline:
                body = await read_body(scope, receive, send, self.max_body_bytes)
        finally:
            slots.release()
        if deadline.cancelled_caught:
            _log.info("body read deadline passed for %s %s", log_value(method, limit=16), log_value(path))
            await body_timed_out(send)
            return
        if body is None:
            return
        # Step 3 (cont.): authenticate (single-use values are claimed only after the policy, step 5).
        if auth is None:
            try:
                auth = await self._authenticate(replace(request, body=body, precheck=prechecked))
            except _Failed as failure:
                echo = _Echo(body=body) if is_rpc else _NO_ECHO
                await self._refuse(send, failure, how, echo=echo, method=method, path=path)
                return
        auth = self._with_policy_grants(auth)
        # Step 3 (cont.): the extensions this request activates (A2A-Extensions, §14.2.2).
        extensions = _NO_EXTENSIONS
        if _EXTENSIONS_FIELD in present or _LEGACY_EXTENSIONS_FIELD in present:
            try:
                extensions = requested_extensions(
                    header_values(headers, _EXTENSIONS_FIELD)
                    + header_values(headers, _LEGACY_EXTENSIONS_FIELD)
                )
            except InvalidInput as exc:
                _log.info("bad A2A-Extensions from %s: %s", log_value(auth.principal.subject), exc.code)
                await send_json(send, 400, _rpc_error(INVALID_REQUEST, None))
                return
        if self.required_extensions:
            missing = self.required_extensions - extensions
            if missing:
                await self._extension_required(send, how, sorted(missing), body if is_rpc else b"")
                return
        if extensions:
            how = _Answering(how.profile, how.rest, extensions)
        # Steps 4-6.
        exchange = _Exchange(scope, receive, send, auth, how)
        if is_rpc:
            await self._jsonrpc(exchange, body)
        else:
            await self._rest(exchange, body, method, path)

    async def _take_read_slot(self, slots: anyio.CapacityLimiter) -> bool:
        """A body-read slot: at once when one is free and nobody queues (no cancel scope, no trip
        through the event loop: that is every request below the limit), else waiting in line for at
        most ``read_slot_wait``.  False when none came free in time."""
        try:
            slots.acquire_nowait()
        except anyio.WouldBlock:
            with anyio.move_on_after(self.read_slot_wait):
                await slots.acquire()
                return True
            return False
        return True

    def _profile(self, scope: Scope) -> ErrorProfile:
        """The error profile of this request: fixed by configuration, else from its ``A2A-Version``
        (header, or the query parameter A2A 1.0 §3.6.1 allows instead)."""
        if self._fixed_profile is not None:
            return self._fixed_profile
        values = header_values(scope["headers"], b"a2a-version")
        if values:
            return profile_for_version(values[0])
        query: bytes = scope.get("query_string", b"")
        if query and b"a2a-version=" in query.lower():
            try:
                pairs = parse_qsl(query.decode("latin-1"), max_num_fields=64)
            except ValueError:
                pairs = []
            for name, value in pairs:
                if name.lower() == "a2a-version":
                    return profile_for_version(value)
        return ErrorProfile.BINDU

    def _with_policy_grants(self, auth: Authenticated) -> Authenticated:
        """Add what the policy file grants this caller: a DID signer's ``did_roles`` (roles and
        tenants), a token caller's tenants from the configured ``tenant_claim``.  Memoised per
        :class:`Authenticated` (Bearer reuses one per cached token), so the principal's decision memo
        survives across requests."""
        memo = self._grants_memo.get(id(auth))
        if memo is not None and memo[0] is auth:
            return memo[1]
        principal = auth.principal
        roles, tenants = principal.roles, principal.tenants
        if principal.did is not None and auth.scheme not in _TOKEN_SCHEMES:
            grant = self.policy.did_grant(principal.did)
            if grant is not None:
                roles, tenants = roles | grant.roles, tenants | grant.tenants
        elif self.policy.tenant_claim is not None and not tenants:
            tenants = self.policy.tenants_for_claims(auth.claims)
        enriched = auth
        if roles != principal.roles or tenants != principal.tenants:
            enriched = replace(auth, principal=replace(principal, roles=roles, tenants=tenants))
        if auth.pending_claim is None:
            # Only reusable results are memoised (a pending claim belongs to one request).
            if len(self._grants_memo) >= _MEMO_LIMIT:
                self._grants_memo.clear()
            self._grants_memo[id(auth)] = (auth, enriched)
        return enriched

    async def _refuse(
        self,
        send: Send,
        failure: _Failed,
        how: _Answering,
        *,
        echo: _Echo = _NO_ECHO,
        method: str = "",
        path: str = "",
        close: bool = False,
    ) -> None:
        exc = failure.cause
        refusal = refusal_for(exc, scheme=failure.scheme)
        if isinstance(exc, UnavailableError):
            # IdP, resolver or replay store down: fail closed with 503, never let the call through.
            _log.warning(
                "auth unavailable for %s %s: %s",
                log_value(method, limit=16),
                log_value(path),
                log_value(exc.code, limit=64),
            )
        elif isinstance(exc, A2AAuthError | VerificationError | InvalidInput):
            _log.info(
                "auth failed for %s %s: %s (%s, %s)",
                log_value(method, limit=16),
                log_value(path),
                log_value(exc.code, limit=64),
                refusal.reason,
                log_value(failure.scheme or "-", limit=32),
            )
        else:
            # A bug in an authenticator is a deny, never a pass.
            _log.error("authenticator raised %s", type(exc).__name__, exc_info=exc)
        await self._send_refusal(send, refusal, how, echo=echo, close=close)

    async def _extension_required(self, send: Send, how: _Answering, missing: list[str], body: bytes) -> None:
        """A2A's own ``ExtensionSupportRequiredError`` (-32008; REST 400 ``FAILED_PRECONDITION``): the
        agent marks these extensions ``required`` and the request did not activate them."""
        info = {
            "@type": ERROR_INFO_TYPE,
            "reason": "EXTENSION_SUPPORT_REQUIRED",
            "domain": "a2a-protocol.org",
            "metadata": {"extensions": ",".join(missing)},
        }
        message = "Extension support required"
        payload: Any
        if how.rest and how.profile is ErrorProfile.A2A:
            payload = {
                "error": {"code": 400, "status": "FAILED_PRECONDITION", "message": message, "details": [info]}
            }
        else:
            ids = _ids_for_echo(body) if body else None
            error: dict[str, Any] = {"code": EXTENSION_SUPPORT_REQUIRED, "message": message}
            if how.profile is ErrorProfile.A2A:
                error["data"] = [info]
            request_id = ids[0] if ids and len(ids) == 1 else None
            payload = {"jsonrpc": "2.0", "error": error, "id": echo_id(request_id)}
        await send_json(send, 400, payload)

    async def _send_refusal(
        self, send: Send, refusal: Refusal, how: _Answering, *, echo: _Echo = _NO_ECHO, close: bool = False
    ) -> None:
        """Answer ``refusal`` in the request's profile: JSON-RPC error(s) with the ids ``echo`` gives,
        or, for an ``a2a`` REST request, a ``google.rpc.Status``; the challenge, ``Retry-After`` as
        fits."""
        headers: list[tuple[bytes, bytes]] = []
        challenge = refusal.challenge(how.profile, realm=self.realm)
        if challenge is not None:
            headers.append((b"www-authenticate", challenge.encode("latin-1")))
        if refusal.status in (429, 503):
            headers.append((b"retry-after", self._retry_after))
        if close:
            headers.append((b"connection", b"close"))
        payload: Any
        if how.rest and how.profile is ErrorProfile.A2A:
            payload = refusal.rest_body()
        else:
            ids, batch = echo.ids_and_batch()
            if not ids:
                payload = refusal.response(how.profile, None)
            elif len(ids) == 1 and not batch:
                payload = refusal.response(how.profile, ids[0])
            elif refusal.status in (401, 403):
                payload = [refusal.response(how.profile, request_id) for request_id in ids]
            else:
                payload = refusal.response(how.profile, ids[0] if len(ids) == 1 else None)
        await send_json(send, refusal.status, payload, headers)

    def _deciding_scheme(self, present: Collection[bytes]) -> Any:
        """The authenticator that will decide this request, when the headers alone tell (every
        authenticator before it declares ``credential_headers`` and none of them is present)."""
        for authenticator, declared in self._declared_headers:
            if declared is None:
                return None
            if not declared.isdisjoint(present):
                return authenticator
        return None

    def _slots(self) -> anyio.CapacityLimiter:
        # Created on first use: a CapacityLimiter belongs to the event loop that runs the server.
        if self._read_slots is None:
            self._read_slots = anyio.CapacityLimiter(self.max_concurrent_reads)
        return self._read_slots

    async def _commit(self, exchange: _Exchange, ids: list[Any] | None) -> bool:
        """Claim the pending single-use values of an authorised request; False when answered here.
        ``ids`` are the request ids a refusal echoes (None: none, as for REST or a batch)."""
        send, auth, how = exchange.send, exchange.auth, exchange.how
        if auth.pending_claim is None:
            return True
        if not self.claim_quota.allow(auth.principal.subject):
            _log.warning("claim quota exceeded by %s", log_value(auth.principal.subject))
            await self._send_refusal(send, TOO_MANY_REQUESTS, how)
            return False
        try:
            await auth.pending_claim()
        except Exception as exc:
            await self._refuse(send, _Failed(auth.scheme, exc), how, echo=_Echo(ids=ids))
            return False
        return True

    # -- authentication -----------------------------------------------------------------------------

    async def _authenticate(self, request: AuthRequest) -> Authenticated:
        for authenticator in self.authenticators:
            try:
                result = await authenticator.authenticate(request)
            except Exception as exc:
                raise _Failed(_scheme_of(authenticator, request.headers), exc) from exc
            if result is not None:
                return result
        raise _Failed(None, AuthenticationRequired("no credentials", code="no_credentials"))

    # -- authorisation --------------------------------------------------------------------------------

    def _operation(self, method: str) -> str | None:
        operation = a2a_methods.operation_for_method(method)
        if operation is not None:
            return operation
        extra = self.extra_methods.get(method)
        if extra is not None:
            return extra
        # A method the policy names explicitly is its own operation (e.g. an extension's method).
        return method if self.policy.minimum_level(method) is not None else None

    def _deny_log(self, auth: Authenticated, operation: str, decision: Decision) -> None:
        _log.info(
            "denied %s for %s (%s, credential %s)",
            log_value(operation),
            log_value(auth.principal.subject),
            log_value(decision.reason),
            log_value(auth.credential_id, limit=64),
        )

    async def _rest(self, exchange: _Exchange, body: bytes, method: str, path: str) -> None:
        route = a2a_methods.route_for(
            method, path, prefix=self.rest_prefix, v03_compat=self.enable_v0_3_compat
        )
        if route is None:
            _log.info("no A2A route for %s %s", log_value(method, limit=16), log_value(path))
            await send_json(exchange.send, 404, _rpc_error(METHOD_NOT_FOUND, None))
            return
        operation, tenant = route
        await self._decide_and_forward(exchange, operation, tenant, body=body, ids=None)

    async def _jsonrpc(self, exchange: _Exchange, body: bytes) -> None:
        # Step 4: parse.
        try:
            document = _parse(body)
        except ValueError:
            await send_json(exchange.send, 400, _rpc_error(PARSE_ERROR, None))
            return
        if isinstance(document, dict):
            await self._single(exchange, body, document)
        elif isinstance(document, list) and 0 < len(document) <= self.max_batch:
            await self._batch(exchange, document)
        else:
            await send_json(exchange.send, 400, _rpc_error(INVALID_REQUEST, None))

    async def _single(self, exchange: _Exchange, body: bytes, call: dict[str, Any]) -> None:
        request_id = call.get("id")
        method = call.get("method")
        tenant = _call_tenant(call)
        if not isinstance(method, str) or tenant is _BAD_TENANT:
            await send_json(exchange.send, 400, _rpc_error(INVALID_REQUEST, request_id))
            return
        operation = self._operation(method)
        if operation is None:
            _log.info("unknown JSON-RPC method from %s", log_value(exchange.auth.principal.subject))
            await send_json(exchange.send, 404, _rpc_error(METHOD_NOT_FOUND, request_id))
            return
        await self._decide_and_forward(exchange, operation, tenant, body=body, ids=[request_id])

    async def _decide_and_forward(
        self,
        exchange: _Exchange,
        operation: str,
        tenant: str | None,
        *,
        body: bytes,
        ids: list[Any] | None,
    ) -> None:
        """Step 5 for one call (a REST request or a single JSON-RPC call): the policy, per tenant when
        the call names one; then the pending claims; then the app, replaying ``body``.  ``ids`` hold
        the call's request id, which a refusal echoes (None for REST): the body is not parsed again."""
        auth = exchange.auth
        decision = self.policy.decide(auth.principal, operation, tenant=tenant)
        if not decision.allowed:
            self._deny_log(auth, operation, decision)
            refusal = refusal_for_denial(decision.reason, scheme=auth.scheme)
            await self._send_refusal(exchange.send, refusal, exchange.how, echo=_Echo(ids=ids))
            return
        if not await self._commit(exchange, ids):
            return
        downstream = _annotate(exchange.scope, auth, (decision,), (tenant,), exchange.how.extensions)
        await self.app(downstream, replay(body, exchange.receive), exchange.send)

    async def _batch(self, exchange: _Exchange, calls: list[Any]) -> None:
        # Step 6: decide per call; answer the refused ones ourselves, forward only the allowed ones.
        send, auth, how = exchange.send, exchange.auth, exchange.how
        allowed: list[Any] = []
        decisions: list[Decision] = []
        tenants: list[str | None] = []
        errors: list[dict[str, Any]] = []
        statuses: set[int] = set()
        for call in calls:
            tenant = _call_tenant(call) if isinstance(call, dict) else None
            if not isinstance(call, dict) or not isinstance(call.get("method"), str) or tenant is _BAD_TENANT:
                errors.append(_rpc_error(INVALID_REQUEST, call.get("id") if isinstance(call, dict) else None))
                statuses.add(400)
                continue
            notification = "id" not in call
            operation = self._operation(call["method"])
            if operation is None or operation in a2a_methods.STREAMING_OPERATIONS:
                code = METHOD_NOT_FOUND if operation is None else INVALID_REQUEST
                if not notification:
                    errors.append(_rpc_error(code, call["id"]))
                statuses.add(404 if operation is None else 400)
                continue
            decision = self.policy.decide(auth.principal, operation, tenant=tenant)
            if decision.allowed:
                allowed.append(call)
                decisions.append(decision)
                tenants.append(tenant)
                continue
            self._deny_log(auth, operation, decision)
            if not notification:
                refusal = refusal_for_denial(decision.reason, scheme=auth.scheme)
                errors.append(refusal.response(how.profile, call["id"]))
            statuses.add(403)
        if not allowed:
            status = 403 if 403 in statuses else (404 if 404 in statuses else 400)
            payload: Any = errors or _rpc_error(INVALID_REQUEST, None)
            headers: list[tuple[bytes, bytes]] = []
            if status == 403:
                challenge = refusal_for_denial("", scheme=auth.scheme).challenge(
                    how.profile, realm=self.realm
                )
                if challenge is not None:
                    headers.append((b"www-authenticate", challenge.encode("latin-1")))
            await send_json(send, status, payload, headers)
            return
        if not await self._commit(exchange, None):
            return
        downstream = _annotate(exchange.scope, auth, tuple(decisions), tuple(tenants), how.extensions)
        if not errors and len(allowed) == len(calls):
            body = json.dumps(calls, separators=(",", ":")).encode()
            await self.app(_with_length(downstream, len(body)), replay(body, exchange.receive), send)
            return
        body = json.dumps(allowed, separators=(",", ":")).encode()
        captured = ResponseCapture()
        await self.app(_with_length(downstream, len(body)), replay(body, exchange.receive), captured)
        await _merge(send, captured, errors)


async def _merge(send: Send, captured: ResponseCapture, errors: list[dict[str, Any]]) -> None:
    content_type = b""
    for key, value in captured.headers:
        if key.lower() == b"content-type":
            content_type = value.lower()
    answer: Any = None
    if captured.status == 200 and content_type.startswith(b"application/json"):
        try:
            answer = _parse(captured.body)
        except ValueError:
            answer = None
    if isinstance(answer, list):
        await send_json(send, 200, [*answer, *errors])
    elif isinstance(answer, dict):
        await send_json(send, 200, [answer, *errors])
    else:
        _log.warning("app's batch answer is not JSON (HTTP %d); passed on without merging", captured.status)
        await captured.forward(send)


def _declared_headers(authenticator: Authenticator) -> frozenset[bytes] | None:
    """An authenticator's ``credential_headers`` as ASGI spells header names (lower-case bytes); None
    when it does not declare them (then only its ``authenticate`` can tell "no credentials")."""
    declared = getattr(authenticator, "credential_headers", None)
    if declared is None:
        return None
    return frozenset(name.lower().encode("latin-1") for name in declared)


def _credential_header_union(
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


def _client_cert(scope: Scope) -> bytes | None:
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


#: How deep to look through wrapping middleware (each exposing ``.app``) for the router's routes.
_MAX_WRAPPERS: Final = 16


def _starlette_routes(app: Any) -> Sequence[Any] | None:
    """The top-level routes of ``app`` when it is (or wraps, through ``.app``) a Starlette app or
    router; None when nothing shows them."""
    for _ in range(_MAX_WRAPPERS):
        routes = getattr(app, "routes", None)
        if isinstance(routes, list):
            return routes
        router = getattr(app, "router", None)
        if router is not None and isinstance(getattr(router, "routes", None), list):
            return list(router.routes)
        app = getattr(app, "app", None)
        if app is None:
            return None
    return None


def _v03_compat_of(app: Any, prefix: str, configured: bool | None) -> bool:
    """Whether the wrapped server serves the A2A 0.3 ``/v1/…`` REST routes (the one place that decides).

    Why discovered *and* checked: the route table must be the server's own, or a request meant for
    one handler is authorised as another (``/v1/message:send`` with compat off is tenant ``v1``).  A
    Starlette app shows its routes; a configured value that disagrees with them is a deployment error,
    refused at start-up rather than discovered per request.  An app that shows no routes gets the
    configured value, or a2a-sdk's default (off).
    """
    routes = _starlette_routes(app)
    if routes is None:
        return bool(configured)
    marker = f"{prefix}/v1/message:send"
    served = any(getattr(route, "path", None) == marker for route in routes)
    if configured is not None and bool(configured) != served:
        raise InvalidInput(
            f"enable_v0_3_compat={configured} but the wrapped app {'serves' if served else 'does not serve'} "
            f"the A2A 0.3 routes ({marker})",
            code="bad_config",
            option="enable_v0_3_compat",
        )
    return served


def _route_path(scope: Scope) -> str:
    # Starlette routes on the path below root_path; so do we, or the two would disagree.
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


def _annotate(
    scope: Scope,
    auth: Authenticated | None,
    decisions: tuple[Decision, ...],
    tenants: tuple[str | None, ...],
    extensions: frozenset[str] = frozenset(),
) -> Scope:
    state = dict(scope.get("state") or {})
    state[EXTENSIONS_KEY] = extensions
    state[PRINCIPAL_KEY] = None if auth is None else auth.principal
    state[AUTH_KEY] = auth
    state[DECISIONS_KEY] = decisions
    state[TENANTS_KEY] = tenants
    downstream = dict(scope)
    downstream["state"] = state
    if auth is not None:
        downstream["user"] = auth.user
        downstream["auth"] = auth.credentials
    return downstream


def _with_length(scope: Scope, length: int) -> Scope:
    headers = [(k, v) for k, v in scope["headers"] if k not in {b"content-length", b"transfer-encoding"}]
    headers.append((b"content-length", str(length).encode()))
    downstream = dict(scope)
    downstream["headers"] = headers
    return downstream
