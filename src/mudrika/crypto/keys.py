"""Key pairs and public keys for the four key types mudrika signs with: Ed25519, P-256, secp256k1, RSA.

Why one wrapper over ``cryptography``: every caller needs the same handful of safe operations — strict
JWK import (points on the curve, RSA >= 2048 bits, no private members where a public key is
expected), RFC 7638 thumbprints, Multikey/multicodec encoding for did:key, PKCS#8 PEM that is always
encrypted unless the caller asks by name for plaintext, and an algorithm allow-list bound to the key
type so a token header can never choose how a key is used.  Private material never appears in a
repr, str, pickle or error message.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Final, Literal, cast

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from mudrika.crypto._pkcs8 import PBES2_OID, encrypt_pkcs8_pem
from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.multibase import PUBLIC_KEY_CODECS, multikey_decode, multikey_encode
from mudrika.errors import InvalidInput, KeyStoreError, SignatureError

__all__ = [
    "ALGORITHMS_BY_KEY_TYPE",
    "ALL_ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "KeyPair",
    "KeyType",
    "PublicKey",
]


class KeyType(StrEnum):
    ED25519 = "ed25519"
    P256 = "p256"
    SECP256K1 = "secp256k1"
    RSA = "rsa"


#: JWS algorithms each key type may be used with (RFC 7518, RFC 8037, RFC 8812).  The verifier's own
#: allow-list is intersected with this, so "PS256 on an RS256-only key" is decided by policy, and
#: "ES256 on an Ed25519 key" is impossible.
ALGORITHMS_BY_KEY_TYPE: Final[Mapping[KeyType, frozenset[str]]] = {
    KeyType.ED25519: frozenset({"EdDSA", "Ed25519"}),
    KeyType.P256: frozenset({"ES256"}),
    KeyType.SECP256K1: frozenset({"ES256K"}),
    KeyType.RSA: frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}),
}
#: Every JWS algorithm some key type may be used with: the "as its type allows" allow-list.
ALL_ALGORITHMS: Final[frozenset[str]] = frozenset().union(*ALGORITHMS_BY_KEY_TYPE.values())
DEFAULT_ALGORITHM: Final[Mapping[KeyType, str]] = {
    KeyType.ED25519: "EdDSA",
    KeyType.P256: "ES256",
    KeyType.SECP256K1: "ES256K",
    KeyType.RSA: "RS256",
}

_CODEC_TO_TYPE: Final[Mapping[int, KeyType]] = {
    code: KeyType(name) for name, code in PUBLIC_KEY_CODECS.items()
}

_CURVES: Final[Mapping[KeyType, ec.EllipticCurve]] = {
    KeyType.P256: ec.SECP256R1(),
    KeyType.SECP256K1: ec.SECP256K1(),
}
#: The JWK ``crv`` of each elliptic curve (RFC 7518 §6.2.1.1, RFC 8812 §3.1); an Ed25519 key is an
#: ``OKP`` JWK instead, read and written apart.
_JWK_CRV: Final[Mapping[KeyType, str]] = {
    KeyType.P256: "P-256",
    KeyType.SECP256K1: "secp256k1",
}
_CRV_TO_TYPE: Final[Mapping[str, KeyType]] = {crv: kt for kt, crv in _JWK_CRV.items()}
# Field primes: a JWK coordinate must be a canonical field element (< p), not merely 32 bytes.
_FIELD_PRIME: Final[Mapping[KeyType, int]] = {
    KeyType.P256: 2**256 - 2**224 + 2**192 + 2**96 - 1,
    KeyType.SECP256K1: 2**256 - 2**32 - 977,
}
_EC_SIZE = 32
_RSA_MIN_BITS = 2048
_RSA_MAX_BITS = 16384
_RSA_GENERATE_BITS = frozenset({2048, 3072, 4096})
_MAX_JWK_MEMBER = 4096
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
_MAX_PEM = 64 * 1024

_HASHES: Final[Mapping[str, type[hashes.HashAlgorithm]]] = {
    "ES256": hashes.SHA256,
    "ES256K": hashes.SHA256,
    "RS256": hashes.SHA256,
    "RS384": hashes.SHA384,
    "RS512": hashes.SHA512,
    "PS256": hashes.SHA256,
    "PS384": hashes.SHA384,
    "PS512": hashes.SHA512,
}

# Padding and hash objects are immutable, so each algorithm's are built once, not per verification.
_RSA_PARAMS: Final[Mapping[str, tuple[padding.AsymmetricPadding, hashes.HashAlgorithm]]] = {
    **{f"RS{bits}": (padding.PKCS1v15(), _HASHES[f"RS{bits}"]()) for bits in (256, 384, 512)},
    **{
        f"PS{bits}": (
            padding.PSS(
                mgf=padding.MGF1(_HASHES[f"PS{bits}"]()), salt_length=_HASHES[f"PS{bits}"]().digest_size
            ),
            _HASHES[f"PS{bits}"](),
        )
        for bits in (256, 384, 512)
    },
}
_ECDSA_SHA256: Final = ec.ECDSA(hashes.SHA256())
_ED25519: Final = KeyType.ED25519
_RSA: Final = KeyType.RSA
_EC_SIGNATURE_SIZE: Final = 2 * _EC_SIZE

_PublicCrypto = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey
_PrivateCrypto = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def _key_type_of(key: _PublicCrypto) -> KeyType:
    if isinstance(key, ed25519.Ed25519PublicKey):
        return KeyType.ED25519
    if isinstance(key, rsa.RSAPublicKey):
        if not _RSA_MIN_BITS <= key.key_size <= _RSA_MAX_BITS:
            raise InvalidInput(
                "RSA key size not allowed", code="weak_key", bits=key.key_size, minimum=_RSA_MIN_BITS
            )
        return KeyType.RSA
    if isinstance(key, ec.EllipticCurvePublicKey):
        if isinstance(key.curve, ec.SECP256R1):
            return KeyType.P256
        if isinstance(key.curve, ec.SECP256K1):
            return KeyType.SECP256K1
        raise InvalidInput("unsupported elliptic curve", code="unsupported_key", curve=key.curve.name)
    raise InvalidInput("unsupported key type", code="unsupported_key")


def _int_b64(value: int, length: int | None = None) -> str:
    size = length if length is not None else max(1, (value.bit_length() + 7) // 8)
    return b64url_encode(value.to_bytes(size, "big"))


def _jwk_member(jwk: Mapping[str, Any], name: str, *, length: int | None = None) -> bytes:
    value = jwk.get(name)
    if not isinstance(value, str):
        raise InvalidInput(f"JWK member {name!r} missing or not a string", code="bad_jwk", member=name)
    raw = b64url_decode(value, max_len=_MAX_JWK_MEMBER)
    if length is not None and len(raw) != length:
        raise InvalidInput(
            f"JWK member {name!r} has the wrong length",
            code="bad_jwk",
            member=name,
            expected=length,
            got=len(raw),
        )
    return raw


def _jwk_uint(jwk: Mapping[str, Any], name: str) -> int:
    raw = _jwk_member(jwk, name)
    if len(raw) > 1 and raw[0] == 0:
        raise InvalidInput(f"JWK member {name!r} has a leading zero octet", code="bad_jwk", member=name)
    return int.from_bytes(raw, "big")


def _check_jwk_shape(jwk: Mapping[str, Any]) -> str:
    if not isinstance(jwk, Mapping):
        raise InvalidInput("JWK must be a JSON object", code="bad_jwk")
    if len(jwk) > 32:
        raise InvalidInput("JWK has too many members", code="bad_jwk")
    kty = jwk.get("kty")
    if not isinstance(kty, str):
        raise InvalidInput("JWK has no 'kty'", code="bad_jwk", member="kty")
    return kty


class PublicKey:
    """An immutable public key of one of the supported types."""

    __slots__ = ("_crypto", "_key_type", "_raw", "_rsa_bytes")

    def __init__(self, key: _PublicCrypto) -> None:
        self._key_type = _key_type_of(key)
        self._crypto: _PublicCrypto = key
        self._raw = self._raw_bytes()
        self._rsa_bytes = (key.key_size + 7) // 8 if isinstance(key, rsa.RSAPublicKey) else 0

    # -- construction -------------------------------------------------------------------------------
    @classmethod
    def _of(cls, key_type: KeyType, key: _PublicCrypto, raw: bytes) -> PublicKey:
        """A key whose type and raw encoding the caller already knows (see :meth:`from_raw`)."""
        instance = cls.__new__(cls)
        instance._key_type = key_type
        instance._crypto = key
        instance._raw = raw
        instance._rsa_bytes = 0
        return instance

    @classmethod
    def from_cryptography(cls, key: object) -> PublicKey:
        """A key of any of cryptography's classes: the constructor decides which it takes
        (:func:`_key_type_of`, the one place that names the supported types and sizes)."""
        return cls(cast(_PublicCrypto, key))

    @classmethod
    def from_pem(cls, data: bytes | str) -> PublicKey:
        raw = data.encode() if isinstance(data, str) else data
        if len(raw) > _MAX_PEM:
            raise InvalidInput("PEM too large", code="too_large", limit=_MAX_PEM)
        return cls._load(
            serialization.load_pem_public_key, raw, "not a PEM public key of a supported type", "bad_pem"
        )

    @classmethod
    def from_der(cls, data: bytes) -> PublicKey:
        return cls._load(
            serialization.load_der_public_key,
            data,
            "not a DER SubjectPublicKeyInfo of a supported type",
            "bad_der",
        )

    @classmethod
    def _load(cls, loader: Callable[[bytes], object], data: bytes, message: str, code: str) -> PublicKey:
        """``data`` read by one of cryptography's public-key loaders (PEM, DER); its refusals become
        ``InvalidInput`` with our ``message`` (naming the encoding expected), never the library's text."""
        try:
            key = loader(data)
        except (ValueError, UnsupportedAlgorithm):
            raise InvalidInput(message, code=code) from None
        return cls.from_cryptography(key)

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> PublicKey:
        """Import a *public* JWK strictly; private members are refused (use :meth:`KeyPair.from_jwk`)."""
        kty = _check_jwk_shape(jwk)
        leaked = _PRIVATE_MEMBERS.intersection(jwk)
        if leaked:
            raise InvalidInput(
                "JWK carries private members where a public key is expected",
                code="private_jwk",
                members=sorted(leaked),
            )
        return cls(_public_from_jwk(kty, jwk))

    @classmethod
    def from_multikey(cls, value: str) -> PublicKey:
        """Decode a Multikey ``publicKeyMultibase`` value (base58btc ``z...`` with a multicodec prefix)."""
        codec, raw = multikey_decode(value)
        key_type = _CODEC_TO_TYPE.get(codec)
        if key_type is None:
            raise InvalidInput("unsupported multicodec key type", code="unsupported_key", codec=hex(codec))
        return cls.from_raw(key_type, raw)

    @classmethod
    def from_raw(cls, key_type: KeyType, data: bytes) -> PublicKey:
        """Raw encodings as multicodec carries them: Ed25519 32 bytes, EC compressed SEC1, RSA PKCS#1 DER.

        For Ed25519 and the curves the key keeps ``data`` as its :attr:`raw` instead of re-encoding
        the parsed key (a visible part of an uncached P-256 did:key resolution): the re-encoding is
        provably the same bytes.  OpenSSL stores an Ed25519 public key as the 32 bytes given; a
        compressed SEC1 point is accepted only with x < p (SEC 1 §2.3.4 with §2.3.6;
        ``tests/unit/test_did_key_fast_paths.py`` holds OpenSSL to it), and decoding then yields the
        one point with that x and the y parity of the prefix, whose compressed encoding is ``data``
        again.  RSA (where BER could hide behind DER) is still re-encoded.
        """
        try:
            if key_type is _ED25519:  # the module constant: see verify
                if len(data) != 32:
                    raise InvalidInput("Ed25519 public key must be 32 bytes", code="bad_key", got=len(data))
                return cls._of(key_type, ed25519.Ed25519PublicKey.from_public_bytes(data), bytes(data))
            if key_type in _CURVES:
                if len(data) != 1 + _EC_SIZE or data[0] not in (2, 3):
                    raise InvalidInput("EC public key must be a compressed SEC1 point", code="bad_key")
                point = ec.EllipticCurvePublicKey.from_encoded_point(_CURVES[key_type], data)
                return cls._of(key_type, point, bytes(data))
            key = serialization.load_der_public_key(_spki_from_pkcs1(data))
        except ValueError:
            raise InvalidInput("invalid public key bytes", code="bad_key", key_type=key_type.value) from None
        return cls.from_cryptography(key)

    # -- properties --------------------------------------------------------------------------------
    @property
    def key_type(self) -> KeyType:
        return self._key_type

    @property
    def algorithms(self) -> frozenset[str]:
        return ALGORITHMS_BY_KEY_TYPE[self._key_type]

    @property
    def default_algorithm(self) -> str:
        return DEFAULT_ALGORITHM[self._key_type]

    @property
    def size(self) -> int:
        """Key size in bits (RSA modulus size; 256 for the curves)."""
        return self._crypto.key_size if isinstance(self._crypto, rsa.RSAPublicKey) else 256

    def to_cryptography(self) -> _PublicCrypto:
        return self._crypto

    @property
    def raw(self) -> bytes:
        """The multicodec body: Ed25519 raw, EC compressed point, RSA PKCS#1 DER."""
        return self._raw

    def _raw_bytes(self) -> bytes:
        key = self._crypto
        if isinstance(key, ed25519.Ed25519PublicKey):
            return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        if isinstance(key, ec.EllipticCurvePublicKey):
            return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)
        return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1)

    # -- encodings ---------------------------------------------------------------------------------
    def to_pem(self) -> bytes:
        return self._crypto.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def to_der(self) -> bytes:
        return self._crypto.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def to_jwk(self) -> dict[str, str]:
        """The public JWK with only the RFC 7638 required members (callers add kid/use/alg)."""
        key = self._crypto
        if isinstance(key, ed25519.Ed25519PublicKey):
            return {"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(self._raw)}
        if isinstance(key, ec.EllipticCurvePublicKey):
            numbers = key.public_numbers()
            return {
                "kty": "EC",
                "crv": _JWK_CRV[self._key_type],
                "x": _int_b64(numbers.x, _EC_SIZE),
                "y": _int_b64(numbers.y, _EC_SIZE),
            }
        rsa_numbers = key.public_numbers()
        return {"kty": "RSA", "n": _int_b64(rsa_numbers.n), "e": _int_b64(rsa_numbers.e)}

    def thumbprint(self) -> str:
        """RFC 7638 JWK thumbprint (SHA-256, base64url): required members, sorted, no whitespace (§3.2, §3.3)."""
        members = self.to_jwk()
        canonical = json.dumps(dict(sorted(members.items())), separators=(",", ":"))
        return b64url_encode(hashlib.sha256(canonical.encode("ascii")).digest())

    def to_multikey(self) -> str:
        """Multikey ``publicKeyMultibase``: 'z' + base58btc(varint(multicodec) || raw key)."""
        return multikey_encode(PUBLIC_KEY_CODECS[self._key_type], self._raw)

    def fingerprint_sha256(self) -> str:
        """SHA-256 over the DER SubjectPublicKeyInfo, hex — a stable identifier for logs (not secret)."""
        return hashlib.sha256(self.to_der()).hexdigest()

    # -- verification ------------------------------------------------------------------------------
    def verify(self, signature: bytes, data: bytes, algorithm: str) -> None:
        """Verify a JWS-style signature (ECDSA as raw r||s, RFC 7518 §3.4); raise SignatureError.

        The algorithm must belong to this key type; anything else is refused before any crypto runs.
        """
        key_type = self._key_type
        if algorithm not in ALGORITHMS_BY_KEY_TYPE[key_type]:
            raise SignatureError(
                "algorithm not valid for this key type",
                code="alg_key_mismatch",
                alg=algorithm,
                key_type=key_type.value,
            )
        key = self._crypto
        try:
            # Module-level members: on Python 3.11 reading ``KeyType.ED25519`` goes through the enum
            # class's attribute machinery on every verification.
            if key_type is _ED25519:
                cast(ed25519.Ed25519PublicKey, key).verify(signature, data)
            elif key_type is _RSA:
                if len(signature) != self._rsa_bytes:
                    raise SignatureError("RSA signature has the wrong length", code="bad_signature")
                pad, hash_alg = _RSA_PARAMS[algorithm]
                cast(rsa.RSAPublicKey, key).verify(signature, data, pad, hash_alg)
            else:
                if len(signature) != _EC_SIGNATURE_SIZE:
                    raise SignatureError("ECDSA signature must be raw r||s", code="bad_signature_encoding")
                r = int.from_bytes(signature[:_EC_SIZE], "big")
                s = int.from_bytes(signature[_EC_SIZE:], "big")
                cast(ec.EllipticCurvePublicKey, key).verify(encode_dss_signature(r, s), data, _ECDSA_SHA256)
        except InvalidSignature:
            raise SignatureError("signature verification failed", code="bad_signature") from None

    # -- identity ----------------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PublicKey):
            return NotImplemented
        return self._key_type is other._key_type and self._raw == other._raw

    def __hash__(self) -> int:
        return hash((self._key_type, self._raw))

    def __repr__(self) -> str:
        return f"PublicKey({self._key_type.value}, thumbprint={self.thumbprint()})"


def _spki_from_pkcs1(pkcs1_der: bytes) -> bytes:
    """Wrap a PKCS#1 RSAPublicKey in a SubjectPublicKeyInfo so cryptography can load it."""
    algorithm_identifier = bytes.fromhex("300d06092a864886f70d0101010500")
    bit_string = b"\x03" + _der_length(len(pkcs1_der) + 1) + b"\x00" + pkcs1_der
    body = algorithm_identifier + bit_string
    return b"\x30" + _der_length(len(body)) + body


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    encoded = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(encoded)]) + encoded


def _public_from_jwk(kty: str, jwk: Mapping[str, Any]) -> _PublicCrypto:
    if kty == "OKP":
        crv = jwk.get("crv")
        if crv != "Ed25519":
            raise InvalidInput("unsupported OKP curve", code="unsupported_key", crv=str(crv)[:16])
        return ed25519.Ed25519PublicKey.from_public_bytes(_jwk_member(jwk, "x", length=32))
    if kty == "EC":
        key_type = _CRV_TO_TYPE.get(str(jwk.get("crv")))
        if key_type is None:
            raise InvalidInput("unsupported EC curve", code="unsupported_key", crv=str(jwk.get("crv"))[:16])
        x = int.from_bytes(_jwk_member(jwk, "x", length=_EC_SIZE), "big")
        y = int.from_bytes(_jwk_member(jwk, "y", length=_EC_SIZE), "big")
        prime = _FIELD_PRIME[key_type]
        if x >= prime or y >= prime:
            raise InvalidInput("EC coordinate is not a field element", code="invalid_point")
        try:
            return ec.EllipticCurvePublicNumbers(x, y, _CURVES[key_type]).public_key()
        except ValueError:
            raise InvalidInput("EC point is not on the curve", code="invalid_point") from None
    if kty == "RSA":
        n = _jwk_uint(jwk, "n")
        e = _jwk_uint(jwk, "e")
        if not _RSA_MIN_BITS <= n.bit_length() <= _RSA_MAX_BITS:
            raise InvalidInput(
                "RSA modulus size not allowed", code="weak_key", bits=n.bit_length(), minimum=_RSA_MIN_BITS
            )
        if e < 3 or e % 2 == 0 or e.bit_length() > 32 or n % 2 == 0:
            raise InvalidInput("invalid RSA public exponent or modulus", code="bad_jwk")
        try:
            return rsa.RSAPublicNumbers(e, n).public_key()
        except ValueError:
            raise InvalidInput("invalid RSA public key", code="bad_jwk") from None
    raise InvalidInput("unsupported JWK key type", code="unsupported_key", kty=kty[:16])


class KeyPair:
    """A private key with its public half.  Private material is reachable only through named exports."""

    __slots__ = ("_private", "_public")

    def __init__(self, private: _PrivateCrypto) -> None:
        public = PublicKey.from_cryptography(private.public_key())
        self._private: _PrivateCrypto = private
        self._public = public

    @classmethod
    def generate(cls, key_type: KeyType | str, *, rsa_bits: int = 2048) -> KeyPair:
        kind = KeyType(key_type)
        if kind is KeyType.ED25519:
            return cls(ed25519.Ed25519PrivateKey.generate())
        if kind in _CURVES:
            return cls(ec.generate_private_key(_CURVES[kind]))
        if rsa_bits not in _RSA_GENERATE_BITS:
            raise InvalidInput("RSA size must be 2048, 3072 or 4096", code="bad_key_size", bits=rsa_bits)
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=rsa_bits))

    @property
    def public_key(self) -> PublicKey:
        return self._public

    @property
    def key_type(self) -> KeyType:
        return self._public.key_type

    def signing_algorithm(self, algorithm: str | None = None) -> str:
        """``algorithm`` (default: the key type's) if this key may sign with it; InvalidInput otherwise."""
        alg = algorithm or self._public.default_algorithm
        if alg not in self._public.algorithms:
            raise InvalidInput(
                "algorithm not valid for this key type",
                code="alg_key_mismatch",
                alg=alg,
                key_type=self.key_type.value,
            )
        return alg

    def sign(self, data: bytes, algorithm: str | None = None) -> bytes:
        """Sign as JWS does (RFC 7518): ECDSA raw r||s, RSA PKCS#1 v1.5 or PSS, Ed25519 pure."""
        alg = self.signing_algorithm(algorithm)
        key = self._private
        if isinstance(key, ed25519.Ed25519PrivateKey):
            return key.sign(data)
        if isinstance(key, ec.EllipticCurvePrivateKey):
            r, s = decode_dss_signature(key.sign(data, ec.ECDSA(_HASHES[alg]())))
            return r.to_bytes(_EC_SIZE, "big") + s.to_bytes(_EC_SIZE, "big")
        hash_alg = _HASHES[alg]()
        pad: padding.AsymmetricPadding
        if alg.startswith("PS"):
            pad = padding.PSS(mgf=padding.MGF1(hash_alg), salt_length=hash_alg.digest_size)
        else:
            pad = padding.PKCS1v15()
        return key.sign(data, pad, hash_alg)

    # -- PEM -----------------------------------------------------------------------------------------
    def private_pem(self, password: bytes) -> bytes:
        """PKCS#8 PEM encrypted with ``password``: PBES2, PBKDF2-HMAC-SHA256 (600,000 rounds), AES-256-CBC."""
        if not isinstance(password, bytes) or len(password) < 8:
            raise InvalidInput("key password must be at least 8 bytes", code="weak_password")
        der = self._private.private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return encrypt_pkcs8_pem(der, password)

    def private_pem_unencrypted(self) -> bytes:
        """Plaintext PKCS#8 PEM.  Named so that writing an unprotected key is never an accident."""
        return self._private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    @classmethod
    def from_pem(cls, data: bytes, password: bytes | None) -> KeyPair:
        if len(data) > _MAX_PEM:
            raise InvalidInput("PEM too large", code="too_large", limit=_MAX_PEM)
        try:
            key = serialization.load_pem_private_key(data, password=password)
        except TypeError:
            # cryptography raises TypeError for "password given but key not encrypted" and the reverse.
            raise InvalidInput(
                "key password required"
                if password is None
                else "key is not encrypted but a password was given",
                code="password_mismatch",
            ) from None
        except (ValueError, UnsupportedAlgorithm):
            if password is not None and _is_encrypted_pkcs8(data):
                # The file is a well-formed encrypted key: what failed is the password (or the
                # ciphertext was altered, which no password check can tell apart).
                raise KeyStoreError(
                    "the password does not open this encrypted key (wrong password, or the file was altered)",
                    code="wrong_password",
                ) from None
            raise InvalidInput("not a supported PEM private key", code="bad_private_key") from None
        if not isinstance(key, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            raise InvalidInput("unsupported private key type", code="unsupported_key")
        return cls(key)

    # -- JWK -----------------------------------------------------------------------------------------
    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> KeyPair:
        """Import a private JWK; the private part must match the public members it carries."""
        kty = _check_jwk_shape(jwk)
        public = _public_from_jwk(kty, jwk)
        private: _PrivateCrypto
        try:
            if kty == "OKP":
                private = ed25519.Ed25519PrivateKey.from_private_bytes(_jwk_member(jwk, "d", length=32))
            elif kty == "EC":
                d = int.from_bytes(_jwk_member(jwk, "d", length=_EC_SIZE), "big")
                assert isinstance(public, ec.EllipticCurvePublicKey)
                private = ec.derive_private_key(d, public.curve)
            else:
                assert isinstance(public, rsa.RSAPublicKey)
                if "oth" in jwk:
                    raise InvalidInput("multi-prime RSA keys are not supported", code="unsupported_key")
                numbers = rsa.RSAPrivateNumbers(
                    p=_jwk_uint(jwk, "p"),
                    q=_jwk_uint(jwk, "q"),
                    d=_jwk_uint(jwk, "d"),
                    dmp1=_jwk_uint(jwk, "dp"),
                    dmq1=_jwk_uint(jwk, "dq"),
                    iqmp=_jwk_uint(jwk, "qi"),
                    public_numbers=public.public_numbers(),
                )
                private = numbers.private_key()
        except ValueError:
            raise InvalidInput("invalid private JWK", code="bad_jwk") from None
        pair = cls(private)
        if pair.public_key != PublicKey(public):
            raise InvalidInput("private JWK does not match its public members", code="bad_jwk")
        return pair

    def private_jwk(self) -> dict[str, str]:
        """The private JWK.  Named so that exporting secret members is never an accident."""
        jwk = self._public.to_jwk()
        key = self._private
        if isinstance(key, ed25519.Ed25519PrivateKey):
            raw = key.private_bytes(
                serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
            )
            jwk["d"] = b64url_encode(raw)
        elif isinstance(key, ec.EllipticCurvePrivateKey):
            jwk["d"] = _int_b64(key.private_numbers().private_value, _EC_SIZE)
        else:
            numbers = key.private_numbers()
            jwk.update(
                d=_int_b64(numbers.d),
                p=_int_b64(numbers.p),
                q=_int_b64(numbers.q),
                dp=_int_b64(numbers.dmp1),
                dq=_int_b64(numbers.dmq1),
                qi=_int_b64(numbers.iqmp),
            )
        return jwk

    def to_cryptography(self) -> _PrivateCrypto:
        """The underlying private key, for primitives such as CSR signing (hazmat: handle with care)."""
        return self._private

    # -- never leak ----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"KeyPair({self.key_type.value}, thumbprint={self._public.thumbprint()})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        raise TypeError("KeyPair cannot be pickled: export it explicitly with private_pem(password)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KeyPair):
            return NotImplemented
        return self._public == other._public

    def __hash__(self) -> int:
        return hash(self._public)


KeyTypeName = Literal["ed25519", "p256", "secp256k1", "rsa"]


_ENCRYPTED_PEM_RE: Final = re.compile(
    rb"-----BEGIN ENCRYPTED PRIVATE KEY-----\s*([A-Za-z0-9+/=\s]+?)\s*-----END ENCRYPTED PRIVATE KEY-----"
)


def _is_encrypted_pkcs8(data: bytes) -> bool:
    """Whether ``data`` is one PEM ``ENCRYPTED PRIVATE KEY`` whose DER is a PKCS#8
    ``EncryptedPrivateKeyInfo`` (a SEQUENCE naming PBES2): then a failed load means the password."""
    match = _ENCRYPTED_PEM_RE.search(data)
    if match is None:
        return False
    try:
        der = base64.b64decode(b"".join(match.group(1).split()), validate=True)
    except ValueError:
        return False
    return der[:1] == b"\x30" and PBES2_OID in der[:64]
