"""did:webvh v1.0 (DID Web + Verifiable History): a did:web whose every version is in a signed,
hash-chained log, so a document can be judged *as of a day*.

Why mudrika wants it: a dispute analyst asks whether the key that signed a mandate in March was the
merchant's key *in March*.  did:web can only answer "what is served today"; a did:webvh log answers
for every version, and each version is bound to the one before it and signed by a key the previous
version authorised.  :func:`resolve_log` verifies the whole log (see ``_log`` for the ten rules) and
returns the version in force at a ``versionTime``, or the one a ``versionId`` / ``versionNumber``
names.

DID → log URL (§3.6.2 step 2, the did:web transformation after dropping the SCID)::

    did:webvh:{SCID}:example.com            → https://example.com/.well-known/did.jsonl
    did:webvh:{SCID}:example.com:dids:abc   → https://example.com/dids/abc/did.jsonl
    did:webvh:{SCID}:example.com%3A8443     → https://example.com:8443/.well-known/did.jsonl

The witness file ``did-witness.json`` sits beside the log.  Resolution adds the implicit ``#files``
and ``#whois`` services (§3.7.11) when the document does not define them, as both reference
implementations do.

Drivers: :class:`WebvhDriver` fetches through the resolver's egress policy (HTTPS only, no redirects,
size-capped, ``Accept-Encoding: identity``); :class:`WebvhLogDriver` answers offline from log
snapshots.  Neither is installed by default: ``DIDResolver().register(WebvhDriver(...))`` (or the
offline resolver's ``register(WebvhLogDriver(...))``) is the configuration that turns it on.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

import httpx

from mudrika.errors import DocumentError, InvalidInput, ResolutionError
from mudrika.identity.did import DID, parse_did
from mudrika.identity.methods import web
from mudrika.identity.methods.webvh._history import KeyHistory, assertion_key_history
from mudrika.identity.methods.webvh._log import (
    DEFAULT_MAX_LOG_BYTES,
    METHOD_VERSION,
    SCID_PLACEHOLDER,
    LogEntry,
    VerifiedLog,
    entry_hash,
    key_hash,
    parse_log,
    verify_log,
    witness_json,
)
from mudrika.identity.resolution import (
    LocalDriver,
    ResolutionResult,
    check_document_id,
    parse_document,
    result,
)
from mudrika.net.egress import EgressPolicy

__all__ = [
    "METHOD_VERSION",
    "SCID_PLACEHOLDER",
    "KeyHistory",
    "LogEntry",
    "VerifiedLog",
    "WebvhDriver",
    "WebvhLogDriver",
    "WebvhResolution",
    "assertion_key_history",
    "entry_hash",
    "key_hash",
    "log_url",
    "parse_log",
    "resolve_log",
    "select_version",
    "verify_log",
    "witness_url",
]

DEFAULT_TIMEOUT: Final = 5.0
_HEADERS: Final = {"Accept": "application/jsonl, application/json, text/plain", "Accept-Encoding": "identity"}


def _split(did: DID | str) -> tuple[str, str]:
    """``(scid, the did:web it maps to)`` for a did:webvh, or InvalidInput ``invalidDid``."""
    parsed = did if isinstance(did, DID) else parse_did(did)
    if parsed.method != "webvh":
        raise InvalidInput("not a did:webvh", code="invalidDid", did=str(parsed)[:128])
    scid, sep, rest = parsed.method_specific_id.partition(":")
    if not sep or not scid or not rest:
        raise InvalidInput("did:webvh is did:webvh:<scid>:<domain>[:path]", code="invalidDid")
    return scid, "did:web:" + rest


def _base(did: DID | str) -> str:
    return web.url_for(_split(did)[1]).removesuffix("did.json")


def log_url(did: DID | str) -> str:
    """The HTTPS URL of ``did.jsonl`` (§3.6.2 step 2)."""
    return _base(did) + "did.jsonl"


def witness_url(did: DID | str) -> str:
    """The HTTPS URL of ``did-witness.json`` (§3.7.9), beside the log."""
    return _base(did) + "did-witness.json"


def _files_base(did: str) -> str:
    # §3.7.11: #files is the DID's base URL (no /.well-known for a bare domain), without the final
    # slash, as the specification's example and didwebvh-ts write it.
    return _base(did).removesuffix(".well-known/").removesuffix("/")


@dataclass(frozen=True, slots=True)
class WebvhResolution:
    """The verified log, the selected entry, and the document with its implicit services."""

    log: VerifiedLog
    entry: LogEntry
    document: dict[str, Any]
    metadata: dict[str, Any]


def _time(value: datetime | str) -> datetime:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidInput("versionTime needs a time zone", code="bad_version_time")
        return value.astimezone(UTC)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput("versionTime must be ISO 8601", code="bad_version_time") from None
    if parsed.tzinfo is None:
        raise InvalidInput("versionTime needs a time zone", code="bad_version_time")
    return parsed.astimezone(UTC)


def select_version(
    log: VerifiedLog,
    *,
    version_id: str | None = None,
    version_number: int | None = None,
    version_time: datetime | str | None = None,
) -> LogEntry:
    """The entry a resolution asks for (DID Resolution ``versionId``, ``versionTime``; did:webvh's
    ``versionNumber``): by id or number exactly, by time the last entry whose ``versionTime`` is not
    after it — the version in force at that moment.  Several selectors must agree.  ResolutionError
    ``notFound`` when there is no such version (a time before the DID existed)."""
    chosen = log.entries[-1]
    if version_number is not None:
        if isinstance(version_number, bool) or not 1 <= version_number <= len(log.entries):
            raise DocumentError("no such version", code="notFound", versionNumber=version_number)
        chosen = log.entries[version_number - 1]
    if version_id is not None:
        match = [entry for entry in log.entries if entry.version_id == version_id]
        if not match or (version_number is not None and match[0] is not chosen):
            raise DocumentError("no such version", code="notFound", versionId=version_id[:100])
        chosen = match[0]
    if version_time is not None:
        moment = _time(version_time)
        in_force = [entry for entry in log.entries if entry.version_time <= moment]
        if not in_force:
            raise DocumentError("the DID did not exist at that time", code="notFound")
        if version_id is None and version_number is None:
            chosen = in_force[-1]
        elif chosen.version_time > moment:
            raise DocumentError("that version is later than versionTime", code="notFound")
    return chosen


def _with_implicit_services(state: Mapping[str, Any], did: str) -> dict[str, Any]:
    document = json_copy(state)
    services = document.get("service", [])
    if isinstance(services, Mapping):
        services = [services]
    if not isinstance(services, list):
        raise InvalidInput("service must be a list", code="webvh_malformed_log")
    services = list(services)
    ids = {s.get("id") for s in services if isinstance(s, Mapping)}
    base = _files_base(did)
    if f"{did}#files" not in ids and "#files" not in ids:
        services.append({"id": "#files", "type": "relativeRef", "serviceEndpoint": base})
    if f"{did}#whois" not in ids and "#whois" not in ids:
        services.append(
            {
                "@context": "https://identity.foundation/linked-vp/contexts/v1",
                "id": "#whois",
                "type": "LinkedVerifiablePresentation",
                "serviceEndpoint": base + "/whois.vp",
            }
        )
    document["service"] = services
    return document


def json_copy(value: Mapping[str, Any]) -> dict[str, Any]:
    """A plain, mutable deep copy of a parsed JSON object."""

    def thaw(item: Any) -> Any:
        if isinstance(item, Mapping):
            return {key: thaw(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return [thaw(inner) for inner in item]
        return item

    copied = thaw(value)
    assert isinstance(copied, dict)
    return copied


def resolve_log(
    did: str,
    log: str | bytes,
    *,
    witness: str | bytes | None = None,
    version_id: str | None = None,
    version_number: int | None = None,
    version_time: datetime | str | None = None,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
) -> WebvhResolution:
    """Verify a did:webvh log offline (every entry, and the witness approvals when a rule applies)
    and return the version asked for.  ``did`` must be the DID the selected version's document names
    (BindingError ``document_id_mismatch`` otherwise) and must carry the log's SCID."""
    scid, _ = _split(did)
    verified = verify_log(
        parse_log(log, max_bytes=max_bytes),
        witness_proofs=witness_json(witness, max_bytes=max_bytes) if witness is not None else None,
    )
    if verified.scid != scid:
        raise DocumentError("the log is for another DID", code="notFound", reason="scid")
    entry = select_version(
        verified, version_id=version_id, version_number=version_number, version_time=version_time
    )
    document = _with_implicit_services(entry.state, str(entry.state.get("id")))
    if document.get("id") != did:
        check_document_id(
            parse_document(document, message="not a DID document"), did, message="log is for another DID"
        )
    witness_rule = entry.parameters.get("witness")
    metadata: dict[str, Any] = {
        "versionId": entry.version_id,
        "versionNumber": entry.version_number,
        "versionTime": entry.version_time_text,
        "created": verified.entries[0].version_time_text,
        "updated": verified.entries[-1].version_time_text,
        "deactivated": entry.parameters.get("deactivated") is True,
        "portable": entry.parameters.get("portable") is True,
        "scid": verified.scid,
        "witness": witness_rule if witness_rule else None,
        "watchers": entry.parameters.get("watchers"),
    }
    return WebvhResolution(log=verified, entry=entry, document=document, metadata=metadata)


def _result(resolution: WebvhResolution, did: str, driver: str) -> ResolutionResult:
    document = parse_document(resolution.document, message="did:webvh state is not a valid DID document")
    check_document_id(document, did, message="did:webvh document id does not match the DID")
    return result(document, driver=driver, document_metadata=resolution.metadata)


def _as_resolution_error(exc: InvalidInput) -> DocumentError:
    return DocumentError("did:webvh log could not be read", code="invalidDidDocument", reason=exc.code)


class WebvhLogDriver(LocalDriver):
    """Offline did:webvh: ``logs`` maps a DID to its ``did.jsonl`` text, or to ``{"log": text,
    "witness": did-witness.json text}``.  Every log is verified in full on each resolution."""

    methods: ClassVar[frozenset[str]] = frozenset({"webvh"})

    def __init__(self, logs: Mapping[str, Any]) -> None:
        self._logs = dict(logs)

    def _source(self, did: str) -> tuple[str | bytes, str | bytes | None]:
        entry = self._logs.get(did)
        if entry is None:
            raise DocumentError("DID not in the offline log snapshot", code="notFound")
        if isinstance(entry, str | bytes):
            return entry, None
        if isinstance(entry, Mapping) and isinstance(entry.get("log"), str | bytes):
            return entry["log"], entry.get("witness")
        raise DocumentError("snapshot entry is not a did:webvh log", code="invalidDidDocument")

    def resolve_at(
        self,
        did: str,
        *,
        version_id: str | None = None,
        version_number: int | None = None,
        version_time: datetime | str | None = None,
    ) -> ResolutionResult:
        """The document as of a version or a time (see :func:`select_version`)."""
        log, witness = self._source(did)
        try:
            resolution = resolve_log(
                did,
                log,
                witness=witness,
                version_id=version_id,
                version_number=version_number,
                version_time=version_time,
            )
        except InvalidInput as exc:
            if exc.code == "invalidDid":
                raise
            raise _as_resolution_error(exc) from None
        return _result(resolution, did, "webvh-log")

    def resolve(self, did: DID) -> ResolutionResult:
        return self.resolve_at(str(did))


class WebvhDriver:
    """did:webvh over HTTPS through the :class:`~mudrika.net.egress.EgressPolicy` (strict by default).

    Fetches ``did.jsonl`` and, when a witness rule applies, ``did-witness.json``; verifies the whole
    log each time (no cache here: the resolver caches results).  A redirect is refused — the log's
    location is fixed by the DID — and so is a compressed or oversized answer.
    """

    methods: ClassVar[frozenset[str]] = frozenset({"webvh"})
    uses_network: Final = True

    def __init__(
        self,
        *,
        egress: EgressPolicy | None = None,
        verify: ssl.SSLContext | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_LOG_BYTES,
    ) -> None:
        self._egress = egress if egress is not None else EgressPolicy(timeout=timeout, deadline=timeout)
        self._verify: ssl.SSLContext | bool = verify if verify is not None else True
        self._timeout = timeout
        self._max_bytes = max_bytes

    def _get(self, client: httpx.Client, url: str, *, optional: bool) -> bytes | None:
        deadline = time.monotonic() + self._timeout
        with client.stream("GET", url) as response:
            if response.status_code in (404, 410):
                if optional:
                    return None
                raise DocumentError("did:webvh log not found", code="notFound", status=response.status_code)
            if response.status_code != 200:
                raise ResolutionError(
                    "did:webvh fetch failed",
                    code="internalError",
                    reason="http_status",
                    status=response.status_code,
                )
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise ResolutionError(
                    "compressed answer refused", code="internalError", reason="content_encoding"
                )
            body = bytearray()
            for chunk in response.iter_raw():
                body += chunk
                if len(body) > self._max_bytes:
                    raise DocumentError(
                        "did:webvh log larger than allowed",
                        code="invalidDidDocument",
                        reason="too_large",
                        limit=self._max_bytes,
                    )
                if time.monotonic() > deadline:
                    raise ResolutionError(
                        "did:webvh fetch took too long", code="internalError", reason="timeout"
                    )
            return bytes(body)

    def fetch(self, did: str) -> tuple[bytes, bytes | None]:
        """``(did.jsonl, did-witness.json or None)`` as served; nothing verified yet."""
        options: dict[str, Any] = {
            "timeout": self._timeout,
            "follow_redirects": False,
            "trust_env": False,
            "headers": _HEADERS,
        }
        try:
            with httpx.Client(transport=self._egress.transport(verify=self._verify), **options) as client:
                log = self._get(client, log_url(did), optional=False)
                assert log is not None
                entries = parse_log(log, max_bytes=self._max_bytes)
                needs_witness = any(
                    isinstance(e.get("parameters"), Mapping) and e["parameters"].get("witness")
                    for e in entries
                )
                witness = self._get(client, witness_url(did), optional=True) if needs_witness else None
        except httpx.TimeoutException:
            raise ResolutionError(
                "did:webvh fetch timed out", code="internalError", reason="timeout"
            ) from None
        except httpx.HTTPError as exc:
            raise ResolutionError(
                "did:webvh fetch failed", code="internalError", reason="transport", error=type(exc).__name__
            ) from None
        except InvalidInput as exc:
            raise _as_resolution_error(exc) from None
        return log, witness

    def resolve_at(
        self,
        did: str,
        *,
        version_id: str | None = None,
        version_number: int | None = None,
        version_time: datetime | str | None = None,
    ) -> ResolutionResult:
        """Fetch, verify, and answer the version asked for (see :func:`select_version`)."""
        _split(did)
        log, witness = self.fetch(did)
        try:
            resolution = resolve_log(
                did,
                log,
                witness=witness,
                version_id=version_id,
                version_number=version_number,
                version_time=version_time,
                max_bytes=self._max_bytes,
            )
        except InvalidInput as exc:
            raise _as_resolution_error(exc) from None
        return _result(resolution, did, "webvh")

    def resolve(self, did: DID) -> ResolutionResult:
        return self.resolve_at(str(did))

    async def aresolve(self, did: DID) -> ResolutionResult:
        """The sync resolution in a worker thread (the log is verified in full: CPU work anyway)."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.resolve, did)
