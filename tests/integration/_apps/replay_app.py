"""Replay-race app: one replica of an agent server that accepts each presented ``jti`` once.

Served by ``python -m uvicorn tests.integration._apps.replay_app:create_app --factory``; every replica
reads the same Redis from ``MUDRIKA_TEST_REDIS_URL`` and namespace from ``MUDRIKA_TEST_REPLAY_NAMESPACE``.
Answers: 200 ``{"accepted": true}`` for the first presentation, 409 ``{"error": "replay"}`` for every
later one, 400 for a malformed body, 503 when the replay store is unavailable (fail closed).

To race another kind of presentation, add a route to :func:`build_routes`; the store is shared.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from mudrika.errors import InvalidInput, UnavailableError
from mudrika.stores.replay import RedisReplayStore

ENV_REDIS_URL: Final = "MUDRIKA_TEST_REDIS_URL"
ENV_NAMESPACE: Final = "MUDRIKA_TEST_REPLAY_NAMESPACE"
MAX_BODY: Final = 4096
CLAIM_TTL: Final = 300.0


def build_routes(store: RedisReplayStore) -> list[BaseRoute]:
    async def present(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY:
            return JSONResponse({"error": "too_large"}, status_code=413)
        try:
            jti = json.loads(body)["jti"]
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "malformed"}, status_code=400)
        if not isinstance(jti, str):
            return JSONResponse({"error": "malformed"}, status_code=400)
        try:
            won = await store.aclaim(f"jti:race:{jti}", time.time() + CLAIM_TTL)
        except InvalidInput:
            return JSONResponse({"error": "malformed"}, status_code=400)
        except UnavailableError:
            return JSONResponse({"error": "unavailable"}, status_code=503)
        if won:
            return JSONResponse({"accepted": True, "pid": os.getpid()})
        return JSONResponse({"error": "replay"}, status_code=409)

    async def health(request: Request) -> Response:
        return PlainTextResponse(str(os.getpid()))

    return [Route("/present", present, methods=["POST"]), Route("/health", health)]


def create_app() -> Starlette:
    store = RedisReplayStore(os.environ[ENV_REDIS_URL], namespace=os.environ[ENV_NAMESPACE])

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await store.aclose()

    app = Starlette(routes=build_routes(store), lifespan=lifespan)
    app.state.replay_store = store
    return app
