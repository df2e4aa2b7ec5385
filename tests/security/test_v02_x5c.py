"""Root keys in ``x5c``: admitted only by RFC 5280 path validation to the issuer's CA roots in the
trust root, at the signing time (the SDK's ``X5cOrKidPublicKeyProvider`` accepts any chain when it
is given no roots, and never checks validity or CA constraints)."""

from __future__ import annotations

import base64
import datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.payments.report import VerificationReport
from mudrika.payments.v02 import VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN, V02Evidence, append_hop
from mudrika.payments.v02.signing import issue_open_mandate
from tests._support.ap2_v02 import (
    AGENT_PROVIDER,
    CHECKOUT_NONCE,
    MERCHANT_DID,
    Transaction,
    build,
    inspect,
    resign,
    trust_root_for,
)

pytestmark = pytest.mark.security

NOW = datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def usage(*, sign: bool, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def ca_certificate(
    key: ec.EllipticCurvePrivateKey, common_name: str, *, path_length: int = 0
) -> x509.Certificate:
    return (
        x509.CertificateBuilder()
        .subject_name(name(common_name))
        .issuer_name(name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(days=30))
        .not_valid_after(NOW + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
        .add_extension(usage(sign=False, ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )


def leaf_certificate(
    leaf: KeyPair, ca_key: ec.EllipticCurvePrivateKey, *, days: tuple[int, int] = (-1, 30), sign: bool = True
) -> x509.Certificate:
    public = serialization.load_der_public_key(leaf.public_key.to_der())
    assert isinstance(public, ec.EllipticCurvePublicKey)
    return (
        x509.CertificateBuilder()
        .subject_name(name("agent provider signing key"))
        .issuer_name(name("agent provider CA"))
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW + datetime.timedelta(days=days[0]))
        .not_valid_after(NOW + datetime.timedelta(days=days[1]))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(usage(sign=sign, ca=False), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )


def der64(certificate: x509.Certificate) -> str:
    return base64.b64encode(certificate.public_bytes(serialization.Encoding.DER)).decode()


def x5c_chain(transaction: Transaction, signer: KeyPair, x5c: list[str]) -> str:
    """The transaction's checkout chain with a root signed by ``signer`` and carrying ``x5c``."""
    issued = issue_open_mandate(
        transaction.open_checkout,
        issuer=AGENT_PROVIDER,
        issuer_key=signer,
        kid="unused",
        now=transaction.now - 60,
    )
    root_jwt = resign(issued.issuer_jwt, signer, header={"x5c": x5c, "kid": None})
    root = root_jwt + "~" + "".join(d.encoded + "~" for d in issued.disclosures)
    return append_hop(
        root,
        transaction.closed_checkout,
        holder_key=transaction.keys.agent,
        audience=MERCHANT_DID,
        nonce=CHECKOUT_NONCE,
        now=transaction.now,
    )


def check(transaction: Transaction, chain: str, roots: list[str]) -> VerificationReport:
    issuers: dict[str, Any] = {
        AGENT_PROVIDER: {"x509_roots": roots, "vct": [VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN]}
    }
    trust_root = trust_root_for(transaction.keys, issuers=issuers)
    return inspect(transaction, V02Evidence(checkout_chain=chain), trust_root=trust_root, payment_hops=())


@pytest.fixture(scope="module")
def ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    return key, ca_certificate(key, "agent provider CA")


def test_a_chain_to_the_issuers_ca_is_admitted(
    ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate],
) -> None:
    transaction = build()
    signer = KeyPair.generate(KeyType.P256)
    chain = x5c_chain(transaction, signer, [der64(leaf_certificate(signer, ca[0]))])
    report = check(transaction, chain, [der64(ca[1])])
    assert report.verdict == "OK", report.first_failure
    root_key = next(key for key in report.keys if key.role == "issuer")
    assert root_key.thumbprint == signer.public_key.thumbprint()
    assert "x509_roots" in root_key.provenance


def test_chains_that_do_not_validate_are_refused(
    ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate],
) -> None:
    transaction = build()
    signer = KeyPair.generate(KeyType.P256)
    other_key = ec.generate_private_key(ec.SECP256R1())
    cases = {
        "expired at signing": [der64(leaf_certificate(signer, ca[0], days=(-30, -1)))],
        "not yet valid at signing": [der64(leaf_certificate(signer, ca[0], days=(1, 30)))],
        "another CA": [der64(leaf_certificate(signer, other_key))],
        "leaf may not sign": [der64(leaf_certificate(signer, ca[0], sign=False))],
    }
    for case, x5c in cases.items():
        report = check(transaction, x5c_chain(transaction, signer, x5c), [der64(ca[1])])
        assert report.by_id("v02.checkout.hop0.key").code == "x5c_path_invalid", case


def test_a_valid_chain_signed_by_another_key_fails_the_signature(
    ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate],
) -> None:
    transaction = build()
    signer, thief = KeyPair.generate(KeyType.P256), KeyPair.generate(KeyType.P256)
    chain = x5c_chain(transaction, thief, [der64(leaf_certificate(signer, ca[0]))])
    assert check(transaction, chain, [der64(ca[1])]).by_id("v02.checkout.hop0.signature").error == "signature"


def test_x5c_is_refused_without_roots_and_when_malformed(
    ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate],
) -> None:
    transaction = build()
    signer = KeyPair.generate(KeyType.P256)
    good = [der64(leaf_certificate(signer, ca[0]))]
    # The transaction's own trust root pins the issuer by jwks, with no x509_roots.
    report = inspect(
        transaction, V02Evidence(checkout_chain=x5c_chain(transaction, signer, good)), payment_hops=()
    )
    assert report.by_id("v02.checkout.hop0.key").code == "x5c_refused"
    base64url = [good[0].replace("+", "-").replace("/", "_")]  # the SDK's (wrong) decoding
    if base64url != good:
        malformed = check(transaction, x5c_chain(transaction, signer, base64url), [der64(ca[1])])
        assert malformed.by_id("v02.checkout.hop0.key").code == "bad_x5c"
    too_long = check(transaction, x5c_chain(transaction, signer, good * 6), [der64(ca[1])])
    first = too_long.first_failure
    assert first is not None
    assert first.id.startswith("v02.checkout.hop0.")  # refused by the header cap or the x5c cap
