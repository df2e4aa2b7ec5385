"""Certificate signing requests and development certificates bound to an agent's DID.

Why the shape: the CSR is signed by the identity key itself (proof of possession of the key the DID
names), the subject CN is the human agent name (RFC 5280 ub-common-name caps it at 64 characters,
which a did:key or did:bindu string routinely exceeds), and the DID travels where identifiers belong,
as a URI in the subjectAltName (RFC 5280 §4.2.1.6).  Fingerprints use the ``SHA256:<hex>`` form that
``AgentTrust.certificate_fingerprint`` carries.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.errors import InvalidInput, SignatureError
from mudrika.identity.did import parse_did

__all__ = [
    "CsrInfo",
    "create_csr",
    "fingerprint_sha256",
    "inspect_csr",
    "self_signed_certificate",
    "to_pem",
]

_MAX_CN = 64  # RFC 5280 Appendix A: ub-common-name INTEGER ::= 64
_DNS_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
_MAX_DNS_NAMES = 32
_MAX_CSR_PEM = 64 * 1024


def _check_agent_name(agent_name: str) -> str:
    if not isinstance(agent_name, str) or not agent_name.strip():
        raise InvalidInput("agent name must be a non-empty string", code="bad_agent_name")
    if len(agent_name) > _MAX_CN:
        raise InvalidInput(
            f"agent name is longer than {_MAX_CN} characters (the X.509 common-name limit)",
            code="bad_agent_name",
            length=len(agent_name),
        )
    if agent_name.lower().startswith("did:"):
        raise InvalidInput(
            "the common name is the agent's name, not its DID (the DID goes in the subjectAltName)",
            code="bad_agent_name",
        )
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in agent_name):
        raise InvalidInput("agent name contains control characters", code="bad_agent_name")
    return agent_name


def _check_dns_name(name: str) -> str:
    labels = name.rstrip(".").split(".")
    if len(name) > 253 or not all(_DNS_LABEL.fullmatch(label) for label in labels):
        raise InvalidInput("invalid DNS name for the subjectAltName", code="bad_dns_name", name=name[:64])
    return name.rstrip(".").lower()


def _san(did: str, dns_names: Sequence[str]) -> x509.SubjectAlternativeName:
    parse_did(did)
    if len(dns_names) > _MAX_DNS_NAMES:
        raise InvalidInput("too many DNS names", code="too_many_dns_names", limit=_MAX_DNS_NAMES)
    general: list[x509.GeneralName] = [x509.UniformResourceIdentifier(did)]
    general.extend(x509.DNSName(_check_dns_name(name)) for name in dns_names)
    return x509.SubjectAlternativeName(general)


def _signing_hash(pair: KeyPair) -> hashes.SHA256 | None:
    # Ed25519 signs the message itself (RFC 8410 §6): the hash argument must be None.
    return None if isinstance(pair.to_cryptography(), ed25519.Ed25519PrivateKey) else hashes.SHA256()


def _subject(agent_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, _check_agent_name(agent_name))])


def create_csr(
    pair: KeyPair, *, agent_name: str, did: str, dns_names: Sequence[str] = ()
) -> x509.CertificateSigningRequest:
    """Build a PKCS#10 CSR for ``pair``, signed by ``pair``, with CN=agent name and SAN=DID (+ DNS names)."""
    builder = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(_subject(agent_name))
        .add_extension(_san(did, dns_names), critical=False)
    )
    return builder.sign(pair.to_cryptography(), _signing_hash(pair))


def self_signed_certificate(
    pair: KeyPair,
    *,
    agent_name: str,
    did: str,
    dns_names: Sequence[str] = (),
    days: int = 30,
    now: dt.datetime | None = None,
) -> x509.Certificate:
    """A short-lived self-signed certificate for development; not a substitute for a CA-issued one."""
    if not 1 <= days <= 397:
        raise InvalidInput("certificate validity must be 1 to 397 days", code="bad_validity", days=days)
    start = (now or dt.datetime.now(dt.UTC)).replace(microsecond=0)
    name = _subject(agent_name)
    public = pair.public_key.to_cryptography()
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - dt.timedelta(minutes=5))
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(_san(did, dns_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    return builder.sign(pair.to_cryptography(), _signing_hash(pair))


def to_pem(obj: x509.Certificate | x509.CertificateSigningRequest) -> bytes:
    return obj.public_bytes(serialization.Encoding.PEM)


def fingerprint_sha256(obj: x509.Certificate | x509.CertificateSigningRequest | bytes) -> str:
    """``SHA256:<lowercase hex>`` over the DER encoding (the AgentTrust.certificate_fingerprint form)."""
    der = obj if isinstance(obj, bytes) else obj.public_bytes(serialization.Encoding.DER)
    return "SHA256:" + hashlib.sha256(der).hexdigest()


@dataclass(frozen=True, slots=True)
class CsrInfo:
    common_name: str
    dids: tuple[str, ...]
    dns_names: tuple[str, ...]
    public_key: PublicKey
    fingerprint: str


def inspect_csr(pem: bytes) -> CsrInfo:
    """Parse a CSR, verify its self-signature, and return what it binds; raises on a bad signature."""
    if len(pem) > _MAX_CSR_PEM:
        raise InvalidInput("CSR too large", code="too_large", limit=_MAX_CSR_PEM)
    try:
        csr = x509.load_pem_x509_csr(pem)
    except ValueError:
        raise InvalidInput("not a PEM certificate signing request", code="bad_csr") from None
    if not csr.is_signature_valid:
        raise SignatureError("CSR self-signature does not verify", code="bad_signature")
    names = csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[0].value) if names else ""
    try:
        san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        raise InvalidInput("CSR has no subjectAltName", code="bad_csr") from None
    uris = tuple(
        uri for uri in san.get_values_for_type(x509.UniformResourceIdentifier) if uri.startswith("did:")
    )
    return CsrInfo(
        common_name=common_name,
        dids=uris,
        dns_names=tuple(san.get_values_for_type(x509.DNSName)),
        public_key=PublicKey.from_cryptography(csr.public_key()),
        fingerprint=fingerprint_sha256(csr),
    )
