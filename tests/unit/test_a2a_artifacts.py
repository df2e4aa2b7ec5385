"""Artifact and message signatures: all parts, bound to task, context, object id and kid."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair
from mudrika.errors import BindingError, InvalidInput, VerificationError
from mudrika.identity.methods import key as did_key
from mudrika.identity.resolver import DIDResolver
from mudrika.trust.a2a.artifacts import SIGNATURE_KEY, PartsVerifier, parts_digest, sign_parts

NOW = 1_750_000_000.0


class Agent:
    def __init__(self) -> None:
        self.pair = KeyPair.generate("ed25519")
        self.did = did_key.create(self.pair.public_key)
        self.kid = f"{self.did}#{self.did.removeprefix('did:key:')}"


@pytest.fixture
def agent() -> Agent:
    return Agent()


def _artifact() -> dict[str, Any]:
    return {
        "artifactId": "art-1",
        "name": "report",
        "parts": [
            {"text": "summary"},
            {"raw": "aGVsbG8=", "filename": "hello.txt", "mediaType": "text/plain"},
            {"url": "https://files.example/r.pdf", "mediaType": "application/pdf"},
            {"data": {"total": 30, "items": ["a", "b"]}},
        ],
    }


def _verifier(agent: Agent, *, max_age: float | None = 3600) -> PartsVerifier:
    return PartsVerifier(
        resolver=DIDResolver.offline({}),
        trusted_dids=[agent.did],
        algorithms=["EdDSA", "Ed25519"],
        max_age=max_age,
        clock=lambda: NOW + 10,
    )


def _signed(agent: Agent, obj: dict[str, Any] | None = None) -> dict[str, Any]:
    return sign_parts(obj or _artifact(), agent.pair, kid=agent.kid, task_id="t-1", context_id="c-1", now=NOW)


def test_sign_then_verify(agent: Agent) -> None:
    verified = _verifier(agent).verify(_signed(agent), task_id="t-1", context_id="c-1")
    assert (verified.signer, verified.kind, verified.object_id) == (agent.did, "artifact", "art-1")
    assert verified.issued_at == int(NOW)


def test_message_signature(agent: Agent) -> None:
    message = {"messageId": "m-1", "role": "ROLE_AGENT", "taskId": "t-1", "parts": [{"text": "hi"}]}
    signed = _signed(agent, message)
    assert _verifier(agent).verify(signed, task_id="t-1", context_id="c-1").kind == "message"
    with pytest.raises(BindingError):
        _verifier(agent).verify(signed | {"taskId": "t-2"}, task_id="t-1", context_id="c-1")


@pytest.mark.parametrize(
    "tamper",
    [
        lambda a: a["parts"].reverse(),  # moved
        lambda a: a["parts"].pop(),  # removed
        lambda a: a["parts"].append({"text": "extra"}),  # added
        lambda a: a["parts"][0].__setitem__("text", "Summary"),  # altered text
        lambda a: a["parts"][1].__setitem__("filename", "other.txt"),  # altered file
        lambda a: a["parts"][3]["data"].__setitem__("total", 31),  # altered data
    ],
)
def test_a_moved_or_altered_part_fails(agent: Agent, tamper: Any) -> None:
    signed = _signed(agent)
    tamper(signed)
    with pytest.raises(BindingError) as info:
        _verifier(agent).verify(signed, task_id="t-1", context_id="c-1")
    assert info.value.code == "parts_mismatch"


def test_signature_cannot_be_lifted_onto_another_task_or_artifact(agent: Agent) -> None:
    signed = _signed(agent)
    with pytest.raises(BindingError):
        _verifier(agent).verify(signed, task_id="t-2", context_id="c-1")
    with pytest.raises(BindingError):
        _verifier(agent).verify(signed, task_id="t-1", context_id="c-2")
    with pytest.raises(BindingError):
        _verifier(agent).verify(signed | {"artifactId": "art-2"}, task_id="t-1", context_id="c-1")


def test_protobuf_round_trip_defaults_do_not_break_the_signature(agent: Agent) -> None:
    signed = _signed(agent)
    round_tripped = copy.deepcopy(signed)
    round_tripped["parts"][0]["filename"] = ""
    round_tripped["parts"][0]["metadata"] = {}
    round_tripped["parts"][3]["data"]["total"] = 30.0  # google.protobuf.Value has only doubles
    assert parts_digest(round_tripped) == parts_digest(signed)
    assert _verifier(agent).verify(round_tripped, task_id="t-1", context_id="c-1").signer == agent.did


def test_untrusted_signer_is_refused(agent: Agent) -> None:
    with pytest.raises(VerificationError) as info:
        _verifier(Agent()).verify(_signed(agent), task_id="t-1", context_id="c-1")
    assert info.value.code == "untrusted_did"


def test_unsigned_and_too_old(agent: Agent) -> None:
    with pytest.raises(VerificationError) as info:
        _verifier(agent).verify(_artifact(), task_id="t-1", context_id="c-1")
    assert info.value.code == "no_signature"
    with pytest.raises(VerificationError) as info:
        _verifier(agent, max_age=5).verify(_signed(agent), task_id="t-1", context_id="c-1")
    assert info.value.code == "expired"
    # Half-open: at exactly iat + max_age (the verifier's clock reads NOW + 10) the signature is too old.
    assert _verifier(agent, max_age=10.5).verify(_signed(agent), task_id="t-1", context_id="c-1")
    with pytest.raises(VerificationError) as info:
        _verifier(agent, max_age=10).verify(_signed(agent), task_id="t-1", context_id="c-1")
    assert info.value.code == "expired"
    unlimited = _verifier(agent, max_age=None).verify(_signed(agent), task_id="t-1", context_id="c-1")
    assert unlimited.issued_at == int(NOW)


def test_signature_lives_in_metadata_beside_existing_entries(agent: Agent) -> None:
    signed = _signed(agent, _artifact() | {"metadata": {"note": "kept"}})
    assert signed["metadata"]["note"] == "kept"
    assert signed["metadata"][SIGNATURE_KEY].count(".") == 2


@pytest.mark.parametrize(
    "obj",
    [
        {"parts": [{"text": "x"}]},
        {"artifactId": "a", "messageId": "m", "parts": [{"text": "x"}]},
        {"artifactId": "a", "parts": []},
        {"artifactId": "a", "parts": ["text"]},
    ],
)
def test_malformed_objects_are_invalid_input(agent: Agent, obj: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        sign_parts(obj, agent.pair, kid=agent.kid, task_id="t", context_id="c")
