"""Interop with Cloudflare's npm ``web-bot-auth`` 0.1.3 (tests/node/wba_sign.mjs, wba_verify.mjs).

Each side verifies the other's requests, Ed25519 and RSA-PSS-SHA512, in the forms 0.1.3 gets right:
the legacy sf-string ``Signature-Agent`` covered whole, and ``@authority`` alone with no
``Signature-Agent`` (a key the verifier holds).  The dictionary form is where 0.1.3 departs from
RFC 9421 §2.1.2: for ``"signature-agent";key="k"`` it signs the *whole field* rather than the member
value, so it refuses the draft's own v2 vectors (which mudrika verifies, tests/unit/
test_webbotauth_vectors.py) and mudrika's correct signatures, and mudrika refuses its signatures.  The
last tests pin that disagreement down, so a fixed release shows up as a failing test to update.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import SignatureError
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    StaticDirectories,
    WebBotAuthSigner,
    WebSignatureVerifier,
)
from tests._support.node import run_node_peer
from tests._support.paths import FIXTURES

pytestmark = pytest.mark.interop

URL = "https://example.com/path/to/resource?page=2"
AGENT = "https://signature-agent.test"
KEY_TYPES = [KeyType.ED25519, KeyType.RSA]


def _jwk(key: KeyPair, *, private: bool) -> dict[str, Any]:
    jwk: dict[str, Any] = dict(key.private_jwk() if private else key.public_key.to_jwk())
    if key.key_type is KeyType.RSA:
        jwk["alg"] = "PS512"  # web-bot-auth/crypto picks RSA-PSS-SHA512 by the JWK's alg
    return jwk


def _verifier(key: KeyPair) -> WebSignatureVerifier:
    return WebSignatureVerifier(
        agents=StaticDirectories({AGENT: {"keys": [key.public_key.to_jwk()]}}, pinned=[key.public_key]),
        tap_registry=None,
        tap_keys=None,
        replay_store=MemoryReplayStore(),
        origins=["https://example.com"],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=120,
    )


@pytest.fixture(scope="module")
def keys() -> dict[KeyType, KeyPair]:
    return {key_type: KeyPair.generate(key_type) for key_type in KEY_TYPES}


@pytest.mark.parametrize("key_type", KEY_TYPES, ids=lambda t: t.value)
def test_node_signed_requests_verify_in_mudrika(keys: dict[KeyType, KeyPair], key_type: KeyType) -> None:
    key = keys[key_type]
    now = int(time.time())
    cases: list[dict[str, str]] = [
        {"Signature-Agent": json.dumps(AGENT)},  # legacy sf-string, covered whole
        {},  # no Signature-Agent: @authority only, the verifier holds the key
    ]
    payload = [
        {
            "private_jwk": _jwk(key, private=True),
            "url": URL,
            "method": "GET",
            "created": now,
            "expires": now + 60,
            "headers": case,
        }
        for case in cases
    ]
    signed = run_node_peer("wba_sign.mjs", payload)
    for case, headers in zip(cases, signed, strict=True):
        verified = _verifier(key).verify("GET", URL, {**case, **headers}, b"")
        assert verified.keyid == key.public_key.thumbprint()
        assert verified.algorithm == ("ed25519" if key_type is KeyType.ED25519 else "rsa-pss-sha512")
        expected = AGENT if case else verified.key_urn
        assert verified.agent == expected


@pytest.mark.parametrize("key_type", KEY_TYPES, ids=lambda t: t.value)
def test_mudrika_signed_requests_verify_in_node(keys: dict[KeyType, KeyPair], key_type: KeyType) -> None:
    key = keys[key_type]
    signer = WebBotAuthSigner(key, signature_agent=AGENT, legacy_signature_agent=True)
    headers = signer.sign("GET", URL, {}).headers
    results = run_node_peer(
        "wba_verify.mjs",
        [{"public_jwk": _jwk(key, private=False), "url": URL, "method": "GET", "headers": headers}],
    )
    assert results == [{"ok": True, "keyid": key.public_key.thumbprint(), "tag": "web-bot-auth"}]
    # The same headers with one covered component changed: node refuses them too (it is checking).
    tampered = {**headers, "Signature-Agent": json.dumps("https://evil.test")}
    refused = run_node_peer(
        "wba_verify.mjs",
        [{"public_jwk": _jwk(key, private=False), "url": URL, "method": "GET", "headers": tampered}],
    )
    assert refused[0]["ok"] is False


def test_dictionary_member_disagreement_is_pinned(keys: dict[KeyType, KeyPair]) -> None:
    key = keys[KeyType.ED25519]
    now = int(time.time())
    member = 'sig1="https://signature-agent.test"'
    # 0.1.3 signs "signature-agent";key="sig1" over the whole field: mudrika refuses that base.
    signed = run_node_peer(
        "wba_sign.mjs",
        [
            {
                "private_jwk": _jwk(key, private=True),
                "url": URL,
                "method": "GET",
                "headers": {"Signature-Agent": member},
                "created": now,
                "expires": now + 60,
                "label": "sig1",
                "components": ["@authority", ["signature-agent", {"key": "sig1"}]],
            }
        ],
    )[0]
    with pytest.raises(SignatureError):
        _verifier(key).verify("GET", URL, {"Signature-Agent": member, **signed}, b"")
    # And 0.1.3 refuses both mudrika's dictionary-form signature and the draft's published v2 vector.
    ours = WebBotAuthSigner(key, signature_agent=AGENT).sign("GET", URL, {}).headers
    vector = json.loads((FIXTURES / "web-bot-auth" / "web_bot_auth_architecture_v2.json").read_text())[3]
    results = run_node_peer(
        "wba_verify.mjs",
        [
            {"public_jwk": _jwk(key, private=False), "url": URL, "method": "GET", "headers": ours},
            {
                "public_jwk": vector["key"],
                "url": vector["target_url"],
                "method": "GET",
                "headers": {
                    "Signature": vector["signature"],
                    "Signature-Input": vector["signature_input"],
                    "Signature-Agent": vector["signature_agent"],
                },
            },
        ],
    )
    assert [result["ok"] for result in results] == [False, False]
    assert {result["error"] for result in results} == {"invalid signature"}
