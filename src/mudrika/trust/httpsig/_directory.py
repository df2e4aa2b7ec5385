"""HTTP Message Signatures directories: parse, fetch, cache, sign and serve an agent's key set.

Why here and not in ``trust.keycloak.jwks``: a Web Bot Auth directory is named by the *request*
(``Signature-Agent``), so every fetch is attacker-steered.  This module is the one place that turns
such a name into keys, and it follows draft-meunier-webbotauth-httpsig-protocol (editor's copy after
-02; the directory format was draft-meunier-http-message-signatures-directory) step by step:

* "Key Distribution and Discovery": a ``directory`` member resolves at its origin's
  ``/.well-known/http-message-signatures-directory``; every resource must answer ``200 (OK)``, other
  statuses are discovery failures and redirects are never followed;
* "Directory Format": a JWK Set; served at the well-known URI with media type
  ``application/http-message-signatures-directory+json`` (anything else is refused); a ``kid`` there
  must equal the key's thumbprint;
* "SSRF": a byte cap after content decoding, a key-count cap, a wall-clock deadline, no redirects,
  and the one :class:`~mudrika.net.egress.EgressPolicy` (loopback and private ranges refused unless
  the operator opted in for development);
* "Cache Behaviour": ``Cache-Control: max-age`` (``no-store``/``no-cache`` mean "use once"), else
  ``Expires`` minus ``Date``, else a default, always capped by ``max_cache_age``; a failed refresh
  never evicts a cached set ("Discovery Failure"), and failures are remembered for ``negative_ttl``
  so a flood naming a dead directory costs one fetch per interval;
* "Possession Proof on the Directory Response": each signature tagged
  ``http-message-signatures-directory`` must verify with the key it names over ``"@authority";req``
  and ``content-digest`` (checked against the body), ``created`` not in the future, ``expires`` not
  passed; ``require_signatures`` drops every key without such a proof.

Refusals: the agent's fault (a status other than 200 and 5xx, a redirect, the wrong media type, too
large, malformed, no usable key, not allowed) is :class:`~mudrika.errors.UntrustedKeyError`, a deny;
the network's (5xx, timeouts, connection errors) is :class:`~mudrika.errors.UnavailableError` (fail
closed, 503).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Protocol, runtime_checkable

import httpx

from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.errors import (
    InvalidInput,
    MudrikaError,
    SignatureError,
    UnavailableError,
    UntrustedKeyError,
    VerificationError,
)
from mudrika.net.egress import EgressPolicy
from mudrika.trust.httpsig._algs import ALGORITHMS, DEFAULT_FOR_KEY_TYPE, REGISTERED_ALGORITHMS
from mudrika.trust.httpsig._components import MessageView, parse_target_uri, signature_base
from mudrika.trust.httpsig._digest import content_digest, parse_content_digest, read_body
from mudrika.trust.httpsig._sf import InnerList, Item, parse_dictionary, serialize_dictionary
from mudrika.trust.httpsig._webprofile import (
    DIRECTORY_MEDIA_TYPE,
    DIRECTORY_TAG,
    DIRECTORY_WELL_KNOWN,
    AgentRef,
    agent_ref,
    key_ref,
)

__all__ = [
    "ANY_DIRECTORY",
    "DEFAULT_MAX_CACHE_AGE",
    "DEFAULT_MAX_DIRECTORY_BYTES",
    "DEFAULT_MAX_KEYS",
    "AgentKeys",
    "DirectoryCache",
    "KeyDirectory",
    "StaticDirectories",
    "cache_lifetime",
    "directory_app",
    "directory_document",
    "sign_directory_response",
    "verify_directory_response",
]

ANY_DIRECTORY: Final = "*"
"""``allow=[ANY_DIRECTORY]``: resolve any https agent the egress policy lets us reach."""
DEFAULT_MAX_DIRECTORY_BYTES: Final = 64 * 1024
DEFAULT_MAX_KEYS: Final = 32
DEFAULT_TTL: Final = 300.0
DEFAULT_MAX_CACHE_AGE: Final = 86400.0
DEFAULT_NEGATIVE_TTL: Final = 30.0
DEFAULT_MAX_STALE: Final = 3600.0
DEFAULT_TIMEOUT: Final = 5.0
_MAX_ENTRIES: Final = 1024
_JWKS_MEDIA_TYPES: Final = frozenset({"application/jwk-set+json", "application/json"})
_MAX_SIGNATURES: Final = 16


@dataclass(frozen=True, slots=True)
class KeyDirectory:
    """One resolved key set: keys by RFC 7638 thumbprint and by ``kid``, with where they came from.

    ``signed`` holds the thumbprints whose directory response signature verified; ``fresh_until`` is
    when the cache must fetch again.
    """

    keys: Mapping[str, PublicKey]
    kids: Mapping[str, PublicKey]
    ref: AgentRef | None = None
    signed: frozenset[str] = frozenset()
    fresh_until: float = float("inf")

    def lookup(self, keyid: str, *, by_kid: bool = False) -> tuple[PublicKey, str] | None:
        """:meth:`key_for` with the key's thumbprint (known without recomputing it)."""
        if by_kid:
            key = self.kids.get(keyid)
            if key is not None:
                return key, key.thumbprint()
        found = self.keys.get(keyid)
        return None if found is None else (found, keyid)

    def key_for(self, keyid: str, *, by_kid: bool = False) -> PublicKey | None:
        """The key a signature's ``keyid`` names: its thumbprint (Web Bot Auth), or with ``by_kid`` the
        ``kid`` first, then the thumbprint (TAP registries label keys freely)."""
        if by_kid:
            key = self.kids.get(keyid)
            if key is not None:
                return key
        return self.keys.get(keyid)

    @classmethod
    def from_jwks(
        cls,
        document: Any,
        *,
        ref: AgentRef | None = None,
        max_keys: int = DEFAULT_MAX_KEYS,
        kid_is_thumbprint: bool = False,
        fresh_until: float = float("inf"),
    ) -> KeyDirectory:
        """Read a JWK Set (RFC 7517 §5) strictly.

        Entries that are not signature keys of a supported type (``use`` other than ``sig``,
        ``key_ops`` without ``verify``, symmetric or unknown ``kty``) are skipped; a private member
        anywhere, a malformed key, a ``kid`` that is not the thumbprint where it must be, too many
        keys or no usable key refuses the whole set.
        """
        if not isinstance(document, Mapping) or not isinstance(document.get("keys"), list):
            raise InvalidInput("directory must be a JWK Set", code="bad_directory")
        entries = document["keys"]
        if len(entries) > max_keys:
            raise InvalidInput("directory has too many keys", code="bad_directory", limit=max_keys)
        by_thumbprint: dict[str, PublicKey] = {}
        by_kid: dict[str, PublicKey] = {}
        for entry in entries:
            if not isinstance(entry, Mapping):
                raise InvalidInput("directory entry must be an object", code="bad_directory")
            if entry.get("use", "sig") != "sig":
                continue
            ops = entry.get("key_ops")
            if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
                continue
            if entry.get("kty") not in ("OKP", "EC", "RSA"):
                continue
            try:
                key = PublicKey.from_jwk(entry)
            except InvalidInput as exc:
                if exc.code == "private_jwk":
                    raise InvalidInput(
                        "directory publishes a private key", code="bad_directory", reason="private_jwk"
                    ) from None
                if exc.code == "bad_jwk":
                    raise InvalidInput(
                        "directory has a malformed key", code="bad_directory", reason=exc.code
                    ) from None
                continue  # a curve or size we do not verify with
            thumbprint = key.thumbprint()
            kid = entry.get("kid")
            if kid is not None:
                if not isinstance(kid, str) or not 1 <= len(kid) <= 256:
                    raise InvalidInput("directory kid must be a short string", code="bad_directory")
                if kid_is_thumbprint and kid != thumbprint:
                    raise InvalidInput(
                        "directory kid is not the key's thumbprint", code="bad_directory", reason="kid"
                    )
                if kid in by_kid and by_kid[kid] != key:
                    raise InvalidInput("directory repeats a kid", code="bad_directory", reason="kid")
                by_kid[kid] = key
            by_thumbprint[thumbprint] = key
        if not by_thumbprint:
            raise InvalidInput("directory has no usable signature key", code="bad_directory")
        return cls(
            keys=MappingProxyType(by_thumbprint),
            kids=MappingProxyType(by_kid),
            ref=ref,
            fresh_until=fresh_until,
        )


# --- where keys come from ------------------------------------------------------------------------


@runtime_checkable
class AgentKeys(Protocol):
    """What the verifier asks for keys: :class:`StaticDirectories` or :class:`DirectoryCache`."""

    def keys_for(self, ref: AgentRef) -> KeyDirectory: ...

    async def akeys_for(self, ref: AgentRef) -> KeyDirectory: ...


class StaticDirectories(AgentKeys):
    """Key sets configured ahead of time, by the agent's URL (the directory origin, or the JWKS/CIMD
    URL): e.g. a partner's pinned directory, Visa's registry JWKS saved to a file, or test vectors.

    The draft lets a verifier that already holds the keys skip the fetch ("What the URL Endorses").
    """

    def __init__(
        self,
        directories: Mapping[str, KeyDirectory | Mapping[str, Any]],
        *,
        pinned: Iterable[PublicKey] = (),
    ) -> None:
        self._by_url: dict[str, KeyDirectory] = {}
        for key in pinned:
            ref = key_ref(key.thumbprint())
            by_tp = MappingProxyType({key.thumbprint(): key})
            self._by_url[ref.url] = KeyDirectory(by_tp, MappingProxyType({}), ref)
        for url, value in directories.items():
            ref = _configured_ref(url)
            directory = (
                value
                if isinstance(value, KeyDirectory)
                else KeyDirectory.from_jwks(value, ref=ref, kid_is_thumbprint=ref.type == "directory")
            )
            self._by_url[ref.url] = KeyDirectory(directory.keys, directory.kids, ref, directory.signed)

    def __repr__(self) -> str:
        return f"StaticDirectories({sorted(self._by_url)!r})"

    def keys_for(self, ref: AgentRef) -> KeyDirectory:
        directory = self._by_url.get(ref.url)
        if directory is None:
            raise UntrustedKeyError(
                "no key directory for this agent", code="directory_not_allowed", agent=ref.identifier[:256]
            )
        return directory

    async def akeys_for(self, ref: AgentRef) -> KeyDirectory:
        return self.keys_for(ref)


def _configured_ref(url: str) -> AgentRef:
    """An origin is a ``directory``; a URL with a path other than ``/`` a ``jwks_uri``."""
    target = parse_target_uri(url)
    if target.path == "/" and target.query is None:
        return agent_ref(target.origin, "directory")
    if target.path == DIRECTORY_WELL_KNOWN and target.query is None:
        return agent_ref(target.origin, "directory")
    return agent_ref(url, "jwks_uri")


def cache_lifetime(headers: httpx.Headers, *, now: float, default_ttl: float, max_cache_age: float) -> float:
    """Seconds a directory response stays fresh (RFC 9111 §4.2.1), capped at ``max_cache_age``.

    ``no-store`` and ``no-cache`` give 0 (used for the request in hand, fetched again next time);
    ``max-age`` wins over ``Expires`` (§5.3); ``Age`` is subtracted; malformed values count as absent.
    """
    lifetime: float | None = None
    directives = [part.strip().lower() for part in headers.get("cache-control", "").split(",")]
    for directive in directives:
        if directive in ("no-store", "no-cache", "private=no-cache"):
            return 0.0
    for directive in directives:
        name, _, value = directive.partition("=")
        if name == "max-age" and _is_seconds(value):
            lifetime = float(value)
            break
    if lifetime is None and "expires" in headers:
        expires = _http_date(headers["expires"])
        if expires is None:
            lifetime = 0.0  # RFC 9111 §5.3: an invalid Expires means "already expired"
        else:
            date = _http_date(headers.get("date", "")) or now
            lifetime = max(0.0, expires - date)
    if lifetime is None:
        lifetime = default_ttl
    age = headers.get("age", "")
    if _is_seconds(age):
        lifetime -= float(age)
    return max(0.0, min(lifetime, max_cache_age))


def _is_seconds(value: str) -> bool:
    """A header's delta-seconds / length: 1..10 ASCII digits (``str.isdigit`` also accepts "²",
    which ``int`` and ``float`` refuse)."""
    return 1 <= len(value) <= 10 and value.isascii() and value.isdigit()


def _http_date(value: str) -> float | None:
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed is None or parsed.tzinfo is None:
        return None
    return parsed.timestamp()


@dataclass(slots=True)
class _Entry:
    directory: KeyDirectory | None
    failure: MudrikaError | None
    failed_at: float = float("-inf")


class DirectoryCache(AgentKeys):
    """Fetches agents' key sets through the egress policy and caches them by HTTP caching rules.

    Required trust: ``allow`` (origins whose agents may be resolved, e.g.
    ``["https://crawler.example"]``, or ``[ANY_DIRECTORY]`` for any https agent the egress policy
    reaches) and ``egress`` (the one outbound policy: loopback and private ranges are refused unless
    it was built with ``allow_private_networks=True``).  ``require_signatures`` keeps only keys with a
    valid directory response signature.  ``verify`` is the TLS trust (``True``: the system store).
    """

    def __init__(
        self,
        *,
        allow: Iterable[str],
        egress: EgressPolicy,
        require_signatures: bool,
        algorithms: Iterable[str] = REGISTERED_ALGORITHMS,
        verify: ssl.SSLContext | bool = True,
        default_ttl: float = DEFAULT_TTL,
        max_cache_age: float = DEFAULT_MAX_CACHE_AGE,
        negative_ttl: float = DEFAULT_NEGATIVE_TTL,
        max_stale: float = DEFAULT_MAX_STALE,
        max_bytes: int = DEFAULT_MAX_DIRECTORY_BYTES,
        max_keys: int = DEFAULT_MAX_KEYS,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(egress, EgressPolicy):
            raise InvalidInput("egress must be an EgressPolicy", code="httpsig_config")
        origins: set[str] = set()
        for entry in allow:
            origins.add(ANY_DIRECTORY if entry == ANY_DIRECTORY else agent_ref(entry).origin)
        if not origins:
            raise InvalidInput("allow names no agent origin", code="httpsig_config")
        allowed_algs = frozenset(algorithms)
        if not allowed_algs or not allowed_algs <= ALGORITHMS.keys():
            raise InvalidInput("algorithms must be known HTTP signature algorithms", code="httpsig_config")
        for name, value in (("default_ttl", default_ttl), ("max_cache_age", max_cache_age)):
            if not 0 <= value <= 7 * 86400:
                raise InvalidInput(f"{name} must be within 0..604800 seconds", code="httpsig_config")
        self._allow = frozenset(origins)
        self._egress = egress
        self._require_signatures = bool(require_signatures)
        self._algorithms = allowed_algs
        self._verify = verify
        self._default_ttl = float(default_ttl)
        self._max_cache_age = float(max_cache_age)
        self._negative_ttl = float(negative_ttl)
        self._max_stale = float(max_stale)
        self._max_bytes = int(max_bytes)
        self._max_keys = int(max_keys)
        self._timeout = float(timeout)
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._flights: dict[tuple[int, str], asyncio.Future[KeyDirectory]] = {}
        self.fetches = 0
        """How many fetches were started (tests and metrics: the cache's whole point)."""

    def __repr__(self) -> str:
        return f"DirectoryCache(allow={sorted(self._allow)!r}, egress={self._egress!r})"

    # -- lookups -------------------------------------------------------------------------------------
    def keys_for(self, ref: AgentRef) -> KeyDirectory:
        cached = self._cached(ref)
        if cached is not None:
            return cached
        try:
            directory = self._resolve_sync(ref)
        except MudrikaError as exc:
            return self._failed(ref, exc)
        return self._store(ref, directory)

    async def akeys_for(self, ref: AgentRef) -> KeyDirectory:
        cached = self._cached(ref)
        if cached is not None:
            return cached
        loop = asyncio.get_running_loop()
        flight_key = (id(loop), ref.url)
        flight = self._flights.get(flight_key)
        if flight is not None:  # one fetch per directory, however many requests wait for it
            return await asyncio.shield(flight)
        future: asyncio.Future[KeyDirectory] = loop.create_future()
        self._flights[flight_key] = future
        try:
            try:
                directory = self._store(ref, await self._aresolve(ref))
            except MudrikaError as exc:
                directory = self._failed(ref, exc)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters get it through shield, nobody else must log it
            raise
        else:
            future.set_result(directory)
            return directory
        finally:
            if self._flights.get(flight_key) is future:
                del self._flights[flight_key]

    def _check_allowed(self, ref: AgentRef) -> None:
        if ANY_DIRECTORY not in self._allow and ref.origin not in self._allow:
            raise UntrustedKeyError(
                "agent directory not allowed here", code="directory_not_allowed", agent=ref.origin[:256]
            )

    def _cached(self, ref: AgentRef) -> KeyDirectory | None:
        if ref.type == "key":
            raise UntrustedKeyError("no Signature-Agent to resolve keys from", code="unknown_key")
        self._check_allowed(ref)
        entry = self._entries.get(ref.url)
        if entry is None:
            return None
        now = self._clock()
        if entry.directory is not None and now < entry.directory.fresh_until:
            return entry.directory
        if entry.failure is not None and now - entry.failed_at < self._negative_ttl:
            stale = entry.directory
            if stale is not None and now < stale.fresh_until + self._max_stale:
                return stale
            raise entry.failure
        return None

    def _store(self, ref: AgentRef, directory: KeyDirectory) -> KeyDirectory:
        if len(self._entries) >= _MAX_ENTRIES:
            self._entries.pop(next(iter(self._entries)))
        self._entries[ref.url] = _Entry(directory, None)
        return directory

    def _failed(self, ref: AgentRef, exc: MudrikaError) -> KeyDirectory:
        """Discovery failed: remember it briefly; a transient failure never evicts a good set."""
        now = self._clock()
        entry = self._entries.get(ref.url)
        stale = entry.directory if entry is not None else None
        self._entries[ref.url] = _Entry(stale, exc, now)
        if (
            isinstance(exc, UnavailableError)
            and stale is not None
            and now < stale.fresh_until + self._max_stale
        ):
            return stale
        raise exc

    # -- fetching ------------------------------------------------------------------------------------
    def _resolve_sync(self, ref: AgentRef) -> KeyDirectory:
        self._egress.check_url(ref.url)  # scheme and IP literals refused before any client exists
        with httpx.Client(
            transport=self._egress.transport(verify=self._verify), **self._client_options()
        ) as client:
            if ref.type != "cimd":
                return self._directory(ref, *self._get_sync(client, ref))
            jwks_ref, inline = self._card(ref, *self._get_sync(client, ref))
            if inline is not None:
                return inline
            self._check_allowed(jwks_ref)
            return self._directory(jwks_ref, *self._get_sync(client, jwks_ref))

    async def _aresolve(self, ref: AgentRef) -> KeyDirectory:
        self._egress.check_url(ref.url)
        async with httpx.AsyncClient(
            transport=self._egress.async_transport(verify=self._verify), **self._client_options()
        ) as client:
            if ref.type != "cimd":
                return self._directory(ref, *await self._aget(client, ref))
            jwks_ref, inline = self._card(ref, *await self._aget(client, ref))
            if inline is not None:
                return inline
            self._check_allowed(jwks_ref)
            return self._directory(jwks_ref, *await self._aget(client, jwks_ref))

    def _client_options(self) -> dict[str, Any]:
        return {"timeout": self._timeout, "follow_redirects": False, "trust_env": False}

    def _get_sync(self, client: httpx.Client, ref: AgentRef) -> tuple[httpx.Headers, bytes]:
        self.fetches += 1
        try:
            with client.stream("GET", ref.url, headers={"Accept": _accept(ref)}) as response:
                self._check_response(ref, response)
                return response.headers, _capped(response.iter_bytes(), self._max_bytes)
        except httpx.HTTPError as exc:
            raise _network_failure(ref, exc) from None

    async def _aget(self, client: httpx.AsyncClient, ref: AgentRef) -> tuple[httpx.Headers, bytes]:
        self.fetches += 1
        try:
            async with client.stream("GET", ref.url, headers={"Accept": _accept(ref)}) as response:
                self._check_response(ref, response)
                return response.headers, await _acapped(response.aiter_bytes(), self._max_bytes)
        except httpx.HTTPError as exc:
            raise _network_failure(ref, exc) from None

    def _check_response(self, ref: AgentRef, response: httpx.Response) -> None:
        status = response.status_code
        if 300 <= status < 400:
            raise UntrustedKeyError(
                "directory answered with a redirect", code="directory_redirect", status=status
            )
        if status >= 500:
            raise UnavailableError("directory unavailable", code="directory_unavailable", status=status)
        if status != 200:
            raise UntrustedKeyError("directory fetch refused", code="directory_status", status=status)
        media = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        expected = {DIRECTORY_MEDIA_TYPE} if ref.type == "directory" else _JWKS_MEDIA_TYPES
        if ref.type == "cimd":
            expected = {"application/json"}
        if media not in expected:
            raise UntrustedKeyError(
                "directory has the wrong media type", code="directory_media_type", media_type=media[:64]
            )
        declared = response.headers.get("content-length", "")
        if _is_seconds(declared) and int(declared) > self._max_bytes:
            raise UntrustedKeyError("directory too large", code="directory_too_large", limit=self._max_bytes)

    def _directory(self, ref: AgentRef, headers: httpx.Headers, body: bytes) -> KeyDirectory:
        now = self._clock()
        lifetime = cache_lifetime(
            headers, now=now, default_ttl=self._default_ttl, max_cache_age=self._max_cache_age
        )
        try:
            return verify_directory_response(
                ref,
                headers,
                body,
                algorithms=self._algorithms,
                require_signatures=self._require_signatures,
                max_keys=self._max_keys,
                now=now,
                fresh_until=now + lifetime,
            )
        except InvalidInput as exc:
            raise UntrustedKeyError(
                "directory refused", code="directory_malformed", reason=exc.code
            ) from None

    def _card(
        self, ref: AgentRef, headers: httpx.Headers, body: bytes
    ) -> tuple[AgentRef, KeyDirectory | None]:
        """A Client ID Metadata Document: ``client_id`` must be its URL, and exactly one of ``jwks``
        and ``jwks_uri`` provides the keys (draft "Key Distribution and Discovery", ``cimd``)."""
        try:
            card = loads_strict(body, max_bytes=self._max_bytes, max_depth=16)
        except InvalidInput as exc:
            raise UntrustedKeyError(
                "agent card refused", code="directory_malformed", reason=exc.code
            ) from None
        if not isinstance(card, Mapping) or card.get("client_id") != ref.url:
            raise UntrustedKeyError("client_id must be the card URL", code="directory_malformed")
        if ("jwks" in card) == ("jwks_uri" in card):
            raise UntrustedKeyError("card needs exactly one of jwks and jwks_uri", code="directory_malformed")
        if "jwks" in card:
            now = self._clock()
            lifetime = cache_lifetime(
                headers, now=now, default_ttl=self._default_ttl, max_cache_age=self._max_cache_age
            )
            try:
                return ref, KeyDirectory.from_jwks(
                    card["jwks"], ref=ref, max_keys=self._max_keys, fresh_until=now + lifetime
                )
            except InvalidInput as exc:
                raise UntrustedKeyError(
                    "agent card refused", code="directory_malformed", reason=exc.code
                ) from None
        uri = card["jwks_uri"]
        if not isinstance(uri, str):
            raise UntrustedKeyError("jwks_uri must be a URL", code="directory_malformed")
        try:
            return _configured_ref(uri), None
        except InvalidInput as exc:
            raise UntrustedKeyError(
                "agent card refused", code="directory_malformed", reason=exc.code
            ) from None


def _accept(ref: AgentRef) -> str:
    return DIRECTORY_MEDIA_TYPE if ref.type == "directory" else "application/json"


def _network_failure(ref: AgentRef, exc: httpx.HTTPError) -> UnavailableError:
    return UnavailableError(
        "directory unavailable",
        code="directory_unavailable",
        reason=type(exc).__name__,
        agent=ref.origin[:256],
    )


def _capped(chunks: Iterator[bytes], limit: int) -> bytes:
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        if len(buffer) > limit:
            raise UntrustedKeyError("directory too large", code="directory_too_large", limit=limit)
    return bytes(buffer)


async def _acapped(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk
        if len(buffer) > limit:
            raise UntrustedKeyError("directory too large", code="directory_too_large", limit=limit)
    return bytes(buffer)


# --- directory response signatures ----------------------------------------------------------------


def verify_directory_response(
    ref: AgentRef,
    headers: Any,
    body: bytes,
    *,
    algorithms: Iterable[str],
    require_signatures: bool,
    now: float,
    leeway: float = 5.0,
    max_keys: int = DEFAULT_MAX_KEYS,
    fresh_until: float = float("inf"),
) -> KeyDirectory:
    """Parse a directory response body and check its possession proofs (draft appendix "Validating
    the Domain Binding").

    Every ``Signature-Input`` member tagged ``http-message-signatures-directory`` must verify: its
    ``keyid`` names a key of this directory by thumbprint, it covers ``"@authority";req`` (the
    authority ``ref.url`` was fetched from) and ``content-digest``, the digest matches ``body``,
    ``created`` is not in the future and ``expires`` has not passed, and ``alg`` (when given) is
    allowed and fits the key.  One failing proof refuses the directory (it was tampered with or
    re-served).  With ``require_signatures`` keys without a proof are dropped, and none left refuses it.
    """
    allowed = frozenset(algorithms)
    document = loads_strict(body, max_bytes=len(body) + 1, max_depth=16)
    directory = KeyDirectory.from_jwks(
        document,
        ref=ref,
        max_keys=max_keys,
        kid_is_thumbprint=ref.type == "directory",
        fresh_until=fresh_until,
    )
    request = MessageView.request("GET", ref.url, {})
    response = MessageView.response(200, headers, request=request)
    signed: set[str] = set()
    inputs_text = response.field("signature-input")
    signatures_text = response.field("signature")
    if inputs_text is not None and signatures_text is not None:
        inputs = parse_dictionary(inputs_text, field="signature-input")
        values = parse_dictionary(signatures_text, field="signature")
        if len(inputs) > _MAX_SIGNATURES:
            raise InvalidInput("too many directory signatures", code="too_large", limit=_MAX_SIGNATURES)
        for label, member in inputs.items():
            if not isinstance(member, InnerList) or member.param("tag") != DIRECTORY_TAG:
                continue
            signed.add(_check_proof(directory, response, body, label, member, values, allowed, now, leeway))
    if require_signatures:
        keys = {tp: key for tp, key in directory.keys.items() if tp in signed}
        if not keys:
            raise UntrustedKeyError("directory keys carry no possession proof", code="directory_unsigned")
        kids = {kid: key for kid, key in directory.kids.items() if key.thumbprint() in signed}
        return KeyDirectory(
            MappingProxyType(keys), MappingProxyType(kids), ref, frozenset(signed), fresh_until
        )
    return KeyDirectory(directory.keys, directory.kids, ref, frozenset(signed), fresh_until)


def _check_proof(
    directory: KeyDirectory,
    response: MessageView,
    body: bytes,
    label: str,
    member: InnerList,
    values: Mapping[str, Item | InnerList],
    allowed: frozenset[str],
    now: float,
    leeway: float,
) -> str:
    covered = {(item.value, item.params) for item in member.items}
    if ("@authority", (("req", True),)) not in covered or ("content-digest", ()) not in covered:
        raise SignatureError(
            'directory signature must cover "@authority";req and content-digest', code="directory_proof"
        )
    keyid, created, expires = member.param("keyid"), member.param("created"), member.param("expires")
    if type(keyid) is not str or type(created) is not int or type(expires) is not int:
        raise SignatureError("directory signature needs keyid, created, expires", code="directory_proof")
    if created > now + leeway:
        raise SignatureError("directory signature created in the future", code="directory_proof")
    if now >= expires + leeway:
        raise SignatureError("directory signature expired", code="directory_proof")
    key = directory.keys.get(keyid)
    if key is None:
        raise SignatureError("directory signature names a key it does not publish", code="directory_proof")
    alg_name = member.param("alg")
    if alg_name is None:
        alg_name = DEFAULT_FOR_KEY_TYPE[key.key_type]
    alg = ALGORITHMS.get(alg_name) if isinstance(alg_name, str) else None
    if alg is None or alg.name not in allowed or alg.key_type is not key.key_type:
        raise SignatureError("directory signature algorithm not allowed", code="directory_proof")
    value = values.get(label)
    if not isinstance(value, Item) or not isinstance(value.value, bytes):
        raise SignatureError("directory signature missing", code="directory_proof")
    digest_field = response.field("content-digest")
    if digest_field is None:
        raise SignatureError("directory response has no Content-Digest", code="directory_proof")
    read_body(body, parse_content_digest(digest_field), max_body=len(body))
    base = signature_base(response, member, component_parameters=True)
    try:
        key.verify(value.value, base, alg.jws)
    except VerificationError:
        raise SignatureError("directory signature does not verify", code="directory_proof") from None
    return keyid


def directory_document(keys: Sequence[PublicKey]) -> bytes:
    """The directory body for ``keys``: a JWK Set, each key with ``kid`` = its thumbprint, ``use: sig``."""
    entries = [{**key.to_jwk(), "kid": key.thumbprint(), "use": "sig"} for key in keys]
    return json.dumps({"keys": entries}, separators=(",", ":")).encode("ascii")


def sign_directory_response(
    keys: Sequence[KeyPair], body: bytes, *, authority: str, created: int, expires: int
) -> dict[str, str]:
    """``Content-Digest``, ``Signature-Input`` and ``Signature`` proving possession of every key
    (one signature per key, labels ``binding``, ``binding1`` …) for a directory served at ``authority``."""
    if not keys or expires <= created:
        raise InvalidInput("need keys and expires after created", code="httpsig_config")
    digest = content_digest(body)
    request = MessageView.request("GET", f"https://{authority}{DIRECTORY_WELL_KNOWN}", {})
    response = MessageView.response(200, {"content-digest": digest}, request=request)
    inputs: dict[str, Item | InnerList] = {}
    signatures: dict[str, Item | InnerList] = {}
    for index, key in enumerate(keys):
        label = "binding" if index == 0 else f"binding{index}"
        inner = InnerList(
            (Item("@authority", (("req", True),)), Item("content-digest")),
            (
                ("created", created),
                ("expires", expires),
                ("keyid", key.public_key.thumbprint()),
                ("alg", DEFAULT_FOR_KEY_TYPE[key.key_type]),
                ("tag", DIRECTORY_TAG),
            ),
        )
        base = signature_base(response, inner, component_parameters=True)
        alg = ALGORITHMS[DEFAULT_FOR_KEY_TYPE[key.key_type]]
        inputs[label] = inner
        signatures[label] = Item(key.sign(base, alg.jws))
    return {
        "Content-Digest": digest,
        "Signature-Input": serialize_dictionary(inputs),
        "Signature": serialize_dictionary(signatures),
    }


# --- serving ------------------------------------------------------------------------------------

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]


@dataclass(slots=True)
class _DirectoryApp:
    keys: tuple[KeyPair, ...]
    authorities: frozenset[str]
    max_age: int
    signature_lifetime: int
    clock: Callable[[], float]
    body: bytes = field(init=False)

    def __post_init__(self) -> None:
        self.body = directory_document([key.public_key for key in self.keys])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        if scope.get("path") != DIRECTORY_WELL_KNOWN:
            await _plain(send, 404, b"not found")
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await _plain(send, 405, b"method not allowed", [(b"allow", b"GET, HEAD")])
            return
        hosts = [value for name, value in scope.get("headers", []) if name == b"host"]
        authority = hosts[0].decode("latin-1").strip().lower() if len(hosts) == 1 else ""
        if authority not in self.authorities:
            # A proof binds the keys to the authority it covers: never sign one we do not serve as.
            await _plain(send, 421, b"misdirected request")
            return
        created = int(self.clock())
        signed = sign_directory_response(
            self.keys,
            self.body,
            authority=authority,
            created=created,
            expires=created + self.signature_lifetime,
        )
        headers = [
            (b"content-type", DIRECTORY_MEDIA_TYPE.encode()),
            (b"content-length", str(len(self.body)).encode()),
            (b"cache-control", f"max-age={self.max_age}".encode()),
            (b"access-control-allow-origin", b"*"),
            *((name.lower().encode(), value.encode()) for name, value in signed.items()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else self.body})


async def _plain(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def directory_app(
    keys: Sequence[KeyPair],
    *,
    authorities: Iterable[str],
    max_age: int = 86400,
    signature_lifetime: int = 7 * 86400,
    clock: Callable[[], float] = time.time,
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An ASGI app serving ``keys`` at ``/.well-known/http-message-signatures-directory``.

    ``authorities`` are the ``Host`` values it answers as (``agent.example``, ``agent.example:8443``):
    each response carries one possession proof per key covering that authority, so the set cannot be
    re-served under another name; any other ``Host`` gets 421.  ``max_age`` is the ``Cache-Control``
    lifetime; ``signature_lifetime`` the proofs' (the draft advises well beyond any republication).
    """
    pairs = tuple(keys)
    if not pairs or not all(isinstance(key, KeyPair) for key in pairs):
        raise InvalidInput("directory_app needs at least one KeyPair", code="httpsig_config")
    hosts = frozenset(parse_target_uri(f"https://{host}/").authority for host in authorities)
    if not hosts:
        raise InvalidInput("directory_app needs the authorities it serves as", code="httpsig_config")
    return _DirectoryApp(pairs, hosts, int(max_age), int(signature_lifetime), clock)
