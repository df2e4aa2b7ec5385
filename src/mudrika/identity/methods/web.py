"""did:web (W3C CCG did:web Method Specification): a DID document served over HTTPS from a domain.

Why did:web: it rotates (the domain owner replaces ``did.json``) and it reuses the web PKI an
organisation already has.  The price is that whoever controls the domain and its TLS certificate
controls the identity, so the fetch is where the care goes:

* HTTPS only — the URL is always built as ``https://`` and a redirect to ``http://`` is refused;
* no redirect to another host (or port, or scheme); at most ``max_redirects`` (default 3) same-host
  redirects are followed, by us, hop by hop;
* the body is capped (default 100 KiB) while it streams — ``Content-Length`` is not trusted — and
  ``Accept-Encoding: identity`` is sent and any compressed answer refused, so the cap is on real bytes;
* a 5 s timeout per network operation plus an overall deadline for the whole fetch;
* the body is parsed strictly (duplicate members refused), validated as a DID Core document, and its
  ``id`` must equal the DID being resolved (spec "Read", step 8);
* proxies and CA bundles from the environment are ignored (``trust_env=False``); pass an
  ``ssl.SSLContext`` to trust a private CA;
* every connection goes through the :class:`~mudrika.net.egress.EgressPolicy` (strict by default):
  the host is resolved once, every address is checked (no loopback, private, link-local, metadata
  ... address), and the connection goes to the checked address.  A host that is an IPv4 address in
  any spelling the C library accepts (``127.0.0.1``, ``127.1``, ``0x7f000001``) is not a domain name
  and is refused as ``invalidDid`` before anything else.  ``EgressPolicy(allow_private_networks=True)``
  is the explicit, logged opt-in for development servers on this machine.

DID → URL (spec "Read", steps 1-5)::

    did:web:example.com                  → https://example.com/.well-known/did.json
    did:web:example.com:user:alice       → https://example.com/user/alice/did.json
    did:web:localhost%3A8443             → https://localhost:8443/.well-known/did.json
"""

from __future__ import annotations

import json
import re
import ssl
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Final

import httpx

from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.keystore import DIR_MODE, write_file_atomic
from mudrika.errors import DocumentError, InvalidInput, ResolutionError
from mudrika.identity.did import DID, parse_did, path_segment_refusal
from mudrika.identity.document import DIDDocument
from mudrika.identity.resolution import ResolutionResult, check_document_id, parse_document, result
from mudrika.net.egress import EgressPolicy, ipv4_as_os_reads

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_REDIRECTS",
    "DEFAULT_TIMEOUT",
    "WebDriver",
    "create",
    "document_path",
    "url_for",
    "write_document",
]

DEFAULT_MAX_BYTES: Final = 100 * 1024
DEFAULT_TIMEOUT: Final = 5.0
DEFAULT_MAX_REDIRECTS: Final = 3

_LABEL: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_PLAIN_SEGMENT: Final = re.compile(r"[A-Za-z0-9._-]+")
_PORT: Final = re.compile(r"%3[Aa]([0-9]{1,5})")
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_GONE: Final = frozenset({404, 410})
_HEADERS: Final = {"Accept": "application/did+json, application/json", "Accept-Encoding": "identity"}


def _check_host(host: str) -> str:
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise InvalidInput("did:web host must be a DNS name", code="invalidDid", host=host[:64])
    if labels[-1].isdigit() or ipv4_as_os_reads(host) is not None:
        raise InvalidInput(
            "did:web host must be a domain name, not an IP address", code="invalidDid", host=host[:64]
        )
    return host


def _check_segment(segment: str) -> str:
    # The one segment rule (identity.did.path_segment_refusal) that did_roles matching also obeys.
    reason = path_segment_refusal(segment)
    if reason is not None:
        raise InvalidInput(
            "did:web path segment not allowed", code="invalidDid", reason=reason, segment=segment[:64]
        )
    return segment


def _split(did: DID) -> tuple[str, int | None, list[str]]:
    if did.method != "web":
        raise InvalidInput("not a did:web", code="invalidDid", did=str(did)[:128])
    first, *segments = did.method_specific_id.split(":")
    host, _, port_text = first.partition("%")
    port: int | None = None
    if port_text:
        match = _PORT.fullmatch("%" + port_text)
        if match is None or not 0 < int(match.group(1)) < 65536:
            raise InvalidInput(
                "did:web port must be '%3A' followed by 1-65535", code="invalidDid", did=str(did)[:128]
            )
        port = int(match.group(1))
    return _check_host(host), port, [_check_segment(segment) for segment in segments]


def create(host: str, path: str | Sequence[str] | None = None, port: int | None = None) -> str:
    """Build a did:web: ``create("example.com", "user/alice")`` → ``did:web:example.com:user:alice``.

    The host is lower-cased (DNS is case-insensitive, DIDs are not: one spelling per identity), the
    port is percent-encoded as the spec requires (``%3A``), path segments use ``A-Z a-z 0-9 . - _``.
    """
    text = _check_host(host.lower())
    if port is not None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise InvalidInput("port must be 1-65535", code="invalidDid", port=str(port)[:8])
        text += f"%3A{port}"
    segments = [s for s in path.split("/") if s] if isinstance(path, str) else list(path or ())
    for segment in segments:
        if path_segment_refusal(segment) is not None or not _PLAIN_SEGMENT.fullmatch(segment):
            raise InvalidInput(
                "did:web path segments may use only A-Z a-z 0-9 . - _",
                code="invalidDid",
                segment=segment[:64],
            )
    did = ":".join(["did:web", text, *segments])
    parse_did(did)
    return did


def url_for(did: DID | str) -> str:
    """The HTTPS URL of the DID document (spec "Read", steps 1-5)."""
    parsed = did if isinstance(did, DID) else parse_did(did)
    host, port, segments = _split(parsed)
    authority = host if port is None else f"{host}:{port}"  # 1-2: ':' → '/', decode the port colon
    path = "/".join(segments) if segments else ".well-known"  # 4: no path → /.well-known
    return f"https://{authority}/{path}/did.json"  # 3 and 5


def document_path(did: DID | str) -> PurePosixPath:
    """Where ``did.json`` goes relative to the web root: ``.well-known/did.json`` or ``<path>/did.json``."""
    parsed = did if isinstance(did, DID) else parse_did(did)
    _, _, segments = _split(parsed)
    return PurePosixPath(*(segments or [".well-known"]), "did.json")


def write_document(did: str, document: DIDDocument, out_dir: Path, *, force: bool = False) -> Path:
    """Write ``document`` as ``did.json`` at its place under ``out_dir`` (directories 0700, file 0600).

    The modes are private by default, like every artefact mudrika writes; publish the tree with the
    web server's own permissions (e.g. ``chmod -R a+rX`` on the copy you deploy).  Refuses to replace
    an existing file unless ``force``.
    """
    if document.id != did:
        raise InvalidInput(
            "document id does not equal the DID",
            code="document_id_mismatch",
            expected=did[:128],
            got=document.id[:128],
        )
    relative = document_path(did)
    directory = Path(out_dir)
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    for part in relative.parts[:-1]:
        directory = directory / part
        directory.mkdir(mode=DIR_MODE, exist_ok=True)
    data = (json.dumps(document.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return write_file_atomic(directory / relative.name, data, force=force, private_dir=False)


class _Body:
    """Accumulates a response body under a byte cap and an overall deadline."""

    def __init__(self, limit: int, deadline: float) -> None:
        self._limit = limit
        self._deadline = deadline
        self._chunks: list[bytes] = []
        self._size = 0

    def add(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size > self._limit:
            raise DocumentError(
                "DID document larger than allowed",
                code="invalidDidDocument",
                reason="too_large",
                limit=self._limit,
            )
        if time.monotonic() > self._deadline:
            raise ResolutionError("DID document fetch took too long", code="internalError", reason="timeout")
        self._chunks.append(chunk)

    def value(self) -> bytes:
        return b"".join(self._chunks)


@contextmanager
def _transport_errors() -> Iterator[None]:
    """Turn httpx failures into the DID Resolution ``internalError`` (no URL or body in the message).

    A failure to connect, resolve the name, complete TLS or finish in time is "could not fetch":
    :class:`ResolutionError`, an outage.  A destination the egress policy refuses is raised by the
    transport as :class:`~mudrika.errors.EgressDenied` (a deny) and passes through untouched.
    """
    try:
        yield
    except httpx.TimeoutException:
        raise ResolutionError(
            "DID document fetch timed out", code="internalError", reason="timeout"
        ) from None
    except httpx.HTTPError as exc:
        raise ResolutionError(
            "DID document fetch failed", code="internalError", reason="transport", error=type(exc).__name__
        ) from None


def _status_error(status: int) -> DocumentError | ResolutionError:
    """What a final answer other than 200 means: the host could not serve us *now*, or it answered.

    Why the split: the DID names the host, so whoever presents the DID decides what that host
    answers.  404/410 is DID Resolution ``notFound``, and any other answer the host chose to give
    (403, 400, 204 ...) also says "there is no document for you here": a :class:`DocumentError`, a
    deny that no retry can change.  Only an answer that itself says "later" (408, 429, 5xx) is an
    outage: :class:`ResolutionError` ``internalError``, 503, fail closed.
    """
    if status in _GONE:
        return DocumentError("DID document not found", code="notFound", status=status)
    if status in (408, 429) or status >= 500:
        return ResolutionError(
            "DID document fetch failed", code="internalError", reason="http_status", status=status
        )
    return DocumentError("DID document not served", code="notFound", reason="http_status", status=status)


class WebDriver:
    """Resolver driver for did:web over HTTPS (sync with ``httpx.Client``, async with ``AsyncClient``).

    ``egress`` decides which addresses may be contacted (default: the strict
    :class:`~mudrika.net.egress.EgressPolicy`, with this driver's timeout as its deadline).
    """

    methods: ClassVar[frozenset[str]] = frozenset({"web"})
    uses_network: Final = True

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        egress: EgressPolicy | None = None,
    ) -> None:
        self._verify: ssl.SSLContext | bool = verify if verify is not None else True
        self._egress = egress if egress is not None else EgressPolicy(timeout=timeout, deadline=timeout)
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._max_redirects = max_redirects

    # -- one hop ------------------------------------------------------------------------------------
    def _next(self, url: httpx.URL, response: httpx.Response) -> httpx.URL | None:
        """None when ``response`` is the final answer; the next URL for an allowed redirect.

        A redirect we will not follow, a compressed or oversized body are the host's deliberate
        answers, so they are :class:`DocumentError` (``notFound`` / ``invalidDidDocument``), never
        an outage; :func:`_status_error` decides the other statuses.
        """
        status = response.status_code
        if status in _REDIRECTS:
            location = response.headers.get("location")
            if not location:
                raise DocumentError("redirect without a Location", code="notFound", reason="bad_redirect")
            target = url.join(location)
            if target.scheme != "https" or target.host != url.host or target.port != url.port:
                raise DocumentError(
                    "redirect to another origin refused",
                    code="notFound",
                    reason="redirect_refused",
                    target=str(target)[:200],
                )
            return target
        if status != 200:
            raise _status_error(status)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise DocumentError(
                "compressed DID document refused", code="invalidDidDocument", reason="content_encoding"
            )
        length = response.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self._max_bytes:
            raise DocumentError(
                "DID document larger than allowed",
                code="invalidDidDocument",
                reason="too_large",
                limit=self._max_bytes,
            )
        return None

    def _finish(self, did: DID, body: bytes) -> ResolutionResult:
        # Parse strictly, validate as DID Core, then spec "Read" step 8: the id must be this DID.
        try:
            data = loads_strict(body, max_bytes=self._max_bytes)
        except InvalidInput as exc:
            raise DocumentError(
                "DID document is not valid JSON", code="invalidDidDocument", reason=exc.code
            ) from None
        doc = parse_document(data, message="DID document is not a valid DID document")
        check_document_id(doc, str(did), message="DID document id does not match the DID")
        return result(doc, driver="web")

    # -- sync -----------------------------------------------------------------------------------------
    def resolve(self, did: DID) -> ResolutionResult:
        url = httpx.URL(url_for(did))
        deadline = time.monotonic() + self._timeout
        with (
            _transport_errors(),
            httpx.Client(
                transport=self._egress.transport(verify=self._verify), **self._client_options()
            ) as client,
        ):
            for _ in range(self._max_redirects + 1):
                with client.stream("GET", url) as response:
                    target = self._next(url, response)
                    if target is None:
                        return self._finish(did, self._read(response.iter_raw(), deadline))
                url = target
        raise DocumentError("too many redirects", code="notFound", reason="too_many_redirects")

    def _client_options(self) -> dict[str, Any]:
        # No redirects followed by httpx (we check each hop ourselves), no proxy or CA from the env.
        return {
            "timeout": self._timeout,
            "follow_redirects": False,
            "trust_env": False,
            "headers": _HEADERS,
        }

    def _read(self, chunks: Iterator[bytes], deadline: float) -> bytes:
        body = _Body(self._max_bytes, deadline)
        for chunk in chunks:
            body.add(chunk)
        return body.value()

    # -- async ----------------------------------------------------------------------------------------
    async def aresolve(self, did: DID) -> ResolutionResult:
        url = httpx.URL(url_for(did))
        deadline = time.monotonic() + self._timeout
        with _transport_errors():
            transport = self._egress.async_transport(verify=self._verify)
            async with httpx.AsyncClient(transport=transport, **self._client_options()) as client:
                for _ in range(self._max_redirects + 1):
                    async with client.stream("GET", url) as response:
                        target = self._next(url, response)
                        if target is None:
                            return self._finish(did, await self._aread(response.aiter_raw(), deadline))
                    url = target
        raise DocumentError("too many redirects", code="notFound", reason="too_many_redirects")

    async def _aread(self, chunks: AsyncIterator[bytes], deadline: float) -> bytes:
        body = _Body(self._max_bytes, deadline)
        async for chunk in chunks:
            body.add(chunk)
        return body.value()
