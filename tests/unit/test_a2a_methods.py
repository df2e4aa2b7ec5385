"""A2A method and REST route -> operation map, both generations, in a2a-sdk 1.3's matching order."""

from __future__ import annotations

import pytest

from mudrika.trust.a2a.methods import (
    A2A_V03_METHODS,
    A2A_V10_METHODS,
    OPERATIONS,
    REST_ROUTES,
    operation_for_method,
    operation_for_route,
)


@pytest.mark.parametrize("method", sorted(A2A_V03_METHODS))
def test_v03_methods_are_their_own_operation(method: str) -> None:
    assert operation_for_method(method) == method


@pytest.mark.parametrize(
    ("method", "operation"),
    [
        ("SendMessage", "message/send"),
        ("SendStreamingMessage", "message/stream"),
        ("GetTask", "tasks/get"),
        ("ListTasks", "tasks/list"),
        ("CancelTask", "tasks/cancel"),
        ("SubscribeToTask", "tasks/resubscribe"),
        ("CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set"),
        ("GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/get"),
        ("ListTaskPushNotificationConfigs", "tasks/pushNotificationConfig/list"),
        ("DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/delete"),
        ("GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"),
    ],
)
def test_v10_methods(method: str, operation: str) -> None:
    assert operation_for_method(method) == operation


def test_v10_map_matches_a2a_sdk_dispatcher() -> None:
    dispatcher = pytest.importorskip("a2a.server.routes.jsonrpc_dispatcher")
    assert set(A2A_V10_METHODS) == set(dispatcher.JsonRpcDispatcher.METHOD_TO_MODEL)
    adapter = pytest.importorskip("a2a.compat.v0_3.jsonrpc_adapter")
    assert set(adapter.JSONRPC03Adapter.METHOD_TO_MODEL) <= A2A_V03_METHODS
    assert set(A2A_V10_METHODS.values()) <= OPERATIONS


@pytest.mark.parametrize(
    "method", ["sendmessage", "MESSAGE/SEND", "message/send ", "", "tasks/*", "rpc.discover"]
)
def test_unknown_or_case_variants_are_unknown(method: str) -> None:
    assert operation_for_method(method) is None


@pytest.mark.parametrize(
    ("verb", "path", "operation"),
    [
        ("POST", "/message:send", "message/send"),
        ("POST", "/message:stream", "message/stream"),
        ("POST", "/tasks/t1:cancel", "tasks/cancel"),
        ("GET", "/tasks/t1:subscribe", "tasks/resubscribe"),
        ("POST", "/tasks/t1:subscribe", "tasks/resubscribe"),
        ("GET", "/tasks/t1", "tasks/get"),
        ("HEAD", "/tasks/t1", "tasks/get"),
        ("GET", "/tasks/t1:cancel", "tasks/get"),  # Starlette: "{id}" matches "t1:cancel" for GET
        ("GET", "/tasks/t1/pushNotificationConfigs/p1", "tasks/pushNotificationConfig/get"),
        ("DELETE", "/tasks/t1/pushNotificationConfigs/p1", "tasks/pushNotificationConfig/delete"),
        ("POST", "/tasks/t1/pushNotificationConfigs", "tasks/pushNotificationConfig/set"),
        ("GET", "/tasks/t1/pushNotificationConfigs", "tasks/pushNotificationConfig/list"),
        ("GET", "/tasks", "tasks/list"),
        ("GET", "/extendedAgentCard", "agent/getAuthenticatedExtendedCard"),
        ("POST", "/v1/message:send", "message/send"),
        ("GET", "/v1/tasks/t1", "tasks/get"),
        ("POST", "/v1/tasks/t1:cancel", "tasks/cancel"),
        ("GET", "/v1/card", "agent/getAuthenticatedExtendedCard"),
        ("POST", "/acme/message:send", "message/send"),  # the /{tenant} mount
        ("GET", "/acme/tasks/t1", "tasks/get"),
    ],
)
def test_rest_routes(verb: str, path: str, operation: str) -> None:
    assert operation_for_route(verb, path) == operation


@pytest.mark.parametrize(
    ("verb", "path"),
    [
        ("GET", "/message:send"),
        ("PUT", "/tasks/t1"),
        ("DELETE", "/tasks/t1"),
        ("GET", "/tasks/"),
        ("GET", "/"),
        ("POST", "/tasks/t1:cancel/extra"),
        ("GET", "/a/b/tasks/t1"),
        ("OPTIONS", "/message:send"),
        ("GET", "/tasks/a/b"),
    ],
)
def test_unknown_routes(verb: str, path: str) -> None:
    assert operation_for_route(verb, path) is None


def test_prefix() -> None:
    assert operation_for_route("POST", "/a2a/message:send", prefix="/a2a") == "message/send"
    assert operation_for_route("POST", "/a2a/v1/message:send", prefix="/a2a") == "message/send"
    assert operation_for_route("GET", "/t/a2a/tasks/x", prefix="/a2a") == "tasks/get"


def test_route_table_matches_a2a_sdk() -> None:
    rest = pytest.importorskip("a2a.server.routes.rest_routes")
    from starlette.routing import Mount, Route

    class _Handler:
        def __getattr__(self, name: str) -> object:
            return lambda *args, **kwargs: None

    routes = rest.create_rest_routes(_Handler(), enable_v0_3_compat=True)
    theirs: list[tuple[str, str]] = []
    for route in routes:
        if isinstance(route, Route):
            theirs.extend((verb, route.path) for verb in sorted(route.methods or ()) if verb != "HEAD")
        elif isinstance(route, Mount):
            theirs.extend(
                (verb, f"/{{tenant}}{inner.path}")
                for inner in route.routes
                if isinstance(inner, Route)
                for verb in sorted(inner.methods or ())
                if verb != "HEAD"
            )
    ours = [(route.method, route.template) for route in REST_ROUTES]
    assert ours == theirs
