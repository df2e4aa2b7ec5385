"""NonceIssuer: MAC-bound, expiring, audience-bound, single-use nonces."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    ReplayError,
    UnavailableError,
    VerificationError,
)
from mudrika.stores.nonces import NonceIssuer
from mudrika.stores.replay import MemoryReplayStore
from tests._support.tokenfactory import T0, Clock

SECRET = bytes(range(32))
OTHER_SECRET = bytes(range(1, 33))
AUD = "did:web:merchant.example"


class CountingStore(MemoryReplayStore):
    """Counts how often the store is asked, to show rejected nonces never reach it."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock=clock)
        self.calls = 0

    def claim(self, key: str, expires_at: float) -> bool:
        self.calls += 1
        return super().claim(key, expires_at)


@pytest.fixture
def store(clock: Clock) -> CountingStore:
    return CountingStore(clock)


@pytest.fixture
def issuer(store: CountingStore, clock: Clock) -> NonceIssuer:
    return NonceIssuer(SECRET, store, clock=clock)


def _decode(nonce: str) -> bytes:
    return base64.urlsafe_b64decode(nonce + "=" * (-len(nonce) % 4))


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_issue_then_consume_once(issuer: NonceIssuer) -> None:
    nonce = issuer.issue(AUD)
    issuer.consume(nonce, AUD)
    with pytest.raises(ReplayError) as info:
        issuer.consume(nonce, AUD)
    assert info.value.code == "replay"


def test_nonces_are_fresh_and_url_safe(issuer: NonceIssuer) -> None:
    nonces = {issuer.issue(AUD) for _ in range(200)}
    assert len(nonces) == 200
    for nonce in nonces:
        assert len(nonce) == 98
        assert _encode(_decode(nonce)) == nonce
    # 16 random bytes after the version byte differ between two nonces issued at the same instant.
    a, b = (_decode(n) for n in list(nonces)[:2])
    assert a[1:17] != b[1:17]


def test_layout_is_documented_layout(issuer: NonceIssuer) -> None:
    raw = _decode(issuer.issue(AUD, ttl=120))
    assert raw[0] == 1
    assert int.from_bytes(raw[17:25], "big") == (T0 + 120) * 1000
    assert raw[25:41] == hashlib.sha256(b"mudrika-nonce-aud\x00" + AUD.encode()).digest()[:16]
    assert raw[41:] == hmac.new(SECRET, b"mudrika-nonce-v1\x00" + raw[:41], hashlib.sha256).digest()


def test_expired(issuer: NonceIssuer, clock: Clock, store: CountingStore) -> None:
    nonce = issuer.issue(AUD, ttl=60)
    clock.now = T0 + 60
    with pytest.raises(ExpiredError) as info:
        issuer.consume(nonce, AUD)
    assert info.value.code == "nonce_expired"
    assert store.calls == 0


def test_leeway_absorbs_skew(store: CountingStore, clock: Clock) -> None:
    issuer = NonceIssuer(SECRET, store, clock=clock, leeway=10)
    nonce = issuer.issue(AUD, ttl=60)
    clock.now = T0 + 69
    issuer.consume(nonce, AUD)
    late = issuer.issue(AUD, ttl=60)
    clock.now += 70
    with pytest.raises(ExpiredError):
        issuer.consume(late, AUD)


def test_wrong_audience_is_a_binding_error_and_does_not_burn_the_nonce(
    issuer: NonceIssuer, store: CountingStore
) -> None:
    nonce = issuer.issue(AUD)
    with pytest.raises(BindingError) as info:
        issuer.consume(nonce, "did:web:attacker.example")
    assert info.value.code == "nonce_audience"
    assert store.calls == 0
    issuer.consume(nonce, AUD)


@pytest.mark.parametrize(
    ("start", "end"),
    [(0, 1), (1, 17), (17, 25), (25, 41), (41, 73)],
    ids=["ver", "rand", "exp", "aud", "mac"],
)
def test_any_flipped_bit_is_unknown(issuer: NonceIssuer, store: CountingStore, start: int, end: int) -> None:
    raw = bytearray(_decode(issuer.issue(AUD)))
    raw[end - 1] ^= 0x01
    with pytest.raises(VerificationError) as info:
        issuer.consume(_encode(bytes(raw)), AUD)
    assert info.value.code == "unknown_nonce"
    assert type(info.value) is VerificationError
    assert store.calls == 0


def test_extending_the_expiry_is_detected(issuer: NonceIssuer) -> None:
    raw = bytearray(_decode(issuer.issue(AUD, ttl=10)))
    raw[17:25] = int((T0 + 10_000) * 1000).to_bytes(8, "big")
    with pytest.raises(VerificationError) as info:
        issuer.consume(_encode(bytes(raw)), AUD)
    assert info.value.code == "unknown_nonce"


def test_other_secret_is_unknown_and_rotation_accepts_previous(clock: Clock) -> None:
    old = NonceIssuer(OTHER_SECRET, MemoryReplayStore(clock=clock), clock=clock)
    nonce = old.issue(AUD)
    store = MemoryReplayStore(clock=clock)
    current_only = NonceIssuer(SECRET, store, clock=clock)
    with pytest.raises(VerificationError) as info:
        current_only.consume(nonce, AUD)
    assert info.value.code == "unknown_nonce"
    rotated = NonceIssuer(SECRET, store, previous_secrets=[OTHER_SECRET], clock=clock)
    rotated.consume(nonce, AUD)
    with pytest.raises(ReplayError):
        rotated.consume(nonce, AUD)
    # New nonces are signed with the current secret only.
    fresh = rotated.issue(AUD)
    with pytest.raises(VerificationError):
        NonceIssuer(OTHER_SECRET, store, clock=clock).consume(fresh, AUD)


@pytest.mark.parametrize(
    "bad",
    ["", "A" * 98, "A" * 97, "A" * 99, "!" * 98, 12345, None, "=" * 98],
)
def test_malformed_is_unknown(issuer: NonceIssuer, bad: object) -> None:
    with pytest.raises(VerificationError) as info:
        issuer.consume(bad, AUD)  # type: ignore[arg-type]
    assert info.value.code == "unknown_nonce"


def test_non_canonical_spelling_is_unknown(issuer: NonceIssuer) -> None:
    nonce = issuer.issue(AUD)
    # 73 bytes leave 2 unused low bits in the last character; setting them spells the same bytes.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(nonce[-1])
    twin = nonce[:-1] + alphabet[last | 0b01]
    assert twin != nonce
    assert _decode(twin) == _decode(nonce)
    with pytest.raises(VerificationError):
        issuer.consume(twin, AUD)
    issuer.consume(nonce, AUD)


def test_store_down_propagates_unavailable(clock: Clock) -> None:
    store = MemoryReplayStore(clock=clock)
    issuer = NonceIssuer(SECRET, store, clock=clock)
    nonce = issuer.issue(AUD)
    store.close()
    with pytest.raises(UnavailableError):
        issuer.consume(nonce, AUD)


def test_claim_is_held_until_expiry(issuer: NonceIssuer, clock: Clock) -> None:
    nonce = issuer.issue(AUD, ttl=100)
    issuer.consume(nonce, AUD)
    clock.now = T0 + 99
    with pytest.raises(ReplayError):
        issuer.consume(nonce, AUD)
    clock.now = T0 + 100
    with pytest.raises(ExpiredError):
        issuer.consume(nonce, AUD)


@pytest.mark.anyio
async def test_aconsume(issuer: NonceIssuer) -> None:
    nonce = issuer.issue(AUD)
    await issuer.aconsume(nonce, AUD)
    with pytest.raises(ReplayError):
        await issuer.aconsume(nonce, AUD)


def test_secret_never_in_repr(issuer: NonceIssuer) -> None:
    text = repr(issuer) + str(vars(issuer).get("_store"))
    assert SECRET.hex() not in text
    assert repr(SECRET) not in text
    assert "secret" not in repr(issuer).lower()


def test_config_checks(store: CountingStore) -> None:
    with pytest.raises(InvalidInput) as info:
        NonceIssuer(b"short", store)
    assert info.value.code == "weak_secret"
    with pytest.raises(InvalidInput):
        NonceIssuer(SECRET, store, previous_secrets=[b"short"])
    with pytest.raises(InvalidInput):
        NonceIssuer(SECRET, store, leeway=31)
    issuer = NonceIssuer(SECRET, store, max_ttl=600)
    for ttl in (0, -1, 601, float("nan"), float("inf")):
        with pytest.raises(InvalidInput) as info:
            issuer.issue(AUD, ttl=ttl)
        assert info.value.code == "nonce_ttl_invalid"
    for audience in ("", "a" * 513, "\udc00"):
        with pytest.raises(InvalidInput) as info:
            issuer.issue(audience)
        assert info.value.code == "nonce_audience_invalid"


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=120) | st.from_regex(r"[A-Za-z0-9_-]{98}", fullmatch=True))
def test_never_issued_is_refused(candidate: str) -> None:
    clock = Clock(T0)
    store = MemoryReplayStore(clock=clock)
    issuer = NonceIssuer(SECRET, store, clock=clock)
    with pytest.raises(VerificationError):
        issuer.consume(candidate, AUD)
    assert len(store) == 0
