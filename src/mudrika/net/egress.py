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
   returns: loopback, RFC 1918 private, link-local, CGNAT ``100.64/10``, multicast, broadcast,
   reserved and documentation ranges, unspecified, cloud metadata (``169.254.169.254``,
   ``fd00:ec2::254``), IPv4-mapped / IPv4-compatible IPv6, NAT64 ``64:ff9b::/96`` and 6to4
   ``2002::/16`` embedding a refused IPv4, Teredo, site-local and unique-local ``fc00::/7``.  One
   refused answer refuses the name.
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
    "EgressPolicy",
    "IPAddress",
    "Resolve",
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

# Most specific first: the first block that contains the address names the reason.
_V4_BLOCKS: Final = tuple(
    (ipaddress.IPv4Network(net), reason)
    for net, reason in (
        ("169.254.169.254/32", "metadata"),
        ("255.255.255.255/32", "broadcast"),
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "cgnat"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link_local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved"),
        ("192.0.2.0/24", "reserved"),
        ("192.88.99.0/24", "reserved"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "reserved"),
        ("198.51.100.0/24", "reserved"),
        ("203.0.113.0/24", "reserved"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
    )
)
_V6_BLOCKS: Final = tuple(
    (ipaddress.IPv6Network(net), reason)
    for net, reason in (
        ("fd00:ec2::254/128", "metadata"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::ffff:0:0/96", "ipv4_mapped"),
        ("::/96", "ipv4_compatible"),
        ("64:ff9b::/96", "nat64"),
        ("64:ff9b:1::/48", "nat64"),
        ("100::/64", "reserved"),
        ("2001::/32", "teredo"),
        ("2001:db8::/32", "reserved"),
        ("2002::/16", "6to4"),
        ("fc00::/7", "unique_local"),
        ("fe80::/10", "link_local"),
        ("fec0::/10", "site_local"),
        ("ff00::/8", "multicast"),
    )
)
#: Refused even with ``allow_private_networks``: no development setup needs them, attackers do.
_ALWAYS_REFUSED: Final = frozenset({"metadata", "multicast", "broadcast", "unspecified"})
#: Characters an IPv4 literal in any spelling the C library accepts is made of (``inet_aton``).
_IPV4_ISH: Final = re.compile(r"[0-9A-Fa-fXx.]+")


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` may not be connected to under the strict policy, or None when it may.

    IPv6 forms that embed an IPv4 address are judged by what they embed: ``::ffff:127.0.0.1`` is
    ``ipv4_mapped:loopback``; NAT64 and 6to4 with a public IPv4 inside are allowed (that is how an
    IPv6-only network reaches an IPv4-only host); the mapped and compatible forms never are.
    """
    if isinstance(address, ipaddress.IPv4Address):
        for network, reason in _V4_BLOCKS:
            if address in network:
                return reason
        return None if address.is_global else "not_global"
    plain = ipaddress.IPv6Address(address.packed)  # drop any %scope for the range checks
    for network6, reason in _V6_BLOCKS:
        if plain not in network6:
            continue
        embedded = _embedded_ipv4(plain, reason)
        if embedded is None:
            return reason
        inner = refusal_reason(embedded)
        if reason in ("ipv4_mapped", "ipv4_compatible"):
            return f"{reason}:{inner or 'public'}"
        return None if inner is None else f"{reason}:{inner}"
    return None if plain.is_global else "not_global"


def _embedded_ipv4(address: ipaddress.IPv6Address, reason: str) -> ipaddress.IPv4Address | None:
    if reason in ("ipv4_mapped", "ipv4_compatible", "nat64"):
        return ipaddress.IPv4Address(address.packed[-4:])
    if reason == "6to4":
        return address.sixtofour
    return None


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
