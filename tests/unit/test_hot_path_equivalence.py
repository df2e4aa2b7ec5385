"""The fast paths of the cart / chain verifier's pass path must decide exactly as the full checks.

Each shortcut (ASCII replay keys, float deadlines, NumericDates of exact ``int``/``float`` type, a
group of JWS phases recorded in one call, base64url through ``binascii``, the replay-key digest
shared by the jti and the KB nonce) is pinned here against the rule it stands for, on both sides
of every boundary the full path checks.
"""

from __future__ import annotations

import base64
import hashlib
import math
from decimal import Decimal, Inexact, Rounded, localcontext
from enum import IntEnum
from typing import Any

import pytest

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.errors import InvalidInput
from mudrika.payments._values import exact_sum
from mudrika.payments.chain import kb_nonce_key, merchant_jti_key
from mudrika.payments.chain._common import numeric_date, single_use_key
from mudrika.payments.report import Check, Recorder, Texts
from mudrika.stores.replay import MAX_KEY_BYTES, MemoryReplayStore
from tests._support.tokenfactory import T0, Clock

# -- replay keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["k", "a" * MAX_KEY_BYTES, "é" * (MAX_KEY_BYTES // 2), "ap2:jti:" + "A" * 43],
    ids=["one-byte", "ascii-at-limit", "utf8-at-limit", "verifier-key"],
)
def test_a_key_within_the_limit_is_claimed_once(key: str) -> None:
    store = MemoryReplayStore(clock=Clock(T0))
    assert store.claim(key, T0 + 60.0) is True
    assert store.claim(key, T0 + 60.0) is False


@pytest.mark.parametrize(
    ("key", "code", "size"),
    [
        ("a" * (MAX_KEY_BYTES + 1), "replay_key_too_long", MAX_KEY_BYTES + 1),
        ("é" * (MAX_KEY_BYTES // 2) + "a", "replay_key_too_long", MAX_KEY_BYTES + 1),
        ("", "replay_key_empty", None),
        ("\ud800", "replay_key_invalid", None),
        (b"bytes", "replay_key_invalid", None),
    ],
    ids=["ascii-over", "utf8-over", "empty", "lone-surrogate", "bytes"],
)
def test_a_key_outside_the_rule_is_refused_with_its_code(key: Any, code: str, size: int | None) -> None:
    store = MemoryReplayStore(clock=Clock(T0))
    with pytest.raises(InvalidInput) as refused:
        store.claim(key, T0 + 60.0)
    assert refused.value.code == code
    if size is not None:
        assert refused.value.fields["got"] == size
    assert len(store) == 0


def test_a_text_subclass_key_takes_the_full_checks() -> None:
    class Key(str):
        pass

    store = MemoryReplayStore(clock=Clock(T0))
    assert store.claim(Key("jti:x"), T0 + 60.0) is True
    assert store.claim("jti:x", T0 + 60.0) is False


# -- deadlines ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("expires_at", [T0 + 100.0, T0 + 100, T0 - 100.0, T0 - 100])
def test_a_claim_is_held_until_the_later_of_its_expiry_and_the_minimum_retention(expires_at: float) -> None:
    clock = Clock(T0)
    store = MemoryReplayStore(clock=clock, min_retention=30.0)
    assert store.claim("k", expires_at)
    held_until = max(float(expires_at), T0 + 30.0)
    clock.now = held_until - 0.001
    assert store.claim("k", expires_at) is False
    clock.now = held_until
    assert store.claim("k", held_until + 60.0) is True


@pytest.mark.parametrize(
    ("expires_at", "code"),
    [
        (math.nan, "replay_expiry_invalid"),
        (math.inf, "replay_expiry_invalid"),
        (-math.inf, "replay_expiry_invalid"),
        (True, "replay_expiry_invalid"),
        ("soon", "replay_expiry_invalid"),
        (T0 + 10.0 + 1e-3, "replay_expiry_too_far"),
    ],
    ids=["nan", "inf", "-inf", "bool", "text", "too-far"],
)
def test_a_deadline_outside_the_rule_is_refused(expires_at: Any, code: str) -> None:
    store = MemoryReplayStore(clock=Clock(T0), min_retention=5.0, max_ttl=10.0)
    with pytest.raises(InvalidInput) as refused:
        store.claim("k", expires_at)
    assert refused.value.code == code
    assert len(store) == 0


def test_a_deadline_exactly_max_ttl_ahead_is_accepted() -> None:
    store = MemoryReplayStore(clock=Clock(T0), min_retention=5.0, max_ttl=10.0)
    assert store.claim("float", T0 + 10.0)
    assert store.claim("int", int(T0) + 10)


# -- NumericDate -------------------------------------------------------------------------------------


class _Seconds(IntEnum):
    EPOCH = 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1_759_321_270, 1_759_321_270.0),
        (1_759_321_270.5, 1_759_321_270.5),
        (0, 0.0),
        (-1, -1.0),
        (_Seconds.EPOCH, 0.0),
        (True, None),
        (False, None),
        (math.nan, None),
        (math.inf, None),
        (-math.inf, None),
        ("1759321270", None),
        (None, None),
    ],
)
def test_numeric_date(value: Any, expected: float | None) -> None:
    result = numeric_date(value)
    assert result == expected
    assert result is None or type(result) is float


def test_numeric_date_of_an_integer_beyond_a_double_raises_as_before() -> None:
    with pytest.raises(OverflowError):
        numeric_date(10**400)


# -- recorder ----------------------------------------------------------------------------------------


def _pair(expected: str, got: str) -> Texts:
    return f"want {expected}", f"saw {got}"


def _nothing() -> Texts:
    return None, None


@pytest.mark.parametrize("validate", [False, True])
def test_checks_recorded_as_a_group_read_as_if_recorded_one_by_one(validate: bool) -> None:
    grouped = Recorder(validate=validate)
    grouped.passed("before", "user")
    grouped.passed_later_all(
        (("x.header", "merchant", None, _pair, ("a", "b")), ("x.signature", "merchant", "kid", _nothing, ()))
    )
    single = Recorder(validate=validate)
    single.passed("before", "user")
    single.passed_later("x.header", "merchant", _pair, "a", "b")
    single.passed_later("x.signature", "merchant", _nothing, key="kid")
    assert len(grouped) == len(single) == 3
    assert grouped.last_not_passed == single.last_not_passed == -1
    assert grouped.all_passed
    assert grouped.all_passed_since(0)
    assert grouped.checks == single.checks
    assert grouped.checks[1] == Check("x.header", "passed", "merchant", "want a", "saw b")


def test_last_not_passed_moves_only_when_a_check_does_not_pass() -> None:
    rec = Recorder()
    mark = rec.last_not_passed
    rec.passed("a", "user")
    assert rec.last_not_passed == mark
    rec.check("b", "user", False, error="binding", code="c")
    assert rec.last_not_passed == 1
    mark = rec.last_not_passed
    rec.skip([("c", "user")], because="b failed")
    assert rec.last_not_passed == 2 != mark
    assert rec.all_passed_since(3)
    assert not rec.all_passed_since(2)


# -- digests and encodings ----------------------------------------------------------------------------


def _documented_key(namespace: str, first: str, second: str) -> str:
    """docs/payments.md: the namespace, then base64url(SHA-256(first NUL second)) without padding."""
    digest = hashlib.sha256(first.encode("utf-8") + b"\x00" + second.encode("utf-8")).digest()
    return namespace + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


@pytest.mark.parametrize(
    ("first", "second"), [("did:web:m.example", "jti-1"), ("https://p.example", "nonce é"), ("", "")]
)
def test_replay_keys_keep_their_documented_format(first: str, second: str) -> None:
    assert merchant_jti_key(first, second) == _documented_key("ap2:jti:", first, second)
    assert kb_nonce_key(first, second) == _documented_key("ap2:kb-nonce:", first, second)
    assert single_use_key("ns:", first, second) == _documented_key("ns:", first, second)
    assert len(merchant_jti_key(first, second)) == len("ap2:jti:") + 43


def test_replay_keys_of_distinct_values_differ_and_of_equal_values_agree() -> None:
    keys = {merchant_jti_key("did:web:m.example", f"jti-{index}") for index in range(200)}
    assert len(keys) == 200
    assert merchant_jti_key("did:web:m.example", "jti-7") in keys
    assert merchant_jti_key("did:web:a", "bc") != merchant_jti_key("did:web:ab", "c")


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"", ""),
        (b"f", "Zg"),
        (b"fo", "Zm8"),
        (b"foo", "Zm9v"),
        (b"foob", "Zm9vYg"),
        (b"fooba", "Zm9vYmE"),
        (b"foobar", "Zm9vYmFy"),  # RFC 4648 §10, unpadded
        (b"\xfb\xff\xbf", "-_-_"),  # the two characters base64url changes (RFC 4648 §5)
        (bytes(range(256)), base64.urlsafe_b64encode(bytes(range(256))).decode().rstrip("=")),
    ],
)
def test_b64url_encode(data: bytes, text: str) -> None:
    assert b64url_encode(data) == text
    assert b64url_decode(text) == data


# -- exact sums --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amounts", "text"),
    [
        ([], "0"),
        ([Decimal("120"), Decimal("18.49")], "138.49"),
        ([Decimal("1.20"), Decimal("2")], "3.20"),
        ([Decimal("-0")], "0"),
        ([Decimal("1E+3")], "1000"),
        ([Decimal("999999999999999999.999999999999999999")] * 3, "2999999999999999999.999999999999999997"),
    ],
)
def test_exact_sum_keeps_every_digit_and_the_same_spelling(amounts: list[Decimal], text: str) -> None:
    total = exact_sum(iter(amounts))
    assert str(total) == text
    with localcontext(prec=80):
        assert total == sum(amounts, Decimal(0))


def test_exact_sum_refuses_to_round() -> None:
    with pytest.raises((Inexact, Rounded)):
        exact_sum([Decimal("1E+60"), Decimal("1")])
