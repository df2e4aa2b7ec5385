"""The trust root's pins: the load-time rules that decide which kid of which party a verdict may rest on.

The anchoring rule itself is ``tests/unit/test_anchoring_rule.py``; here are the trust root's own
rules (``docs/payments.md``, "Trust root"): what a pinned entry must look like to load at all, how a
pinned kid is written, which section answers which question.  A broken or over-broad pin must fail
when the analyst loads the file, not pass silently and anchor less (or more) than was written.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID

from mudrika.crypto.keys import ALL_ALGORITHMS, KeyPair, PublicKey
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity.anchoring import AnchoredKey, OwnerPins, anchor_key
from mudrika.identity.methods import jwk as did_jwk
from mudrika.identity.methods import key as did_key
from mudrika.payments.trustroot import TrustRoot, UnsafeNoTrustRoot, load_trust_root, parse_trust_root
from mudrika.payments.trustroot import _model as trust_root_model

MERCHANT = "did:web:shop.example"
ISSUER = "https://issuer.example"
VCT = "urn:example:payment-user:1"
CART_KEY = KeyPair.generate("ed25519").public_key
LOGIN_KEY = KeyPair.generate("p256").public_key
ISSUER_KEY = KeyPair.generate("ed25519").public_key
RSA_KEY = KeyPair.generate("rsa").public_key


def _jwk(key: PublicKey, kid: object, **members: Any) -> dict[str, Any]:
    return {**key.to_jwk(), "kid": kid, **members}


def _merchant_document() -> dict[str, Any]:
    """``#cart`` signs carts; ``#login`` only authenticates."""

    def method(fragment: str, key: PublicKey) -> dict[str, Any]:
        return {
            "id": f"{MERCHANT}#{fragment}",
            "type": "JsonWebKey2020",
            "controller": MERCHANT,
            "publicKeyJwk": key.to_jwk(),
        }

    return {
        "id": MERCHANT,
        "verificationMethod": [method("cart", CART_KEY), method("login", LOGIN_KEY)],
        "assertionMethod": [f"{MERCHANT}#cart"],
        "authentication": [f"{MERCHANT}#login"],
    }


def _root(
    issuers: dict[str, Any] | None = None, merchants: dict[str, Any] | None = None, **policy: Any
) -> TrustRoot:
    document: dict[str, Any] = {
        "format": "mudrika.trust-root/v1",
        "issuers": {ISSUER: {"jwks": {"keys": [_jwk(ISSUER_KEY, "issuer-1")]}}}
        if issuers is None
        else issuers,
        "merchants": {MERCHANT: {"did_document": _merchant_document()}} if merchants is None else merchants,
        "accepted_vct": [VCT],
        **policy,
    }
    return parse_trust_root(document)


def _refused_at_load(**sections: Any) -> list[str]:
    """The locations the loader names for a root that must not load."""
    with pytest.raises(InvalidInput) as info:
        _root(**sections)
    assert info.value.code == "bad_trust_root"
    return [problem["loc"] for problem in info.value.fields["errors"]]


def _anchor_code(root: TrustRoot, section: Any, owner: str, kid: str, **kwargs: Any) -> str:
    with pytest.raises(UntrustedKeyError) as info:
        root.anchor(section, owner, kid, algorithms=ALL_ALGORITHMS, **kwargs)
    return info.value.code


# -- how a pinned kid is written ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "kid",
    [
        "did:web:shop.example:evil#k",  # another DID on the same host
        "did:web:other.example#k",
        "did:web:shop.example/keys#k",  # a path: names no verification method
        "?versionId=1",  # relative, but a query: not one method
        "/keys",
        "k",  # a plain kid: a DID owner's kids are DID URLs
    ],
)
def test_a_pinned_key_whose_kid_is_not_a_did_url_of_its_owner_fails_at_load(kid: str) -> None:
    """Load-time rule: a DID owner's pinned kid is a DID URL of that owner.  Dropping it would load a
    root whose pin can never anchor (or names someone else): the analyst must hear it when loading."""
    merchants = {MERCHANT: {"jwks": {"keys": [_jwk(CART_KEY, kid)]}}}
    assert _refused_at_load(merchants=merchants) == [f"merchants.{MERCHANT}"]


def test_a_relative_kid_is_pinned_as_the_owners_absolute_did_url() -> None:
    """The analyst may write ``#cart``; a signature names ``did:web:shop.example#cart`` and only that."""
    root = _root(merchants={MERCHANT: {"jwks": {"keys": [_jwk(CART_KEY, "#cart")]}}})
    anchored = root.anchor("merchant", MERCHANT, f"{MERCHANT}#cart", algorithms=ALL_ALGORITHMS)
    assert (anchored.key, anchored.kid) == (CART_KEY, f"{MERCHANT}#cart")
    assert _anchor_code(root, "merchant", MERCHANT, "#cart") == "kid_not_did_url"
    assert [row[:3] for row in root.pinned_keys()] == [
        ("issuer", ISSUER, "issuer-1"),
        ("merchant", MERCHANT, f"{MERCHANT}#cart"),
    ]


def test_two_spellings_of_one_kid_are_a_duplicate() -> None:
    """``#cart`` and ``did:web:shop.example#cart`` name one key: two keys under it is ambiguous."""
    keys = [_jwk(CART_KEY, "#cart"), _jwk(LOGIN_KEY, f"{MERCHANT}#cart")]
    assert _refused_at_load(merchants={MERCHANT: {"jwks": {"keys": keys}}}) == [f"merchants.{MERCHANT}"]


def test_an_https_issuers_kids_are_plain_and_kept_as_written() -> None:
    """An issuer pinned by JWK Set names keys by plain kid — never a DID URL (refused at load), and a
    kid that merely starts with '#' is not made relative to anything."""
    root = _root(issuers={ISSUER: {"jwks": {"keys": [_jwk(ISSUER_KEY, "#1")]}}})
    assert root.anchor("issuer", ISSUER, "#1", algorithms=ALL_ALGORITHMS).kid == "#1"
    bad = {ISSUER: {"jwks": {"keys": [_jwk(ISSUER_KEY, "did:web:issuer.example#1")]}}}
    assert _refused_at_load(issuers=bad) == [f"issuers.{ISSUER}"]


@pytest.mark.parametrize("kid", [None, "", 7])
def test_every_pinned_key_needs_a_string_kid(kid: object) -> None:
    """A key without a usable kid could answer for any kid: refused at load."""
    key = _jwk(ISSUER_KEY, kid)
    if kid is None:
        del key["kid"]
    assert _refused_at_load(issuers={ISSUER: {"jwks": {"keys": [key]}}}) == [f"issuers.{ISSUER}"]


def test_a_pinned_keys_alg_narrows_its_algorithms() -> None:
    """A pin's own ``alg`` narrows algorithms: an RSA key pinned as RS256 does not verify PS256."""
    keys = [_jwk(RSA_KEY, "rs256-only", alg="RS256"), _jwk(RSA_KEY, "any-rsa")]
    root = _root(issuers={ISSUER: {"jwks": {"keys": keys}}}, algorithms=["RS256", "PS256"])
    assert root.algorithm_set == frozenset({"RS256", "PS256"})
    narrowed = root.anchor("issuer", ISSUER, "rs256-only", algorithms=root.algorithm_set)
    assert narrowed.algorithms == frozenset({"RS256"})
    with pytest.raises(UntrustedKeyError) as info:
        root.anchor("issuer", ISSUER, "rs256-only", algorithms=frozenset({"PS256"}))
    assert info.value.code == "alg_not_allowed"
    assert root.anchor("issuer", ISSUER, "any-rsa", algorithms=root.algorithm_set).algorithms == {
        "RS256",
        "PS256",
    }


# -- which entries load ------------------------------------------------------------------------------


def test_an_issuer_identifier_is_a_valid_did_or_https() -> None:
    """``did:Web:…`` is no DID and ``http://`` is no trusted origin: both refused at load."""
    jwks = {"jwks": {"keys": [_jwk(ISSUER_KEY, "did:Web:issuer.example#1")]}}
    assert _refused_at_load(issuers={"did:Web:issuer.example": jwks}) == ["issuers.did:Web:issuer.example"]
    plain = {"jwks": {"keys": [_jwk(ISSUER_KEY, "1")]}}
    assert _refused_at_load(issuers={"http://issuer.example": plain}) == ["issuers.http://issuer.example"]


def test_a_did_document_pins_only_a_did_identifier() -> None:
    """A DID document pinned for an ``https`` issuer has no DID to be the document of."""
    document = {**_merchant_document(), "id": ISSUER}
    assert _refused_at_load(issuers={ISSUER: {"did_document": document}}) == [f"issuers.{ISSUER}"]


def test_only_a_self_certifying_did_needs_no_key_material() -> None:
    """A did:key or did:jwk identifier is its key; a did:web issuer with nothing pinned anchors nothing
    and is refused at load."""
    jwk_did = did_jwk.create(ISSUER_KEY)
    key_did = did_key.create(CART_KEY)
    root = _root(issuers={jwk_did: {}, key_did: {}})
    assert root.anchor("issuer", jwk_did, f"{jwk_did}#0", algorithms=ALL_ALGORITHMS).key == ISSUER_KEY
    key_kid = f"{key_did}#{key_did.removeprefix('did:key:')}"
    assert root.anchor("issuer", key_did, key_kid, algorithms=ALL_ALGORITHMS).key == CART_KEY
    assert _refused_at_load(issuers={"did:web:issuer.example": {}}) == ["issuers.did:web:issuer.example"]


def test_a_self_certifying_issuer_anchors_only_its_own_identifier() -> None:
    """The forged purchase: an attacker's did:key is no pinned did:key issuer's key (``kid_not_owned``),
    and a pinned merchant's key is no issuer's key (``not_in_trust_root``)."""
    issuer_did = did_key.create(ISSUER_KEY)
    attacker_did = did_key.create(KeyPair.generate("ed25519").public_key)
    root = _root(issuers={issuer_did: {}})
    attacker_kid = f"{attacker_did}#{attacker_did.removeprefix('did:key:')}"
    assert _anchor_code(root, "issuer", issuer_did, attacker_kid) == "kid_not_owned"
    assert _anchor_code(root, "issuer", MERCHANT, f"{MERCHANT}#cart") == "not_in_trust_root"
    assert _anchor_code(root, "merchant", issuer_did, attacker_kid) == "not_in_trust_root"


def _certificate_der() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "issuer CA")])
    now = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(Encoding.DER)


def test_an_x509_only_issuer_loads_and_anchors_no_kid() -> None:
    """An issuer pinned by CA certificates only admits keys through x5c path validation (AP2 v0.2):
    no kid of it anchors, it lists no pinned key, and a broken certificate fails at load."""
    roots = [base64.b64encode(_certificate_der()).decode()]
    root = _root(issuers={ISSUER: {"x509_roots": roots}})
    assert root.trusts_issuer(ISSUER)
    assert _anchor_code(root, "issuer", ISSUER, "any-kid") == "key_not_pinned"
    assert [row[:2] for row in root.pinned_keys()] == [("merchant", MERCHANT)]
    for broken in ("not base64!", base64.b64encode(b"not a certificate").decode()):
        assert _refused_at_load(issuers={ISSUER: {"x509_roots": [broken]}}) == [f"issuers.{ISSUER}"]


# -- what the root answers ---------------------------------------------------------------------------


def test_a_document_pin_lists_and_anchors_only_its_signing_keys() -> None:
    """``pinned_keys`` shows the analyst what may sign: the merchant's ``#login`` key, authorised only
    for ``authentication``, is not listed and does not anchor a cart signature."""
    root = _root()
    rows = root.pinned_keys()
    assert rows == [
        ("issuer", ISSUER, "issuer-1", ISSUER_KEY.thumbprint()),
        ("merchant", MERCHANT, f"{MERCHANT}#cart", CART_KEY.thumbprint()),
    ]
    assert _anchor_code(root, "merchant", MERCHANT, f"{MERCHANT}#login") == "not_authorised_for_purpose"
    login = root.anchor(
        "merchant", MERCHANT, f"{MERCHANT}#login", algorithms=ALL_ALGORITHMS, relationship="authentication"
    )
    assert login.key == LOGIN_KEY


def test_each_issuer_answers_with_its_own_credential_types() -> None:
    """An issuer's own ``vct`` list replaces the root's; an issuer with its own list needs no
    ``accepted_vct``; an unknown issuer is accepted for nothing."""
    other = "https://other-issuer.example"
    issuers = {
        ISSUER: {"jwks": {"keys": [_jwk(ISSUER_KEY, "issuer-1")]}},
        other: {"jwks": {"keys": [_jwk(ISSUER_KEY, "other-1")]}, "vct": ["urn:example:age:1"]},
    }
    root = _root(issuers=issuers)
    assert root.accepted_vct_of(ISSUER) == frozenset({VCT})
    assert root.accepted_vct_of(other) == frozenset({"urn:example:age:1"})
    assert root.accepted_vct_of("https://unknown.example") == frozenset()
    own_only = parse_trust_root(
        {"format": "mudrika.trust-root/v1", "issuers": {other: issuers[other]}, "accepted_vct": []}
    )
    assert own_only.accepted_vct_of(other) == frozenset({"urn:example:age:1"})
    assert own_only.trusts_issuer(other)
    assert not own_only.trusts_issuer(ISSUER)
    assert not own_only.pins_merchant(MERCHANT)


def test_the_fingerprint_names_the_root() -> None:
    """A report quotes which root it used: another pinned key is another fingerprint."""
    first, second = _root(), _root(issuers={ISSUER: {"jwks": {"keys": [_jwk(CART_KEY, "issuer-1")]}}})
    assert first.fingerprint.startswith("sha256:")
    assert first.fingerprint == _root().fingerprint
    assert first.fingerprint != second.fingerprint


def test_the_no_trust_root_stand_in_says_what_it_asserts() -> None:
    """Its repr (shown in logs and reports) names the issuers the evidence asserted."""
    unsafe = UnsafeNoTrustRoot(["https://b.example", "https://a.example"])
    assert repr(unsafe) == "UnsafeNoTrustRoot(asserted_issuers=['https://a.example', 'https://b.example'])"


def test_a_trust_root_file_is_read_up_to_4_mib(tmp_path: Path) -> None:
    """The root is read before anything is checked, so its size is capped: 4 MiB (4,194,304 bytes)
    pass the cap (and then fail as what they are), one byte more is ``too_large`` unread."""
    at_cap = b" " * (4 * 1024 * 1024)
    for raw in (at_cap, at_cap + b" "):
        path = tmp_path / f"root-{len(raw)}.json"
        path.write_bytes(raw)
        with pytest.raises(InvalidInput) as parsed:
            parse_trust_root(raw)
        with pytest.raises(InvalidInput) as loaded:
            load_trust_root(path)
        too_large = len(raw) > 4 * 1024 * 1024
        assert (parsed.value.code == "too_large") is too_large
        assert (loaded.value.code == "too_large") is too_large


@pytest.mark.parametrize(
    ("member", "value"),
    [("accept_legacy_unbound_intent", 1), ("accept_legacy_unbound_intent", "false"), ("leeway_seconds", "5")],
)
def test_a_trust_root_value_is_never_coerced(member: str, value: object) -> None:
    """Strict types: ``1`` or ``"false"`` is not a yes/no (coerced, ``"false"`` would not even mean
    false), and ``"5"`` is not a number of seconds; a root that says something else than it means
    is refused at load."""
    assert _refused_at_load(**{member: value}) == [member]


def test_the_fingerprint_is_the_sha256_of_the_roots_canonical_json() -> None:
    """The fingerprint is reproducible outside mudrika: SHA-256 over the RFC 8785 form of the root
    as written (no null members), checked here with the ``rfc8785`` package as the oracle."""
    root = _root(description="Analyst root for case 42")
    written = json.loads(root.to_json())
    assert "null" not in root.to_json()
    digest = hashlib.sha256(rfc8785.dumps(written)).digest()
    assert root.fingerprint == "sha256:" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def test_the_root_is_written_as_readable_utf8() -> None:
    """Analysts read and diff the file: non-ASCII text is written as itself, not as escapes."""
    assert "Händler – Prüfung" in _root(description="Händler – Prüfung").to_json()


def test_a_party_the_root_does_not_pin_is_named_briefly() -> None:
    """``not_in_trust_root`` names the owner the evidence claimed, cut to 200 characters."""
    owner = "did:web:shop.example:" + "p" * 400
    with pytest.raises(UntrustedKeyError) as info:
        _root().anchor("merchant", owner, f"{owner}#cart", algorithms=ALL_ALGORITHMS)
    assert info.value.code == "not_in_trust_root"
    assert info.value.fields == {"owner": owner[:200]}


def test_an_issuer_did_must_parse_whatever_pins_it() -> None:
    """An issuer pinned by CA certificates only still needs a valid identifier: ``did:Web:…``
    (a method name is lower case) is refused at load, not trusted under a name nothing can match."""
    roots = [base64.b64encode(_certificate_der()).decode()]
    assert _refused_at_load(issuers={"did:Web:issuer.example": {"x509_roots": roots}}) == [
        "issuers.did:Web:issuer.example"
    ]
    assert _root(issuers={"did:web:issuer.example": {"x509_roots": roots}}).trusts_issuer(
        "did:web:issuer.example"
    )


def test_a_party_is_pinned_by_a_jwk_set_or_a_did_document_not_both() -> None:
    """Two pins for one party could disagree, and whichever the loader preferred would silently win:
    a merchant DID given both a JWK Set and its DID document is refused at load."""
    both = {"jwks": {"keys": [_jwk(CART_KEY, "#cart")]}, "did_document": _merchant_document()}
    assert _refused_at_load(merchants={MERCHANT: both}) == [f"merchants.{MERCHANT}"]


def test_a_trust_root_is_nested_at_most_64_deep() -> None:
    """Parsing is bounded before validation: 64 levels (the root object and 63 arrays) reach the
    schema check, one more is ``too_deep``."""
    for arrays, code in ((63, "bad_trust_root"), (64, "too_deep")):
        raw = '{"format": "mudrika.trust-root/v1", "x": ' + "[" * arrays + "]" * arrays + "}"
        with pytest.raises(InvalidInput) as info:
            parse_trust_root(raw)
        assert info.value.code == code


def test_x509_roots_are_strict_base64() -> None:
    """What is pinned is exactly what is written: a certificate with stray characters in its base64
    is refused at load, not decoded around them."""
    text = base64.b64encode(_certificate_der()).decode()
    for stray in (text[:40] + "\n" + text[40:], text[:40] + "!" + text[40:]):
        assert _refused_at_load(issuers={ISSUER: {"x509_roots": [stray]}}) == [f"issuers.{ISSUER}"]


def test_the_no_trust_root_stand_in_needs_a_collection_of_issuers() -> None:
    """A single string would be taken as a set of one-character issuers: ``bad_policy``."""
    with pytest.raises(InvalidInput) as info:
        UnsafeNoTrustRoot(ISSUER)
    assert info.value.code == "bad_policy"


def test_a_signing_kid_anchored_at_load_is_not_anchored_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The root anchors every signing kid it pins when it loads.  A signature naming one exactly, for
    ``assertionMethod`` under the root's own algorithms (that set, or an equal one), is answered from
    there without running the anchoring rule again; any other question runs the rule and gets its
    answer: another relationship (the cart key does not authenticate), a wider allow-list, a kid
    that is not a string."""
    root = _root()
    applied: list[object] = []

    def counted(pins: OwnerPins, kid: object, **arguments: Any) -> AnchoredKey:
        applied.append(kid)
        return anchor_key(pins, kid, **arguments)

    monkeypatch.setattr(trust_root_model, "anchor_key", counted)
    cart = f"{MERCHANT}#cart"
    equal = frozenset(sorted(root.algorithm_set))
    assert equal is not root.algorithm_set
    for algorithms in (root.algorithm_set, equal):
        assert root.anchor("merchant", MERCHANT, cart, algorithms=algorithms).key == CART_KEY
        assert root.anchor("issuer", ISSUER, "issuer-1", algorithms=algorithms).key == ISSUER_KEY
    assert applied == []
    with pytest.raises(UntrustedKeyError) as refused:
        root.anchor("merchant", MERCHANT, cart, algorithms=root.algorithm_set, relationship="authentication")
    assert refused.value.code == "not_authorised_for_purpose"
    wider = root.algorithm_set | {"not-an-algorithm"}
    assert root.anchor("merchant", MERCHANT, cart, algorithms=wider).key == CART_KEY
    with pytest.raises(UntrustedKeyError) as no_kid:
        root.anchor("merchant", MERCHANT, [cart], algorithms=root.algorithm_set)
    assert no_kid.value.code == "no_kid"
    assert applied == [cart, cart, [cart]]
