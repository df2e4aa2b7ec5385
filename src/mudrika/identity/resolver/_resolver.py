"""One DID resolver: configured method drivers, a bounded TTL cache, a negative cache, rate limits.

Why one object: every verifier in mudrika turns a ``kid`` into a key the same way —
``resolve_key(did_url, purpose)`` — so caching, offline operation, error codes and what may dial out
are decided once.

* **Drivers are chosen, not fallen into** (``MethodDriver``): did:key and did:jwk are computed
  locally and did:web is fetched over HTTPS through an :class:`~mudrika.net.egress.EgressPolicy`
  (strict unless the ``egress`` given says otherwise).  Any other method is ``methodNotSupported``
  unless the configuration names a driver for it.  didkit (which dials out by itself, outside our
  egress policy, timeouts and size caps — a ``did:onion`` makes it contact a local SOCKS port) is
  never a fallback: it resolves only the methods listed in ``didkit_methods`` (the CLI's
  ``--didkit-method``).  A verifier that runs on attacker input should list none.
* **Cache**: an ``OrderedDict`` LRU of successful results with a TTL, on an injectable clock.  A hit
  is a dict lookup, an expiry comparison and an LRU touch.
* **Negative cache and rate limits** (drivers that use the network only): a failed resolution is
  remembered for ``negative_ttl`` seconds and answered again without a fetch, and fetches are
  limited per DID (``max_fetches_per_did``) and per host (``max_fetches_per_host``) in each
  ``rate_window``; past a limit the answer is ``internalError`` / ``rate_limited`` without any
  network traffic.  So a stream of signed requests naming fresh or failing DIDs cannot turn the
  server into a scanner or a traffic amplifier.
* **Offline** (:meth:`DIDResolver.offline`): resolves only from a supplied snapshot of documents,
  plus did:key and did:jwk, which are pure functions of the DID and need nothing else (a snapshot
  entry for them is ignored: the DID itself is the authority).  did:bindu snapshot entries are still
  self-certified.  No driver that can open a connection is ever installed, and none can be
  registered later.
* **Errors** (W3C DID Resolution §"DID Resolution Metadata"), split by whose fact it is:
  ``invalidDid`` as :class:`~mudrika.errors.InvalidInput`; ``notFound``, ``methodNotSupported``,
  ``representationNotSupported`` and ``invalidDidDocument`` as
  :class:`~mudrika.errors.DocumentError` (a :class:`~mudrika.errors.VerificationError`: the DID
  has no usable document, a deny, 401); a document that fails a check (wrong id, not
  self-certifying) as another :class:`~mudrika.errors.VerificationError`; a destination the egress
  policy refuses as :class:`~mudrika.errors.EgressDenied`; and only "could not fetch" (network,
  timeout, 5xx, rate limit, a driver's unexpected failure) as ``internalError``,
  :class:`~mudrika.errors.ResolutionError`, an :class:`~mudrika.errors.UnavailableError` (503).
  Whoever presents a DID controls whether its document exists, so that must never read as an
  outage.  A deactivated DID resolves
  (``ResolutionResult.deactivated``) but :meth:`DIDResolver.resolve_key` refuses its keys.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Final, Literal, overload

from mudrika.crypto.keys import PublicKey
from mudrika.errors import DocumentError, InvalidInput, MudrikaError, ResolutionError, UntrustedKeyError
from mudrika.identity.did import DID, parse_did, parse_did_url
from mudrika.identity.document import AgreementKey, Purpose, SigningPurpose
from mudrika.identity.methods.bindu import BinduDriver
from mudrika.identity.methods.jwk import JwkDriver
from mudrika.identity.methods.key import KeyDriver
from mudrika.identity.methods.web import WebDriver
from mudrika.identity.resolution import (
    CONTENT_TYPE,
    LocalDriver,
    MethodDriver,
    ResolutionResult,
    check_document_id,
    parse_document,
    result,
)
from mudrika.identity.resolver._didkit import DidkitDriver
from mudrika.net.egress import EgressPolicy
from mudrika.net.limits import FixedWindows
from mudrika.net.logs import log_value

_log = logging.getLogger(__name__)
#: Representations we can return (DID Core §6.2 JSON; the JSON-LD form is the same bytes for us).
_ACCEPTED: Final = frozenset({CONTENT_TYPE, "application/did+ld+json", "application/json", "*/*"})
DEFAULT_NEGATIVE_TTL: Final = 30.0
DEFAULT_RATE_WINDOW: Final = 60.0
DEFAULT_MAX_FETCHES_PER_DID: Final = 5
DEFAULT_MAX_FETCHES_PER_HOST: Final = 30
#: Bound on the DIDs and hosts remembered by the negative cache and the rate limiter.
_MAX_TRACKED: Final = 10_000


class SnapshotDriver(LocalDriver):
    """Resolves from a fixed mapping DID → document (or DID → ``{"didDocument", "didDocumentMetadata"}``).

    Used as the fallback of an offline resolver: it never touches the network.  Each entry is
    validated as a DID Core document when it is first resolved, and its id must equal the DID.
    """

    def __init__(self, snapshot: Mapping[str, Any]) -> None:
        self._snapshot = dict(snapshot)

    def document_for(self, did: str) -> Mapping[str, Any] | None:
        """The raw document of ``did`` in the snapshot (without its metadata envelope), if any."""
        entry = self._snapshot.get(did)
        if isinstance(entry, Mapping) and isinstance(entry.get("didDocument"), Mapping):
            document: Mapping[str, Any] = entry["didDocument"]
            return document
        return entry if isinstance(entry, Mapping) else None

    def resolve(self, did: DID) -> ResolutionResult:
        text = str(did)
        entry = self._snapshot.get(text)
        if entry is None:
            raise DocumentError("DID not in the offline snapshot", code="notFound")
        raw = self.document_for(text)
        if raw is None:
            raise DocumentError("snapshot entry is not a DID document", code="invalidDidDocument")
        metadata = entry.get("didDocumentMetadata") if "didDocument" in entry else None
        doc = parse_document(raw, message="snapshot entry is not a valid DID document")
        check_document_id(doc, text, message="snapshot document id does not match the DID")
        return result(
            doc, driver="snapshot", document_metadata=metadata if isinstance(metadata, Mapping) else None
        )


class DIDResolver:
    """Resolve DIDs and DID URLs to documents and keys, with a bounded TTL cache.

    ``DIDResolver()`` gives did:key, did:jwk and did:web (HTTPS through ``egress``, strict by
    default) and nothing else; ``register(BinduDriver(source))`` adds did:bindu; ``didkit_methods``
    names the methods sent to didkit (each one an explicit choice: it dials out by itself).  Every
    other method is ``methodNotSupported``.  ``clock`` must be monotonic (seconds).
    """

    def __init__(
        self,
        drivers: Iterable[MethodDriver] | None = None,
        *,
        didkit_methods: Collection[str] = (),
        egress: EgressPolicy | None = None,
        cache_size: int = 1024,
        ttl: float = 300.0,
        negative_ttl: float = DEFAULT_NEGATIVE_TTL,
        max_fetches_per_did: int = DEFAULT_MAX_FETCHES_PER_DID,
        max_fetches_per_host: int = DEFAULT_MAX_FETCHES_PER_HOST,
        rate_window: float = DEFAULT_RATE_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if cache_size < 0 or ttl < 0 or negative_ttl < 0 or rate_window <= 0:
            raise InvalidInput("cache sizes and times must be >= 0", code="bad_config")
        if max_fetches_per_did < 1 or max_fetches_per_host < 1:
            raise InvalidInput("fetch limits must be >= 1", code="bad_config")
        if drivers is not None and egress is not None:
            raise InvalidInput("egress configures the default did:web driver only", code="bad_config")
        self._drivers: dict[str, MethodDriver] = {}
        # Only an offline resolver has a fallback (its snapshot, which never touches the network).
        self._fallback: MethodDriver | None = None
        self._offline = False
        self._cache: OrderedDict[str, tuple[ResolutionResult, float]] = OrderedDict()
        self._cache_size = cache_size
        self._ttl = ttl
        self._negative: OrderedDict[str, tuple[MudrikaError, float]] = OrderedDict()
        self._negative_ttl = negative_ttl
        self._per_did = FixedWindows(max_fetches_per_did, rate_window, max_keys=_MAX_TRACKED)
        self._per_host = FixedWindows(max_fetches_per_host, rate_window, max_keys=_MAX_TRACKED)
        self._clock = clock
        if drivers is None:
            # The did:web driver's own defaults (its timeout is its egress deadline) unless the
            # caller gives a policy; none of it is built for a resolver given its drivers.
            drivers = (KeyDriver(), JwkDriver(), WebDriver(egress=egress))
        for driver in drivers:
            self.register(driver)
        if didkit_methods:
            didkit = DidkitDriver(didkit_methods)
            taken = sorted(didkit.methods & self._drivers.keys())
            if taken:
                raise InvalidInput(
                    f"did:{taken[0]} already has a driver; didkit_methods names only other methods",
                    code="bad_config",
                    methods=",".join(taken),
                )
            self.register(didkit)

    @classmethod
    def offline(
        cls,
        snapshot: Mapping[str, Any],
        *,
        cache_size: int = 1024,
        ttl: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> DIDResolver:
        """A resolver that answers only from ``snapshot`` (and computes did:key / did:jwk locally).

        ``snapshot`` maps DID strings to DID documents (parsed JSON), or to
        ``{"didDocument": ..., "didDocumentMetadata": {...}}`` to carry metadata such as
        ``deactivated``.  It never touches the network.
        """
        snapshots = SnapshotDriver(snapshot)
        resolver = cls((KeyDriver(), JwkDriver()), cache_size=cache_size, ttl=ttl, clock=clock)
        resolver.register(BinduDriver(snapshots.document_for))
        resolver._fallback = snapshots
        resolver._offline = True
        return resolver

    def register(self, driver: MethodDriver) -> None:
        """Route the driver's methods to it (replacing any earlier driver for them)."""
        if self._offline and driver.uses_network:
            raise InvalidInput(
                "an offline resolver cannot use a driver that touches the network", code="offline_resolver"
            )
        for method in driver.methods:
            self._drivers[method] = driver
        self._cache.clear()

    @property
    def is_offline(self) -> bool:
        return self._offline

    def clear_cache(self) -> None:
        self._cache.clear()
        self._negative.clear()

    # -- resolution ------------------------------------------------------------------------------------
    def _fresh(self, did: str, accept: str) -> ResolutionResult | None:
        """The cached result while it is fresh (shared by :meth:`resolve` and :meth:`aresolve`), else ``None``."""
        entry = self._cache.get(did)
        if entry is None or entry[1] <= self._clock():
            return None
        # Plain try/except, not contextlib.suppress: this is the hot path (a context manager
        # costs more than the lookup).  KeyError: evicted by another thread meanwhile.
        try:  # noqa: SIM105
            self._cache.move_to_end(did)
        except KeyError:
            pass
        if accept is not CONTENT_TYPE:
            self._check_accept(accept)
        return entry[0]

    def resolve(self, did: str, accept: str = CONTENT_TYPE) -> ResolutionResult:
        """Resolve a DID to its document; served from the cache while fresh."""
        cached = self._fresh(did, accept)
        if cached is not None:
            return cached
        parsed, driver = self._admitted(did, accept)
        try:
            resolved = driver.resolve(parsed)
        except Exception as exc:
            raise self._failed(did, driver, exc) from None
        return self._store(did, resolved)

    async def aresolve(self, did: str, accept: str = CONTENT_TYPE) -> ResolutionResult:
        """Async :meth:`resolve` (did:web uses ``httpx.AsyncClient``, didkit its own event-loop future)."""
        cached = self._fresh(did, accept)
        if cached is not None:
            return cached
        parsed, driver = self._admitted(did, accept)
        try:
            if getattr(type(driver), "aresolve", None) is LocalDriver.aresolve:
                # Fast path: a driver answering from memory whose async form is LocalDriver's (it
                # only calls resolve) is called directly, without building and awaiting a coroutine
                # that would only call it.  A subclass that overrides aresolve is still awaited.
                resolved = driver.resolve(parsed)
            else:
                resolved = await driver.aresolve(parsed)
        except Exception as exc:
            raise self._failed(did, driver, exc) from None
        return self._store(did, resolved)

    @overload
    def resolve_key(self, did_url: str, purpose: Literal["keyAgreement"]) -> AgreementKey: ...
    @overload
    def resolve_key(self, did_url: str, purpose: SigningPurpose) -> PublicKey: ...
    @overload
    def resolve_key(self, did_url: str, purpose: Purpose) -> AgreementKey: ...
    def resolve_key(self, did_url: str, purpose: Purpose) -> AgreementKey:
        """The key ``did_url`` names, if its DID document authorises it for ``purpose``.

        Raises ``InvalidInput`` (``invalidDid``), ``DocumentError`` (no usable document: ``notFound``
        …), ``UntrustedKeyError`` (``unknown_key``, ``not_authorised_for_purpose``, ``deactivated``
        …) or another ``VerificationError``, and ``ResolutionError`` only when it could not fetch.
        """
        did = self._did_of(did_url)
        return self._key(self.resolve(did), did_url, purpose)

    @overload
    async def aresolve_key(self, did_url: str, purpose: Literal["keyAgreement"]) -> AgreementKey: ...
    @overload
    async def aresolve_key(self, did_url: str, purpose: SigningPurpose) -> PublicKey: ...
    @overload
    async def aresolve_key(self, did_url: str, purpose: Purpose) -> AgreementKey: ...
    async def aresolve_key(self, did_url: str, purpose: Purpose) -> AgreementKey:
        """Async :meth:`resolve_key`."""
        did = self._did_of(did_url)
        return self._key(await self.aresolve(did), did_url, purpose)

    # -- internals -------------------------------------------------------------------------------------
    @staticmethod
    def _did_of(did_url: str) -> str:
        try:
            return parse_did_url(did_url).did_str
        except InvalidInput as exc:
            raise InvalidInput(
                f"invalid DID URL: {exc.message}", code="invalidDid", reason=exc.code
            ) from None

    @staticmethod
    def _key(resolved: ResolutionResult, did_url: str, purpose: Purpose) -> AgreementKey:
        if resolved.deactivated:
            raise UntrustedKeyError(
                "the DID is deactivated", code="deactivated", did=resolved.document.id[:200]
            )
        return resolved.document.key_for(did_url, purpose)

    @staticmethod
    def _check_accept(accept: str) -> None:
        if accept not in _ACCEPTED:
            raise DocumentError(
                "representation not supported", code="representationNotSupported", accept=accept[:64]
            )

    def _admitted(self, did: str, accept: str) -> tuple[DID, MethodDriver]:
        """The parsed DID and its driver, once the request has passed every check that costs no
        fetch: the DID's syntax, the representation asked for, a driver for its method, then
        :meth:`_admit`."""
        try:
            parsed = parse_did(did)
        except InvalidInput as exc:
            raise InvalidInput(f"invalid DID: {exc.message}", code="invalidDid", reason=exc.code) from None
        self._check_accept(accept)
        driver = self._drivers.get(parsed.method) or self._fallback
        if driver is None:
            raise DocumentError(
                f"DID method '{parsed.method}' is not supported: no driver is configured for it",
                code="methodNotSupported",
                method=parsed.method,
            )
        self._admit(parsed, driver)
        return parsed, driver

    def _admit(self, did: DID, driver: MethodDriver) -> None:
        """Negative cache, then the per-DID and per-host fetch limits (network drivers only)."""
        if not driver.uses_network:
            return
        text = str(did)
        now = self._clock()
        remembered = self._negative.get(text)
        if remembered is not None:
            if remembered[1] > now:
                exc = remembered[0]
                raise type(exc)(exc.message, code=exc.code, **{**exc.fields, "cached": True})
            self._negative.pop(text, None)
        # Lower-cased: DNS names are case-insensitive, so EXAMPLE.com must share example.com's budget.
        host = f"{did.method}:{did.method_specific_id.split(':', 1)[0].lower()}"
        if not self._per_did.allow(text, now) or not self._per_host.allow(host, now):
            _log.warning("DID resolution rate-limited for %s", log_value(text, limit=128))
            raise ResolutionError("DID resolution rate-limited", code="internalError", reason="rate_limited")

    def _failed(self, did: str, driver: MethodDriver, exc: Exception) -> MudrikaError:
        """What a driver's exception becomes (:meth:`_classify`), remembered for ``negative_ttl``
        seconds when the driver uses the network (a malformed DID is not remembered: refusing it
        again costs less than the lookup)."""
        error = self._classify(did, exc)
        if driver.uses_network and self._negative_ttl and type(error) is not InvalidInput:
            self._negative[did] = (error, self._clock() + self._negative_ttl)
            self._negative.move_to_end(did)
            while len(self._negative) > _MAX_TRACKED:
                self._negative.popitem(last=False)
        return error

    @staticmethod
    def _classify(did: str, exc: Exception) -> MudrikaError:
        """A driver's syntax complaint about the DID is the resolver's ``invalidDid``; any other
        mudrika error passes as it is; anything else (a bug, a library's own exception) is logged
        by type only and answered ``internalError``, so no driver's internals reach the caller."""
        if isinstance(exc, MudrikaError):
            if type(exc) is InvalidInput and exc.code != "invalidDid":
                return InvalidInput(f"invalid DID: {exc.message}", code="invalidDid", reason=exc.code)
            return exc
        _log.warning(
            "DID resolution of %s failed unexpectedly: %s", log_value(did, limit=128), type(exc).__name__
        )
        return ResolutionError("DID resolution failed", code="internalError", error=type(exc).__name__)

    def _store(self, did: str, resolved: ResolutionResult) -> ResolutionResult:
        check_document_id(resolved.document, did, message="resolved document id does not match the DID")
        if self._cache_size and self._ttl:
            cache = self._cache
            cache[did] = (resolved, self._clock() + self._ttl)
            cache.move_to_end(did)
            while len(cache) > self._cache_size:
                cache.popitem(last=False)
        return resolved


def snapshot_of(results: Iterable[ResolutionResult]) -> dict[str, Any]:
    """A snapshot (for :meth:`DIDResolver.offline`) of already-resolved results, metadata included."""
    return {
        item.document.id: {
            "didDocument": item.document.to_json(),
            "didDocumentMetadata": dict(item.document_metadata),
        }
        for item in results
    }
