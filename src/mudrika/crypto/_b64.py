"""Strict unpadded base64url (RFC 4648 §5, as JOSE uses it: RFC 7515 §2).

Why strict: ``base64.urlsafe_b64decode`` silently accepts padding, whitespace-free garbage after
``=`` and non-canonical trailing bits, so two different strings could decode to the same bytes.  A
signature or hash that can be spelled two ways is a malleability bug; we accept exactly one spelling.
"""

from __future__ import annotations

import base64
import binascii
import re

from mudrika.errors import InvalidInput

__all__ = ["b64url_decode", "b64url_encode"]

_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str | bytes, *, max_len: int = 1 << 20) -> bytes:
    """Decode unpadded base64url, rejecting padding, foreign characters and non-canonical encodings."""
    if isinstance(text, bytes):
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError:
            raise InvalidInput("base64url value is not ASCII", code="bad_base64url") from None
    if len(text) > max_len:
        raise InvalidInput("base64url value too long", code="too_large", limit=max_len)
    if len(text) % 4 == 1 or _ALPHABET.fullmatch(text) is None:
        raise InvalidInput("malformed base64url value", code="bad_base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidInput("malformed base64url value", code="bad_base64url") from None
    if b64url_encode(data) != text:
        raise InvalidInput("non-canonical base64url value", code="bad_base64url")
    return data
