"""DID-signed request app: one replica of an agent server that verifies RFC 9421 signed requests.

Served by ``python -m uvicorn tests.integration._apps.httpsig_app:create_app --factory``.  Every replica
reads the same Redis (``MUDRIKA_TEST_REDIS_URL``, namespace ``MUDRIKA_TEST_REPLAY_NAMESPACE``), trusts
one signer (``MUDRIKA_TEST_HTTPSIG_KEYID`` with public JWK ``MUDRIKA_TEST_HTTPSIG_JWK``) and is addressed
publicly as ``PUBLIC_ORIGIN`` (the replicas sit "behind one load balancer", so a request signed for
that origin is valid on either).

Answers on ``POST /a2a``: 200 ``{"accepted": true, "pid": ..., "did": ...}``; a refused signature
401/403 ``{"error": <code>, "jsonrpc": <A2A code>}``; 503 ``{"error": <code>}`` when the replay store is
unavailable (fail closed).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from mudrika.crypto.keys import PublicKey
from mudrika.errors import InvalidInput, UnavailableError, VerificationError
from mudrika.stores.replay import RedisReplayStore
from mudrika.trust.httpsig import REGISTERED_ALGORITHMS, HttpSignatureVerifier, StaticKeyLookup
from mudrika.trust.jsonrpc import code_for, http_status_for
from mudrika.trust.middleware import AuthRequest, DidSignatureAuthenticator

ENV_REDIS_URL: Final = "MUDRIKA_TEST_REDIS_URL"
ENV_NAMESPACE: Final = "MUDRIKA_TEST_REPLAY_NAMESPACE"
ENV_KEYID: Final = "MUDRIKA_TEST_HTTPSIG_KEYID"
ENV_JWK: Final = "MUDRIKA_TEST_HTTPSIG_JWK"
PUBLIC_ORIGIN: Final = "https://agent.test"
MAX_BODY: Final = 4096


def create_app() -> Starlette:
    store = RedisReplayStore(os.environ[ENV_REDIS_URL], namespace=os.environ[ENV_NAMESPACE])
    keys = StaticKeyLookup({os.environ[ENV_KEYID]: PublicKey.from_jwk(json.loads(os.environ[ENV_JWK]))})
    verifier = HttpSignatureVerifier(
        keys=keys,
        replay_store=store,
        origins=[PUBLIC_ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
        max_body=MAX_BODY,
    )
    authenticator = DidSignatureAuthenticator(verifier, public_origin=PUBLIC_ORIGIN)

    async def a2a(request: Request) -> Response:
        body = await request.body()
        auth_request = AuthRequest(
            method=request.method,
            path=request.scope["path"],
            query_string=request.scope.get("query_string", b""),
            headers=request.scope["headers"],
            body=body,
        )
        try:
            auth = await authenticator.authenticate(auth_request)
        except UnavailableError as exc:
            return JSONResponse({"error": exc.code}, status_code=503)
        except (VerificationError, InvalidInput) as exc:
            return JSONResponse(
                {"error": exc.code, "jsonrpc": int(code_for(exc))}, status_code=http_status_for(exc)
            )
        if auth is None:
            return JSONResponse({"error": "no_signature", "jsonrpc": -32009}, status_code=401)
        return JSONResponse({"accepted": True, "pid": os.getpid(), "did": auth.principal.did})

    async def health(request: Request) -> Response:
        return PlainTextResponse(str(os.getpid()))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await store.aclose()

    return Starlette(
        routes=[Route("/a2a", a2a, methods=["POST"]), Route("/health", health)], lifespan=lifespan
    )
