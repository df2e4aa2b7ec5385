"""Multibase (base58btc, prefix ``z``) and multicodec unsigned varints, as did:key and Multikey use them.

Why hand-written: it is forty lines, it sits on the path of every did:key resolution, and the
multiformats packages pull in far more than we need.  Specs: draft-multiformats-multibase (base58btc
uses the Bitcoin alphabet, each leading zero byte is one leading '1'), multicodec unsigned-varint.
"""

from __future__ import annotations

from mudrika.errors import InvalidInput

__all__ = ["base58btc_decode", "base58btc_encode", "varint_decode", "varint_encode"]

_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
#: Byte -> digit value for ``bytes.translate``; 0xFF marks a byte outside the alphabet.  One C-level
#: pass maps and (with one ``in`` test) validates the whole value, leaving only the arithmetic to Python.
_DIGITS = bytes(_ALPHABET.index(chr(byte)) if chr(byte) in _ALPHABET else 0xFF for byte in range(256))
_MAX_INPUT = 4096


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
    number = 0
    for value in digits:
        number = number * 58 + value
    zeros = len(digits) - len(digits.lstrip(b"\0"))  # each leading '1' (digit 0) is one zero byte
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * zeros + body


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
