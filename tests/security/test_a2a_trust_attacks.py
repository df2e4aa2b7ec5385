"""Attacks on the A2A 1.0 trust objects: one test per attack, each naming the check that stops it.

* HS256-with-the-public-key (the algorithm-confusion class of CVE-2022-29217 in PyJWT): an attacker
  MACs a card or a push JWT with the signer's *public* key as the secret.
* Signature stripping, re-signing with the attacker's own DID, and a ``kid`` naming the trusted DID
  with the attacker's key.
* Lifting a valid parts signature onto another task's artifact.
* A did:web look-alike host against a ``*.partners.example`` pattern.
* Cross-tenant use of a caller entitled elsewhere.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.keys import KeyPair
from mudrika.errors import BindingError
from mudrika.identity.methods import key as did_key
from mudrika.identity.resolver import DIDResolver
from mudrika.trust.a2a.artifacts import SIGNATURE_KEY, PartsVerifier, sign_parts
from mudrika.trust.a2a.cards import AgentCardVerifier, canonical_card, sign_card
from mudrika.trust.policy import Policy

pytestmark = pytest.mark.security


class Party:
    def __init__(self) -> None:
        self.pair = KeyPair.generate("p256")
        self.did = did_key.create(self.pair.public_key)
        self.kid = f"{self.did}#{self.did.removeprefix('did:key:')}"


CARD: dict[str, Any] = {
    "name": "bank",
    "description": "pays",
    "version": "1",
    "supportedInterfaces": [
        {"url": "https://bank.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ],
    "capabilities": {},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "pay", "name": "pay", "description": "pay", "tags": ["pay"]}],
}


def _verifier(*dids: str) -> AgentCardVerifier:
    return AgentCardVerifier(resolver=DIDResolver.offline({}), trusted_dids=dids, algorithms=["ES256"])


def test_hs256_with_the_public_key_as_secret_is_refused() -> None:
    victim = Party()
    header = b64url_encode(json.dumps({"alg": "HS256", "typ": "JOSE", "kid": victim.kid}).encode())
    payload = b64url_encode(canonical_card(CARD))
    for secret in (victim.pair.public_key.to_pem(), victim.pair.public_key.raw):
        mac = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        forged = CARD | {"signatures": [{"protected": header, "signature": b64url_encode(mac)}]}
        report = _verifier(victim.did).inspect(forged)
        assert not report.verified
        assert report.checks[0].code == "alg_not_allowed"


def test_stripped_signatures_do_not_verify() -> None:
    victim = Party()
    signed = sign_card(CARD, victim.pair, kid=victim.kid)
    assert _verifier(victim.did).inspect(signed | {"signatures": []}).checks == ()


def test_attacker_resigning_a_modified_card_is_untrusted() -> None:
    victim, attacker = Party(), Party()
    modified = CARD | {
        "supportedInterfaces": [dict(CARD["supportedInterfaces"][0], url="https://evil.example/")]
    }
    resigned = sign_card(modified, attacker.pair, kid=attacker.kid)
    assert _verifier(victim.did).inspect(resigned).checks[0].code == "untrusted_did"


def test_victim_kid_with_attacker_key_fails_the_signature() -> None:
    victim, attacker = Party(), Party()
    forged = sign_card(CARD, attacker.pair, kid=victim.kid)  # the kid names the victim's key
    assert _verifier(victim.did).inspect(forged).checks[0].code == "bad_signature"


def test_parts_signature_cannot_move_to_another_task() -> None:
    agent = Party()
    mine = sign_parts(
        {"artifactId": "a-1", "parts": [{"text": "approved: 10 EUR"}]},
        agent.pair,
        kid=agent.kid,
        task_id="task-mine",
        context_id="ctx",
    )
    theirs = {
        "artifactId": "a-1",
        "parts": mine["parts"],
        "metadata": {SIGNATURE_KEY: mine["metadata"][SIGNATURE_KEY]},
    }
    verifier = PartsVerifier(
        resolver=DIDResolver.offline({}), trusted_dids=[agent.did], algorithms=["ES256"], max_age=None
    )
    with pytest.raises(BindingError) as info:
        verifier.verify(theirs, task_id="task-theirs", context_id="ctx")
    assert info.value.code == "wrong_binding"


def _policy() -> Policy:
    return Policy.from_document(
        {
            "version": 1,
            "roles": [{"role_id": "r", "role_name": "agent", "trust_level": "operator", "realm_name": "m"}],
            "operations": {"message/send": {"min_level": "operator"}},
            "did_roles": {"did:web:*.partners.example": {"roles": ["agent"], "tenants": ["acme"]}},
        }
    )


@pytest.mark.parametrize(
    "did",
    [
        "did:web:partners.example.evil.example",
        "did:web:evilpartners.example",
        "did:web:x.partners.example%3A8443",
        "did:web:x.partners.example:admin",
        "did:web:partners.example",
    ],
)
def test_did_web_look_alikes_get_no_role(did: str) -> None:
    policy = _policy()
    assert policy.decide(policy.principal_for_did(did), "message/send").reason == "no_role"


def test_entitled_in_one_tenant_is_not_entitled_in_another() -> None:
    policy = _policy()
    partner = policy.principal_for_did("did:web:bot.partners.example")
    assert policy.decide(partner, "message/send", tenant="acme").allowed
    assert policy.decide(partner, "message/send", tenant="globex").reason == "wrong_tenant"
