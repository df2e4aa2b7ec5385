"""The DID Core document model: validation at load time and purpose-bound key lookup."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.crypto.multibase import base58btc_encode
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity._x25519 import X25519PublicKey, ed25519_to_x25519
from mudrika.identity.document import PURPOSES, DIDDocument

DID = "did:example:alice"


@pytest.fixture(scope="module")
def keys() -> dict[str, PublicKey]:
    return {name: KeyPair.generate(name).public_key for name in ("ed25519", "p256", "secp256k1")}


def _document(keys: dict[str, PublicKey]) -> dict[str, Any]:
    signing = keys["ed25519"]
    return {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
        "id": DID,
        "controller": DID,
        "alsoKnownAs": ["https://alice.example"],
        "verificationMethod": [
            {
                "id": "#key-1",
                "type": "Multikey",
                "controller": DID,
                "publicKeyMultibase": signing.to_multikey(),
            },
            {
                "id": f"{DID}#key-2",
                "type": "JsonWebKey2020",
                "controller": DID,
                "publicKeyJwk": keys["p256"].to_jwk(),
                "x-note": "kept",
            },
            {
                "id": "#agree",
                "type": "X25519KeyAgreementKey2020",
                "controller": DID,
                "publicKeyMultibase": ed25519_to_x25519(signing).to_multikey(),
            },
        ],
        "authentication": [
            "#key-1",
            {
                "id": "#embedded",
                "type": "EcdsaSecp256k1VerificationKey2019",
                "controller": DID,
                "publicKeyJwk": keys["secp256k1"].to_jwk(),
            },
        ],
        "assertionMethod": [f"{DID}#key-2"],
        "keyAgreement": ["#agree"],
        "capabilityInvocation": ["#key-1"],
        "service": [{"id": "#a2a", "type": "A2AAgent", "serviceEndpoint": "https://alice.example/a2a"}],
        "x-extension": {"anything": [1, 2, 3]},
    }


def test_key_for_returns_only_keys_authorised_for_the_purpose(keys: dict[str, PublicKey]) -> None:
    doc = DIDDocument.from_json(_document(keys))
    assert doc.key_for(f"{DID}#key-1", "authentication") == keys["ed25519"]
    assert doc.key_for("#key-1", "capabilityInvocation") == keys["ed25519"]
    assert doc.key_for("#key-2", "assertionMethod") == keys["p256"]
    assert doc.key_for("#embedded", "authentication") == keys["secp256k1"]
    agreement = doc.key_for("#agree", "keyAgreement")
    assert isinstance(agreement, X25519PublicKey)
    assert agreement == ed25519_to_x25519(keys["ed25519"])
    with pytest.raises(UntrustedKeyError) as info:
        doc.key_for("#key-1", "assertionMethod")
    assert info.value.code == "not_authorised_for_purpose"
    with pytest.raises(UntrustedKeyError) as info:
        doc.key_for("#key-2", "capabilityDelegation")
    assert info.value.code == "not_authorised_for_purpose"
    with pytest.raises(UntrustedKeyError) as info:
        doc.key_for("#nope", "authentication")
    assert info.value.code == "unknown_key"
    with pytest.raises(UntrustedKeyError) as info:
        doc.key_for("did:example:bob#key-1", "authentication")
    assert info.value.code == "unknown_key"
    with pytest.raises(InvalidInput) as bad:
        doc.key_for("#key-1", "signing")  # type: ignore[call-overload]
    assert bad.value.code == "bad_purpose"


def test_queries_and_indexes(keys: dict[str, PublicKey]) -> None:
    doc = DIDDocument.from_json(_document(keys))
    assert str(doc.did) == DID
    assert doc.authorised("authentication") == (f"{DID}#key-1", f"{DID}#embedded")
    assert doc.authorised("capabilityDelegation") == ()
    assert doc.verification_method("#key-2").type == "JsonWebKey2020"
    assert set(doc.all_methods) == {f"{DID}#key-1", f"{DID}#key-2", f"{DID}#agree", f"{DID}#embedded"}
    with pytest.raises(UntrustedKeyError):
        doc.verification_method("#missing")


def test_json_round_trip_keeps_context_and_unknown_properties(keys: dict[str, PublicKey]) -> None:
    source = _document(keys)
    doc = DIDDocument.from_json(source)
    out = doc.to_json()
    assert out == source
    assert DIDDocument.from_json(out).to_json() == out


def test_document_is_frozen(keys: dict[str, PublicKey]) -> None:
    doc = DIDDocument.from_json(_document(keys))
    with pytest.raises(ValidationError):
        doc.id = "did:example:mallory"


def test_x25519_key_is_never_handed_out_for_signing(keys: dict[str, PublicKey]) -> None:
    source = _document(keys)
    source["authentication"] = ["#agree"]
    doc = DIDDocument.from_json(source)
    with pytest.raises(UntrustedKeyError) as info:
        doc.key_for("#agree", "authentication")
    assert info.value.code == "key_type_mismatch"


_P256_MULTIKEY = KeyPair.generate("p256").public_key.to_multikey()
_SHORT_X25519 = "z" + base58btc_encode(b"\xec\x01" + b"\x01" * 10)


def _set_method(source: dict[str, Any], index: int, vm_type: str, multibase: str) -> None:
    source["verificationMethod"][index]["type"] = vm_type
    source["verificationMethod"][index]["publicKeyMultibase"] = multibase


def _mutated(keys: dict[str, PublicKey], change: Any) -> dict[str, Any]:
    source = copy.deepcopy(_document(keys))
    change(source)
    return source


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda d: d.__setitem__("assertionMethod", ["#missing"]), "dangling_reference"),
        (lambda d: d.__setitem__("keyAgreement", ["did:example:bob#agree"]), "dangling_reference"),
        (lambda d: d["verificationMethod"][1].__setitem__("id", "#key-1"), "duplicate_id"),
        (lambda d: d["service"][0].__setitem__("id", "#key-1"), "duplicate_id"),
        (lambda d: d["authentication"][1].__setitem__("id", "#key-1"), "duplicate_id"),
        (
            lambda d: d["verificationMethod"][0].__setitem__("id", "did:example:bob#k"),
            "foreign_verification_method",
        ),
        (lambda d: d.__setitem__("id", "alice"), "bad_document_id"),
        (lambda d: d.__setitem__("id", "did:example:alice#frag"), "bad_document_id"),
        (lambda d: d.__setitem__("controller", "not-a-did"), "not_a_did"),
        (lambda d: d["verificationMethod"][0].__setitem__("controller", "nope"), "not_a_did"),
        (lambda d: d["verificationMethod"][0].pop("publicKeyMultibase"), "missing_key_material"),
        (
            lambda d: d["verificationMethod"][1].__setitem__("publicKeyMultibase", "z6Mk"),
            "ambiguous_key_material",
        ),
        (lambda d: d["verificationMethod"][1]["publicKeyJwk"].__setitem__("d", "AAAA"), "private_jwk"),
        (
            lambda d: d["verificationMethod"][0].__setitem__("privateKeyMultibase", "z3u2"),
            "private_key_material",
        ),
        (lambda d: d["authentication"][1].__setitem__("privateKeyJwk", {}), "private_key_material"),
        (lambda d: d.__setitem__("alsoKnownAs", ["https://a.example"] * 65), "too_large"),
        (lambda d: d["verificationMethod"][0].__setitem__("publicKeyMultibase", "z0OIl"), "bad_multibase"),
        (lambda d: d["verificationMethod"][0].__setitem__("publicKeyMultibase", "uAAAA"), "bad_multibase"),
        (lambda d: _set_method(d, 0, "Ed25519VerificationKey2020", _P256_MULTIKEY), "key_type_mismatch"),
        (lambda d: _set_method(d, 2, "Multikey", _SHORT_X25519), "bad_key"),
        (lambda d: d["verificationMethod"][1]["publicKeyJwk"].__setitem__("y", "AAAA"), "bad_jwk"),
        (lambda d: d.__setitem__("verificationMethod", {"id": "#x"}), "bad_did_document"),
        (lambda d: d.__setitem__("authentication", [5]), "bad_did_document"),
        (lambda d: d["verificationMethod"][0].__setitem__("type", ""), "bad_verification_method"),
        (
            lambda d: d.__setitem__("service", [{"id": "a b", "type": "x", "serviceEndpoint": "y"}]),
            "bad_did_document",
        ),
        (
            lambda d: d.__setitem__(
                "verificationMethod",
                [
                    {
                        "id": f"#k{i}",
                        "type": "Multikey",
                        "controller": DID,
                        "publicKeyMultibase": d["verificationMethod"][0]["publicKeyMultibase"],
                    }
                    for i in range(65)
                ],
            ),
            "too_large",
        ),
    ],
)
def test_invalid_documents_are_refused_at_load_time(
    keys: dict[str, PublicKey], change: Any, code: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        DIDDocument.from_json(_mutated(keys, change))
    assert info.value.code == code


def test_a_document_must_be_an_object() -> None:
    with pytest.raises(InvalidInput) as info:
        DIDDocument.from_json(["not", "a", "document"])  # type: ignore[arg-type]
    assert info.value.code == "bad_did_document"


def test_methods_of_a_controller_did_may_be_listed(keys: dict[str, PublicKey]) -> None:
    source = _document(keys)
    source["controller"] = [DID, "did:example:org"]
    source["verificationMethod"].append(
        {
            "id": "did:example:org#key-9",
            "type": "Multikey",
            "controller": "did:example:org",
            "publicKeyMultibase": keys["p256"].to_multikey(),
        }
    )
    source["capabilityDelegation"] = ["did:example:org#key-9"]
    doc = DIDDocument.from_json(source)
    assert doc.key_for("did:example:org#key-9", "capabilityDelegation") == keys["p256"]


def test_methods_we_cannot_use_are_kept_but_yield_no_key() -> None:
    source = {
        "id": "did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a",
        "verificationMethod": [
            {
                "id": "#blockchainAccountId",
                "type": "EcdsaSecp256k1RecoveryMethod2020",
                "controller": "did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a",
                "blockchainAccountId": "eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a",
            },
            {
                "id": "#other",
                "type": "SomeFutureKey2030",
                "controller": "did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a",
                "publicKeyMultibase": "zUnknownEncoding",
            },
        ],
        "authentication": ["#blockchainAccountId", "#other"],
    }
    doc = DIDDocument.from_json(source)
    with pytest.raises(UntrustedKeyError) as info:
        doc.key_for("#blockchainAccountId", "authentication")
    assert info.value.code == "unsupported_method_type"
    with pytest.raises(UntrustedKeyError) as info:
        doc.key_for("#other", "authentication")
    assert info.value.code == "unsupported_method_type"


def test_account_id_only_method_of_a_known_type_has_no_public_key() -> None:
    did = "did:pkh:solana:4sGjMW1sUnHzSxGspuhpqLDx6wiyjNtZ:CKg5d12Jhpej1JqtmxLJgaFqqeYjxgPqToJ4LBdvG9Ev"
    source = {
        "id": did,
        "verificationMethod": [
            {
                "id": "#c",
                "type": "Ed25519VerificationKey2018",
                "controller": did,
                "blockchainAccountId": "solana:x",
            }
        ],
        "assertionMethod": ["#c"],
    }
    doc = DIDDocument.from_json(source)
    with pytest.raises(UntrustedKeyError) as info:
        doc.key_for("#c", "assertionMethod")
    assert info.value.code == "no_public_key"


def test_legacy_base58_key_material_is_read_for_the_types_that_define_it(keys: dict[str, PublicKey]) -> None:
    source: dict[str, Any] = {
        "id": DID,
        "verificationMethod": [
            {
                "id": "#k",
                "type": "Ed25519VerificationKey2018",
                "controller": DID,
                "publicKeyBase58": base58btc_encode(keys["ed25519"].raw),
            },
            {
                "id": "#p",
                "type": "P256Key2021",
                "controller": DID,
                "publicKeyBase58": base58btc_encode(keys["p256"].raw),
            },
        ],
        "assertionMethod": ["#k", "#p"],
    }
    doc = DIDDocument.from_json(source)
    assert doc.key_for("#k", "assertionMethod") == keys["ed25519"]
    assert doc.key_for("#p", "assertionMethod") == keys["p256"]
    source["verificationMethod"][0]["type"] = "Multikey"  # base58 has no codec: Multikey cannot use it
    with pytest.raises(InvalidInput) as info:
        DIDDocument.from_json(source)
    assert info.value.code == "bad_verification_method"


def test_every_purpose_name_is_a_relationship() -> None:
    assert PURPOSES == (
        "authentication",
        "assertionMethod",
        "keyAgreement",
        "capabilityInvocation",
        "capabilityDelegation",
    )


# -- did:key's deferred keyAgreement method ---------------------------------------------------------


def _count_derivations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the X25519 conversions did:key performs (the expensive step that is deferred)."""
    from mudrika.identity import _x25519
    from mudrika.identity.methods import key as did_key

    calls: list[int] = []

    def counting(y: int) -> X25519PublicKey:
        calls.append(y)
        return _x25519.x25519_from_edwards_y(y)

    monkeypatch.setattr(did_key, "x25519_from_edwards_y", counting)
    return calls


def _signing_key(doc: DIDDocument) -> PublicKey:
    return doc.key_for(doc.authorised("authentication")[0], "authentication")


def _eager(did: str) -> DIDDocument:
    """The same did:key document, fully validated from JSON (what the lazy one must equal)."""
    from mudrika.identity.methods import key as did_key

    return DIDDocument.from_json(did_key.document(did).to_json())


def test_did_key_derives_the_x25519_key_only_when_key_agreement_is_read(
    keys: dict[str, PublicKey], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mudrika.identity.methods import key as did_key

    calls = _count_derivations(monkeypatch)
    did = did_key.create(keys["ed25519"])
    doc = did_key.document(did)
    signing = doc.authorised("assertionMethod")[0]
    assert doc.key_for(signing, "assertionMethod") == keys["ed25519"]
    assert doc.id == did
    assert doc.verification_method(signing).controller == did
    assert calls == []  # a signature check never paid for the X25519 key
    agreement_id = doc.authorised("keyAgreement")[0]
    assert doc.key_for(agreement_id, "keyAgreement") == ed25519_to_x25519(keys["ed25519"])
    assert len(calls) == 1
    assert len(doc.verification_methods or ()) == 2
    assert doc.key_agreement == (agreement_id,)
    assert len(calls) == 1  # built once


@pytest.mark.parametrize(
    "read",
    [
        lambda doc: doc.verification_methods,
        lambda doc: doc.key_agreement,
        lambda doc: doc.all_methods,
        lambda doc: doc.authorised("keyAgreement"),
        lambda doc: doc.to_json(),
        lambda doc: doc.model_dump(),
        lambda doc: doc.model_dump_json(),
        dict,
        repr,
        copy.copy,
        copy.deepcopy,
        lambda doc: doc.model_copy(),
        lambda doc: doc.verification_method(f"#{ed25519_to_x25519(_signing_key(doc)).to_multikey()}"),
    ],
)
def test_every_way_of_reading_sees_the_key_agreement_method(
    keys: dict[str, PublicKey], monkeypatch: pytest.MonkeyPatch, read: Any
) -> None:
    from mudrika.identity.methods import key as did_key

    calls = _count_derivations(monkeypatch)
    did = did_key.create(keys["ed25519"])
    doc = did_key.document(did)
    result = read(doc)
    assert len(calls) == 1
    expected = _eager(did)
    assert doc.to_json() == expected.to_json()
    assert doc == expected
    if isinstance(result, DIDDocument):
        assert result.to_json() == expected.to_json()
        assert result.authorised("keyAgreement") == expected.authorised("keyAgreement")


def test_lazy_and_eager_documents_compare_equal_either_way(keys: dict[str, PublicKey]) -> None:
    from mudrika.identity.methods import key as did_key

    did = did_key.create(keys["ed25519"])
    assert did_key.document(did) == did_key.document(did)  # neither read before the comparison
    assert _eager(did) == did_key.document(did)
    assert did_key.document(did) != did_key.document(did_key.create(KeyPair.generate("ed25519").public_key))
    without = did_key.document(did, derive_key_agreement=False)
    assert without.authorised("keyAgreement") == ()
    assert len(without.verification_methods or ()) == 1


def test_lazy_and_eager_documents_hash_alike(keys: dict[str, PublicKey]) -> None:
    from mudrika.identity.methods import key as did_key

    did = did_key.create(keys["ed25519"])
    assert hash(did_key.document(did)) == hash(_eager(did))  # the lazy one built its method first
    other = did_key.document(did_key.create(KeyPair.generate("ed25519").public_key))
    assert len({did_key.document(did), _eager(did), other}) == 2


def test_key_agreement_is_built_once_under_concurrent_readers(
    keys: dict[str, PublicKey], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from mudrika.identity.methods import key as did_key

    calls = _count_derivations(monkeypatch)
    doc = did_key.document(did_key.create(keys["ed25519"]))
    start = threading.Barrier(8)
    seen: list[tuple[str, ...]] = []

    def reader() -> None:
        start.wait()
        seen.append(tuple(doc.all_methods))

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert len(set(seen)) == 1
    assert len(seen[0]) == 2


def test_did_key_without_an_x25519_form_is_refused_when_resolved() -> None:
    from mudrika.crypto.keys import KeyType
    from mudrika.identity.methods import key as did_key

    # y = 1, the neutral point: a valid Ed25519 encoding with no X25519 form.  Refused at resolution,
    # as before the derivation was deferred, not later when keyAgreement is first read.
    neutral = PublicKey.from_raw(KeyType.ED25519, b"\x01" + bytes(31))
    did = did_key.create(neutral)
    with pytest.raises(InvalidInput) as info:
        did_key.document(did)
    assert info.value.code == "bad_key"
    assert did_key.document(did, derive_key_agreement=False).id == did
