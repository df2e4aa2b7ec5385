"""did:bindu: Bindu-compatible shape, self-certifying agent id, and what resolution refuses."""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.errors import BindingError, DocumentError, InvalidInput, VerificationError
from mudrika.identity._x25519 import ed25519_to_x25519
from mudrika.identity.did import parse_did
from mudrika.identity.methods import bindu
from mudrika.identity.resolver import DIDResolver


def _seeded(last_byte: int) -> PublicKey:
    return KeyPair(ed25519.Ed25519PrivateKey.from_private_bytes(bytes(31) + bytes([last_byte]))).public_key


def test_worked_example_of_docs_identity_md() -> None:
    # Ed25519 key from the seed 00…03 (did:key test vector z6MkvqoY…): docs/identity.md walks through it.
    public = _seeded(3)
    multicodec = b"\xed\x01" + public.raw
    digest = hashlib.sha256(multicodec).digest()
    assert digest[:16].hex() == "d153ebd9613fe209c0831bc25fceec15"
    assert bindu.agent_id_for(public) == "d153ebd9613f820980831bc25fceec15"
    assert bindu.create(public, author="ops@example.com", agent_name="Echo Agent") == (
        "did:bindu:ops_at_example_com:echo_agent:d153ebd9613f820980831bc25fceec15"
    )


@pytest.mark.parametrize("kind", ["ed25519", "p256", "secp256k1", "rsa"])
def test_agent_id_is_a_version_8_uuid_derived_from_the_key(kind: str) -> None:
    public = KeyPair.generate(kind).public_key
    agent_id = bindu.agent_id_for(public)
    parsed = uuid.UUID(hex=agent_id)
    assert parsed.hex == agent_id
    assert parsed.version == 8
    assert parsed.variant == uuid.RFC_4122
    # Independent recomputation: the hash of the bytes inside the key's did:key, bits set with int ops.
    from mudrika.crypto.multibase import base58btc_decode

    value = int.from_bytes(hashlib.sha256(base58btc_decode(public.to_multikey()[1:])).digest()[:16], "big")
    value = (value & ~(0xF << 76)) | (0x8 << 76)
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    assert agent_id == f"{value:032x}"
    assert bindu.agent_id_for(public) == agent_id  # deterministic
    assert bindu.agent_id_for(KeyPair.generate(kind).public_key) != agent_id  # a new key, a new DID


@pytest.mark.parametrize(
    ("raw", "sanitised"),
    [
        ("ops@example.com", "ops_at_example_com"),
        ("Echo Agent", "echo_agent"),
        ("my-agent_2", "my-agent_2"),
        ("A.B C@D", "a_b_c_at_d"),
    ],
)
def test_author_and_name_are_sanitised_like_bindu(raw: str, sanitised: str) -> None:
    assert bindu.sanitize(raw) == sanitised


@pytest.mark.parametrize("raw", ["", "a:b", "caf\u00e9", "x" * 65, "a/b", "a+b", "a%41"])
def test_components_that_cannot_be_in_a_did_are_refused(raw: str) -> None:
    with pytest.raises(InvalidInput) as info:
        bindu.sanitize(raw)
    assert info.value.code == "invalidDid"


def test_created_did_parses_as_a_did_and_as_bindu() -> None:
    public = KeyPair.generate("ed25519").public_key
    did = bindu.create(public, author="Alice@Example.org", agent_name="Shopper")
    assert parse_did(did).method == "bindu"
    parts = bindu.parse(did)
    assert (parts.author, parts.agent_name, parts.agent_id) == (
        "alice_at_example_org",
        "shopper",
        bindu.agent_id_for(public),
    )
    assert str(parts) == did


@pytest.mark.parametrize(
    "did",
    [
        "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
        "did:bindu:alice:agent",
        "did:bindu:alice:agent:x:0123456789abcdef0123456789abcdef",
        "did:bindu:Alice:agent:0123456789abcdef0123456789abcdef",
        "did:bindu:alice:agent:0123456789ABCDEF0123456789ABCDEF",
        "did:bindu:alice:agent:01234567-89ab-cdef-0123-456789abcdef",
    ],
)
def test_malformed_bindu_dids(did: str) -> None:
    with pytest.raises(InvalidInput) as info:
        bindu.parse(did)
    assert info.value.code == "invalidDid"


@pytest.fixture
def agent() -> tuple[PublicKey, dict[str, Any]]:
    public = KeyPair.generate("ed25519").public_key
    doc = bindu.document(
        public,
        author="ops@example.com",
        agent_name="echo",
        services=[{"id": "#a2a", "type": "A2AAgent", "serviceEndpoint": "https://echo.example/a2a"}],
    )
    return public, doc.to_json()


def test_self_certified_document_is_accepted(agent: tuple[PublicKey, dict[str, Any]]) -> None:
    public, data = agent
    doc = bindu.verify_document(data["id"], data)
    for purpose in ("authentication", "assertionMethod", "capabilityInvocation", "capabilityDelegation"):
        assert doc.key_for("#key-1", purpose) == public
    assert doc.authorised("keyAgreement") == ()
    assert bindu.verify_document(data["id"], doc) is doc


def test_derived_x25519_key_agreement_is_accepted(agent: tuple[PublicKey, dict[str, Any]]) -> None:
    public, data = agent
    data = copy.deepcopy(data)
    data["verificationMethod"].append(
        {
            "id": "#agree",
            "type": "Multikey",
            "controller": data["id"],
            "publicKeyMultibase": ed25519_to_x25519(public).to_multikey(),
        }
    )
    data["keyAgreement"] = ["#agree"]
    assert bindu.verify_document(data["id"], data).key_for("#agree", "keyAgreement") == ed25519_to_x25519(
        public
    )


def _foreign_key(data: dict[str, Any]) -> None:
    data["verificationMethod"].append(
        {
            "id": "#key-2",
            "type": "Multikey",
            "controller": data["id"],
            "publicKeyMultibase": KeyPair.generate("ed25519").public_key.to_multikey(),
        }
    )
    data["authentication"].append("#key-2")


def _foreign_embedded_key(data: dict[str, Any]) -> None:
    data["assertionMethod"].append(
        {
            "id": "#key-3",
            "type": "JsonWebKey2020",
            "controller": data["id"],
            "publicKeyJwk": KeyPair.generate("p256").public_key.to_jwk(),
        }
    )


def _foreign_x25519(data: dict[str, Any]) -> None:
    other = ed25519_to_x25519(KeyPair.generate("ed25519").public_key)
    data["verificationMethod"].append(
        {
            "id": "#agree",
            "type": "Multikey",
            "controller": data["id"],
            "publicKeyMultibase": other.to_multikey(),
        }
    )
    data["keyAgreement"] = ["#agree"]


def _swapped_key(data: dict[str, Any]) -> None:
    data["verificationMethod"][0]["publicKeyMultibase"] = KeyPair.generate("ed25519").public_key.to_multikey()


def _account_only(data: dict[str, Any]) -> None:
    data["verificationMethod"].append(
        {
            "id": "#acct",
            "type": "EcdsaSecp256k1RecoveryMethod2020",
            "controller": data["id"],
            "blockchainAccountId": "eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a",
        }
    )


def _other_controller(data: dict[str, Any]) -> None:
    data["controller"] = "did:example:mallory"


def _only_agreement(data: dict[str, Any]) -> None:
    public = KeyPair.generate("ed25519").public_key
    data["verificationMethod"] = [
        {
            "id": "#agree",
            "type": "Multikey",
            "controller": data["id"],
            "publicKeyMultibase": ed25519_to_x25519(public).to_multikey(),
        }
    ]
    for purpose in ("authentication", "assertionMethod", "capabilityInvocation", "capabilityDelegation"):
        data.pop(purpose)
    data["keyAgreement"] = ["#agree"]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_foreign_key, "foreign_key"),
        (_foreign_embedded_key, "foreign_key"),
        (_foreign_x25519, "foreign_key"),
        (_swapped_key, "foreign_key"),
        (_account_only, "unverifiable_method"),
        (_other_controller, "foreign_controller"),
        (_only_agreement, "no_identity_key"),
    ],
)
def test_documents_that_are_not_self_certifying_are_refused(
    agent: tuple[PublicKey, dict[str, Any]], change: Any, reason: str
) -> None:
    _, data = agent
    data = copy.deepcopy(data)
    change(data)
    with pytest.raises(VerificationError) as info:
        bindu.verify_document(data["id"], data)
    assert info.value.code == "not_self_certifying"
    assert info.value.fields["reason"] == reason


def test_document_of_another_did_is_refused(agent: tuple[PublicKey, dict[str, Any]]) -> None:
    public, data = agent
    other_did = bindu.create(public, author="ops@example.com", agent_name="other")
    with pytest.raises(BindingError) as info:
        bindu.verify_document(other_did, data)
    assert info.value.code == "document_id_mismatch"


def test_legacy_random_agent_id_is_not_self_certifying() -> None:
    public = KeyPair.generate("ed25519").public_key
    legacy = f"did:bindu:ops_at_example_com:echo:{uuid.uuid4().hex}"
    data = bindu.document(public, author="ops@example.com", agent_name="echo").to_json()
    legacy_doc = json.loads(json.dumps(data).replace(data["id"], legacy))  # same document, legacy id
    with pytest.raises(VerificationError) as info:
        bindu.verify_document(legacy, legacy_doc)
    assert info.value.code == "not_self_certifying"


def test_driver_resolves_through_a_source_and_checks_it(agent: tuple[PublicKey, dict[str, Any]]) -> None:
    public, data = agent
    seen: list[str] = []

    def source(did: str) -> dict[str, Any] | None:
        seen.append(did)
        return data if did == data["id"] else None

    resolver = DIDResolver()
    resolver.register(bindu.BinduDriver(source))
    assert resolver.resolve_key(data["id"] + "#key-1", "authentication") == public
    assert resolver.resolve(data["id"]).resolution_metadata["driver"] == "bindu"
    missing = bindu.create(KeyPair.generate("ed25519").public_key, author="a", agent_name="b")
    with pytest.raises(DocumentError) as info:
        resolver.resolve(missing)
    assert info.value.code == "notFound"
    tampered = copy.deepcopy(data)
    _foreign_key(tampered)
    resolver.register(bindu.BinduDriver(lambda did: tampered))
    with pytest.raises(VerificationError) as verr:
        resolver.resolve(data["id"])
    assert verr.value.code == "not_self_certifying"
    assert seen == [data["id"], missing]  # the second resolve of data["id"] was a cache hit
