"""Our encrypted PKCS#8 files are standard: OpenSSL decrypts them, and they carry a modern work factor."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mudrika.crypto._pkcs8 import PBKDF2_ITERATIONS
from mudrika.crypto.keys import KeyPair, KeyType, PublicKey
from tests._support.paths import openssl

PASSWORD = "interop-password-1"


@pytest.mark.parametrize("key_type", list(KeyType), ids=[t.value for t in KeyType])
def test_openssl_decrypts_our_key_with_the_password_only(key_type: KeyType, tmp_path: Path) -> None:
    pair = KeyPair.generate(key_type)
    path = tmp_path / "key.pem"
    path.write_bytes(pair.private_pem(PASSWORD.encode()))
    out = subprocess.run(
        [openssl(), "pkey", "-in", str(path), "-passin", f"pass:{PASSWORD}", "-pubout"],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert PublicKey.from_pem(out.stdout) == pair.public_key
    wrong = subprocess.run(
        [openssl(), "pkey", "-in", str(path), "-passin", "pass:not-the-password", "-noout"],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert wrong.returncode != 0


def test_key_file_uses_pbes2_pbkdf2_sha256_aes256_with_600k_rounds(tmp_path: Path) -> None:
    path = tmp_path / "key.pem"
    path.write_bytes(KeyPair.generate(KeyType.ED25519).private_pem(PASSWORD.encode()))
    dump = subprocess.run(
        [openssl(), "asn1parse", "-in", str(path)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    for name in ("PBES2", "PBKDF2", "hmacWithSHA256", "aes-256-cbc"):
        assert f":{name}" in dump
    assert f"INTEGER           :{PBKDF2_ITERATIONS:06X}" in dump
