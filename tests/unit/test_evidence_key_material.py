"""Evidence key material and the chain verifier's key questions (``payments/chain/_keys.py``).

An evidence bundle is written by a party to the dispute: its JWK Sets, pinned keys and DID documents
are evidence, shaped strictly, answered only for the owner they belong to, and always labelled with
where they came from.  When the analyst's trust root pins a party, the root answers and evidence that
carries another key under the same kid is refused.  These tests state those rules one by one.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import pytest

from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity.anchoring import AnchoredKey
from mudrika.identity.did import DID
from mudrika.identity.document import DIDDocument
from mudrika.identity.methods import jwk as did_jwk
from mudrika.identity.methods import key as did_key
from mudrika.identity.methods.jwk import JwkDriver
from mudrika.identity.methods.key import KeyDriver
from mudrika.identity.resolution import ResolutionResult
from mudrika.identity.resolver import DIDResolver
from mudrika.payments.chain import KeyMaterial
from mudrika.payments.chain._keys import (
    _CROSS_CHECKED,
    _MAX_CACHE,
    _ROOT_KEYS,
    PROVENANCE_CLASSES,
    Anchors,
    Provenance,
    ResolvedKey,
)
from mudrika.payments.trustroot import TrustRoot, parse_trust_root

ISSUER = "https://issuer.example"
MERCHANT = "did:web:shop.example"
ISSUER_KEY = KeyPair.generate("ed25519").public_key
MERCHANT_KEY = KeyPair.generate("ed25519").public_key
LOGIN_KEY = KeyPair.generate("p256").public_key
FORGED_KEY = KeyPair.generate("ed25519").public_key
RSA_KEY = KeyPair.generate("rsa").public_key


def _jwk(key: PublicKey, kid: object, **members: Any) -> dict[str, Any]:
    return {**key.to_jwk(), "kid": kid, **members}


def _merchant_document(key: PublicKey = MERCHANT_KEY) -> dict[str, Any]:
    def method(fragment: str, material: PublicKey) -> dict[str, Any]:
        return {
            "id": f"{MERCHANT}#{fragment}",
            "type": "JsonWebKey2020",
            "controller": MERCHANT,
            "publicKeyJwk": material.to_jwk(),
        }

    return {
        "id": MERCHANT,
        "verificationMethod": [method("cart", key), method("login", LOGIN_KEY)],
        "assertionMethod": [f"{MERCHANT}#cart"],
        "authentication": [f"{MERCHANT}#login"],
    }


def _evidence(issuer_key: PublicKey = ISSUER_KEY, merchant_key: PublicKey = MERCHANT_KEY) -> KeyMaterial:
    return KeyMaterial.offline_snapshot(
        {MERCHANT: _merchant_document(merchant_key)},
        jwks={ISSUER: {"keys": [_jwk(issuer_key, "issuer-1")]}},
    )


def _root() -> TrustRoot:
    return parse_trust_root(
        {
            "format": "mudrika.trust-root/v1",
            "issuers": {ISSUER: {"jwks": {"keys": [_jwk(ISSUER_KEY, "issuer-1")]}}},
            "merchants": {MERCHANT: {"did_document": _merchant_document()}},
            "accepted_vct": ["urn:example:vct"],
        }
    )


def _refusal(
    source: KeyMaterial | Anchors, kid: str, owner: str, question: str = "assertion_key"
) -> UntrustedKeyError:
    with pytest.raises(UntrustedKeyError) as info:
        getattr(source, question)(kid, owner=owner)
    return info.value


# -- the shape of evidence key material --------------------------------------------------------------


@pytest.mark.parametrize(
    "jwks",
    [
        {ISSUER: {"keys": [_jwk(ISSUER_KEY, "k"), _jwk(FORGED_KEY, "k")]}},  # two keys under one kid
        {ISSUER: {"keys": [_jwk(ISSUER_KEY, None)]}},
        {ISSUER: {"keys": [_jwk(ISSUER_KEY, "")]}},
        {ISSUER: {"keys": [_jwk(ISSUER_KEY, 1)]}},
        {ISSUER: {"keys": ["not a key"]}},
        {ISSUER: {"keys": [_jwk(ISSUER_KEY, f"k{index}") for index in range(65)]}},
        {ISSUER: {"keys": _jwk(ISSUER_KEY, "k")}},
        {ISSUER: [_jwk(ISSUER_KEY, "k")]},
        {1: {"keys": [_jwk(ISSUER_KEY, "k")]}},
    ],
)
def test_an_evidence_jwks_must_name_each_key_once(jwks: dict[Any, Any]) -> None:
    """An evidence JWKS with two keys under one kid is refused (which would a signature mean?), as is
    any key set that is not ``{owner: {"keys": [...]}}`` with unique string kids, at most 64 keys."""
    with pytest.raises(InvalidInput) as info:
        KeyMaterial.offline_snapshot({}, jwks=jwks)
    assert info.value.code == "bad_jwks"


def test_a_refused_jwks_names_its_owner_briefly() -> None:
    """The refusal names the owner, cut to 200 characters (it is written by the evidence's author)."""
    owner = "https://issuer.example/" + "o" * 400
    with pytest.raises(InvalidInput) as info:
        KeyMaterial.offline_snapshot({}, jwks={owner: {"keys": [_jwk(ISSUER_KEY, None)]}})
    assert info.value.fields == {"owner": owner[:200]}


@pytest.mark.parametrize(
    ("pinned", "code"),
    [
        ({"": {"owner": ISSUER, "jwk": _jwk(ISSUER_KEY, "k")}}, "bad_pinned"),
        ({"k": [ISSUER]}, "bad_pinned"),
        ({"k": {"jwk": _jwk(ISSUER_KEY, "k")}}, "bad_pinned"),
        ({"k": {"owner": 7, "jwk": _jwk(ISSUER_KEY, "k")}}, "bad_pinned"),
        ({"k": {"owner": ISSUER, "jwk": "not a JWK"}}, "bad_jwk"),
        ({"k": {"owner": ISSUER}}, "bad_jwk"),
    ],
)
def test_an_evidence_pin_is_a_kid_with_its_owner_and_jwk(pinned: dict[str, Any], code: str) -> None:
    """A pinned key must say whose it is: ``{kid: {"owner": ..., "jwk": {...}}}``, nothing less."""
    with pytest.raises(InvalidInput) as info:
        KeyMaterial.offline_snapshot({}, pinned=pinned)
    assert info.value.code == code


# -- whose key a kid is ------------------------------------------------------------------------------


def test_a_key_pinned_in_evidence_answers_only_for_its_owner() -> None:
    """A key the evidence pins for one owner is no key of another (``kid_not_owned``), and its ``alg``
    narrows what it verifies."""
    material = KeyMaterial.offline_snapshot(
        {},
        pinned={
            "rsa-1": {"owner": ISSUER, "jwk": _jwk(RSA_KEY, "rsa-1", alg="RS256")},
            f"{MERCHANT}#cart": {"owner": "did:web:other.example", "jwk": _jwk(MERCHANT_KEY, "cart")},
        },
        notes={ISSUER: "exported by the issuer on 2025-09-01"},
    )
    found = material.assertion_key("rsa-1", owner=ISSUER)
    assert found == ResolvedKey(
        key=RSA_KEY,
        kid="rsa-1",
        owner=ISSUER,
        source="pinned",
        algorithms=frozenset({"RS256"}),
        provenance="pinned-in-evidence",
        note="exported by the issuer on 2025-09-01",
    )
    assert _refusal(material, "rsa-1", "https://other-issuer.example").code == "kid_not_owned"
    # The kid names the merchant, but the evidence pins it for someone else.
    assert _refusal(material, f"{MERCHANT}#cart", MERCHANT).code == "kid_not_owned"


def test_a_jwks_snapshot_answers_for_its_owner_only() -> None:
    """A kid is looked up in its owner's JWK Set only: another owner has no key (``unknown_key``)."""
    material = KeyMaterial.offline_snapshot(
        {}, jwks={ISSUER: {"keys": [_jwk(RSA_KEY, "rsa-1", alg="RS256"), _jwk(ISSUER_KEY, "ed-1")]}}
    )
    found = material.assertion_key("rsa-1", owner=ISSUER)
    assert (found.key, found.source, found.provenance, found.algorithms) == (
        RSA_KEY,
        "jwks",
        "jwks-snapshot",
        frozenset({"RS256"}),
    )
    assert material.assertion_key("ed-1", owner=ISSUER).algorithms is None
    assert _refusal(material, "rsa-2", ISSUER).code == "key_not_pinned"
    other = "https://other-issuer.example/" + "x" * 300
    refusal = _refusal(material, "k" * 300, other)
    assert refusal.code == "unknown_key"
    assert refusal.fields == {"kid": "k" * 200, "owner": other[:200]}


def test_a_did_key_needs_a_resolver_and_the_signing_relationship() -> None:
    """Without a resolver a DID owner has no key; with one, only ``assertionMethod`` keys sign."""
    material = KeyMaterial(None, jwks={ISSUER: {"keys": [_jwk(ISSUER_KEY, "issuer-1")]}})
    assert material.offline
    refusal = _refusal(material, f"{MERCHANT}#" + "c" * 300, MERCHANT)
    assert refusal.code == "unknown_key"
    assert refusal.fields == {"kid": (f"{MERCHANT}#" + "c" * 300)[:200]}
    evidence = _evidence()
    assert _refusal(evidence, f"{MERCHANT}#login", MERCHANT).code == "not_authorised_for_purpose"
    assert _refusal(evidence, "did:web:shop.example:evil#cart", MERCHANT).code == "kid_not_owned"


def test_every_key_says_where_it_came_from() -> None:
    """Provenance is evidence, never trust: a DID-document snapshot, a self-certifying did:key or
    did:jwk (which proves nothing about who holds it), or a live resolver (today's keys)."""
    key_did = did_key.create(ISSUER_KEY)
    jwk_did = did_jwk.create(MERCHANT_KEY)
    key_kid = f"{key_did}#{key_did.removeprefix('did:key:')}"
    offline = _evidence()
    assert offline.assertion_key(f"{MERCHANT}#cart", owner=MERCHANT).provenance == "did-document-snapshot"
    assert offline.assertion_key(key_kid, owner=key_did).provenance == "self-certifying"
    assert offline.assertion_key(f"{jwk_did}#0", owner=jwk_did).provenance == "self-certifying"
    online = KeyMaterial(DIDResolver((KeyDriver(), JwkDriver())))
    assert not online.offline
    live = online.assertion_key(key_kid, owner=key_did)
    assert (live.key, live.source, live.provenance, live.anchored) == (
        ISSUER_KEY,
        "did",
        "self-certifying",
        False,
    )


def test_an_offline_source_answers_a_batch_in_bounded_memory() -> None:
    """An offline source remembers answers (a snapshot never changes) but never more than its bound,
    however many keys a dispute batch asks for; a remembered answer is the same answer."""
    pinned = {
        f"k{index}": {"owner": ISSUER, "jwk": _jwk(ISSUER_KEY, "k")} for index in range(_MAX_CACHE + 10)
    }
    material = KeyMaterial.offline_snapshot({}, pinned=pinned)
    first = material.assertion_key("k0", owner=ISSUER)
    assert material.assertion_key("k0", owner=ISSUER) is first
    for kid in pinned:
        material.assertion_key(kid, owner=ISSUER)
        assert len(material._cache) <= _MAX_CACHE


# -- the trust root first, the evidence second --------------------------------------------------------


def test_a_pinned_party_is_answered_from_the_trust_root_and_anchored() -> None:
    """A merchant or issuer the root pins is answered by the root (anchored); without a root, or for a
    merchant the root does not pin, the evidence answers, unanchored."""
    root, evidence = _root(), _evidence()
    anchors = Anchors(root, evidence)
    assert anchors.offline
    merchant = anchors.merchant_key(f"{MERCHANT}#cart", owner=MERCHANT)
    assert (merchant.provenance, merchant.anchored, merchant.source) == ("trust-root", True, "trust-root")
    issuer = anchors.issuer_key("issuer-1", owner=ISSUER)
    assert (issuer.key, issuer.anchored) == (ISSUER_KEY, True)
    unrooted = Anchors(None, evidence)
    assert unrooted.merchant_key(f"{MERCHANT}#cart", owner=MERCHANT).provenance == "did-document-snapshot"
    assert unrooted.issuer_key("issuer-1", owner=ISSUER).provenance == "jwks-snapshot"
    other_merchant = "did:web:other.example"
    unpinned = KeyMaterial.offline_snapshot(
        {}, pinned={f"{other_merchant}#cart": {"owner": other_merchant, "jwk": _jwk(FORGED_KEY, "c")}}
    )
    answer = Anchors(root, unpinned).merchant_key(f"{other_merchant}#cart", owner=other_merchant)
    assert (answer.key, answer.anchored) == (FORGED_KEY, False)


def test_with_a_trust_root_an_unpinned_issuer_is_not_trusted_whatever_the_evidence_says() -> None:
    """Issuers are trust decisions: under a root, an issuer it does not pin has no key at all."""
    other = "https://other-issuer.example"
    evidence = KeyMaterial.offline_snapshot({}, jwks={other: {"keys": [_jwk(ISSUER_KEY, "o-1")]}})
    assert _refusal(Anchors(_root(), evidence), "o-1", other, "issuer_key").code == "not_in_trust_root"
    assert Anchors(None, evidence).issuer_key("o-1", owner=other).key == ISSUER_KEY


def test_the_users_key_is_never_anchored_by_the_root() -> None:
    """The user's key names no trusted party, even when its DID is a pinned merchant's."""
    answer = Anchors(_root(), _evidence()).user_key(f"{MERCHANT}#cart", owner=MERCHANT)
    assert (answer.provenance, answer.anchored) == ("did-document-snapshot", False)


def test_evidence_carrying_another_key_under_a_pinned_kid_is_refused() -> None:
    """A forged bundle files fresh keys under real names: the analyst sees ``evidence_key_mismatch``,
    not a signature that happens to verify.  The same key, or no such key, in the evidence is fine."""
    root = _root()
    forged = Anchors(root, _evidence(issuer_key=FORGED_KEY, merchant_key=FORGED_KEY))
    refusal = _refusal(forged, "issuer-1", ISSUER, "issuer_key")
    assert refusal.code == "evidence_key_mismatch"
    assert refusal.fields["evidence_thumbprint"] == FORGED_KEY.thumbprint()
    assert refusal.fields["pinned_thumbprint"] == ISSUER_KEY.thumbprint()
    assert _refusal(forged, f"{MERCHANT}#cart", MERCHANT, "merchant_key").code == "evidence_key_mismatch"
    silent = Anchors(root, KeyMaterial.offline_snapshot({}))
    assert silent.issuer_key("issuer-1", owner=ISSUER).key == ISSUER_KEY


class _OfflineSource:
    """A key source of another type than :class:`KeyMaterial` (no memo applies to it)."""

    def __init__(self, material: KeyMaterial, *, offline: bool) -> None:
        self._material = material
        self._offline = offline

    @property
    def offline(self) -> bool:
        return self._offline

    def assertion_key(self, kid: str, *, owner: str) -> ResolvedKey:
        return self._material.assertion_key(kid, owner=owner)


def test_any_offline_evidence_source_is_cross_checked_and_a_live_one_is_not() -> None:
    """The cross-check applies to every offline source, not only :class:`KeyMaterial`; a live source
    holds today's keys, not the evidence, so it is not compared against the pin."""
    forged = _evidence(issuer_key=FORGED_KEY)
    offline = Anchors(_root(), _OfflineSource(forged, offline=True))
    assert _refusal(offline, "issuer-1", ISSUER, "issuer_key").code == "evidence_key_mismatch"
    genuine = Anchors(_root(), _OfflineSource(_evidence(), offline=True))
    assert genuine.issuer_key("issuer-1", owner=ISSUER).anchored
    live = Anchors(_root(), _OfflineSource(forged, offline=False))
    assert not live.offline
    assert live.issuer_key("issuer-1", owner=ISSUER).key == ISSUER_KEY


def test_a_remembered_answer_never_vouches_for_another_root_or_evidence() -> None:
    """The memos are keyed by ``id()``; an id can be reused once an object is gone, so an entry made
    for another root or evidence object under the same id must never answer."""
    root, evidence = _root(), _evidence()
    stale = ResolvedKey(key=FORGED_KEY, kid="issuer-1", owner=ISSUER, source="trust-root", anchored=True)
    other_root, other_evidence = _root(), _evidence()
    try:
        for made_for in ((root, other_evidence), (other_root, evidence)):
            _ROOT_KEYS[(id(root), "issuer", ISSUER, "issuer-1")] = (other_root, stale)
            _CROSS_CHECKED[(id(root), id(evidence), "issuer", ISSUER, "issuer-1")] = (*made_for, stale)
            assert Anchors(root, evidence).issuer_key("issuer-1", owner=ISSUER).key == ISSUER_KEY
    finally:
        _ROOT_KEYS.pop((id(root), "issuer", ISSUER, "issuer-1"), None)
        _CROSS_CHECKED.pop((id(root), id(evidence), "issuer", ISSUER, "issuer-1"), None)


def test_the_verifiers_memos_stay_bounded() -> None:
    """However many pinned keys a batch asks for, the memos of trust-root answers stay bounded."""
    issuers = {
        f"https://issuer-{group}.example": {
            "jwks": {"keys": [_jwk(ISSUER_KEY, f"k{index}") for index in range(60)]}
        }
        for group in range(_MAX_CACHE // 60 + 1)
    }
    root = parse_trust_root(
        {"format": "mudrika.trust-root/v1", "issuers": issuers, "accepted_vct": ["urn:example:vct"]}
    )
    anchors = Anchors(root, KeyMaterial.offline_snapshot({}))
    for owner, entry in issuers.items():
        for key in entry["jwks"]["keys"]:
            assert anchors.issuer_key(key["kid"], owner=owner).anchored
            assert len(_ROOT_KEYS) <= _MAX_CACHE
            assert len(_CROSS_CHECKED) <= _MAX_CACHE


def test_every_provenance_has_a_sentence_for_reports() -> None:
    """A report explains each key's provenance in words: every provenance a key can carry has its
    sentence, and there is no sentence for a provenance that does not exist."""
    assert set(PROVENANCE_CLASSES) == set(get_args(Provenance))


def test_a_key_of_unstated_origin_is_evidence_and_unanchored() -> None:
    """The safe defaults: a key nobody labelled counts as the evidence's own pin, never as anchored."""
    key = ResolvedKey(key=ISSUER_KEY, kid="k", owner=ISSUER, source="pinned")
    assert (key.provenance, key.anchored, key.algorithms) == ("pinned-in-evidence", False, None)


class _LiveWebDriver:
    """A did:web driver that stands for the network: it serves the document the merchant publishes
    *now* (``publish`` replaces it), as a live resolution would."""

    methods = frozenset({"web"})
    uses_network = True

    def __init__(self) -> None:
        self.published = _merchant_document()

    def resolve(self, did: DID) -> ResolutionResult:
        return ResolutionResult(document=DIDDocument.from_json(self.published))

    async def aresolve(self, did: DID) -> ResolutionResult:
        return self.resolve(did)


def test_a_live_source_answers_with_todays_keys_and_says_so() -> None:
    """Online, a key is what the DID publishes now (``did-resolver``), never a remembered answer: a
    rotated key must not keep verifying from a cache."""
    driver = _LiveWebDriver()
    live = KeyMaterial(DIDResolver((driver,), ttl=0))
    first = live.assertion_key(f"{MERCHANT}#cart", owner=MERCHANT)
    assert (first.key, first.provenance, first.source) == (MERCHANT_KEY, "did-resolver", "did")
    driver.published = _merchant_document(FORGED_KEY)
    assert live.assertion_key(f"{MERCHANT}#cart", owner=MERCHANT).key == FORGED_KEY


def test_a_keys_own_alg_narrows_what_it_verifies() -> None:
    """A key published with ``alg: RS256`` verifies RS256 only, whatever else the policy allows; no
    overlap at all means no usable key."""
    narrowed = ResolvedKey(key=RSA_KEY, kid="k", owner=ISSUER, source="jwks", algorithms=frozenset({"RS256"}))
    trusted = narrowed.trusted(frozenset({"RS256", "PS256"}))
    assert trusted is not None
    assert (trusted.algorithms, trusted.owner) == (frozenset({"RS256"}), ISSUER)
    assert narrowed.trusted(frozenset({"PS256"})) is None
    free = ResolvedKey(key=RSA_KEY, kid="k", owner=ISSUER, source="jwks")
    assert free.trusted(frozenset({"RS256", "PS256", "ES256"})) is not None
    assert free.trusted(frozenset({"ES256"})) is None


def test_an_evidence_jwks_may_hold_up_to_64_keys() -> None:
    """The cap is 64 keys per set: 64 load, 65 are refused (see the shape test above)."""
    keys = [_jwk(ISSUER_KEY, f"k{index}") for index in range(64)]
    material = KeyMaterial.offline_snapshot({}, jwks={ISSUER: {"keys": keys}})
    assert material.assertion_key("k63", owner=ISSUER).key == ISSUER_KEY


def test_a_pinned_evidence_key_that_is_no_jwk_says_where_it_is() -> None:
    """The analyst must find the broken key: the refusal names the part of the evidence holding it."""
    with pytest.raises(InvalidInput) as info:
        KeyMaterial.offline_snapshot({}, pinned={"k": {"owner": ISSUER, "jwk": "not a JWK"}})
    assert info.value.code == "bad_jwk"
    assert info.value.message.startswith("pinned:")


def test_a_key_pinned_for_another_owner_is_named_briefly() -> None:
    """``kid_not_owned`` for an evidence pin names the kid, cut to 200 characters."""
    kid = "k" * 400
    material = KeyMaterial.offline_snapshot({}, pinned={kid: {"owner": ISSUER, "jwk": _jwk(ISSUER_KEY, "k")}})
    refusal = _refusal(material, kid, "https://other-issuer.example")
    assert refusal.code == "kid_not_owned"
    assert refusal.fields == {"kid": kid[:200]}


class _ChangingSource:
    """An offline key source of another type than :class:`KeyMaterial`, whose answer can change."""

    offline = True

    def __init__(self) -> None:
        self.material = _evidence()

    def assertion_key(self, kid: str, *, owner: str) -> ResolvedKey:
        return self.material.assertion_key(kid, owner=owner)


def test_only_a_fixed_snapshot_is_remembered() -> None:
    """Remembering an admitted key is sound only for a :class:`KeyMaterial` snapshot (it cannot
    change); any other source is cross-checked on every question, so evidence that now carries a
    forged key is refused even after the genuine key was admitted."""
    root, source = _root(), _ChangingSource()
    anchors = Anchors(root, source)
    assert anchors.issuer_key("issuer-1", owner=ISSUER).key == ISSUER_KEY
    source.material = _evidence(issuer_key=FORGED_KEY)
    assert _refusal(anchors, "issuer-1", ISSUER, "issuer_key").code == "evidence_key_mismatch"


def test_a_key_mismatch_names_the_kid_and_owner_briefly() -> None:
    """``evidence_key_mismatch`` names the kid and the owner, each cut to 200 characters."""
    issuer, kid = "https://issuer.example/" + "o" * 300, "k" * 300
    root = parse_trust_root(
        {
            "format": "mudrika.trust-root/v1",
            "issuers": {issuer: {"jwks": {"keys": [_jwk(ISSUER_KEY, kid)]}}},
            "accepted_vct": ["urn:example:vct"],
        }
    )
    forged = KeyMaterial.offline_snapshot({}, jwks={issuer: {"keys": [_jwk(FORGED_KEY, kid)]}})
    refusal = _refusal(Anchors(root, forged), kid, issuer, "issuer_key")
    assert refusal.code == "evidence_key_mismatch"
    assert (refusal.fields["kid"], refusal.fields["owner"]) == (kid[:200], issuer[:200])


def test_a_repeated_question_is_answered_from_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memos exist so that a batch of disputes does the work once: asked again (after another
    question in between), the offline source does not look its key up again, the anchors do not
    cross-check a pinned key again for the same root and evidence (a new :class:`Anchors` per chain),
    and the root is not asked again for the same pin -- not even through a live source, whose own
    answers are never remembered."""
    root, evidence = _root(), _evidence()
    questions = ((f"{MERCHANT}#cart", MERCHANT), ("issuer-1", ISSUER))
    lookups: list[tuple[str, str]] = []
    cross_checks: list[tuple[str, str, str]] = []
    anchorings: list[tuple[str, str, object]] = []
    lookup, cross_checked, anchor = KeyMaterial._lookup, Anchors._cross_checked, TrustRoot.anchor

    def counted_lookup(self: KeyMaterial, kid: str, owner: str) -> ResolvedKey:
        lookups.append((kid, owner))
        return lookup(self, kid, owner)

    def counted_cross_check(
        self: Anchors, root: TrustRoot, section: Literal["merchant", "issuer"], owner: str, kid: str
    ) -> ResolvedKey:
        cross_checks.append((section, owner, kid))
        return cross_checked(self, root, section, owner, kid)

    def counted_anchor(
        self: TrustRoot, section: Literal["issuer", "merchant"], owner: str, kid: object, **rule: Any
    ) -> AnchoredKey:
        anchorings.append((section, owner, kid))
        return anchor(self, section, owner, kid, **rule)

    monkeypatch.setattr(KeyMaterial, "_lookup", counted_lookup)
    monkeypatch.setattr(Anchors, "_cross_checked", counted_cross_check)
    monkeypatch.setattr(TrustRoot, "anchor", counted_anchor)
    first = [evidence.assertion_key(kid, owner=owner) for kid, owner in questions]
    again = [evidence.assertion_key(kid, owner=owner) for kid, owner in questions]
    assert again == first
    assert lookups == [(kid, owner) for kid, owner in questions]

    def ask(anchors: Anchors) -> list[ResolvedKey]:
        return [
            anchors.merchant_key(f"{MERCHANT}#cart", owner=MERCHANT),
            anchors.issuer_key("issuer-1", owner=ISSUER),
        ]

    pinned = ask(Anchors(root, evidence))
    assert ask(Anchors(root, evidence)) == pinned
    assert cross_checks == [("merchant", MERCHANT, f"{MERCHANT}#cart"), ("issuer", ISSUER, "issuer-1")]
    assert anchorings == [("merchant", MERCHANT, f"{MERCHANT}#cart"), ("issuer", ISSUER, "issuer-1")]
    live = KeyMaterial(DIDResolver((JwkDriver(),)))
    assert ask(Anchors(root, live)) == ask(Anchors(root, live)) == pinned
    assert len(cross_checks) == 2 + 4
    assert len(anchorings) == 2
    assert len(lookups) == 2
