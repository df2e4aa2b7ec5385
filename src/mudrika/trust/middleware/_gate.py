"""The protocol-neutral gate: authenticate, decide by policy, claim single-use values, forward.

Why a gate apart from any protocol: every server the middleware fronts (A2A today, MCP beside it)
needs the same pipeline in the same order (cheap refusals before the body, a capped and timed body
read, authentication before parsing, authorisation before any shared capacity is consumed) and
differs only in how a request names its operation and how a refusal is spelled.  A protocol is a
subclass that supplies those two things (:meth:`AuthGate._answering`, :meth:`AuthGate._dispatch`);
everything that guards the server lives here, once.

Per HTTP request (the numbered steps the protocol modules refer to):

1. Non-HTTP scopes pass through.  ``GET``/``HEAD`` of the RFC 9728 metadata (when a
   :class:`ResourceServer` is configured) is answered here; ``GET``/``HEAD`` on a public path passes
   through with no principal.
2. Cheap refusals before a byte of the body is read: no credential header at all, or only one that
   no scheme able to decide takes (401, connection closed); a scheme whose credentials are all in
   headers (Bearer, DPoP) is authenticated now; a
   scheme that needs the body (RFC 9421) has its headers prechecked; at most ``max_concurrent_reads``
   bodies are read at once (then 503 with ``Retry-After`` after ``read_slot_wait``).
3. The body, capped while streaming (413) under a deadline (408); then authentication, with
   single-use values (nonces, DPoP ``jti``) held back as a pending claim; the policy file's grants
   (``did_roles``, ``agent_roles``, ``tenant_claim``) are added to the principal.
4. The protocol's :meth:`~AuthGate._dispatch` names the operation(s) and asks
   :meth:`~AuthGate._decide_and_forward` (or its own batch logic) which uses the policy, then
   :meth:`~AuthGate._commit` (the pending claims, within the principal's claim quota: 429 over it),
   then forwards with the documented scope keys (:func:`annotate`).

Refusals: 401 challenges name every scheme the gate accepts (``Bearer`` and, when signatures are
accepted, ``Signature``), and with a :class:`ResourceServer` carry ``resource_metadata`` (and
``scope``); 403 challenges carry ``error="insufficient_scope"`` and the scopes the operation lacks.
Refusal reasons are logged at WARNING on the ``mudrika.trust.middleware`` logger, one line each, every
request value escaped by :func:`mudrika.net.logs.log_value`; never a credential.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Final, Generic, Protocol, TypeVar

import anyio

from mudrika.errors import InvalidInput, UnavailableError, VerificationError
from mudrika.net.logs import log_value
from mudrika.trust.jsonrpc import (
    TOO_MANY_REQUESTS,
    UNAVAILABLE,
    A2AAuthError,
    AuthenticationRequired,
    Refusal,
    bare_challenge,
    echo_id,
    refusal_for,
    refusal_for_denial,
)
from mudrika.trust.middleware._auth import (
    Authenticated,
    Authenticator,
    AuthFailure,
    AuthRequest,
    client_cert,
    credential_header_union,
    declared_headers,
    scheme_of,
)
from mudrika.trust.middleware._bearer import TOKEN_SCHEMES
from mudrika.trust.middleware._http import (
    ASGIApp,
    Receive,
    Scope,
    Send,
    body_timed_out,
    read_body,
    replay,
    run_until_suspended,
    send_json,
)
from mudrika.trust.middleware._limits import Limits
from mudrika.trust.middleware._quota import ClaimQuota
from mudrika.trust.middleware._resource import ResourceServer
from mudrika.trust.policy import Decision, Policy

__all__ = [
    "AUTH_KEY",
    "DECISIONS_KEY",
    "EXTENSIONS_KEY",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PRINCIPAL_KEY",
    "TENANTS_KEY",
    "Answering",
    "AuthGate",
    "Echo",
    "Exchange",
    "annotate",
    "ids_for_echo",
    "parse_json",
    "route_path",
    "rpc_error",
]

_log = logging.getLogger("mudrika.trust.middleware")

#: A protocol's route table type (the gate is generic over it).
RoutesT = TypeVar("RoutesT")

PRINCIPAL_KEY: Final = "mudrika.principal"
AUTH_KEY: Final = "mudrika.auth"
DECISIONS_KEY: Final = "mudrika.decisions"
TENANTS_KEY: Final = "mudrika.tenants"
EXTENSIONS_KEY: Final = "mudrika.extensions"
_MEMO_LIMIT: Final = 4096

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
_MESSAGES: Final = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
}
#: The challenge name of RFC 9421 requests (the HTTP-signature challenge of RFC 9421's predecessors).
_SIGNATURE_CHALLENGE: Final = "Signature"


# --- JSON-RPC helpers shared by the protocols -----------------------------------------------------


def rpc_error(code: int, request_id: Any) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response for one of the standard codes above."""
    return {"jsonrpc": "2.0", "error": {"code": code, "message": _MESSAGES[code]}, "id": echo_id(request_id)}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def parse_json(body: bytes) -> Any:
    """Strict UTF-8 JSON (RFC 8259 §8.1); NaN/Infinity refused.  Raises :class:`InvalidInput`
    (``bad_json``) for anything else, nesting too deep for the decoder included."""
    try:
        return _DECODER.decode(body.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, ValueError):
        raise InvalidInput("request body is not UTF-8 JSON", code="bad_json") from None


def ids_for_echo(body: bytes) -> list[Any] | None:
    """Request ids to echo in a refusal: one per call (None: a single call/unknown)."""
    try:
        document = parse_json(body)
    except InvalidInput:
        return None
    if isinstance(document, dict):
        return [document.get("id")]
    if isinstance(document, list) and document:
        return [item["id"] for item in document if isinstance(item, dict) and "id" in item]
    return None


# --- per-request values ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Echo:
    """What a refusal echoes of the request: the ids of a call already parsed, or the raw body, which
    is parsed for its ids only when a refusal is actually sent."""

    body: bytes = b""
    ids: list[Any] | None = None

    def ids_and_batch(self) -> tuple[list[Any] | None, bool]:
        if self.ids is not None or not self.body:
            return self.ids, False
        return ids_for_echo(self.body), self.body.lstrip().startswith(b"[")


NO_ECHO: Final = Echo()


class Answering(Protocol):
    """How one request's refusals are spelled: the protocol (and, for A2A, the error profile)."""

    def challenge(self, refusal: Refusal, realm: str) -> str | None:
        """The failing scheme's ``WWW-Authenticate`` value (None for 429/503)."""

    def body(self, refusal: Refusal, echo: Echo) -> Any:
        """The JSON body of the refusal, echoing the request ids ``echo`` gives where it may."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One authenticated request on its way through step 4: the ASGI triple it arrived on, its
    request line, who sent it and how its refusals are spelled (built once, after authentication)."""

    scope: Scope
    receive: Receive
    send: Send
    auth: Authenticated
    how: Answering
    method: str
    path: str


# --- the gate -------------------------------------------------------------------------------------


class AuthGate(ABC, Generic[RoutesT]):
    """The pipeline every protected protocol shares (module docstring); protocols subclass it.

    ``authenticators`` and ``policy`` are required (there is no unauthenticated mode); ``limits``
    caps what a request may cost (:class:`Limits`); ``public_paths`` pass ``GET``/``HEAD`` through
    unauthenticated; ``realm`` names the challenges' realm; ``resource`` makes the server an RFC 9728
    protected resource (metadata served, ``resource_metadata`` in challenges); ``routes`` says where
    the protocol answers (its :attr:`routes_type`, by default that type's defaults).
    """

    #: The route table type of the protocol (:class:`A2ARoutes`, :class:`McpRoutes`): its default
    #: instance when none is given, and what a given one must be.
    routes_type: ClassVar[type[Any]]
    #: What ``GET``/``HEAD`` may reach without credentials when ``public_paths`` is not given.
    default_public_paths: ClassVar[frozenset[str]] = frozenset()
    #: The challenges' realm when ``realm`` is not given.
    default_realm: ClassVar[str] = "mudrika"

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticators: Sequence[Authenticator],
        policy: Policy,
        routes: RoutesT | None = None,
        limits: Limits | None = None,
        public_paths: Collection[str] | None = None,
        realm: str | None = None,
        resource: ResourceServer | None = None,
    ) -> None:
        if not authenticators:
            raise InvalidInput("at least one authenticator is required", code="bad_config")
        if limits is not None and not isinstance(limits, Limits):
            raise InvalidInput("limits must be a Limits", code="bad_config", option="limits")
        if routes is not None and not isinstance(routes, self.routes_type):
            raise InvalidInput(
                f"routes must be {self.routes_type.__name__}", code="bad_config", option="routes"
            )
        self.app = app
        self.authenticators = tuple(authenticators)
        self.policy = policy
        self.routes: RoutesT = self.routes_type() if routes is None else routes
        self.limits = limits if limits is not None else Limits()
        self.public_paths = frozenset(self.default_public_paths if public_paths is None else public_paths)
        self.realm = self.default_realm if realm is None else realm
        self.resource = resource
        self.claim_quota = self.limits.claim_quota if self.limits.claim_quota is not None else ClaimQuota()
        self._retry_after = str(self.limits.retry_after).encode()
        self._read_slots: anyio.CapacityLimiter | None = None
        self._declared_headers = tuple(
            (authenticator, declared_headers(authenticator)) for authenticator in self.authenticators
        )
        self._credential_headers = credential_header_union(self._declared_headers)
        schemes = {getattr(authenticator, "scheme", None) for authenticator in self.authenticators}
        self._offers_tokens = bool(schemes & TOKEN_SCHEMES)
        self._offers_signatures = any(isinstance(name, str) and name not in TOKEN_SCHEMES for name in schemes)
        self._grants_memo: dict[int, tuple[Authenticated, Authenticated]] = {}
        self._configure()

    # -- what a protocol supplies -------------------------------------------------------------------

    @abstractmethod
    def _configure(self) -> None:
        """Check and take in :attr:`routes` (and anything else the protocol needs) at start-up."""

    @abstractmethod
    def _answering(self, scope: Scope, method: str, path: str) -> Answering:
        """How this request's refusals are spelled."""

    def _failure_echo(self, method: str, path: str, body: bytes) -> Echo:
        """What an authentication refusal echoes once the body is read (default: nothing)."""
        return NO_ECHO

    @abstractmethod
    async def _dispatch(self, exchange: Exchange, body: bytes) -> None:
        """Step 4: name the operation(s), decide, commit, forward or refuse."""

    # -- entry point --------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Step 1: only HTTP is ours; the metadata and public paths need no credentials.
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        path = route_path(scope)
        if method in {"GET", "HEAD"}:
            if self.resource is not None and self.resource.serves(path):
                await self._send_metadata(send, head=method == "HEAD")
                return
            if path in self.public_paths:
                await self.app(annotate(scope, None, (), ()), receive, send)
                return
        how = self._answering(scope, method, path)
        headers: Sequence[tuple[bytes, bytes]] = scope["headers"]
        present = {key for key, _ in headers}
        # Step 2: cheap rejections before any body byte is read.
        if self._credential_headers is not None and self._credential_headers.isdisjoint(present):
            # Connection: close -- the unread body is the client's problem, not a buffer of ours.
            failure = AuthFailure(None, AuthenticationRequired("no credentials", code="no_credentials"))
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
            client_cert=client_cert(scope),
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
            failure = AuthFailure(scheme_of(deciding, headers), exc)
            await self._refuse(send, failure, how, method=method, path=path, close=True)
            return
        if auth is None and deciding is not None and not self._body_could_decide(deciding, present):
            # The header scheme found no credentials of its own (``Authorization: Basic``) and no
            # other scheme's are present: nobody can authenticate this request, so its body is not
            # worth a read slot (a slow body would hold one for ``body_timeout``).
            failure = AuthFailure(None, AuthenticationRequired("no credentials", code="no_credentials"))
            await self._refuse(send, failure, how, method=method, path=path, close=True)
            return
        slots = self._slots()
        if not await self._take_read_slot(slots):
            _log.warning("pre-auth read limit (%d) reached; refusing", self.limits.max_concurrent_reads)
            await self._send_refusal(send, UNAVAILABLE, how, close=True)
            return
        # Step 3: the body, capped while streaming, under a deadline while it is waited for (a body
        # already there is read at once, with no timer to arm).
        timed_out = False
        try:
            body, rest = run_until_suspended(read_body(scope, receive, send, self.limits.max_body_bytes))
            if rest is not None:
                with anyio.move_on_after(self.limits.body_timeout) as deadline:
                    body = await rest
                timed_out = deadline.cancelled_caught
        finally:
            slots.release()
        if timed_out:
            _log.warning("body read deadline passed for %s %s", log_value(method, limit=16), log_value(path))
            await body_timed_out(send)
            return
        if body is None:
            return
        # Step 3 (cont.): authenticate (single-use values are claimed only after the policy).
        if auth is None:
            try:
                auth = await self._authenticate(replace(request, body=body, precheck=prechecked))
            except AuthFailure as failure:
                echo = self._failure_echo(method, path, body)
                await self._refuse(send, failure, how, echo=echo, method=method, path=path)
                return
        auth = self._with_policy_grants(auth)
        await self._dispatch(Exchange(scope, receive, send, auth, how, method, path), body)

    # -- services for the protocols -----------------------------------------------------------------

    async def _decide_and_forward(
        self,
        exchange: Exchange,
        operation: str,
        tenant: str | None,
        *,
        body: bytes,
        ids: list[Any] | None,
        extensions: frozenset[str] = frozenset(),
    ) -> None:
        """One call: the policy (per tenant when the call names one); then the pending claims; then
        the app, replaying ``body``.  ``ids`` hold the call's request id, which a refusal echoes (None
        when there is none to echo): the body is not parsed again."""
        auth = exchange.auth
        decision = self.policy.decide(auth.principal, operation, tenant=tenant)
        if not decision.allowed:
            await self._deny(exchange, operation, decision, ids)
            return
        if not await self._commit(exchange, ids):
            return
        downstream = annotate(exchange.scope, auth, (decision,), (tenant,), extensions)
        await self.app(downstream, replay(body, exchange.receive), exchange.send)

    async def _deny(
        self, exchange: Exchange, operation: str, decision: Decision, ids: list[Any] | None
    ) -> None:
        """The 403 of a policy denial, with the scopes it lacks in the challenge."""
        self._deny_log(exchange.auth, operation, decision)
        refusal = refusal_for_denial(decision.reason, scheme=exchange.auth.scheme)
        await self._send_refusal(
            exchange.send,
            refusal,
            exchange.how,
            echo=Echo(ids=ids),
            scopes=sorted(decision.missing_permissions),
        )

    async def _commit(self, exchange: Exchange, ids: list[Any] | None) -> bool:
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
            failure = AuthFailure(auth.scheme, exc)
            await self._refuse(
                send, failure, how, echo=Echo(ids=ids), method=exchange.method, path=exchange.path
            )
            return False
        return True

    def _deny_log(self, auth: Authenticated, operation: str, decision: Decision) -> None:
        _log.warning(
            "denied %s for %s (%s, credential %s)",
            log_value(operation),
            log_value(auth.principal.subject),
            log_value(decision.reason),
            log_value(auth.credential_id, limit=64),
        )

    def _challenges(self, refusal: Refusal, how: Answering, scopes: Sequence[str] = ()) -> list[str]:
        """The ``WWW-Authenticate`` values of a refusal: the failing scheme's challenge (with this
        resource's metadata and scopes), and on a 401 the other schemes this gate accepts."""
        primary = how.challenge(refusal, self.realm)
        if primary is None:
            return []
        name = primary.split(" ", 1)[0]
        if name != _SIGNATURE_CHALLENGE and not self._offers_tokens and self._offers_signatures:
            # No token scheme is configured: the challenge a client can answer is a signature.
            primary, name = _SIGNATURE_CHALLENGE + primary[len(name) :], _SIGNATURE_CHALLENGE
        token_params = "" if self.resource is None else self.resource.parameters(refusal.status, scopes)
        lines = [primary + token_params if name != _SIGNATURE_CHALLENGE else primary]
        if refusal.status == 401:
            if name != _SIGNATURE_CHALLENGE and self._offers_signatures:
                lines.append(bare_challenge(_SIGNATURE_CHALLENGE, realm=self.realm))
            elif name == _SIGNATURE_CHALLENGE and self._offers_tokens:
                lines.append(bare_challenge("Bearer", realm=self.realm) + token_params)
        return lines

    async def _send_refusal(
        self,
        send: Send,
        refusal: Refusal,
        how: Answering,
        *,
        echo: Echo = NO_ECHO,
        close: bool = False,
        scopes: Sequence[str] = (),
    ) -> None:
        """Answer ``refusal`` as the request's protocol spells it, with its challenges and, for 429
        and 503, ``Retry-After``."""
        headers = [
            (b"www-authenticate", line.encode("latin-1")) for line in self._challenges(refusal, how, scopes)
        ]
        if refusal.status in (429, 503):
            headers.append((b"retry-after", self._retry_after))
        if close:
            headers.append((b"connection", b"close"))
        await send_json(send, refusal.status, how.body(refusal, echo), headers)

    async def _refuse(
        self,
        send: Send,
        failure: AuthFailure,
        how: Answering,
        *,
        echo: Echo = NO_ECHO,
        method: str,
        path: str,
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
            _log.warning(
                "refused %s %s: %s (%s, %s)",
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

    # -- internals ----------------------------------------------------------------------------------

    async def _send_metadata(self, send: Send, *, head: bool) -> None:
        assert self.resource is not None
        body = self.resource.document_bytes
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"public, max-age=3600"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b"" if head else body})

    async def _take_read_slot(self, slots: anyio.CapacityLimiter) -> bool:
        """A body-read slot: at once when one is free and nobody queues (no cancel scope, no trip
        through the event loop: that is every request below the limit), else waiting in line for at
        most ``read_slot_wait``.  False when none came free in time."""
        try:
            slots.acquire_nowait()
        except anyio.WouldBlock:
            with anyio.move_on_after(self.limits.read_slot_wait):
                await slots.acquire()
                return True
            return False
        return True

    def _with_policy_grants(self, auth: Authenticated) -> Authenticated:
        """Add what the policy file grants this caller: a DID signer's ``did_roles`` (roles and
        tenants), a token caller's tenants from the configured ``tenant_claim``.  Memoised per
        :class:`Authenticated` (Bearer reuses one per cached token), so the principal's decision memo
        survives across requests.  A caller the policy file can grant nothing to (a token caller
        without a ``tenant_claim``, or one whose token names its tenants) is returned as it is, with
        no memo entry: there is nothing to remember, and a store per distinct credential costs."""
        principal = auth.principal
        did = principal.did if auth.scheme not in TOKEN_SCHEMES else None
        if did is None and (self.policy.tenant_claim is None or principal.tenants):
            return auth
        memo = self._grants_memo.get(id(auth))
        if memo is not None and memo[0] is auth:
            return memo[1]
        roles, tenants = principal.roles, principal.tenants
        if did is not None:
            grant = self.policy.did_grant(did)
            if grant is not None:
                roles, tenants = roles | grant.roles, tenants | grant.tenants
        else:
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

    def _deciding_scheme(self, present: Collection[bytes]) -> Any:
        """The authenticator that will decide this request, when the headers alone tell (every
        authenticator before it declares ``credential_headers`` and none of them is present)."""
        for authenticator, declared in self._declared_headers:
            if declared is None:
                return None
            if not declared.isdisjoint(present):
                return authenticator
        return None

    def _body_could_decide(self, deciding: Any, present: Collection[bytes]) -> bool:
        """Whether, with the body read, some authenticator could still decide this request: the
        deciding one when it reads the body, or one after it that declares no credential headers
        or finds its own present (those before it found none of theirs: :meth:`_deciding_scheme`)."""
        if getattr(deciding, "needs_body", True) is not False:
            return True
        after = False
        for authenticator, declared in self._declared_headers:
            if authenticator is deciding:
                after = True
            elif after and (declared is None or not declared.isdisjoint(present)):
                return True
        return False

    def _slots(self) -> anyio.CapacityLimiter:
        # Created on first use: a CapacityLimiter belongs to the event loop that runs the server.
        if self._read_slots is None:
            self._read_slots = anyio.CapacityLimiter(self.limits.max_concurrent_reads)
        return self._read_slots

    async def _authenticate(self, request: AuthRequest) -> Authenticated:
        for authenticator in self.authenticators:
            try:
                result = await authenticator.authenticate(request)
            except Exception as exc:
                raise AuthFailure(scheme_of(authenticator, request.headers), exc) from exc
            if result is not None:
                return result
        raise AuthFailure(None, AuthenticationRequired("no credentials", code="no_credentials"))


def route_path(scope: Scope) -> str:
    """The path below ``root_path``: where Starlette routes, so where we decide too."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


def annotate(
    scope: Scope,
    auth: Authenticated | None,
    decisions: tuple[Decision, ...],
    tenants: tuple[str | None, ...],
    extensions: frozenset[str] = frozenset(),
) -> Scope:
    """The scope the app sees: the documented ``state`` keys and Starlette's ``user``/``auth``."""
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
