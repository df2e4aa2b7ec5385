"""RFC 9530 Content-Digest: creation over exact bytes, strict parsing, streamed and capped checking."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.errors import InvalidInput, SignatureError
from mudrika.trust.httpsig import content_digest, parse_content_digest
from mudrika.trust.httpsig._digest import BodyDigest, aread_body, read_body

# The body of the RFC 9421 Appendix B.2 test request and the sha-512 Content-Digest printed there.
RFC9421_BODY = b'{"hello": "world"}'
RFC9421_SHA512 = (
    "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:"
)
EMPTY_SHA256 = "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"


def test_sha512_reproduces_the_rfc9421_test_request_digest() -> None:
    assert content_digest(RFC9421_BODY, "sha-512") == RFC9421_SHA512


def test_sha256_is_the_default_and_covers_the_empty_body() -> None:
    assert content_digest(b"") == EMPTY_SHA256
    expected = base64.b64encode(hashlib.sha256(RFC9421_BODY).digest()).decode()
    assert content_digest(RFC9421_BODY) == f"sha-256=:{expected}:"


def test_digest_is_over_exact_bytes() -> None:
    assert content_digest(b'{"a":1}') != content_digest(b'{"a": 1}')
    assert content_digest(b"x\n") != content_digest(b"x")


def test_unknown_algorithm_refused_when_creating() -> None:
    with pytest.raises(InvalidInput) as info:
        content_digest(b"", "md5")
    assert info.value.code == "bad_digest_algorithm"


def test_parse_several_members() -> None:
    value = f"{content_digest(RFC9421_BODY)}, {RFC9421_SHA512}"
    digests = parse_content_digest(value)
    assert set(digests) == {"sha-256", "sha-512"}
    assert digests["sha-512"] == hashlib.sha512(RFC9421_BODY).digest()


@pytest.mark.parametrize(
    "value",
    [
        "",
        "md5=:1B2M2Y8AsgTpgAmY7PhCfg==:",
        "unixsum=:AAAA:",
        "sha-256=:AAAA:",
        'sha-256="47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="',
        "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:;alg=1",
        f"{EMPTY_SHA256}, {EMPTY_SHA256}",
        "sha-256=(:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:)",
        "sha-256=:47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=:",
        "sha-256",
    ],
)
def test_parse_refuses(value: str) -> None:
    with pytest.raises(InvalidInput):
        parse_content_digest(value)


def test_every_member_must_match() -> None:
    # A correct sha-256 next to a wrong sha-512 is still a mismatch: no member is skipped.
    digests = parse_content_digest(f"{content_digest(b'body')}, {RFC9421_SHA512}")
    with pytest.raises(SignatureError) as info:
        read_body(b"body", digests, max_body=100)
    assert info.value.code == "content_digest_mismatch"
    assert info.value.fields["alg"] == "sha-512"


def test_mismatch_is_a_signature_error() -> None:
    with pytest.raises(SignatureError) as info:
        read_body(b"tampered", parse_content_digest(content_digest(b"original")), max_body=100)
    assert info.value.code == "content_digest_mismatch"


def test_cap_is_inclusive() -> None:
    expected = parse_content_digest(content_digest(b"12345"))
    assert read_body(b"12345", expected, max_body=5) == b"12345"
    with pytest.raises(InvalidInput) as info:
        read_body(b"123456", parse_content_digest(content_digest(b"123456")), max_body=5)
    assert info.value.code == "body_too_large"


def test_streaming_stops_at_the_cap() -> None:
    pulled = 0

    def endless() -> Iterator[bytes]:
        nonlocal pulled
        while True:
            pulled += 1
            yield b"x" * 1000

    with pytest.raises(InvalidInput) as info:
        read_body(endless(), {}, max_body=10_000)
    assert info.value.code == "body_too_large"
    assert pulled == 11


@pytest.mark.anyio
async def test_async_streaming_stops_at_the_cap() -> None:
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        while True:
            pulled += 1
            yield b"y" * 4096

    with pytest.raises(InvalidInput) as info:
        await aread_body(endless(), {}, max_body=65_536)
    assert info.value.code == "body_too_large"
    assert pulled == 17


@pytest.mark.anyio
async def test_async_streamed_body_checked() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield RFC9421_BODY[:5]
        yield b""
        yield RFC9421_BODY[5:]

    assert await aread_body(chunks(), parse_content_digest(RFC9421_SHA512), max_body=64) == RFC9421_BODY


def test_body_digest_rejects_bad_configuration_and_chunks() -> None:
    with pytest.raises(InvalidInput):
        BodyDigest({}, max_body=-1)
    with pytest.raises(InvalidInput):
        BodyDigest({}).update("text")  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=4096), st.lists(st.integers(min_value=1, max_value=512), max_size=20))
def test_any_chunking_gives_the_same_digest(body: bytes, cuts: list[int]) -> None:
    chunks: list[bytes] = []
    position = 0
    for cut in cuts:
        chunks.append(body[position : position + cut])
        position += cut
    chunks.append(body[position:])
    for algorithm in ("sha-256", "sha-512"):
        expected = parse_content_digest(content_digest(body, algorithm))
        assert read_body(iter(chunks), expected, max_body=len(body)) == body
