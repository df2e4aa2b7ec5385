"""SD-JWT Disclosures (RFC 9901 §4.2): salts, encoding, decoding and digests.

Why the digest is over the *encoded* string (§4.2.3): JSON has many spellings of one value, and the
Issuer's signature must commit to exactly one of them.  So a Disclosure is kept as the string it
arrived as, and every check is made against the digest of that string, never of a re-encoding.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.jcs import loads_strict
from mudrika.errors import InvalidInput

__all__ = [
    "SALT_BYTES",
    "SD_ALG",
    "DecodedDisclosure",
    "Disclosure",
    "SaltSource",
    "decode_disclosure",
    "decode_disclosures",
    "digest_of",
    "encode_disclosure",
    "random_salt",
]

#: The only ``_sd_alg`` mudrika issues or accepts (§4.1.1: implementations MUST support sha-256).
SD_ALG: Final = "sha-256"
#: 128 bits: the RECOMMENDED minimum for the random part of a salt (§9.3).
SALT_BYTES: Final = 16

SaltSource = Callable[[], str]


def random_salt() -> str:
    """A fresh salt: base64url of 128 bits from the OS CSPRNG (§4.2.1, §9.3)."""
    return b64url_encode(secrets.token_bytes(SALT_BYTES))


def digest_of(text: str) -> str:
    """base64url(SHA-256(US-ASCII bytes of ``text``)) — §4.2.3 for Disclosures, §4.3.1 for sd_hash."""
    return b64url_encode(hashlib.sha256(text.encode("ascii")).digest())


@dataclass(frozen=True, slots=True)
class Disclosure:
    """One Disclosure with where it sits: ``path`` is an RFC 6901 pointer into the processed claims.

    ``name`` is ``None`` for an array element (§4.2.2).  ``parent`` is the digest of the Disclosure
    whose value holds this one's digest (recursive disclosure, §4.2.6), or ``None`` when the digest
    sits in the Issuer-signed payload itself.  Salt, value and encoding are kept out of ``repr``:
    the salt must not leak beyond the Holder (§4.2.1) and the value is personal data.
    """

    digest: str
    path: str
    name: str | None
    parent: str | None
    encoded: str = field(repr=False)
    salt: str = field(repr=False)
    value: Any = field(repr=False)


def encode_disclosure(salt: str, name: str | None, value: Any) -> str:
    """Build ``[salt, name, value]`` (§4.2.1) or ``[salt, value]`` (§4.2.2) as base64url UTF-8 JSON."""
    if not isinstance(salt, str) or not salt:
        raise InvalidInput("salt must be a non-empty string", code="bad_salt")
    array: list[Any] = [salt, value] if name is None else [salt, name, value]
    try:
        text = json.dumps(array, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidInput("claim value is not JSON", code="unsupported_type") from None
    return b64url_encode(text.encode("utf-8"))


class DecodedDisclosure(NamedTuple):
    """One Disclosure as decoded, before it is placed (internal: never returned to a caller).

    A named tuple rather than a frozen dataclass: one is built per Disclosure of every presentation,
    and a tuple is built in a third of the time (the public :class:`Disclosure` keeps its repr that
    hides the salt and the value)."""

    encoded: str
    digest: str
    salt: str
    name: str | None
    value: Any

    def __repr__(self) -> str:
        return f"DecodedDisclosure(digest={self.digest!r}, name={self.name!r})"


def decode_disclosure(encoded: str, *, max_bytes: int, max_depth: int) -> DecodedDisclosure:
    """Strictly decode one Disclosure: canonical base64url, strict JSON, a 2- or 3-element array
    whose salt (and claim name) are strings (§4.2.1, §4.2.2).  Where it may sit is checked later."""
    raw = b64url_decode(encoded, max_len=max_bytes)
    content = loads_strict(raw, max_bytes=max_bytes, max_depth=max_depth)
    if not isinstance(content, list) or len(content) not in (2, 3):
        raise InvalidInput(
            "disclosure is not a JSON array of two or three elements", code="malformed_disclosure"
        )
    salt = content[0]
    if not isinstance(salt, str):
        raise InvalidInput("disclosure salt is not a string", code="malformed_disclosure")
    digest = b64url_encode(hashlib.sha256(encoded.encode("ascii")).digest())  # digest_of, inlined
    if len(content) == 2:
        return DecodedDisclosure(encoded, digest, salt, None, content[1])
    name = content[1]
    if not isinstance(name, str):
        raise InvalidInput("disclosure claim name is not a string", code="malformed_disclosure")
    return DecodedDisclosure(encoded, digest, salt, name, content[2])


def decode_disclosures(encoded: Sequence[str], *, max_bytes: int, max_depth: int) -> list[DecodedDisclosure]:
    """:func:`decode_disclosure` of each, in order, raising the first one's error: the same steps in
    one loop (a presentation can carry a hundred Disclosures, and a call per item is a tenth of the
    work done for each)."""
    decoded: list[DecodedDisclosure] = []
    append = decoded.append
    for item in encoded:
        content = loads_strict(
            b64url_decode(item, max_len=max_bytes), max_bytes=max_bytes, max_depth=max_depth
        )
        if not isinstance(content, list) or len(content) not in (2, 3):
            raise InvalidInput(
                "disclosure is not a JSON array of two or three elements", code="malformed_disclosure"
            )
        salt = content[0]
        if not isinstance(salt, str):
            raise InvalidInput("disclosure salt is not a string", code="malformed_disclosure")
        digest = b64url_encode(hashlib.sha256(item.encode("ascii")).digest())
        if len(content) == 2:
            append(DecodedDisclosure(item, digest, salt, None, content[1]))
            continue
        name = content[1]
        if not isinstance(name, str):
            raise InvalidInput("disclosure claim name is not a string", code="malformed_disclosure")
        append(DecodedDisclosure(item, digest, salt, name, content[2]))
    return decoded
