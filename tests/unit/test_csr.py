"""CSR and development-certificate rules: CN is the agent name, the DID goes in the SAN, inputs are checked."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import InvalidInput, SignatureError
from mudrika.identity.csr import create_csr, fingerprint_sha256, inspect_csr, self_signed_certificate, to_pem

DID = "did:bindu:alice_at_example_com:payments_agent:6b3e1c2a-0d4f-8a1b-9c2d-3e4f5a6b7c8d"


@pytest.fixture(scope="module")
def pair() -> KeyPair:
    return KeyPair.generate(KeyType.ED25519)


def test_common_name_is_never_the_did(pair: KeyPair) -> None:
    with pytest.raises(InvalidInput) as info:
        create_csr(pair, agent_name=DID, did=DID)
    assert info.value.code == "bad_agent_name"


@pytest.mark.parametrize("name", ["", "   ", "x" * 65, "bad\nname", "tab\there"])
def test_bad_agent_names(pair: KeyPair, name: str) -> None:
    with pytest.raises(InvalidInput):
        create_csr(pair, agent_name=name, did=DID)


def test_sixty_four_character_name_is_allowed(pair: KeyPair) -> None:
    csr = create_csr(pair, agent_name="a" * 64, did=DID)
    assert inspect_csr(to_pem(csr)).common_name == "a" * 64


@pytest.mark.parametrize(
    "dns", ["-bad.example", "under_score.example", "a" * 64 + ".example", "sp ace.example"]
)
def test_bad_dns_names(pair: KeyPair, dns: str) -> None:
    with pytest.raises(InvalidInput):
        create_csr(pair, agent_name="agent", did=DID, dns_names=[dns])


def test_bad_did_is_refused(pair: KeyPair) -> None:
    with pytest.raises(InvalidInput):
        create_csr(pair, agent_name="agent", did="not-a-did")


def test_tampered_csr_signature_is_detected(pair: KeyPair) -> None:
    der = bytearray(create_csr(pair, agent_name="agent", did=DID).public_bytes(Encoding.DER))
    der[-1] ^= 0x01
    tampered = x509.load_der_x509_csr(bytes(der))
    with pytest.raises(SignatureError):
        inspect_csr(to_pem(tampered))


def test_certificate_validity_and_fingerprint_form(pair: KeyPair) -> None:
    now = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    cert = self_signed_certificate(pair, agent_name="agent", did=DID, days=30, now=now)
    assert cert.not_valid_after_utc == now + dt.timedelta(days=30)
    fingerprint = fingerprint_sha256(cert)
    assert fingerprint.startswith("SHA256:")
    assert len(fingerprint) == 7 + 64
    with pytest.raises(InvalidInput):
        self_signed_certificate(pair, agent_name="agent", did=DID, days=0)
    with pytest.raises(InvalidInput):
        inspect_csr(b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
