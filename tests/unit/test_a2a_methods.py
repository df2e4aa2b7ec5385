"""A2A method and REST route -> operation map, both generations, in a2a-sdk 1.3's matching order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mudrika.trust.a2a import methods
from mudrika.trust.a2a.methods import (
    A2A_V03_METHODS,
    A2A_V10_METHODS,
    OPERATIONS,
    is_v03_route,
    operation_for_method,
    operation_for_route,
    rest_routes,
    route_for,
)


@pytest.fixture(autouse=True)
def _route_tables_built_by_each_test() -> Iterator[None]:
    """Every test builds the route tables it uses: a table another test left in the memo would hide
    the table's own lines from that test (and from the mutation check's choice of tests)."""
    methods._BY_SERVER.clear()
    yield
    methods._BY_SERVER.clear()


def test_a_servers_table_is_built_once_and_the_memo_is_bounded() -> None:
    assert rest_routes(v03_compat=False) is rest_routes("", v03_compat=False)  # "" is the default prefix
    for index in range(methods._MAX_PREFIXES):  # two tables per prefix: with and without 0.3
        rest_routes(f"/p{index}", v03_compat=False)
        rest_routes(f"/p{index}", v03_compat=True)
    assert len(methods._BY_SERVER) == 2 * methods._MAX_PREFIXES
    beyond = rest_routes("/one-too-many", v03_compat=False)
    assert beyond == rest_routes("/one-too-many", v03_compat=False)
    assert beyond is not rest_routes("/one-too-many", v03_compat=False)  # not remembered
    assert len(methods._BY_SERVER) == 2 * methods._MAX_PREFIXES


def test_no_route_is_an_03_route_on_a_server_without_them() -> None:
    assert is_v03_route("POST", "/v1/message:send", v03_compat=True)
    assert not is_v03_route("POST", "/v1/message:send", v03_compat=False)  # tenant "v1" then


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
        ("POST", "/acme/message:send", "message/send"),  # the /{tenant} mount
        ("GET", "/acme/tasks/t1", "tasks/get"),
    ],
)
@pytest.mark.parametrize("v03", [False, True])
def test_rest_routes(verb: str, path: str, operation: str, v03: bool) -> None:
    assert operation_for_route(verb, path, v03_compat=v03) == operation


@pytest.mark.parametrize(
    ("verb", "path", "operation"),
    [
        ("POST", "/v1/message:send", "message/send"),
        ("GET", "/v1/tasks/t1", "tasks/get"),
        ("POST", "/v1/tasks/t1:cancel", "tasks/cancel"),
        ("GET", "/v1/card", "agent/getAuthenticatedExtendedCard"),
    ],
)
def test_v1_paths_are_the_03_routes_only_when_the_server_serves_them(
    verb: str, path: str, operation: str
) -> None:
    # With compat the 0.3 route (no tenant); without it Starlette's /{tenant} mount, tenant "v1".
    assert route_for(verb, path, v03_compat=True) == (operation, None)
    assert route_for(verb, path, v03_compat=False) in (None, (operation, "v1"))
    assert route_for("POST", "/v1/message:send", v03_compat=False) == ("message/send", "v1")


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
@pytest.mark.parametrize("v03", [False, True])
def test_unknown_routes(verb: str, path: str, v03: bool) -> None:
    assert operation_for_route(verb, path, v03_compat=v03) is None


def test_prefix() -> None:
    assert operation_for_route("POST", "/a2a/message:send", prefix="/a2a", v03_compat=False) == "message/send"
    assert route_for("POST", "/a2a/v1/message:send", prefix="/a2a", v03_compat=True) == ("message/send", None)
    assert route_for("POST", "/a2a/v1/message:send", prefix="/a2a", v03_compat=False) is None
    assert operation_for_route("GET", "/t/a2a/tasks/x", prefix="/a2a", v03_compat=False) == "tasks/get"


class _Handler:
    def __getattr__(self, name: str) -> object:
        return lambda *args, **kwargs: None


def _sdk_routes(v03: bool, prefix: str) -> list[Any]:
    rest = pytest.importorskip("a2a.server.routes.rest_routes")
    routes: list[Any] = rest.create_rest_routes(_Handler(), enable_v0_3_compat=v03, path_prefix=prefix)
    return routes


@pytest.mark.parametrize("prefix", ["", "/a2a"])
@pytest.mark.parametrize("v03", [False, True])
def test_route_table_matches_a2a_sdk(v03: bool, prefix: str) -> None:
    from starlette.routing import Mount, Route

    theirs: list[tuple[str, str]] = []
    for route in _sdk_routes(v03, prefix):
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
    ours = [(route.method, route.template) for route in rest_routes(prefix, v03_compat=v03)]
    assert ours == theirs


def _requests_for(prefix: str) -> list[tuple[str, str]]:
    """Every route of every table (0.3 included), instantiated with tenants "acme" and "v1"."""
    requests = []
    for route in rest_routes(prefix, v03_compat=True):
        for tenant in ("acme", "v1"):
            path = route.template.replace("{tenant}", tenant).replace("{id}", "t1").replace("{push_id}", "p1")
            requests.append((route.method, path))
    return sorted(set(requests))


@pytest.mark.anyio
@pytest.mark.parametrize("prefix", ["", "/a2a"])
@pytest.mark.parametrize("v03", [False, True])
async def test_every_request_is_decided_for_the_route_starlette_runs(v03: bool, prefix: str) -> None:
    """Starlette's own router, over a2a-sdk's own routes, is the oracle: for every request the table
    knows, the operation and tenant we authorise are those of the endpoint the app would run."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Mount, Route

    def recorder(template: str) -> Any:
        async def endpoint(request: Request) -> JSONResponse:
            return JSONResponse({"template": template, "tenant": request.path_params.get("tenant")})

        return endpoint

    routes = _sdk_routes(v03, prefix)
    for route in routes:
        inner = route.routes if isinstance(route, Mount) else [route]
        for leaf in inner:
            if isinstance(leaf, Route):
                leaf.app = Route(leaf.path, recorder(leaf.path), methods=list(leaf.methods or ())).app
    operation_of = {
        (route.method, route.template.removeprefix("/{tenant}")): route.operation
        for route in rest_routes(prefix, v03_compat=True)
    }
    transport = httpx.ASGITransport(app=Starlette(routes=routes))
    async with httpx.AsyncClient(transport=transport, base_url="http://agent") as client:
        for verb, path in _requests_for(prefix):
            answer = await client.request(verb, path)
            found = route_for(verb, path, prefix=prefix, v03_compat=v03)
            if answer.status_code != 200:
                assert found is None, (verb, path)
                continue
            ran = answer.json()
            assert found == (operation_of[verb, ran["template"]], ran["tenant"]), (verb, path)
