"""The one anchoring rule (``mudrika.identity.anchoring``), clause by clause.

Each test names the clause of the rule it protects; together they are what the mutation check
(``bash scripts/mutation.sh --module identity/anchoring.py``) needs to notice any single change to the
rule: a comparison flipped, a refusal dropped, an algorithm set widened.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mudrika.crypto.keys import ALL_ALGORITHMS, KeyPair, PublicKey
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity.anchoring import (
    AnchoredKey,
    OwnerPins,
    PinnedKey,
    anchor_key,
    anchor_resolved,
    aresolve_anchored,
    kid_of_owner,
    resolve_anchored,
)
from mudrika.identity.document import DIDDocument
from mudrika.identity.resolution import ResolutionResult

OWNER = "did:web:shop.example"
ISSUER = "https://issuer.example"
SIGNING = KeyPair.generate("ed25519").public_key
LOGIN = KeyPair.generate("p256").public_key
RSA = KeyPair.generate("rsa").public_key


def _method(did: str, fragment: str, key: PublicKey) -> dict[str, Any]:
    return {
        "id": f"{did}#{fragment}",
        "type": "JsonWebKey2020",
        "controller": did,
        "publicKeyJwk": key.to_jwk(),
    }


def _document(did: str = OWNER) -> DIDDocument:
    """``#sign`` may assert and authenticate; ``#login`` may only authenticate."""
    return DIDDocument.from_json(
        {
            "id": did,
            "verificationMethod": [_method(did, "sign", SIGNING), _method(did, "login", LOGIN)],
            "assertionMethod": [f"{did}#sign"],
            "authentication": [f"{did}#sign", f"{did}#login"],
        }
    )


def _refusal(kid: object, owner: str = OWNER) -> UntrustedKeyError:
    with pytest.raises(UntrustedKeyError) as info:
        kid_of_owner(kid, owner)
    return info.value


# -- rule 1: the kid names the owner -----------------------------------------------------------------


@pytest.mark.parametrize("kid", [None, "", 7, b"did:web:shop.example#sign"])
def test_a_signature_naming_no_key_is_refused(kid: object) -> None:
    """Rule 1: no kid (absent, empty, not a string) anchors nothing: ``no_kid``."""
    assert _refusal(kid).code == "no_kid"
    assert _refusal(kid, ISSUER).code == "no_kid"


def test_the_kid_of_a_did_owner_is_returned_as_the_pins_index_it() -> None:
    """Rule 1: an absolute DID URL of the owner is the kid, unchanged."""
    assert kid_of_owner(f"{OWNER}#sign", OWNER) == f"{OWNER}#sign"


@pytest.mark.parametrize(
    "kid",
    [
        "#sign",  # relative: its DID would be whatever the verifier assumes
        "sign",
        f"{OWNER}/keys#sign",  # a path
        f"{OWNER}?versionId=1#sign",  # a query
        OWNER,  # no fragment: the DID itself names no one method
        f"{OWNER}#",  # an empty fragment
    ],
)
def test_a_did_owners_kid_must_be_an_absolute_did_url_naming_one_method(kid: str) -> None:
    """Rule 1: relative kids, paths, queries and missing fragments are ``kid_not_did_url``."""
    refusal = _refusal(kid)
    assert refusal.code == "kid_not_did_url"
    assert refusal.fields["kid"] == kid
    assert refusal.fields["owner"] == OWNER


@pytest.mark.parametrize(
    ("kid", "reason"), [("did:", "bad_method"), ("did:web:%zz#k", "bad_percent_encoding")]
)
def test_a_kid_that_is_not_a_did_url_says_why(kid: str, reason: str) -> None:
    """Rule 1: a kid that starts like a DID but does not parse is ``kid_not_did_url`` with the parser's reason."""
    refusal = _refusal(kid)
    assert refusal.code == "kid_not_did_url"
    assert refusal.fields["reason"] == reason


@pytest.mark.parametrize(
    "kid",
    [
        "did:web:shop.example:evil#sign",  # another DID on the same host
        "did:web:evil.example#sign",
        "did:web:Shop.example#sign",  # any difference in case is another string
        "did:web:SHOP.EXAMPLE#sign",
        "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK#z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
    ],
)
def test_a_kid_of_another_did_is_not_owned(kid: str) -> None:
    """Rule 1: a kid whose DID is another DID — on the same host, or differing in case only — is
    refused: ``kid_not_owned`` (the forged purchase used a kid nobody asked the owner of)."""
    refusal = _refusal(kid)
    assert refusal.code == "kid_not_owned"
    assert refusal.fields == {"kid": kid, "owner": OWNER}


def test_an_https_owners_kid_is_a_plain_key_id_never_a_did_url() -> None:
    """Rule 1: an owner pinned by JWK Set names its keys by plain kid; a DID URL is ``kid_is_did_url``."""
    assert kid_of_owner("issuer-2025-1", ISSUER) == "issuer-2025-1"
    assert kid_of_owner("#frag", ISSUER) == "#frag"  # a plain kid may look like anything but a DID URL
    refusal = _refusal(f"{OWNER}#sign", ISSUER)
    assert refusal.code == "kid_is_did_url"
    assert refusal.fields == {"kid": f"{OWNER}#sign", "owner": ISSUER}


def test_refusals_echo_at_most_200_characters_of_the_kid_and_owner() -> None:
    """Error fields reach reports and logs: an attacker's 400-character kid is cut to 200."""
    long_owner = "did:web:shop.example:" + "a" * 1000
    kid = "did:web:evil.example:" + "b" * 400 + "#k"
    refusal = _refusal(kid, long_owner)
    assert refusal.code == "kid_not_owned"
    assert refusal.fields["kid"] == kid[:200]
    assert refusal.fields["owner"] == long_owner[:200]
    for case in (kid.replace("#k", ""), "x" * 500):
        assert len(_refusal(case).fields["kid"]) == 200
    pins = OwnerPins(owner=ISSUER, keys={"k": PinnedKey(SIGNING)})
    with pytest.raises(UntrustedKeyError) as info:
        anchor_key(pins, "z" * 500, relationship="assertionMethod", algorithms=ALL_ALGORITHMS)
    assert info.value.fields == {"kid": "z" * 200, "owner": ISSUER}
    long_issuer = ISSUER + "/" + "i" * 500
    with pytest.raises(UntrustedKeyError) as info:
        anchor_key(
            OwnerPins(owner=long_issuer), "k", relationship="assertionMethod", algorithms=ALL_ALGORITHMS
        )
    assert info.value.fields["owner"] == long_issuer[:200]
    pins = OwnerPins(owner=ISSUER, keys={"y" * 500: PinnedKey(SIGNING)})
    with pytest.raises(UntrustedKeyError) as info:
        anchor_key(pins, "y" * 500, relationship="assertionMethod", algorithms=frozenset({"ES256"}))
    assert info.value.code == "alg_not_allowed"
    assert info.value.fields["kid"] == "y" * 200


# -- the pins ----------------------------------------------------------------------------------------


def test_pins_are_a_jwk_set_or_a_did_document_never_both() -> None:
    """A pin mixing a JWK Set and a document would let one vouch for kids the other never listed."""
    with pytest.raises(InvalidInput) as info:
        OwnerPins(owner=OWNER, keys={f"{OWNER}#sign": PinnedKey(SIGNING)}, document=_document())
    assert info.value.code == "bad_pins"


def test_a_pinned_document_must_be_its_owners() -> None:
    """Another DID's document pinned under this owner would vouch for that DID's keys: ``bad_pins``."""
    with pytest.raises(InvalidInput) as info:
        OwnerPins(owner="did:web:other.example", document=_document())
    assert info.value.code == "bad_pins"
    assert OwnerPins(owner=OWNER, document=_document()).document is not None


def test_an_owner_is_a_did_owner_exactly_when_it_is_a_did() -> None:
    """``is_did`` decides which form of rule 1 applies: DID URL kids for DIDs, plain kids otherwise."""
    assert OwnerPins(owner=OWNER).is_did
    assert not OwnerPins(owner=ISSUER).is_did
    assert not OwnerPins(owner="didactic.example").is_did


# -- rule 2: the owner's pinned material lists the key in the role's relationship ---------------------


def test_a_document_pin_anchors_what_it_lists_for_the_relationship() -> None:
    """Rule 2: ``#sign`` may sign; ``#login`` (only in ``authentication``) may log in, not sign."""
    pins = OwnerPins(owner=OWNER, document=_document(), source="snapshot 2025-09-01")
    anchored = anchor_key(pins, f"{OWNER}#sign", relationship="assertionMethod", algorithms=ALL_ALGORITHMS)
    assert anchored == AnchoredKey(
        key=SIGNING,
        kid=f"{OWNER}#sign",
        owner=OWNER,
        algorithms=frozenset({"EdDSA", "Ed25519"}),
        source="snapshot 2025-09-01",
    )
    with pytest.raises(UntrustedKeyError) as info:
        anchor_key(pins, f"{OWNER}#login", relationship="assertionMethod", algorithms=ALL_ALGORITHMS)
    assert info.value.code == "not_authorised_for_purpose"
    login = anchor_key(pins, f"{OWNER}#login", relationship="authentication", algorithms=ALL_ALGORITHMS)
    assert login.key == LOGIN
    with pytest.raises(UntrustedKeyError) as info:
        anchor_key(pins, f"{OWNER}#absent", relationship="assertionMethod", algorithms=ALL_ALGORITHMS)
    assert info.value.code == "unknown_key"


def test_a_jwk_set_pin_anchors_only_its_own_kids() -> None:
    """Rule 2: a JWK Set owner's kid must be in its set: ``key_not_pinned`` otherwise."""
    pins = OwnerPins(owner=ISSUER, keys={"issuer-1": PinnedKey(SIGNING)}, source="jwks.json")
    anchored = anchor_key(pins, "issuer-1", relationship="assertionMethod", algorithms=ALL_ALGORITHMS)
    assert (anchored.key, anchored.kid, anchored.owner, anchored.source) == (
        SIGNING,
        "issuer-1",
        ISSUER,
        "jwks.json",
    )
    with pytest.raises(UntrustedKeyError) as info:
        anchor_key(pins, "issuer-2", relationship="assertionMethod", algorithms=ALL_ALGORITHMS)
    assert info.value.code == "key_not_pinned"
    assert info.value.fields == {"kid": "issuer-2", "owner": ISSUER}


# -- rule 3: an allowed algorithm fits ---------------------------------------------------------------


def test_the_algorithms_are_the_verifiers_set_narrowed_by_the_key_type() -> None:
    """Rule 3: never an algorithm the key type cannot use (ES256 on Ed25519), nor one the verifier did
    not allow (the answer is the intersection, not the union)."""
    pins = OwnerPins(owner=ISSUER, keys={"ed": PinnedKey(SIGNING)})
    anchored = anchor_key(
        pins, "ed", relationship="assertionMethod", algorithms=frozenset({"EdDSA", "ES256"})
    )
    assert anchored.algorithms == frozenset({"EdDSA"})
    with pytest.raises(UntrustedKeyError) as info:
        anchor_key(pins, "ed", relationship="assertionMethod", algorithms=frozenset({"ES256", "RS256"}))
    assert info.value.code == "alg_not_allowed"
    assert info.value.fields["allowed"] == ["ES256", "RS256"]


def test_a_pins_own_alg_narrows_the_algorithms() -> None:
    """Rule 3: an RSA key pinned as RS256 does not verify PS256, even where the verifier allows both."""
    pins = OwnerPins(owner=ISSUER, keys={"rsa": PinnedKey(RSA, frozenset({"RS256"}))})
    both = frozenset({"RS256", "PS256"})
    assert anchor_key(pins, "rsa", relationship="assertionMethod", algorithms=both).algorithms == {"RS256"}
    with pytest.raises(UntrustedKeyError) as info:
        anchor_key(pins, "rsa", relationship="assertionMethod", algorithms=frozenset({"PS256"}))
    assert info.value.code == "alg_not_allowed"
    unnarrowed = OwnerPins(owner=ISSUER, keys={"rsa": PinnedKey(RSA)})
    assert anchor_key(unnarrowed, "rsa", relationship="assertionMethod", algorithms=both).algorithms == both


def test_an_anchored_key_verifies_with_exactly_its_algorithms() -> None:
    """What :func:`~mudrika.crypto.jose.verify_compact` receives carries the anchored set and owner."""
    pins = OwnerPins(owner=ISSUER, keys={"rsa": PinnedKey(RSA, frozenset({"RS256"}))})
    trusted = anchor_key(pins, "rsa", relationship="assertionMethod", algorithms=ALL_ALGORITHMS).trusted
    assert (trusted.key, trusted.algorithms, trusted.owner) == (RSA, frozenset({"RS256"}), ISSUER)


# -- the live form: resolve the kid's DID, then the same rule -----------------------------------------


class _Resolver:
    """A resolver that records every DID it is asked for (an untrusted signer must cause no fetch)."""

    def __init__(self, *, deactivated: bool = False) -> None:
        self.asked: list[str] = []
        self._metadata = {"deactivated": True} if deactivated else {}

    def resolve(self, did: str) -> ResolutionResult:
        self.asked.append(did)
        return ResolutionResult(document=_document(did), document_metadata=self._metadata)

    async def aresolve(self, did: str) -> ResolutionResult:
        return self.resolve(did)


def _live(resolver: _Resolver, kid: object, trusted: list[str] | None) -> AnchoredKey:
    return resolve_anchored(
        resolver, kid, trusted_owners=trusted, relationship="assertionMethod", algorithms=ALL_ALGORITHMS
    )


def _alive(resolver: _Resolver, kid: object, trusted: list[str] | None) -> AnchoredKey:
    return asyncio.run(
        aresolve_anchored(
            resolver, kid, trusted_owners=trusted, relationship="assertionMethod", algorithms=ALL_ALGORITHMS
        )
    )


@pytest.mark.parametrize("form", [_live, _alive])
def test_the_live_form_resolves_the_kids_own_did_and_applies_the_rule(form: Any) -> None:
    """The DID fetched is the kid's; with no list (a DID-signed request) any DID may be the signer."""
    resolver = _Resolver()
    anchored = form(resolver, f"{OWNER}#sign", None)
    assert (anchored.key, anchored.owner) == (SIGNING, OWNER)
    assert form(resolver, f"{OWNER}#sign", [OWNER]).key == SIGNING
    assert resolver.asked == [OWNER, OWNER]
    with pytest.raises(UntrustedKeyError) as info:
        form(resolver, f"{OWNER}#login", [OWNER])
    assert info.value.code == "not_authorised_for_purpose"


@pytest.mark.parametrize("form", [_live, _alive])
def test_an_untrusted_or_malformed_signer_is_refused_before_any_fetch(form: Any) -> None:
    """A signer the verifier does not trust must not make it dial out: refused, nothing resolved."""
    resolver = _Resolver()
    for kid, code in [
        (f"{OWNER}#sign", "untrusted_did"),
        (None, "kid_not_did_url"),
        ("#sign", "kid_not_did_url"),
        ("did:web:%zz#k", "kid_not_did_url"),
    ]:
        with pytest.raises(UntrustedKeyError) as info:
            form(resolver, kid, ["did:web:other.example"])
        assert info.value.code == code
    assert resolver.asked == []
    with pytest.raises(UntrustedKeyError) as info:
        form(resolver, "did:web:%zz#" + "k" * 500, None)
    assert info.value.fields == {"reason": "bad_percent_encoding", "kid": ("did:web:%zz#" + "k" * 500)[:200]}


@pytest.mark.parametrize("form", [_live, _alive])
def test_a_deactivated_did_anchors_nothing(form: Any) -> None:
    """DID Core §7.1.3: a deactivated DID still resolves, but none of its keys may be trusted."""
    with pytest.raises(UntrustedKeyError) as info:
        form(_Resolver(deactivated=True), f"{OWNER}#sign", [OWNER])
    assert info.value.code == "deactivated"
    assert info.value.fields == {"did": OWNER}
    long_did = "did:web:shop.example:" + "p" * 400
    with pytest.raises(UntrustedKeyError) as info:
        anchor_resolved(
            _Resolver(deactivated=True).resolve(long_did),
            f"{long_did}#sign",
            relationship="assertionMethod",
            algorithms=ALL_ALGORITHMS,
        )
    assert info.value.fields == {"did": long_did[:200]}
