"""Agent Card signatures both ways with a2a-sdk 1.3's own ``a2a.utils.signing`` (PyJWT underneath).

The cards travel as a2a-sdk serves them (``MessageToDict`` of the protobuf card) and are parsed back
with ``ParseDict``.  The divergences of a2a-sdk 1.3 (A2A issues #2122, #2249) are pinned here:

* it hashes after removing every empty string, list and object, REQUIRED fields included, so a card
  with an empty ``description`` or an empty extension parameter signed by one side fails on the other
  unless mudrika signs / accepts the SDK form;
* its signer defaults to HS256 when the protected header has no ``alg``: mudrika refuses such cards;
* a protected header written as its ``ProtectedHeader`` TypedDict with ``jku: None`` carries
  ``"jku": null``, which mudrika refuses (a key location is never followed, not even an empty one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from a2a.types.a2a_pb2 import AgentCard
from a2a.utils.signing import (
    InvalidSignaturesError,
    create_agent_card_signer,
    create_signature_verifier,
)
from google.protobuf.json_format import MessageToDict, ParseDict  # type: ignore[import-untyped]
from jwt import PyJWK

from mudrika.crypto.keys import KeyPair
from mudrika.identity.methods import key as did_key
from mudrika.identity.resolver import DIDResolver
from mudrika.trust.a2a.cards import AgentCardVerifier, sign_card

pytestmark = pytest.mark.interop


@pytest.fixture(autouse=True)
def _quiet_sdk_warning(caplog: pytest.LogCaptureFixture) -> None:
    # a2a-sdk logs (not warns) that a card with an empty REQUIRED field is not spec-compliant.
    caplog.set_level(logging.ERROR, logger="a2a.utils.proto_utils")


class Agent:
    def __init__(self) -> None:
        self.pair = KeyPair.generate("p256")
        self.did = did_key.create(self.pair.public_key)
        self.kid = f"{self.did}#{self.did.removeprefix('did:key:')}"

    def private_jwk(self) -> PyJWK:
        return PyJWK(self.pair.private_jwk(), algorithm="ES256")

    def public_jwk(self) -> PyJWK:
        return PyJWK(self.pair.public_key.to_jwk(), algorithm="ES256")


def _card_json(*, empties: bool) -> dict[str, Any]:
    card: dict[str, Any] = {
        "name": "echo",
        "description": "" if empties else "echoes text",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "echo", "tags": ["echo"]}],
    }
    if empties:
        card["capabilities"]["extensions"] = [{"uri": "urn:example:ext", "params": {"note": "", "n": 1}}]
    return card


def _sdk_signed(agent: Agent, card: dict[str, Any], header: dict[str, Any]) -> dict[str, Any]:
    signer = create_agent_card_signer(agent.private_jwk(), header)  # type: ignore[arg-type]
    served: dict[str, Any] = MessageToDict(signer(ParseDict(card, AgentCard())))
    return served


def _sdk_verifier(agent: Agent) -> Callable[[AgentCard], None]:
    verify: Callable[[AgentCard], None] = create_signature_verifier(
        lambda kid, jku: agent.public_jwk(), ["ES256"]
    )
    return verify


def _ours(agent: Agent, *, sdk: bool = False) -> AgentCardVerifier:
    return AgentCardVerifier(
        resolver=DIDResolver.offline({}), trusted_dids=[agent.did], algorithms=["ES256"], accept_sdk_form=sdk
    )


def test_sdk_signed_card_verifies_with_mudrika() -> None:
    agent = Agent()
    served = _sdk_signed(agent, _card_json(empties=False), {"kid": agent.kid, "alg": "ES256", "typ": "JOSE"})
    report = _ours(agent).verify(served)
    assert report.signer == agent.kid
    assert report.checks[0].form == "a2a"


def test_mudrika_signed_card_verifies_with_the_sdk() -> None:
    agent = Agent()
    signed = sign_card(_card_json(empties=False), agent.pair, kid=agent.kid)
    _sdk_verifier(agent)(ParseDict(signed, AgentCard()))


def test_divergence_empty_values_sdk_signed() -> None:
    agent = Agent()
    served = _sdk_signed(agent, _card_json(empties=True), {"kid": agent.kid, "alg": "ES256", "typ": "JOSE"})
    # The specification's form keeps "description": "" and the empty parameter: the hashes differ.
    assert not _ours(agent).inspect(served).verified
    # ...unless the verifier opts into a2a-sdk 1.3's form.
    assert _ours(agent, sdk=True).verify(served).checks[0].form == "a2a-sdk-1.3"


def test_divergence_empty_values_mudrika_signed() -> None:
    agent = Agent()
    card = _card_json(empties=True)
    spec_signed = sign_card(card, agent.pair, kid=agent.kid)
    with pytest.raises(InvalidSignaturesError):
        _sdk_verifier(agent)(ParseDict(spec_signed, AgentCard()))
    sdk_signed = sign_card(card, agent.pair, kid=agent.kid, form="a2a-sdk-1.3")
    _sdk_verifier(agent)(ParseDict(sdk_signed, AgentCard()))


def test_divergence_hs256_default_is_refused() -> None:
    agent = Agent()
    secret = "a shared secret that every verifier would have to hold!"
    signer = create_agent_card_signer(secret, {"kid": agent.kid, "typ": "JOSE"})  # type: ignore[typeddict-item]
    served = MessageToDict(signer(ParseDict(_card_json(empties=False), AgentCard())))
    report = _ours(agent).inspect(served)
    assert not report.verified
    assert report.checks[0].alg == "HS256"
    assert report.checks[0].code == "alg_not_allowed"


def test_divergence_typed_dict_header_with_null_jku_is_refused() -> None:
    agent = Agent()
    header = {"kid": agent.kid, "alg": "ES256", "typ": "JOSE", "jku": None}
    served = _sdk_signed(agent, _card_json(empties=False), header)
    assert _ours(agent).inspect(served).checks[0].code == "forbidden_header"


def test_rotation_card_from_the_sdk_with_an_old_and_a_new_key() -> None:
    old, new = Agent(), Agent()
    card = ParseDict(_card_json(empties=False), AgentCard())
    for agent in (old, new):
        header: dict[str, Any] = {"kid": agent.kid, "alg": "ES256", "typ": "JOSE"}
        signer = create_agent_card_signer(agent.private_jwk(), header)  # type: ignore[arg-type]
        card = signer(card)
    served = MessageToDict(card)
    report = _ours(new).verify(served)
    assert [check.passed for check in report.checks] == [False, True]
