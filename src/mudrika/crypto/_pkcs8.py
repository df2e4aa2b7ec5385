"""PKCS#8 ``EncryptedPrivateKeyInfo`` with PBES2 at a modern PBKDF2 work factor (RFC 5958, RFC 8018).

Why our own encoder: ``cryptography``'s ``BestAvailableEncryption`` for PKCS#8 uses OpenSSL's default
of 2,048 PBKDF2 iterations and offers no way to raise it for this format, which leaves a stolen key
file open to fast offline password guessing.  The structure is small and standard, so we write it
ourselves — PBES2 (RFC 8018 §6.2) with PBKDF2-HMAC-SHA256 (§5.2) at :data:`PBKDF2_ITERATIONS`
(OWASP's 2023 figure for PBKDF2-HMAC-SHA256) and AES-256-CBC — and let ``cryptography`` (and OpenSSL)
read it back, which both do for any iteration count.
"""

from __future__ import annotations

import base64
import os
from typing import Final

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from cryptography.hazmat.primitives.padding import PKCS7

__all__ = ["PBES2_OID", "PBKDF2_ITERATIONS", "encrypt_pkcs8_pem"]

PBKDF2_ITERATIONS: Final = 600_000
_SALT_BYTES: Final = 16
_AES_KEY_BYTES: Final = 32

# DER of the object identifiers involved (tag 06, length, value).
#: The DER of the PBES2 object identifier (1.2.840.113549.1.5.13) that every key we encrypt names.
PBES2_OID: Final = bytes.fromhex("06092a864886f70d01050d")
_OID_PBKDF2: Final = bytes.fromhex("06092a864886f70d01050c")  # 1.2.840.113549.1.5.12
_OID_HMAC_SHA256: Final = bytes.fromhex("06082a864886f70d0209")  # 1.2.840.113549.2.9
_OID_AES256_CBC: Final = bytes.fromhex("060960864801650304012a")  # 2.16.840.1.101.3.4.1.42
_NULL: Final = b"\x05\x00"


def _length(size: int) -> bytes:
    if size < 0x80:
        return bytes([size])
    encoded = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(encoded)]) + encoded


def _tlv(tag: int, value: bytes) -> bytes:
    return bytes([tag]) + _length(len(value)) + value


def _sequence(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _integer(value: int) -> bytes:
    return _tlv(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big"))


def encrypt_pkcs8_pem(pkcs8_der: bytes, password: bytes, *, iterations: int = PBKDF2_ITERATIONS) -> bytes:
    """Wrap an unencrypted PKCS#8 ``PrivateKeyInfo`` (DER) as an encrypted PEM."""
    salt = os.urandom(_SALT_BYTES)
    iv = os.urandom(16)
    key = PBKDF2HMAC(hashes.SHA256(), _AES_KEY_BYTES, salt, iterations).derive(password)
    padder = PKCS7(128).padder()
    plaintext = padder.update(pkcs8_der) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(plaintext) + encryptor.finalize()
    # RFC 8018 A.2: PBKDF2-params ::= SEQUENCE { salt, iterationCount, keyLength, prf }
    pbkdf2 = _sequence(
        _OID_PBKDF2,
        _sequence(
            _tlv(0x04, salt),
            _integer(iterations),
            _integer(_AES_KEY_BYTES),
            _sequence(_OID_HMAC_SHA256, _NULL),
        ),
    )
    # RFC 8018 A.4: PBES2-params ::= SEQUENCE { keyDerivationFunc, encryptionScheme }
    pbes2 = _sequence(PBES2_OID, _sequence(pbkdf2, _sequence(_OID_AES256_CBC, _tlv(0x04, iv))))
    # RFC 5958 §3: EncryptedPrivateKeyInfo ::= SEQUENCE { encryptionAlgorithm, encryptedData }
    der = _sequence(pbes2, _tlv(0x04, ciphertext))
    body = base64.encodebytes(der).replace(b"\n", b"")
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return (
        b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
        + b"\n".join(lines)
        + b"\n-----END ENCRYPTED PRIVATE KEY-----\n"
    )
