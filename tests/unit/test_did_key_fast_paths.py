"""The did:key resolution fast paths change nothing a caller can observe.

* ``PublicKey.from_raw`` keeps the multicodec bytes as the key's ``raw`` instead of re-encoding the
  parsed key; that is only sound because the re-encoding is the same bytes, and because OpenSSL
  refuses the one kind of compressed point that could re-encode differently (x >= p).
* ``identity.resolution.result`` shares one read-only resolution-metadata mapping per
  (method, driver).
* ``DIDResolver.aresolve`` calls the synchronous resolve of the did:key and did:jwk drivers directly;
  any other driver, a subclass of those included, is still awaited.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from mudrika.crypto.keys import KeyPair, KeyType, PublicKey
from mudrika.errors import DocumentError, InvalidInput
from mudrika.identity.did import DID
from mudrika.identity.methods import jwk, key
from mudrika.identity.resolution import CONTENT_TYPE, ResolutionResult, result
from mudrika.identity.resolver import DIDResolver

# Field primes (SEC 2 §2.4.2 secp256k1, §2.7.2 secp256r1).
_P256_P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
_SECP256K1_P = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F


def _reencoded(public: PublicKey) -> bytes:
    crypto = public.to_cryptography()
    if isinstance(crypto, ed25519.Ed25519PublicKey):
        return crypto.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert isinstance(crypto, ec.EllipticCurvePublicKey)
    return crypto.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)


@pytest.mark.parametrize("kind", ["ed25519", "p256", "secp256k1"])
def test_from_raw_keeps_bytes_that_equal_the_reencoding(kind: str) -> None:
    for _ in range(20):
        original = KeyPair.generate(kind).public_key
        decoded = PublicKey.from_raw(KeyType(kind), original.raw)
        assert decoded.raw == original.raw == _reencoded(decoded)
        assert decoded == original
        assert decoded.key_type is KeyType(kind)
        assert decoded.thumbprint() == original.thumbprint()


@pytest.mark.parametrize(("kind", "prime"), [("p256", _P256_P), ("secp256k1", _SECP256K1_P)])
@pytest.mark.parametrize("prefix", [2, 3])
def test_compressed_points_with_x_at_or_above_the_field_prime_are_refused(
    kind: str, prime: int, prefix: int
) -> None:
    # x and x - p would name the same point: OpenSSL must refuse x >= p, or one key had two encodings.
    for offset in (0, 1, 2, 3, 7, 2**31):
        x = prime + offset
        if x >= 2**256:
            continue
        with pytest.raises(InvalidInput) as info:
            PublicKey.from_raw(KeyType(kind), bytes([prefix]) + x.to_bytes(32, "big"))
        assert info.value.code == "bad_key"


def test_did_key_of_an_out_of_range_point_is_an_invalid_public_key() -> None:
    bogus = "did:key:" + "z" + _multikey_body(0x1200, bytes([2]) + _P256_P.to_bytes(32, "big"))
    with pytest.raises(InvalidInput) as info:
        key.decode(bogus)
    assert info.value.code == "invalidPublicKey"


def _multikey_body(codec: int, raw: bytes) -> str:
    from mudrika.crypto.multibase import base58btc_encode, varint_encode

    return base58btc_encode(varint_encode(codec) + raw)


def test_resolution_metadata_is_shared_per_method_and_driver_and_read_only() -> None:
    first = key.document(key.create(KeyPair.generate("ed25519").public_key))
    second = key.document(key.create(KeyPair.generate("p256").public_key))
    one = result(first, driver="key")
    two = result(second, driver="key")
    assert one.resolution_metadata is two.resolution_metadata
    assert dict(one.resolution_metadata) == {"contentType": CONTENT_TYPE, "method": "key", "driver": "key"}
    other = result(first, driver="snapshot")
    assert other.resolution_metadata["driver"] == "snapshot"
    assert one.resolution_metadata["driver"] == "key"
    with pytest.raises(TypeError):
        one.resolution_metadata["driver"] = "x"  # type: ignore[index]
    assert result(first, driver="key", document_metadata={"deactivated": True}).deactivated


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["ed25519", "p256", "secp256k1"])
async def test_async_fast_path_gives_what_the_sync_path_gives(kind: str) -> None:
    public = KeyPair.generate(kind).public_key
    resolver = DIDResolver(cache_size=0)
    for did in (key.create(public), jwk.create(public)):
        awaited = await resolver.aresolve(did)
        direct = resolver.resolve(did)
        assert awaited.document == direct.document
        assert awaited.document.to_json() == direct.document.to_json()
        assert dict(awaited.resolution_metadata) == dict(direct.resolution_metadata)


@pytest.mark.anyio
async def test_async_fast_path_keeps_the_error_translation() -> None:
    resolver = DIDResolver(cache_size=0)
    with pytest.raises(InvalidInput) as info:
        await resolver.aresolve("did:key:z0OIl")
    assert info.value.code == "invalidDid"
    with pytest.raises(InvalidInput) as info:
        await resolver.aresolve("did:key:z" + _multikey_body(0x1201, b"\x02" + b"\x01" * 48))
    assert info.value.code == "invalidDid"  # the resolver's code, with the driver's as the reason
    assert info.value.fields["reason"] == "unsupportedPublicKeyType"
    with pytest.raises(DocumentError) as unsupported:
        await resolver.aresolve("did:example:123")
    assert unsupported.value.code == "methodNotSupported"


class _AsyncKeyDriver(key.KeyDriver):
    """A subclass whose async path differs: the resolver must await it, not take the fast path."""

    def __init__(self) -> None:
        super().__init__()
        self.awaited = 0

    async def aresolve(self, did: DID) -> ResolutionResult:
        self.awaited += 1
        resolved = self.resolve(did)
        metadata: Mapping[str, Any] = {"note": "async"}
        return result(resolved.document, driver="key", document_metadata=metadata)


@pytest.mark.anyio
async def test_subclassed_drivers_are_still_awaited() -> None:
    driver = _AsyncKeyDriver()
    resolver = DIDResolver([driver], cache_size=0)
    resolved = await resolver.aresolve(key.create(KeyPair.generate("ed25519").public_key))
    assert driver.awaited == 1
    assert resolved.document_metadata == {"note": "async"}
