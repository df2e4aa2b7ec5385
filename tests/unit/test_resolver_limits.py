"""Resolver drivers are chosen by configuration; network failures are cached briefly and fetches are
rate-limited per DID and per host, so attacker-chosen DIDs cannot turn resolution into a scanner."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mudrika.errors import DocumentError, EgressDenied, InvalidInput, ResolutionError
from mudrika.identity.did import DID, parse_did
from mudrika.identity.methods.web import WebDriver
from mudrika.identity.resolution import ResolutionResult
from mudrika.identity.resolver import DidkitDriver, DIDResolver
from mudrika.net.egress import EgressPolicy
from tests._support.tokenfactory import Clock


class Unreachable:
    """A did:web driver whose every fetch fails the way an unreachable host does (and counts)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @property
    def methods(self) -> frozenset[str]:
        return frozenset({"web"})

    @property
    def uses_network(self) -> bool:
        return True

    def resolve(self, did: DID) -> ResolutionResult:
        self.calls.append(str(did))
        raise ResolutionError("DID document fetch failed", code="internalError", reason="transport")

    async def aresolve(self, did: DID) -> ResolutionResult:
        return self.resolve(did)


def test_failures_are_cached_for_the_negative_ttl() -> None:
    clock = Clock(100.0)
    driver = Unreachable()
    resolver = DIDResolver([driver], negative_ttl=30, clock=clock)
    for _ in range(5):
        with pytest.raises(ResolutionError) as info:
            resolver.resolve("did:web:down.example")
    assert driver.calls == ["did:web:down.example"]
    assert info.value.fields["cached"] is True
    clock.now += 30
    with pytest.raises(ResolutionError):
        resolver.resolve("did:web:down.example")
    assert len(driver.calls) == 2


def test_fetches_are_limited_per_did_and_per_host() -> None:
    clock = Clock(100.0)
    driver = Unreachable()
    resolver = DIDResolver(
        [driver], negative_ttl=0, max_fetches_per_did=2, max_fetches_per_host=3, rate_window=60, clock=clock
    )
    for _ in range(4):
        with pytest.raises(ResolutionError):
            resolver.resolve("did:web:victim.example")
    assert len(driver.calls) == 2  # per DID
    for path in ("a", "b", "c"):
        with pytest.raises(ResolutionError) as info:
            resolver.resolve(f"did:web:victim.example:{path}")
    assert len(driver.calls) == 3  # per host: one more, then refused without a fetch
    assert info.value.fields["reason"] == "rate_limited"
    clock.now += 60
    with pytest.raises(ResolutionError):
        resolver.resolve("did:web:victim.example:c")
    assert len(driver.calls) == 4


def test_the_per_host_limit_ignores_the_case_of_the_host() -> None:
    # DNS names are case-insensitive: VICTIM.example is the same server, so the same budget.
    clock = Clock(100.0)
    driver = Unreachable()
    resolver = DIDResolver([driver], negative_ttl=0, max_fetches_per_host=2, rate_window=60, clock=clock)
    spellings = ("did:web:victim.example", "did:web:VICTIM.example", "did:web:Victim.Example")
    reasons = []
    for did in spellings:
        with pytest.raises(ResolutionError) as info:
            resolver.resolve(did)
        reasons.append(info.value.fields["reason"])
    assert reasons == ["transport", "transport", "rate_limited"]
    assert driver.calls == list(spellings[:2])


def test_egress_refusals_are_cached_too() -> None:
    resolver = DIDResolver(egress=EgressPolicy())
    for _ in range(3):
        with pytest.raises(EgressDenied):
            resolver.resolve("did:web:localhost%3A9")
    with pytest.raises(EgressDenied) as info:
        resolver.resolve("did:web:localhost%3A9")
    assert info.value.fields["cached"] is True


def test_didkit_is_opt_in() -> None:
    with pytest.raises(DocumentError) as info:
        DIDResolver().resolve("did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a")
    assert info.value.code == "methodNotSupported"
    assert "reason" not in info.value.fields  # not even tried


def test_didkit_when_enabled_but_missing_degrades_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "didkit", None)
    with pytest.raises(DocumentError) as info:
        DIDResolver(didkit_methods={"pkh"}).resolve(
            "did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a"
        )
    assert info.value.code == "methodNotSupported"


def test_default_did_web_driver_uses_the_strict_policy() -> None:
    with pytest.raises(EgressDenied) as info:
        WebDriver().resolve(parse_did("did:web:localhost%3A9"))
    assert info.value.fields["reason"] == "loopback"


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda: DidkitDriver(set()), ""),
        (lambda: DidkitDriver("pkh"), ""),  # a string is not a list of methods
        (lambda: DidkitDriver({"PKH"}), "PKH"),
        (lambda: DidkitDriver({"web"}), "web"),  # did:web only through the egress policy
        (lambda: DIDResolver(didkit_methods={"pkh", "web"}), "web"),
        (lambda: DIDResolver(didkit_methods={"key"}), "key"),  # already has a driver
    ],
)
def test_didkit_is_configured_only_for_methods_named_and_never_for_did_web(make: Any, named: str) -> None:
    with pytest.raises(InvalidInput) as info:
        make()
    assert info.value.code == "bad_config"
    assert named in info.value.fields.get("methods", "")


@pytest.mark.parametrize(
    "did",
    [
        "did:onion:fscst5exmlmr262byztwz4kzhggjlzumvc2ndvgytzoucr2tkgxf7mid",
        "did:ion:EiClkZMDxPKqC9c-umQfTkR8vvZ9JPhl_xLDI9Nfk38w5w",
        "did:unknownmethod:abc",
    ],
)
def test_a_method_nobody_named_is_refused_before_didkit_is_even_loaded(
    did: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: list[str] = []

    def load_didkit() -> Any:
        loaded.append(did)
        raise AssertionError("didkit must not be asked about a method nobody named")

    monkeypatch.setattr("mudrika.identity.resolver._didkit.load_didkit", load_didkit)
    with pytest.raises(DocumentError) as info:
        DIDResolver(didkit_methods={"pkh"}).resolve(did)
    assert info.value.code == "methodNotSupported"
    assert "no driver is configured" in info.value.message
    assert loaded == []
