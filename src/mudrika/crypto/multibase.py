"""Multibase (base58btc, prefix ``z``) and multicodec unsigned varints, as did:key and Multikey use them.

Why hand-written: it is forty lines, it sits on the path of every did:key resolution, and the
multiformats packages pull in far more than we need.  Specs: draft-multiformats-multibase (base58btc
uses the Bitcoin alphabet, each leading zero byte is one leading '1'), multicodec unsigned-varint.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Final

from mudrika.errors import InvalidInput

__all__ = [
    "PUBLIC_KEY_CODECS",
    "base58btc_decode",
    "base58btc_encode",
    "multikey_decode",
    "multikey_encode",
    "varint_decode",
    "varint_encode",
]

_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
#: Byte -> digit value for ``bytes.translate``; 0xFF marks a byte outside the alphabet.  One C-level
#: pass maps and (with one ``in`` test) validates the whole value, leaving only the arithmetic to Python.
_DIGITS = bytes(_ALPHABET.index(chr(byte)) if chr(byte) in _ALPHABET else 0xFF for byte in range(256))
_MAX_INPUT = 4096
#: Two base58 digits -> their value (58 * first + second), indexed by the two digit bytes read as one
#: native unsigned 16-bit integer.  With it the decoder consumes four digits per step (one 32-bit
#: read, two lookups) instead of one, which is most of its cost on a did:key.  Digit bytes above 57
#: never reach it (the alphabet check comes first), so the entries for them are never read.
_PAIRS: Final = (
    [(index & 0xFF) * 58 + (index >> 8) for index in range(65536)] if sys.byteorder == "little" else []
)
_FOUR_DIGITS: Final = 58**4
_PAIR: Final = 58**2

#: multiformats/multicodec table.csv, the signing-key codes (ed25519-pub, secp256k1-pub, p256-pub,
#: rsa-pub), by :class:`mudrika.crypto.keys.KeyType` value.  One table for Multikey, did:key and the
#: did:bindu agent id, which all hash or encode exactly these prefixed bytes.
PUBLIC_KEY_CODECS: Final[Mapping[str, int]] = {
    "ed25519": 0xED,
    "secp256k1": 0xE7,
    "p256": 0x1200,
    "rsa": 0x1205,
}


def base58btc_encode(data: bytes) -> str:
    zeros = len(data) - len(data.lstrip(b"\0"))
    number = int.from_bytes(data, "big")
    digits: list[str] = []
    while number:
        number, rem = divmod(number, 58)
        digits.append(_ALPHABET[rem])
    return "1" * zeros + "".join(reversed(digits))


def base58btc_decode(text: str) -> bytes:
    if len(text) > _MAX_INPUT:
        raise InvalidInput("base58 value too long", code="too_large", limit=_MAX_INPUT)
    try:
        digits = text.encode("ascii").translate(_DIGITS)
    except UnicodeEncodeError:
        raise InvalidInput("invalid base58btc character", code="bad_multibase") from None
    if b"\xff" in digits:
        raise InvalidInput("invalid base58btc character", code="bad_multibase")
    if _PAIRS:
        # _digits_value_slow four digits a step (most of a did:key's decoding).  Leading zero digits
        # make whole groups of four and change nothing; each 32-bit word holds the first pair of its
        # four digits in its low half on a little-endian machine.
        padding = -len(digits) % 4
        pairs = _PAIRS
        number = 0
        for word in memoryview(b"\0" * padding + digits if padding else digits).cast("I"):
            number = number * _FOUR_DIGITS + pairs[word & 0xFFFF] * _PAIR + pairs[word >> 16]
    else:
        number = _digits_value_slow(digits)
    zeros = len(digits) - len(digits.lstrip(b"\0"))  # each leading '1' (digit 0) is one zero byte
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * zeros + body


def _digits_value_slow(digits: bytes) -> int:
    """The number base58 ``digits`` (values 0-57) spell, most significant first: one digit a step."""
    number = 0
    for value in digits:
        number = number * 58 + value
    return number


def varint_encode(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def varint_decode(data: bytes) -> tuple[int, int]:
    """Return (value, bytes consumed); rejects over-long and non-minimal encodings (max 9 bytes)."""
    value = 0
    for index, byte in enumerate(data[:9]):
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            if index > 0 and byte == 0:
                raise InvalidInput("non-minimal varint", code="bad_multicodec")
            return value, index + 1
    raise InvalidInput("truncated or over-long varint", code="bad_multicodec")


def multikey_encode(codec: int, raw: bytes) -> str:
    """A Multikey ``publicKeyMultibase`` value: ``'z'`` + base58btc(varint(codec) || raw key)."""
    return "z" + base58btc_encode(varint_encode(codec) + raw)


def multikey_decode(value: str) -> tuple[int, bytes]:
    """The multicodec and the raw key bytes of a Multikey value (base58btc, ``'z'`` prefix).

    Shared by every key type that travels as Multikey (the signing keys and X25519), so that each
    refuses a foreign multibase prefix or a bad varint in the same way; which codecs are acceptable
    is the caller's decision.
    """
    if not isinstance(value, str) or not value.startswith("z"):
        raise InvalidInput("Multikey must be base58btc multibase ('z' prefix)", code="bad_multibase")
    data = base58btc_decode(value[1:])
    codec, used = varint_decode(data)
    return codec, data[used:]
