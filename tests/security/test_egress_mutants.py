"""Boundaries of the egress policy that the mutation check found unpinned.

Why: each test here fails when one small change is made to ``net/egress.py`` — a default moved, a
cap off by one, a refusal reason renamed, a socket-layer step dropped — that no other test noticed
(``bash scripts/mutation.sh --module net/egress.py``).  The connection tests run on httpcore's
in-memory network (:class:`httpcore.MockBackend` and a few small variants of it), so the policy sees
exactly what it would see on the Internet and no packet is sent; the deadline tests drive the
policy's clock by hand.
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import anyio
import httpcore
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

import mudrika.net.egress as egress_module
from mudrika.errors import EgressDenied, InvalidInput
from mudrika.net.egress import EgressPolicy, ipv4_as_os_reads, refusal_reason
from tests._support.served import serve_asgi

PUBLIC_IP = "93.184.215.14"  # global unicast; only ever "reached" through the in-memory network


def _public(host: str, port: int) -> list[str]:
    return [PUBLIC_IP]


def _response(body: bytes = b"") -> list[bytes]:
    return [b"HTTP/1.1 200 OK\r\n", b"Content-Length: %d\r\n\r\n" % len(body), *([body] if body else [])]


def _refused(call: Any, *args: Any) -> EgressDenied:
    with pytest.raises(EgressDenied) as caught:
        call(*args)
    return caught.value


# --- the documented defaults -------------------------------------------------------------------------


def test_the_documented_defaults() -> None:
    """https only, private networks refused, 5 s per operation, 10 s per request, 1 MiB per body."""
    policy = EgressPolicy()
    assert policy.schemes == frozenset({"https"})
    assert policy.allow_private_networks is False
    assert (policy.timeout, policy.deadline, policy.max_response_bytes) == (5.0, 10.0, 1_048_576)
    assert policy.client_options() == {"timeout": 5.0, "follow_redirects": False, "trust_env": False}


def test_repr_shows_the_opt_in_the_schemes_and_the_deadline() -> None:
    policy = EgressPolicy(schemes=("https", "HTTP"), deadline=3)
    assert (
        repr(policy) == "EgressPolicy(allow_private_networks=False, schemes=['http', 'https'], deadline=3.0)"
    )


def test_a_strict_policy_logs_no_development_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mudrika.net.egress"):
        EgressPolicy()
    assert caplog.records == []


# --- configuration ----------------------------------------------------------------------------------


@pytest.mark.parametrize("schemes", [("http",), ("https",), ("http", "https"), ("HTTPS",)], ids="+".join)
def test_every_subset_of_http_and_https_is_a_valid_scheme_list(schemes: tuple[str, ...]) -> None:
    assert EgressPolicy(schemes=schemes).schemes == frozenset(s.lower() for s in schemes)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"schemes": ()}, "schemes must be"),
        ({"schemes": ("https", "ftp")}, "schemes must be"),
        ({"timeout": 0}, "timeout must be"),
        ({"timeout": -1.0}, "timeout must be"),
        ({"timeout": float("inf")}, "timeout must be"),
        ({"deadline": 0.0}, "deadline must be"),
        ({"deadline": float("inf")}, "deadline must be"),
        ({"max_response_bytes": 0}, "max_response_bytes must be"),
        ({"max_response_bytes": True}, "max_response_bytes must be"),
    ],
)
def test_bad_configuration_is_refused_naming_the_setting(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        EgressPolicy(**kwargs)
    assert caught.value.code == "egress_config"


def test_the_smallest_positive_limits_are_accepted() -> None:
    policy = EgressPolicy(timeout=0.5, deadline=0.25, max_response_bytes=1)
    assert (policy.timeout, policy.deadline, policy.max_response_bytes) == (0.5, 0.25, 1)


def test_certificate_verification_cannot_be_turned_off_and_the_refusal_says_so() -> None:
    with pytest.raises(InvalidInput) as caught:
        EgressPolicy().async_transport(verify=False)
    assert caught.value.code == "egress_config"


# --- every row of the table, by its own name -----------------------------------------------------------

# One address inside each row of the special-purpose table, with the reason written out here (not
# read from the table), so that renaming a class in the table is a visible change.
_ROW_REASONS = [
    ("169.254.169.254", "metadata"),
    ("255.255.255.255", "broadcast"),
    ("0.1.2.3", "unspecified"),
    ("10.1.2.3", "private"),
    ("100.64.1.1", "cgnat"),
    ("127.0.0.1", "loopback"),
    ("169.254.1.1", "link_local"),
    ("172.20.1.1", "private"),
    ("192.0.0.8", "protocol_assignment"),
    ("192.0.2.5", "documentation"),
    ("192.88.99.1", "reserved"),
    ("192.168.0.1", "private"),
    ("198.19.0.1", "benchmarking"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("239.1.1.1", "multicast"),
    ("250.1.1.1", "reserved"),
    ("fd00:ec2::254", "metadata"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("::ffff:10.0.0.1", "ipv4_mapped:private"),
    ("::ffff:0:a00:1", "ipv4_translated:private"),
    ("::a00:1", "ipv4_compatible:private"),
    ("64:ff9b::a00:1", "nat64:private"),
    ("64:ff9b:1:a00:0:1::", "nat64_local:private"),
    ("100::1", "discard"),
    ("2001:0:808:404:8000:fb2e:f5ff:fffe", "teredo:private"),
    ("2001:2::1", "protocol_assignment"),
    ("2001:db8::1", "documentation"),
    ("2002:a00:1::", "6to4:private"),
    ("3fff::1", "documentation"),
    ("5f00::1", "srv6_sid"),
    ("fc00::1", "unique_local"),
    ("fe80::1", "link_local"),
    ("fec0::1", "site_local"),
    ("ff02::1", "multicast"),
    ("4000::1", "not_global"),
]


@pytest.mark.parametrize(("address", "reason"), _ROW_REASONS)
def test_each_row_refuses_with_its_own_reason(address: str, reason: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) == reason
    refusal = _refused(EgressPolicy().check_address, ipaddress.ip_address(address))
    assert (refusal.code, refusal.fields["reason"], refusal.fields["host"]) == ("egress_denied", reason, "")


@pytest.mark.parametrize("address", ["255.255.255.255", "::ffff:255.255.255.255", "ff02::1", "0.0.0.0"])
def test_development_never_admits_broadcast_multicast_or_unspecified(address: str) -> None:
    _refused(EgressPolicy(allow_private_networks=True).check_address, ipaddress.ip_address(address))


# --- host spelling ----------------------------------------------------------------------------------


def test_a_host_name_of_253_characters_is_a_name_and_254_is_refused() -> None:
    longest = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
    assert len(longest) == 253
    policy = EgressPolicy()
    assert policy.check_host(longest) is None
    refusal = _refused(policy.check_host, longest + "e")
    assert (refusal.code, refusal.fields["reason"]) == ("egress_denied", "bad_host")


@pytest.mark.parametrize("host", ["", "[]"])
def test_an_empty_host_is_refused(host: str) -> None:
    assert _refused(EgressPolicy().check_host, host).fields["reason"] == "bad_host"


@pytest.mark.parametrize(("host", "reason"), [(b"127.0.0.1", "loopback"), (b"[::1]", "loopback")])
def test_a_host_given_as_bytes_is_read_as_text(host: bytes, reason: str) -> None:
    """httpcore hands hosts over as bytes: ``b"[::1]"`` is loopback like ``"[::1]"``."""
    assert _refused(EgressPolicy().check_host, host).fields["reason"] == reason


def test_a_non_ascii_byte_host_is_a_name_for_resolution_not_an_error() -> None:
    assert EgressPolicy().check_host(b"\xff.example") is None


@pytest.mark.parametrize("host", ["127.0.0.1x", "x127.0.0.1", "_127.0.0.1"])
def test_an_address_with_a_letter_attached_is_a_name(host: str) -> None:
    """Only the brackets of an IPv6 literal are stripped: ``127.0.0.1x`` is a name (which the
    resolver answers, and the answer is checked), not the address inside it."""
    assert EgressPolicy().check_host(host) is None


def test_an_address_followed_by_text_is_not_read_as_that_address() -> None:
    """``inet_aton`` stops at white space (``127.0.0.1 x`` reads as 127.0.0.1); ``getaddrinfo`` does
    not, so neither does egress: only strings made of address characters are addresses."""
    assert ipv4_as_os_reads("127.0.0.1 x") is None
    assert ipv4_as_os_reads("127.0.0.1") == ipaddress.IPv4Address("127.0.0.1")


@pytest.mark.parametrize(
    ("host", "reason"),
    [("0x" + "0" * 70 + "7f000001", "noncanonical_ip"), ("1:2:3:4:5:6:7:8:9" + ":a" * 40, "bad_host")],
    ids=["hex-ipv4", "ipv6"],
)
def test_a_refused_literal_is_named_by_its_first_64_characters(host: str, reason: str) -> None:
    refusal = _refused(EgressPolicy().check_host, host)
    assert refusal.fields["reason"] == reason
    assert refusal.fields["host"] == host[:64]


def test_a_refused_resolved_name_is_named_by_its_first_64_characters() -> None:
    name = "a" * 70 + ".example"
    policy = EgressPolicy(resolve=lambda host, port: ["10.0.0.1"])
    refusal = _refused(policy.resolve, name, 443)
    assert refusal.fields["host"] == name[:64]


def test_a_long_refused_scheme_is_cut_to_16_characters() -> None:
    refusal = _refused(EgressPolicy().check_url, "abcdefghijklmnopqrstuvwxyz://public.test/")
    assert (refusal.fields["reason"], refusal.fields["scheme"]) == ("scheme", "abcdefghijklmnop")


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1/", httpx.URL("https://[::1]/")], ids=["text", "httpx.URL"]
)
def test_check_url_checks_the_host_of_text_and_parsed_urls(url: str | httpx.URL) -> None:
    assert _refused(EgressPolicy().check_url, url).fields["reason"] == "loopback"


# --- resolution --------------------------------------------------------------------------------------

_MANY = [f"93.184.216.{n}" for n in range(1, 41)]


def test_only_the_first_32_answers_are_kept_and_duplicates_collapse() -> None:
    policy = EgressPolicy(resolve=lambda host, port: [PUBLIC_IP, PUBLIC_IP, *_MANY])
    kept = policy.resolve("public.test", 443)
    assert kept == [ipaddress.ip_address(PUBLIC_IP)] + [ipaddress.ip_address(a) for a in _MANY[:30]]


@pytest.mark.anyio
async def test_async_resolution_keeps_the_same_answers() -> None:
    policy = EgressPolicy(resolve=lambda host, port: [PUBLIC_IP, PUBLIC_IP, *_MANY])
    kept = await policy.aresolve("public.test", 443, None)
    assert kept == [ipaddress.ip_address(PUBLIC_IP)] + [ipaddress.ip_address(a) for a in _MANY[:30]]
    assert await policy.aresolve("8.8.8.8", 443, None) == [ipaddress.ip_address("8.8.8.8")]


def _failing(host: str, port: int) -> list[str]:
    raise OSError("no such name")


def test_resolution_failures_are_connect_errors_and_odd_answers_refusals() -> None:
    with pytest.raises(httpcore.ConnectError):
        EgressPolicy(resolve=_failing).resolve("public.test", 443)
    with pytest.raises(httpcore.ConnectError):
        EgressPolicy(resolve=lambda host, port: []).resolve("public.test", 443)
    refusal = _refused(
        EgressPolicy(resolve=lambda host, port: ["not-an-address"]).resolve, "public.test", 443
    )
    assert (refusal.code, refusal.fields["reason"]) == ("egress_denied", "bad_answer")


@pytest.mark.anyio
async def test_async_resolution_failures_are_connect_errors() -> None:
    with pytest.raises(httpcore.ConnectError):
        await EgressPolicy(resolve=_failing).aresolve("public.test", 443, 1.0)
    with pytest.raises(httpcore.ConnectError):
        await EgressPolicy(resolve=lambda host, port: []).aresolve("public.test", 443, 1.0)


class _HangingResolver:
    """A DNS lookup that does not answer until released (or 5 s pass): is the caller held?"""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.finished = threading.Event()
        self.released_before_answering = False

    def __call__(self, host: str, port: int) -> list[str]:
        self.released_before_answering = self.released.wait(5)
        self.finished.set()
        return [PUBLIC_IP]


@pytest.mark.anyio
async def test_a_hanging_lookup_times_out_after_the_policy_timeout_and_is_abandoned() -> None:
    """Without a per-call timeout the policy's own applies; the caller gets ``ConnectTimeout``
    while the lookup is still hanging (its thread is abandoned, not waited for)."""
    resolver = _HangingResolver()
    policy = EgressPolicy(resolve=resolver, timeout=0.05)
    try:
        with pytest.raises(httpcore.ConnectTimeout):
            await policy.aresolve("public.test", 443, None)
    finally:
        resolver.released.set()
    await anyio.to_thread.run_sync(resolver.finished.wait, 10)
    assert resolver.released_before_answering


# --- the socket layer ------------------------------------------------------------------------------


class _FirstAddressDown(httpcore.MockBackend):
    """Refuses connections to the addresses in ``down``; the others get the canned response."""

    def __init__(self, buffer: list[bytes], down: Iterable[str]) -> None:
        super().__init__(buffer)
        self.down = set(down)
        self.attempts: list[str] = []

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        self.attempts.append(host)
        if host in self.down:
            raise httpcore.ConnectError(f"{host} unreachable")
        return super().connect_tcp(host, port, timeout, local_address, socket_options)


class _AsyncFirstAddressDown(httpcore.AsyncMockBackend):
    def __init__(self, buffer: list[bytes], down: Iterable[str]) -> None:
        super().__init__(buffer)
        self.down = set(down)
        self.attempts: list[str] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.attempts.append(host)
        if host in self.down:
            raise httpcore.ConnectError(f"{host} unreachable")
        return await super().connect_tcp(host, port, timeout, local_address, socket_options)


_TWO = ["93.184.215.1", "93.184.215.2"]


def test_a_down_address_is_skipped_for_the_next_checked_one() -> None:
    network = _FirstAddressDown(_response(b"fine"), down=[_TWO[0]])
    policy = EgressPolicy(resolve=lambda host, port: _TWO)
    with httpx.Client(transport=policy.transport(network_backend=network)) as client:
        assert client.get("https://public.test/").content == b"fine"
    assert network.attempts == _TWO


def test_when_every_address_is_down_the_connect_error_is_raised() -> None:
    network = _FirstAddressDown(_response(), down=_TWO)
    policy = EgressPolicy(resolve=lambda host, port: _TWO)
    with (
        httpx.Client(transport=policy.transport(network_backend=network)) as client,
        pytest.raises(httpx.ConnectError, match="unreachable"),
    ):
        client.get("https://public.test/")
    assert network.attempts == _TWO


@pytest.mark.anyio
async def test_async_a_down_address_is_skipped_and_all_down_is_a_connect_error() -> None:
    policy = EgressPolicy(resolve=lambda host, port: _TWO)
    network = _AsyncFirstAddressDown(_response(b"fine"), down=[_TWO[0]])
    async with httpx.AsyncClient(transport=policy.async_transport(network_backend=network)) as client:
        assert (await client.get("https://public.test/")).content == b"fine"
    assert network.attempts == _TWO
    network = _AsyncFirstAddressDown(_response(), down=_TWO)
    async with httpx.AsyncClient(transport=policy.async_transport(network_backend=network)) as client:
        with pytest.raises(httpx.ConnectError, match="unreachable"):
            await client.get("https://public.test/")


def test_the_socket_layer_refuses_unix_sockets_and_delegates_sleeping() -> None:
    """The pool never asks for a unix socket; if it did, that is no egress.  Sleeping (between
    connection retries) is the inner layer's."""

    class Sleeper(httpcore.MockBackend):
        def __init__(self) -> None:
            super().__init__([])
            self.slept: list[float] = []

        def sleep(self, seconds: float) -> None:
            self.slept.append(seconds)

    inner = Sleeper()
    backend = egress_module._EgressBackend(EgressPolicy(), inner)
    refused = _refused(backend.connect_unix_socket, "/run/docker.sock")
    assert (refused.code, refused.fields["reason"]) == ("egress_denied", "unix_socket")
    backend.sleep(0.25)
    assert inner.slept == [0.25]


@pytest.mark.anyio
async def test_the_async_socket_layer_refuses_unix_sockets_and_delegates_sleeping() -> None:
    class Sleeper(httpcore.AsyncMockBackend):
        def __init__(self) -> None:
            super().__init__([])
            self.slept: list[float] = []

        async def sleep(self, seconds: float) -> None:
            self.slept.append(seconds)

    inner = Sleeper()
    backend = egress_module._AsyncEgressBackend(EgressPolicy(), inner)
    with pytest.raises(EgressDenied) as caught:
        await backend.connect_unix_socket("/run/docker.sock")
    assert (caught.value.code, caught.value.fields["reason"]) == ("egress_denied", "unix_socket")
    await backend.sleep(0.25)
    assert inner.slept == [0.25]


# --- the transports ------------------------------------------------------------------------------


def _served_app() -> Starlette:
    async def ok(request: Request) -> Response:
        return PlainTextResponse("fine")

    return Starlette(routes=[Route("/ok", ok)])


@pytest.fixture
def local_server() -> Iterator[str]:
    with serve_asgi(_served_app()) as base:
        yield base


def test_the_default_transport_connects_through_the_real_socket_layer(local_server: str) -> None:
    """No network backend and no ``verify`` given: httpcore's sockets and the system trust store."""
    policy = EgressPolicy(allow_private_networks=True, schemes=("http",))
    with httpx.Client(transport=policy.transport()) as client:
        assert client.get(f"{local_server}/ok").text == "fine"


@pytest.mark.anyio
async def test_the_default_async_transport_connects_through_the_real_socket_layer(local_server: str) -> None:
    policy = EgressPolicy(allow_private_networks=True, schemes=("http",))
    async with httpx.AsyncClient(transport=policy.async_transport()) as client:
        assert (await client.get(f"{local_server}/ok")).text == "fine"


@pytest.mark.anyio
async def test_the_async_transport_refuses_a_scheme_before_any_connection() -> None:
    network = _AsyncFirstAddressDown(_response(), down=[])
    policy = EgressPolicy(resolve=_public)
    async with httpx.AsyncClient(transport=policy.async_transport(network_backend=network)) as client:
        with pytest.raises(EgressDenied) as caught:
            await client.get("http://public.test/")
    assert caught.value.fields["reason"] == "scheme"
    assert network.attempts == []


@pytest.mark.parametrize("size", [1, 100, 4096])
def test_a_body_of_exactly_the_cap_is_delivered_and_one_byte_more_is_refused(size: int) -> None:
    policy = EgressPolicy(resolve=_public, max_response_bytes=size)
    body = b"x" * size
    with httpx.Client(
        transport=policy.transport(network_backend=httpcore.MockBackend(_response(body)))
    ) as client:
        assert client.get("https://public.test/").content == body
    over = httpcore.MockBackend(
        [b"HTTP/1.1 200 OK\r\n", b"Content-Length: %d\r\n\r\n" % (size + 1), b"y" * size, b"y"]
    )
    with (
        httpx.Client(transport=policy.transport(network_backend=over)) as client,
        pytest.raises(EgressDenied) as caught,
    ):
        client.get("https://public.test/")
    assert (caught.value.code, caught.value.fields["reason"]) == ("egress_response_too_large", "too_large")
    assert caught.value.fields["limit"] == size


@pytest.mark.anyio
@pytest.mark.parametrize("size", [1, 4096])
async def test_async_a_body_of_exactly_the_cap_is_delivered_and_one_byte_more_is_refused(size: int) -> None:
    policy = EgressPolicy(resolve=_public, max_response_bytes=size)
    body = b"x" * size
    network = httpcore.AsyncMockBackend(_response(body))
    async with httpx.AsyncClient(transport=policy.async_transport(network_backend=network)) as client:
        assert (await client.get("https://public.test/")).content == body
    over = httpcore.AsyncMockBackend(
        [b"HTTP/1.1 200 OK\r\n", b"Content-Length: %d\r\n\r\n" % (size + 1), b"y" * size, b"y"]
    )
    async with httpx.AsyncClient(transport=policy.async_transport(network_backend=over)) as client:
        with pytest.raises(EgressDenied) as caught:
            await client.get("https://public.test/")
    assert caught.value.code == "egress_response_too_large"


class _CountingBackend(httpcore.MockBackend):
    """Every connection gets two canned responses (keep-alive); counts the connections opened."""

    def __init__(self, body: bytes) -> None:
        super().__init__(_response(body) * 2)
        self.connections = 0

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        self.connections += 1
        return super().connect_tcp(host, port, timeout, local_address, socket_options)


class _AsyncCountingBackend(httpcore.AsyncMockBackend):
    def __init__(self, body: bytes) -> None:
        super().__init__(_response(body) * 2)
        self.connections = 0

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.connections += 1
        return await super().connect_tcp(host, port, timeout, local_address, socket_options)


def test_a_closed_response_gives_its_connection_back_for_the_next_request() -> None:
    network = _CountingBackend(b"fine")
    policy = EgressPolicy(resolve=_public)
    with httpx.Client(transport=policy.transport(network_backend=network)) as client:
        for _ in range(2):
            with client.stream("GET", "https://public.test/") as response:
                assert response.read() == b"fine"
    assert network.connections == 1


@pytest.mark.anyio
async def test_async_a_closed_response_gives_its_connection_back_for_the_next_request() -> None:
    network = _AsyncCountingBackend(b"fine")
    policy = EgressPolicy(resolve=_public)
    async with httpx.AsyncClient(transport=policy.async_transport(network_backend=network)) as client:
        for _ in range(2):
            async with client.stream("GET", "https://public.test/") as response:
                assert await response.aread() == b"fine"
    assert network.connections == 1


# --- the whole-request deadline ----------------------------------------------------------------------


class _HandClock:
    """Stands in for the ``time`` module inside egress: ``monotonic()`` moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class _SlowStream(httpcore.MockStream):
    """Each read of the canned response first moves the hand clock by the read's delay."""

    def __init__(self, buffer: list[bytes], clock: _HandClock, delays: list[float]) -> None:
        super().__init__(buffer)
        self._clock = clock
        self._delays = delays

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._delays:
            self._clock.now += self._delays.pop(0)
        return super().read(max_bytes, timeout)


class _SlowNetwork(httpcore.MockBackend):
    def __init__(self, buffer: list[bytes], clock: _HandClock, delays: list[float]) -> None:
        super().__init__(buffer)
        self._clock = clock
        self._delays = delays

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        return _SlowStream(list(self._buffer), self._clock, self._delays)


@pytest.fixture
def hand_clock(monkeypatch: pytest.MonkeyPatch) -> _HandClock:
    clock = _HandClock()
    monkeypatch.setattr(egress_module, "time", clock)
    return clock


def _get_with_delays(clock: _HandClock, buffer: list[bytes], delays: list[float]) -> httpx.Response:
    policy = EgressPolicy(resolve=_public, deadline=10)
    network = _SlowNetwork(buffer, clock, delays)
    with httpx.Client(transport=policy.transport(network_backend=network)) as client:
        return client.get("https://public.test/")


def test_headers_arriving_exactly_at_the_deadline_are_in_time(hand_clock: _HandClock) -> None:
    assert _get_with_delays(hand_clock, _response(), [10.0]).status_code == 200


def test_headers_arriving_after_the_deadline_time_out_even_without_a_body(hand_clock: _HandClock) -> None:
    with pytest.raises(httpx.ReadTimeout, match="deadline"):
        _get_with_delays(hand_clock, _response(), [10.5])


def test_a_body_chunk_arriving_after_the_deadline_times_out(hand_clock: _HandClock) -> None:
    buffer = [b"HTTP/1.1 200 OK\r\n", b"Content-Length: 4\r\n\r\n", b"fi", b"ne"]
    assert _get_with_delays(hand_clock, list(buffer), [0.0, 0.0, 10.0]).content == b"fine"
    with pytest.raises(httpx.ReadTimeout, match="deadline"):
        _get_with_delays(hand_clock, list(buffer), [0.0, 0.0, 10.5])


class _SilentStream(httpcore.AsyncMockStream):
    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


class _SilentNetwork(httpcore.AsyncMockBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _SilentStream([])


@pytest.mark.anyio
async def test_async_a_server_that_never_answers_hits_the_deadline() -> None:
    policy = EgressPolicy(resolve=_public, deadline=0.05)
    async with httpx.AsyncClient(
        transport=policy.async_transport(network_backend=_SilentNetwork([]))
    ) as client:
        with pytest.raises(httpx.ReadTimeout, match="deadline"):
            await client.get("https://public.test/")


@pytest.mark.parametrize("host", ["fe80::zz", "::1::1", "1:2:3:4:5:6:7:8:9"])
def test_a_malformed_ipv6_literal_is_denied_as_a_bad_host(host: str) -> None:
    with pytest.raises(EgressDenied) as denied:
        EgressPolicy().check_host(host)
    assert denied.value.code == "egress_denied"
    assert denied.value.fields == {"reason": "bad_host", "host": host}


def test_the_tls_context_is_the_callers_or_a_verifying_default() -> None:
    """A caller's context (a private CA, a pinned one) is used as given; without one, a default
    context that verifies the certificate and the host name; turning verification off is refused."""
    own = ssl.create_default_context()
    assert egress_module._ssl_context(own) is own
    default = egress_module._ssl_context(True)
    assert isinstance(default, ssl.SSLContext)
    assert (default.verify_mode, default.check_hostname) == (ssl.CERT_REQUIRED, True)
    with pytest.raises(InvalidInput) as off:
        egress_module._ssl_context(False)
    assert off.value.code == "egress_config"
    # Through the public face: a transport with the caller's context builds, one without verification does not.
    EgressPolicy().transport(verify=own)
    with pytest.raises(InvalidInput):
        EgressPolicy().transport(verify=False)


def test_an_ip_literal_is_never_sent_to_the_resolver() -> None:
    """A literal is its own answer: asking DNS (or a hosts file) about it could only add a lookup
    an attacker might observe or answer differently."""
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return [PUBLIC_IP]

    policy = EgressPolicy(resolve=resolver)
    assert policy.resolve(PUBLIC_IP, 443) == [ipaddress.ip_address(PUBLIC_IP)]
    assert asked == []
    assert policy.resolve("shop.example", 443) == [ipaddress.ip_address(PUBLIC_IP)]
    assert asked == ["shop.example"]
