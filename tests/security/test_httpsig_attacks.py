"""Attacks on DID-signed requests (RFC 9421 profile): one test per attack, exact error class, code and
A2A JSON-RPC code.

The scheme mudrika replaces signed neither method, path nor audience and kept nothing single-use; each
test below is a request that scheme would have accepted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    MudrikaError,
    NotYetValidError,
    ReplayError,
    SignatureError,
    UntrustedKeyError,
)
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    REPLAY_KEY_PREFIX,
    DocumentKeyLookup,
    HttpMessageSigner,
    HttpSignatureVerifier,
    KeyLookup,
    MessageView,
    StaticKeyLookup,
    content_digest,
    signature_base,
)
from mudrika.trust.httpsig._sf import InnerList, Item, serialize_dictionary
from mudrika.trust.jsonrpc import JsonRpcAuthCode, code_for
from tests._support.httpsig import HEADERS, NOW, ORIGIN, did_key, did_key_document, sign_request

pytestmark = pytest.mark.security

URL = "https://agent.example/a2a/tasks"
BODY = b'{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t-1"}}'


@pytest.fixture(scope="module")
def victim() -> KeyPair:
    return KeyPair.generate(KeyType.ED25519)


@pytest.fixture
def store() -> MemoryReplayStore:
    return MemoryReplayStore(clock=lambda: NOW)


def verifier_for(keys: KeyLookup, store: MemoryReplayStore, **kwargs: Any) -> HttpSignatureVerifier:
    kwargs.setdefault("clock", lambda: NOW)
    return HttpSignatureVerifier(
        keys=keys, replay_store=store, origins=[ORIGIN], algorithms=REGISTERED_ALGORITHMS, **kwargs
    )


def sign(
    key: KeyPair, keyid: str | None = None, *, url: str = URL, body: bytes = BODY, at: float = NOW
) -> dict[str, str]:
    signer = HttpMessageSigner(key, keyid or did_key(key)[1], clock=lambda: at)
    return sign_request(signer, "POST", url, body)


def expect(exc: MudrikaError, cls: type[MudrikaError], code: str, rpc: JsonRpcAuthCode) -> None:
    assert type(exc) is cls
    assert exc.code == code
    assert code_for(exc) is rpc


def test_replay_to_the_same_path(victim: KeyPair, store: MemoryReplayStore) -> None:
    verifier = verifier_for(StaticKeyLookup({did_key(victim)[1]: victim.public_key}), store)
    headers = sign(victim)
    verifier.verify("POST", URL, headers, BODY)
    with pytest.raises(ReplayError) as info:
        verifier.verify("POST", URL, headers, BODY)
    expect(info.value, ReplayError, "replay", JsonRpcAuthCode.INVALID_TOKEN)


def test_replay_to_another_path(victim: KeyPair, store: MemoryReplayStore) -> None:
    did, keyid = did_key(victim)
    verifier = verifier_for(StaticKeyLookup({keyid: victim.public_key}), store)
    headers = sign(victim)
    accepted = verifier.verify("POST", URL, headers, BODY)
    # The path is covered: the same headers on another path do not verify ...
    with pytest.raises(SignatureError) as info:
        verifier.verify("POST", "https://agent.example/a2a/admin", headers, BODY)
    expect(info.value, SignatureError, "bad_signature", JsonRpcAuthCode.INVALID_SIGNATURE)
    # ... and the nonce is already claimed, so no other route could accept it either.
    assert store.claim(f"{REPLAY_KEY_PREFIX}{did}:{accepted.nonce}", NOW + 60) is False


def test_another_path_first_does_not_burn_the_nonce(victim: KeyPair, store: MemoryReplayStore) -> None:
    verifier = verifier_for(StaticKeyLookup({did_key(victim)[1]: victim.public_key}), store)
    headers = sign(victim)
    with pytest.raises(SignatureError):
        verifier.verify("POST", "https://agent.example/a2a/admin", headers, BODY)
    assert verifier.verify("POST", URL, headers, BODY).target_uri == URL


def test_replay_to_another_agent(victim: KeyPair, store: MemoryReplayStore) -> None:
    """A request signed for agent A, presented to agent B (which shares no replay store with A)."""
    keys = StaticKeyLookup({did_key(victim)[1]: victim.public_key})
    other = HttpSignatureVerifier(
        keys=keys,
        replay_store=store,
        origins=["https://other.example"],
        algorithms={"ed25519"},
        clock=lambda: NOW,
    )
    with pytest.raises(BindingError) as info:
        other.verify("POST", URL, sign(victim), BODY)
    expect(info.value, BindingError, "wrong_audience", JsonRpcAuthCode.INVALID_TOKEN)


def test_changed_method(victim: KeyPair, store: MemoryReplayStore) -> None:
    verifier = verifier_for(StaticKeyLookup({did_key(victim)[1]: victim.public_key}), store)
    with pytest.raises(SignatureError) as info:
        verifier.verify("PUT", URL, sign(victim), BODY)
    expect(info.value, SignatureError, "bad_signature", JsonRpcAuthCode.INVALID_SIGNATURE)


def test_changed_body_with_the_old_digest(victim: KeyPair, store: MemoryReplayStore) -> None:
    verifier = verifier_for(StaticKeyLookup({did_key(victim)[1]: victim.public_key}), store)
    headers = sign(victim)
    with pytest.raises(SignatureError) as info:
        verifier.verify("POST", URL, headers, BODY.replace(b"tasks/get", b"tasks/cancel"))
    expect(info.value, SignatureError, "content_digest_mismatch", JsonRpcAuthCode.INVALID_SIGNATURE)
    # The failed attempt did not consume the nonce: the genuine body still goes through once.
    assert verifier.verify("POST", URL, headers, BODY).body == BODY


def test_changed_body_with_a_new_digest(victim: KeyPair, store: MemoryReplayStore) -> None:
    verifier = verifier_for(StaticKeyLookup({did_key(victim)[1]: victim.public_key}), store)
    forged = BODY.replace(b"tasks/get", b"tasks/cancel")
    headers = {**sign(victim), "Content-Digest": content_digest(forged)}
    with pytest.raises(SignatureError) as info:
        verifier.verify("POST", URL, headers, forged)
    expect(info.value, SignatureError, "bad_signature", JsonRpcAuthCode.INVALID_SIGNATURE)


def test_expired_signature(victim: KeyPair, store: MemoryReplayStore) -> None:
    verifier = verifier_for(StaticKeyLookup({did_key(victim)[1]: victim.public_key}), store)
    with pytest.raises(ExpiredError) as info:
        verifier.verify("POST", URL, sign(victim, at=NOW - 66), BODY)
    expect(info.value, ExpiredError, "signature_expired", JsonRpcAuthCode.TOKEN_EXPIRED)


def test_created_in_the_future(victim: KeyPair, store: MemoryReplayStore) -> None:
    verifier = verifier_for(StaticKeyLookup({did_key(victim)[1]: victim.public_key}), store)
    # Not yet valid is never "expired" (that tells the client to refresh): -32010, invalid_token.
    with pytest.raises(NotYetValidError) as info:
        verifier.verify("POST", URL, sign(victim, at=NOW + 30), BODY)
    expect(info.value, NotYetValidError, "created_in_future", JsonRpcAuthCode.INVALID_TOKEN)


def _hand_signed(
    key: KeyPair, keyid: str, params: tuple[tuple[str, int | str], ...], alg: str
) -> dict[str, str]:
    """A correctly signed request whose Signature-Input the attacker chose (here: without a nonce)."""
    digest = content_digest(BODY)
    headers = {**HEADERS, "Content-Digest": digest}
    inner = InnerList(
        tuple(Item(c) for c in ("@method", "@target-uri", "content-digest", "content-type")), params
    )
    base = signature_base(MessageView.request("POST", URL, headers), inner)
    signature = key.sign(base, alg)
    return {
        **headers,
        "Signature-Input": serialize_dictionary({"sig1": inner}),
        "Signature": serialize_dictionary({"sig1": Item(signature)}),
    }


def test_missing_nonce(victim: KeyPair, store: MemoryReplayStore) -> None:
    keyid = did_key(victim)[1]
    headers = _hand_signed(
        victim,
        keyid,
        (
            ("created", int(NOW)),
            ("expires", int(NOW) + 60),
            ("keyid", keyid),
            ("alg", "ed25519"),
            ("tag", "mudrika-a2a"),
        ),
        "EdDSA",
    )
    verifier = verifier_for(StaticKeyLookup({keyid: victim.public_key}), store)
    with pytest.raises(InvalidInput) as info:
        verifier.verify("POST", URL, headers, BODY)
    expect(info.value, InvalidInput, "missing_parameter", JsonRpcAuthCode.INVALID_TOKEN)
    assert info.value.fields["parameter"] == "nonce"


def test_keyid_of_another_did(victim: KeyPair, store: MemoryReplayStore) -> None:
    attacker = KeyPair.generate(KeyType.ED25519)
    victim_keyid = did_key(victim)[1]
    keys = StaticKeyLookup({victim_keyid: victim.public_key, did_key(attacker)[1]: attacker.public_key})
    with pytest.raises(SignatureError) as info:
        verifier_for(keys, store).verify("POST", URL, sign(attacker, victim_keyid), BODY)
    expect(info.value, SignatureError, "bad_signature", JsonRpcAuthCode.INVALID_SIGNATURE)


def test_keyid_of_another_did_with_another_key_type(victim: KeyPair, store: MemoryReplayStore) -> None:
    """alg follows the attacker's P-256 key, the victim's key is Ed25519: refused before any crypto."""
    attacker = KeyPair.generate(KeyType.P256)
    victim_keyid = did_key(victim)[1]
    with pytest.raises(SignatureError) as info:
        verifier_for(StaticKeyLookup({victim_keyid: victim.public_key}), store).verify(
            "POST", URL, sign(attacker, victim_keyid), BODY
        )
    expect(info.value, SignatureError, "alg_key_mismatch", JsonRpcAuthCode.INVALID_SIGNATURE)


def test_algorithm_confusion_in_the_header(victim: KeyPair, store: MemoryReplayStore) -> None:
    """alg claims RSA for an Ed25519 key: the header never decides how the key is used."""
    keyid = did_key(victim)[1]
    params: tuple[tuple[str, int | str], ...] = (
        ("created", int(NOW)),
        ("expires", int(NOW) + 60),
        ("nonce", "AAAAAAAAAAAAAAAAAAAAAA"),
        ("keyid", keyid),
        ("alg", "rsa-v1_5-sha256"),
        ("tag", "mudrika-a2a"),
    )
    headers = _hand_signed(victim, keyid, params, "EdDSA")
    with pytest.raises(SignatureError) as info:
        verifier_for(StaticKeyLookup({keyid: victim.public_key}), store).verify("POST", URL, headers, BODY)
    expect(info.value, SignatureError, "alg_key_mismatch", JsonRpcAuthCode.INVALID_SIGNATURE)


def test_method_not_authorised_for_authentication(victim: KeyPair, store: MemoryReplayStore) -> None:
    document = did_key_document(victim, "assertionMethod")
    verifier = verifier_for(DocumentKeyLookup([document]), store)
    with pytest.raises(UntrustedKeyError) as info:
        verifier.verify("POST", URL, sign(victim), BODY)
    expect(info.value, UntrustedKeyError, "not_authorised_for_purpose", JsonRpcAuthCode.INVALID_TOKEN)


def test_body_not_covered_by_the_signature(victim: KeyPair, store: MemoryReplayStore) -> None:
    keyid = did_key(victim)[1]
    inner = InnerList(
        (Item("@method"), Item("@target-uri")),
        (
            ("created", int(NOW)),
            ("expires", int(NOW) + 60),
            ("nonce", "BBBBBBBBBBBBBBBBBBBBBB"),
            ("keyid", keyid),
            ("alg", "ed25519"),
            ("tag", "mudrika-a2a"),
        ),
    )
    base = signature_base(MessageView.request("POST", URL, {}), inner)
    headers = {
        "Signature-Input": serialize_dictionary({"sig1": inner}),
        "Signature": serialize_dictionary({"sig1": Item(victim.sign(base, "EdDSA"))}),
    }
    with pytest.raises(InvalidInput) as info:
        verifier_for(StaticKeyLookup({keyid: victim.public_key}), store).verify("POST", URL, headers, BODY)
    expect(info.value, InvalidInput, "body_not_signed", JsonRpcAuthCode.INVALID_TOKEN)


def test_header_injection_in_a_covered_field(victim: KeyPair, store: MemoryReplayStore) -> None:
    """A newline in a covered value would let a sender forge a line of the signature base."""
    headers = {**sign(victim), "Content-Type": 'application/json\n"@method": GET'}
    with pytest.raises(InvalidInput) as info:
        verifier_for(StaticKeyLookup({did_key(victim)[1]: victim.public_key}), store).verify(
            "POST", URL, headers, BODY
        )
    expect(info.value, InvalidInput, "bad_component_value", JsonRpcAuthCode.INVALID_TOKEN)


@pytest.mark.anyio
async def test_body_streamed_longer_than_the_cap(victim: KeyPair, store: MemoryReplayStore) -> None:
    keyid = did_key(victim)[1]
    verifier = verifier_for(StaticKeyLookup({keyid: victim.public_key}), store, max_body=64 * 1024)
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        while True:
            pulled += 1
            yield b" " * 4096

    with pytest.raises(InvalidInput) as info:
        await verifier.averify("POST", URL, sign(victim), endless())
    expect(info.value, InvalidInput, "body_too_large", JsonRpcAuthCode.INVALID_TOKEN)
    assert pulled == 17  # stopped at the first chunk past 64 KiB, not after buffering the stream
    assert len(store) == 0  # nothing was claimed
