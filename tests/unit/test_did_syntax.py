"""DID and DID URL syntax (DID Core 1.0 §3.1, §3.2): valid forms round-trip, each defect has its code."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.errors import InvalidInput
from mudrika.identity.did import (
    DID,
    DIDURL,
    MAX_DID_URL_LENGTH,
    parse_did,
    parse_did_url,
    path_segment_refusal,
)

# Examples from DID Core §3 and the did:web / did:key specs, plus edge cases the ABNF allows.
VALID = [
    "did:example:123456789abcdefghi",
    "did:example:123456789abcdefghi#keys-1",
    "did:example:123?service=agent&relativeRef=/credentials#degree",
    "did:example:123/path/to/rsrc",
    "did:example:123?versionTime=2021-05-10T17:00:00Z",
    "did:web:example.com%3A8443",
    "did:web:w3c-ccg.github.io:user:alice",
    "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
    "did:example:a::b",  # empty segments between colons are allowed: *( *idchar ":" )
    "did:example:abc#",  # present but empty fragment
    "did:example:abc?",  # present but empty query
    "did:example:abc/",  # path-abempty with one empty segment
    "did:example:%41bc",
    "did:example:abc#frag/with?query:and@sub!$&'()*+,;=~",
    "did:a1:b",
]


@pytest.mark.parametrize("text", VALID)
def test_valid_did_urls_round_trip(text: str) -> None:
    url = parse_did_url(text)
    assert str(url) == text


def test_components_are_split_as_the_grammar_says() -> None:
    url = parse_did_url("did:example:123:x/a/b?q=1#frag")
    assert url.did == DID("example", "123:x")
    assert url.path == "/a/b"
    assert url.query == "q=1"
    assert url.fragment == "frag"
    assert url.did_str == "did:example:123:x"
    bare = parse_did_url("did:example:123")
    assert bare.is_bare_did
    assert (bare.path, bare.query, bare.fragment) == ("", None, None)
    assert parse_did_url("did:example:123#").fragment == ""


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "empty"),
        ("foo:bar", "not_a_did"),
        ("DID:example:x", "not_a_did"),
        ("urn:uuid:1234", "not_a_did"),
        ("did:Example:x", "bad_method"),
        ("did::x", "bad_method"),
        ("did:ex-ample:x", "bad_method"),
        ("did:ex_ample:x", "bad_method"),
        ("did:example", "bad_method_specific_id"),
        ("did:example:", "bad_method_specific_id"),
        ("did:example:abc:", "bad_method_specific_id"),
        ("did:example:a b", "bad_method_specific_id"),
        ("did:example:ab@c", "bad_method_specific_id"),
        ("did:example:ab~c", "bad_method_specific_id"),
        ("did:example:#frag", "bad_method_specific_id"),
        ("did:example:ab%2", "bad_percent_encoding"),
        ("did:example:ab%zz", "bad_percent_encoding"),
        ("did:example:ab/%g1", "bad_percent_encoding"),
        ("did:example:ab?q=%", "bad_percent_encoding"),
        ("did:example:ab#%4", "bad_percent_encoding"),
        ("did:example:abc/pa th", "bad_path"),
        ("did:example:abc/a\\b", "bad_path"),
        ("did:example:abc/a[b]", "bad_path"),
        ("did:example:abc?q=a b", "bad_query"),
        ('did:example:abc?q="x"', "bad_query"),
        ("did:example:abc#frag#x", "bad_fragment"),
        ("did:example:abc#a b", "bad_fragment"),
        ("did:example:abc#\u00e9", "bad_fragment"),
        ("did:example:" + "a" * MAX_DID_URL_LENGTH, "too_long"),
        ("did:" + "a" * 65 + ":x", "too_long"),
    ],
)
def test_invalid_did_urls_have_precise_codes(text: str, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_did_url(text)
    assert info.value.code == code


def test_non_string_is_refused() -> None:
    with pytest.raises(InvalidInput) as info:
        parse_did_url(b"did:example:1")  # type: ignore[arg-type]
    assert info.value.code == "not_a_did"


def test_parse_did_refuses_did_urls_and_accepts_bare_dids() -> None:
    assert parse_did("did:example:123") == DID("example", "123")
    assert str(parse_did("did:web:example.com%3A8443")) == "did:web:example.com%3A8443"
    for text in ("did:example:123#k", "did:example:123/p", "did:example:123?q"):
        with pytest.raises(InvalidInput) as info:
            parse_did(text)
        assert info.value.code == "not_a_did"


def test_error_messages_carry_a_bounded_copy_of_the_input() -> None:
    with pytest.raises(InvalidInput) as info:
        parse_did_url("did:example:" + "a" * 500 + " ")
    assert len(info.value.fields["did"]) <= 128


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("#key-1", "did:example:123#key-1"),
        ("?service=files", "did:example:123?service=files"),
        ("/path#x", "did:example:123/path#x"),
        ("did:other:456#key-2", "did:other:456#key-2"),
    ],
)
def test_relative_references_resolve_against_the_document_did(ref: str, expected: str) -> None:
    assert str(DIDURL.absolute(ref, "did:example:123")) == expected
    assert str(DIDURL.absolute(ref, DID("example", "123"))) == expected


@pytest.mark.parametrize(("ref", "code"), [("", "empty"), ("key-1", "not_a_did"), ("#a b", "bad_fragment")])
def test_bad_relative_references(ref: str, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        DIDURL.absolute(ref, "did:example:123")
    assert info.value.code == code


# -- properties -------------------------------------------------------------------------------------
_ALPHA_DIGIT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_HEX = "0123456789abcdefABCDEF"
_pct = st.tuples(st.sampled_from(_HEX), st.sampled_from(_HEX)).map(lambda pair: "%" + pair[0] + pair[1])
_idchar = st.one_of(st.sampled_from(_ALPHA_DIGIT + "._-"), _pct)
_pchar = st.one_of(st.sampled_from(_ALPHA_DIGIT + "-._~!$&'()*+,;=:@"), _pct)
_idchars = st.lists(_idchar, max_size=8).map("".join)
_method = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
_msid = st.tuples(
    st.lists(_idchars, max_size=3), st.lists(_idchar, min_size=1, max_size=12).map("".join)
).map(lambda parts: "".join(segment + ":" for segment in parts[0]) + parts[1])
_path = st.lists(st.lists(_pchar, max_size=6).map("".join), max_size=3).map(
    lambda segments: "".join("/" + segment for segment in segments)
)
_query = st.lists(st.one_of(_pchar, st.sampled_from("/?")), max_size=10).map("".join)


@st.composite
def did_urls(draw: st.DrawFn) -> str:
    text = f"did:{draw(_method)}:{draw(_msid)}{draw(_path)}"
    if draw(st.booleans()):
        text += "?" + draw(_query)
    if draw(st.booleans()):
        text += "#" + draw(_query)
    return text


@settings(max_examples=300, deadline=None)
@given(did_urls())
def test_generated_valid_did_urls_round_trip(text: str) -> None:
    url = parse_did_url(text)
    assert str(url) == text
    assert str(DIDURL(url.did, url.path, url.query, url.fragment)) == text


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.text(max_size=80),
        st.text(max_size=40).map(lambda tail: "did:" + tail),
        did_urls().map(lambda text: text + "\u0000"),
    )
)
def test_parser_never_crashes_on_arbitrary_text(text: str) -> None:
    # Only InvalidInput may escape (any other exception fails the test), with one of the parser's codes.
    code = None
    try:
        url = parse_did_url(text)
    except InvalidInput as exc:
        code = exc.code
    else:
        assert str(url) == text
    assert code in _PARSER_CODES


_PARSER_CODES = {
    None,
    "empty",
    "not_a_did",
    "bad_method",
    "bad_method_specific_id",
    "bad_percent_encoding",
    "too_long",
    "bad_path",
    "bad_query",
    "bad_fragment",
}


@pytest.mark.parametrize("segment", ["alice", "a.b-c_d", "...", "%40team", "%C3%A9quipe", "%20", "%7B"])
def test_path_segments_that_need_their_percent_encoding_are_admitted(segment: str) -> None:
    # The refusals are generated in tests/security/test_did_path_escape.py; these are the spellings
    # the rule must keep (did:web allows percent-encoded paths when the byte needs encoding).
    assert path_segment_refusal(segment) is None


@pytest.mark.parametrize(
    ("segment", "reason"),
    [
        ("", "syntax"),
        ("a/b", "syntax"),
        ("%41lice", "encoded_unreserved"),
        ("%7E", "encoded_unreserved"),
        ("%7f", "encoded_control"),
    ],
)
def test_path_segment_refusal_names_why(segment: str, reason: str) -> None:
    assert path_segment_refusal(segment) == reason
