"""``x5c`` path validation at its edges: the tests the mutation check of ``payments/v02/_x5c.py``
showed missing (the transaction-level cases are ``test_v02_x5c.py``'s).

What an issuer's ``x5c`` may be (RFC 7515 §4.1.6: base64, not base64url, DER certificates; at most
five), and what the path to the trust root's CA must be (RFC 5280 through
``cryptography.x509.verification``): a leaf that may sign and is not itself a CA, intermediates
taken from the chain, validity at the signing time, and a key mudrika verifies with.
"""

from __future__ import annotations

import base64
import datetime
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.payments.v02._x5c import MAX_X5C_CERTIFICATES, load_certificates, validated_x5c_key
from tests.security.test_v02_x5c import NOW, ca_certificate, der64, leaf_certificate, name, usage

pytestmark = pytest.mark.security

CA_KEY = ec.generate_private_key(ec.SECP256R1())
CA = ca_certificate(CA_KEY, "agent provider CA")
SIGNER = KeyPair.generate(KeyType.P256)
LEAF = leaf_certificate(SIGNER, CA_KEY)


def _validate(x5c: object, roots: list[str] | None = None) -> tuple[object, str]:
    return validated_x5c_key(x5c, roots=roots or [der64(CA)], signed_at=time.time())


def _refused(x5c: object) -> UntrustedKeyError:
    with pytest.raises(UntrustedKeyError) as caught:
        _validate(x5c)
    assert caught.value.code == "x5c_path_invalid"
    return caught.value


def test_a_leaf_issued_by_the_root_is_admitted_and_the_path_named() -> None:
    key, path = _validate([der64(LEAF)])
    assert key == SIGNER.public_key
    assert path == "x5c leaf CN=agent provider signing key -> root CN=agent provider CA"


def _issued(
    subject: str, public: object, issuer: str, key: ec.EllipticCurvePrivateKey, *, ca: bool, sign: bool
) -> x509.Certificate:
    return (
        x509.CertificateBuilder()
        .subject_name(name(subject))
        .issuer_name(name(issuer))
        .public_key(public)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(days=1))
        .not_valid_after(NOW + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None if not ca else 0), critical=True)
        .add_extension(usage(sign=sign, ca=ca), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)  # type: ignore[arg-type]
        .sign(key, hashes.SHA256())
    )


def test_an_intermediate_is_taken_from_the_chain() -> None:
    root_key = ec.generate_private_key(ec.SECP256R1())
    root = ca_certificate(root_key, "root", path_length=1)
    middle_key = ec.generate_private_key(ec.SECP256R1())
    middle = _issued("intermediate", middle_key.public_key(), "root", root_key, ca=True, sign=False)
    public = serialization.load_der_public_key(SIGNER.public_key.to_der())
    leaf = _issued("signer", public, "intermediate", middle_key, ca=False, sign=True)
    key, path = _validate([der64(leaf), der64(middle)], roots=[der64(root)])
    assert (key, path) == (SIGNER.public_key, "x5c leaf CN=signer -> root CN=root")
    with pytest.raises(UntrustedKeyError) as caught:  # the leaf alone does not reach the root
        _validate([der64(leaf)], roots=[der64(root)])
    assert caught.value.code == "x5c_path_invalid"


def test_a_ca_certificate_cannot_be_the_signer() -> None:
    public = serialization.load_der_public_key(SIGNER.public_key.to_der())
    signing_ca = _issued("signing CA", public, "agent provider CA", CA_KEY, ca=True, sign=True)
    _refused([der64(signing_ca)])


def test_a_leaf_key_mudrika_does_not_verify_with_is_refused() -> None:
    p384 = ec.generate_private_key(ec.SECP384R1()).public_key()
    leaf = _issued("p384 signer", p384, "agent provider CA", CA_KEY, ca=False, sign=True)
    refused = _refused([der64(leaf)])
    assert str(refused) == "the x5c leaf key is not a supported signing key"


@pytest.mark.parametrize(
    "values",
    [[], der64(LEAF), [der64(LEAF)] * (MAX_X5C_CERTIFICATES + 1)],
    ids=["empty", "not-a-list", "six"],
)
def test_x5c_is_a_list_of_one_to_five(values: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_certificates(values)
    assert (caught.value.code, str(caught.value)) == (
        "bad_x5c",
        "x5c must be a non-empty list of at most 5 certificates",
    )
    assert len(load_certificates([der64(LEAF)] * MAX_X5C_CERTIFICATES)) == MAX_X5C_CERTIFICATES == 5


@pytest.mark.parametrize(
    "entry",
    [
        LEAF.public_bytes(serialization.Encoding.DER),
        der64(LEAF)[:64] + "\n" + der64(LEAF)[64:],  # a PEM line break: not strict base64
        der64(LEAF).replace("+", "-").replace("/", "_") + "!",
    ],
    ids=["bytes", "line-break", "base64url"],
)
def test_an_entry_is_strict_base64_text(entry: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_certificates([entry])
    assert (caught.value.code, str(caught.value)) == ("bad_x5c", "an x5c entry is a base64 DER certificate")


def _certificate_of_der_size(size: int) -> str:
    """A certificate whose DER is exactly ``size`` bytes (Ed25519 signatures have one length), padded
    with an unrecognised non-critical extension."""
    ca_key = ed25519.Ed25519PrivateKey.generate()
    for padding in range(size, 0, -1):
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name("big"))
            .issuer_name(name("big"))
            .public_key(ca_key.public_key())
            .serial_number(1)
            .not_valid_before(NOW - datetime.timedelta(days=1))
            .not_valid_after(NOW + datetime.timedelta(days=1))
            .add_extension(
                x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.99999.1"), bytes(padding)),
                critical=False,
            )
            .sign(ca_key, None)
        )
        der = certificate.public_bytes(serialization.Encoding.DER)
        if len(der) == size:
            return base64.b64encode(der).decode()
        if len(der) < size:
            break
    raise AssertionError(f"no padding gives {size} bytes")


def test_an_entry_is_at_most_32_kib_of_base64() -> None:
    largest = _certificate_of_der_size(24 * 1024)
    assert len(largest) == 32 * 1024
    assert len(load_certificates([largest])) == 1
    over = _certificate_of_der_size(24 * 1024 + 1)
    assert len(over) == 32 * 1024 + 4
    with pytest.raises(InvalidInput) as caught:
        load_certificates([over])
    assert caught.value.code == "bad_x5c"


def test_the_reason_a_path_fails_is_cut_at_200_characters() -> None:
    """cryptography names the certificate it was processing, so the reason can be as long as a
    subject an issuer chose: the report carries its first 200 characters."""
    refused = _refused([der64(leaf_certificate(SIGNER, CA_KEY, sign=False))])
    detail = refused.fields["detail"]
    assert len(detail) == 200
    assert detail.startswith("validation failed: Python extension validator failed: ValueError: the leaf")
    expired = _refused([der64(leaf_certificate(SIGNER, CA_KEY, days=(-30, -1)))])
    assert expired.fields["detail"].startswith("validation failed: cert is not valid at validation time")
    assert len(expired.fields["detail"]) < 200
