"""One egress policy for every outbound fetch: which addresses mudrika may connect to, and how.

Why this exists: the resolvers and token verifiers run on attacker input.  A ``kid`` such as
``did:web:0x7f000001%3A6379#k`` turns "fetch the signer's DID document" into "connect to this
server's own Redis"; a JWKS or webhook URL can do the same.  Checking the *name* is not enough
(``localhost``, ``127.1``, ``0x7f.0x1`` and a DNS name that resolves to ``10.0.0.5`` all reach a
private address), and checking the address and then letting the HTTP library resolve the name again
is not enough either (DNS rebinding: the second answer differs).  So every connection goes:

1. URL: the scheme must be allowed (``https`` by default); an IPv4 literal must be spelled
   canonically (``127.1``, ``0x7f000001``, ``0177.0.0.1`` are refused before anything else — the OS
   resolver would otherwise read them as addresses); an IP literal is checked at once.
2. Resolve the name once (``getaddrinfo``, the parser the OS itself uses, so every spelling it
   accepts is normalised to the address it would connect to) and check **every** address it
   returns.  One refused answer refuses the name.

   **The rule: egress admits only globally routable destinations; everything else needs an explicit
   allow** (``allow_private_networks``, which still never admits metadata, multicast, broadcast or
   unspecified addresses).  "Globally routable" is an allow-rule, not a list of bad ranges: an
   address is admitted only when it lies in the global unicast space (all of IPv4, ``2000::/3`` for
   IPv6) and in none of the rows of :data:`SPECIAL_RANGES` — the IANA IPv4 and IPv6 Special-Purpose
   Address Registries (loopback, RFC 1918, CGNAT, link-local, documentation including ``3fff::/20``,
   benchmarking, SRv6 SIDs ``5f00::/16``, unique-local, site-local, discard, protocol assignments,
   reserved), multicast, broadcast and cloud metadata (``169.254.169.254``, ``fd00:ec2::254``).
   Every IPv6 form that embeds an IPv4 address is decoded and judged by what it carries: IPv4-mapped
   ``::ffff:0:0/96``, IPv4-compatible ``::/96``, SIIT IPv4-translated ``::ffff:0:0:0/96``, local-use
   NAT64 ``64:ff9b:1::/48`` and Teredo ``2001::/32`` are refused whatever they carry; NAT64
   ``64:ff9b::/96`` and 6to4 ``2002::/16`` are admitted only when the IPv4 inside is.
3. Connect to the checked address itself (the HTTP library never resolves again); TLS still sends
   the *name* as SNI and verifies the certificate against it.
4. Every request — each redirect hop included, since each hop is a request through the transport —
   goes through steps 1-3; the response body is counted while it streams (``max_response_bytes``)
   and the whole exchange has a deadline (``deadline``) beside httpx's per-operation timeout.

Development against servers on this machine is an explicit, logged opt-in:
``EgressPolicy(allow_private_networks=True)``.  Even then metadata, multicast, broadcast and
unspecified addresses stay refused, and non-canonical IPv4 spellings are refused.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.to_thread
import httpcore
import httpx

from mudrika.errors import EgressDenied, InvalidInput

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_TIMEOUT",
    "GLOBAL_UNICAST_V6",
    "SPECIAL_RANGES",
    "EgressPolicy",
    "IPAddress",
    "Resolve",
    "SpecialRange",
    "ipv4_as_os_reads",
    "refusal_reason",
    "system_resolve",
]

_log = logging.getLogger("mudrika.net.egress")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: ``(host, port) -> addresses`` as text; the default is :func:`system_resolve` (``getaddrinfo``).
Resolve = Callable[[str, int], Sequence[str]]

DEFAULT_TIMEOUT: Final = 5.0
DEFAULT_DEADLINE: Final = 10.0
DEFAULT_MAX_RESPONSE_BYTES: Final = 1024 * 1024
_MAX_HOST_CHARS: Final = 253
_MAX_ADDRESSES: Final = 32


@dataclass(frozen=True)
class SpecialRange:
    """One row of the IANA special-purpose registries (or a range we add to them), as egress reads it.

    ``reason`` names the class in every refusal.  ``embeds`` decodes the IPv4 address an IPv6 form
    carries (mapped, compatible, SIIT, NAT64, 6to4, Teredo): such a refusal says what is inside
    (``nat64:loopback``).  ``inner_decides`` is True only for the translation forms that are how an
    IPv6-only network reaches a public IPv4 host (NAT64 well-known prefix, 6to4): they are admitted
    when what they embed is; every other embedding is refused whatever it carries.
    """

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    reason: str
    source: str
    embeds: Callable[[ipaddress.IPv6Address], ipaddress.IPv4Address] | None = None
    inner_decides: bool = False


def _last_32_bits(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(address.packed[-4:])


def _rfc6052_slash48(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    # RFC 6052 section 2.2, /48 prefix: IPv4 bits 0-15 in bits 48-63, the "u" octet (64-71) skipped,
    # bits 16-31 in bits 72-87.
    packed = address.packed
    return ipaddress.IPv4Address(packed[6:8] + packed[9:11])


def _sixtofour(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(address.packed[2:6])


def _teredo_client(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    # RFC 4380 section 4: the client's public IPv4 address, every bit inverted, in the last 32 bits.
    return ipaddress.IPv4Address(bytes(byte ^ 0xFF for byte in address.packed[-4:]))


def _rows(
    version: type[ipaddress.IPv4Network] | type[ipaddress.IPv6Network],
    rows: Iterable[tuple[Any, ...]],
) -> tuple[SpecialRange, ...]:
    return tuple(SpecialRange(version(row[0]), *row[1:]) for row in rows)


#: Every address range that is not a global unicast destination, most specific first: the first row
#: containing an address names why it is refused.  Sources: the IANA IPv4 and IPv6 Special-Purpose
#: Address Registries, the multicast ranges, and the cloud metadata addresses.
SPECIAL_RANGES: Final[tuple[SpecialRange, ...]] = _rows(
    ipaddress.IPv4Network,
    (
        ("169.254.169.254/32", "metadata", "cloud instance metadata"),
        ("255.255.255.255/32", "broadcast", "RFC 919 limited broadcast"),
        ("0.0.0.0/8", "unspecified", "RFC 791 this network"),
        ("10.0.0.0/8", "private", "RFC 1918"),
        ("100.64.0.0/10", "cgnat", "RFC 6598"),
        ("127.0.0.0/8", "loopback", "RFC 1122"),
        ("169.254.0.0/16", "link_local", "RFC 3927"),
        ("172.16.0.0/12", "private", "RFC 1918"),
        ("192.0.0.0/24", "protocol_assignment", "RFC 6890"),
        ("192.0.2.0/24", "documentation", "RFC 5737"),
        ("192.88.99.0/24", "reserved", "RFC 7526 deprecated 6to4 relay anycast"),
        ("192.168.0.0/16", "private", "RFC 1918"),
        ("198.18.0.0/15", "benchmarking", "RFC 2544"),
        ("198.51.100.0/24", "documentation", "RFC 5737"),
        ("203.0.113.0/24", "documentation", "RFC 5737"),
        ("224.0.0.0/4", "multicast", "RFC 5771"),
        ("240.0.0.0/4", "reserved", "RFC 1112"),
    ),
) + _rows(
    ipaddress.IPv6Network,
    (
        ("fd00:ec2::254/128", "metadata", "cloud instance metadata"),
        ("::/128", "unspecified", "RFC 4291"),
        ("::1/128", "loopback", "RFC 4291"),
        ("::ffff:0:0/96", "ipv4_mapped", "RFC 4291", _last_32_bits),
        ("::ffff:0:0:0/96", "ipv4_translated", "RFC 2765 / RFC 7915 SIIT", _last_32_bits),
        ("::/96", "ipv4_compatible", "RFC 4291 (deprecated)", _last_32_bits),
        ("64:ff9b::/96", "nat64", "RFC 6052 well-known prefix", _last_32_bits, True),
        ("64:ff9b:1::/48", "nat64_local", "RFC 8215 local-use translation", _rfc6052_slash48),
        ("100::/64", "discard", "RFC 6666"),
        ("2001::/32", "teredo", "RFC 4380", _teredo_client),
        ("2001::/23", "protocol_assignment", "RFC 2928"),
        ("2001:db8::/32", "documentation", "RFC 3849"),
        ("2002::/16", "6to4", "RFC 3056", _sixtofour, True),
        ("3fff::/20", "documentation", "RFC 9637"),
        ("5f00::/16", "srv6_sid", "RFC 9602"),
        ("fc00::/7", "unique_local", "RFC 4193"),
        ("fe80::/10", "link_local", "RFC 4291"),
        ("fec0::/10", "site_local", "RFC 3879"),
        ("ff00::/8", "multicast", "RFC 4291"),
    ),
)
#: The only IPv6 space IANA allocates for global unicast (RFC 4291 section 2.4); outside it nothing is
#: routable on the Internet, named in the table above or not.
GLOBAL_UNICAST_V6: Final = ipaddress.IPv6Network("2000::/3")
#: Refused even with ``allow_private_networks``: no development setup needs them, attackers do.
_ALWAYS_REFUSED: Final = frozenset({"metadata", "multicast", "broadcast", "unspecified"})
#: Characters an IPv4 literal in any spelling the C library accepts is made of (``inet_aton``).
_IPV4_ISH: Final = re.compile(r"[0-9A-Fa-fXx.]+")


def refusal_reason(address: IPAddress) -> str | None:
    """None when ``address`` is a globally routable destination; otherwise why it is not.

    This is an allow-rule, not a deny-list: an IPv4 address is admitted only when no special-purpose
    row contains it (the IPv4 space outside those rows is all allocated for global unicast); an IPv6
    address only when it lies in ``2000::/3`` and no row contains it (``not_global`` otherwise), so a
    range IANA reserves tomorrow outside ``2000::/3`` is refused before anyone adds a row.

    IPv6 forms that embed an IPv4 address are judged by what they embed: ``::ffff:127.0.0.1`` is
    ``ipv4_mapped:loopback``; NAT64 (``64:ff9b::/96``) and 6to4 with a public IPv4 inside are allowed
    (that is how an IPv6-only network reaches an IPv4-only host); the mapped, compatible, SIIT,
    local-use NAT64 and Teredo forms never are (``ipv4_mapped:public``).
    """
    plain: IPAddress = address
    if isinstance(address, ipaddress.IPv6Address):
        plain = ipaddress.IPv6Address(address.packed)  # drop any %scope for the range checks
    row = next((row for row in SPECIAL_RANGES if plain in row.network), None)
    if row is None:
        if isinstance(plain, ipaddress.IPv4Address) or plain in GLOBAL_UNICAST_V6:
            return None
        return "not_global"
    if row.embeds is None:
        return row.reason
    assert isinstance(plain, ipaddress.IPv6Address)  # only IPv6 rows embed
    inner = refusal_reason(row.embeds(plain))
    if inner is None and row.inner_decides:
        return None
    return f"{row.reason}:{inner or 'public'}"


def system_resolve(host: str, port: int) -> list[str]:
    """Every TCP address ``getaddrinfo`` gives for ``host`` (the same parser the OS connects with)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


def _host_text(host: str | bytes) -> str:
    text = host.decode("ascii", "replace") if isinstance(host, bytes) else host
    return text.strip("[]")


class EgressPolicy:
    """Where outbound connections may go, with the caps every fetch shares.

    ``allow_private_networks`` is for development against servers on this machine or a lab network
    (it logs a warning when constructed); ``schemes`` are the URL schemes allowed (``https`` only by
    default); ``timeout`` is httpx's per-operation timeout (connect, read, write, pool), ``deadline``
    the limit on one whole request (connect to last body byte), ``max_response_bytes`` caps each
    response body as it streams.  ``resolve`` replaces ``getaddrinfo`` (tests use it to play a DNS
    server that changes its answer).
    """

    def __init__(
        self,
        *,
        allow_private_networks: bool = False,
        schemes: Iterable[str] = ("https",),
        timeout: float = DEFAULT_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        resolve: Resolve = system_resolve,
    ) -> None:
        allowed = frozenset(scheme.lower() for scheme in schemes)
        if not allowed or not allowed <= {"http", "https"}:
            raise InvalidInput("schemes must be a non-empty subset of http/https", code="egress_config")
        for name, value in (("timeout", timeout), ("deadline", deadline)):
            if not (math.isfinite(value) and value > 0):
                raise InvalidInput(f"{name} must be a positive number of seconds", code="egress_config")
        if isinstance(max_response_bytes, bool) or max_response_bytes <= 0:
            raise InvalidInput("max_response_bytes must be positive", code="egress_config")
        self.allow_private_networks = bool(allow_private_networks)
        self.schemes = allowed
        self.timeout = float(timeout)
        self.deadline = float(deadline)
        self.max_response_bytes = int(max_response_bytes)
        self._resolve = resolve
        if self.allow_private_networks:
            _log.warning(
                "egress policy allows private networks (loopback, RFC 1918, link-local): development only"
            )

    def __repr__(self) -> str:
        return (
            f"EgressPolicy(allow_private_networks={self.allow_private_networks}, "
            f"schemes={sorted(self.schemes)}, deadline={self.deadline})"
        )

    # -- checks ------------------------------------------------------------------------------------
    def check_address(self, address: IPAddress, *, host: str = "") -> None:
        """Raise :class:`~mudrika.errors.EgressDenied` unless this policy lets us connect to ``address``."""
        reason = refusal_reason(address)
        if reason is None:
            return
        if self.allow_private_networks and reason.rpartition(":")[2] not in _ALWAYS_REFUSED:
            return
        raise EgressDenied(
            "destination address refused by the egress policy",
            code="egress_denied",
            reason=reason,
            host=host[:64],
        )

    def check_host(self, host: str | bytes) -> IPAddress | None:
        """Refuse non-canonical IPv4 spellings; check an IP literal at once (returned), names pass (None)."""
        text = _host_text(host)
        if not text or len(text) > _MAX_HOST_CHARS:
            raise EgressDenied("destination host refused", code="egress_denied", reason="bad_host")
        literal = _ip_literal(text)
        if literal is not None:
            self.check_address(literal, host=text)
        return literal

    def check_url(self, url: httpx.URL | str) -> None:
        """Steps 1 of the module docstring: scheme and host spelling (addresses are checked on connect)."""
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
        if parsed.scheme not in self.schemes:
            raise EgressDenied(
                "URL scheme refused by the egress policy",
                code="egress_denied",
                reason="scheme",
                scheme=parsed.scheme[:16],
            )
        self.check_host(parsed.host)

    def resolve(self, host: str, port: int) -> list[IPAddress]:
        """Resolve ``host`` once and check every answer; the list is what may be connected to."""
        literal = self.check_host(host)
        if literal is not None:
            return [literal]
        try:
            answers = self._resolve(_host_text(host), port)
        except OSError as exc:
            raise httpcore.ConnectError(f"name resolution failed ({type(exc).__name__})") from None
        return self._checked(host, answers)

    async def aresolve(self, host: str, port: int, timeout: float | None) -> list[IPAddress]:
        """Async :meth:`resolve`: ``getaddrinfo`` in a worker thread, abandoned after ``timeout``."""
        literal = self.check_host(host)
        if literal is not None:
            return [literal]
        try:
            with anyio.fail_after(timeout or self.timeout):
                answers = await anyio.to_thread.run_sync(
                    self._resolve, _host_text(host), port, abandon_on_cancel=True
                )
        except TimeoutError:
            raise httpcore.ConnectTimeout("name resolution timed out") from None
        except OSError as exc:
            raise httpcore.ConnectError(f"name resolution failed ({type(exc).__name__})") from None
        return self._checked(host, answers)

    def _checked(self, host: str, answers: Sequence[str]) -> list[IPAddress]:
        if not answers:
            raise httpcore.ConnectError("name resolution gave no address")
        addresses: list[IPAddress] = []
        for answer in list(answers)[:_MAX_ADDRESSES]:
            try:
                address = ipaddress.ip_address(answer)
            except ValueError:
                raise EgressDenied(
                    "resolver returned something that is not an address",
                    code="egress_denied",
                    reason="bad_answer",
                ) from None
            self.check_address(address, host=_host_text(host))
            if address not in addresses:
                addresses.append(address)
        return addresses

    # -- transports --------------------------------------------------------------------------------
    def transport(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        network_backend: httpcore.NetworkBackend | None = None,
    ) -> httpx.BaseTransport:
        """An httpx transport that connects only where this policy allows (sync).

        ``verify``: an ``ssl.SSLContext`` (e.g. trusting a private CA) or True for the system store.
        ``network_backend`` is the socket layer below the checks (default: httpcore's own); tests
        pass one that records where a connection would have gone.
        """
        return _EgressTransport(self, _ssl_context(verify), network_backend or httpcore.SyncBackend())

    def async_transport(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        network_backend: httpcore.AsyncNetworkBackend | None = None,
    ) -> httpx.AsyncBaseTransport:
        """Async :meth:`transport`."""
        return _AsyncEgressTransport(self, _ssl_context(verify), network_backend or httpcore.AnyIOBackend())

    def client_options(self) -> dict[str, Any]:
        """httpx client options that go with this policy: no redirects followed for you, no proxy or
        CA bundle from the environment, the per-operation timeout."""
        return {"timeout": self.timeout, "follow_redirects": False, "trust_env": False}


def ipv4_as_os_reads(text: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address the C library reads ``text`` as (``inet_aton``: ``127.1``, ``0x7f000001``,
    ``0177.0.0.1`` included), or None when it does not read it as one.

    Why shared: a host that the OS takes for an address in *any* spelling is not a name, whatever a
    stricter parser such as :mod:`ipaddress` says; every check on hosts must agree on which those are.
    """
    if not (_IPV4_ISH.fullmatch(text) and any(ch.isdigit() for ch in text)):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def _ip_literal(text: str) -> IPAddress | None:
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            raise EgressDenied(
                "malformed IPv6 literal", code="egress_denied", reason="bad_host", host=text[:64]
            ) from None
    address = ipv4_as_os_reads(text)
    if address is None:
        return None  # not something the C library reads as an address: a name, checked on resolve
    if str(address) != text:
        # 127.1, 0x7f000001, 0177.0.0.1, 2130706433 ...: the OS reads them as addresses, people
        # rarely notice; no legitimate configuration needs them.
        raise EgressDenied(
            "non-canonical IPv4 literal refused",
            code="egress_denied",
            reason="noncanonical_ip",
            host=text[:64],
        )
    return address


def _ssl_context(verify: ssl.SSLContext | bool) -> ssl.SSLContext:
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is not True:
        raise InvalidInput("certificate verification cannot be turned off", code="egress_config")
    return ssl.create_default_context()


# --- socket layer ---------------------------------------------------------------------------------


class _EgressBackend(httpcore.NetworkBackend):
    """Resolves and checks the host, then connects to the checked address (never the name)."""

    def __init__(self, policy: EgressPolicy, inner: httpcore.NetworkBackend) -> None:
        self._policy = policy
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in self._policy.resolve(host, port):
            try:
                return self._inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # resolve() returns at least one address
        raise failure

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise EgressDenied("unix sockets are not egress", code="egress_denied", reason="unix_socket")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncEgressBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, policy: EgressPolicy, inner: httpcore.AsyncNetworkBackend) -> None:
        self._policy = policy
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in await self._policy.aresolve(host, port, timeout):
            try:
                return await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise EgressDenied("unix sockets are not egress", code="egress_denied", reason="unix_socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


# --- transports -----------------------------------------------------------------------------------


class _Budget:
    """The byte cap and deadline of one request, checked as each body chunk arrives."""

    def __init__(self, policy: EgressPolicy) -> None:
        self._limit = policy.max_response_bytes
        self._deadline = time.monotonic() + policy.deadline
        self._size = 0

    def spend(self, chunk: bytes) -> bytes:
        self._size += len(chunk)
        if self._size > self._limit:
            raise EgressDenied(
                "response larger than the egress policy allows",
                code="egress_response_too_large",
                reason="too_large",
                limit=self._limit,
            )
        self.check_time()
        return chunk

    def check_time(self) -> None:
        if time.monotonic() > self._deadline:
            raise httpx.ReadTimeout("egress deadline passed")


class _CappedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, budget: _Budget) -> None:
        self._inner = inner
        self._budget = budget

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            yield self._budget.spend(chunk)

    def close(self) -> None:
        self._inner.close()


class _AsyncCappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, budget: _Budget) -> None:
        self._inner = inner
        self._budget = budget

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield self._budget.spend(chunk)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _EgressTransport(httpx.HTTPTransport):
    """httpx's own transport with the connection pool rebuilt on the checking socket layer."""

    def __init__(self, policy: EgressPolicy, context: ssl.SSLContext, inner: httpcore.NetworkBackend) -> None:
        super().__init__(verify=context, trust_env=False)
        self._policy = policy
        self._pool = httpcore.ConnectionPool(
            ssl_context=context, network_backend=_EgressBackend(policy, inner)
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self._policy.check_url(request.url)
        budget = _Budget(self._policy)
        response = super().handle_request(request)
        budget.check_time()
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _CappedStream(response.stream, budget)
        return response


class _AsyncEgressTransport(httpx.AsyncHTTPTransport):
    def __init__(
        self, policy: EgressPolicy, context: ssl.SSLContext, inner: httpcore.AsyncNetworkBackend
    ) -> None:
        super().__init__(verify=context, trust_env=False)
        self._policy = policy
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context, network_backend=_AsyncEgressBackend(policy, inner)
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self._policy.check_url(request.url)
        budget = _Budget(self._policy)
        try:
            with anyio.fail_after(self._policy.deadline):
                response = await super().handle_async_request(request)
        except TimeoutError:
            raise httpx.ReadTimeout("egress deadline passed", request=request) from None
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _AsyncCappedStream(response.stream, budget)
        return response
