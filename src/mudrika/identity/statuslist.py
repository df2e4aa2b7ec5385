"""Token Status Lists over HTTP: fetch one through the egress policy, cache it by ``ttl``/``exp``, and
serve one (draft-ietf-oauth-status-list-20 §8.1 "Status List Request", §8.2 "Status List Response",
§12.5 "Status List Update Interval and Caching").

Why these rules for the fetch:

* **Every connection goes through the** :class:`~mudrika.net.egress.EgressPolicy`: the ``uri`` comes
  from a credential, i.e. from whoever made it, so it can name ``http://169.254.169.254/`` as easily
  as the issuer's server.  HTTPS only unless the policy says otherwise.
* **No redirects** (§11.4 leaves following them to the client, with RFC 9110 §15.4's dangers):
  the list's ``sub`` must equal the URI anyway, so a redirect could only lead to a different list
  or a different host; a 3xx is refused.
* ``Accept: application/statuslist+jwt`` and ``Accept-Encoding: identity`` (the size cap counts real
  bytes, as for did:web), a response ``Content-Type`` other than the status list type is refused.
* **The cache trusts the token, not HTTP**: §8.2 says the ``exp`` and ``ttl`` claims take priority
  over caching headers.  A token is kept for ``min(ttl, max_cache_seconds, exp - now)`` seconds, and
  only after it verified; every hit is verified again with the *caller's* keys and time, since trust
  is an argument of each call, never a property of the cache.  ``max_cache_seconds`` is the
  verifier's cap (§11.5: a Status Issuer may not choose how long we believe it).

:class:`StatusListApp` is the serving side: a pure ASGI app that answers ``GET`` on the paths it
holds with the token and ``Content-Type: application/statuslist+jwt``.
"""

from __future__ import annotations

import ssl
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from typing import Any, Final

import httpx

from mudrika.crypto.jose import KeyResolver, TrustedKey
from mudrika.crypto.statuslist import (
    DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_TOKEN_BYTES,
    MEDIA_TYPE,
    VerifiedStatusList,
    read_status_reference,
    verify_status_list_token,
)
from mudrika.errors import InvalidInput, UnavailableError
from mudrika.net.egress import EgressPolicy

__all__ = ["DEFAULT_MAX_CACHE_SECONDS", "StatusListApp", "StatusListClient"]

#: How long a fetched token may be reused at most, whatever its ``ttl`` says (one hour).
DEFAULT_MAX_CACHE_SECONDS: Final = 3600.0
DEFAULT_TIMEOUT: Final = 5.0
_HEADERS: Final = {"Accept": MEDIA_TYPE, "Accept-Encoding": "identity"}


@contextmanager
def _transport_errors() -> Any:
    """httpx failures as UnavailableError ``status_list_unavailable`` (no URL or body in the message)."""
    try:
        yield
    except httpx.TimeoutException:
        raise UnavailableError(
            "status list fetch timed out", code="status_list_unavailable", reason="timeout"
        ) from None
    except httpx.HTTPError as exc:
        raise UnavailableError(
            "status list fetch failed",
            code="status_list_unavailable",
            reason="transport",
            error=type(exc).__name__,
        ) from None


class StatusListClient:
    """Fetch, verify and cache Status List Tokens.

    ``egress``: the policy every connection goes through (default: the strict one, https only).
    ``max_bytes``: cap on a response body.  ``max_cache_seconds``: the longest a token is reused.
    ``clock``: monotonic seconds for the cache (tests inject one); claims are judged at the ``now``
    each call passes.
    """

    def __init__(
        self,
        *,
        egress: EgressPolicy | None = None,
        verify: ssl.SSLContext | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
        max_list_bytes: int = DEFAULT_MAX_LIST_BYTES,
        max_cache_seconds: float = DEFAULT_MAX_CACHE_SECONDS,
        cache_size: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_cache_seconds < 0 or cache_size < 0 or max_bytes <= 0 or max_list_bytes <= 0:
            raise InvalidInput("cache and size limits must be positive", code="bad_config")
        self._egress = egress if egress is not None else EgressPolicy(timeout=timeout, deadline=timeout)
        self._verify: ssl.SSLContext | bool = verify if verify is not None else True
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._max_list_bytes = max_list_bytes
        self._max_cache = float(max_cache_seconds)
        self._cache_size = cache_size
        self._clock = clock
        self._cache: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        #: How many HTTP requests this client has made (what the cache saves is observable).
        self.fetches = 0

    # -- HTTP ---------------------------------------------------------------------------------------
    def _check_response(self, response: httpx.Response) -> None:
        status = response.status_code
        if 300 <= status < 400:
            raise UnavailableError(
                "status list redirect refused", code="status_list_unavailable", reason="redirect_refused"
            )
        if status != 200:
            raise UnavailableError(
                "status list fetch failed",
                code="status_list_unavailable",
                reason="http_status",
                status=status,
            )
        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != MEDIA_TYPE:
            raise UnavailableError(
                "response is not a status list token",
                code="status_list_unavailable",
                reason="content_type",
                content_type=media[:64],
            )
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise UnavailableError(
                "compressed response refused", code="status_list_unavailable", reason="content_encoding"
            )
        length = response.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self._max_bytes:
            raise InvalidInput(
                "status list token larger than allowed", code="too_large", limit=self._max_bytes
            )

    def _add(self, body: bytearray, chunk: bytes, deadline: float) -> None:
        body += chunk
        if len(body) > self._max_bytes:
            raise InvalidInput(
                "status list token larger than allowed", code="too_large", limit=self._max_bytes
            )
        if time.monotonic() > deadline:
            raise UnavailableError(
                "status list fetch took too long", code="status_list_unavailable", reason="timeout"
            )

    def _options(self) -> dict[str, Any]:
        return {"timeout": self._timeout, "follow_redirects": False, "trust_env": False, "headers": _HEADERS}

    def fetch(self, uri: str) -> bytes:
        """GET ``uri`` (one request, no redirects) and return the body: the raw token, unverified."""
        url = httpx.URL(uri)
        deadline = time.monotonic() + self._timeout
        body = bytearray()
        self.fetches += 1
        with (
            _transport_errors(),
            httpx.Client(transport=self._egress.transport(verify=self._verify), **self._options()) as client,
            client.stream("GET", url) as response,
        ):
            self._check_response(response)
            for chunk in response.iter_raw():
                self._add(body, chunk, deadline)
        return bytes(body)

    async def afetch(self, uri: str) -> bytes:
        """Async :meth:`fetch`."""
        url = httpx.URL(uri)
        deadline = time.monotonic() + self._timeout
        body = bytearray()
        self.fetches += 1
        with _transport_errors():
            transport = self._egress.async_transport(verify=self._verify)
            async with (
                httpx.AsyncClient(transport=transport, **self._options()) as client,
                client.stream("GET", url) as response,
            ):
                self._check_response(response)
                async for chunk in response.aiter_raw():
                    self._add(body, chunk, deadline)
        return bytes(body)

    # -- cache --------------------------------------------------------------------------------------
    def _cached(self, uri: str) -> bytes | None:
        entry = self._cache.get(uri)
        if entry is None:
            return None
        token, fresh_until = entry
        if self._clock() >= fresh_until:
            del self._cache[uri]
            return None
        self._cache.move_to_end(uri)
        return token

    def _store(self, uri: str, token: bytes, verified: VerifiedStatusList, now: float) -> None:
        lifetime = self._max_cache
        if verified.ttl is not None:
            lifetime = min(lifetime, verified.ttl)
        if verified.expires_at is not None:
            lifetime = min(lifetime, verified.expires_at - now)
        if lifetime <= 0 or self._cache_size == 0:
            return
        self._cache[uri] = (token, self._clock() + lifetime)
        self._cache.move_to_end(uri)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def clear_cache(self) -> None:
        self._cache.clear()

    # -- verified lists -----------------------------------------------------------------------------
    def _verify_token(
        self,
        token: bytes,
        uri: str,
        key: TrustedKey | KeyResolver,
        issuer: str | None,
        now: float,
        max_age: float | None,
    ) -> VerifiedStatusList:
        return verify_status_list_token(
            token,
            key=key,
            uri=uri,
            issuer=issuer,
            now=now,
            max_age=max_age,
            max_bytes=self._max_bytes,
            max_list_bytes=self._max_list_bytes,
        )

    def status_list(
        self,
        uri: str,
        *,
        key: TrustedKey | KeyResolver,
        issuer: str | None,
        now: float,
        max_age: float | None,
    ) -> VerifiedStatusList:
        """The verified list at ``uri`` (from the cache while fresh, else fetched); see
        :func:`~mudrika.crypto.statuslist.verify_status_list_token` for the checks and arguments."""
        cached = self._cached(uri)
        if cached is not None:
            return self._verify_token(cached, uri, key, issuer, now, max_age)
        token = self.fetch(uri)
        verified = self._verify_token(token, uri, key, issuer, now, max_age)
        self._store(uri, token, verified, now)
        return verified

    async def astatus_list(
        self,
        uri: str,
        *,
        key: TrustedKey | KeyResolver,
        issuer: str | None,
        now: float,
        max_age: float | None,
    ) -> VerifiedStatusList:
        """Async :meth:`status_list`."""
        cached = self._cached(uri)
        if cached is not None:
            return self._verify_token(cached, uri, key, issuer, now, max_age)
        token = await self.afetch(uri)
        verified = self._verify_token(token, uri, key, issuer, now, max_age)
        self._store(uri, token, verified, now)
        return verified

    def check(
        self,
        referenced_claims: Mapping[str, Any],
        *,
        key: TrustedKey | KeyResolver,
        issuer: str | None,
        now: float,
        max_age: float | None,
    ) -> int:
        """§8.3 for a Referenced Token already validated: its status value, fetched online."""
        reference = read_status_reference(referenced_claims)
        verified = self.status_list(reference.uri, key=key, issuer=issuer, now=now, max_age=max_age)
        return verified.status_of(reference.idx)

    async def acheck(
        self,
        referenced_claims: Mapping[str, Any],
        *,
        key: TrustedKey | KeyResolver,
        issuer: str | None,
        now: float,
        max_age: float | None,
    ) -> int:
        """Async :meth:`check`."""
        reference = read_status_reference(referenced_claims)
        verified = await self.astatus_list(reference.uri, key=key, issuer=issuer, now=now, max_age=max_age)
        return verified.status_of(reference.idx)


class StatusListApp:
    """A pure ASGI app serving Status List Tokens: ``GET <path>`` → 200 with the token as
    ``application/statuslist+jwt`` (§8.2); any other path 404, any other method 405.

    ``tokens`` maps request paths (``/statuslists/1``) to compact tokens; :meth:`publish` replaces
    one (the issuer re-signs the list after every change).
    """

    def __init__(self, tokens: Mapping[str, str] | None = None) -> None:
        self._tokens: dict[str, bytes] = {}
        for path, token in (tokens or {}).items():
            self.publish(path, token)

    def publish(self, path: str, token: str) -> None:
        if not path.startswith("/"):
            raise InvalidInput("a served path starts with '/'", code="bad_path")
        self._tokens[path] = token.encode("ascii")

    async def __call__(self, scope: Mapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        status, body, headers = 404, b"not found\n", [(b"content-type", b"text/plain")]
        if scope["method"] not in ("GET", "HEAD"):
            status, body = 405, b"method not allowed\n"
            headers.append((b"allow", b"GET, HEAD"))
        else:
            token = self._tokens.get(scope["path"])
            if token is not None:
                status, body = 200, token
                headers = [(b"content-type", MEDIA_TYPE.encode("ascii")), (b"cache-control", b"no-cache")]
        headers.append((b"content-length", str(len(body)).encode("ascii")))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
