"""Pure ASGI middleware: authenticate, map the A2A call to an operation, ask the policy, or deny.

Why pure ASGI (no Starlette ``BaseHTTPMiddleware``): it must see the raw body stream to cap it,
must hand the app a replay of exactly the bytes it checked, and must not break streaming (SSE)
responses of the calls it lets through.

Per HTTP request, in this order:

1. Non-HTTP scopes (``lifespan``, ``websocket``) pass through untouched.  ``GET``/``HEAD`` on a public
   path (agent card, DID document; configurable) passes through with no principal.
2. The body is read with a streamed cap (default 1 MiB): a larger declared ``Content-Length`` or,
   for chunked bodies, the running byte count passing the cap is answered at once with HTTP 413
   (JSON-RPC -32600 "Request too large", id null).
3. Authentication by the first :class:`Authenticator` whose credentials are present (Bearer tokens
   now; RFC 9421 signed requests can be added: an authenticator gets method, path, headers and the
   buffered body).  None present -> -32009; bad -> the exact code (-32010/-32011/-32012), HTTP 401
   with ``WWW-Authenticate``.  IdP unreachable and nothing cached covers the credential -> HTTP 503,
   ``Retry-After``, JSON-RPC -32010 "Authentication unavailable" (fail closed; detail in logs).
   Authentication comes before parsing: an unauthenticated caller learns nothing about the parser.
4. JSON-RPC endpoint (``POST`` on ``jsonrpc_paths``): the body must be UTF-8 JSON (otherwise HTTP 400,
   -32700 "Parse error", id null).  Each call's method is mapped to its canonical operation
   (:mod:`mudrika.trust.a2a.methods`, both A2A generations; a method the policy itself names is its
   own operation).  Any other request: its REST route is mapped the same way.
5. ``Policy.decide(principal, operation)``.  An unknown method or route is never forwarded: HTTP 404,
   -32601 "Method not found" (we answer for the app: deny by default).  A denied call: HTTP 403,
   -32013, with the request id echoed.
6. Batches: calls that are denied, unknown, malformed, or streaming (a stream cannot be part of a
   batch answer) are answered by the middleware; ONLY the allowed calls are forwarded, as a rewritten
   batch, and the app's JSON answer is merged with our error objects (notifications get none).  If
   the app's answer is not a JSON document (or not HTTP 200) it is passed on unchanged.  a2a-sdk 1.3
   refuses batches with one error object (id null); that object is kept in the merged array.

What the app sees (the documented scope keys): ``scope["state"]["mudrika.principal"]`` (the
:class:`~mudrika.trust.policy.Principal`, None on public paths), ``scope["state"]["mudrika.auth"]``
(:class:`Authenticated`), ``scope["state"]["mudrika.decisions"]`` (the allowed
:class:`~mudrika.trust.policy.Decision` objects), and Starlette-compatible ``scope["user"]``
(``is_authenticated``, ``display_name``, ``identity``) and ``scope["auth"]`` (``.scopes``: the
principal's permissions), which a2a-sdk turns into its ``ServerCallContext.user``.

Tokens are read from exactly one ``Authorization`` header, scheme case-insensitive; a token in the
query string (``?access_token=``) is ignored.  Error bodies are generic; details go to the
``mudrika.trust.middleware`` logger, with the credential's hash label, never the credential.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from mudrika.errors import InvalidInput, UnavailableError, VerificationError
from mudrika.trust.a2a import methods as a2a_methods
from mudrika.trust.jsonrpc import (
    A2AAuthError,
    AuthenticationRequired,
    InvalidToken,
    JsonRpcAuthCode,
    code_for,
    error_response,
    http_status_for,
    www_authenticate,
)
from mudrika.trust.keycloak.tokens import AccessTokenVerifier, VerifiedToken
from mudrika.trust.middleware._http import (
    ASGIApp,
    Receive,
    ResponseCapture,
    Scope,
    Send,
    header_values,
    read_body,
    replay,
    send_json,
)
from mudrika.trust.policy import Decision, Policy, Principal

__all__ = [
    "AUTH_KEY",
    "DECISIONS_KEY",
    "DEFAULT_PUBLIC_PATHS",
    "PRINCIPAL_KEY",
    "A2AAuthMiddleware",
    "AuthRequest",
    "Authenticated",
    "AuthenticatedUser",
    "Authenticator",
    "BearerAuthenticator",
    "Credentials",
]

_log = logging.getLogger("mudrika.trust.middleware")

PRINCIPAL_KEY: Final = "mudrika.principal"
AUTH_KEY: Final = "mudrika.auth"
DECISIONS_KEY: Final = "mudrika.decisions"
DEFAULT_PUBLIC_PATHS: Final = frozenset(
    {"/.well-known/agent-card.json", "/.well-known/agent.json", "/.well-known/did.json"}
)
DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
DEFAULT_MAX_BATCH: Final = 64
_MEMO_LIMIT: Final = 4096

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
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
class Credentials:
    """Starlette's ``AuthCredentials`` interface: ``scopes`` are the principal's permissions."""

    scopes: list[str]


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
    user: AuthenticatedUser = field(init=False, repr=False, compare=False)
    credentials: Credentials = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "user", AuthenticatedUser(self.principal))
        object.__setattr__(self, "credentials", Credentials(sorted(self.principal.permissions)))


class Authenticator(Protocol):
    """One authentication scheme.

    Return None when this scheme's credentials are absent (the next authenticator is tried); return
    :class:`Authenticated` when they verify; raise an error from :mod:`mudrika.trust.jsonrpc` (or any
    ``VerificationError`` / ``InvalidInput`` / ``IdpUnavailable``) when they are present but bad —
    a bad credential is never "absent".
    """

    async def authenticate(self, request: AuthRequest) -> Authenticated | None: ...


class BearerAuthenticator:
    """RFC 6750 §2.1: ``Authorization: Bearer <token>``, verified by an :class:`AccessTokenVerifier`.

    The scheme name is case-insensitive (``bearer`` works); more than one ``Authorization`` header is
    refused (-32010) rather than guessing which one counts; §2.3 query-string tokens are not read.
    """

    scheme = "Bearer"

    def __init__(self, verifier: AccessTokenVerifier) -> None:
        self._verifier = verifier
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
        if scheme.lower() != "bearer":
            return None
        credential = credential.strip()
        if not credential:
            raise InvalidToken("empty bearer credential", code="malformed_token")
        verified = await self._verifier.a_verify(credential)
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


# --- JSON-RPC helpers ----------------------------------------------------------------------------


def _rpc_error(code: int, request_id: Any) -> dict[str, Any]:
    echoed = request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None
    if isinstance(echoed, str) and len(echoed) > 256:
        echoed = None
    return {"jsonrpc": "2.0", "error": {"code": code, "message": _MESSAGES[code]}, "id": echoed}


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
    ``path_prefix`` of its REST routes; ``extra_methods`` maps further JSON-RPC method names (e.g.
    an extension's) to operations.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticators: Sequence[Authenticator],
        policy: Policy,
        jsonrpc_paths: Collection[str] = ("/",),
        rest_prefix: str = "",
        public_paths: Collection[str] = DEFAULT_PUBLIC_PATHS,
        extra_methods: Mapping[str, str] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_batch: int = DEFAULT_MAX_BATCH,
        realm: str = "a2a",
        retry_after: int = 5,
    ) -> None:
        if not authenticators:
            raise InvalidInput("at least one authenticator is required", code="bad_config")
        if max_body_bytes <= 0 or max_batch <= 0 or retry_after < 0:
            raise InvalidInput("limits must be positive", code="bad_config")
        self.app = app
        self.authenticators = tuple(authenticators)
        self.policy = policy
        self.jsonrpc_paths = frozenset(jsonrpc_paths)
        self.rest_prefix = rest_prefix
        self.public_paths = frozenset(public_paths)
        self.extra_methods = dict(extra_methods or {})
        self.max_body_bytes = max_body_bytes
        self.max_batch = max_batch
        self.realm = realm
        self._retry_after = str(retry_after).encode()

    # -- entry point --------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Step 1: only HTTP is ours.
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        path = _route_path(scope)
        if path in self.public_paths and method in {"GET", "HEAD"}:
            await self.app(_annotate(scope, None, ()), receive, send)
            return
        # Step 2: the body, capped while streaming.
        body = await read_body(scope, receive, send, self.max_body_bytes)
        if body is None:
            return
        is_rpc = method == "POST" and path in self.jsonrpc_paths
        # Step 3: authenticate.
        request = AuthRequest(
            method=method,
            path=path,
            query_string=scope.get("query_string", b""),
            headers=scope["headers"],
            body=body,
            raw_path=scope.get("raw_path"),
        )
        try:
            auth = await self._authenticate(request)
        except UnavailableError as exc:
            # IdP, resolver or replay store down: fail closed with 503, never let the call through.
            _log.warning("auth unavailable for %s %s: %s", method, path[:128], exc.code)
            await self._unavailable(send, body if is_rpc else b"")
            return
        except Exception as exc:
            await self._auth_failed(send, exc, body if is_rpc else b"", method, path)
            return
        # Steps 4-6.
        if is_rpc:
            await self._jsonrpc(scope, receive, send, auth, body)
        else:
            await self._rest(scope, receive, send, auth, body=body, method=method, path=path)

    # -- authentication -----------------------------------------------------------------------------

    async def _authenticate(self, request: AuthRequest) -> Authenticated:
        for authenticator in self.authenticators:
            result = await authenticator.authenticate(request)
            if result is not None:
                return result
        raise AuthenticationRequired("no credentials", code="no_credentials")

    async def _auth_failed(self, send: Send, exc: Exception, body: bytes, method: str, path: str) -> None:
        if isinstance(exc, A2AAuthError | VerificationError | InvalidInput):
            code = code_for(exc)
            _log.info("auth failed for %s %s: %s (%s)", method, path[:128], exc.code, int(code))
        else:
            # A bug in an authenticator is a deny, never a pass.
            code = JsonRpcAuthCode.INVALID_TOKEN
            _log.exception("authenticator raised %s", type(exc).__name__)
        ids = _ids_for_echo(body) if body else None
        payload: Any
        if ids is None or len(ids) == 0:
            payload = error_response(code, None)
        elif len(ids) == 1 and not body.lstrip().startswith(b"["):
            payload = error_response(code, ids[0])
        else:
            payload = [error_response(code, request_id) for request_id in ids]
        headers = [(b"www-authenticate", www_authenticate(code, realm=self.realm).encode("latin-1"))]
        await send_json(send, http_status_for(code), payload, headers)

    async def _unavailable(self, send: Send, body: bytes) -> None:
        ids = _ids_for_echo(body) if body else None
        request_id = ids[0] if ids and len(ids) == 1 else None
        payload = {
            "jsonrpc": "2.0",
            "error": {"code": int(JsonRpcAuthCode.INVALID_TOKEN), "message": "Authentication unavailable"},
            "id": error_response(JsonRpcAuthCode.INVALID_TOKEN, request_id)["id"],
        }
        await send_json(send, 503, payload, [(b"retry-after", self._retry_after)])

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
            operation[:128],
            auth.principal.subject[:128],
            decision.reason,
            auth.credential_id,
        )

    async def _forbidden(self, send: Send, payload: Any) -> None:
        code = JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS
        headers = [(b"www-authenticate", www_authenticate(code, realm=self.realm).encode("latin-1"))]
        await send_json(send, 403, payload, headers)

    async def _rest(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        auth: Authenticated,
        *,
        body: bytes,
        method: str,
        path: str,
    ) -> None:
        operation = a2a_methods.operation_for_route(method, path, prefix=self.rest_prefix)
        if operation is None:
            _log.info("no A2A route for %s %s", method, path[:128])
            await send_json(send, 404, _rpc_error(METHOD_NOT_FOUND, None))
            return
        decision = self.policy.decide(auth.principal, operation)
        if not decision.allowed:
            self._deny_log(auth, operation, decision)
            await self._forbidden(send, error_response(JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS, None))
            return
        await self.app(_annotate(scope, auth, (decision,)), replay(body, receive), send)

    async def _jsonrpc(
        self, scope: Scope, receive: Receive, send: Send, auth: Authenticated, body: bytes
    ) -> None:
        # Step 4: parse.
        try:
            document = _parse(body)
        except ValueError:
            await send_json(send, 400, _rpc_error(PARSE_ERROR, None))
            return
        if isinstance(document, dict):
            await self._single(scope, receive, send, auth, body=body, call=document)
        elif isinstance(document, list) and 0 < len(document) <= self.max_batch:
            await self._batch(scope, receive, send, auth, document)
        else:
            await send_json(send, 400, _rpc_error(INVALID_REQUEST, None))

    async def _single(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        auth: Authenticated,
        *,
        body: bytes,
        call: dict[str, Any],
    ) -> None:
        request_id = call.get("id")
        method = call.get("method")
        if not isinstance(method, str):
            await send_json(send, 400, _rpc_error(INVALID_REQUEST, request_id))
            return
        operation = self._operation(method)
        if operation is None:
            _log.info("unknown JSON-RPC method from %s", auth.principal.subject[:128])
            await send_json(send, 404, _rpc_error(METHOD_NOT_FOUND, request_id))
            return
        # Step 5: the policy.
        decision = self.policy.decide(auth.principal, operation)
        if not decision.allowed:
            self._deny_log(auth, operation, decision)
            await self._forbidden(send, error_response(JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS, request_id))
            return
        await self.app(_annotate(scope, auth, (decision,)), replay(body, receive), send)

    async def _batch(
        self, scope: Scope, receive: Receive, send: Send, auth: Authenticated, calls: list[Any]
    ) -> None:
        # Step 6: decide per call; answer the refused ones ourselves, forward only the allowed ones.
        allowed: list[Any] = []
        decisions: list[Decision] = []
        errors: list[dict[str, Any]] = []
        statuses: set[int] = set()
        for call in calls:
            if not isinstance(call, dict) or not isinstance(call.get("method"), str):
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
            decision = self.policy.decide(auth.principal, operation)
            if decision.allowed:
                allowed.append(call)
                decisions.append(decision)
                continue
            self._deny_log(auth, operation, decision)
            if not notification:
                errors.append(error_response(JsonRpcAuthCode.INSUFFICIENT_PERMISSIONS, call["id"]))
            statuses.add(403)
        if not allowed:
            status = 403 if 403 in statuses else (404 if 404 in statuses else 400)
            payload: Any = errors or _rpc_error(INVALID_REQUEST, None)
            if status == 403:
                await self._forbidden(send, payload)
            else:
                await send_json(send, status, payload)
            return
        downstream = _annotate(scope, auth, tuple(decisions))
        if not errors and len(allowed) == len(calls):
            body = json.dumps(calls, separators=(",", ":")).encode()
            await self.app(_with_length(downstream, len(body)), replay(body, receive), send)
            return
        body = json.dumps(allowed, separators=(",", ":")).encode()
        captured = ResponseCapture()
        await self.app(_with_length(downstream, len(body)), replay(body, receive), captured)
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


def _route_path(scope: Scope) -> str:
    # Starlette routes on the path below root_path; so do we, or the two would disagree.
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


def _annotate(scope: Scope, auth: Authenticated | None, decisions: tuple[Decision, ...]) -> Scope:
    state = dict(scope.get("state") or {})
    state[PRINCIPAL_KEY] = None if auth is None else auth.principal
    state[AUTH_KEY] = auth
    state[DECISIONS_KEY] = decisions
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
