"""Properties of Agent Card canonicalisation and signatures, against a2a-sdk 1.3 on generated cards.

* The canonical form is a fixed point: canonicalising the canonical bytes again gives the same bytes.
* sign -> verify round-trips for any card, in both forms.
* a2a-sdk 1.3 signs any card (empty strings, empty lists, unicode, extension parameters) and mudrika
  verifies it with ``accept_sdk_form``; mudrika's SDK-form signature verifies with a2a-sdk's verifier.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from a2a.types.a2a_pb2 import AgentCard
from a2a.utils.signing import create_agent_card_signer, create_signature_verifier
from google.protobuf.json_format import MessageToDict, ParseDict  # type: ignore[import-untyped]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jwt import PyJWK

from mudrika.crypto.keys import KeyPair
from mudrika.identity.methods import key as did_key
from mudrika.identity.resolver import DIDResolver
from mudrika.trust.a2a.cards import AgentCardVerifier, CanonicalForm, canonical_card, sign_card

pytestmark = pytest.mark.interop

PAIR = KeyPair.generate("p256")
DID = did_key.create(PAIR.public_key)
KID = f"{DID}#{DID.removeprefix('did:key:')}"
VERIFIER = AgentCardVerifier(
    resolver=DIDResolver.offline({}), trusted_dids=[DID], algorithms=["ES256"], accept_sdk_form=True
)

text = st.text(max_size=12)
scalars = st.one_of(text, st.integers(-(2**31), 2**31), st.booleans())
params = st.dictionaries(text, st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=3)


@st.composite
def cards(draw: st.DrawFn) -> dict[str, Any]:
    capabilities: dict[str, Any] = {}
    for name in ("streaming", "pushNotifications", "extendedAgentCard"):
        value = draw(st.none() | st.booleans())
        if value is not None:
            capabilities[name] = value
    extensions = draw(st.lists(st.fixed_dictionaries({"uri": text, "params": params}), max_size=2))
    if extensions:
        capabilities["extensions"] = extensions
    skill = st.fixed_dictionaries(
        {"id": text, "name": text, "description": text, "tags": st.lists(text, max_size=3)},
        optional={"examples": st.lists(text, max_size=2)},
    )
    return {
        "name": draw(text),
        "description": draw(text),
        "version": draw(text),
        "supportedInterfaces": [
            {"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": capabilities,
        "defaultInputModes": draw(st.lists(text, max_size=2)),
        "defaultOutputModes": draw(st.lists(text, max_size=2)),
        "skills": draw(st.lists(skill, max_size=2)),
    }


@pytest.fixture(autouse=True)
def _quiet_sdk_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="a2a.utils.proto_utils")


@pytest.mark.parametrize("form", ["a2a", "a2a-sdk-1.3"])
@given(card=cards())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_canonical_form_is_a_fixed_point(card: dict[str, Any], form: CanonicalForm) -> None:
    once = canonical_card(card, form=form)
    assert canonical_card(json.loads(once), form=form) == once


@given(card=cards())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_sign_verify_round_trip(card: dict[str, Any]) -> None:
    assert VERIFIER.verify(sign_card(card, PAIR, kid=KID)).checks[0].form == "a2a"


@given(card=cards())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_sdk_signed_cards_verify_in_the_sdk_form(card: dict[str, Any]) -> None:
    header: dict[str, Any] = {"kid": KID, "alg": "ES256", "typ": "JOSE"}  # no jku: never followed
    signer = create_agent_card_signer(PyJWK(PAIR.private_jwk(), algorithm="ES256"), header)  # type: ignore[arg-type]
    served = MessageToDict(signer(ParseDict(card, AgentCard())))
    assert VERIFIER.verify(served).verified


@given(card=cards())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_mudrika_sdk_form_signatures_verify_with_the_sdk(card: dict[str, Any]) -> None:
    verify = create_signature_verifier(
        lambda kid, jku: PyJWK(PAIR.public_key.to_jwk(), algorithm="ES256"), ["ES256"]
    )
    verify(ParseDict(sign_card(card, PAIR, kid=KID, form="a2a-sdk-1.3"), AgentCard()))
