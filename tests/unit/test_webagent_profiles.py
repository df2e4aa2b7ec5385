"""Round trips and refusals of the open-web profiles: Web Bot Auth and Visa TAP signers and verifier.

The TAP "reference shape" is the request Visa's reference agent (github.com/visa/trusted-agent-protocol
@16d59bd, tap-agent/agent_app.py) sends: label ``sig2``, ``("@authority" "@path")``, parameters
written ``; created=…; expires=…; keyId="…"; alg="ed25519"; nonce="…"; tag="…"`` and the signature
over that text as sent.  RFC 8941 keys are lower case, so it is refused unless the verifier names
the ``keyid-mixed-case`` leniency.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

import httpx
import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import (
    BindingError,
    InvalidInput,
    ReplayError,
    SignatureError,
    UntrustedKeyError,
)
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    LENIENT_KEYID_CASE,
    REGISTERED_ALGORITHMS,
    StaticDirectories,
    TrustedAgentAuth,
    TrustedAgentSigner,
    WebBotAuth,
    WebBotAuthSigner,
    WebSignatureVerifier,
    web_profile_of,
)

ORIGIN = "https://merchant.example"
AGENT = "https://crawler.example"
REGISTRY = "https://registry.example/.well-known/jwks"
NOW = 1_760_000_000


@pytest.fixture(scope="module")
def agent_key() -> KeyPair:
    return KeyPair.generate(KeyType.ED25519)


@pytest.fixture(scope="module")
def tap_keys() -> dict[str, KeyPair]:
    return {"primary-ed25519": KeyPair.generate(KeyType.ED25519), "primary": KeyPair.generate(KeyType.RSA)}


def _verifier(agent_key: KeyPair, tap_keys: dict[str, KeyPair], **options: Any) -> WebSignatureVerifier:
    registry = {"keys": [{**key.public_key.to_jwk(), "kid": kid} for kid, key in tap_keys.items()]}
    return WebSignatureVerifier(
        agents=StaticDirectories({AGENT: {"keys": [agent_key.public_key.to_jwk()]}}),
        tap_registry=REGISTRY,
        tap_keys=StaticDirectories({REGISTRY: registry}),
        replay_store=MemoryReplayStore(),
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=60,
        clock=lambda: NOW,
        **options,
    )


def _reference_tap_headers(
    key: KeyPair, keyid: str, tag: str, *, authority: str, path: str
) -> dict[str, str]:
    """Visa's reference agent's request shape, built as it builds it (text, then sign the text)."""
    nonce = base64.b64encode(secrets.token_bytes(32)).decode()
    params = (
        f'("@authority" "@path"); created={NOW}; expires={NOW + 60}; keyId="{keyid}"; '
        f'alg="ed25519"; nonce="{nonce}"; tag="{tag}"'
    )
    base = f'"@authority": {authority}\n"@path": {path}\n"@signature-params": {params}'
    signature = base64.b64encode(key.sign(base.encode(), "EdDSA")).decode()
    return {"Signature-Input": f"sig2={params}", "Signature": f"sig2=:{signature}:"}


def test_web_bot_auth_round_trip_through_httpx(agent_key: KeyPair, tap_keys: dict[str, KeyPair]) -> None:
    verifier = _verifier(agent_key, tap_keys)
    seen: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(verifier.verify(request.method, str(request.url), request.headers, request.content))
        return httpx.Response(200)

    signer = WebBotAuthSigner(agent_key, signature_agent=AGENT, clock=lambda: NOW)
    with httpx.Client(transport=httpx.MockTransport(handler), auth=WebBotAuth(signer)) as client:
        assert client.get(ORIGIN + "/products?page=2").status_code == 200
        assert client.post(ORIGIN + "/search", json={"q": "tea"}).status_code == 200
    get, post = seen
    assert get.profile == post.profile == "web-bot-auth"
    assert (get.agent, get.agent_key) == (AGENT, "sig1")
    assert get.components == ("@method", "@authority", "@path", "@query", "signature-agent")
    assert post.components[-2:] == ("content-digest", "content-type")
    assert post.body == b'{"q":"tea"}'


def test_tap_round_trip_browse_then_pay(agent_key: KeyPair, tap_keys: dict[str, KeyPair]) -> None:
    verifier = _verifier(agent_key, tap_keys)
    seen: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(verifier.verify(request.method, str(request.url), request.headers, request.content))
        return httpx.Response(200)

    transport = httpx.MockTransport(handler)
    for kid, tag in (("primary-ed25519", "agent-browser-auth"), ("primary", "agent-payer-auth")):
        signer = TrustedAgentSigner(tap_keys[kid], kid, tag=tag, clock=lambda: NOW)
        with httpx.Client(transport=transport, auth=TrustedAgentAuth(signer)) as client:
            if tag == "agent-payer-auth":
                client.post(ORIGIN + "/checkout", json={"cart": 7})
            else:
                client.get(ORIGIN + "/product/42")
    browse, pay = seen
    assert (browse.profile, browse.algorithm, browse.agent) == (
        "agent-browser-auth",
        "ed25519",
        REGISTRY + "#primary-ed25519",
    )
    assert (pay.profile, pay.algorithm) == ("agent-payer-auth", "rsa-pss-sha512")
    assert pay.components == ("@authority", "@path", "content-digest", "content-type")


def test_tap_reference_shape_needs_the_named_leniency(
    agent_key: KeyPair, tap_keys: dict[str, KeyPair]
) -> None:
    key = tap_keys["primary-ed25519"]
    headers = _reference_tap_headers(
        key, "primary-ed25519", "agent-payer-auth", authority="merchant.example", path="/checkout"
    )
    assert web_profile_of(headers) == "agent-payer-auth"
    with pytest.raises(InvalidInput) as strict:
        _verifier(agent_key, tap_keys).verify("GET", ORIGIN + "/checkout", headers, b"")
    assert strict.value.code == "bad_structured_field"
    lenient = _verifier(agent_key, tap_keys, leniency=[LENIENT_KEYID_CASE])
    verified = lenient.verify("GET", ORIGIN + "/checkout", headers, b"")
    assert (verified.keyid, verified.tag) == ("primary-ed25519", "agent-payer-auth")
    # Another path is another message: the reference signs @path.
    other = _reference_tap_headers(
        key, "primary-ed25519", "agent-payer-auth", authority="merchant.example", path="/cart"
    )
    with pytest.raises(SignatureError):
        lenient.verify("GET", ORIGIN + "/checkout", other, b"")


def test_leniency_never_reaches_web_bot_auth(agent_key: KeyPair, tap_keys: dict[str, KeyPair]) -> None:
    headers = _reference_tap_headers(
        tap_keys["primary-ed25519"], "primary-ed25519", "web-bot-auth", authority="merchant.example", path="/"
    )
    with pytest.raises(InvalidInput) as caught:
        _verifier(agent_key, tap_keys, leniency=[LENIENT_KEYID_CASE]).verify(
            "GET", ORIGIN + "/", headers, b""
        )
    assert caught.value.code == "unknown_parameter"


def test_tap_lifetime_is_capped_at_eight_minutes(agent_key: KeyPair, tap_keys: dict[str, KeyPair]) -> None:
    with pytest.raises(InvalidInput):
        TrustedAgentSigner(tap_keys["primary"], "primary", tag="agent-payer-auth", expires_in=481)
    signer = TrustedAgentSigner(
        tap_keys["primary"], "primary", tag="agent-payer-auth", expires_in=480, clock=lambda: NOW
    )
    headers = signer.sign("GET", ORIGIN + "/checkout", {}).headers
    long = headers["Signature-Input"].replace(f"expires={NOW + 480}", f"expires={NOW + 481}")
    with pytest.raises(InvalidInput) as caught:
        _verifier(agent_key, tap_keys).verify(
            "GET", ORIGIN + "/checkout", {**headers, "Signature-Input": long}, b""
        )
    assert caught.value.code == "lifetime_too_long"


@pytest.mark.parametrize(
    ("mutate", "error", "code"),
    [
        (
            lambda h: {
                **h,
                "Signature-Input": h["Signature-Input"].replace(';tag="web-bot-auth"', ';tag="other"'),
            },
            InvalidInput,
            "wrong_tag",
        ),
        (lambda h: {k: v for k, v in h.items() if k != "Signature"}, InvalidInput, "incomplete_signature"),
        (
            lambda h: {**h, "Signature-Agent": 'sig1="https://unknown.example"'},
            UntrustedKeyError,
            "directory_not_allowed",
        ),
        (
            lambda h: {**h, "Signature-Input": h["Signature-Input"].replace('"@method" ', "")},
            SignatureError,
            "bad_signature",
        ),
    ],
    ids=["wrong-tag", "no-signature-field", "unknown-directory", "component-dropped"],
)
def test_web_bot_auth_refusals(
    agent_key: KeyPair, tap_keys: dict[str, KeyPair], mutate: Any, error: type[Exception], code: str
) -> None:
    signer = WebBotAuthSigner(agent_key, signature_agent=AGENT, clock=lambda: NOW)
    headers = mutate(signer.sign("GET", ORIGIN + "/", {}).headers)
    with pytest.raises(error) as caught:
        _verifier(agent_key, tap_keys).verify("GET", ORIGIN + "/", headers, b"")
    assert getattr(caught.value, "code", None) == code


def test_audience_body_and_replay(agent_key: KeyPair, tap_keys: dict[str, KeyPair]) -> None:
    verifier = _verifier(agent_key, tap_keys)
    signer = WebBotAuthSigner(agent_key, signature_agent=AGENT, clock=lambda: NOW)
    elsewhere = signer.sign("GET", "https://other.example/", {}).headers
    with pytest.raises(BindingError):
        verifier.verify("GET", "https://other.example/", elsewhere, b"")
    plain = signer.sign("GET", ORIGIN + "/", {}).headers
    with pytest.raises(InvalidInput) as unsigned_body:
        verifier.verify("GET", ORIGIN + "/", plain, b"smuggled")
    assert unsigned_body.value.code == "body_not_signed"
    verifier.verify("GET", ORIGIN + "/", plain, b"")
    with pytest.raises(ReplayError):
        verifier.verify("GET", ORIGIN + "/", plain, b"")


def test_nonce_is_required_by_default(agent_key: KeyPair, tap_keys: dict[str, KeyPair]) -> None:
    signer = WebBotAuthSigner(agent_key, signature_agent=AGENT, clock=lambda: NOW)
    headers = signer.sign("GET", ORIGIN + "/", {}).headers
    start = headers["Signature-Input"].index(";nonce=")
    end = headers["Signature-Input"].index(";", start + 1)
    without = headers["Signature-Input"][:start] + headers["Signature-Input"][end:]
    with pytest.raises(InvalidInput) as caught:
        _verifier(agent_key, tap_keys).verify(
            "GET", ORIGIN + "/", {**headers, "Signature-Input": without}, b""
        )
    assert caught.value.code == "missing_parameter"


def test_profiles_not_configured_are_refused(agent_key: KeyPair, tap_keys: dict[str, KeyPair]) -> None:
    web_only = WebSignatureVerifier(
        agents=StaticDirectories({AGENT: {"keys": [agent_key.public_key.to_jwk()]}}),
        tap_registry=None,
        tap_keys=None,
        replay_store=MemoryReplayStore(),
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=60,
        clock=lambda: NOW,
    )
    signer = TrustedAgentSigner(tap_keys["primary"], "primary", tag="agent-browser-auth", clock=lambda: NOW)
    with pytest.raises(InvalidInput) as caught:
        web_only.verify("GET", ORIGIN + "/p", signer.sign("GET", ORIGIN + "/p", {}).headers, b"")
    assert caught.value.code == "wrong_tag"
    with pytest.raises(InvalidInput):
        WebSignatureVerifier(
            agents=None,
            tap_registry=None,
            tap_keys=None,
            replay_store=MemoryReplayStore(),
            origins=[ORIGIN],
            algorithms=REGISTERED_ALGORITHMS,
            max_age=60,
        )
