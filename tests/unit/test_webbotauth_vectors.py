"""The published Web Bot Auth and directory vectors verify; tampering with any of them is refused.

Sources (fixtures/web-bot-auth/README.md): cloudflare/web-bot-auth ``test_data`` at c2b00e4 (v1: the
legacy sf-string Signature-Agent and @authority-only signatures; v2: the dictionary form the draft
prints), and draft-meunier-webbotauth-httpsig-protocol, editor's copy after -02
(thibmeu/http-message-signatures-directory a28dfe8), "Test Vectors" including "Signed Directory
Response", transcribed below.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mudrika.crypto.keys import PublicKey
from mudrika.errors import ExpiredError, InvalidInput, ReplayError, SignatureError, UntrustedKeyError
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    KeyDirectory,
    StaticDirectories,
    VerifiedAgentRequest,
    WebSignatureVerifier,
    agent_ref,
    parse_signature_agent,
    signature_base,
    verify_directory_response,
)
from mudrika.trust.httpsig._components import MessageView
from mudrika.trust.httpsig._sf import InnerList, Item, parse_dictionary
from tests._support.paths import FIXTURES

VECTORS = FIXTURES / "web-bot-auth"
AGENT = "https://signature-agent.test"
CREATED = 1735689600


def _load(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((VECTORS / name).read_text())
    return data


ALL = [(f"v1-{i}", v) for i, v in enumerate(_load("web_bot_auth_architecture_v1.json"))] + [
    (f"v2-{i}", v) for i, v in enumerate(_load("web_bot_auth_architecture_v2.json"))
]


def _headers(vector: dict[str, Any]) -> dict[str, str]:
    headers = {
        "Signature": vector["signature"],
        "Signature-Input": vector["signature_input"],
    }
    if "signature_agent" in vector:
        headers["Signature-Agent"] = vector["signature_agent"]
    return headers


def _verifier(key: PublicKey, *, max_lifetime: int) -> WebSignatureVerifier:
    return WebSignatureVerifier(
        agents=StaticDirectories({AGENT: {"keys": [key.to_jwk()]}}, pinned=[key]),
        tap_registry=None,
        tap_keys=None,
        replay_store=MemoryReplayStore(),
        origins=["https://example.com"],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=300,
        max_lifetime=max_lifetime,
    )


def _verify(vector: dict[str, Any], headers: dict[str, str] | None = None) -> VerifiedAgentRequest:
    key = PublicKey.from_jwk(vector["key"])
    lifetime = (vector["expires_ms"] - vector["created_ms"]) // 1000
    verifier = _verifier(key, max_lifetime=lifetime)
    return verifier.verify("GET", vector["target_url"], headers or _headers(vector), b"", now=CREATED + 10)


@pytest.mark.parametrize(("name", "vector"), ALL, ids=[name for name, _ in ALL])
def test_published_vector_verifies(name: str, vector: dict[str, Any]) -> None:
    verified = _verify(vector)
    key = PublicKey.from_jwk(vector["key"])
    # The keyid is the RFC 7638 thumbprint of the RFC 9421 test key the vector names.
    assert verified.keyid == key.thumbprint() == verified.thumbprint
    assert verified.profile == "web-bot-auth"
    assert verified.algorithm == ("ed25519" if vector["key"]["kty"] == "OKP" else "rsa-pss-sha512")
    if "signature_agent" in vector:
        # Attributed to the directory the covered member names (the draft's identifier).
        assert verified.agent == AGENT
        assert verified.identifier == AGENT + "/.well-known/http-message-signatures-directory"
        assert verified.agent_key == vector.get("signature_agent_key")
    else:
        # No Signature-Agent: the identifier is the key (draft "When No URL Is Available").
        assert verified.agent == "urn:ietf:params:oauth:jwk-thumbprint:sha-256:" + key.thumbprint()


@pytest.mark.parametrize(("name", "vector"), ALL, ids=[name for name, _ in ALL])
def test_tampered_vector_is_refused(name: str, vector: dict[str, Any]) -> None:
    key = PublicKey.from_jwk(vector["key"])
    lifetime = (vector["expires_ms"] - vector["created_ms"]) // 1000
    # created moved by one second: the base changes, the signature no longer verifies.
    tampered = {
        **_headers(vector),
        "Signature-Input": vector["signature_input"].replace("1735689600", "1735689601", 1),
    }
    with pytest.raises(SignatureError):
        _verifier(key, max_lifetime=lifetime).verify(
            "GET", vector["target_url"], tampered, b"", now=CREATED + 10
        )


def test_draft_signature_base_is_reproduced_byte_for_byte() -> None:
    # draft "Signature-Agent Included Present on the Request" (Ed25519), the printed base with the
    # RFC 8792 line wrapping undone.
    vector = _load("web_bot_auth_architecture_v2.json")[3]
    expected = (
        b'"@authority": example.com\n'
        b'"signature-agent";key="agent2": "https://signature-agent.test"\n'
        b'"@signature-params": ("@authority" "signature-agent";key="agent2");created=1735689600'
        b';keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=4889289600'
        b';nonce="n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA=="'
        b';tag="web-bot-auth"'
    )
    view = MessageView.request("GET", vector["target_url"], _headers(vector))
    inner = parse_dictionary(vector["signature_input"], field="signature-input")["sig2"]
    assert isinstance(inner, InnerList)
    assert signature_base(view, inner, component_parameters=True) == expected


def test_component_parameters_stay_refused_for_the_did_profile() -> None:
    vector = _load("web_bot_auth_architecture_v2.json")[3]
    view = MessageView.request("GET", vector["target_url"], _headers(vector))
    inner = parse_dictionary(vector["signature_input"], field="signature-input")["sig2"]
    assert isinstance(inner, InnerList)
    with pytest.raises(InvalidInput) as caught:
        signature_base(view, inner)
    assert caught.value.code == "unsupported_component"


def test_signature_must_cover_the_member_it_is_attributed_to() -> None:
    # The v2 Ed25519 vector, with a second member added and the header reordered: still the covered one.
    vector = _load("web_bot_auth_architecture_v2.json")[3]
    headers = {
        **_headers(vector),
        "Signature-Agent": 'evil="https://evil.test", agent2="https://signature-agent.test"',
    }
    assert _verify(vector, headers).agent == AGENT
    # Pointing the covered member elsewhere breaks the signature (the member value is signed).
    headers["Signature-Agent"] = 'agent2="https://evil.test"'
    key = PublicKey.from_jwk(vector["key"])
    verifier = WebSignatureVerifier(
        agents=StaticDirectories(
            {AGENT: {"keys": [key.to_jwk()]}, "https://evil.test": {"keys": [key.to_jwk()]}}
        ),
        tap_registry=None,
        tap_keys=None,
        replay_store=MemoryReplayStore(),
        origins=["https://example.com"],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=300,
        max_lifetime=10**10,
    )
    with pytest.raises(SignatureError):
        verifier.verify("GET", vector["target_url"], headers, b"", now=CREATED + 10)


def test_key_lookup_is_on_the_url_key_pair() -> None:
    # A key the verifier learned from another agent's directory never verifies for this one.
    vector = _load("web_bot_auth_architecture_v2.json")[3]
    key = PublicKey.from_jwk(vector["key"])
    other = PublicKey.from_jwk(_load("web_bot_auth_architecture_v2.json")[0]["key"])
    verifier = WebSignatureVerifier(
        agents=StaticDirectories(
            {AGENT: {"keys": [other.to_jwk()]}, "https://elsewhere.test": {"keys": [key.to_jwk()]}}
        ),
        tap_registry=None,
        tap_keys=None,
        replay_store=MemoryReplayStore(),
        origins=["https://example.com"],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=300,
        max_lifetime=10**10,
    )
    with pytest.raises(UntrustedKeyError) as caught:
        verifier.verify("GET", vector["target_url"], _headers(vector), b"", now=CREATED + 10)
    assert caught.value.code == "unknown_key"


def test_replayed_vector_is_refused_once_claimed() -> None:
    vector = _load("web_bot_auth_architecture_v2.json")[1]
    key = PublicKey.from_jwk(vector["key"])
    verifier = _verifier(key, max_lifetime=10**10)
    verifier.verify("GET", vector["target_url"], _headers(vector), b"", now=CREATED + 10)
    with pytest.raises(ReplayError):
        verifier.verify("GET", vector["target_url"], _headers(vector), b"", now=CREATED + 11)


def test_long_expires_is_bounded_by_max_age() -> None:
    vector = _load("web_bot_auth_architecture_v2.json")[1]
    key = PublicKey.from_jwk(vector["key"])
    with pytest.raises(ExpiredError) as caught:
        _verifier(key, max_lifetime=10**10).verify(
            "GET", vector["target_url"], _headers(vector), b"", now=CREATED + 400
        )
    assert caught.value.code == "signature_too_old"
    # And the draft's 24-hour recommendation is the default lifetime cap.
    verifier = WebSignatureVerifier(
        agents=StaticDirectories({AGENT: {"keys": [key.to_jwk()]}}),
        tap_registry=None,
        tap_keys=None,
        replay_store=MemoryReplayStore(),
        origins=["https://example.com"],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=300,
    )
    with pytest.raises(InvalidInput) as too_long:
        verifier.verify("GET", vector["target_url"], _headers(vector), b"", now=CREATED + 10)
    assert too_long.value.code == "lifetime_too_long"


@pytest.mark.parametrize(
    "case",
    json.loads((VECTORS / "web_bot_auth_signature_agent_v1.json").read_text()),
    ids=lambda c: c["name"],
)
def test_signature_agent_type_vectors(case: dict[str, Any]) -> None:
    entry = case["entries"][0]
    covered = InnerList((Item("@authority"), Item("signature-agent", (("key", entry["label"]),))))
    agent = parse_signature_agent(case["header"], covered)
    assert agent.key == entry["label"]
    assert agent.ref.type == entry["type"]
    expected_url = entry["uri"] + (
        "/.well-known/http-message-signatures-directory" if entry["type"] == "directory" else ""
    )
    assert agent.ref.url == expected_url


@pytest.mark.parametrize(
    "value",
    [
        'sig1="http://signature-agent.test"',  # not https
        'sig1="https://signature-agent.test/path"',  # a directory member must be an origin
        'sig1="https://signature-agent.test";type=ftp',  # unknown type
        'sig1="https://user@signature-agent.test"',  # user info
        'sig1=("https://a.test")',  # not a string item
    ],
)
def test_bad_signature_agent_members_are_refused(value: str) -> None:
    covered = InnerList((Item("@authority"), Item("signature-agent", (("key", "sig1"),))))
    with pytest.raises(InvalidInput):
        parse_signature_agent(value, covered)


def test_a_remembered_signature_agent_is_the_member_its_key_names_and_refusals_stay_refused() -> None:
    """The hot path remembers members by (field text, covered key): another key in the same text is
    another member, and a text refused once is refused again (a refusal is never remembered)."""
    value = 'a="https://one.test", b="https://two.test";type=jwks_uri, bad="http://three.test"'

    def covering(key: str) -> InnerList:
        return InnerList((Item("@authority"), Item("signature-agent", (("key", key),))))

    for _ in range(2):
        first, second = (
            parse_signature_agent(value, covering("a")),
            parse_signature_agent(value, covering("b")),
        )
        assert (first.key, first.ref.url) == (
            "a",
            "https://one.test/.well-known/http-message-signatures-directory",
        )
        assert (second.key, second.ref.type, second.ref.url) == ("b", "jwks_uri", "https://two.test/")
        with pytest.raises(InvalidInput) as refused:
            parse_signature_agent(value, covering("bad"))
        assert refused.value.code == "bad_signature_agent"
    # The covering rule is checked on every call, before anything remembered is used.
    with pytest.raises(InvalidInput) as uncovered:
        parse_signature_agent(value, InnerList((Item("@authority"),)))
    assert uncovered.value.code == "missing_component"


# draft "Signed Directory Response" (Ed25519, RFC 9421 B.1.4 key), transcribed with the RFC 8792
# wrapping undone.
DIRECTORY_BODY = (
    b'{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U",'
    b'"x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs","use":"sig"}]}'
)
DIRECTORY_HEADERS = {
    "Content-Type": "application/http-message-signatures-directory+json",
    "Content-Digest": "sha-256=:CADMT2aBdV/rqQr/NIru64ERQkCobVvllA4V0fLFDu0=:",
    "Signature-Input": 'binding=("@authority";req "content-digest");created=1735689600;expires=4889289600'
    ';keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";tag="http-message-signatures-directory"',
    "Signature": "binding=:l6P8R67tm3kujAxbHWio7ll01qrEZ0dKD/WWlGhNYEmTnFZM8Wt0VQ9zqGfvo7T/UMkBxsigzChM1Gpz7gOVBg==:",
}
DIRECTORY_BASE = (
    b'"@authority";req: signature-agent.test\n'
    b'"content-digest": sha-256=:CADMT2aBdV/rqQr/NIru64ERQkCobVvllA4V0fLFDu0=:\n'
    b'"@signature-params": ("@authority";req "content-digest");created=1735689600;expires=4889289600'
    b';keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";tag="http-message-signatures-directory"'
)


def test_signed_directory_response_vector_verifies() -> None:
    directory = verify_directory_response(
        agent_ref(AGENT),
        httpx.Headers(DIRECTORY_HEADERS),
        DIRECTORY_BODY,
        algorithms=REGISTERED_ALGORITHMS,
        require_signatures=True,
        now=CREATED + 10,
    )
    assert directory.signed == frozenset({"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"})
    request = MessageView.request("GET", AGENT + "/.well-known/http-message-signatures-directory", {})
    response = MessageView.response(200, DIRECTORY_HEADERS, request=request)
    inner = parse_dictionary(DIRECTORY_HEADERS["Signature-Input"], field="signature-input")["binding"]
    assert isinstance(inner, InnerList)
    assert signature_base(response, inner, component_parameters=True) == DIRECTORY_BASE


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("authority", "https://mirror.test"),  # re-served under another authority
        ("body", b" "),  # key set swapped under a captured signature
        ("future", None),  # created in the future
    ],
)
def test_signed_directory_response_tampering_is_refused(where: str, change: Any) -> None:
    ref, body, now = agent_ref(AGENT), DIRECTORY_BODY, CREATED + 10
    if where == "authority":
        ref = agent_ref(change)
    elif where == "body":
        body = DIRECTORY_BODY + change
    else:
        now = CREATED - 3600
    with pytest.raises(SignatureError):
        verify_directory_response(
            ref,
            httpx.Headers(DIRECTORY_HEADERS),
            body,
            algorithms=REGISTERED_ALGORITHMS,
            require_signatures=False,
            now=now,
        )


def test_unsigned_directory_is_refused_when_proofs_are_required() -> None:
    with pytest.raises(UntrustedKeyError) as caught:
        verify_directory_response(
            agent_ref(AGENT),
            httpx.Headers({"Content-Type": "application/http-message-signatures-directory+json"}),
            DIRECTORY_BODY,
            algorithms=REGISTERED_ALGORITHMS,
            require_signatures=True,
            now=CREATED,
        )
    assert caught.value.code == "directory_unsigned"


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (
            {
                "keys": [
                    {
                        "kty": "OKP",
                        "crv": "Ed25519",
                        "x": "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs",
                        "kid": "other",
                    }
                ]
            },
            "kid",
        ),
        (
            {
                "keys": [
                    {
                        "kty": "OKP",
                        "crv": "Ed25519",
                        "x": "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs",
                        "d": "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU",
                    }
                ]
            },
            "private_jwk",
        ),
        ({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}, None),
        ({"keys": "nope"}, None),
    ],
)
def test_malformed_directories_are_refused(document: dict[str, Any], reason: str | None) -> None:
    with pytest.raises(InvalidInput) as caught:
        KeyDirectory.from_jwks(document, kid_is_thumbprint=True)
    assert caught.value.code == "bad_directory"
    if reason is not None:
        assert caught.value.fields.get("reason") == reason


@pytest.mark.parametrize(
    "headers",
    [{"Cache-Control": "max-age=²"}, {"Cache-Control": "max-age=600", "Age": "²"}],
    ids=["max-age", "age"],
)
def test_cache_headers_with_non_ascii_digits_count_as_absent(headers: dict[str, str]) -> None:
    """Found by fuzzing (row key_directory): ``str.isdigit`` accepted "²" and ``float`` then raised a
    raw ValueError out of the directory cache; a malformed value counts as absent (RFC 9111)."""
    from mudrika.trust.httpsig._directory import cache_lifetime

    # As they come off the wire: bytes, which httpx decodes (here "\xb2" reads as "²").
    wire = httpx.Headers([(name.encode("ascii"), value.encode("latin-1")) for name, value in headers.items()])
    assert "²" in "".join(wire.values())
    lifetime = cache_lifetime(wire, now=CREATED, default_ttl=300.0, max_cache_age=86400.0)
    assert lifetime == (300.0 if "Age" not in headers else 600.0)
