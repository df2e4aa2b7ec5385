"""``Content-Digest`` (RFC 9530 §2): create it over the exact body bytes, check a streamed body against it.

Why streamed and capped: a signature covers the ``Content-Digest`` *header*, not the body, so the body
must be hashed by the verifier and compared with the signed digest.  Reading it whole before looking
at its size would let any client make the server buffer an arbitrary body; here every chunk is
counted as it arrives and the read stops at the cap.

Strict profile: only ``sha-256`` and ``sha-512`` (the two algorithms RFC 9530 §5 marks "standard");
any other member, a repeated member or a digest of the wrong length is malformed, so a signer cannot
pair a real digest with a weak one the verifier would skip.  Every known member must match.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from typing import Any, Final

from mudrika.errors import InvalidInput, SignatureError
from mudrika.trust.httpsig._sf import Item, parse_dictionary, serialize_dictionary

__all__ = [
    "DEFAULT_MAX_BODY",
    "DIGEST_ALGORITHMS",
    "BodyDigest",
    "aread_body",
    "content_digest",
    "parse_content_digest",
    "read_body",
]

DEFAULT_MAX_BODY: Final = 1024 * 1024
"""Largest request body the verifier reads (1 MiB): A2A JSON-RPC messages are a few kilobytes."""

DIGEST_ALGORITHMS: Final[Mapping[str, Callable[..., Any]]] = {
    "sha-256": hashlib.sha256,
    "sha-512": hashlib.sha512,
}
_SIZES: Final = {"sha-256": 32, "sha-512": 64}
_MAX_DIGEST_FIELD: Final = 512


def content_digest(body: bytes, algorithm: str = "sha-256") -> str:
    """The ``Content-Digest`` field value for ``body`` (RFC 9530 §2), e.g. ``sha-256=:...:``.

    The digest is over the bytes exactly as sent (after any content coding), empty body included.
    """
    if not isinstance(body, bytes | bytearray | memoryview):
        raise InvalidInput("body must be bytes", code="bad_body")
    factory = DIGEST_ALGORITHMS.get(algorithm)
    if factory is None:
        raise InvalidInput("unsupported digest algorithm", code="bad_digest_algorithm", alg=algorithm[:32])
    return serialize_dictionary({algorithm: Item(factory(bytes(body)).digest())})


def parse_content_digest(value: str) -> dict[str, bytes]:
    """Parse a ``Content-Digest`` value into ``{algorithm: digest}``; malformed is ``InvalidInput``."""
    members = parse_dictionary(value, field="content-digest", max_length=_MAX_DIGEST_FIELD)
    if not members:
        raise InvalidInput("Content-Digest is empty", code="bad_content_digest")
    digests: dict[str, bytes] = {}
    for algorithm, member in members.items():
        if algorithm not in _SIZES:
            raise InvalidInput(
                "unsupported Content-Digest algorithm", code="bad_content_digest", alg=algorithm[:32]
            )
        if not isinstance(member, Item) or not isinstance(member.value, bytes) or member.params:
            raise InvalidInput("Content-Digest member must be a byte sequence", code="bad_content_digest")
        if len(member.value) != _SIZES[algorithm]:
            raise InvalidInput(
                "Content-Digest has the wrong length", code="bad_content_digest", alg=algorithm
            )
        digests[algorithm] = member.value
    return digests


class BodyDigest:
    """Hash a body chunk by chunk under a size cap, then compare with the expected digests."""

    __slots__ = ("_chunks", "_expected", "_hashers", "_max_body", "_size")

    def __init__(self, expected: Mapping[str, bytes], *, max_body: int = DEFAULT_MAX_BODY) -> None:
        if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 0:
            raise InvalidInput("max_body must be a non-negative integer", code="httpsig_config")
        self._expected = dict(expected)
        self._hashers = {alg: DIGEST_ALGORITHMS[alg]() for alg in self._expected}
        self._max_body = max_body
        self._size = 0
        self._chunks: list[bytes] = []

    def update(self, chunk: bytes) -> None:
        if not isinstance(chunk, bytes | bytearray | memoryview):
            raise InvalidInput("body chunk must be bytes", code="bad_body")
        self._size += len(chunk)
        if self._size > self._max_body:
            raise InvalidInput("request body too large", code="body_too_large", limit=self._max_body)
        data = bytes(chunk)
        for hasher in self._hashers.values():
            hasher.update(data)
        self._chunks.append(data)

    def finish(self) -> bytes:
        """The whole body, once every expected digest matched; else ``SignatureError``."""
        for algorithm, expected in self._expected.items():
            if not hmac.compare_digest(self._hashers[algorithm].digest(), expected):
                raise SignatureError(
                    "body does not match the signed Content-Digest",
                    code="content_digest_mismatch",
                    alg=algorithm,
                )
        return b"".join(self._chunks)


def read_body(chunks: bytes | Iterable[bytes], expected: Mapping[str, bytes], *, max_body: int) -> bytes:
    """Read a body (bytes, or an iterable of chunks) under ``max_body`` and check it against ``expected``.

    With ``expected`` empty the body is only size-checked (the caller decides whether a body without a
    signed digest is acceptable).
    """
    if not expected and type(chunks) is bytes and type(max_body) is int and max_body >= 0:
        # Nothing to hash: the same size check as BodyDigest.update, without building one.
        if len(chunks) > max_body:
            raise InvalidInput("request body too large", code="body_too_large", limit=max_body)
        return chunks
    digest = BodyDigest(expected, max_body=max_body)
    if isinstance(chunks, bytes):
        digest.update(chunks)
    else:
        for chunk in chunks:
            digest.update(chunk)
    return digest.finish()


async def aread_body(
    chunks: bytes | AsyncIterable[bytes], expected: Mapping[str, bytes], *, max_body: int
) -> bytes:
    """Async form of :func:`read_body` for a streamed body (an ASGI ``receive`` loop, ``httpx`` stream)."""
    digest = BodyDigest(expected, max_body=max_body)
    if isinstance(chunks, bytes):
        digest.update(chunks)
    else:
        async for chunk in chunks:
            digest.update(chunk)
    return digest.finish()
