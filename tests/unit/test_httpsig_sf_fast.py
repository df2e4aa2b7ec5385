"""The fast path of the RFC 8941 dictionary parser agrees with the strict parser, result for result.

Why: ``Signature-Input``, ``Signature`` and ``Signature-Agent`` are read by a handful of regular
expressions that accept only canonical text (``_sf._fast_dictionary``) and fall back to the strict
§4.2 parser for everything else.  Both must give the same members with the same types (a Token is not
a string, True is not 1), the same member texts, and — for text the fast path declines — the same
refusal; and when the fast path accepts, each member text must be exactly its serialisation, because
the verifier then signs that text as the ``@signature-params`` value.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mudrika.errors import InvalidInput
from mudrika.trust.httpsig import _sf
from mudrika.trust.httpsig._sf import (
    MAX_FIELD_LENGTH,
    BareItem,
    InnerList,
    Item,
    Token,
    parse_dictionary,
    parse_dictionary_members,
    serialize_dictionary,
    serialize_inner_list,
    serialize_item,
)

Shape = tuple[object, ...]


def _bare_shape(value: BareItem) -> tuple[str, object]:
    # The type name goes with the value: Token("a") == "a" and True == 1 in Python.
    return (type(value).__name__, value)


def _params_shape(params: tuple[tuple[str, BareItem], ...]) -> Shape:
    return tuple((key, _bare_shape(value)) for key, value in params)


def _member_shape(member: Item | InnerList) -> Shape:
    if isinstance(member, InnerList):
        items = tuple((_bare_shape(item.value), _params_shape(item.params)) for item in member.items)
        return ("inner", items, _params_shape(member.params))
    return ("item", _bare_shape(member.value), _params_shape(member.params))


def _outcome(parse: object, text: str, lenient: frozenset[str] = frozenset()) -> tuple[str, object, object]:
    """What one parser makes of ``text``: its members and texts, or its refusal (code and fields)."""
    try:
        if parse is _sf._strict_dictionary:
            members, texts = _sf._strict_dictionary(text, "x", MAX_FIELD_LENGTH, lenient)
        else:
            members, texts, _ = parse_dictionary_members(text, field="x", lenient_param_keys=lenient)
    except InvalidInput as error:
        return ("refused", error.code, dict(error.fields))
    return ("parsed", {key: _member_shape(member) for key, member in members.items()}, texts)


def _check_agrees(text: str, lenient: frozenset[str] = frozenset()) -> None:
    strict = _outcome(_sf._strict_dictionary, text, lenient)
    assert _outcome(parse_dictionary_members, text, lenient) == strict
    fast = _sf._fast_dictionary(text) if text and text.isascii() else None
    if fast is not None:
        # The fast path only accepts what the strict parser accepts, and only canonical text.
        assert strict[0] == "parsed"
        members, texts = fast
        for key, member in members.items():
            serialised = (
                serialize_inner_list(member) if isinstance(member, InnerList) else serialize_item(member)
            )
            expected = (
                serialised if not (isinstance(member, Item) and member.value is True) else serialised[2:]
            )
            assert texts[key] == expected
    if strict[0] == "parsed" and not lenient:
        shapes = {key: _member_shape(member) for key, member in parse_dictionary(text, field="x").items()}
        assert shapes == strict[1]


# --- serialised dictionaries: canonical text the fast path must take ---------------------------

_keys = st.from_regex(r"[a-z*][a-z0-9_.*-]{0,6}", fullmatch=True)
_strings = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)
_bare = st.one_of(
    st.booleans(),
    st.integers(min_value=-999_999_999_999_999, max_value=999_999_999_999_999),
    st.decimals(min_value=Decimal("-999999999999"), max_value=Decimal("999999999999"), places=3),
    _strings,
    st.from_regex(r"[A-Za-z*][A-Za-z0-9:/!#$%&'*+.^_`|~-]{0,8}", fullmatch=True).map(Token),
    st.binary(max_size=16),
)
_params = st.dictionaries(_keys, _bare, max_size=4).map(lambda d: tuple(d.items()))
_items = st.builds(Item, _bare, _params)
_members = st.one_of(_items, st.builds(InnerList, st.lists(_items, max_size=5).map(tuple), _params))


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(_keys, _members, min_size=1, max_size=5))
@example({"a": InnerList((Item(False, (("a", True),)), Item(False)))})
@example(
    {"sig": InnerList((Item("@authority", (("req", True),)), Item("content-digest")), (("created", 1),))}
)
def test_serialised_dictionaries_agree(members: dict[str, Item | InnerList]) -> None:
    text = serialize_dictionary(members)
    _check_agrees(text)
    has_decimal = any(isinstance(value, Decimal) for value in _all_bare(members))
    has_escape = any(
        isinstance(value, str) and ('"' in value or "\\" in value) for value in _all_bare(members)
    )
    if not has_decimal and not has_escape:
        # Canonical text without a decimal or an escape is exactly the fast path's language.
        assert _sf._fast_dictionary(text) is not None


def _all_bare(members: dict[str, Item | InnerList]) -> list[BareItem]:
    values: list[BareItem] = []
    for member in members.values():
        items = member.items if isinstance(member, InnerList) else (member,)
        values.extend(value for _, value in member.params)
        for item in items:
            values.append(item.value)
            values.extend(value for _, value in item.params)
    return values


# --- text near the grammar: edge cases, whitespace, escapes, limits, junk -----------------------

_FRAGMENTS = [
    "a",
    "b",
    "sig1",
    "A",
    "k*",
    "=",
    "==",
    ",",
    ", ",
    ",\t",
    " ",
    "  ",
    "\t",
    ";",
    "; ",
    "(",
    ")",
    "( ",
    " )",
    '"',
    '""',
    '"x y"',
    '"a;b=(c)"',
    '"\\"',
    '"\\\\"',
    '"\\n"',
    "\\",
    "?0",
    "?1",
    "?2",
    "0",
    "00",
    "-0",
    "-",
    "1",
    "-12",
    "007",
    "123456789012345",
    "1234567890123456",
    "1.5",
    "1.",
    "1.2345",
    "tok",
    "tok/1:x",
    "*t",
    ":AAEC:",
    ":AAE:",
    ":AAF=:",
    ":AA==:",
    ":AQ==:",
    "::",
    ":",
    "@",
    "é",
    "\x01",
    "keyId",
    "key",
    "x=1",
    "p",
    "p=1",
    ";p",
    ";p=?1",
    ";p=?0",
    ";p;p",
]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=14).map("".join))
@example('sig1=("@method" "@authority");created=1;keyid="k";tag="web-bot-auth"')
@example("a=1, a=2")
@example("a=?1")
@example("a;b=?1")
@example("a=(1 ?1);p")
@example("a=(), b")
@example("a=-0")
@example("a=007")
@example("a=:AAF=:")
@example("a=1 ")
@example(" a=1")
@example("a=1,\tb=2")
@example("a=1,")
@example('a="x";keyId="y"')
@example("a=(?0;a ?0)")
@example('sig=("@authority";req "content-digest");created=1')
@example('a=(x;p=1 y;q z;r=?0 "s;t=u v");w;x=:AA==:')
def test_fragment_text_agrees(text: str) -> None:
    _check_agrees(text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='a=();," ?:-01.*\t\\AQ=/+x', max_size=24))
def test_character_soup_agrees(text: str) -> None:
    _check_agrees(text)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([";keyId", ";keyid", ";keyId=1", "=", '"keyId"', ";k=1"]), max_size=5).map(
        "".join
    )
)
def test_lenient_key_agrees(params: str) -> None:
    # With a leniency, text holding the named spelling is the strict parser's alone.
    _check_agrees('sig1=("@path")' + params, frozenset({"keyId"}))


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        # The limits: 16 members, 64 items, 16 parameters, each accepted at the cap and refused past it.
        (", ".join(f"k{i}=1" for i in range(16)), True),
        (", ".join(f"k{i}=1" for i in range(17)), False),
        ("a=(" + " ".join(["1"] * 64) + ")", True),
        ("a=(" + " ".join(["1"] * 65) + ")", False),
        ("a=1" + "".join(f";p{i}" for i in range(16)), True),
        ("a=1" + "".join(f";p{i}" for i in range(17)), False),
        ("a=" + "9" * 15, True),
        ("a=" + "9" * 16, False),
    ],
)
def test_limits_agree(text: str, accepted: bool) -> None:
    _check_agrees(text)
    assert (_outcome(_sf._strict_dictionary, text)[0] == "parsed") is accepted


def test_too_long_and_non_text_are_refused_alike() -> None:
    for value in ("a=" + "1" * MAX_FIELD_LENGTH, "a=\u00e9"):
        with pytest.raises(InvalidInput) as fast_path:
            parse_dictionary(value, field="x")
        with pytest.raises(InvalidInput) as strict:
            _sf._strict_dictionary(value, "x", MAX_FIELD_LENGTH, frozenset())
        assert (fast_path.value.code, fast_path.value.fields) == (strict.value.code, strict.value.fields)


def test_canonical_flag_and_member_texts() -> None:
    parsed = parse_dictionary_members('sig1=("@path";req);created=1;tag="t", f;x=?0', field="x")
    assert parsed.canonical
    assert parsed.texts == {"sig1": '("@path";req);created=1;tag="t"', "f": ";x=?0"}
    # Whitespace inside the inner list is valid but not canonical: the strict parser reads it.
    loose = parse_dictionary_members('sig1=( "@path" );created=1', field="x")
    assert not loose.canonical
    assert loose.texts == {"sig1": '( "@path" );created=1'}
    assert _member_shape(loose.members["sig1"]) == (
        "inner",
        ((("str", "@path"), ()),),
        (("created", ("int", 1)),),
    )


def test_shared_items_are_reused_and_the_cache_stays_bounded() -> None:
    first = parse_dictionary('s=("@method" "@path");n="1"', field="x")["s"]
    second = parse_dictionary('s=("@method" "@path");n="2"', field="x")["s"]
    assert isinstance(first, InnerList)
    assert isinstance(second, InnerList)
    assert first.items is second.items  # immutable items, parsed once
    for index in range(_sf._F_ITEMS_CACHE_SIZE * 2):
        parse_dictionary(f's=("h{index}")', field="x")
    assert len(_sf._items_cache) <= _sf._F_ITEMS_CACHE_SIZE


@pytest.mark.parametrize(
    "text",
    [
        "sig1=:AAAA:",
        "sig1=::",
        "sig1=:AAE=:",
        "sig1=:AAF=:",  # non-canonical padding bits: the strict parser's refusal
        "sig1=:AA==:",
        "sig1=:AAA:",  # unpadded
        "sig1=:AAAA:;x",
        "sig1=:AAAA:, sig2=:BBBB:",
        "Sig1=:AAAA:",
        "*x=:AAAA:",
    ],
)
def test_a_single_byte_sequence_member_agrees(text: str) -> None:
    """The Signature field's one-member shortcut reads exactly what the strict parser reads."""
    _check_agrees(text)
