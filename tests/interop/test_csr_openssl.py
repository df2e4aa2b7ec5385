"""Every CSR we make passes `openssl req -verify`, parses with cryptography and carries the DID in its SAN."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.identity.csr import create_csr, fingerprint_sha256, inspect_csr, self_signed_certificate, to_pem
from tests._support.paths import openssl

DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


@pytest.mark.parametrize("key_type", list(KeyType), ids=[t.value for t in KeyType])
def test_csr_verifies_with_openssl_and_carries_the_did(key_type: KeyType, tmp_path: Path) -> None:
    pair = KeyPair.generate(key_type)
    csr = create_csr(pair, agent_name="payments-agent", did=DID, dns_names=["agent.example.com"])
    pem_path = tmp_path / "agent.csr"
    pem_path.write_bytes(to_pem(csr))
    result = subprocess.run(
        [openssl(), "req", "-in", str(pem_path), "-verify", "-noout", "-text"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "verify OK" in (result.stdout + result.stderr)
    assert f"URI:{DID}" in result.stdout
    assert "DNS:agent.example.com" in result.stdout

    parsed = x509.load_pem_x509_csr(pem_path.read_bytes())
    assert parsed.is_signature_valid
    assert parsed.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "payments-agent"
    san = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.UniformResourceIdentifier) == [DID]
    info = inspect_csr(pem_path.read_bytes())
    assert info.dids == (DID,)
    assert info.public_key == pair.public_key


@pytest.mark.parametrize("key_type", [KeyType.ED25519, KeyType.P256], ids=["ed25519", "p256"])
def test_self_signed_certificate_verifies_with_openssl(key_type: KeyType, tmp_path: Path) -> None:
    pair = KeyPair.generate(key_type)
    cert = self_signed_certificate(pair, agent_name="dev-agent", did=DID, days=7)
    cert_path = tmp_path / "agent.crt"
    cert_path.write_bytes(to_pem(cert))
    result = subprocess.run(
        [openssl(), "verify", "-CAfile", str(cert_path), "-partial_chain", str(cert_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    fingerprint = subprocess.run(
        [openssl(), "x509", "-in", str(cert_path), "-noout", "-fingerprint", "-sha256"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    openssl_hex = fingerprint.split("=", 1)[1].strip().replace(":", "").lower()
    assert fingerprint_sha256(cert) == f"SHA256:{openssl_hex}"
