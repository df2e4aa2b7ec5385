"""MCP over the gate: an MCP streamable-HTTP endpoint as an OAuth 2.1 resource server.

Why its own protocol module: MCP's authorization rules differ from A2A's in how a refusal must look
(an HTTP 401/403 with a ``WWW-Authenticate`` challenge naming the RFC 9728 metadata, an OAuth error
body, no JSON-RPC code for authentication) and in its routes (one endpoint; ``POST`` carries JSON-RPC,
``GET`` opens the server's stream, ``DELETE`` ends the session; a 404 there means "session not
found", so a refusal must never be one).  The pipeline (steps 1-3 of :mod:`._gate`) is the same.

Per request on the endpoint, after authentication:

* ``POST`` with one JSON-RPC request or notification: the call is decided as the operation
  :func:`mudrika.trust.mcp.methods.operation_for` picks (a tool by name, the method, its family).
  A method MCP does not define is answered here with JSON-RPC ``-32601`` (HTTP 200 for protocol
  revisions with sessions, where 404 would end the session; 404 from revision 2026-07-28 on, which
  has no sessions and asks for it), and a notification MCP does not define with 202; neither reaches
  the server.  A JSON-RPC response (the client answering a server request, e.g. sampling), ``GET``
  and ``DELETE`` are decided as the session operation (``initialize``).  A batch (removed from MCP in
  2025-06-18) is refused with ``-32600``.
* A denied call: HTTP 403, ``WWW-Authenticate: Bearer error="insufficient_scope"`` with the scopes the
  operation needs and ``resource_metadata``, body ``{"error": "insufficient_scope", ...}``.
* An allowed call is forwarded with the principal in the documented scope keys, and, when the MCP
  SDK is installed, as the SDK's own ``scope["user"]``/``scope["auth"]`` and ``get_access_token()``
  (:func:`mudrika.trust.mcp.sdk.sdk_identity`).

Other paths are not the MCP server's: ``GET``/``HEAD`` of a public path passes (none by default); any
other request is refused with 404 before it reaches the app.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from mudrika.errors import InvalidInput
from mudrika.net.logs import log_value
from mudrika.trust.jsonrpc import ErrorProfile, Refusal
from mudrika.trust.mcp import methods as mcp_methods
from mudrika.trust.middleware._auth import Authenticated
from mudrika.trust.middleware._gate import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    AuthGate,
    Echo,
    Exchange,
    annotate,
    parse_json,
    rpc_error,
)
from mudrika.trust.middleware._http import Scope, Send, header_values, replay, send_json
from mudrika.trust.middleware._resource import ResourceServer

__all__ = ["McpAuthMiddleware", "McpRoutes"]

_log = logging.getLogger("mudrika.trust.middleware")

#: The first MCP revision without sessions, where an unknown method is answered 404 (its transport
#: section); earlier revisions keep 404 for "session not found".
_SESSIONLESS_REVISION: Final = "2026-07-28"
# OAuth error codes of a refusal's body (RFC 6750 §3.1, RFC 6749 §4.1.2.1), by HTTP status.
_OAUTH_ERROR: Final = {
    401: "invalid_token",
    403: "insufficient_scope",
    429: "too_many_requests",
    503: "temporarily_unavailable",
}


@dataclass(frozen=True, slots=True)
class McpRoutes:
    """Where the MCP server answers: its streamable-HTTP ``endpoint`` (the MCP SDK's default ``/mcp``)."""

    endpoint: str = "/mcp"

    def __post_init__(self) -> None:
        if not isinstance(self.endpoint, str) or not self.endpoint.startswith("/"):
            raise InvalidInput("endpoint must be an absolute path", code="bad_config", option="endpoint")


@dataclass(frozen=True, slots=True)
class _Answering:
    """MCP's refusals: the scheme's challenge (with ``error`` only when credentials were presented)
    and an OAuth error body; MCP defines no JSON-RPC code for authentication."""

    def challenge(self, refusal: Refusal, realm: str) -> str | None:
        # The a2a profile's challenge is exactly RFC 6750's: the scheme that failed, no ``error`` when
        # no credentials were sent, ``insufficient_scope`` on a 403.
        return refusal.challenge(ErrorProfile.A2A, realm=realm)

    def body(self, refusal: Refusal, echo: Echo) -> Any:
        return {"error": _OAUTH_ERROR[refusal.status], "error_description": refusal.message}


_ANSWERING: Final = _Answering()


class McpAuthMiddleware(AuthGate[McpRoutes]):
    """The MCP authentication/authorisation gate (see the module docstring for every rule).

    ``resource`` is required: an MCP server is an RFC 9728 protected resource, and its metadata URL is
    in every challenge.  ``routes`` names the endpoint (:class:`McpRoutes`), ``limits`` caps requests.
    """

    routes_type = McpRoutes
    default_realm = "mcp"

    def _configure(self) -> None:
        if not isinstance(self.resource, ResourceServer):
            raise InvalidInput("an MCP server needs its ResourceServer metadata", code="bad_config")
        self.endpoint = self.routes.endpoint

    # -- the gate's hooks ---------------------------------------------------------------------------

    def _answering(self, scope: Scope, method: str, path: str) -> _Answering:
        return _ANSWERING

    async def _dispatch(self, exchange: Exchange, body: bytes) -> None:
        if exchange.path != self.endpoint:
            _log.warning(
                "no MCP endpoint at %s %s", log_value(exchange.method, limit=16), log_value(exchange.path)
            )
            await send_json(
                exchange.send, 404, {"error": "not_found", "error_description": "No such endpoint"}
            )
            return
        if exchange.method != "POST":
            # GET (the server's stream), DELETE (end of session) and whatever else the transport
            # answers itself (405): the session's own routes.
            await self._decide(exchange, mcp_methods.SESSION_OPERATION, body=body, request_id=None)
            return
        try:
            document = parse_json(body)
        except InvalidInput:
            await send_json(exchange.send, 400, rpc_error(PARSE_ERROR, None))
            return
        if not isinstance(document, dict) or document.get("jsonrpc") != "2.0":
            await send_json(exchange.send, 400, rpc_error(INVALID_REQUEST, None))
            return
        request_id = document.get("id")
        method = document.get("method")
        if method is None and "id" in document and ("result" in document or "error" in document):
            # The client's answer to a server request (sampling, elicitation, roots).
            await self._decide(exchange, mcp_methods.SESSION_OPERATION, body=body, request_id=None)
            return
        if not isinstance(method, str):
            await send_json(exchange.send, 400, rpc_error(INVALID_REQUEST, request_id))
            return
        if not mcp_methods.is_known(method):
            await self._unknown(exchange, request_id, notification="id" not in document)
            return
        operation = mcp_methods.operation_for(
            method, document.get("params"), lambda name: self.policy.minimum_level(name) is not None
        )
        await self._decide(exchange, operation, body=body, request_id=request_id)

    # -- MCP specifics ------------------------------------------------------------------------------

    async def _decide(self, exchange: Exchange, operation: str, *, body: bytes, request_id: Any) -> None:
        auth = exchange.auth
        decision = self.policy.decide(auth.principal, operation)
        if not decision.allowed:
            await self._deny(exchange, operation, decision, None if request_id is None else [request_id])
            return
        if not await self._commit(exchange, None):
            return
        downstream = _with_sdk_identity(
            annotate(exchange.scope, auth, (decision,), (None,)), auth, self.resource
        )
        with _sdk_context(downstream):
            await self.app(downstream, replay(body, exchange.receive), exchange.send)

    async def _unknown(self, exchange: Exchange, request_id: Any, *, notification: bool) -> None:
        """A method MCP does not define: never forwarded.  A notification is accepted and dropped (a
        JSON-RPC notification has no answer); a request gets ``-32601``."""
        _log.warning("unknown MCP method from %s", log_value(exchange.auth.principal.subject))
        if notification:
            await _accepted(exchange.send)
            return
        versions = header_values(exchange.scope["headers"], b"mcp-protocol-version")
        sessionless = bool(versions) and versions[0].strip() >= _SESSIONLESS_REVISION
        await send_json(exchange.send, 404 if sessionless else 200, rpc_error(METHOD_NOT_FOUND, request_id))


async def _accepted(send: Send) -> None:
    """202 Accepted, no body: what the streamable-HTTP transport answers a notification."""
    await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


def _with_sdk_identity(scope: Scope, auth: Authenticated, resource: ResourceServer | None) -> Scope:
    """The caller as the MCP SDK reads it, when the SDK is installed (else mudrika's own
    Starlette-style ``user``/``auth`` stay, as for A2A)."""
    try:
        from mudrika.trust.mcp.sdk import sdk_identity

        user, credentials = sdk_identity(auth, resource=None if resource is None else resource.resource)
    except ImportError:
        return scope
    scope["user"] = user
    scope["auth"] = credentials
    return scope


@contextlib.contextmanager
def _sdk_context(scope: Scope) -> Iterator[None]:
    """``get_access_token()`` inside the tool: the SDK's context variable, set for this request."""
    try:
        from mcp.server.auth.middleware.auth_context import auth_context_var
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    except ImportError:
        yield
        return
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        yield
        return
    token = auth_context_var.set(user)
    try:
        yield
    finally:
        auth_context_var.reset(token)
