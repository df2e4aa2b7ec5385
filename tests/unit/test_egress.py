"""The egress policy: which addresses are refused, how names are resolved once and connected to by
address, and that redirects and body sizes are checked on every hop.

"Public" hosts are simulated: a stub resolver answers a documentation-free public address and a
recording socket layer sends that connection to a uvicorn server on 127.0.0.1, so no packet ever
leaves the machine while the policy sees exactly what it would see on the Internet.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpcore
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from mudrika.errors import EgressDenied, InvalidInput, VerificationError
from mudrika.net.egress import (
    GLOBAL_UNICAST_V6,
    SPECIAL_RANGES,
    EgressPolicy,
    IPAddress,
    SpecialRange,
    refusal_reason,
)
from tests._support.served import Canary, canary, serve_asgi

PUBLIC_IP = "93.184.215.14"  # a global unicast address; never actually contacted (see PublicRoute)


# --- which destinations are globally routable -------------------------------------------------------
# The spec the table must meet, written here independently of it: the classes no opt-in may admit, the
# embedding forms admitted when the IPv4 inside is public, and how each embedding form carries IPv4.
ALWAYS_REFUSED = frozenset({"metadata", "multicast", "broadcast", "unspecified"})
ADMITTED_WITH_PUBLIC_INNER = frozenset({"nat64", "6to4"})
TEREDO_SERVER = ipaddress.IPv4Address("8.8.4.4")


def _v6(raw: bytes) -> ipaddress.IPv6Address:
    assert len(raw) == 16
    return ipaddress.IPv6Address(raw)


EMBED: dict[str, Callable[[ipaddress.IPv4Address], ipaddress.IPv6Address]] = {
    # RFC 4291 2.5.5.2 / 2.5.5.1
    "ipv4_mapped": lambda v4: _v6(bytes(10) + b"\xff\xff" + v4.packed),
    "ipv4_compatible": lambda v4: _v6(bytes(12) + v4.packed),
    # RFC 2765 2.1 (SIIT "IPv4-translated"): ::ffff:0:a.b.c.d
    "ipv4_translated": lambda v4: _v6(bytes(8) + b"\xff\xff\x00\x00" + v4.packed),
    # RFC 6052 2.2: /96 suffix; /48 split around the u octet
    "nat64": lambda v4: _v6(bytes.fromhex("0064ff9b") + bytes(8) + v4.packed),
    "nat64_local": lambda v4: _v6(
        bytes.fromhex("0064ff9b0001") + v4.packed[:2] + b"\x00" + v4.packed[2:] + bytes(5)
    ),
    # RFC 3056 2: 2002:V4ADDR::/48
    "6to4": lambda v4: _v6(b"\x20\x02" + v4.packed + bytes(10)),
    # RFC 4380 4: prefix, server, flags, obfuscated port, obfuscated client
    "teredo": lambda v4: _v6(
        b"\x20\x01\x00\x00"
        + TEREDO_SERVER.packed
        + b"\x80\x00"
        + b"\xfb\x2e"
        + bytes(b ^ 0xFF for b in v4.packed)
    ),
}
#: IPv4 addresses embedded in every form, with the class each is refused for (None: public).
INNER = {
    "127.0.0.1": "loopback",
    "10.9.8.7": "private",
    "169.254.169.254": "metadata",
    "224.0.0.251": "multicast",
    "8.8.8.8": None,
}


def _samples(row: SpecialRange) -> list[IPAddress]:
    """First, middle and last address of ``row`` that no more specific row (listed earlier) owns."""
    earlier = SPECIAL_RANGES[: SPECIAL_RANGES.index(row)]
    network = row.network
    middle = network[network.num_addresses // 2]
    picks = [
        network.network_address,
        middle,
        network.broadcast_address,
        network[1] if network.num_addresses > 1 else middle,
    ]
    return [a for a in dict.fromkeys(picks) if not any(a in other.network for other in earlier)]


def _cases(row: SpecialRange) -> list[tuple[IPAddress, str | None]]:
    """Every (address, expected reason) the table promises for ``row``."""
    if row.embeds is None:
        return [(address, row.reason) for address in _samples(row)]
    encode = EMBED[row.reason]
    cases: list[tuple[IPAddress, str | None]] = []
    for text, inner in INNER.items():
        address = encode(ipaddress.IPv4Address(text))
        assert address in row.network, (row.reason, address)
        if inner is None and row.reason in ADMITTED_WITH_PUBLIC_INNER:
            cases.append((address, None))
        else:
            cases.append((address, f"{row.reason}:{inner or 'public'}"))
    return cases


def test_every_embedding_form_in_the_table_has_an_encoder_here() -> None:
    # A new embedding row without cases fails here, before the generated tests silently skip it.
    assert {row.reason for row in SPECIAL_RANGES if row.embeds is not None} == set(EMBED)
    assert {row.reason for row in SPECIAL_RANGES} >= ALWAYS_REFUSED


@pytest.mark.parametrize("row", SPECIAL_RANGES, ids=lambda row: f"{row.network}-{row.reason}")
def test_every_special_range_is_refused_for_its_own_reason(row: SpecialRange) -> None:
    cases = _cases(row)
    assert cases, f"{row.network} is entirely shadowed by earlier rows"
    strict = EgressPolicy()
    for address, reason in cases:
        assert refusal_reason(address) == reason, address
        if reason is None:
            strict.check_address(address)
            continue
        with pytest.raises(EgressDenied) as info:
            strict.check_address(address)
        assert (info.value.code, info.value.fields["reason"]) == ("egress_denied", reason)


@pytest.mark.parametrize("row", SPECIAL_RANGES, ids=lambda row: f"{row.network}-{row.reason}")
def test_development_opt_in_admits_everything_but_the_always_refused_classes(row: SpecialRange) -> None:
    development = EgressPolicy(allow_private_networks=True)
    for address, reason in _cases(row):
        if reason is None or reason.rpartition(":")[2] not in ALWAYS_REFUSED:
            development.check_address(address)
            continue
        with pytest.raises(EgressDenied) as info:
            development.check_address(address)
        assert info.value.fields["reason"] == reason


def test_outside_global_unicast_nothing_is_admitted() -> None:
    # The allow-rule, not a row: IPv6 outside 2000::/3 is not routable whether or not a row names it.
    outside = [
        ipaddress.IPv6Address(block << 112 | 0x1234)
        for block in range(0, 0x10000, 0x0100)
        if not any(ipaddress.IPv6Address(block << 112 | 0x1234) in row.network for row in SPECIAL_RANGES)
    ]
    assert len(outside) > 100
    for address in outside:
        expected = None if address in GLOBAL_UNICAST_V6 else "not_global"
        assert refusal_reason(address) == expected, address
    assert refusal_reason(ipaddress.ip_address("4000::1")) == "not_global"
    assert refusal_reason(ipaddress.ip_address("2606:4700:4700::1111")) is None


def test_the_standard_library_never_knows_a_range_the_table_misses() -> None:
    # A second, independently maintained reading of the IANA registries: whatever the running Python
    # calls non-global is refused here too.  The two translation forms are judged by what they carry
    # (some Python versions call all of 2002::/16 non-global).
    pool: list[IPAddress] = [ipaddress.IPv4Address(n << 24 | 0x010203) for n in range(256)]
    pool += [ipaddress.IPv6Address(n << 108 | 1) for n in range(0, 1 << 20, 97)]
    pool += [address for row in SPECIAL_RANGES for address, _ in _cases(row)]
    for address in pool:
        translated = any(
            address in row.network for row in SPECIAL_RANGES if row.reason in ADMITTED_WITH_PUBLIC_INNER
        )
        if not address.is_global and not translated:
            assert refusal_reason(address) is not None, address


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "cgnat"),
        ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link_local"),
        ("224.0.0.1", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("192.0.2.1", "documentation"),
        ("192.0.0.170", "protocol_assignment"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "ipv4_mapped:loopback"),
        ("::ffff:8.8.8.8", "ipv4_mapped:public"),
        ("::127.0.0.1", "ipv4_compatible:loopback"),
        # red team: SIIT, RFC 9637 documentation, RFC 9602 SRv6 SIDs, RFC 8215 local-use NAT64
        ("::ffff:0:7f00:1", "ipv4_translated:loopback"),
        ("::ffff:0:c0a8:101", "ipv4_translated:private"),
        ("::ffff:0:808:808", "ipv4_translated:public"),
        ("3fff::1", "documentation"),
        ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"),
        ("5f00::1", "srv6_sid"),
        ("64:ff9b:1:7f00:0:1::", "nat64_local:loopback"),
        ("64:ff9b::7f00:1", "nat64:loopback"),
        ("64:ff9b::a9fe:a9fe", "nat64:metadata"),
        ("2002:7f00:1::", "6to4:loopback"),
        ("2002:a00:1::", "6to4:private"),
        ("2001::1", "teredo:reserved"),  # client ~0.0.0.1 = 255.255.255.254
        ("2001:0:808:404:8000:fb2e:80ff:fffe", "teredo:loopback"),
        ("2001:2::1", "protocol_assignment"),
        ("fc00::1", "unique_local"),
        ("fd00:ec2::254", "metadata"),
        ("fe80::1", "link_local"),
        ("fe80::1%eth0", "link_local"),
        ("fec0::1", "site_local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("100::1", "discard"),
        ("8000::1", "not_global"),
        ("8.8.8.8", None),
        ("64:ff9b::808:808", None),
        ("2002:808:808::", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_refusal_reasons(address: str, reason: str | None) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    "host", ["127.1", "0x7f000001", "0x7f.0x1", "0177.0.0.1", "2130706433", "0xa9fea9fe", "127.0.1", "1"]
)
@pytest.mark.parametrize("private", [False, True])
def test_non_canonical_ipv4_spellings_are_refused_even_in_development(host: str, private: bool) -> None:
    with pytest.raises(EgressDenied) as info:
        EgressPolicy(allow_private_networks=private).check_host(host)
    assert info.value.fields["reason"] == "noncanonical_ip"


def test_canonical_literals_are_checked_and_names_pass_to_resolution() -> None:
    policy = EgressPolicy()
    assert policy.check_host("8.8.8.8") == ipaddress.IPv4Address("8.8.8.8")
    assert policy.check_host("example.com") is None
    assert policy.check_host("deadbeef.example") is None
    with pytest.raises(EgressDenied):
        policy.check_host("[::ffff:127.0.0.1]")
    assert isinstance(EgressDenied("x"), VerificationError)  # a refusal is a deny, never an outage


def test_development_opt_in_is_visible_and_still_refuses_metadata(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mudrika.net.egress"):
        policy = EgressPolicy(allow_private_networks=True)
    assert "allows private networks" in caplog.text
    policy.check_address(ipaddress.ip_address("127.0.0.1"))
    policy.check_address(ipaddress.ip_address("10.0.0.1"))
    for address in ("169.254.169.254", "fd00:ec2::254", "224.0.0.1", "0.0.0.0", "::ffff:169.254.169.254"):
        with pytest.raises(EgressDenied):
            policy.check_address(ipaddress.ip_address(address))
    assert "allow_private_networks=True" in repr(policy)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"schemes": ()},
        {"schemes": ("ftp",)},
        {"timeout": 0},
        {"deadline": float("nan")},
        {"max_response_bytes": 0},
    ],
)
def test_bad_configuration(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        EgressPolicy(**kwargs)


def test_verification_cannot_be_turned_off() -> None:
    with pytest.raises(InvalidInput):
        EgressPolicy().transport(verify=False)


# --- connections --------------------------------------------------------------------------------------


class PublicRoute(httpcore.NetworkBackend):
    """The socket layer under the policy: records every address the policy connects to, and sends a
    connection to :data:`PUBLIC_IP` to the loopback test server instead of the Internet."""

    def __init__(self, target_port: int) -> None:
        self.connected: list[str] = []
        self._port = target_port
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        self.connected.append(host)
        if host != PUBLIC_IP:
            raise AssertionError(f"the policy let a connection to {host} through")
        return self._inner.connect_tcp("127.0.0.1", self._port, timeout, local_address, socket_options)


class Rebinding:
    """A DNS server that answers a public address first and loopback afterwards."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, host: str, port: int) -> list[str]:
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return answer


def _public_app(listener: Canary) -> Starlette:
    async def ok(request: Request) -> Response:
        return PlainTextResponse("fine")

    async def big(request: Request) -> Response:
        return PlainTextResponse("x" * 300_000)

    def to(location: str) -> Any:
        async def redirect(request: Request) -> Response:
            return RedirectResponse(location, status_code=302)

        return redirect

    port = listener.port
    return Starlette(
        routes=[
            Route("/ok", ok),
            Route("/big", big),
            Route("/to-loopback", to(f"http://127.0.0.1:{port}/")),
            Route("/to-localhost", to(f"http://localhost:{port}/")),
            Route("/to-hex", to(f"http://0x7f000001:{port}/")),
            Route("/to-mapped", to(f"http://[::ffff:127.0.0.1]:{port}/")),
            Route("/to-metadata", to("http://169.254.169.254/latest/meta-data/")),
            Route("/to-public", to("http://public.test/ok")),
        ]
    )


@pytest.fixture
def public() -> Iterator[tuple[str, Canary]]:
    with canary() as listener, serve_asgi(_public_app(listener)) as base:
        yield base, listener


def _client(policy: EgressPolicy, route: PublicRoute) -> httpx.Client:
    return httpx.Client(
        transport=policy.transport(network_backend=route), follow_redirects=True, trust_env=False, timeout=5
    )


def test_connects_to_the_checked_address_not_the_name(public: tuple[str, Canary]) -> None:
    base, listener = public
    route = PublicRoute(int(base.rsplit(":", 1)[1]))
    dns = Rebinding([PUBLIC_IP], ["127.0.0.1"])
    policy = EgressPolicy(schemes=("http", "https"), resolve=dns)
    with _client(policy, route) as client:
        assert client.get("http://public.test/ok").text == "fine"
        # The pooled connection is reused: no second resolution, nothing rebinds under it.
        assert client.get("http://public.test/ok").text == "fine"
    assert route.connected == [PUBLIC_IP]
    assert dns.calls == 1
    # A new connection resolves again: this time the answer is loopback, and it is refused.
    with _client(policy, route) as client, pytest.raises(EgressDenied) as info:
        client.get("http://public.test/ok")
    assert info.value.fields["reason"] == "loopback"
    assert route.connected == [PUBLIC_IP]
    assert listener.connections == 0


def test_one_private_answer_refuses_the_name(public: tuple[str, Canary]) -> None:
    base, _ = public
    route = PublicRoute(int(base.rsplit(":", 1)[1]))
    policy = EgressPolicy(schemes=("http",), resolve=Rebinding([PUBLIC_IP, "10.0.0.7"]))
    with _client(policy, route) as client, pytest.raises(EgressDenied) as info:
        client.get("http://public.test/ok")
    assert info.value.fields["reason"] == "private"
    assert route.connected == []


@pytest.mark.parametrize("path", ["/to-loopback", "/to-localhost", "/to-hex", "/to-mapped", "/to-metadata"])
def test_every_redirect_hop_is_checked(public: tuple[str, Canary], path: str) -> None:
    base, listener = public
    route = PublicRoute(int(base.rsplit(":", 1)[1]))
    policy = EgressPolicy(
        schemes=("http",), resolve=lambda host, port: [PUBLIC_IP] if host == "public.test" else ["127.0.0.1"]
    )
    with _client(policy, route) as client, pytest.raises(EgressDenied):
        client.get(f"http://public.test{path}")
    assert route.connected == [PUBLIC_IP]
    assert listener.connections == 0


def test_redirect_to_another_public_host_is_followed(public: tuple[str, Canary]) -> None:
    base, _ = public
    route = PublicRoute(int(base.rsplit(":", 1)[1]))
    policy = EgressPolicy(schemes=("http",), resolve=lambda host, port: [PUBLIC_IP])
    with _client(policy, route) as client:
        assert client.get("http://public.test/to-public").text == "fine"


def test_response_bytes_are_capped(public: tuple[str, Canary]) -> None:
    base, _ = public
    route = PublicRoute(int(base.rsplit(":", 1)[1]))
    policy = EgressPolicy(
        schemes=("http",), resolve=lambda host, port: [PUBLIC_IP], max_response_bytes=100_000
    )
    with _client(policy, route) as client, pytest.raises(EgressDenied) as info:
        client.get("http://public.test/big")
    assert info.value.code == "egress_response_too_large"


def test_scheme_outside_the_policy_is_refused_before_any_connection(public: tuple[str, Canary]) -> None:
    base, _ = public
    route = PublicRoute(int(base.rsplit(":", 1)[1]))
    policy = EgressPolicy(resolve=lambda host, port: [PUBLIC_IP])
    with _client(policy, route) as client, pytest.raises(EgressDenied) as info:
        client.get("http://public.test/ok")
    assert info.value.fields["reason"] == "scheme"
    assert route.connected == []


class AsyncPublicRoute(httpcore.AsyncNetworkBackend):
    def __init__(self, target_port: int) -> None:
        self.connected: list[str] = []
        self._port = target_port
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.connected.append(host)
        if host != PUBLIC_IP:
            raise AssertionError(f"the policy let a connection to {host} through")
        return await self._inner.connect_tcp("127.0.0.1", self._port, timeout, local_address, socket_options)


@pytest.mark.anyio
async def test_async_transport_checks_the_same_way(public: tuple[str, Canary]) -> None:
    base, listener = public
    route = AsyncPublicRoute(int(base.rsplit(":", 1)[1]))
    dns = Rebinding([PUBLIC_IP], ["127.0.0.1"])
    policy = EgressPolicy(schemes=("http",), resolve=dns)
    transport = policy.async_transport(network_backend=route)
    async with httpx.AsyncClient(transport=transport, follow_redirects=True, trust_env=False) as client:
        assert (await client.get("http://public.test/ok")).text == "fine"
        with pytest.raises(EgressDenied):
            await client.get("http://public.test/to-loopback")
    async with httpx.AsyncClient(transport=policy.async_transport(network_backend=route)) as client:
        with pytest.raises(EgressDenied):
            await client.get("http://public.test/ok")  # the DNS answer changed to loopback
    assert route.connected == [PUBLIC_IP]
    assert listener.connections == 0


def test_jwks_fetches_go_through_the_egress_policy() -> None:
    from mudrika.errors import IdpUnavailable
    from mudrika.trust.keycloak.jwks import JwksCache

    with canary() as listener:
        # An IdP name that (per its DNS) points at this machine, and hex spelling of loopback.
        rebound = EgressPolicy(resolve=lambda host, port: ["127.0.0.1"])
        for uri, egress in (
            (f"https://idp.example:{listener.port}/certs", rebound),
            (f"https://0x7f000001:{listener.port}/certs", None),
        ):
            cache = JwksCache(jwks_uri=uri, algorithms={"RS256"}, egress=egress)
            try:
                with pytest.raises(IdpUnavailable):
                    cache.key_for("k1")
            finally:
                cache.close()
        assert listener.connections == 0
