"""The pre-authentication read slots of A2AAuthMiddleware, driven in-process with raw ASGI messages.

A free slot is taken at once (no waiting, so ``read_slot_wait=0`` still admits requests while slots
are free); when every slot holds a stalled body the next request waits in line at most
``read_slot_wait`` and is then refused 503, and a slot freed meanwhile goes to the waiting request.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from mudrika.trust.middleware import A2AAuthMiddleware, Authenticated, AuthRequest, Limits
from mudrika.trust.policy import Principal
from tests._support.tokenfactory import demo_policy

#: Every wait in these tests is bounded: a regression fails the test instead of hanging it.  A hang
#: guard, not a budget: every wait is event-driven and ends in milliseconds, even on a loaded machine.
DEADLINE = 120.0
BODY = json.dumps({"jsonrpc": "2.0", "method": "message/send", "params": {}, "id": 1}).encode()


class _Agent:
    """Authenticates every request that reaches it (the slots come before authentication)."""

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        principal = Principal(subject="agent", roles=frozenset({"agent"}))
        return Authenticated(principal=principal, scheme="Test", credential_id="test")


async def _app(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def _middleware(**limits: Any) -> A2AAuthMiddleware:
    return A2AAuthMiddleware(_app, authenticators=[_Agent()], policy=demo_policy(), limits=Limits(**limits))


def _scope() -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": "/",
        "raw_path": b"/",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
    }


class _Request:
    """One request whose body arrives only when :meth:`finish_body` is called (None: at once)."""

    def __init__(self, *, stalled: bool = False) -> None:
        self.body_sent = anyio.Event()
        if not stalled:
            self.body_sent.set()
        self.reading = anyio.Event()
        self.messages: list[dict[str, Any]] = []

    def finish_body(self) -> None:
        self.body_sent.set()

    async def receive(self) -> dict[str, Any]:
        self.reading.set()
        await self.body_sent.wait()
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.messages.append(dict(message))

    @property
    def status(self) -> int | None:
        starts = [m for m in self.messages if m["type"] == "http.response.start"]
        return int(starts[0]["status"]) if starts else None

    def header(self, name: bytes) -> bytes | None:
        starts = [m for m in self.messages if m["type"] == "http.response.start"]
        return dict(starts[0]["headers"]).get(name) if starts else None

    async def run(self, middleware: A2AAuthMiddleware) -> None:
        await middleware(_scope(), self.receive, self.send)


@pytest.mark.anyio
async def test_a_free_slot_is_taken_without_waiting() -> None:
    middleware = _middleware(max_concurrent_reads=1, read_slot_wait=0)
    for _ in range(3):  # the slot is given back after every read
        request = _Request()
        await request.run(middleware)
        assert request.status == 200


@pytest.mark.anyio
async def test_full_slots_refuse_at_once_without_a_wait() -> None:
    middleware = _middleware(max_concurrent_reads=1, read_slot_wait=0)
    stalled, refused, after = _Request(stalled=True), _Request(), _Request()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as group:
            group.start_soon(stalled.run, middleware)
            await stalled.reading.wait()  # the stalled body holds the only slot
            await refused.run(middleware)
            stalled.finish_body()
        await after.run(middleware)
    assert refused.status == 503
    assert refused.header(b"retry-after")
    assert (stalled.status, after.status) == (200, 200)


@pytest.mark.anyio
async def test_a_waiting_request_gets_the_slot_freed_within_the_wait() -> None:
    middleware = _middleware(max_concurrent_reads=1, read_slot_wait=DEADLINE)
    stalled, waiting = _Request(stalled=True), _Request()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as group:
            group.start_soon(stalled.run, middleware)
            await stalled.reading.wait()
            group.start_soon(waiting.run, middleware)
            await anyio.wait_all_tasks_blocked()
            assert waiting.status is None  # queued behind the stalled body, not refused
            assert not waiting.reading.is_set()  # and its body not read yet
            stalled.finish_body()
    assert (stalled.status, waiting.status) == (200, 200)


@pytest.mark.anyio
async def test_a_waiting_request_is_refused_when_no_slot_frees_in_time() -> None:
    middleware = _middleware(max_concurrent_reads=1, read_slot_wait=0.05)
    stalled, late = _Request(stalled=True), _Request()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as group:
            group.start_soon(stalled.run, middleware)
            await stalled.reading.wait()
            await late.run(middleware)
            stalled.finish_body()
    assert late.status == 503
    assert stalled.status == 200
