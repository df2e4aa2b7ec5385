"""A2A over the gate: map each A2A call to an operation, ask the policy, or deny.

Why pure ASGI (no Starlette ``BaseHTTPMiddleware``): it must see the raw body stream to cap it,
must hand the app a replay of exactly the bytes it checked, and must not break streaming (SSE)
responses of the calls it lets through.

Refusals are spelled in the request's error profile (:mod:`mudrika.trust.jsonrpc`): ``bindu``, the
seed's -32009...-32013 (JSON-RPC 0.3 clients, no ``A2A-Version``), or ``a2a`` (A2A 1.0: codes outside
the JSON-RPC reserved range, a ``google.rpc.ErrorInfo`` in ``error.data`` naming the reason and the
scheme that failed, ``google.rpc.Status`` bodies on REST routes); ``error_profile`` fixes one.  The
codes below are the ``bindu`` ones.

The pipeline itself (steps 1-3: cheap refusals, body, authentication, grants; the policy, claims and
forwarding services) is :mod:`._gate`'s, shared with MCP; this module is A2A's route-and-method table
and its error spelling.  Per HTTP request, in this order:

1. Non-HTTP scopes (``lifespan``, ``websocket``) pass through untouched.  ``GET``/``HEAD`` on a public
   path (agent card, DID document; configurable) passes through with no principal.
2. Cheap rejections, before a byte of the body is read (pre-authentication limits):

   * no credential header at all (when every authenticator declares its ``credential_headers``:
     ``Authorization`` for Bearer/DPoP, ``Signature``/``Signature-Input`` for RFC 9421) -> HTTP 401,
     -32009, id null (the body, and so the id, was never read), ``Connection: close``; likewise when
     the only credential header is one no configured scheme takes (``Authorization: Basic`` to a
     token-only gate: nobody could authenticate it, so its body never holds a read slot);
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
   (JSON-RPC ``params.tenant``, or the ``/{tenant}`` REST mount; an A2A 0.3 method naming one is
   refused -32600, as 0.3 has none), after the principal got what the policy file grants it (a DID
   signer's ``did_roles``, a token caller's ``tenant_claim`` tenants).  A request that does not
   activate an extension in ``required_extensions`` (``A2A-Extensions``; for A2A 0.3 calls
   ``X-A2A-Extensions`` too) was refused before this step with A2A's ``ExtensionSupportRequiredError``.  An unknown method
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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl

from mudrika.errors import InvalidInput
from mudrika.net.logs import log_value
from mudrika.trust.a2a import methods as a2a_methods
from mudrika.trust.a2a.extensions import EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER, requested_extensions
from mudrika.trust.jsonrpc import (
    ERROR_INFO_TYPE,
    ErrorProfile,
    Refusal,
    echo_id,
    profile_for_version,
    refusal_for_denial,
)
from mudrika.trust.middleware._gate import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    AuthGate,
    Echo,
    Exchange,
    annotate,
    ids_for_echo,
    parse_json,
    rpc_error,
)
from mudrika.trust.middleware._http import (
    ResponseCapture,
    Scope,
    Send,
    header_values,
    replay,
    send_json,
)
from mudrika.trust.policy import Decision

__all__ = ["DEFAULT_PUBLIC_PATHS", "ERROR_PROFILES", "A2AAuthMiddleware", "A2ARoutes"]

_log = logging.getLogger("mudrika.trust.middleware")

#: ``error_profile`` values: ``auto`` picks ``bindu`` or ``a2a`` per request from its ``A2A-Version``.
ERROR_PROFILES: Final = frozenset({"auto", "bindu", "a2a"})
DEFAULT_PUBLIC_PATHS: Final = frozenset(
    {"/.well-known/agent-card.json", "/.well-known/agent.json", "/.well-known/did.json"}
)
#: The extension header names as ASGI presents them (lower-case bytes), derived once from the constants.
_EXTENSIONS_FIELD: Final = EXTENSIONS_HEADER.lower().encode("ascii")
_LEGACY_EXTENSIONS_FIELD: Final = LEGACY_EXTENSIONS_HEADER.lower().encode("ascii")
_NO_EXTENSIONS: Final[frozenset[str]] = frozenset()
#: A2A 1.0 §5.4 ``ExtensionSupportRequiredError``.
EXTENSION_SUPPORT_REQUIRED: Final = -32008


@dataclass(frozen=True, slots=True)
class A2ARoutes:
    """Where the A2A server answers and how its refusals are spelled.

    ``jsonrpc_paths`` are the JSON-RPC endpoints (a2a-sdk's ``rpc_url``; none may be a ``POST`` REST
    route too, refused when the middleware is built); ``rest_prefix`` is the
    ``path_prefix`` of its REST routes and ``enable_v0_3_compat`` whether they include the A2A 0.3
    ``/v1/…`` routes (a2a-sdk's option of the same name; None: read from the app's routes, or
    a2a-sdk's default, off, when the app shows none); ``extra_methods`` maps further JSON-RPC method
    names (e.g. an extension's) to operations; ``required_extensions`` must be activated by every
    request (``A2A-Extensions``); ``error_profile`` fixes the refusal spelling (``auto``: per request).
    """

    jsonrpc_paths: Collection[str] = ("/",)
    rest_prefix: str = ""
    enable_v0_3_compat: bool | None = None
    extra_methods: Mapping[str, str] = field(default_factory=dict)
    required_extensions: Collection[str] = ()
    error_profile: str = "auto"

    def __post_init__(self) -> None:
        if self.error_profile not in ERROR_PROFILES:
            raise InvalidInput("error_profile must be auto, bindu or a2a", code="bad_config")


@dataclass(frozen=True, slots=True)
class _Answering:
    """How this request's refusals are spelled: its error profile, and whether it is a REST call."""

    profile: ErrorProfile
    rest: bool
    #: The extension URIs the request activated (``A2A-Extensions``), once authenticated.
    extensions: frozenset[str] = frozenset()

    def challenge(self, refusal: Refusal, realm: str) -> str | None:
        return refusal.challenge(self.profile, realm=realm)

    def body(self, refusal: Refusal, echo: Echo) -> Any:
        if self.rest and self.profile is ErrorProfile.A2A:
            return refusal.rest_body()
        ids, batch = echo.ids_and_batch()
        if not ids:
            return refusal.response(self.profile, None)
        if len(ids) == 1 and not batch:
            return refusal.response(self.profile, ids[0])
        if refusal.status in (401, 403):
            return [refusal.response(self.profile, request_id) for request_id in ids]
        return refusal.response(self.profile, ids[0] if len(ids) == 1 else None)


_BAD_TENANT: Final = "\x00"


def _call_tenant(call: Mapping[str, Any]) -> str | None:
    """The A2A 1.0 ``tenant`` a JSON-RPC call names in its params (None: none); a ``tenant`` that
    is not a string is :data:`_BAD_TENANT` (the call is refused as invalid, never guessed at).

    An A2A 0.3 method naming a tenant is :data:`_BAD_TENANT` too: 0.3 has no tenant, so its server
    (a2a-sdk's 0.3 adapter) runs the call in none whatever ``params.tenant`` says.  Deciding it in
    the tenant it names would authorise one tenant while the agent runs in another (and let a call
    with no tenant past ``require_tenant``); deciding it in none would let through a server that does
    read the member.  Refusing it is the one answer both kinds of server agree with."""
    params = call.get("params")
    if not isinstance(params, dict) or "tenant" not in params:
        return None
    tenant = params["tenant"]
    if not isinstance(tenant, str):
        return _BAD_TENANT
    if tenant and call.get("method") in a2a_methods.A2A_V03_METHODS:
        return _BAD_TENANT
    return tenant or None


class A2AAuthMiddleware(AuthGate[A2ARoutes]):
    """The A2A authentication/authorisation gate (see the module docstring for every rule).

    ``authenticators`` and ``policy`` are required; there is no unauthenticated mode.  ``routes``
    says where the A2A server answers (:class:`A2ARoutes`), ``limits`` what a request may cost
    (:class:`~mudrika.trust.middleware.Limits`), ``resource`` the RFC 9728 metadata to publish.
    """

    routes_type = A2ARoutes
    default_public_paths = DEFAULT_PUBLIC_PATHS
    default_realm = "a2a"

    def _configure(self) -> None:
        routes = self.routes
        self.jsonrpc_paths = frozenset(routes.jsonrpc_paths)
        self.rest_prefix = routes.rest_prefix
        self.enable_v0_3_compat = _v03_compat_of(self.app, routes.rest_prefix, routes.enable_v0_3_compat)
        _refuse_shared_paths(self.jsonrpc_paths, routes.rest_prefix, self.enable_v0_3_compat)
        self.extra_methods = dict(routes.extra_methods)
        self.error_profile = routes.error_profile
        self._fixed_profile = None if routes.error_profile == "auto" else ErrorProfile(routes.error_profile)
        self.required_extensions = requested_extensions(routes.required_extensions)

    # -- the gate's hooks ---------------------------------------------------------------------------

    def _answering(self, scope: Scope, method: str, path: str) -> _Answering:
        is_rpc = method == "POST" and path in self.jsonrpc_paths
        return _Answering(self._profile(scope), rest=not is_rpc)

    def _failure_echo(self, method: str, path: str, body: bytes) -> Echo:
        return Echo(body=body) if method == "POST" and path in self.jsonrpc_paths else Echo()

    async def _dispatch(self, exchange: Exchange, body: bytes) -> None:
        how = exchange.how
        assert isinstance(how, _Answering)
        headers = exchange.scope["headers"]
        present = {key for key, _ in headers}
        # The extensions this request activates (A2A-Extensions, §14.2.2), and with the 0.3 header.
        offered = _NO_OFFER
        if _EXTENSIONS_FIELD in present or _LEGACY_EXTENSIONS_FIELD in present:
            try:
                offered = _offered_extensions(headers)
            except InvalidInput as exc:
                _log.warning(
                    "bad A2A-Extensions from %s: %s", log_value(exchange.auth.principal.subject), exc.code
                )
                await send_json(exchange.send, 400, rpc_error(INVALID_REQUEST, None))
                return
        if how.rest:
            await self._rest(exchange, body, offered)
        else:
            await self._jsonrpc(exchange, body, offered)

    async def _activated(
        self, exchange: Exchange, offered: _Offered, body: bytes, *, is_v03: Callable[[], bool]
    ) -> Exchange | None:
        """The exchange carrying the extensions the call activated, or None when it lacks one of
        ``required_extensions`` (refused here with A2A's ``ExtensionSupportRequiredError``).

        The one place the 0.3 header is counted: only for a call ``is_v03`` says is A2A 0.3, and
        ``is_v03`` is asked only when the request carried that header (see :func:`_offered_extensions`)."""
        how = exchange.how
        assert isinstance(how, _Answering)
        current, with_legacy = offered
        extensions = with_legacy if current is not with_legacy and is_v03() else current
        if self.required_extensions:
            missing = self.required_extensions - extensions
            if missing:
                await self._extension_required(exchange.send, how, sorted(missing), b"" if how.rest else body)
                return None
        if not extensions:
            return exchange
        return Exchange(
            exchange.scope,
            exchange.receive,
            exchange.send,
            exchange.auth,
            _Answering(how.profile, how.rest, extensions),
            exchange.method,
            exchange.path,
        )

    # -- A2A specifics ------------------------------------------------------------------------------

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
            ids = ids_for_echo(body) if body else None
            error: dict[str, Any] = {"code": EXTENSION_SUPPORT_REQUIRED, "message": message}
            if how.profile is ErrorProfile.A2A:
                error["data"] = [info]
            request_id = ids[0] if ids and len(ids) == 1 else None
            payload = {"jsonrpc": "2.0", "error": error, "id": echo_id(request_id)}
        await send_json(send, 400, payload)

    def _operation(self, method: str) -> str | None:
        operation = a2a_methods.operation_for_method(method)
        if operation is not None:
            return operation
        extra = self.extra_methods.get(method)
        if extra is not None:
            return extra
        # A method the policy names explicitly is its own operation (e.g. an extension's method).
        return method if self.policy.minimum_level(method) is not None else None

    async def _rest(self, exchange: Exchange, body: bytes, offered: _Offered) -> None:
        method, path = exchange.method, exchange.path
        activated = await self._activated(
            exchange,
            offered,
            body,
            is_v03=lambda: a2a_methods.is_v03_route(
                method, path, prefix=self.rest_prefix, v03_compat=self.enable_v0_3_compat
            ),
        )
        if activated is None:
            return
        exchange = activated
        route = a2a_methods.route_for(
            exchange.method, exchange.path, prefix=self.rest_prefix, v03_compat=self.enable_v0_3_compat
        )
        if route is None:
            _log.warning(
                "no A2A route for %s %s", log_value(exchange.method, limit=16), log_value(exchange.path)
            )
            await send_json(exchange.send, 404, rpc_error(METHOD_NOT_FOUND, None))
            return
        operation, tenant = route
        await self._decide_and_forward(
            exchange, operation, tenant, body=body, ids=None, extensions=_extensions(exchange)
        )

    async def _jsonrpc(self, exchange: Exchange, body: bytes, offered: _Offered) -> None:
        # Step 4: parse.
        try:
            document = parse_json(body)
        except InvalidInput:
            await send_json(exchange.send, 400, rpc_error(PARSE_ERROR, None))
            return
        if isinstance(document, dict):
            calls = [document]
        elif isinstance(document, list) and 0 < len(document) <= self.limits.max_batch:
            calls = document
        else:
            await send_json(exchange.send, 400, rpc_error(INVALID_REQUEST, None))
            return
        activated = await self._activated(exchange, offered, body, is_v03=lambda: _all_v03(calls))
        if activated is None:
            return
        if isinstance(document, dict):
            await self._single(activated, body, document)
        else:
            await self._batch(activated, calls)

    async def _single(self, exchange: Exchange, body: bytes, call: dict[str, Any]) -> None:
        request_id = call.get("id")
        method = call.get("method")
        tenant = _call_tenant(call)
        if not isinstance(method, str) or tenant is _BAD_TENANT:
            await send_json(exchange.send, 400, rpc_error(INVALID_REQUEST, request_id))
            return
        operation = self._operation(method)
        if operation is None:
            _log.warning("unknown JSON-RPC method from %s", log_value(exchange.auth.principal.subject))
            await send_json(exchange.send, 404, rpc_error(METHOD_NOT_FOUND, request_id))
            return
        await self._decide_and_forward(
            exchange, operation, tenant, body=body, ids=[request_id], extensions=_extensions(exchange)
        )

    async def _batch(self, exchange: Exchange, calls: list[Any]) -> None:
        # Step 6: decide per call; answer the refused ones ourselves, forward only the allowed ones.
        send, auth, how = exchange.send, exchange.auth, exchange.how
        assert isinstance(how, _Answering)
        allowed: list[Any] = []
        decisions: list[Decision] = []
        tenants: list[str | None] = []
        errors: list[dict[str, Any]] = []
        statuses: set[int] = set()
        for call in calls:
            tenant = _call_tenant(call) if isinstance(call, dict) else None
            if not isinstance(call, dict) or not isinstance(call.get("method"), str) or tenant is _BAD_TENANT:
                errors.append(rpc_error(INVALID_REQUEST, call.get("id") if isinstance(call, dict) else None))
                statuses.add(400)
                continue
            notification = "id" not in call
            operation = self._operation(call["method"])
            if operation is None or operation in a2a_methods.STREAMING_OPERATIONS:
                code = METHOD_NOT_FOUND if operation is None else INVALID_REQUEST
                if not notification:
                    errors.append(rpc_error(code, call["id"]))
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
            payload: Any = errors or rpc_error(INVALID_REQUEST, None)
            headers: list[tuple[bytes, bytes]] = []
            if status == 403:
                denial = refusal_for_denial("", scheme=auth.scheme)
                headers = [
                    (b"www-authenticate", line.encode("latin-1")) for line in self._challenges(denial, how)
                ]
            await send_json(send, status, payload, headers)
            return
        if not await self._commit(exchange, None):
            return
        downstream = annotate(exchange.scope, auth, tuple(decisions), tuple(tenants), how.extensions)
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
            answer = parse_json(captured.body)
        except InvalidInput:
            answer = None
    if isinstance(answer, list):
        await send_json(send, 200, [*answer, *errors])
    elif isinstance(answer, dict):
        await send_json(send, 200, [answer, *errors])
    else:
        _log.warning("app's batch answer is not JSON (HTTP %d); passed on without merging", captured.status)
        await captured.forward(send)


#: The extensions a request offers: those of ``A2A-Extensions``, and those with the A2A 0.3
#: ``X-A2A-Extensions`` as well (the same object when the request has no 0.3 header, so the call's
#: generation is looked up only when it can change the answer).
_Offered = tuple[frozenset[str], frozenset[str]]
_NO_OFFER: Final[_Offered] = (_NO_EXTENSIONS, _NO_EXTENSIONS)


def _offered_extensions(headers: Sequence[tuple[bytes, bytes]]) -> _Offered:
    """The extensions of ``A2A-Extensions`` alone, and with ``X-A2A-Extensions``.

    Why two: a2a-sdk reads the 0.3 header only for A2A 0.3 calls (its 0.3 adapter's context
    builder); an A2A 1.0 call activates only what ``A2A-Extensions`` names.  Counting the 0.3 header
    for a 1.0 call would let a call past ``required_extensions`` that the agent then runs with the
    extension inactive.  Both sets are checked as one (a flood split across the two headers is
    still a flood)."""
    current = header_values(headers, _EXTENSIONS_FIELD)
    legacy = header_values(headers, _LEGACY_EXTENSIONS_FIELD)
    with_legacy = requested_extensions(current + legacy)
    return (requested_extensions(current) if legacy else with_legacy), with_legacy


def _all_v03(calls: Sequence[Any]) -> bool:
    """Whether every call is an A2A 0.3 JSON-RPC method (so the 0.3 extension header counts)."""
    return all(isinstance(call, dict) and call.get("method") in a2a_methods.A2A_V03_METHODS for call in calls)


def _extensions(exchange: Exchange) -> frozenset[str]:
    how = exchange.how
    return how.extensions if isinstance(how, _Answering) else _NO_EXTENSIONS


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


def _refuse_shared_paths(jsonrpc_paths: Collection[str], prefix: str, v03_compat: bool) -> None:
    """Refuse, at start-up, a JSON-RPC endpoint that is also a ``POST`` REST route of the server.

    Why: the middleware decides a ``POST`` on a JSON-RPC path by the method in its body, while
    Starlette runs whichever of the two routes the app registered first.  With the REST route first,
    ``POST /agent/message:send`` decided as the body's ``GetTask`` (no tenant) ran ``SendMessage`` in
    tenant ``agent``.  The middleware cannot see the app's route order in general, so such a path is
    a deployment error, not something to guess at per request.
    """
    for path in sorted(jsonrpc_paths):
        if a2a_methods.route_for("POST", path, prefix=prefix, v03_compat=v03_compat) is not None:
            raise InvalidInput(
                f"the JSON-RPC path {path!r} is also an A2A REST route: move the JSON-RPC endpoint",
                code="bad_config",
                option="jsonrpc_paths",
            )


def _with_length(scope: Scope, length: int) -> Scope:
    headers = [(k, v) for k, v in scope["headers"] if k not in {b"content-length", b"transfer-encoding"}]
    headers.append((b"content-length", str(length).encode()))
    downstream = dict(scope)
    downstream["headers"] = headers
    return downstream
