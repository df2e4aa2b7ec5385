"""Interop with the PyPI ``http-message-signatures`` package (v3): each side verifies the other's requests.

Both sides sign the same covered components over ``httpx.Request`` objects.  ECDSA: the package signs
and verifies raw 64-byte ``r||s`` (RFC 9421 §3.3.4), as mudrika's keys do, so no DER conversion is
involved on either side; the test checks the byte length to keep it that way.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import httpx
import pytest
from http_message_signatures import (
    HTTPMessageSigner,
    HTTPMessageVerifier,
    InvalidSignature,
    MappingKeyResolver,
    algorithms,
)

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import SignatureError
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    HttpSignatureVerifier,
    StaticKeyLookup,
    TargetMode,
)
from mudrika.trust.httpsig import (
    HttpMessageSigner as MudrikaSigner,
)

pytestmark = pytest.mark.interop

URL = "https://agent.example/a2a?task=7"
ORIGIN = "https://agent.example"
COVERED: dict[TargetMode, tuple[str, ...]] = {
    "target-uri": ("@method", "@target-uri", "content-digest", "content-type"),
    "authority-path-query": ("@method", "@authority", "@path", "@query", "content-digest", "content-type"),
}
CASES = [
    (KeyType.ED25519, algorithms.ED25519, "ed25519"),
    (KeyType.P256, algorithms.ECDSA_P256_SHA256, "ecdsa-p256-sha256"),
    (KeyType.RSA, algorithms.RSA_PSS_SHA512, "rsa-pss-sha512"),
]


def _identity(key_type: KeyType) -> tuple[KeyPair, str]:
    key = KeyPair.generate(key_type)
    multikey = key.public_key.to_multikey()
    return key, f"did:key:{multikey}#{multikey}"


def _their_resolver(key: KeyPair, keyid: str) -> MappingKeyResolver:
    public = key.to_cryptography().public_key()
    return MappingKeyResolver(public_keys={keyid: public}, private_keys={keyid: key.to_cryptography()})


def _request(body: bytes = b'{"jsonrpc":"2.0","id":1,"method":"message/send"}') -> httpx.Request:
    return httpx.Request("POST", URL, content=body, headers={"Content-Type": "application/json"})


def _our_verifier(key: KeyPair, keyid: str) -> HttpSignatureVerifier:
    return HttpSignatureVerifier(
        keys=StaticKeyLookup({keyid: key.public_key}),
        replay_store=MemoryReplayStore(),
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
    )


@pytest.mark.parametrize(("key_type", "their_alg", "alg_name"), CASES)
@pytest.mark.parametrize("mode", ["target-uri", "authority-path-query"])
def test_they_verify_our_signatures(
    key_type: KeyType, their_alg: Any, alg_name: str, mode: TargetMode
) -> None:
    key, keyid = _identity(key_type)
    request = _request()
    signed = MudrikaSigner(key, keyid, target_mode=mode).sign(
        request.method, str(request.url), request.headers, request.content
    )
    for name, value in signed.as_dict().items():
        request.headers[name] = value
    verifier = HTTPMessageVerifier(signature_algorithm=their_alg, key_resolver=_their_resolver(key, keyid))
    results = verifier.verify(
        request, require_components=COVERED[mode], body=request.content, expect_tag="mudrika-a2a"
    )
    assert len(results) == 1
    result = results[0]
    assert result.parameters["keyid"] == keyid
    assert result.parameters["alg"] == alg_name
    assert result.nonce == signed.nonce
    assert result.body == request.content
    assert list(result.covered_components)[:-1] == [f'"{c}"' for c in COVERED[mode]]
    if key_type is KeyType.P256:
        raw = base64.b64decode(signed.signature.split(":")[1])
        assert len(raw) == 64


@pytest.mark.parametrize(("key_type", "their_alg", "alg_name"), CASES)
@pytest.mark.parametrize("mode", ["target-uri", "authority-path-query"])
def test_we_verify_their_signatures(
    key_type: KeyType, their_alg: Any, alg_name: str, mode: TargetMode
) -> None:
    key, keyid = _identity(key_type)
    request = _request()
    created = dt.datetime.now(dt.UTC)
    nonce = base64.urlsafe_b64encode(bytes(range(16))).decode().rstrip("=")
    HTTPMessageSigner(signature_algorithm=their_alg, key_resolver=_their_resolver(key, keyid)).sign(
        request,
        key_id=keyid,
        created=created,
        expires=created + dt.timedelta(seconds=60),
        nonce=nonce,
        label="sig1",
        tag="mudrika-a2a",
        covered_component_ids=[c for c in COVERED[mode] if c != "content-digest"],
        body=request.content,
    )
    assert "content-digest" in request.headers
    result = _our_verifier(key, keyid).verify(
        request.method, str(request.url), request.headers, request.content
    )
    assert result.algorithm == alg_name
    assert result.nonce == nonce
    assert set(result.components) == set(COVERED[mode])
    assert result.body == request.content


def test_a_tampered_body_fails_on_both_sides() -> None:
    key, keyid = _identity(KeyType.ED25519)
    request = _request()
    signed = MudrikaSigner(key, keyid).sign(
        request.method, str(request.url), request.headers, request.content
    )
    tampered = _request(b'{"jsonrpc":"2.0","id":1,"method":"tasks/cancel"}')
    for name, value in signed.as_dict().items():
        tampered.headers[name] = value
    verifier = HTTPMessageVerifier(
        signature_algorithm=algorithms.ED25519, key_resolver=_their_resolver(key, keyid)
    )
    with pytest.raises(InvalidSignature):
        verifier.verify(tampered, body=tampered.content, expect_tag="mudrika-a2a")
    with pytest.raises(SignatureError) as info:
        _our_verifier(key, keyid).verify(
            tampered.method, str(tampered.url), tampered.headers, tampered.content
        )
    assert info.value.code == "content_digest_mismatch"
