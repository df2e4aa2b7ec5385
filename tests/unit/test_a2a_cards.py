"""Agent Card signatures (A2A 1.0 §8.4): canonical form, signing, verification and its refusals."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from mudrika.crypto.jose import sign_compact
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput, VerificationError
from mudrika.identity.methods import key as did_key
from mudrika.identity.resolver import DIDResolver
from mudrika.trust.a2a.cards import (
    MAX_SIGNATURES,
    AgentCardVerifier,
    canonical_card,
    load_card,
    sign_card,
)


def _card() -> dict[str, Any]:
    return {
        "name": "Example Agent",
        "description": "answers questions",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "qa", "name": "Q&A", "description": "answers", "tags": ["qa"]}],
    }


class Signer:
    def __init__(self, key_type: str = "p256") -> None:
        self.pair = KeyPair.generate(key_type)
        self.did = did_key.create(self.pair.public_key)
        self.kid = f"{self.did}#{self.did.removeprefix('did:key:')}"


@pytest.fixture
def signer() -> Signer:
    return Signer()


def _verifier(*dids: str, algorithms: tuple[str, ...] = ("ES256",), sdk: bool = False) -> AgentCardVerifier:
    return AgentCardVerifier(
        resolver=DIDResolver.offline({}), trusted_dids=dids, algorithms=algorithms, accept_sdk_form=sdk
    )


def _header(signature: dict[str, Any]) -> dict[str, Any]:
    encoded = signature["protected"]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    return decoded


# --- §8.4.1 canonical form ------------------------------------------------------------------------


def test_the_specification_example_canonicalises_to_the_published_bytes() -> None:
    # §8.4.1 "Example of Default Value Removal" (the fragment and its stated result).
    fragment = {
        "name": "Example Agent",
        "description": "",
        "capabilities": {"streaming": False, "pushNotifications": False, "extensions": []},
        "skills": [],
    }
    assert canonical_card(fragment) == (
        b'{"capabilities":{"pushNotifications":false,"streaming":false},'
        b'"description":"","name":"Example Agent","skills":[]}'
    )


def test_signatures_member_is_excluded_and_implicit_defaults_dropped() -> None:
    card = _card() | {"signatures": [{"protected": "x", "signature": "y"}], "securitySchemes": {}}
    card["supportedInterfaces"][0]["tenant"] = ""
    card["skills"][0]["examples"] = []
    assert canonical_card(card) == canonical_card(_card())


def test_optional_fields_keep_explicit_defaults() -> None:
    without = _card()
    with_false = _card()
    with_false["capabilities"]["extendedAgentCard"] = False
    assert canonical_card(without) != canonical_card(with_false)


def test_unknown_members_are_kept_so_the_signature_covers_them() -> None:
    card = _card() | {"x-extra": {"note": ""}}
    assert b'"x-extra":{"note":""}' in canonical_card(card)


def test_sdk_form_removes_every_empty_value() -> None:
    card = _card() | {"description": ""}
    card["capabilities"]["extensions"] = [{"uri": "urn:x", "params": {"a": "", "b": [1]}}]
    assert b'"description":""' not in canonical_card(card, form="a2a-sdk-1.3")
    assert b'"a":""' not in canonical_card(card, form="a2a-sdk-1.3")
    assert b'"a":""' in canonical_card(card)


@pytest.mark.parametrize(
    ("mutate", "member"),
    [
        (lambda c: c.__setitem__("name", 5), "$.name"),
        (lambda c: c.__setitem__("provider", None), "$.provider"),
        (lambda c: c.__setitem__("skills", {}), "$.skills"),
        (lambda c: c["capabilities"].__setitem__("streaming", "yes"), "$.capabilities.streaming"),
    ],
)
def test_ill_typed_members_are_invalid_input(mutate: Any, member: str) -> None:
    card = _card()
    mutate(card)
    with pytest.raises(InvalidInput) as info:
        canonical_card(card)
    assert info.value.code == "invalid_card"
    assert info.value.fields["member"] == member


def test_load_card_is_strict() -> None:
    with pytest.raises(InvalidInput) as info:
        load_card(b'{"name": "a", "name": "b"}')
    assert info.value.code == "duplicate_key"
    with pytest.raises(InvalidInput):
        load_card(b"[]")


# --- §8.4.2 signing and §8.4.3 verification -------------------------------------------------------


def test_sign_then_verify(signer: Signer) -> None:
    signed = sign_card(_card(), signer.pair, kid=signer.kid)
    header = _header(signed["signatures"][0])
    assert header == {"alg": "ES256", "kid": signer.kid, "typ": "JOSE"}
    report = _verifier(signer.did).verify(signed)
    assert report.verified
    assert report.signer == signer.kid
    assert report.checks[0].form == "a2a"


def test_ed25519_card_signature(signer: Signer) -> None:
    ed = Signer("ed25519")
    signed = sign_card(_card(), ed.pair, kid=ed.kid)
    assert _verifier(ed.did, algorithms=("EdDSA", "Ed25519")).verify(signed).verified


def test_any_change_breaks_the_signature(signer: Signer) -> None:
    signed = sign_card(_card(), signer.pair, kid=signer.kid)
    tampered = copy.deepcopy(signed)
    tampered["supportedInterfaces"][0]["url"] = "https://evil.example/a2a"
    with pytest.raises(VerificationError) as info:
        _verifier(signer.did).verify(tampered)
    assert info.value.code == "no_valid_signature"
    added = copy.deepcopy(signed) | {"x-extra": "injected"}
    assert not _verifier(signer.did).inspect(added).verified


def test_rotation_keeps_both_signatures_and_one_suffices(signer: Signer) -> None:
    new = Signer()
    both = sign_card(sign_card(_card(), signer.pair, kid=signer.kid), new.pair, kid=new.kid)
    assert len(both["signatures"]) == 2
    report = _verifier(new.did).inspect(both)
    assert [check.passed for check in report.checks] == [False, True]
    assert report.checks[0].code == "untrusted_did"
    assert report.signer == new.kid


def test_unsigned_card_is_refused(signer: Signer) -> None:
    with pytest.raises(VerificationError) as info:
        _verifier(signer.did).verify(_card())
    assert info.value.code == "no_signature"


def test_untrusted_did_is_refused_even_with_a_valid_signature(signer: Signer) -> None:
    signed = sign_card(_card(), signer.pair, kid=signer.kid)
    report = _verifier(Signer().did).inspect(signed)
    assert not report.verified
    assert report.checks[0].code == "untrusted_did"


def test_algorithm_outside_the_allow_list_is_refused(signer: Signer) -> None:
    signed = sign_card(_card(), signer.pair, kid=signer.kid)
    assert _verifier(signer.did, algorithms=("EdDSA",)).inspect(signed).checks[0].code == "alg_not_allowed"


def _signature_with_header(signer: Signer, card: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    payload = canonical_card(card)
    token = sign_compact(payload, signer.pair, kid=signer.kid, typ="JOSE", extra_header=extra)
    protected, _, signature = token.split(".")
    return card | {"signatures": [{"protected": protected, "signature": signature}]}


def test_a_jku_header_is_never_followed_and_fails_the_signature(signer: Signer) -> None:
    # sign_compact refuses to emit jku itself, so build the header by hand.
    header = {"alg": "ES256", "typ": "JOSE", "kid": signer.kid, "jku": "https://127.0.0.1:1/jwks.json"}
    protected = base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=").decode()
    payload = base64.urlsafe_b64encode(canonical_card(_card())).rstrip(b"=").decode()
    signature = signer.pair.sign(f"{protected}.{payload}".encode(), "ES256")
    card = _card() | {
        "signatures": [
            {"protected": protected, "signature": base64.urlsafe_b64encode(signature).rstrip(b"=").decode()}
        ]
    }
    report = _verifier(signer.did).inspect(card)
    assert report.checks[0].code == "forbidden_header"


def test_wrong_typ_is_refused(signer: Signer) -> None:
    payload = canonical_card(_card())
    token = sign_compact(payload, signer.pair, kid=signer.kid, typ="JWT")
    protected, _, signature = token.split(".")
    card = _card() | {"signatures": [{"protected": protected, "signature": signature}]}
    assert _verifier(signer.did).inspect(card).checks[0].code == "wrong_typ"


def test_unprotected_header_cannot_steer_verification(signer: Signer) -> None:
    signed = sign_card(_card(), signer.pair, kid=signer.kid)
    signed["signatures"][0]["header"] = {"kid": "did:key:zOther#x"}
    assert _verifier(signer.did).inspect(signed).checks[0].code == "bad_header"


def test_kid_must_be_a_did_url_with_a_fragment(signer: Signer) -> None:
    with pytest.raises(InvalidInput) as info:
        sign_card(_card(), signer.pair, kid="key-1")
    assert info.value.code == "bad_kid"
    with pytest.raises(InvalidInput):
        sign_card(_card(), signer.pair, kid=signer.did)


def test_too_many_signatures_are_refused(signer: Signer) -> None:
    card = _card()
    for _ in range(MAX_SIGNATURES):
        card = sign_card(card, signer.pair, kid=signer.kid)
    with pytest.raises(InvalidInput):
        sign_card(card, signer.pair, kid=signer.kid)
    card["signatures"].append(card["signatures"][0])
    with pytest.raises(InvalidInput):
        _verifier(signer.did).inspect(card)


@pytest.mark.parametrize("algorithms", [(), ("HS256",), ("ES256", "none")])
def test_verifier_refuses_symmetric_or_empty_allow_lists(algorithms: tuple[str, ...], signer: Signer) -> None:
    with pytest.raises(InvalidInput):
        _verifier(signer.did, algorithms=algorithms)


def test_verifier_needs_trusted_dids() -> None:
    with pytest.raises(InvalidInput):
        AgentCardVerifier(resolver=DIDResolver.offline({}), trusted_dids=(), algorithms=("ES256",))
    with pytest.raises(InvalidInput):
        AgentCardVerifier(resolver=DIDResolver.offline({}), trusted_dids="did:key:z", algorithms=("ES256",))


def test_sdk_form_is_accepted_only_when_asked(signer: Signer) -> None:
    card = _card() | {"description": ""}
    signed = sign_card(card, signer.pair, kid=signer.kid, form="a2a-sdk-1.3")
    assert not _verifier(signer.did).inspect(signed).verified
    report = _verifier(signer.did, sdk=True).verify(signed)
    assert report.checks[0].form == "a2a-sdk-1.3"


def test_sdk_form_never_covers_unknown_members(signer: Signer) -> None:
    with pytest.raises(InvalidInput) as info:
        sign_card(_card() | {"x-extra": "value"}, signer.pair, kid=signer.kid, form="a2a-sdk-1.3")
    assert info.value.code == "uncovered_member"
    signed = sign_card(_card() | {"description": ""}, signer.pair, kid=signer.kid, form="a2a-sdk-1.3")
    signed["x-extra"] = "added later"
    report = _verifier(signer.did, sdk=True).inspect(signed)
    assert not report.verified
    assert report.checks[0].code == "uncovered_member"
    assert report.unknown_members == ("$.x-extra",)


def test_deeply_nested_extension_params_are_refused_in_the_sdk_form() -> None:
    nested: dict[str, Any] = {"x": 1}
    for _ in range(40):
        nested = {"n": nested}
    card = _card()
    card["capabilities"]["extensions"] = [{"uri": "urn:x", "params": nested}]
    with pytest.raises(InvalidInput) as info:
        canonical_card(card, form="a2a-sdk-1.3")
    assert info.value.code == "too_deep"


@pytest.mark.anyio
async def test_async_verification_matches_the_sync_one(signer: Signer) -> None:
    other = Signer()
    signed = sign_card(sign_card(_card(), other.pair, kid=other.kid), signer.pair, kid=signer.kid)
    verifier = _verifier(signer.did)
    assert await verifier.ainspect(signed) == verifier.inspect(signed)
    assert (await verifier.averify(signed)).signer == signer.kid
    with pytest.raises(VerificationError):
        await verifier.averify(_card())
