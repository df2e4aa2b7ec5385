"""The identity provider's signing keys (JWKS), cached: fetched rarely, refreshed safely.

Why a cache with these rules and not "fetch the JWKS when verifying" (python-keycloak's
``decode_token`` does that on every call):

* **TTL** (default 300 s): keys are re-read periodically, so a key the IdP retired stops being
  trusted within one TTL.
* **Unknown kid -> one refresh, single-flight, with a cooldown.**  After a rotation the first token
  signed with the new key names a kid we have not seen; we refresh at once so it is accepted
  immediately.  N concurrent callers (threads or asyncio tasks) share that one fetch.  A flood of
  tokens with random kids cannot hammer the IdP: after an unknown-kid refresh, another one is only
  made after ``refresh_cooldown`` seconds; until then unknown kids are simply invalid.
* **Stale-if-error**: when a refresh fails (IdP down, 5xx, garbage), the last good key set keeps
  serving for up to ``max_stale`` seconds past its TTL; failed fetches are themselves rate-limited by
  the cooldown.  With no usable key set at all we fail closed with :class:`~mudrika.errors.
  IdpUnavailable`.
* **Whose fault a missing key set is** (the did:web split, decided the other way here): a did:web
  document is named by the caller, so its absence is the caller's fact (a deny, 401); the JWKS URL
  is configuration — the issuer the operator named — never request input, so no caller can make it
  answer 404 or garbage.  Every way of not getting a usable key set is therefore the verifier's own
  dependency failing, and answers :class:`~mudrika.errors.IdpUnavailable` (``jwks_unavailable``,
  503, fail closed): a 404/410 (a wrong realm or ``jwks_uri``), a body that is not a usable JWK Set,
  a 5xx, a timeout, a refused connection, an egress refusal.  A 401 there would tell every client
  that its valid token is bad — clients would drop tokens and log in again, a storm on the IdP —
  while the operator's fault went unseen.  The error's ``reason`` says which, for the operator:
  ``not_found``, ``invalid``, ``http_status``, ``unreachable``, ``egress_denied``.  What *is* the
  caller's fault — a ``kid`` the fresh key set does not hold — is ``InvalidToken`` (``unknown_kid``,
  401).
* **Only signing keys**: a JWK with ``use`` other than ``sig`` (Keycloak publishes an RSA-OAEP
  ``use: enc`` key beside its signing keys), ``key_ops`` without ``verify``, an ``alg`` outside the
  allow-list, a key type that cannot do any allowed algorithm, or no ``kid`` is ignored.
* **Size caps** on the response body and the number of keys.
* **Generation counter**: every change of the usable key set increments :attr:`generation`; the
  verified-token cache empties itself when it sees a new generation, so a retired key cannot keep
  vouching for tokens it signed.

Verification itself never happens here: keys leave as :class:`~mudrika.crypto.jose.TrustedKey`
objects (algorithm allow-list bound to the key) for ``mudrika.crypto.jose``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import httpx

from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import TrustedKey
from mudrika.errors import EgressDenied, IdpUnavailable, InvalidInput, MudrikaError
from mudrika.net.egress import EgressPolicy, refusal_reason
from mudrika.trust.jsonrpc import InvalidToken

__all__ = [
    "DEFAULT_MAX_JWKS_BYTES",
    "DEFAULT_MAX_KEYS",
    "JwksCache",
    "KeySource",
    "StaticKeySet",
    "parse_jwks",
]

_log = logging.getLogger("mudrika.trust.keycloak.jwks")

DEFAULT_MAX_JWKS_BYTES: Final = 256 * 1024
DEFAULT_MAX_KEYS: Final = 64
_MAX_KID: Final = 256
_LOOPBACK_NAMES: Final = frozenset({"localhost"})
_GONE: Final = frozenset({404, 410})


class KeySource(Protocol):
    """Where the verifier gets a key for a ``kid`` (sync and async), and the key-set generation."""

    @property
    def generation(self) -> int: ...

    def key_for(self, kid: str) -> TrustedKey: ...

    async def akey_for(self, kid: str) -> TrustedKey: ...


def parse_jwks(
    document: Any, *, algorithms: Collection[str], max_keys: int = DEFAULT_MAX_KEYS
) -> dict[str, TrustedKey]:
    """The usable signing keys of a JWKS document, by kid (see the module docstring for the rules).

    Raises ``InvalidInput`` when the document is not a JWKS, holds more than ``max_keys`` entries, or
    names one kid twice among its usable keys (an ambiguous set is refused whole).
    """
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise InvalidInput("not a JWK Set (no 'keys' array)", code="malformed_jwks")
    entries = document["keys"]
    if len(entries) > max_keys:
        raise InvalidInput("JWK Set has too many keys", code="too_many_keys", limit=max_keys)
    allowed = frozenset(algorithms)
    keys: dict[str, TrustedKey] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        kid = entry.get("kid")
        if not isinstance(kid, str) or not kid or len(kid) > _MAX_KID:
            continue
        try:
            key = TrustedKey.from_jwk(entry, algorithms=allowed)
        except MudrikaError as exc:
            # Encryption keys, other key types, algorithms outside the allow-list: not for us.
            _log.debug("jwks: ignoring key %r (%s)", kid[:32], exc.code)
            continue
        if kid in keys:
            raise InvalidInput("JWK Set names one kid twice", code="duplicate_kid")
        keys[kid] = key
    return keys


class StaticKeySet:
    """A fixed key set (offline use, tests, or keys distributed out of band).  Generation is 1."""

    def __init__(self, jwks: Mapping[str, Any], *, algorithms: Collection[str]) -> None:
        self._keys = MappingProxyType(parse_jwks(dict(jwks), algorithms=algorithms))

    @property
    def generation(self) -> int:
        return 1

    @property
    def kids(self) -> frozenset[str]:
        return frozenset(self._keys)

    def key_for(self, kid: str) -> TrustedKey:
        key = self._keys.get(kid)
        if key is None:
            raise InvalidToken("no trusted key for this kid", code="unknown_kid")
        return key

    async def akey_for(self, kid: str) -> TrustedKey:
        return self.key_for(kid)


@dataclass(frozen=True, slots=True)
class _KeySet:
    keys: Mapping[str, TrustedKey]
    fetched_at: float
    generation: int


def _check_url(url: str, allow_http: bool) -> str:
    parts = urlsplit(url)
    if parts.scheme not in {"https", "http"} or not parts.hostname:
        raise InvalidInput("jwks_uri must be an absolute http(s) URL", code="invalid_jwks_uri")
    if parts.scheme == "http" and not allow_http:
        try:
            loopback = ipaddress.ip_address(parts.hostname).is_loopback
        except ValueError:
            loopback = parts.hostname in _LOOPBACK_NAMES
        if not loopback:
            raise InvalidInput(
                "jwks_uri must use https (plain http only for loopback or with allow_http=True)",
                code="insecure_jwks_uri",
            )
    return url


def egress_for_configured_url(url: str) -> EgressPolicy:
    """The egress policy for a configured IdP URL (JWKS, introspection): strict, except that an IdP the operator placed on
    this machine or a private network (``localhost``, a private IP literal) is allowed — visibly,
    since such a policy logs a warning.  The URL is configuration, never request input."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        private = refusal_reason(ipaddress.ip_address(host)) is not None
    except ValueError:
        private = host in _LOOPBACK_NAMES
    return EgressPolicy(allow_private_networks=private, schemes=(parts.scheme,))


class JwksCache:
    """A cached, size-capped, single-flight JWKS from ``jwks_uri`` (sync and async callers).

    ``clock`` returns seconds (default ``time.monotonic``); inject one to test TTL and cooldown.
    Pass ``http_client`` / ``async_http_client`` to choose TLS, proxies or a test transport (their
    owner closes them); otherwise the cache uses its own sync client (closed by :meth:`close`) and a
    short-lived async client per fetch, with ``timeout`` and no redirects, connecting through
    ``egress`` (an :class:`~mudrika.net.egress.EgressPolicy`; by default strict, or allowing private
    networks — with a logged warning — when ``jwks_uri`` itself names ``localhost`` or a private
    address).
    """

    def __init__(
        self,
        *,
        jwks_uri: str,
        algorithms: Collection[str],
        ttl: float = 300.0,
        refresh_cooldown: float = 10.0,
        max_stale: float = 3600.0,
        max_bytes: int = DEFAULT_MAX_JWKS_BYTES,
        max_keys: int = DEFAULT_MAX_KEYS,
        timeout: float = 5.0,
        allow_http: bool = False,
        clock: Callable[[], float] = time.monotonic,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        egress: EgressPolicy | None = None,
    ) -> None:
        if ttl <= 0 or refresh_cooldown < 0 or max_stale < 0 or max_bytes <= 0 or max_keys <= 0:
            raise InvalidInput("JWKS cache limits must be positive", code="bad_config")
        if not algorithms:
            raise InvalidInput("an algorithm allow-list is required", code="bad_config")
        self.jwks_uri = _check_url(jwks_uri, allow_http)
        self.algorithms = frozenset(algorithms)
        self.ttl = float(ttl)
        self.refresh_cooldown = float(refresh_cooldown)
        self.max_stale = float(max_stale)
        self.max_bytes = max_bytes
        self.max_keys = max_keys
        self._clock = clock
        self._timeout = timeout
        self._http = http_client
        self._ahttp = async_http_client
        self._owns_http = http_client is None
        self._egress = egress
        self._state: _KeySet | None = None
        self._generation = 0
        self._attempts = 0  # fetches started; lets a waiter see that someone fetched meanwhile
        self._last_kid_refresh = float("-inf")
        self._last_failure = float("-inf")
        self._failure_reason = "unreachable"  # why the last fetch failed (the IdpUnavailable reason)
        self._fetch_count = 0
        self._lock = threading.Lock()  # single flight for threads
        self._state_lock = threading.Lock()  # guards the state swap and counters
        self._flights: dict[asyncio.AbstractEventLoop, asyncio.Future[None]] = {}

    def __repr__(self) -> str:
        return f"JwksCache(jwks_uri={self.jwks_uri!r}, generation={self._generation})"

    # -- public surface ---------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Increments whenever the set of usable keys changes (0 before the first fetch)."""
        return self._generation

    @property
    def fetch_count(self) -> int:
        """How many HTTP fetches this cache has started (for tests and metrics)."""
        return self._fetch_count

    @property
    def kids(self) -> frozenset[str]:
        state = self._state
        return frozenset(state.keys) if state is not None else frozenset()

    def key_for(self, kid: str) -> TrustedKey:
        """The trusted key named ``kid``; refreshes when due (see the module docstring).

        Raises ``InvalidToken`` (code ``unknown_kid``) for a kid the IdP does not publish, and
        ``IdpUnavailable`` when no usable key set can be had.
        """
        found, action = self._lookup(kid)
        if found is not None:
            return found
        if action is not None:
            self._refresh_sync(kid, action)
        elif self._lock.locked():
            with self._lock:
                pass  # a refresh is in flight in another thread: wait for its result
        return self._after_refresh(kid)

    async def akey_for(self, kid: str) -> TrustedKey:
        """Async :meth:`key_for`: concurrent tasks on one event loop share one fetch."""
        found, action = self._lookup(kid)
        if found is not None:
            return found
        if action is not None:
            await self._arefresh(action)
        else:
            flight = self._flights.get(asyncio.get_running_loop())
            if flight is not None and not flight.done():
                await asyncio.shield(flight)  # a refresh is in flight on this loop: wait for it
        return self._after_refresh(kid)

    def refresh(self) -> None:
        """Fetch now (e.g. at start-up, to fail fast on a wrong jwks_uri, or as a health check).

        Raises IdpUnavailable when this fetch did not produce a key set, even while an older set
        still serves lookups: a caller asking for a fetch must learn that it failed."""
        before = self._state
        self._refresh_sync(None, "explicit")
        self._raise_unless_fetched(before)

    async def arefresh(self) -> None:
        """Async :meth:`refresh`."""
        before = self._state
        await self._arefresh("explicit")
        self._raise_unless_fetched(before)

    def _raise_unless_fetched(self, before: _KeySet | None) -> None:
        # Every successful fetch installs a new _KeySet, even when its keys are unchanged.
        if self._state is None or self._state is before:
            raise IdpUnavailable(
                "could not fetch the identity provider's keys",
                code="jwks_unavailable",
                reason=self._failure_reason,
            )

    def close(self) -> None:
        if self._owns_http and self._http is not None:
            self._http.close()
            self._http = None

    async def aclose(self) -> None:
        """Same as :meth:`close` (an injected async client stays open: its owner closes it)."""
        self.close()

    # -- decisions ----------------------------------------------------------------------------------

    def _lookup(self, kid: str) -> tuple[TrustedKey | None, str | None]:
        """A key from the current set if it is fresh; otherwise which refresh (if any) to attempt."""
        state = self._state
        now = self._clock()
        failing = now - self._last_failure < self.refresh_cooldown
        if state is None or now - state.fetched_at >= self.ttl:
            return None, (None if failing else "expired")
        key = state.keys.get(kid)
        if key is not None:
            return key, None
        if failing or now - self._last_kid_refresh < self.refresh_cooldown:
            return None, None
        return None, "unknown_kid"

    def _after_refresh(self, kid: str) -> TrustedKey:
        state = self._state
        now = self._clock()
        if state is None or now - state.fetched_at >= self.ttl + self.max_stale:
            raise IdpUnavailable(
                "identity provider keys unavailable", code="jwks_unavailable", reason=self._failure_reason
            )
        stale = now - state.fetched_at >= self.ttl
        key = state.keys.get(kid)
        if key is not None:
            if stale:
                _log.warning(
                    "jwks: serving a stale key set (refresh failing), age %.0fs", now - state.fetched_at
                )
            return key
        if stale or now - self._last_failure < self.refresh_cooldown:
            # The IdP is failing: we cannot tell that this kid does not exist, so fail closed as
            # "unavailable" rather than calling the token invalid.
            raise IdpUnavailable(
                "identity provider keys unavailable", code="jwks_unavailable", reason=self._failure_reason
            )
        raise InvalidToken("no trusted key for this kid", code="unknown_kid")

    # -- fetching -----------------------------------------------------------------------------------

    def _begin(self, reason: str) -> None:
        with self._state_lock:
            self._attempts += 1
            self._fetch_count += 1
            if reason == "unknown_kid":
                self._last_kid_refresh = self._clock()

    def _refresh_sync(self, kid: str | None, reason: str) -> None:
        seen = self._attempts
        with self._lock:
            if self._attempts != seen:
                return  # another thread fetched while we waited: use its result
            if kid is not None and self._lookup(kid)[1] is None:
                return  # decided on a view that is no longer current
            self._begin(reason)
            try:
                body = self._get_sync()
            except (httpx.HTTPError, MudrikaError) as exc:
                self._failed(exc)
                return
            self._install(body)

    async def _arefresh(self, reason: str) -> None:
        loop = asyncio.get_running_loop()
        flight = self._flights.get(loop)
        if flight is not None and not flight.done():
            await asyncio.shield(flight)
            return
        future: asyncio.Future[None] = loop.create_future()
        self._flights[loop] = future
        try:
            self._begin(reason)
            try:
                body = await self._aget()
            except (httpx.HTTPError, MudrikaError) as exc:
                self._failed(exc)
            else:
                self._install(body)
        finally:
            future.set_result(None)
            if self._flights.get(loop) is future:
                del self._flights[loop]

    def _client(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(
                transport=self._policy().transport(),
                timeout=self._timeout,
                follow_redirects=False,
                trust_env=False,
            )
        return self._http

    def _policy(self) -> EgressPolicy:
        if self._egress is None:
            self._egress = egress_for_configured_url(self.jwks_uri)
        return self._egress

    def _check_response(self, response: httpx.Response) -> None:
        if response.status_code != 200:
            raise IdpUnavailable("JWKS fetch failed", code="jwks_http_status", status=response.status_code)
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            raise InvalidInput("JWKS response too large", code="too_large", limit=self.max_bytes)

    def _add_chunk(self, buffer: bytearray, chunk: bytes) -> None:
        buffer += chunk
        if len(buffer) > self.max_bytes:
            raise InvalidInput("JWKS response too large", code="too_large", limit=self.max_bytes)

    def _get_sync(self) -> bytes:
        buffer = bytearray()
        with self._client().stream("GET", self.jwks_uri, headers={"Accept": "application/json"}) as response:
            self._check_response(response)
            for chunk in response.iter_bytes():
                self._add_chunk(buffer, chunk)
        return bytes(buffer)

    async def _aget(self) -> bytes:
        if self._ahttp is not None:
            return await self._astream(self._ahttp)
        # No client was given: one per fetch.  Fetches are rare (one per TTL), and an AsyncClient's
        # connection pool belongs to the event loop that opened it, while this cache may serve several.
        async with httpx.AsyncClient(
            transport=self._policy().async_transport(),
            timeout=self._timeout,
            follow_redirects=False,
            trust_env=False,
        ) as client:
            return await self._astream(client)

    async def _astream(self, client: httpx.AsyncClient) -> bytes:
        buffer = bytearray()
        async with client.stream("GET", self.jwks_uri, headers={"Accept": "application/json"}) as response:
            self._check_response(response)
            async for chunk in response.aiter_bytes():
                self._add_chunk(buffer, chunk)
        return bytes(buffer)

    def _failed(self, exc: BaseException) -> None:
        reason = _failure_reason(exc)
        with self._state_lock:
            self._last_failure = self._clock()
            self._failure_reason = reason
        code = exc.code if isinstance(exc, MudrikaError) else type(exc).__name__
        _log.warning("jwks: refresh from %s failed (%s: %s)", self.jwks_uri, reason, code)

    def _install(self, body: bytes) -> None:
        try:
            document = loads_strict(body, max_bytes=self.max_bytes, max_depth=16)
            keys = parse_jwks(document, algorithms=self.algorithms, max_keys=self.max_keys)
        except MudrikaError as exc:
            self._failed(exc)
            return
        with self._state_lock:
            previous = self._state
            if previous is None or dict(previous.keys) != keys:
                self._generation += 1
                _log.info(
                    "jwks: key set generation %d (%d signing keys) from %s",
                    self._generation,
                    len(keys),
                    self.jwks_uri,
                )
            self._state = _KeySet(
                keys=MappingProxyType(keys), fetched_at=self._clock(), generation=self._generation
            )
            self._last_failure = float("-inf")


def _failure_reason(exc: BaseException) -> str:
    """Which way a JWKS fetch failed, for the operator (see the module docstring: all of them are
    the IdP's or the configuration's fault, so all answer 503; only the ``reason`` differs)."""
    if isinstance(exc, EgressDenied):
        return "egress_denied"
    if isinstance(exc, IdpUnavailable) and exc.code == "jwks_http_status":
        return "not_found" if exc.fields.get("status") in _GONE else "http_status"
    if isinstance(exc, MudrikaError):
        return "invalid"  # not JSON, not a JWK Set, too large, too many keys, a kid named twice
    return "unreachable"  # httpx: DNS, refused connection, TLS, timeout
