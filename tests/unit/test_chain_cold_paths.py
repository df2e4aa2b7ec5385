"""The chain verifier's cold-path shortcuts against the general paths they stand in for.

Why these tests: a verification that meets every party for the first time used to parse the pinned
merchant's DID URL, re-parse the evidence's copy of the DID document the trust root pins, expand a
did:key into a whole DID document, decode the credential ``sub`` did:key (a point decompression)
and hash every key's thumbprint.  Each shortcut must give exactly the answer of the path it skips,
or step aside for it; these tests hold each one to the general path on the same input.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from mudrika.crypto.keys import KeyPair, KeyType, PublicKey
from mudrika.errors import MudrikaError, UntrustedKeyError
from mudrika.identity._x25519 import X25519PublicKey
from mudrika.identity.methods import key as did_key
from mudrika.identity.methods.jwk import JwkDriver
from mudrika.identity.resolution import CONTENT_TYPE, ResolutionResult
from mudrika.identity.resolver import DIDResolver
from mudrika.payments.chain import KeyMaterial, verify_chain
from mudrika.payments.chain import _payment as payment_stage
from mudrika.payments.chain import _verifier as verifier
from mudrika.payments.chain._keys import Anchors, ResolvedKey
from mudrika.payments.trustroot import TrustRoot
from mudrika.stores.replay import MemoryReplayStore
from tests._support.ap2_v02 import build as build_v02
from tests._support.evidence import evidence_builder, trust_root_for

SIGNING_TYPES = (KeyType.P256, KeyType.ED25519, KeyType.SECP256K1)


def _outcome(source: KeyMaterial, kid: str, owner: str) -> object:
    try:
        return source.assertion_key(kid, owner=owner)
    except MudrikaError as exc:
        return (type(exc).__name__, exc.code)


# -- did:key without its document ----------------------------------------------------------------


@pytest.mark.parametrize("key_type", SIGNING_TYPES)
def test_a_did_key_resolves_as_the_offline_resolver_resolves_it(key_type: KeyType) -> None:
    """The offline snapshot's did:key answer (no document expanded) equals the resolver path's
    answer (a KeyMaterial over the same offline resolver, built without the raw snapshot) for the
    genuine kid, and both refuse every other kid form alike."""
    did = did_key.create(KeyPair.generate(key_type).public_key)
    fragment = did.removeprefix("did:key:")
    shortcut = KeyMaterial.offline_snapshot({}, notes={did: "carried with the evidence"})
    general = KeyMaterial(DIDResolver.offline({}), notes={did: "carried with the evidence"})
    for kid in (f"{did}#{fragment}", f"{did}#other", f"{did}#{fragment}x", did, f"{did}/path#{fragment}"):
        assert _outcome(shortcut, kid, did) == _outcome(general, kid, did), kid
    resolved = shortcut.assertion_key(f"{did}#{fragment}", owner=did)
    assert resolved.provenance == "self-certifying"
    assert resolved.note == "carried with the evidence"
    assert not resolved.anchored


def test_a_did_key_that_signs_nothing_is_refused_alike() -> None:
    """An X25519 did:key (key agreement only) and malformed did:keys take the general path."""
    x25519 = did_key.create(X25519PublicKey(bytes(range(1, 33))))
    for did in (x25519, "did:key:zNotBase58!!", "did:key:z6Mk", "did:key:" + x25519[8:] + "x"):
        kid = f"{did}#{did.removeprefix('did:key:')}"
        shortcut = KeyMaterial.offline_snapshot({})
        general = KeyMaterial(DIDResolver.offline({}))
        assert _outcome(shortcut, kid, did) == _outcome(general, kid, did), did
        assert isinstance(_outcome(shortcut, kid, did), tuple)


# -- the credential's did:key sub: encode and compare ----------------------------------------------


@pytest.mark.parametrize("key_type", SIGNING_TYPES)
def test_a_did_key_names_a_key_exactly_when_it_decodes_to_it(key_type: KeyType) -> None:
    key = KeyPair.generate(key_type).public_key
    other = KeyPair.generate(key_type).public_key
    did = did_key.create(key)
    assert payment_stage._is_did_key_of(did, key)
    assert did_key.decode(did) == key
    assert not payment_stage._is_did_key_of(did, other)
    assert not payment_stage._is_did_key_of(did_key.create(other), key)
    assert not payment_stage._is_did_key_of("did:jwk:" + did.removeprefix("did:key:"), key)


# -- the holder key's thumbprint from its JWK members ----------------------------------------------


@pytest.mark.parametrize("key_type", [*SIGNING_TYPES, KeyType.RSA])
def test_the_holder_thumbprint_is_the_keys_own(key_type: KeyType) -> None:
    """From the members of the cnf JWK (with metadata members beside them) or, for any other key
    type, the key's own method: always the RFC 7638 thumbprint of the parsed key."""
    if key_type is KeyType.RSA:
        key = PublicKey.from_cryptography(rsa.generate_private_key(65537, 2048).public_key())
    else:
        key = KeyPair.generate(key_type).public_key
    for extra in ({}, {"alg": key.default_algorithm, "kid": "holder-1", "use": "sig"}):
        trusted, thumbprint = payment_stage._holder_key_of({**key.to_jwk(), **extra})
        assert trusted.key == key
        assert thumbprint == key.thumbprint()


# -- the trust root's pinned kids, anchored when it loads ------------------------------------------


def _roots() -> list[TrustRoot]:
    chain = evidence_builder().build_chain()
    return [chain.trust_root(), build_v02().trust_root]


@pytest.mark.parametrize("index", [0, 1])
def test_a_pinned_kid_anchors_as_the_rule_anchors_it(index: int) -> None:
    """For every kid a root pins: the answer remembered from loading equals the rule applied now
    (an allow-list that differs only by an algorithm no key has takes the general path)."""
    root = _roots()[index]
    general_algorithms = root.algorithm_set | {"not-an-algorithm"}
    checked = 0
    sections: tuple[tuple[Literal["issuer", "merchant"], Collection[str]], ...] = (
        ("issuer", root.issuers),
        ("merchant", root.merchants),
    )
    for section, owners in sections:
        for owner in owners:
            for kid in root.kids_of(section, owner):
                remembered = root.anchor(section, owner, kid, algorithms=root.algorithm_set)
                applied = root.anchor(section, owner, kid, algorithms=general_algorithms)
                assert remembered == applied
                assert root.pins_signature_kid(section, owner, kid)
                checked += 1
    assert checked >= 2


def test_a_kid_not_named_exactly_takes_the_rule() -> None:
    builder = evidence_builder()
    chain = builder.build_chain()
    root = chain.trust_root()
    fragment = builder.MERCHANT_KID.partition("#")[2]
    for kid in ("#" + fragment, builder.MERCHANT_KID + "x", builder.MERCHANT_DID + "/p#" + fragment, ""):
        assert not root.pins_signature_kid("merchant", builder.MERCHANT_DID, kid)
        with pytest.raises(UntrustedKeyError):
            root.anchor("merchant", builder.MERCHANT_DID, kid, algorithms=root.algorithm_set)
    anchors = Anchors(root, chain.keys())
    assert anchors.pinned_merchant_of(builder.MERCHANT_KID) == builder.MERCHANT_DID
    for kid in ("#" + fragment, builder.MERCHANT_KID + "x", "did:web:other.example#" + fragment, "no-hash"):
        assert anchors.pinned_merchant_of(kid) is None
    assert Anchors(None, chain.keys()).pinned_merchant_of(builder.MERCHANT_KID) is None


# -- the evidence's copy of the pinned document ----------------------------------------------------


def test_evidence_carries_the_pinned_document_only_when_nothing_else_could_answer() -> None:
    builder = evidence_builder()
    chain = builder.build_chain()
    document = chain.did_documents[builder.MERCHANT_DID]
    snapshot = KeyMaterial.offline_snapshot(chain.did_documents)
    assert snapshot.carries_document(builder.MERCHANT_DID, document)
    assert not snapshot.carries_document(builder.MERCHANT_DID, None)
    assert not snapshot.carries_document(builder.MERCHANT_DID, {**document, "id": "did:web:x.example"})
    assert not snapshot.carries_document("did:web:absent.example", document)
    pinned = KeyMaterial.offline_snapshot(
        chain.did_documents,
        pinned={
            builder.MERCHANT_KID: {
                "owner": builder.MERCHANT_DID,
                "jwk": chain.merchant_key.public_key.to_jwk(),
            }
        },
    )
    assert not pinned.carries_document(builder.MERCHANT_DID, document)
    over_resolver = KeyMaterial(DIDResolver.offline(chain.did_documents))
    assert not over_resolver.carries_document(builder.MERCHANT_DID, document)
    # Whichever way the evidence is held, the merchant's key is the root's.
    root = chain.trust_root()
    for evidence in (snapshot, pinned, over_resolver):
        key = Anchors(root, evidence).merchant_key(builder.MERCHANT_KID, owner=builder.MERCHANT_DID)
        assert key.anchored
        assert key.key == chain.merchant_key.public_key


# -- anchoring decided without thumbprints ---------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"merchants": {}},
        {"issuers": {}},
        {"accept_legacy_unbound_intent": True},
    ],
)
def test_anchoring_without_thumbprints_is_anchoring_with_them(change: dict[str, object]) -> None:
    chain = evidence_builder().build_chain()
    expectations = chain.expectations(**change)
    run = verifier._run(
        chain.intent,
        chain.cart,
        chain.payment,
        MemoryReplayStore(),
        asserted_by_evidence=(),
        max_bytes=1 << 20,
        **expectations,
    )
    light = run.key_evidence(thumbprints=False)
    full = run.key_evidence()
    assert run.unanchored_because(light) == run.unanchored_because(full)
    assert [key._replace(thumbprint="") for key in full] == light
    assert all(key.thumbprint for key in full if key.anchored is not None)


def test_a_verified_chain_reports_every_thumbprint() -> None:
    chain = evidence_builder().build_chain()
    verified = verify_chain(
        chain.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
    )
    assert verified.report.verdict == "OK"
    assert {key.thumbprint for key in verified.report.keys} >= {
        chain.merchant_key.public_key.thumbprint(),
        chain.issuer_key.public_key.thumbprint(),
        chain.user_key.public_key.thumbprint(),
    }


# -- the intent's signer compared with the credential's cnf key -----------------------------------


@pytest.mark.parametrize("key_type", SIGNING_TYPES)
def test_the_expected_holder_answers_only_for_its_own_did_key(key_type: KeyType) -> None:
    """With the holder expected, the user's key is what the evidence answers without it -- for the
    holder's did:key, another did:key, another fragment -- and an evidence pin still wins."""
    holder = KeyPair.generate(key_type).public_key
    other = KeyPair.generate(key_type).public_key
    did, other_did = did_key.create(holder), did_key.create(other)
    kids = [
        (f"{did}#{did[8:]}", did),
        (f"{did}#other", did),
        (f"{other_did}#{other_did[8:]}", other_did),
    ]
    for evidence in (KeyMaterial.offline_snapshot({}), KeyMaterial(DIDResolver.offline({}))):
        expecting = Anchors(None, evidence)
        expecting.expect_holder(holder)
        plain = Anchors(None, evidence)
        for kid, owner in kids:
            assert _answer(expecting, kid, owner) == _answer(plain, kid, owner), kid
    assert expecting.expected_holder_did(f"{did}#{did[8:]}") == did
    assert expecting.expected_holder_did(f"{did}#other") is None
    assert expecting.expected_holder_did(f"{other_did}#{other_did[8:]}") is None
    assert expecting.did_key_of(holder) == did
    assert expecting.did_key_of(other) == other_did
    pinned_key = KeyPair.generate(key_type).public_key
    pinning = KeyMaterial.offline_snapshot(
        {}, pinned={f"{did}#{did[8:]}": {"owner": did, "jwk": pinned_key.to_jwk()}}
    )
    anchors = Anchors(None, pinning)
    anchors.expect_holder(holder)
    assert anchors.user_key(f"{did}#{did[8:]}", owner=did).key == pinned_key


def _answer(anchors: Anchors, kid: str, owner: str) -> object:
    try:
        return anchors.user_key(kid, owner=owner)
    except MudrikaError as exc:
        return (type(exc).__name__, exc.code)


def test_an_intent_signed_by_another_key_than_cnf_is_still_refused() -> None:
    """The expected holder decides nothing: an intent signed with another did:key than the
    credential's cnf key is verified with its own signer's key, and the chain is refused."""
    builder = evidence_builder()
    chain = builder.build_chain()
    stranger = builder.build_chain(seed_prefix="a stranger")
    report = verifier.inspect_chain(
        stranger.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
    )
    assert report.by_id("intent.jws.signature").passed
    assert report.verdict == "FAILED"
    signer = next(key for key in report.keys if key.role == "user (intent)")
    assert signer.thumbprint == stranger.user_key.public_key.thumbprint()
    assert signer.thumbprint != chain.user_key.public_key.thumbprint()
    assert signer.anchored is not True


#: Ed25519 encodings with no X25519 form (did:key documents refuse them): y = 1, the neutral point,
#: and y = p, a non-canonical encoding of 0.
_UNMAPPABLE = (
    (1).to_bytes(32, "little"),
    (2**255 - 19).to_bytes(32, "little"),
)


@pytest.mark.parametrize("raw", _UNMAPPABLE)
def test_an_ed25519_did_key_without_an_x25519_form_is_refused_by_every_path(raw: bytes) -> None:
    """The document's own check (an Ed25519 did:key must map to X25519) holds on both shortcuts:
    the snapshot's decoding path refuses what the resolver refuses, and the expected holder's
    encoding path never vouches for such a key."""
    key = PublicKey.from_raw(KeyType.ED25519, raw)
    did = did_key.create(key)
    kid = f"{did}#{did[8:]}"
    shortcut = KeyMaterial.offline_snapshot({})
    general = KeyMaterial(DIDResolver.offline({}))
    refused = _outcome(general, kid, did)
    assert isinstance(refused, tuple)
    assert _outcome(shortcut, kid, did) == refused
    assert shortcut.self_certified_as(kid, did, key) is None


# -- the shortcuts are taken: a cold chain never re-derives what it already holds ------------------


class _Calls:
    """What a general (slow) path was asked (an owner, a DID, a key) while a spy stood in front of it."""

    def __init__(self) -> None:
        self.asked: list[str] = []


def _spy_on_evidence(monkeypatch: pytest.MonkeyPatch) -> _Calls:
    """Counts every ``KeyMaterial.assertion_key`` (the evidence's general answer) by owner."""
    calls = _Calls()
    general = KeyMaterial.assertion_key

    def counted(self: KeyMaterial, kid: str, *, owner: str) -> ResolvedKey:
        calls.asked.append(owner)
        return general(self, kid, owner=owner)

    monkeypatch.setattr(KeyMaterial, "assertion_key", counted)
    return calls


def _spy_on_resolution(monkeypatch: pytest.MonkeyPatch) -> _Calls:
    """Counts every ``DIDResolver.resolve`` (building a DID document) by DID."""
    calls = _Calls()
    general = DIDResolver.resolve

    def counted(self: DIDResolver, did: str, accept: str = CONTENT_TYPE) -> ResolutionResult:
        calls.asked.append(did)
        return general(self, did, accept)

    monkeypatch.setattr(DIDResolver, "resolve", counted)
    return calls


def _spy_on_did_key(monkeypatch: pytest.MonkeyPatch, name: Literal["create", "decode"]) -> _Calls:
    """Counts every call of ``mudrika.identity.methods.key.<name>`` (encoding / decoding a did:key)."""
    calls = _Calls()
    general = getattr(did_key, name)

    def counted(value: object) -> object:
        calls.asked.append(str(value))
        return general(value)

    monkeypatch.setattr(did_key, name, counted)
    return calls


_ISSUER_DID = "did:web:issuer.example"


def _did_web_document(did: str, kid: str, key: PublicKey) -> dict[str, object]:
    return {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
        "id": did,
        "verificationMethod": [
            {"id": kid, "type": "JsonWebKey2020", "controller": did, "publicKeyJwk": key.to_jwk()}
        ],
        "assertionMethod": [kid],
    }


@pytest.mark.parametrize("section", ["merchant", "issuer"])
def test_a_root_pinned_document_carried_by_the_evidence_is_not_asked_again(
    section: Literal["merchant", "issuer"], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the evidence carries the very DID document the root pins (merchant or issuer), the
    root's key is the answer and the evidence is not asked for it; evidence held any other way
    (over a resolver, so not known to carry that document) is asked, with the same answer."""
    owner = _ISSUER_DID if section == "issuer" else evidence_builder().MERCHANT_DID
    kid = f"{owner}#signing-1"
    key = KeyPair.generate(KeyType.P256).public_key
    document = _did_web_document(owner, kid, key)
    entries = {owner: {"did_document": document}}
    root = trust_root_for(**{f"{section}s": entries})
    asked = _spy_on_evidence(monkeypatch)

    def answer(evidence: KeyMaterial) -> ResolvedKey:
        anchors = Anchors(root, evidence)
        return (
            anchors.merchant_key(kid, owner=owner)
            if section == "merchant"
            else anchors.issuer_key(kid, owner=owner)
        )

    carried = answer(KeyMaterial.offline_snapshot({owner: document}))
    assert asked.asked == []
    assert carried.anchored
    assert carried.provenance == "trust-root"
    assert carried.key == key
    general = answer(KeyMaterial(DIDResolver.offline({owner: document})))
    assert asked.asked == [owner]
    assert general == carried


@pytest.mark.parametrize("key_type", SIGNING_TYPES)
def test_a_snapshot_reads_a_did_key_from_the_identifier_without_resolving_it(
    key_type: KeyType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An offline snapshot answers a did:key's own kid by decoding the DID, never by building its
    DID document; a source over a resolver asks the resolver, and both answers are the same."""
    did = did_key.create(KeyPair.generate(key_type).public_key)
    kid = f"{did}#{did[8:]}"
    resolved = _spy_on_resolution(monkeypatch)
    shortcut = KeyMaterial.offline_snapshot({}).assertion_key(kid, owner=did)
    assert resolved.asked == []
    general = KeyMaterial(DIDResolver.offline({})).assertion_key(kid, owner=did)
    assert resolved.asked == [did]
    assert shortcut == general
    assert shortcut.key == did_key.decode(did)


def test_a_source_over_the_callers_resolver_leaves_did_key_to_it() -> None:
    """The resolver decides which DID methods it accepts: one configured without did:key refuses a
    did:key signer, even though the identifier alone would give a key."""
    did = did_key.create(KeyPair.generate(KeyType.ED25519).public_key)
    kid = f"{did}#{did[8:]}"
    without_did_key = KeyMaterial(DIDResolver((JwkDriver(),)))
    assert _outcome(without_did_key, kid, did) == ("DocumentError", "methodNotSupported")
    assert KeyMaterial.offline_snapshot({}).assertion_key(kid, owner=did).key == did_key.decode(did)


@pytest.mark.parametrize("key_type", SIGNING_TYPES)
def test_the_expected_holder_is_answered_without_decoding_or_asking_the_evidence(
    key_type: KeyType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The credential's holder key answers its own did:key's kid as it is (no decoding, no question
    to the evidence, no re-encoding of the did:key); any other did:key is asked of the evidence."""
    holder = KeyPair.generate(key_type).public_key
    other = KeyPair.generate(key_type).public_key
    did, other_did = did_key.create(holder), did_key.create(other)
    evidence = KeyMaterial.offline_snapshot({}, notes={did: "carried"})
    expected = KeyMaterial.offline_snapshot({}, notes={did: "carried"}).assertion_key(
        f"{did}#{did[8:]}", owner=did
    )
    anchors = Anchors(None, evidence)
    anchors.expect_holder(holder)
    asked = _spy_on_evidence(monkeypatch)
    decoded = _spy_on_did_key(monkeypatch, "decode")
    encoded = _spy_on_did_key(monkeypatch, "create")
    assert anchors.user_key(f"{did}#{did[8:]}", owner=did) == expected
    assert anchors.did_key_of(holder) == did
    assert (asked.asked, decoded.asked, encoded.asked) == ([], [], [])
    assert anchors.user_key(f"{other_did}#{other_did[8:]}", owner=other_did).key == other
    assert anchors.did_key_of(other) == other_did
    assert asked.asked == [other_did]
    assert len(encoded.asked) == 1


def test_a_cold_chain_asks_the_evidence_only_to_cross_check_a_pinned_key_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A first-time chain whose root pins the merchant's document (carried by the evidence too) and
    the issuer's JWK Set: no DID document is resolved, no did:key is decoded, and the evidence is
    asked only for the issuer's key (the root pins a JWK Set there, so the evidence's copy is
    cross-checked)."""
    builder = evidence_builder()
    chain = builder.build_chain(seeded=False)
    expectations = chain.expectations()
    asked = _spy_on_evidence(monkeypatch)
    resolved = _spy_on_resolution(monkeypatch)
    decoded = _spy_on_did_key(monkeypatch, "decode")
    verified = verify_chain(
        chain.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **expectations
    )
    assert verified.report.verdict == "OK"
    assert (asked.asked, resolved.asked, decoded.asked) == ([builder.ISSUER], [], [])
