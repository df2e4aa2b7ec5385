"""A2A JSON-RPC methods and HTTP+JSON routes, mapped to the operation names the policy speaks.

Why one canonical name per operation: agent cards and policy files name operations the way A2A 0.3
named its JSON-RPC methods (``message/send``, ``tasks/get`` ...).  A2A 1.0 renamed the methods
(``SendMessage``, ``GetTask`` ...) and added an HTTP+JSON binding whose routes carry the operation in
the path (``POST /message:send``).  A server built with ``a2a-sdk`` 1.x answers all three at once
(1.0 JSON-RPC, 0.3 JSON-RPC under ``enable_v0_3_compat``, and REST), so the middleware must reach the
same decision whichever spelling a caller uses: a viewer who may not ``message/send`` must not get
through as ``SendMessage`` or ``POST /v1/message:send``.

The REST table mirrors ``a2a.server.routes.rest_routes.create_rest_routes`` and the 0.3
``REST03Adapter`` in a2a-sdk 1.3 *including their order*: Starlette takes the first route whose path
and method both match, and a path parameter matches ``[^/]+`` (so ``GET /tasks/x:cancel`` is a
``GetTask`` for id ``x:cancel``).  Matching the same way is what keeps the operation we authorise
equal to the handler the application runs.

The table must also hold *the same routes* as the server: whether the 0.3 ``/v1/…`` routes exist is
the server's ``enable_v0_3_compat`` (off by default in a2a-sdk).  Without them Starlette sends
``POST /v1/message:send`` to the ``/{tenant}`` mount — tenant ``v1`` — so a table that matched the
0.3 route first would authorise a call with no tenant while the agent runs in tenant ``v1``.  That is
why every lookup here takes ``v03_compat`` as a required argument: no caller can fall back to a
table of some other server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = [
    "A2A_V03_METHODS",
    "A2A_V10_METHODS",
    "OPERATIONS",
    "STREAMING_OPERATIONS",
    "RestRoute",
    "is_v03_route",
    "operation_for_method",
    "operation_for_route",
    "rest_routes",
    "route_for",
    "tenant_for_route",
]

# --- canonical operations (the A2A 0.3 method names, plus the task/context extensions) ----------

SEND: Final = "message/send"
STREAM: Final = "message/stream"
GET_TASK: Final = "tasks/get"
LIST_TASKS: Final = "tasks/list"
CANCEL_TASK: Final = "tasks/cancel"
RESUBSCRIBE: Final = "tasks/resubscribe"
PUSH_SET: Final = "tasks/pushNotificationConfig/set"
PUSH_GET: Final = "tasks/pushNotificationConfig/get"
PUSH_LIST: Final = "tasks/pushNotificationConfig/list"
PUSH_DELETE: Final = "tasks/pushNotificationConfig/delete"
EXTENDED_CARD: Final = "agent/getAuthenticatedExtendedCard"

#: A2A 0.3 JSON-RPC method names (each is its own canonical operation).
A2A_V03_METHODS: Final[frozenset[str]] = frozenset(
    {
        SEND,
        STREAM,
        GET_TASK,
        LIST_TASKS,
        CANCEL_TASK,
        RESUBSCRIBE,
        "tasks/feedback",
        "contexts/list",
        "contexts/clear",
        PUSH_SET,
        PUSH_GET,
        PUSH_LIST,
        PUSH_DELETE,
        EXTENDED_CARD,
    }
)

#: A2A 1.0 JSON-RPC method names as a2a-sdk 1.3 dispatches them -> canonical operation.
A2A_V10_METHODS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "SendMessage": SEND,
        "SendStreamingMessage": STREAM,
        "GetTask": GET_TASK,
        "ListTasks": LIST_TASKS,
        "CancelTask": CANCEL_TASK,
        "SubscribeToTask": RESUBSCRIBE,
        "CreateTaskPushNotificationConfig": PUSH_SET,
        "GetTaskPushNotificationConfig": PUSH_GET,
        "ListTaskPushNotificationConfigs": PUSH_LIST,
        "DeleteTaskPushNotificationConfig": PUSH_DELETE,
        "GetExtendedAgentCard": EXTENDED_CARD,
    }
)

#: Every canonical operation this module can produce.
OPERATIONS: Final[frozenset[str]] = A2A_V03_METHODS

#: Operations whose answer is a Server-Sent Events stream rather than one JSON document.
STREAMING_OPERATIONS: Final[frozenset[str]] = frozenset({STREAM, RESUBSCRIBE})

_METHODS: Final[dict[str, str]] = {name: name for name in A2A_V03_METHODS} | dict(A2A_V10_METHODS)


def operation_for_method(method: str) -> str | None:
    """The canonical operation for a JSON-RPC method of either generation, or None if unknown.

    Exact, case-sensitive match: ``sendmessage`` is not ``SendMessage`` (a2a-sdk does not fold case
    either, and a mapping that folded case would authorise calls the app then refuses or, worse,
    routes differently).
    """
    return _METHODS.get(method)


# --- HTTP+JSON (REST) binding --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RestRoute:
    """One REST route: HTTP method, path template (Starlette syntax) and the operation it performs."""

    method: str
    template: str
    operation: str
    pattern: re.Pattern[str]


_PARAM = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_SEGMENT = "[^/]+"  # Starlette's default path convertor: one non-empty segment


def _route(method: str, template: str, operation: str) -> RestRoute:
    parts = _PARAM.split(template)
    regex = _SEGMENT.join(re.escape(part) for part in parts)
    return RestRoute(method, template, operation, re.compile(f"^{regex}$"))


#: The routes both REST bindings have, as (HTTP method, path after the prefix, operation), in
#: a2a-sdk 1.3's order.  Order matters: ``tasks/{id}:subscribe`` must be tried before ``tasks/{id}``,
#: whose ``{id}`` segment would also match ``x:subscribe``.
_SHARED_ROUTES: Final = (
    ("POST", "/message:send", SEND),
    ("POST", "/message:stream", STREAM),
    ("POST", "/tasks/{id}:cancel", CANCEL_TASK),
    ("GET", "/tasks/{id}:subscribe", RESUBSCRIBE),
    ("POST", "/tasks/{id}:subscribe", RESUBSCRIBE),
    ("GET", "/tasks/{id}", GET_TASK),
    ("GET", "/tasks/{id}/pushNotificationConfigs/{push_id}", PUSH_GET),
)
#: A2A 1.0 (a2a-sdk 1.3 ``create_rest_routes``): the shared routes, then these.
_V10_ROUTES: Final = (
    *_SHARED_ROUTES,
    ("DELETE", "/tasks/{id}/pushNotificationConfigs/{push_id}", PUSH_DELETE),
    ("POST", "/tasks/{id}/pushNotificationConfigs", PUSH_SET),
    ("GET", "/tasks/{id}/pushNotificationConfigs", PUSH_LIST),
    ("GET", "/tasks", LIST_TASKS),
    ("GET", "/extendedAgentCard", EXTENDED_CARD),
)
#: A2A 0.3 (a2a-sdk 1.3 ``REST03Adapter.routes()``, under ``/v1``): no delete, no task list, and the
#: extended card at ``/card``.
_V03_ROUTES: Final = (
    *_SHARED_ROUTES,
    ("POST", "/tasks/{id}/pushNotificationConfigs", PUSH_SET),
    ("GET", "/tasks/{id}/pushNotificationConfigs", PUSH_LIST),
    ("GET", "/card", EXTENDED_CARD),
)


def _v10_routes(prefix: str) -> tuple[RestRoute, ...]:
    # The same list is also mounted under "/{tenant}", which is ``_v10_routes("/{tenant}" + prefix)``.
    return tuple(_route(method, prefix + path, operation) for method, path, operation in _V10_ROUTES)


def _v03_routes(prefix: str) -> tuple[RestRoute, ...]:
    # Registered before the 1.0 routes when v0.3 compat is on.
    return tuple(_route(method, f"{prefix}/v1{path}", operation) for method, path, operation in _V03_ROUTES)


_BY_SERVER: dict[tuple[str, bool], tuple[RestRoute, ...]] = {}
_MAX_PREFIXES: Final = 16


def rest_routes(prefix: str = "", *, v03_compat: bool) -> tuple[RestRoute, ...]:
    """The REST routes of ``create_rest_routes(handler, path_prefix=prefix,
    enable_v0_3_compat=v03_compat)``, in Starlette's order: the 0.3 ``/v1`` routes (only when
    ``v03_compat``), the 1.0 routes, then the ``Mount("/{tenant}")`` of the 1.0 routes."""
    key = (prefix, bool(v03_compat))
    routes = _BY_SERVER.get(key)
    if routes is None:
        routes = (
            (_v03_routes(prefix) if v03_compat else ())
            + _v10_routes(prefix)
            + _v10_routes("/{tenant}" + prefix)
        )
        if len(_BY_SERVER) < 2 * _MAX_PREFIXES:
            _BY_SERVER[key] = routes
    return routes


def _match(method: str, path: str, prefix: str, v03_compat: bool) -> RestRoute | None:
    verb = "GET" if method == "HEAD" else method
    for route in rest_routes(prefix, v03_compat=v03_compat):
        if route.method == verb and route.pattern.match(path):
            return route
    return None


def route_for(method: str, path: str, *, prefix: str = "", v03_compat: bool) -> tuple[str, str | None] | None:
    """The operation a REST request performs and the tenant it names, from one match; None when no
    A2A route matches (deny).

    ``path`` is the ASGI route path (``scope["path"]`` without ``root_path``); ``prefix`` is the
    ``path_prefix`` given to ``create_rest_routes`` and ``v03_compat`` its ``enable_v0_3_compat``
    (they must be the server's own: see the module docstring).  The first route whose path *and*
    method match wins, the ``/{tenant}`` mount of the 1.0 routes last.  ``HEAD`` is matched as
    ``GET``, as Starlette does.  The tenant is the first path segment when the matching route is one
    of the ``/{tenant}`` mount's, None otherwise.
    """
    route = _match(method, path, prefix, v03_compat)
    if route is None:
        return None
    tenant = path.split("/", 2)[1] if route.template.startswith("/{tenant}") else None
    return route.operation, tenant


def is_v03_route(method: str, path: str, *, prefix: str = "", v03_compat: bool) -> bool:
    """Whether the route a REST request takes is one of the A2A 0.3 ``/v1`` routes (only when the
    server registers them): the server then serves it as A2A 0.3 (its extension header included).
    Matched as :func:`route_for` matches, so ``DELETE /v1/tasks/x/pushNotificationConfigs/y`` (no
    0.3 route) is the tenant mount's, an A2A 1.0 call in tenant ``v1``."""
    if not v03_compat:
        return False
    route = _match(method, path, prefix, v03_compat)
    return route is not None and route.template.startswith(f"{prefix}/v1/")


def operation_for_route(method: str, path: str, *, prefix: str = "", v03_compat: bool) -> str | None:
    """The operation of :func:`route_for`, or None when no A2A route matches (deny)."""
    route = _match(method, path, prefix, v03_compat)
    return None if route is None else route.operation


def tenant_for_route(method: str, path: str, *, prefix: str = "", v03_compat: bool) -> str | None:
    """The tenant of :func:`route_for`: the first path segment when the matching route is one of the
    ``/{tenant}`` mount's; None otherwise."""
    found = route_for(method, path, prefix=prefix, v03_compat=v03_compat)
    return None if found is None else found[1]
