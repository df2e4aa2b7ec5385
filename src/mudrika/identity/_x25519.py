"""X25519 key-agreement public keys, and the Ed25519 → X25519 conversion did:key uses.

Why separate from :class:`mudrika.crypto.keys.PublicKey`: that class is for *signing* keys and carries
a JWS algorithm allow-list; an X25519 key can never verify a signature, so giving it the same type
would let it flow into a verifier.  DID documents still need to carry and compare X25519 keys (the
``keyAgreement`` relationship), so this small value class does exactly that and nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric import x25519

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.keys import KeyType, PublicKey
from mudrika.crypto.multibase import multikey_decode, multikey_encode
from mudrika.errors import InvalidInput

__all__ = ["X25519_MULTICODEC", "X25519PublicKey", "ed25519_to_x25519", "edwards_y", "x25519_from_edwards_y"]

#: multicodec ``x25519-pub``.
X25519_MULTICODEC: Final = 0xEC
_P: Final = 2**255 - 19
_PRIVATE_MEMBERS: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})


class X25519PublicKey:
    """An immutable X25519 public key (32 bytes, RFC 7748)."""

    __slots__ = ("_raw",)

    def __init__(self, raw: bytes) -> None:
        if not isinstance(raw, bytes) or len(raw) != 32:
            raise InvalidInput("X25519 public key must be 32 bytes", code="bad_key")
        self._raw = raw

    @classmethod
    def from_raw(cls, raw: bytes) -> X25519PublicKey:
        return cls(raw)

    @classmethod
    def from_multikey(cls, value: str) -> X25519PublicKey:
        codec, raw = multikey_decode(value)
        if codec != X25519_MULTICODEC:
            raise InvalidInput("not an X25519 Multikey", code="unsupported_key", codec=hex(codec))
        return cls(raw)

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> X25519PublicKey:
        if not isinstance(jwk, Mapping) or jwk.get("kty") != "OKP" or jwk.get("crv") != "X25519":
            raise InvalidInput("not an X25519 OKP JWK", code="unsupported_key")
        if _PRIVATE_MEMBERS.intersection(jwk):
            raise InvalidInput(
                "JWK carries private members where a public key is expected", code="private_jwk"
            )
        x = jwk.get("x")
        if not isinstance(x, str):
            raise InvalidInput("JWK member 'x' missing or not a string", code="bad_jwk", member="x")
        return cls(b64url_decode(x, max_len=64))

    @property
    def raw(self) -> bytes:
        return self._raw

    def to_multikey(self) -> str:
        return multikey_encode(X25519_MULTICODEC, self._raw)

    def to_jwk(self) -> dict[str, str]:
        return {"kty": "OKP", "crv": "X25519", "x": b64url_encode(self._raw)}

    def to_cryptography(self) -> x25519.X25519PublicKey:
        return x25519.X25519PublicKey.from_public_bytes(self._raw)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, X25519PublicKey):
            return NotImplemented
        return self._raw == other._raw

    def __hash__(self) -> int:
        return hash(("x25519", self._raw))

    def __repr__(self) -> str:
        return f"X25519PublicKey({self._raw.hex()})"


#: Read once: on Python 3.11 ``KeyType.ED25519`` goes through the enum class's attribute machinery.
_ED25519: Final = KeyType.ED25519


def ed25519_to_x25519(key: PublicKey) -> X25519PublicKey:
    """Map an Ed25519 public key to its X25519 (Montgomery) form: u = (1 + y) / (1 - y) mod p.

    This is the birational map of RFC 7748 §4.1 that the did:key spec ("Derive Encryption Key
    Algorithm") uses to give an Ed25519 did:key a ``keyAgreement`` key.  Steps 1-2 are
    :func:`edwards_y`, step 3 is :func:`x25519_from_edwards_y`.
    """
    return x25519_from_edwards_y(edwards_y(key))


def edwards_y(key: PublicKey) -> int:
    """Steps 1-2 of the map, the checks: the y of ``key`` when it has an X25519 form, else ``bad_key``.

    Split from the conversion so a did:key document can refuse an unmappable key when it is resolved
    (a few integer operations) and pay for the modular inverse only when ``keyAgreement`` is read.

    1. Read y: the 32 bytes little-endian with the top bit (the sign of x) cleared (RFC 8032 §5.1.3).
    2. Refuse y >= p (non-canonical encoding) and y = 1 (the neutral point, for which 1 - y = 0).
    """
    if key.key_type is not _ED25519:
        raise InvalidInput("only Ed25519 keys map to X25519", code="unsupported_key")
    y = int.from_bytes(key.raw, "little") & ((1 << 255) - 1)  # (1)
    if y >= _P or y == 1:  # (2)
        raise InvalidInput("Ed25519 key cannot be mapped to X25519", code="bad_key")
    return y


def x25519_from_edwards_y(y: int) -> X25519PublicKey:
    """Step 3 of the map: u = (1 + y) * (1 - y)^-1 mod p, 32 bytes little-endian (RFC 7748 §5).

    ``y`` must come from :func:`edwards_y` (0 <= y < p, y != 1).
    """
    u = (1 + y) * pow(1 - y, -1, _P) % _P  # (3)
    return X25519PublicKey(u.to_bytes(32, "little"))
