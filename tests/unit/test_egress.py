"""The egress policy: which addresses are refused, how names are resolved once and connected to by
address, and that redirects and body sizes are checked on every hop.

"Public" hosts are simulated: a stub resolver answers a documentation-free public address and a
recording socket layer sends that connection to a uvicorn server on 127.0.0.1, so no packet ever
leaves the machine while the policy sees exactly what it would see on the Internet.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from mudrika.errors import EgressDenied, InvalidInput, VerificationError
from mudrika.net.egress import EgressPolicy, refusal_reason
from tests._support.served import Canary, canary, serve_asgi

PUBLIC_IP = "93.184.215.14"  # a global unicast address; never actually contacted (see PublicRoute)


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
        ("192.0.2.1", "reserved"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "ipv4_mapped:loopback"),
        ("::ffff:8.8.8.8", "ipv4_mapped:public"),
        ("::127.0.0.1", "ipv4_compatible:loopback"),
        ("64:ff9b::7f00:1", "nat64:loopback"),
        ("64:ff9b::a9fe:a9fe", "nat64:metadata"),
        ("2002:7f00:1::", "6to4:loopback"),
        ("2002:a00:1::", "6to4:private"),
        ("2001::1", "teredo"),
        ("fc00::1", "unique_local"),
        ("fd00:ec2::254", "metadata"),
        ("fe80::1", "link_local"),
        ("fec0::1", "site_local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "reserved"),
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
