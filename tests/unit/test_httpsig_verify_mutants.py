"""The RFC 9421 verifier's edges that its first mutation check found untested (docs/security.md).

Why a file of its own: each test here answers one or more surviving mutants of
``trust/httpsig/_verify.py`` -- a boundary of the time rule, a configuration value refused or
accepted, a malformed field member, the replay key's namespace -- and says so, so a later change
that loses the edge fails here by name.  Every refusal is asserted by its code (and the field or
parameter it names), because "some InvalidInput" would also be raised by a verifier that checked
something else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType, PublicKey
from mudrika.errors import ExpiredError, InvalidInput, SignatureError, UntrustedKeyError
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    REPLAY_KEY_PREFIX,
    HttpMessageSigner,
    HttpSignatureVerifier,
    StaticKeyLookup,
)
from mudrika.trust.jsonrpc import AuthenticationRequired
from tests._support.httpsig import NOW, ORIGIN, did_key, sign_request

URL = "https://agent.example/a2a"
BODY = b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}'
LIFETIME = 60


@pytest.fixture(scope="module")
def key() -> KeyPair:
    return KeyPair.generate(KeyType.ED25519)


def _signer(key: KeyPair) -> HttpMessageSigner:
    return HttpMessageSigner(key, did_key(key)[1], expires_in=LIFETIME, clock=lambda: NOW)


def _verifier(key: KeyPair, **kwargs: Any) -> HttpSignatureVerifier:
    kwargs.setdefault("keys", StaticKeyLookup({did_key(key)[1]: key.public_key}))
    kwargs.setdefault("replay_store", MemoryReplayStore(clock=lambda: NOW))
    kwargs.setdefault("origins", [ORIGIN])
    kwargs.setdefault("algorithms", REGISTERED_ALGORITHMS)
    kwargs.setdefault("clock", lambda: NOW)
    return HttpSignatureVerifier(**kwargs)


def _headers(key: KeyPair) -> dict[str, str]:
    return sign_request(_signer(key), "POST", URL, BODY)


def _refusal(key: KeyPair, headers: dict[str, str], **kwargs: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        _verifier(key, **kwargs).verify("POST", URL, headers, BODY)
    return info.value


def _label(headers: dict[str, str]) -> str:
    return headers["Signature-Input"].split("=", 1)[0]


# --- configuration -----------------------------------------------------------------------------


class _NotALookup:
    def lookup(self, keyid: str) -> None:
        return None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"keys": object()}, "keys must implement KeyLookup"),
        ({"replay_store": object()}, "replay_store must implement ReplayStore"),
        ({"algorithms": {"ed25519", "hs256"}}, "non-empty subset"),
        ({"origins": ["https://agent.example/a2a"]}, "no path or query"),
        ({"origins": []}, "at least one origin"),
        ({"leeway": -0.001}, "leeway"),
        ({"leeway": 30.001}, "leeway"),
        ({"leeway": math.nan}, "leeway"),
        ({"max_age": 0}, "max_age"),
        ({"max_age": -1}, "max_age"),
        ({"max_age": math.inf}, "max_age"),
        ({"max_age": math.nan}, "max_age"),
        ({"max_lifetime": 0}, "max_lifetime"),
        ({"max_lifetime": True}, "max_lifetime"),
        ({"max_lifetime": 1.5}, "max_lifetime"),
        ({"max_body": -1}, "max_body"),
        ({"max_body": True}, "max_body"),
        ({"max_body": 1.0}, "max_body"),
    ],
)
def test_each_bad_setting_is_refused_by_name(key: KeyPair, change: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput) as info:
        _verifier(key, **change)
    assert info.value.code == "httpsig_config"
    assert message in str(info.value)


def test_an_object_with_a_lookup_method_alone_is_not_a_key_lookup(key: KeyPair) -> None:
    with pytest.raises(InvalidInput) as info:
        _verifier(key, keys=_NotALookup())
    assert info.value.code == "httpsig_config"


@pytest.mark.parametrize(
    "change",
    [
        {"leeway": 0},
        {"leeway": 0.5},
        {"leeway": 30},
        {"max_age": 0.5},
        {"max_lifetime": 1},
        {"max_body": 0},
    ],
)
def test_the_edges_of_each_setting_are_accepted(key: KeyPair, change: dict[str, Any]) -> None:
    assert "agent.example" in repr(_verifier(key, **change))


def test_unknown_algorithms_are_named_at_most_eight(key: KeyPair) -> None:
    unknown = [f"alg-{index:02d}" for index in range(10)]
    with pytest.raises(InvalidInput) as info:
        _verifier(key, algorithms=unknown)
    assert info.value.fields["unknown"] == unknown[:8]


# --- the time rule at its instants ---------------------------------------------------------------


def test_expiry_is_at_exactly_expires_plus_leeway(key: KeyPair) -> None:
    headers = _headers(key)
    last = NOW + LIFETIME + 5 - 0.001  # the default leeway is 5 s
    assert _verifier(key).verify("POST", URL, headers, BODY, now=last).created == NOW
    with pytest.raises(ExpiredError) as info:
        _verifier(key).verify("POST", URL, headers, BODY, now=NOW + LIFETIME + 5)
    assert info.value.code == "signature_expired"


def test_too_old_is_at_exactly_max_age_plus_leeway(key: KeyPair) -> None:
    headers = _headers(key)
    assert _verifier(key, max_age=10).verify("POST", URL, headers, BODY, now=NOW + 15 - 0.001).nonce
    with pytest.raises(ExpiredError) as info:
        _verifier(key, max_age=10).verify("POST", URL, headers, BODY, now=NOW + 15)
    assert info.value.code == "signature_too_old"


def test_a_signature_may_expire_the_instant_it_is_created(key: KeyPair) -> None:
    verifier = _verifier(key)
    verifier._check_time(int(NOW), int(NOW), NOW)  # expires == created: a window of one instant
    with pytest.raises(InvalidInput) as info:
        verifier._check_time(int(NOW), int(NOW) - 1, NOW)
    assert info.value.code == "bad_time_window"


def test_verify_judges_at_the_instant_it_is_given_not_the_clock(key: KeyPair) -> None:
    late = _verifier(key, clock=lambda: NOW + 10_000)
    assert late.verify("POST", URL, _headers(key), BODY, now=NOW).created == NOW


# --- the fields and the chosen signature ---------------------------------------------------------


def test_no_signature_at_all_asks_for_authentication(key: KeyPair) -> None:
    with pytest.raises(AuthenticationRequired) as info:
        _verifier(key).verify("POST", URL, {"Content-Type": "application/json"}, b"")
    assert info.value.code == "no_signature"


@pytest.mark.parametrize("field", ["Signature-Input", "Signature"])
def test_a_malformed_field_is_named_in_the_refusal(key: KeyPair, field: str) -> None:
    headers = {**_headers(key), field: "not a dictionary("}
    refusal = _refusal(key, headers)
    assert refusal.code == "bad_structured_field"
    assert refusal.fields["field"] == field.lower()


def test_one_input_and_two_signatures_is_ambiguous(key: KeyPair) -> None:
    headers = _headers(key)
    headers["Signature"] += ", other=:AAAA:"
    assert _refusal(key, headers).code == "ambiguous_signature"


@pytest.mark.parametrize("missing_from", ["Signature-Input", "Signature"])
def test_the_configured_label_must_be_in_both_fields(key: KeyPair, missing_from: str) -> None:
    headers = _headers(key)
    label = _label(headers)
    headers[missing_from] = "other" + headers[missing_from][len(label) :]
    refusal = _refusal(key, headers, label=label)
    assert refusal.code == "signature_label_mismatch"


def test_a_signature_input_member_must_be_an_inner_list(key: KeyPair) -> None:
    headers = _headers(key)
    headers["Signature-Input"] = f"{_label(headers)}=1"
    assert _refusal(key, headers).code == "bad_signature_input"


@pytest.mark.parametrize("value", ['"text"', "(:AAAA:)", ":AAAA:;p=1"])
def test_a_signature_member_must_be_a_bare_byte_sequence(key: KeyPair, value: str) -> None:
    headers = _headers(key)
    headers["Signature"] = f"{_label(headers)}={value}"
    assert _refusal(key, headers).code == "bad_signature_value"


@pytest.mark.parametrize("parameter", ["created", "keyid", "alg"])
def test_a_missing_parameter_is_named(key: KeyPair, parameter: str) -> None:
    headers = _headers(key)
    headers["Signature-Input"] = re.sub(rf';{parameter}=("[^"]*"|\d+)', "", headers["Signature-Input"])
    refusal = _refusal(key, headers)
    assert refusal.code == "missing_parameter"
    assert refusal.fields["parameter"] == parameter


def test_an_unlisted_algorithm_is_named_in_at_most_32_characters(key: KeyPair) -> None:
    headers = _headers(key)
    long_name = "x" * 40
    headers["Signature-Input"] = re.sub(r';alg="[^"]*"', f';alg="{long_name}"', headers["Signature-Input"])
    refusal = _refusal(key, headers)
    assert refusal.code == "alg_not_allowed"
    assert refusal.fields["alg"] == long_name[:32]


def test_a_covered_content_digest_must_be_present(key: KeyPair) -> None:
    headers = _headers(key)
    assert "content-digest" in headers["Signature-Input"]
    del headers["Content-Digest"]
    refusal = _refusal(key, headers)
    assert refusal.code == "missing_component"
    assert refusal.fields["component"] == "content-digest"


# --- the key -------------------------------------------------------------------------------------


class _AnswersWith:
    """A key lookup that answers every keyid with one fixed value (a broken or hostile lookup)."""

    def __init__(self, answer: Any) -> None:
        self._answer = answer

    def lookup(self, keyid: str) -> Any:
        return self._answer

    async def alookup(self, keyid: str) -> Any:
        return self._answer


@pytest.mark.parametrize("answer", [None, "not a key", "key pair"])
def test_a_lookup_that_returns_no_public_key_is_refused(key: KeyPair, answer: Any) -> None:
    value = key if answer == "key pair" else answer
    assert not isinstance(value, PublicKey)
    with pytest.raises(UntrustedKeyError) as info:
        _verifier(key, keys=_AnswersWith(value)).verify("POST", URL, _headers(key), BODY)
    assert info.value.code == "unknown_key"


def test_the_algorithm_must_name_the_type_of_the_key_found(key: KeyPair) -> None:
    """An Ed25519 signature whose keyid the lookup maps to a P-256 key: refused for the mismatch
    itself, naming the algorithm as the request wrote it (RFC 9421's name, which the operator finds
    in the request, not the JOSE name the key's own check would give)."""
    other = KeyPair.generate(KeyType.P256).public_key
    with pytest.raises(SignatureError) as info:
        _verifier(key, keys=_AnswersWith(other)).verify("POST", URL, _headers(key), BODY)
    assert info.value.code == "alg_key_mismatch"
    assert info.value.fields["alg"] == "ed25519"
    assert info.value.fields["key_type"] == KeyType.P256.value


# --- the replay key ------------------------------------------------------------------------------


def _checked(key: KeyPair) -> Any:
    return _verifier(key).precheck("POST", URL, _headers(key)).checked


@pytest.mark.parametrize("length", [255, 256])
def test_a_did_up_to_256_characters_keys_the_nonce_as_it_is(key: KeyPair, length: int) -> None:
    did = "did:example:" + "a" * (length - len("did:example:"))
    checked = dataclasses.replace(_checked(key), did=did)
    assert checked.replay_key() == f"httpsig:{did}:{checked.nonce}"
    assert REPLAY_KEY_PREFIX == "httpsig:"


def test_a_longer_did_is_hashed_into_the_key(key: KeyPair) -> None:
    did = "did:example:" + "a" * (257 - len("did:example:"))
    checked = dataclasses.replace(_checked(key), did=did)
    digest = hashlib.sha256(did.encode()).hexdigest()
    assert checked.replay_key() == f"httpsig:sha256:{digest}:{checked.nonce}"
