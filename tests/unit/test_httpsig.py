"""Unit tests for the RFC 9421 profile: structured fields, components, signer, verifier, did_auth."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, MutableMapping
from decimal import Decimal
from typing import Any

import http_sf
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    ReplayError,
    SignatureError,
    UntrustedKeyError,
    VerificationError,
)
from mudrika.identity.resolver import DIDResolver
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust import middleware as did_auth
from mudrika.trust.httpsig import (
    ALGORITHMS,
    PRIVATE_ALGORITHMS,
    REGISTERED_ALGORITHMS,
    REPLAY_KEY_PREFIX,
    DidSignatureAuth,
    DocumentKeyLookup,
    HttpMessageSigner,
    HttpSignatureVerifier,
    KeyLookup,
    MessageView,
    ResolverKeyLookup,
    StaticKeyLookup,
    VerifiedRequest,
    parse_target_uri,
    signature_base,
)
from mudrika.trust.httpsig._sf import (
    InnerList,
    Item,
    Token,
    parse_dictionary,
    serialize_dictionary,
    serialize_inner_list,
)
from mudrika.trust.jsonrpc import AuthenticationRequired, JsonRpcAuthCode, code_for
from mudrika.trust.levels import TrustLevel
from mudrika.trust.middleware import A2AAuthMiddleware, A2ARoutes, AuthRequest
from mudrika.trust.models import KeycloakRole
from mudrika.trust.policy import OperationRule, Policy
from tests._support.httpsig import HEADERS, NOW, ORIGIN, did_key, did_key_document, sign_request

URL = "https://agent.example/a2a?x=1"
BODY = b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}'


def make_signer(key: KeyPair, **kwargs: Any) -> HttpMessageSigner:
    kwargs.setdefault("clock", lambda: NOW)
    return HttpMessageSigner(key, did_key(key)[1], **kwargs)


def make_verifier(
    keys: KeyLookup, store: MemoryReplayStore | None = None, **kwargs: Any
) -> HttpSignatureVerifier:
    kwargs.setdefault("origins", [ORIGIN])
    kwargs.setdefault("algorithms", REGISTERED_ALGORITHMS | PRIVATE_ALGORITHMS)
    kwargs.setdefault("clock", lambda: NOW)
    return HttpSignatureVerifier(
        keys=keys, replay_store=store if store is not None else MemoryReplayStore(clock=lambda: NOW), **kwargs
    )


def signed_headers(
    signer: HttpMessageSigner, method: str = "POST", url: str = URL, body: bytes = BODY
) -> dict[str, str]:
    return sign_request(signer, method, url, body)


@pytest.fixture(scope="module")
def ed_key() -> KeyPair:
    return KeyPair.generate(KeyType.ED25519)


@pytest.fixture(scope="module")
def p256_key() -> KeyPair:
    return KeyPair.generate(KeyType.P256)


# --- RFC 8941 structured fields ------------------------------------------------------------------


def test_parse_signature_input_dictionary() -> None:
    members = parse_dictionary(
        'sig1=("@method" "@target-uri");created=1;keyid="did:x:y#k", sig2=:AAEC:;a=?0, flag;p=tok/1',
        field="signature-input",
    )
    assert list(members) == ["sig1", "sig2", "flag"]
    first = members["sig1"]
    assert isinstance(first, InnerList)
    assert [item.value for item in first.items] == ["@method", "@target-uri"]
    assert first.params == (("created", 1), ("keyid", "did:x:y#k"))
    assert members["sig2"] == Item(b"\x00\x01\x02", (("a", False),))
    flag = members["flag"]
    assert isinstance(flag, Item)
    assert flag.value is True
    assert flag.param("p") == Token("tok/1")
    assert isinstance(flag.param("p"), Token)


def test_parse_numbers_strings_and_whitespace() -> None:
    members = parse_dictionary('  a=-12, b=3.25,\tc="q\\"\\\\", d=(1  2 )  ', field="x")
    assert members["a"] == Item(-12)
    assert members["b"] == Item(Decimal("3.25"))
    assert members["c"] == Item('q"\\')
    assert members["d"] == InnerList((Item(1), Item(2)))
    assert serialize_dictionary(members) == 'a=-12, b=3.25, c="q\\"\\\\", d=(1 2)'


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a=1, a=2", "duplicate_key"),
        ("a=1,", "trailing_comma"),
        ("a=1;p=1;p=2", "duplicate_parameter"),
        ("a=:AAE:", "bad_base64"),
        ("a=:AAF=:", "non_canonical_base64"),
        ('a="x\\n"', "bad_escape"),
        ('a="unterminated', "unterminated_string"),
        ("a=(", "unterminated_inner_list"),
        ("a=(1,2)", "bad_inner_list"),
        ("A=1", "bad_key"),
        ("a=?2", "bad_boolean"),
        ("a=1.2345", "bad_decimal"),
        ("a=1.", "bad_decimal"),
        ("a=1234567890123456", "number_too_long"),
        ("a=@123", "unknown_bare_item"),
        ("a=1 b=2", "expected_comma"),
        ('a="\x01"', "bad_string_character"),
    ],
)
def test_parse_dictionary_refuses(text: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_dictionary(text, field="x")
    assert info.value.code == "bad_structured_field"
    assert info.value.fields["reason"] == reason


def test_parse_dictionary_limits() -> None:
    with pytest.raises(InvalidInput) as info:
        parse_dictionary("a=" + "1" * 9000, field="x")
    assert info.value.code == "too_large"
    with pytest.raises(InvalidInput) as info:
        parse_dictionary(", ".join(f"k{i}=1" for i in range(17)), field="x")
    assert info.value.fields["reason"] == "too_many_members"
    with pytest.raises(InvalidInput) as info:
        parse_dictionary('a="é"', field="x")
    assert info.value.fields["reason"] == "non_ascii"


_keys = st.from_regex(r"[a-z*][a-z0-9_.*-]{0,8}", fullmatch=True)
_bare = st.one_of(
    st.booleans(),
    st.integers(min_value=-999_999_999_999_999, max_value=999_999_999_999_999),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12),
    st.from_regex(r"[A-Za-z*][A-Za-z0-9:/!#$%&'*+.^_`|~-]{0,8}", fullmatch=True).map(Token),
    st.binary(max_size=16),
)
_params = st.dictionaries(_keys, _bare, max_size=3).map(lambda d: tuple(d.items()))
_items = st.builds(Item, _bare, _params)
_members = st.one_of(_items, st.builds(InnerList, st.lists(_items, max_size=4).map(tuple), _params))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, _members, min_size=1, max_size=4))
def test_structured_field_round_trip_and_http_sf_agrees(members: dict[str, Item | InnerList]) -> None:
    text = serialize_dictionary(members)
    parsed = parse_dictionary(text, field="x")
    assert serialize_dictionary(parsed) == text
    # An independent implementation (http-sf) reads our serialisation to the same text.
    assert http_sf.ser(http_sf.parse(text.encode(), tltype="dictionary")) == text


# --- components and the signature base ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "authority", "target", "path", "query"),
    [
        ("https://Agent.Example:443/a?b=1", "agent.example", "https://agent.example/a?b=1", "/a", "?b=1"),
        ("HTTP://agent.example:80", "agent.example", "http://agent.example/", "/", "?"),
        ("http://agent.example:8080/x/?", "agent.example:8080", "http://agent.example:8080/x/?", "/x/", "?"),
        ("https://[::1]:8443/p%20q", "[::1]:8443", "https://[::1]:8443/p%20q", "/p%20q", "?"),
    ],
)
def test_target_uri_normalisation(url: str, authority: str, target: str, path: str, query: str) -> None:
    parsed = parse_target_uri(url)
    assert parsed.authority == authority
    assert parsed.target_uri == target
    assert parsed.path == path
    assert parsed.query_component == query


@pytest.mark.parametrize(
    "url",
    [
        "ftp://agent.example/",
        "https://user@agent.example/",
        "https://agent.example/#frag",
        "https://agent.example:0/",
        "https://agent.example:0443/",
        "https://agent.example:70000/",
        "https://[zz::1]/",
        "https://agent.example/a b",
        "/relative",
        "https://agent.exämple/",
    ],
)
def test_target_uri_refused(url: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_target_uri(url)
    assert info.value.code == "bad_target_uri"


def _base(view: MessageView, *components: str) -> str:
    return signature_base(view, InnerList(tuple(Item(c) for c in components), (("created", 1),))).decode()


def test_field_lines_trimmed_and_combined() -> None:
    view = MessageView.request(
        "GET", "https://agent.example/", [(b"X-Multi", b"  a "), (b"x-multi", b"b,\tc\t"), (b"Empty", b"")]
    )
    assert _base(view, "x-multi", "empty") == (
        '"x-multi": a, b,\tc\n"empty": \n"@signature-params": ("x-multi" "empty");created=1'
    )


def test_derived_components() -> None:
    view = MessageView.request("POST", "https://Agent.Example/p/q?a=1&b", {})
    assert _base(view, "@method", "@scheme", "@authority", "@path", "@query", "@request-target") == (
        '"@method": POST\n"@scheme": https\n"@authority": agent.example\n"@path": /p/q\n'
        '"@query": ?a=1&b\n"@request-target": /p/q?a=1&b\n'
        '"@signature-params": ("@method" "@scheme" "@authority" "@path" "@query" "@request-target");created=1'
    )


@pytest.mark.parametrize(
    ("component", "headers", "code"),
    [
        (Item("x-missing"), {}, "missing_component"),
        (Item("x-bad"), {"x-bad": "a\nb"}, "bad_component_value"),
        (Item("x-bad"), {"x-bad": "caf\xe9"}, "bad_component_value"),
        (Item("@query-param", (("name", "a"),)), {}, "unsupported_component"),
        (Item("content-type", (("sf", True),)), {"content-type": "a"}, "unsupported_component"),
        (Item("@status"), {}, "bad_component"),
        (Item("@signature-params"), {}, "bad_component"),
        (Item(Token("x-token")), {"x-token": "1"}, "bad_component"),
        (Item("X-Upper"), {"x-upper": "1"}, "bad_component"),
    ],
)
def test_component_refused(component: Item, headers: dict[str, str], code: str) -> None:
    view = MessageView.request("GET", "https://agent.example/", headers)
    with pytest.raises(InvalidInput) as info:
        signature_base(view, InnerList((component,)))
    assert info.value.code == code


def test_duplicate_component_refused() -> None:
    view = MessageView.request("GET", "https://agent.example/", {})
    with pytest.raises(InvalidInput) as info:
        signature_base(view, InnerList((Item("@method"), Item("@method"))))
    assert info.value.code == "duplicate_component"


def test_request_components_in_a_response_refused() -> None:
    view = MessageView.response(200, {})
    with pytest.raises(InvalidInput) as info:
        signature_base(view, InnerList((Item("@method"),)))
    assert info.value.code == "bad_component"


# --- signer --------------------------------------------------------------------------------------


def test_signer_covers_profile_components(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    signed = signer.sign("POST", URL, HEADERS, BODY)
    inputs = parse_dictionary(signed.signature_input, field="signature-input")
    inner = inputs["sig1"]
    assert isinstance(inner, InnerList)
    assert [item.value for item in inner.items] == [
        "@method",
        "@target-uri",
        "content-digest",
        "content-type",
    ]
    names = [name for name, _ in inner.params]
    assert names == ["created", "expires", "nonce", "keyid", "alg", "tag"]
    assert inner.param("created") == int(NOW)
    assert inner.param("expires") == int(NOW) + 60
    assert inner.param("alg") == "ed25519"
    assert inner.param("tag") == "mudrika-a2a"
    assert inner.param("keyid") == did_key(ed_key)[1]
    nonce = inner.param("nonce")
    assert isinstance(nonce, str)
    assert len(nonce) == 22
    assert signed.signature_base.endswith(serialize_inner_list(inner).encode())


def test_signer_authority_path_query_mode_without_body_type(ed_key: KeyPair) -> None:
    signed = make_signer(ed_key, target_mode="authority-path-query", tag=None).sign("GET", URL, {}, b"")
    assert signed.signature_base.decode().splitlines()[:5] == [
        '"@method": GET',
        '"@authority": agent.example',
        '"@path": /a2a',
        '"@query": ?x=1',
        '"content-digest": sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:',
    ]
    assert "tag=" not in signed.signature_input


def test_signer_nonces_are_fresh(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    nonces = {signer.sign("POST", URL, HEADERS, BODY).nonce for _ in range(50)}
    assert len(nonces) == 50


@pytest.mark.parametrize(
    ("key_type", "algorithm", "expected"),
    [
        (KeyType.ED25519, None, "ed25519"),
        (KeyType.P256, None, "ecdsa-p256-sha256"),
        (KeyType.SECP256K1, None, "ecdsa-secp256k1-sha256"),
        (KeyType.RSA, None, "rsa-pss-sha512"),
        (KeyType.RSA, "rsa-v1_5-sha256", "rsa-v1_5-sha256"),
    ],
)
def test_signer_algorithm_follows_key_type(key_type: KeyType, algorithm: str | None, expected: str) -> None:
    key = KeyPair.generate(key_type)
    signer = make_signer(key, algorithm=algorithm)
    assert signer.algorithm == expected
    headers = signed_headers(signer)
    result = make_verifier(StaticKeyLookup({signer.keyid: key.public_key})).verify("POST", URL, headers, BODY)
    assert result.algorithm == expected


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"algorithm": "ecdsa-p256-sha256"}, "alg_key_mismatch"),
        ({"algorithm": "hmac-sha256"}, "alg_key_mismatch"),
        ({"expires_in": 301}, "httpsig_config"),
        ({"expires_in": 0}, "httpsig_config"),
        ({"label": "Sig"}, "httpsig_config"),
        ({"tag": "\n"}, "httpsig_config"),
        ({"target_mode": "path"}, "httpsig_config"),
    ],
)
def test_signer_configuration_refused(ed_key: KeyPair, kwargs: dict[str, Any], code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        make_signer(ed_key, **kwargs)
    assert info.value.code == code


@pytest.mark.parametrize("keyid", ["did:key:z6Mkabc", "https://agent.example/key", "key-1"])
def test_signer_keyid_must_be_a_did_url_with_a_fragment(ed_key: KeyPair, keyid: str) -> None:
    with pytest.raises(InvalidInput) as info:
        HttpMessageSigner(ed_key, keyid)
    assert info.value.code == "bad_keyid"


def test_signer_replaces_existing_signature_fields(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    stale = {
        **HEADERS,
        "Signature": "old=:AA==:",
        "Signature-Input": 'old=("@method")',
        "Content-Digest": "x",
    }
    signed = signer.sign("POST", URL, stale, BODY)
    assert '"signature' not in signed.signature_base.decode().split("@signature-params")[0]
    headers = {**stale, **signed.as_dict()}
    verifier = make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key}))
    assert verifier.verify("POST", URL, headers, BODY).nonce == signed.nonce


def test_signer_repr_has_no_key_material(ed_key: KeyPair) -> None:
    text = repr(make_signer(ed_key))
    assert "did:key:" in text
    assert ed_key.private_jwk()["d"] not in text


# --- httpx integration ---------------------------------------------------------------------------


def _capturing_transport(verifier: HttpSignatureVerifier, seen: list[VerifiedRequest]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(verifier.verify(request.method, str(request.url), request.headers, request.content))
        return httpx.Response(200, json={"ok": True})

    return httpx.MockTransport(handler)


def test_httpx_auth_signs_sync_requests(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    verifier = make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key}))
    seen: list[VerifiedRequest] = []
    with httpx.Client(
        auth=DidSignatureAuth(signer), transport=_capturing_transport(verifier, seen)
    ) as client:
        assert client.post(URL, json={"a": 1}).status_code == 200
        assert client.get("https://agent.example/").status_code == 200
    assert [(r.method, r.target_uri) for r in seen] == [("POST", URL), ("GET", "https://agent.example/")]
    assert seen[0].body == b'{"a":1}'
    assert seen[1].body == b""


@pytest.mark.anyio
async def test_httpx_auth_signs_async_streamed_requests(p256_key: KeyPair) -> None:
    signer = make_signer(p256_key)
    verifier = make_verifier(StaticKeyLookup({signer.keyid: p256_key.public_key}))
    seen: list[VerifiedRequest] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        seen.append(await verifier.averify(request.method, str(request.url), request.headers, body))
        return httpx.Response(200)

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"part": '
        yield b"1}"

    async with httpx.AsyncClient(
        auth=DidSignatureAuth(signer), transport=httpx.MockTransport(handler)
    ) as client:
        response = await client.post(URL, content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 200
    assert seen[0].body == b'{"part": 1}'
    assert seen[0].algorithm == "ecdsa-p256-sha256"


def test_httpx_redirect_keeps_the_old_signature_and_is_refused(ed_key: KeyPair) -> None:
    """httpx follows redirects inside one auth flow, so the next hop carries the signature of the first
    URL.  Path coverage makes that hop fail verification (signed clients keep follow_redirects off)."""
    signer = make_signer(ed_key)
    verifier = make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key}))
    outcomes: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        try:
            verifier.verify(request.method, str(request.url), request.headers, request.content)
        except SignatureError as exc:
            outcomes.append(f"{request.url.path}:{exc.code}")
            return httpx.Response(401)
        outcomes.append(f"{request.url.path}:ok")
        return httpx.Response(307, headers={"location": "/new"})

    transport = httpx.MockTransport(handler)
    with httpx.Client(auth=DidSignatureAuth(signer), transport=transport, follow_redirects=True) as client:
        assert client.post("https://agent.example/old", content=b"x").status_code == 401
    assert outcomes == ["/old:ok", "/new:bad_signature"]


# --- verifier ------------------------------------------------------------------------------------


def test_verify_returns_the_signer(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    did, keyid = did_key(ed_key)
    result = make_verifier(StaticKeyLookup({keyid: ed_key.public_key})).verify(
        "POST", URL, signed_headers(signer), BODY
    )
    assert result.did == did
    assert result.keyid == keyid
    assert result.label == "sig1"
    assert result.components == ("@method", "@target-uri", "content-digest", "content-type")
    assert (result.created, result.expires) == (int(NOW), int(NOW) + 60)
    assert result.tag == "mudrika-a2a"
    assert result.body == BODY


def test_verify_authority_path_query_mode(p256_key: KeyPair) -> None:
    signer = make_signer(p256_key, target_mode="authority-path-query")
    verifier = make_verifier(StaticKeyLookup({signer.keyid: p256_key.public_key}))
    assert verifier.verify("POST", URL, signed_headers(signer), BODY).components[:4] == (
        "@method",
        "@authority",
        "@path",
        "@query",
    )


def test_verify_streamed_chunks(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    verifier = make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key}))
    chunks = [BODY[i : i + 7] for i in range(0, len(BODY), 7)]
    assert verifier.verify("POST", URL, signed_headers(signer), iter(chunks)).body == BODY


def test_no_signature_headers_is_authentication_required(ed_key: KeyPair) -> None:
    verifier = make_verifier(StaticKeyLookup({}))
    with pytest.raises(AuthenticationRequired) as info:
        verifier.verify("POST", URL, HEADERS, BODY)
    assert code_for(info.value) is JsonRpcAuthCode.AUTHENTICATION_REQUIRED


def test_only_one_of_the_two_fields(ed_key: KeyPair) -> None:
    headers = signed_headers(make_signer(ed_key))
    del headers["Signature"]
    with pytest.raises(InvalidInput) as info:
        make_verifier(StaticKeyLookup({})).verify("POST", URL, headers, BODY)
    assert info.value.code == "incomplete_signature"


def test_label_selection(ed_key: KeyPair) -> None:
    keyid = did_key(ed_key)[1]
    keys = StaticKeyLookup({keyid: ed_key.public_key})
    first = make_signer(ed_key, label="proxy").sign("POST", URL, HEADERS, BODY)
    second = make_signer(ed_key, label="agent").sign("POST", URL, HEADERS, BODY)
    headers = {
        **HEADERS,
        "Content-Digest": first.content_digest,
        "Signature-Input": f"{first.signature_input}, {second.signature_input}",
        "Signature": f"{first.signature}, {second.signature}",
    }
    with pytest.raises(InvalidInput) as info:
        make_verifier(keys).verify("POST", URL, headers, BODY)
    assert info.value.code == "ambiguous_signature"
    assert make_verifier(keys, label="agent").verify("POST", URL, headers, BODY).nonce == second.nonce
    with pytest.raises(InvalidInput) as info:
        make_verifier(keys, label="other").verify("POST", URL, headers, BODY)
    assert info.value.code == "signature_label_mismatch"


def test_tag_policy(ed_key: KeyPair) -> None:
    keyid = did_key(ed_key)[1]
    keys = StaticKeyLookup({keyid: ed_key.public_key})
    untagged = signed_headers(make_signer(ed_key, tag=None))
    # Default: no tag requirement, so a standard RFC 9421 signer (no tag) is accepted.
    assert make_verifier(keys).verify("POST", URL, untagged, BODY).tag is None
    # An operator who asks for a tag gets exactly that tag.
    with pytest.raises(InvalidInput) as info:
        make_verifier(keys, tag="mudrika-a2a").verify(
            "POST", URL, signed_headers(make_signer(ed_key, tag=None)), BODY
        )
    assert info.value.code == "wrong_tag"
    other = signed_headers(make_signer(ed_key, tag="other-app"))
    with pytest.raises(InvalidInput):
        make_verifier(keys, tag="mudrika-a2a").verify("POST", URL, other, BODY)
    tagged = signed_headers(make_signer(ed_key))
    assert make_verifier(keys, tag="mudrika-a2a").verify("POST", URL, tagged, BODY).tag == "mudrika-a2a"


def test_algorithm_allow_list(p256_key: KeyPair) -> None:
    signer = make_signer(p256_key)
    verifier = make_verifier(StaticKeyLookup({signer.keyid: p256_key.public_key}), algorithms={"ed25519"})
    with pytest.raises(InvalidInput) as info:
        verifier.verify("POST", URL, signed_headers(signer), BODY)
    assert info.value.code == "alg_not_allowed"


def test_private_secp256k1_name_needs_opt_in() -> None:
    key = KeyPair.generate(KeyType.SECP256K1)
    signer = make_signer(key)
    verifier = make_verifier(
        StaticKeyLookup({signer.keyid: key.public_key}), algorithms=REGISTERED_ALGORITHMS
    )
    with pytest.raises(InvalidInput) as info:
        verifier.verify("POST", URL, signed_headers(signer), BODY)
    assert info.value.code == "alg_not_allowed"
    assert ALGORITHMS["ecdsa-secp256k1-sha256"].registered is False


def test_lifetime_and_age_bounds(ed_key: KeyPair) -> None:
    keyid = did_key(ed_key)[1]
    keys = StaticKeyLookup({keyid: ed_key.public_key})
    long_lived = signed_headers(make_signer(ed_key, expires_in=300))
    with pytest.raises(InvalidInput) as info:
        make_verifier(keys, max_lifetime=120).verify("POST", URL, long_lived, BODY)
    assert info.value.code == "lifetime_too_long"
    with pytest.raises(ExpiredError) as expired:
        make_verifier(keys, max_age=10, clock=lambda: NOW + 20).verify("POST", URL, long_lived, BODY)
    assert expired.value.code == "signature_too_old"
    # Within leeway of expiry still verifies; the claim covers that leeway too.
    store = MemoryReplayStore(clock=lambda: NOW + 64)
    late = make_verifier(keys, store, clock=lambda: NOW + 64)
    headers = signed_headers(make_signer(ed_key))
    assert late.verify("POST", URL, headers, BODY).expires == int(NOW) + 60


@pytest.mark.parametrize(
    ("params", "code"),
    [
        (
            'created=1;expires=2;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="did:x:y#k";alg="ed25519";extra=1',
            "unknown_parameter",
        ),
        (
            'created="1";expires=2;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="did:x:y#k";alg="ed25519"',
            "bad_parameter",
        ),
        ('created=1;expires=2;nonce=AAAAAAAAAAAAAAAAAAAAAA;keyid="did:x:y#k";alg="ed25519"', "bad_parameter"),
        (
            'created=-1;expires=2;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="did:x:y#k";alg="ed25519"',
            "bad_parameter",
        ),
        ('created=1;expires=2;nonce="short";keyid="did:x:y#k";alg="ed25519";tag="mudrika-a2a"', "bad_nonce"),
        (
            'created=1;expires=2;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="did:x:y";alg="ed25519";tag="mudrika-a2a"',
            "bad_keyid",
        ),
        (
            'created=5;expires=2;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="did:x:y#k";alg="ed25519";tag="mudrika-a2a"',
            "bad_time_window",
        ),
    ],
)
def test_signature_parameters_refused(params: str, code: str) -> None:
    headers = {
        **HEADERS,
        "Content-Digest": "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:",
        "Signature-Input": f'sig1=("@method" "@target-uri" "content-digest" "content-type");{params}',
        "Signature": "sig1=:AAAA:",
    }
    with pytest.raises(InvalidInput) as info:
        make_verifier(StaticKeyLookup({}), clock=lambda: 3.0).verify("POST", URL, headers, b"")
    assert info.value.code == code


def test_content_type_must_be_covered_when_present(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    signed = signer.sign("POST", URL, {}, BODY)
    headers = {**signed.as_dict(), "Content-Type": "application/json"}
    with pytest.raises(InvalidInput) as info:
        make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key})).verify("POST", URL, headers, BODY)
    assert info.value.code == "missing_component"
    assert info.value.fields["component"] == "content-type"


def test_verifier_configuration_refused(ed_key: KeyPair) -> None:
    keys = StaticKeyLookup({})
    store = MemoryReplayStore()
    bad: list[dict[str, Any]] = [
        {"origins": [], "algorithms": {"ed25519"}},
        {"origins": ["https://agent.example/path"], "algorithms": {"ed25519"}},
        {"origins": [ORIGIN], "algorithms": set()},
        {"origins": [ORIGIN], "algorithms": {"hmac-sha256"}},
        {"origins": [ORIGIN], "algorithms": {"ed25519"}, "leeway": 60},
        {"origins": [ORIGIN], "algorithms": {"ed25519"}, "max_body": -1},
    ]
    for kwargs in bad:
        with pytest.raises(InvalidInput):
            HttpSignatureVerifier(keys=keys, replay_store=store, **kwargs)
    assert "agent.example" in repr(
        HttpSignatureVerifier(keys=keys, replay_store=store, origins=[ORIGIN], algorithms={"ed25519"})
    )


def test_replay_key_namespaced_by_did(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    store = MemoryReplayStore(clock=lambda: NOW)
    headers = signed_headers(signer)
    result = make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key}), store).verify(
        "POST", URL, headers, BODY
    )
    assert store.claim(f"{REPLAY_KEY_PREFIX}{result.did}:{result.nonce}", NOW + 60) is False
    # Another DID using the same nonce string is a different key.
    assert store.claim(f"{REPLAY_KEY_PREFIX}did:key:zOther:{result.nonce}", NOW + 60) is True


def test_long_did_replay_key_is_hashed() -> None:
    key = KeyPair.generate(KeyType.RSA)
    signer = make_signer(key)
    store = MemoryReplayStore(clock=lambda: NOW)
    verifier = make_verifier(StaticKeyLookup({signer.keyid: key.public_key}), store)
    headers = signed_headers(signer)
    result = verifier.verify("POST", URL, headers, BODY)
    assert len(result.did) > 256
    with pytest.raises(ReplayError):
        verifier.verify("POST", URL, headers, BODY)
    assert len(store) == 1


# --- key lookups ---------------------------------------------------------------------------------


def test_document_key_lookup_uses_authentication_only(ed_key: KeyPair) -> None:
    keyid = did_key(ed_key)[1]
    lookup = DocumentKeyLookup([did_key_document(ed_key, "authentication")])
    assert lookup.lookup(keyid) == ed_key.public_key
    with pytest.raises(UntrustedKeyError) as info:
        DocumentKeyLookup([did_key_document(ed_key, "assertionMethod")]).lookup(keyid)
    assert info.value.code == "not_authorised_for_purpose"
    with pytest.raises(UntrustedKeyError) as info:
        lookup.lookup("did:key:zUnknown#k")
    assert info.value.code == "unknown_key"


def test_static_lookup_refuses_unknown_and_bad_config(ed_key: KeyPair) -> None:
    with pytest.raises(UntrustedKeyError):
        StaticKeyLookup({}).lookup(did_key(ed_key)[1])
    with pytest.raises(InvalidInput):
        StaticKeyLookup({"not-a-did": ed_key.public_key})


@pytest.mark.anyio
async def test_resolver_key_lookup_with_did_key(p256_key: KeyPair) -> None:
    lookup = ResolverKeyLookup(DIDResolver())
    keyid = did_key(p256_key)[1]
    assert lookup.lookup(keyid) == p256_key.public_key
    assert await lookup.alookup(keyid) == p256_key.public_key
    verifier = make_verifier(lookup)
    result = await verifier.averify("POST", URL, signed_headers(make_signer(p256_key)), BODY)
    assert result.did == did_key(p256_key)[0]


# --- did_auth ------------------------------------------------------------------------------------


def test_principal_for_a_verified_request(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    verifier = make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key}))
    result = did_auth.authenticate_signed_request(
        "POST", URL, signed_headers(signer), BODY, verifier=verifier, roles_for=lambda did: ["agent"]
    )
    principal = result.principal
    assert principal.subject == principal.did == did_key(ed_key)[0]
    assert principal.roles == frozenset({"agent"})
    assert principal.token_claims is not None
    assert principal.token_claims["keyid"] == signer.keyid
    assert result.body == BODY


@pytest.mark.anyio
async def test_principal_for_a_verified_request_async_with_a_streamed_body(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    verifier = make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key}))
    headers = signed_headers(signer)

    async def chunks() -> AsyncIterator[bytes]:
        yield BODY[:3]
        yield BODY[3:]

    result = await did_auth.aauthenticate_signed_request(
        "POST", URL, headers, chunks(), verifier=verifier, roles_for=lambda did: ["agent"]
    )
    assert result.principal.did == did_key(ed_key)[0]
    assert result.principal.roles == frozenset({"agent"})
    assert result.body == BODY
    with pytest.raises(ReplayError):  # the nonce was claimed: the same request is refused
        await did_auth.aauthenticate_signed_request("POST", URL, headers, BODY, verifier=verifier)


def test_has_signature() -> None:
    assert did_auth.has_signature([(b"signature-input", b"x")])
    assert did_auth.has_signature({"Signature": "x"})
    assert not did_auth.has_signature([(b"authorization", b"Bearer x")])


def _auth_request(headers: dict[str, str], path: str = "/a2a", query: bytes = b"x=1") -> AuthRequest:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    return AuthRequest(method="POST", path=path, query_string=query, headers=raw, body=BODY)


@pytest.mark.anyio
async def test_authenticator_for_the_middleware(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    verifier = make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key}))
    authenticator = did_auth.DidSignatureAuthenticator(verifier, public_origin=ORIGIN)
    assert await authenticator.authenticate(_auth_request(HEADERS)) is None
    auth = await authenticator.authenticate(_auth_request(signed_headers(signer)))
    assert auth is not None
    assert auth.scheme == "http-message-signature"
    assert auth.principal.did == did_key(ed_key)[0]
    assert auth.credential_id.startswith("httpsig:")
    assert auth.claims["alg"] == "ed25519"


def test_authenticator_url_for() -> None:
    verifier = make_verifier(StaticKeyLookup({}))
    authenticator = did_auth.DidSignatureAuthenticator(
        verifier, public_origin="https://Agent.Example:443", path_prefix="/agents/a"
    )
    assert authenticator.url_for("/rpc/a b", b"q=%20") == "https://agent.example/agents/a/rpc/a%20b?q=%20"
    with pytest.raises(InvalidInput):
        did_auth.DidSignatureAuthenticator(verifier, public_origin="https://agent.example/x")
    with pytest.raises(InvalidInput):
        did_auth.DidSignatureAuthenticator(verifier, public_origin=ORIGIN, path_prefix="x/")


async def _call(app: A2AAuthMiddleware, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/a2a",
        "raw_path": b"/a2a",
        "query_string": b"x=1",
        "root_path": "",
        "scheme": "https",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    await app(scope, receive, send)
    status = sent[0]["status"]
    return status, json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


@pytest.mark.anyio
async def test_middleware_accepts_signed_request_and_maps_errors(ed_key: KeyPair) -> None:
    signer = make_signer(ed_key)
    did = did_key(ed_key)[0]
    verifier = make_verifier(StaticKeyLookup({signer.keyid: ed_key.public_key}))
    policy = Policy(
        roles=[
            KeycloakRole(role_id="r1", role_name="agent", trust_level=TrustLevel.EDITOR, realm_name="agents")
        ],
        operations={"message/send": OperationRule(min_level=TrustLevel.EDITOR)},
    )
    reached: list[Any] = []

    async def app(scope: Any, receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        reached.append(scope["state"]["mudrika.principal"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b'{"jsonrpc":"2.0","id":1,"result":{}}'})

    authenticator = did_auth.DidSignatureAuthenticator(
        verifier, public_origin=ORIGIN, roles_for=lambda d: ["agent"] if d == did else []
    )
    middleware = A2AAuthMiddleware(
        app, authenticators=[authenticator], policy=policy, routes=A2ARoutes(jsonrpc_paths=["/a2a"])
    )
    headers = signed_headers(signer)
    assert (await _call(middleware, headers, BODY))[0] == 200
    assert reached[0].did == did
    status, payload = await _call(middleware, headers, BODY)  # the same request again
    assert (status, payload["error"]["code"]) == (401, -32010)
    status, payload = await _call(middleware, headers, BODY.replace(b"{}", b"[]"))
    assert (status, payload["error"]["code"]) == (401, -32012)
    status, payload = await _call(middleware, HEADERS, BODY)
    assert (status, payload["error"]["code"]) == (401, -32009)
    assert len(reached) == 1


def test_errors_are_verification_errors_or_invalid_input() -> None:
    # The classes the verifier raises are all deny-side (fail closed under ``except VerificationError``
    # or InvalidInput), and each maps to an A2A code.
    for exc in (
        SignatureError("x"),
        ExpiredError("x"),
        ReplayError("x"),
        BindingError("x"),
        UntrustedKeyError("x"),
        InvalidInput("x"),
        AuthenticationRequired("x"),
    ):
        assert isinstance(exc, VerificationError | InvalidInput)
        assert code_for(exc) in set(JsonRpcAuthCode)


def test_documented_example_request_verifies() -> None:
    """The example in docs/replay.md ("DID-signed requests") is real: it verifies, and is reproduced."""
    key = KeyPair.from_pem(
        b"-----BEGIN PRIVATE KEY-----\n"
        b"MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n"
        b"-----END PRIVATE KEY-----\n",
        None,
    )
    did = "did:key:z6Mkh4LmfP1ev9MNPGr7JbEbtD6BD4fsu1duEj83PMCs3xHG"
    keyid = f"{did}#z6Mkh4LmfP1ev9MNPGr7JbEbtD6BD4fsu1duEj83PMCs3xHG"
    assert did_key(key) == (did, keyid)
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user",'
        b'"parts":[{"kind":"text","text":"hello"}],"messageId":"m-1"}}}'
    )
    headers = {
        "Content-Type": "application/json",
        "Content-Digest": "sha-256=:VDJpoTvV9dtDyJW+9NUkZdw5pJKxwxPKlpy39kFg37Q=:",
        "Signature-Input": (
            'sig1=("@method" "@target-uri" "content-digest" "content-type");created=1767225600;'
            f'expires=1767225660;nonce="gwZ2-tYM50zgp5A2Tr1ztg";keyid="{keyid}";alg="ed25519";tag="mudrika-a2a"'
        ),
        "Signature": (
            "sig1=:LA57Qq9pqLut9JGl2tOrRP7DocpVaYz4OMFNkSa0UGgXn5FOcfuvFkSgYMJyIYUQK3qQgzU9lSR6rVudFOL3Dg==:"
        ),
    }
    store = MemoryReplayStore(clock=lambda: 1767225610.0)
    verifier = make_verifier(StaticKeyLookup({keyid: key.public_key}), store, clock=lambda: 1767225610.0)
    assert verifier.verify("POST", "https://agent.example/a2a", headers, body).did == did
