"""Strict base64url: the size cap every caller gets by default, and why a refusal says what it says.

Why a file of its own: every JWS segment, Disclosure, JWK coordinate and status list goes through
:func:`~mudrika.crypto.b64url.b64url_decode`, most of them without naming a cap, so the default cap
is a limit on attacker input that must hold exactly where it is documented (1 MiB of text), not
"somewhere near".  The mutation check (scripts/mutation.py) found that no test pinned it.
"""

from __future__ import annotations

import pytest

from mudrika.crypto.b64url import b64url_decode
from mudrika.errors import InvalidInput

_DEFAULT_CAP = 1 << 20


def test_the_default_cap_admits_exactly_one_mebibyte_of_text() -> None:
    # 1 MiB of "A" is a whole number of base64 quanta, so it decodes (to zero bytes, 3/4 as many).
    decoded = b64url_decode("A" * _DEFAULT_CAP)
    assert decoded == bytes(_DEFAULT_CAP // 4 * 3)


def test_the_default_cap_refuses_one_quantum_more() -> None:
    with pytest.raises(InvalidInput) as info:
        b64url_decode("A" * (_DEFAULT_CAP + 4))
    assert info.value.code == "too_large"
    assert info.value.fields["limit"] == _DEFAULT_CAP


@pytest.mark.parametrize("cap", [4, 8, 1024])
def test_a_value_as_long_as_the_cap_is_admitted_and_one_longer_is_not(cap: int) -> None:
    assert b64url_decode("A" * cap, max_len=cap) == bytes(cap // 4 * 3)
    with pytest.raises(InvalidInput) as info:
        b64url_decode("A" * (cap + 4), max_len=cap)
    assert info.value.code == "too_large"


def test_the_cap_applies_to_bytes_input_as_well() -> None:
    with pytest.raises(InvalidInput) as info:
        b64url_decode(b"A" * 12, max_len=8)
    assert info.value.code == "too_large"


@pytest.mark.parametrize("raw", [b"AA\xff\xfe", b"\xc3\xa9AA", b"AAA\x80"])
def test_non_ascii_bytes_are_refused_as_such(raw: bytes) -> None:
    """Bytes that are not ASCII cannot be base64url; the refusal says so (a caller debugging a
    header read as Latin-1 learns what is wrong with it, not merely that it is "malformed")."""
    with pytest.raises(InvalidInput) as info:
        b64url_decode(raw)
    assert info.value.code == "bad_base64url"
    assert "not ASCII" in str(info.value)
