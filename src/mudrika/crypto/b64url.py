"""Strict unpadded base64url (RFC 4648 §5, as JOSE uses it: RFC 7515 §2).

Why strict: ``base64.urlsafe_b64decode`` silently accepts padding, whitespace-free garbage after
``=`` and non-canonical trailing bits, so two different strings could decode to the same bytes.  A
signature or hash that can be spelled two ways is a malleability bug; we accept exactly one spelling.
"""

from __future__ import annotations

import binascii

from mudrika.errors import InvalidInput

__all__ = ["b64url_decode", "b64url_encode"]

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_VALUE = {chr(byte): index for index, byte in enumerate(_ALPHABET)}
_SPARE_BITS = {2: 0x0F, 3: 0x03}
_PADDING = {0: b"", 2: b"==", 3: b"="}


def b64url_encode(data: bytes) -> str:
    # binascii directly: ``base64.urlsafe_b64encode`` is two Python calls around the same C code.
    return binascii.b2a_base64(data, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode("ascii")


def b64url_decode(text: str | bytes, *, max_len: int = 1 << 20) -> bytes:
    """Decode unpadded base64url, rejecting padding, foreign characters and non-canonical encodings."""
    if isinstance(text, bytes):
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError:
            raise InvalidInput("base64url value is not ASCII", code="bad_base64url") from None
    if len(text) > max_len:
        raise InvalidInput("base64url value too long", code="too_large", limit=max_len)
    remainder = len(text) % 4
    if remainder == 1 or not text.isascii():
        raise InvalidInput("malformed base64url value", code="bad_base64url")
    data = text.encode("ascii")
    # Deleting every alphabet byte leaves exactly the foreign ones (one C pass, cheaper
    # than a regular expression over a kilobyte-sized JWT segment).
    if data.translate(None, _ALPHABET):
        raise InvalidInput("malformed base64url value", code="bad_base64url")
    # Canonical form (RFC 4648 §3.5): the bits of the last character that fall beyond the final byte
    # must be zero, otherwise several strings would decode to the same bytes.
    if remainder and _VALUE[text[-1]] & _SPARE_BITS[remainder]:
        raise InvalidInput("non-canonical base64url value", code="bad_base64url")
    return binascii.a2b_base64(data.translate(_TO_STANDARD) + _PADDING[remainder])
