"""Replay store on Redis, shared by every replica of an agent server.

A claim is one command, ``SET <namespace><key> 1 NX PX <ttl-ms>``: Redis executes it atomically, so
of any number of concurrent claims of a key exactly one sees ``OK`` and the rest see nil until the key
expires.  Every command touches a single key, so the store works unchanged on Redis Cluster; the
namespace carries no ``{hash tag}``, so keys spread over all slots and each claim is atomic on the one
node that owns its slot.

The TTL is computed from this process's clock (``PX``, relative) rather than sent as an absolute
``PXAT``, so a skewed clock on the Redis server cannot shorten a claim.

Any Redis failure (refused connection, timeout, ``OOM``/``READONLY`` replies, pool exhausted past its
wait) raises :class:`~mudrika.errors.UnavailableError`; a claim is never reported as won unless Redis
answered ``OK``.

Eviction is replay: a Redis whose ``maxmemory-policy`` may evict keys with a TTL (every ``volatile-*``
and ``allkeys-*`` policy) silently forgets claims under memory pressure, and a forgotten nonce is
accepted again.  The store therefore reads ``maxmemory-policy`` (from every node of a cluster) when it
starts and refuses anything but ``noeviction`` with :class:`~mudrika.errors.InvalidInput`
(``redis_eviction_policy``).  If Redis cannot be reached at start, the check runs before the first
claim instead, and a bad setting found then fails every claim closed (``replay_store_misconfigured``).
A Redis that hides ``CONFIG`` (some managed services) is refused the same way unless
``check_eviction_policy=False`` says the operator has verified the setting themselves.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import urlsplit

import anyio.to_thread
import redis
import redis.asyncio
import redis.asyncio.retry
from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException, RedisError, ResponseError
from redis.retry import Retry

from mudrika.errors import InvalidInput, UnavailableError
from mudrika.stores._replay_base import (
    DEFAULT_MAX_TTL,
    DEFAULT_MIN_RETENTION,
    Clock,
    ReplayStoreBase,
    check_key,
    logger,
    unavailable,
)

__all__ = ["DEFAULT_NAMESPACE", "SAFE_EVICTION_POLICY", "RedisReplayStore"]

SAFE_EVICTION_POLICY: Final = "noeviction"

DEFAULT_NAMESPACE: Final = "mudrika:replay:"
_MAX_NAMESPACE_BYTES: Final = 128
_REDIS_ERRORS: Final = (RedisError, RedisClusterException, OSError)
# One quick retry: a pooled connection may have died with a restarted server; more retries would
# only stretch the time a request waits before failing closed.
_RETRIES: Final = 1
_BACKOFF_BASE: Final = 0.01
_BACKOFF_CAP: Final = 0.05


def _policies(answer: Any) -> set[str]:
    """The ``maxmemory-policy`` values in a CONFIG GET answer (one node: a dict; cluster: per node)."""
    if not isinstance(answer, dict):
        return set()
    found: set[str] = set()
    for key, value in answer.items():
        if isinstance(value, dict):
            found |= _policies(value)
        elif (key.decode() if isinstance(key, bytes) else key) == "maxmemory-policy":
            found.add(value.decode() if isinstance(value, bytes) else str(value))
    return found


def _safe_target(url: str) -> str:
    """``scheme://host:port/db`` without user name or password, for reprs."""
    parts = urlsplit(url)
    host = parts.hostname or parts.path or "?"
    port = f":{parts.port}" if parts.port else ""
    path = parts.path if parts.hostname else ""
    return f"{parts.scheme}://{host}{port}{path}"


class RedisReplayStore(ReplayStoreBase):
    """Replay store on Redis (single node, Sentinel-managed primary or Cluster).

    Give either ``url`` (the store builds and owns blocking connection pools for the sync and async
    clients, with ``socket_timeout`` / ``connect_timeout``) or ``client`` (a ``redis.Redis`` or
    ``redis.cluster.RedisCluster`` you configured, with an optional ``async_client``; without one,
    ``aclaim`` runs the sync client in a worker thread).  Clients you pass are not closed by ``close``.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.Redis | RedisCluster | None = None,
        async_client: redis.asyncio.Redis | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        socket_timeout: float = 1.0,
        connect_timeout: float = 1.0,
        max_connections: int = 64,
        clock: Clock = time.time,
        min_retention: float = DEFAULT_MIN_RETENTION,
        max_ttl: float = DEFAULT_MAX_TTL,
        check_eviction_policy: bool = True,
    ) -> None:
        super().__init__(clock=clock, min_retention=min_retention, max_ttl=max_ttl)
        if not isinstance(namespace, str) or not namespace:
            raise InvalidInput("namespace must be a non-empty string", code="replay_config")
        if len(namespace.encode("utf-8", "surrogatepass")) > _MAX_NAMESPACE_BYTES:
            raise InvalidInput("namespace too long", code="replay_config", limit=_MAX_NAMESPACE_BYTES)
        if (url is None) == (client is None):
            raise InvalidInput("give exactly one of url or client", code="replay_config")
        if async_client is not None and client is None:
            raise InvalidInput("async_client needs a sync client beside it", code="replay_config")
        if not (socket_timeout > 0 and connect_timeout > 0 and max_connections > 0):
            raise InvalidInput("timeouts and max_connections must be > 0", code="replay_config")
        self._namespace = namespace
        self._url = url
        self._pool_args: dict[str, Any] = {
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": connect_timeout,
            "max_connections": max_connections,
            # Waiting for a free pooled connection is bounded too; past it the claim fails closed.
            "timeout": socket_timeout + connect_timeout,
        }
        self._owns_clients = url is not None
        self._aclient: redis.asyncio.Redis | None = async_client
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        if url is not None:
            try:
                pool = redis.BlockingConnectionPool.from_url(
                    url,
                    retry=Retry(ExponentialBackoff(cap=_BACKOFF_CAP, base=_BACKOFF_BASE), _RETRIES),
                    **self._pool_args,
                )
            except (ValueError, *_REDIS_ERRORS) as exc:
                raise InvalidInput(
                    "invalid Redis URL", code="replay_config", reason=type(exc).__name__
                ) from None
            self._client: redis.Redis | RedisCluster = redis.Redis.from_pool(pool)
            self._target = _safe_target(url)
        else:
            assert client is not None
            self._client = client
            self._target = type(client).__name__
        # False until noeviction is confirmed (or the operator vouched for it): retried before a claim.
        self._eviction_checked = not check_eviction_policy
        if check_eviction_policy:
            try:
                self._check_eviction_policy()
            except UnavailableError:
                pass  # checked again before the first claim
            except InvalidInput:
                if self._owns_clients:
                    self._client.close()
                raise

    def __repr__(self) -> str:
        return f"RedisReplayStore(target={self._target!r}, namespace={self._namespace!r})"

    @property
    def namespace(self) -> str:
        return self._namespace

    def redis_key(self, key: str) -> str:
        """The Redis key a replay key is stored under (for operators inspecting the keyspace)."""
        check_key(key)
        return self._namespace + key

    def claim(self, key: str, expires_at: float) -> bool:
        full_key, ttl_ms = self._prepare(key, expires_at)
        self._check_open()
        self._ensure_no_eviction()
        try:
            answer = self._client.set(full_key, b"1", nx=True, px=ttl_ms)
        except _REDIS_ERRORS as exc:
            raise unavailable("redis", exc) from None
        return answer is True

    async def aclaim(self, key: str, expires_at: float) -> bool:
        full_key, ttl_ms = self._prepare(key, expires_at)
        self._check_open()
        aclient = self._async_client()
        if aclient is None:
            return await anyio.to_thread.run_sync(self.claim, key, expires_at)
        if not self._eviction_checked:
            await anyio.to_thread.run_sync(self._ensure_no_eviction)
        try:
            answer = await aclient.set(full_key, b"1", nx=True, px=ttl_ms)
        except _REDIS_ERRORS as exc:
            raise unavailable("redis", exc) from None
        return answer is True

    def claim_many(self, items: Iterable[tuple[str, float]]) -> list[bool]:
        """Claim several keys in one pipelined round trip (not a transaction: each SET is atomic on
        its own slot).  On error some claims may have been recorded; treat the batch as refused."""
        now = self._clock()
        batch = self._batch(items, now)
        self._check_open()
        self._ensure_no_eviction()
        try:
            pipe = self._client.pipeline(transaction=False)
            for key, deadline in batch:
                pipe.set(self._namespace + key, b"1", nx=True, px=self._ttl_ms(deadline, now))
            answers = pipe.execute()
        except _REDIS_ERRORS as exc:
            raise unavailable("redis", exc) from None
        return [answer is True for answer in answers]

    def close(self) -> None:
        """Close the sync pool this store built.  Async applications call :meth:`aclose` instead,
        which also closes the async pool on its event loop."""
        self._closed = True
        if self._owns_clients:
            self._client.close()

    async def aclose(self) -> None:
        self._closed = True
        if self._owns_clients:
            if self._aclient is not None:
                await self._aclient.aclose()
                self._aclient = None
            self._client.close()

    def _check_open(self) -> None:
        if self._closed:
            raise UnavailableError("replay store closed", code="replay_store_closed", backend="redis")

    def _ensure_no_eviction(self) -> None:
        """Before a claim: the start-up check if it could not run then; a bad policy fails closed."""
        if self._eviction_checked:
            return
        try:
            self._check_eviction_policy()
        except InvalidInput as exc:
            logger.error("replay store refuses to claim: %s (%s)", exc.message, exc.fields.get("policy"))
            raise UnavailableError(
                "replay store misconfigured", code="replay_store_misconfigured", backend="redis"
            ) from None

    def _check_eviction_policy(self) -> None:
        """Read ``maxmemory-policy`` from every node; refuse anything that may evict a claim."""
        try:
            if isinstance(self._client, RedisCluster):
                answer: Any = self._client.config_get("maxmemory-policy", target_nodes=RedisCluster.ALL_NODES)
            else:
                answer = self._client.config_get("maxmemory-policy")
        except ResponseError as exc:
            raise InvalidInput(
                "cannot read Redis maxmemory-policy (CONFIG refused); verify it is noeviction and pass "
                "check_eviction_policy=False",
                code="redis_eviction_policy",
                policy="unknown",
                reason=type(exc).__name__,
            ) from None
        except _REDIS_ERRORS as exc:
            raise unavailable("redis", exc) from None
        policies = _policies(answer)
        bad = sorted(policy for policy in policies if policy != SAFE_EVICTION_POLICY)
        if bad or not policies:
            raise InvalidInput(
                "Redis maxmemory-policy may evict replay claims (eviction is replay); set it to noeviction",
                code="redis_eviction_policy",
                policy=",".join(bad) or "unknown",
            )
        self._eviction_checked = True

    def _prepare(self, key: str, expires_at: float) -> tuple[str, int]:
        check_key(key)
        now = self._clock()
        return self._namespace + key, self._ttl_ms(self._deadline(expires_at, now), now)

    @staticmethod
    def _ttl_ms(deadline: float, now: float) -> int:
        # Rounded up so a claim never ends before its deadline; at least 1 ms (PX 0 is an error).
        return max(1, math.ceil((deadline - now) * 1000))

    def _async_client(self) -> redis.asyncio.Redis | None:
        """The async client for the running loop, built lazily from the URL.

        redis.asyncio connections belong to the loop that opened them, so a store built from a URL
        keeps one async client per loop it is used on (in practice: one).
        """
        if not self._owns_clients or self._url is None:
            return self._aclient
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            pool = redis.asyncio.BlockingConnectionPool.from_url(
                self._url,
                retry=redis.asyncio.retry.Retry(
                    ExponentialBackoff(cap=_BACKOFF_CAP, base=_BACKOFF_BASE), _RETRIES
                ),
                **self._pool_args,
            )
            self._aclient = redis.asyncio.Redis.from_pool(pool)
            self._aloop = loop
        return self._aclient
