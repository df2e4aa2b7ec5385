"""RFC 9421 Appendix B examples reproduced with mudrika's signature base, parser and keys.

Transcribed from the RFC text (February 2024): the test keys of Appendix B.1.3 (``test-key-ecc-p256``,
public half) and B.1.4 (``test-key-ed25519``), the ``test-request`` and ``test-response`` messages of
Appendix B.2, and the signature bases, ``Signature-Input`` and ``Signature`` values of B.2.6 (Ed25519,
request) and B.2.4 (ECDSA P-256, response).  Ed25519 is deterministic, so the signature bytes are
reproduced exactly; ECDSA is randomised, so the base is reproduced and the RFC's signature verified.
"""

from __future__ import annotations

import pytest

from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.errors import InvalidInput, SignatureError
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    HttpSignatureVerifier,
    MessageView,
    StaticKeyLookup,
    content_digest,
    signature_base,
)
from mudrika.trust.httpsig._sf import InnerList, Item, parse_dictionary, serialize_dictionary

pytestmark = pytest.mark.interop

# B.1.3 test-key-ecc-p256 (public key, SubjectPublicKeyInfo).
TEST_KEY_ECC_P256_PUBLIC = b"""-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqIVYZVLCrPZHGHjP17CTW0/+D9Lf
w0EkjqF7xB4FivAxzic30tMM4GF+hR6Dxh71Z50VGGdldkkDXZCnTNnoXQ==
-----END PUBLIC KEY-----
"""
# B.1.4 test-key-ed25519 (public and private key).
TEST_KEY_ED25519_PUBLIC = b"""-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=
-----END PUBLIC KEY-----
"""
TEST_KEY_ED25519_PRIVATE = b"""-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
-----END PRIVATE KEY-----
"""

# B.2 test-request.
REQUEST_URL = "https://example.com/foo?param=Value&Pet=dog"
REQUEST_HEADERS = [
    ("Host", "example.com"),
    ("Date", "Tue, 20 Apr 2021 02:07:55 GMT"),
    ("Content-Type", "application/json"),
    (
        "Content-Digest",
        "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:",
    ),
    ("Content-Length", "18"),
]
REQUEST_BODY = b'{"hello": "world"}'

# B.2 test-response.
RESPONSE_HEADERS = [
    ("Date", "Tue, 20 Apr 2021 02:07:56 GMT"),
    ("Content-Type", "application/json"),
    (
        "Content-Digest",
        "sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ41QJgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aGgfLQ==:",
    ),
    ("Content-Length", "23"),
]
RESPONSE_BODY = b'{"message": "good dog"}'

# B.2.6 Signing a Request Using ed25519 (RFC 8792 line wrapping undone).
B26_BASE = (
    '"date": Tue, 20 Apr 2021 02:07:55 GMT\n'
    '"@method": POST\n'
    '"@path": /foo\n'
    '"@authority": example.com\n'
    '"content-type": application/json\n'
    '"content-length": 18\n'
    '"@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length")'
    ';created=1618884473;keyid="test-key-ed25519"'
)
B26_SIGNATURE_INPUT = (
    'sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length")'
    ';created=1618884473;keyid="test-key-ed25519"'
)
B26_SIGNATURE = (
    "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:"
)

# B.2.4 Signing a Response Using ecdsa-p256-sha256.
B24_BASE = (
    '"@status": 200\n'
    '"content-type": application/json\n'
    '"content-digest": sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ41QJgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aGgfLQ==:\n'
    '"content-length": 23\n'
    '"@signature-params": ("@status" "content-type" "content-digest" "content-length")'
    ';created=1618884473;keyid="test-key-ecc-p256"'
)
B24_SIGNATURE_INPUT = (
    'sig-b24=("@status" "content-type" "content-digest" "content-length")'
    ';created=1618884473;keyid="test-key-ecc-p256"'
)
B24_SIGNATURE = (
    "sig-b24=:wNmSUAhwb5LxtOtOpNa6W5xj067m5hFrj0XQ4fvpaCLx0NKocgPquLgyahnzDnDAUy5eCdlYUEkLIj+32oiasw==:"
)


def _member(header: str, label: str) -> InnerList:
    member = parse_dictionary(header, field="signature-input")[label]
    assert isinstance(member, InnerList)
    return member


def _signature(header: str, label: str) -> bytes:
    member = parse_dictionary(header, field="signature")[label]
    assert isinstance(member, Item)
    assert isinstance(member.value, bytes)
    return member.value


def test_test_keys_load() -> None:
    private = KeyPair.from_pem(TEST_KEY_ED25519_PRIVATE, None)
    assert private.public_key == PublicKey.from_pem(TEST_KEY_ED25519_PUBLIC)
    assert PublicKey.from_pem(TEST_KEY_ECC_P256_PUBLIC).key_type.value == "p256"


def test_test_message_digests() -> None:
    assert content_digest(REQUEST_BODY, "sha-512") == dict(REQUEST_HEADERS)["Content-Digest"]
    assert content_digest(RESPONSE_BODY, "sha-512") == dict(RESPONSE_HEADERS)["Content-Digest"]


def test_b26_signature_input_round_trips() -> None:
    inner = _member(B26_SIGNATURE_INPUT, "sig-b26")
    assert serialize_dictionary({"sig-b26": inner}) == B26_SIGNATURE_INPUT


def test_b26_ed25519_signature_base_and_signature_reproduced() -> None:
    view = MessageView.request("POST", REQUEST_URL, REQUEST_HEADERS)
    base = signature_base(view, _member(B26_SIGNATURE_INPUT, "sig-b26"))
    assert base.decode("ascii") == B26_BASE
    key = KeyPair.from_pem(TEST_KEY_ED25519_PRIVATE, None)
    signature = key.sign(base, "EdDSA")
    assert signature == _signature(B26_SIGNATURE, "sig-b26")
    assert serialize_dictionary({"sig-b26": Item(signature)}) == B26_SIGNATURE
    PublicKey.from_pem(TEST_KEY_ED25519_PUBLIC).verify(signature, base, "EdDSA")


def test_b24_ecdsa_p256_response_base_reproduced_and_signature_verifies() -> None:
    view = MessageView.response(200, RESPONSE_HEADERS)
    base = signature_base(view, _member(B24_SIGNATURE_INPUT, "sig-b24"))
    assert base.decode("ascii") == B24_BASE
    signature = _signature(B24_SIGNATURE, "sig-b24")
    assert len(signature) == 64  # raw r||s (RFC 9421 §3.3.4), not DER
    key = PublicKey.from_pem(TEST_KEY_ECC_P256_PUBLIC)
    key.verify(signature, base, "ES256")
    with pytest.raises(SignatureError):
        key.verify(signature, base.replace(b"200", b"201"), "ES256")


def test_profile_verifier_refuses_the_rfc_example_as_too_weak() -> None:
    """The RFC example has no nonce, expires or alg: valid RFC 9421, but not enough for this profile."""
    headers = [*REQUEST_HEADERS, ("Signature-Input", B26_SIGNATURE_INPUT), ("Signature", B26_SIGNATURE)]
    verifier = HttpSignatureVerifier(
        keys=StaticKeyLookup({}),
        replay_store=MemoryReplayStore(),
        origins=["https://example.com"],
        algorithms={"ed25519"},
        tag=None,
        clock=lambda: 1618884473.0,
    )
    with pytest.raises(InvalidInput) as info:
        verifier.verify("POST", REQUEST_URL, headers, REQUEST_BODY)
    assert info.value.code == "missing_parameter"
    assert info.value.fields["parameter"] == "expires"
