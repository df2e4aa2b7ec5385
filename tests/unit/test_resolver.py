"""DIDResolver: dispatch, cache (TTL + LRU on an injected clock), error codes, offline snapshots."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.crypto.multibase import base58btc_encode
from mudrika.errors import (
    BindingError,
    DocumentError,
    InvalidInput,
    ResolutionError,
    UntrustedKeyError,
    VerificationError,
)
from mudrika.identity.did import DID
from mudrika.identity.document import DIDDocument
from mudrika.identity.methods import bindu, jwk, key, web
from mudrika.identity.resolution import result
from mudrika.identity.resolver import DidkitDriver, DIDResolver, MethodDriver, ResolutionResult, snapshot_of
from tests._support.tokenfactory import Clock


class CountingDriver:
    """A did:example driver that builds documents on the fly and counts calls."""

    def __init__(self, *, fail: Exception | None = None, wrong_id: bool = False) -> None:
        self.calls: list[str] = []
        self.fail = fail
        self.wrong_id = wrong_id
        self.keys: dict[str, PublicKey] = {}

    @property
    def methods(self) -> frozenset[str]:
        return frozenset({"example"})

    @property
    def uses_network(self) -> bool:
        return False

    def resolve(self, did: DID) -> ResolutionResult:
        self.calls.append(str(did))
        if self.fail is not None:
            raise self.fail
        public = self.keys.setdefault(str(did), KeyPair.generate("ed25519").public_key)
        doc_id = "did:example:other" if self.wrong_id else str(did)
        doc = DIDDocument.from_json(
            {
                "id": doc_id,
                "verificationMethod": [
                    {
                        "id": "#k",
                        "type": "Multikey",
                        "controller": doc_id,
                        "publicKeyMultibase": public.to_multikey(),
                    }
                ],
                "assertionMethod": ["#k"],
            }
        )
        return result(doc, driver="counting")

    async def aresolve(self, did: DID) -> ResolutionResult:
        return self.resolve(did)


def test_drivers_satisfy_the_protocol() -> None:
    for driver in (
        key.KeyDriver(),
        jwk.JwkDriver(),
        web.WebDriver(),
        DidkitDriver({"pkh"}),
        CountingDriver(),
        bindu.BinduDriver(lambda did: None),
    ):
        assert isinstance(driver, MethodDriver)


def test_resolves_local_methods_and_keys() -> None:
    resolver = DIDResolver()
    public = KeyPair.generate("p256").public_key
    did = key.create(public)
    resolved = resolver.resolve(did)
    assert resolved.document.id == did
    assert dict(resolved.resolution_metadata) == {
        "contentType": "application/did+json",
        "method": "key",
        "driver": "key",
    }
    assert not resolved.deactivated
    assert resolver.resolve_key(resolved.document.authorised("authentication")[0], "authentication") == public
    assert resolver.resolve_key(jwk.create(public) + "#0", "assertionMethod") == public


def test_cache_hit_ttl_expiry_and_lru_eviction() -> None:
    clock = Clock(1000.0)
    driver = CountingDriver()
    resolver = DIDResolver([driver], cache_size=2, ttl=10.0, clock=clock)
    first = resolver.resolve("did:example:a")
    assert resolver.resolve("did:example:a") is first  # hit: same object, no driver call
    assert driver.calls == ["did:example:a"]
    clock.now += 10.0  # expiry is exclusive
    assert resolver.resolve("did:example:a") is not first
    assert driver.calls == ["did:example:a", "did:example:a"]
    resolver.resolve("did:example:b")
    resolver.resolve("did:example:a")  # touch a: b is now the least recently used
    resolver.resolve("did:example:c")  # evicts b
    driver.calls.clear()
    resolver.resolve("did:example:a")
    resolver.resolve("did:example:c")
    assert driver.calls == []
    resolver.resolve("did:example:b")
    assert driver.calls == ["did:example:b"]
    resolver.clear_cache()
    resolver.resolve("did:example:a")
    assert driver.calls == ["did:example:b", "did:example:a"]


def test_cache_can_be_disabled() -> None:
    driver = CountingDriver()
    resolver = DIDResolver([driver], cache_size=0)
    resolver.resolve("did:example:a")
    resolver.resolve("did:example:a")
    assert len(driver.calls) == 2
    with pytest.raises(InvalidInput):
        DIDResolver([driver], cache_size=-1)


@pytest.mark.parametrize(
    ("did", "reason"),
    [
        ("", "empty"),
        ("did:Example:1", "bad_method"),
        ("did:example:1#frag", "not_a_did"),
        ("nope", "not_a_did"),
    ],
)
def test_invalid_did(did: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as info:
        DIDResolver().resolve(did)
    assert info.value.code == "invalidDid"
    assert info.value.fields["reason"] == reason


def test_driver_syntax_errors_become_invalid_did() -> None:
    with pytest.raises(InvalidInput) as info:
        DIDResolver().resolve("did:key:z6LSshort")
    assert info.value.code == "invalidDid"
    with pytest.raises(InvalidInput) as info:
        DIDResolver().resolve("did:key:z" + base58btc_encode(b"\x80\x24\x02" + b"\xff" * 32))
    assert info.value.code == "invalidDid"
    assert info.value.fields["reason"] == "invalidPublicKey"


def test_method_not_supported_and_representation_not_supported() -> None:
    resolver = DIDResolver()
    with pytest.raises(DocumentError) as info:
        resolver.resolve("did:example:123")
    assert info.value.code == "methodNotSupported"
    did = key.create(KeyPair.generate("ed25519").public_key)
    with pytest.raises(DocumentError) as info:
        resolver.resolve(did, accept="text/html")
    assert info.value.code == "representationNotSupported"
    assert resolver.resolve(did, accept="application/did+ld+json").document.id == did
    with pytest.raises(DocumentError) as info:
        resolver.resolve(did, accept="application/xml")  # also refused on a cache hit
    assert info.value.code == "representationNotSupported"


def test_unexpected_driver_failures_are_internal_errors_and_not_cached() -> None:
    driver = CountingDriver(fail=RuntimeError("boom"))
    resolver = DIDResolver([driver])
    for _ in range(2):
        with pytest.raises(ResolutionError) as info:
            resolver.resolve("did:example:a")
        assert info.value.code == "internalError"
        assert "boom" not in info.value.message
    assert len(driver.calls) == 2
    driver.fail = DocumentError("gone", code="notFound")
    with pytest.raises(DocumentError) as absent:
        resolver.resolve("did:example:a")
    assert absent.value.code == "notFound"


def test_document_for_another_did_is_refused() -> None:
    resolver = DIDResolver([CountingDriver(wrong_id=True)])
    with pytest.raises(BindingError) as info:
        resolver.resolve("did:example:a")
    assert info.value.code == "document_id_mismatch"


def test_resolve_key_errors() -> None:
    driver = CountingDriver()
    resolver = DIDResolver([driver])
    assert isinstance(resolver.resolve_key("did:example:a#k", "assertionMethod"), PublicKey)
    with pytest.raises(UntrustedKeyError) as info:
        resolver.resolve_key("did:example:a#k", "authentication")
    assert info.value.code == "not_authorised_for_purpose"
    with pytest.raises(UntrustedKeyError) as info:
        resolver.resolve_key("did:example:a#other", "assertionMethod")
    assert info.value.code == "unknown_key"
    with pytest.raises(InvalidInput) as bad:
        resolver.resolve_key("did:example:a#a b", "assertionMethod")
    assert bad.value.code == "invalidDid"


@pytest.mark.anyio
async def test_async_paths() -> None:
    driver = CountingDriver()
    resolver = DIDResolver([driver, key.KeyDriver()])
    resolved = await resolver.aresolve("did:example:a")
    assert await resolver.aresolve("did:example:a") is resolved
    assert driver.calls == ["did:example:a"]
    public = KeyPair.generate("ed25519").public_key
    did = key.create(public)
    assert await resolver.aresolve_key(f"{did}#{did[8:]}", "capabilityDelegation") == public
    with pytest.raises(DocumentError) as info:
        await resolver.aresolve("did:foo:bar")
    assert info.value.code == "methodNotSupported"
    with pytest.raises(DocumentError) as info:
        await resolver.aresolve(did, accept="text/plain")
    assert info.value.code == "representationNotSupported"
    driver.fail = ValueError("bad")
    with pytest.raises(ResolutionError) as failed:
        await resolver.aresolve("did:example:zzz")
    assert failed.value.code == "internalError"
    driver.fail = DocumentError("nf", code="notFound")
    with pytest.raises(DocumentError) as info:
        await resolver.aresolve("did:example:zzz")
    assert info.value.code == "notFound"


# -- offline ---------------------------------------------------------------------------------------


def _web_document(did: str, public: PublicKey) -> dict[str, Any]:
    return {
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": did,
        "verificationMethod": [
            {
                "id": f"{did}#key-0",
                "type": "JsonWebKey2020",
                "controller": did,
                "publicKeyJwk": public.to_jwk(),
            }
        ],
        "assertionMethod": [f"{did}#key-0"],
    }


@pytest.mark.usefixtures("no_network")
def test_offline_resolves_only_from_the_snapshot_and_local_methods() -> None:
    web_key = KeyPair.generate("p256").public_key
    web_did = "did:web:merchant.example"
    bindu_key = KeyPair.generate("ed25519").public_key
    bindu_doc = bindu.document(bindu_key, author="ops@example.com", agent_name="shop")
    local_key = KeyPair.generate("secp256k1").public_key
    resolver = DIDResolver.offline(
        {web_did: _web_document(web_did, web_key), bindu_doc.id: bindu_doc.to_json()}
    )
    assert resolver.is_offline
    assert resolver.resolve_key(f"{web_did}#key-0", "assertionMethod") == web_key
    assert resolver.resolve_key(f"{bindu_doc.id}#key-1", "authentication") == bindu_key
    assert resolver.resolve_key(jwk.create(local_key) + "#0", "authentication") == local_key
    local_did = key.create(local_key)
    assert resolver.resolve_key(f"{local_did}#{local_did[8:]}", "authentication") == local_key
    for missing in ("did:web:other.example", "did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a"):
        with pytest.raises(DocumentError) as info:
            resolver.resolve(missing)
        assert info.value.code == "notFound"
    assert resolver.resolve(web_did).resolution_metadata["driver"] == "snapshot"


@pytest.mark.anyio
@pytest.mark.usefixtures("no_network")
async def test_offline_async_never_touches_the_network() -> None:
    web_key = KeyPair.generate("ed25519").public_key
    web_did = "did:web:example.com:user:alice"
    resolver = DIDResolver.offline({web_did: _web_document(web_did, web_key)})
    assert await resolver.aresolve_key(f"{web_did}#key-0", "assertionMethod") == web_key
    with pytest.raises(DocumentError) as info:
        await resolver.aresolve("did:web:example.org")
    assert info.value.code == "notFound"


def test_offline_snapshot_entries_are_ignored_for_self_describing_methods() -> None:
    public = KeyPair.generate("ed25519").public_key
    did = key.create(public)
    forged = _web_document(did, KeyPair.generate("ed25519").public_key)
    resolver = DIDResolver.offline({did: forged})
    assert resolver.resolve(did).resolution_metadata["driver"] == "key"
    assert resolver.resolve_key(f"{did}#{did[8:]}", "authentication") == public


def test_offline_refuses_network_drivers() -> None:
    resolver = DIDResolver.offline({})
    with pytest.raises(InvalidInput) as info:
        resolver.register(web.WebDriver())
    assert info.value.code == "offline_resolver"
    with pytest.raises(InvalidInput):
        resolver.register(DidkitDriver({"pkh"}))
    resolver.register(CountingDriver())  # local drivers are fine
    assert resolver.resolve("did:example:x").resolution_metadata["driver"] == "counting"


def test_offline_checks_snapshot_entries() -> None:
    public = KeyPair.generate("ed25519").public_key
    good = _web_document("did:web:a.example", public)
    snapshot = {
        "did:web:a.example": good,
        "did:web:b.example": good,  # id mismatch
        "did:web:c.example": {"id": "did:web:c.example", "authentication": ["#missing"]},
        "did:web:d.example": ["not", "an", "object"],
        "did:web:e.example": {**_web_document("did:web:e.example", public), "verificationMethod": "x"},
    }
    resolver = DIDResolver.offline(snapshot)
    with pytest.raises(BindingError):
        resolver.resolve("did:web:b.example")
    for did in ("did:web:c.example", "did:web:d.example", "did:web:e.example"):
        with pytest.raises(DocumentError) as info:
            resolver.resolve(did)
        assert info.value.code == "invalidDidDocument"
    tampered = bindu.document(public, author="a", agent_name="b").to_json()
    tampered["verificationMethod"][0]["publicKeyMultibase"] = KeyPair.generate(
        "ed25519"
    ).public_key.to_multikey()
    with pytest.raises(VerificationError) as verr:
        DIDResolver.offline({tampered["id"]: tampered}).resolve(tampered["id"])
    assert verr.value.code == "not_self_certifying"


def test_deactivated_documents_resolve_but_their_keys_are_refused() -> None:
    public = KeyPair.generate("ed25519").public_key
    did = "did:web:retired.example"
    resolver = DIDResolver.offline(
        {did: {"didDocument": _web_document(did, public), "didDocumentMetadata": {"deactivated": True}}}
    )
    resolved = resolver.resolve(did)
    assert resolved.deactivated
    assert resolved.document_metadata["deactivated"] is True
    with pytest.raises(UntrustedKeyError) as info:
        resolver.resolve_key(f"{did}#key-0", "assertionMethod")
    assert info.value.code == "deactivated"


def test_snapshot_of_round_trips_through_an_offline_resolver() -> None:
    public = KeyPair.generate("p256").public_key
    online = DIDResolver()
    results = [online.resolve(key.create(public)), online.resolve(jwk.create(public))]
    offline = DIDResolver.offline(snapshot_of(results))
    for item in results:
        assert offline.resolve(item.document.id).document.to_json() == item.document.to_json()


def test_missing_didkit_means_method_not_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "didkit", None)  # makes `import didkit` raise ImportError
    resolver = DIDResolver(didkit_methods={"pkh"})
    with pytest.raises(DocumentError) as info:
        resolver.resolve("did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a")
    assert info.value.code == "methodNotSupported"
    assert info.value.fields["reason"] == "didkit_unavailable"
    assert "3.12" in info.value.message
