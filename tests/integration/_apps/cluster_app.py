"""One replica of an agent server: the A2A middleware with DID-signed requests, its replay store on a
Redis Cluster.

Served by ``python -m uvicorn tests.integration._apps.cluster_app:create_app --factory``.  Every replica
talks to the same cluster (``MUDRIKA_TEST_CLUSTER_NODES``: ``host:port,host:port,...``) and grants the
role ``agent`` to one DID (``MUDRIKA_TEST_AGENT_DID``); did:key signers are resolved locally.
``GET /health`` answers 200 (a public path); ``POST /`` is the JSON-RPC endpoint.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from redis.cluster import ClusterNode, RedisCluster
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from mudrika.identity.resolver import DIDResolver
from mudrika.stores.replay import RedisReplayStore
from mudrika.trust.httpsig import REGISTERED_ALGORITHMS, HttpSignatureVerifier, ResolverKeyLookup
from mudrika.trust.middleware import DEFAULT_PUBLIC_PATHS, A2AAuthMiddleware, DidSignatureAuthenticator
from tests._support.tokenfactory import demo_policy

ENV_NODES: Final = "MUDRIKA_TEST_CLUSTER_NODES"
ENV_AGENT: Final = "MUDRIKA_TEST_AGENT_DID"
PUBLIC_ORIGIN: Final = "https://agent.test"


def create_app() -> A2AAuthMiddleware:
    nodes = [
        ClusterNode(host, int(port))  # type: ignore[no-untyped-call]
        for host, port in (n.split(":") for n in os.environ[ENV_NODES].split(","))
    ]
    client = RedisCluster(startup_nodes=nodes, socket_timeout=30.0, socket_connect_timeout=30.0)
    store = RedisReplayStore(client=client, namespace="cluster-test:")
    verifier = HttpSignatureVerifier(
        keys=ResolverKeyLookup(DIDResolver()),
        replay_store=store,
        origins=[PUBLIC_ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
    )
    agent = os.environ[ENV_AGENT]
    authenticator = DidSignatureAuthenticator(
        verifier, public_origin=PUBLIC_ORIGIN, roles_for=lambda did: {"agent"} if did == agent else set()
    )

    async def rpc(request: Request) -> Response:
        return JSONResponse({"jsonrpc": "2.0", "result": {"pid": os.getpid()}, "id": 1})

    async def health(request: Request) -> Response:
        return PlainTextResponse(str(os.getpid()))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            client.close()

    app = Starlette(routes=[Route("/", rpc, methods=["POST"]), Route("/health", health)], lifespan=lifespan)
    return A2AAuthMiddleware(
        app,
        authenticators=[authenticator],
        policy=demo_policy(),
        public_paths={*DEFAULT_PUBLIC_PATHS, "/health"},
    )
