"""MCP methods, mapped to the operations a policy file names.

Why a table and not "any method": deny by default.  A call whose method MCP does not define is never
forwarded (the middleware answers ``-32601`` itself), and a defined method reaches the server only
when the policy names an operation for it.  Operations are the MCP method names themselves, with two
refinements so one file can say what a deployment needs:

* **by name**: ``tools/call`` of tool ``refund`` is the operation ``tools/call:refund`` when the policy
  names it (likewise ``prompts/get:<prompt>``), so one dangerous tool can need a higher level, or one
  harmless tool a lower one, than ``tools/call`` as a whole;
* **by family**: ``tools/*``, ``resources/*``, ``prompts/*``, ``notifications/*`` … cover every method
  of the family the policy does not name one by one.

The most specific operation the policy names wins; when it names none, the call is decided as its
bare method, which the policy then refuses as an unknown operation (403, never forwarded).

The streamable-HTTP session itself (the ``GET`` stream, the ``DELETE`` that ends it, and the client's
JSON-RPC *responses* to server requests such as sampling) is decided as :data:`SESSION_OPERATION`,
``initialize``: whoever may open a session may listen on it, answer in it and close it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "CLIENT_NOTIFICATIONS",
    "MCP_METHODS",
    "NAMED_CALLS",
    "SESSION_OPERATION",
    "is_known",
    "operation_for",
    "operation_for_call",
]

#: Requests a client sends a server (MCP 2025-06-18, 2025-11-25 and 2026-07-28 revisions).
MCP_METHODS: Final = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "logging/setLevel",
        "completion/complete",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
    }
)
#: Notifications a client sends a server.
CLIENT_NOTIFICATIONS: Final = frozenset(
    {
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/roots/list_changed",
        "notifications/tasks/status",
    }
)
#: Calls refined by the name in their params: method -> the params member that names the target.
NAMED_CALLS: Final[Mapping[str, str]] = {"tools/call": "name", "prompts/get": "name"}
SESSION_OPERATION: Final = "initialize"


def is_known(method: str) -> bool:
    """Whether MCP defines ``method`` as a client-to-server request or notification."""
    return method in MCP_METHODS or method in CLIENT_NOTIFICATIONS


def operation_for_call(method: str, params: Any) -> list[str]:
    """The operations a call may be decided as, most specific first (module docstring)."""
    candidates: list[str] = []
    member = NAMED_CALLS.get(method)
    if member is not None and isinstance(params, dict):
        name = params.get(member)
        # No length cap: a name the cap dropped would be decided by a looser rule than its own.
        if isinstance(name, str) and name:
            candidates.append(f"{method}:{name}")
    candidates.append(method)
    family, _, _ = method.rpartition("/")
    while family:
        candidates.append(family + "/*")
        family, _, _ = family.rpartition("/")
    return candidates


def operation_for(method: str, params: Any, names: Callable[[str], bool]) -> str:
    """The operation the policy decides for this call: the first candidate ``names`` (the policy's
    "do you name this operation?") accepts, else the bare method (then refused as unknown)."""
    for candidate in operation_for_call(method, params):
        if names(candidate):
            return candidate
    return method
