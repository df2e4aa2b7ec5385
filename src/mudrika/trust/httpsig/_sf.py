"""The part of RFC 8941 (Structured Field Values for HTTP) that HTTP Message Signatures needs.

Why our own parser: ``Signature-Input``, ``Signature`` and ``Content-Digest`` are the first attacker
bytes a verifier reads, and the signed ``@signature-params`` line is the *re-serialisation* of what we
parsed, so the parser and serialiser must agree exactly and refuse anything ambiguous.  This module
follows the parsing algorithms of RFC 8941 §4.2 step by step and is stricter in three places, all of
which remove a second spelling of the same value:

* a repeated dictionary key or parameter key is an error (RFC 8941 §4.2.2 / §4.2.3.2 keep the last);
* a byte sequence must be canonical, padded base64 (§4.2.7 tolerates missing padding);
* inputs, members, inner-list items and parameters are capped in size and count.

Only RFC 8941 types exist here (Integer, Decimal, String, Token, Byte Sequence, Boolean); the Date and
Display String types of RFC 9651 are refused.

A dictionary is first offered to a fast path (:func:`_fast_dictionary`): a handful of regular
expressions that accept only the *canonical* spelling of the common shapes (what §4.1 serialises:
no escapes, no decimals, no leading zeros, single spaces, no ``=?1``), with the same caps and the
same refusal of repeated keys.  Anything else — including every malformed input — returns None and
is parsed by the strict step-by-step parser, so a refusal always comes from that parser with its
precise reason.  A property test (tests/unit/test_httpsig_sf_fast.py) holds the two to identical
results; because the fast path accepts canonical text only, each member's received text is also its
serialisation.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Final, NamedTuple, TypeAlias

from mudrika.errors import InvalidInput

__all__ = [
    "MAX_FIELD_LENGTH",
    "BareItem",
    "DictionaryMembers",
    "InnerList",
    "Item",
    "Params",
    "Token",
    "parse_dictionary",
    "parse_dictionary_members",
    "parse_item",
    "serialize_dictionary",
    "serialize_inner_list",
    "serialize_item",
    "serialize_params",
]

MAX_FIELD_LENGTH: Final = 8192
"""Longest structured field we parse.  A Signature-Input of a dozen components is ~400 bytes."""

_MAX_MEMBERS: Final = 16
_MAX_ITEMS: Final = 64
_MAX_PARAMS: Final = 16
_MAX_INTEGER: Final = 999_999_999_999_999

_KEY_RE: Final = re.compile(r"[a-z*][a-z0-9_.*-]*")
_TOKEN_RE: Final = re.compile(r"[A-Za-z*][A-Za-z0-9!#$%&'*+.^_`|~:/-]*")
_NUMBER_RE: Final = re.compile(r"(-?)([0-9]+)(?:\.([0-9]*))?")
_B64_RE: Final = re.compile(r"[A-Za-z0-9+/=]*")
# Printable ASCII other than DQUOTE and backslash: the characters a string holds unescaped (§3.3.3).
_STRING_RUN_RE: Final = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")
_PRINTABLE_RE: Final = re.compile(r"[\x20-\x7e]*")
_OWS: Final = " \t"


class Token(str):
    """An sf-token (RFC 8941 §3.3.4), kept apart from an sf-string of the same characters."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Token({str(self)!r})"


BareItem: TypeAlias = bool | int | Decimal | Token | str | bytes
Params: TypeAlias = tuple[tuple[str, BareItem], ...]


def _param(params: Params, name: str) -> BareItem | None:
    """The first parameter called ``name``; items and inner lists carry parameters alike."""
    for key, value in params:
        if key == name:
            return value
    return None


@dataclass(frozen=True, slots=True)
class Item:
    """An sf-item: a bare item with ordered parameters."""

    value: BareItem
    params: Params = ()

    def param(self, name: str) -> BareItem | None:
        return _param(self.params, name)


@dataclass(frozen=True, slots=True)
class InnerList:
    """An inner list (RFC 8941 §3.1.1): items with ordered parameters on the list itself."""

    items: tuple[Item, ...]
    params: Params = ()

    def param(self, name: str) -> BareItem | None:
        return _param(self.params, name)


def _fail(field: str, reason: str, position: int) -> InvalidInput:
    return InvalidInput(
        "malformed structured header field",
        code="bad_structured_field",
        field=field,
        reason=reason,
        at=position,
    )


class _Parser:
    """One parse of one field value; ``pos`` walks ``text`` exactly as RFC 8941 §4.2 consumes input."""

    __slots__ = ("field", "lenient_keys", "pos", "spans", "text")

    def __init__(self, text: str, field: str, lenient_keys: frozenset[str] = frozenset()) -> None:
        self.text = text
        self.pos = 0
        self.field = field
        # Parameter keys accepted although RFC 8941 §3.1.2 forbids them (upper case): only the exact
        # spellings a caller names, for a documented leniency (see _web.LENIENT_KEYID_CASE).
        self.lenient_keys = lenient_keys
        # Where each dictionary member's value sits in ``text`` (after "=", through its parameters).
        self.spans: dict[str, tuple[int, int]] = {}

    def fail(self, reason: str) -> InvalidInput:
        return _fail(self.field, reason, self.pos)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip(self, chars: str) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1

    # §4.2.2 Parsing a Dictionary
    def dictionary(self) -> dict[str, Item | InnerList]:
        members: dict[str, Item | InnerList] = {}
        while self.pos < len(self.text):
            # 1. this_key = Parsing a Key.
            key = self.key()
            # 2. "=" introduces a member value; otherwise the value is Boolean true with parameters.
            member: Item | InnerList
            start = self.pos
            if self.peek() == "=":
                self.pos += 1
                start = self.pos
                member = self.item_or_inner_list()
            else:
                member = Item(True, self.parameters())
            # 3. Add the member (a repeated key is refused rather than overwritten: stricter than §4.2.2).
            if key in members:
                raise self.fail("duplicate_key")
            if len(members) >= _MAX_MEMBERS:
                raise self.fail("too_many_members")
            members[key] = member
            self.spans[key] = (start, self.pos)
            # 4-7. Optional whitespace, a comma, optional whitespace, and no trailing comma.
            self.skip(_OWS)
            if self.pos >= len(self.text):
                return members
            if self.peek() != ",":
                raise self.fail("expected_comma")
            self.pos += 1
            self.skip(_OWS)
            if self.pos >= len(self.text):
                raise self.fail("trailing_comma")
        return members

    # §4.2.1.1 Parsing an Item or Inner List
    def item_or_inner_list(self) -> Item | InnerList:
        if self.peek() == "(":
            return self.inner_list()
        return self.item()

    # §4.2.1.2 Parsing an Inner List
    def inner_list(self) -> InnerList:
        self.pos += 1  # 1. consume "("
        items: list[Item] = []
        while self.pos < len(self.text):
            # 2.1 discard leading SP; 2.2 ")" ends the list, followed by its parameters.
            self.skip(" ")
            if self.peek() == ")":
                self.pos += 1
                return InnerList(tuple(items), self.parameters())
            # 2.3 an item; 2.5 it must be followed by SP or ")".
            if len(items) >= _MAX_ITEMS:
                raise self.fail("too_many_items")
            items.append(self.item())
            if self.peek() not in (" ", ")"):
                raise self.fail("bad_inner_list")
        # 3. the end of input before ")" is a failure.
        raise self.fail("unterminated_inner_list")

    # §4.2.3 Parsing an Item
    def item(self) -> Item:
        value = self.bare_item()
        return Item(value, self.parameters())

    # §4.2.3.1 Parsing a Bare Item
    def bare_item(self) -> BareItem:
        char = self.peek()
        if char == "-" or (char.isascii() and char.isdigit()):
            return self.number()
        if char == '"':
            return self.string()
        if char == "*" or (char.isascii() and char.isalpha()):
            return self.token()
        if char == ":":
            return self.byte_sequence()
        if char == "?":
            return self.boolean()
        raise self.fail("unknown_bare_item")

    # §4.2.3.2 Parsing Parameters
    def parameters(self) -> Params:
        params: list[tuple[str, BareItem]] = []
        seen: set[str] = set()
        while self.peek() == ";":
            self.pos += 1
            self.skip(" ")
            key = self.lenient_key() if self.lenient_keys else self.key()
            value: BareItem = True
            if self.peek() == "=":
                self.pos += 1
                value = self.bare_item()
            if key in seen:
                raise self.fail("duplicate_parameter")
            if len(params) >= _MAX_PARAMS:
                raise self.fail("too_many_parameters")
            seen.add(key)
            params.append((key, value))
        return tuple(params)

    # §4.2.3.3 Parsing a Key
    def key(self) -> str:
        match = _KEY_RE.match(self.text, self.pos)
        if match is None:
            raise self.fail("bad_key")
        self.pos = match.end()
        return match.group()

    def lenient_key(self) -> str:
        """A parameter key that may be one of the caller's named non-conforming spellings."""
        for spelling in self.lenient_keys:
            end = self.pos + len(spelling)
            if self.text.startswith(spelling, self.pos) and (
                end >= len(self.text) or self.text[end] in "=;),"
            ):
                self.pos = end
                return spelling
        return self.key()

    # §4.2.4 Parsing an Integer or Decimal
    def number(self) -> int | Decimal:
        match = _NUMBER_RE.match(self.text, self.pos)
        if match is None:
            raise self.fail("bad_number")
        sign, integer, fraction = match.groups()
        if fraction is None:
            # An integer has at most 15 digits.
            if len(integer) > 15:
                raise self.fail("number_too_long")
            self.pos = match.end()
            return -int(integer) if sign else int(integer)
        # A decimal has at most 12 integer digits and 1 to 3 fractional digits.
        if len(integer) > 12:
            raise self.fail("number_too_long")
        if not 1 <= len(fraction) <= 3:
            raise self.fail("bad_decimal")
        self.pos = match.end()
        value = Decimal(f"{integer}.{fraction}")
        return -value if sign else value

    # §4.2.5 Parsing a String
    def string(self) -> str:
        # The common run of unescaped characters is taken with one regex match; the loop below then
        # follows §4.2.5 character by character only for escapes and to explain failures.
        self.pos += 1
        out: list[str] = []
        while True:
            run = _STRING_RUN_RE.match(self.text, self.pos)
            if run is not None and run.end() > self.pos:
                out.append(run.group())
                self.pos = run.end()
            if self.pos >= len(self.text):
                raise self.fail("unterminated_string")
            char = self.text[self.pos]
            self.pos += 1
            if char == '"':
                return "".join(out)
            if char != "\\":
                raise self.fail("bad_string_character")
            if self.pos >= len(self.text) or self.text[self.pos] not in '"\\':
                raise self.fail("bad_escape")
            out.append(self.text[self.pos])
            self.pos += 1

    # §4.2.6 Parsing a Token
    def token(self) -> Token:
        match = _TOKEN_RE.match(self.text, self.pos)
        if match is None:
            raise self.fail("bad_token")
        self.pos = match.end()
        return Token(match.group())

    # §4.2.7 Parsing a Byte Sequence (canonical padded base64 only: stricter than the RFC)
    def byte_sequence(self) -> bytes:
        self.pos += 1
        end = self.text.find(":", self.pos)
        if end == -1:
            raise self.fail("unterminated_byte_sequence")
        encoded = self.text[self.pos : end]
        if _B64_RE.fullmatch(encoded) is None or len(encoded) % 4:
            raise self.fail("bad_base64")
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise self.fail("bad_base64") from None
        if base64.b64encode(data).decode("ascii") != encoded:
            raise self.fail("non_canonical_base64")
        self.pos = end + 1
        return data

    # §4.2.8 Parsing a Boolean
    def boolean(self) -> bool:
        self.pos += 1
        char = self.peek()
        if char not in ("0", "1"):
            raise self.fail("bad_boolean")
        self.pos += 1
        return char == "1"


# --- the fast path for canonical dictionaries ---------------------------------------------------
# The pieces of §4.1 serialisation: each bare item is decided by its first character, and every token
# ends at a character outside its class, so a match is the only possible reading of the text.
_F_KEY: Final = r"[a-z*][a-z0-9_.*-]*"
_F_STRING: Final = r'"[\x20\x21\x23-\x5b\x5d-\x7e]*"'
_F_INTEGER: Final = r"(?:0|-?[1-9][0-9]{0,14})(?![0-9.])"
_F_TOKEN: Final = r"[A-Za-z*][A-Za-z0-9!#$%&'*+.^_`|~:/-]*"  # noqa: S105 -- an sf-token pattern, no secret
_F_BYTES: Final = r":[A-Za-z0-9+/]*={0,2}:"
# A parameter or dictionary member that is Boolean true is serialised as its bare key (§4.1.1.2,
# §4.1.2), so ``=?1`` is not canonical there; an item inside an inner list may be ``?1``.
_F_BARE: Final = rf"{_F_STRING}|{_F_INTEGER}|{_F_TOKEN}|{_F_BYTES}|\?[01]"
_F_BARE_NOT_TRUE: Final = rf"{_F_STRING}|{_F_INTEGER}|{_F_TOKEN}|{_F_BYTES}|\?0"
_F_PARAMS: Final = rf"(?:;{_F_KEY}(?:=(?:{_F_BARE_NOT_TRUE}))?)*"
_F_ITEM: Final = rf"(?:{_F_BARE}){_F_PARAMS}"
# One member: key, then "=" and an inner list (groups 2-3: its items and its parameters) or an item
# (group 4), or only parameters (group 5: a Boolean-true member).
_F_MEMBER_RE: Final = re.compile(
    rf"({_F_KEY})(?:=(?:\(((?:{_F_ITEM}(?: {_F_ITEM})*)?)\)({_F_PARAMS})"
    rf"|((?:{_F_BARE_NOT_TRUE}){_F_PARAMS}))|({_F_PARAMS}))"
)
_F_SEPARATOR_RE: Final = re.compile(r"[ \t]*,[ \t]*")
_F_SINGLE_BYTES_RE: Final = re.compile(rf"({_F_KEY})=({_F_BYTES})")
# Walking a run the expressions above have already matched, which is a sequence of canonical
# items or parameters: a string is the only value that may hold ";", "=", " " or "(" and it holds no
# DQUOTE (no escapes), and no other value holds any of those, so these simple patterns read exactly
# the tokens matched above.  The bare item is then told by its first character (§4.2.3.1).
_F_SIMPLE_VALUE: Final = r'"[^"]*"|[^;" ]+'
_F_ITEM_RE: Final = re.compile(rf"({_F_SIMPLE_VALUE})((?:;[^=; ]+(?:=(?:{_F_SIMPLE_VALUE}))?)*)")
_F_PARAM_RE: Final = re.compile(rf";([^=; ]+)(?:=({_F_SIMPLE_VALUE}))?")
_F_ITEMS_CACHE_SIZE: Final = 128
# The covered components of one signer repeat on every request: parsed items by their text.  Items
# are immutable, so sharing them is safe; the cache is emptied when full (an attacker who fills it
# costs only the parse the cache would have saved).
_items_cache: dict[str, tuple[Item, ...]] = {}


def _fast_bytes(text: str) -> bytes | None:
    """A canonical padded base64 byte sequence (``:...:``), or None for the strict parser to refuse."""
    encoded = text[1:-1]
    if len(encoded) % 4:
        return None
    try:
        data = binascii.a2b_base64(encoded, strict_mode=True)
    except binascii.Error:
        return None
    return data if binascii.b2a_base64(data, newline=False).decode("ascii") == encoded else None


def _fast_bare(text: str) -> BareItem | None:
    """The value of one bare item matched above; None for a byte sequence that is not canonical."""
    first = text[0]
    if first == '"':
        return text[1:-1]
    if first == ":":
        return _fast_bytes(text)
    if first == "?":
        return text == "?1"
    if first == "-" or "0" <= first <= "9":
        return int(text)
    return Token(text)


def _fast_params(text: str) -> Params | None:
    if not text:
        return ()
    found: dict[str, BareItem] = {}
    for key, raw in _F_PARAM_RE.findall(text):
        if key in found:
            return None
        if not raw:
            found[key] = True
            continue
        first = raw[0]
        if first == '"':
            found[key] = raw[1:-1]
        elif "0" <= first <= "9":  # created and expires, on every signature: _fast_bare's own int
            found[key] = int(raw)
        else:
            converted = _fast_bare(raw)
            if converted is None:
                return None
            found[key] = converted
    if len(found) > _MAX_PARAMS:
        return None
    return tuple(found.items())


def _fast_items(text: str) -> tuple[Item, ...] | None:
    items: list[Item] = []
    for raw, params_text in _F_ITEM_RE.findall(text):
        value = _fast_bare(raw)
        params = _fast_params(params_text)
        if value is None or params is None:
            return None
        items.append(Item(value, params))
    if len(items) > _MAX_ITEMS:
        return None
    return tuple(items)


def _fast_dictionary(text: str) -> tuple[dict[str, Item | InnerList], dict[str, str]] | None:
    """The members of a canonical dictionary and each member's text, or None: use the strict parser.

    Each member is matched whole at its position (``match``); ``findall`` then only walks a run of
    items or parameters that this match has already proved well formed, so it reads the same tokens.
    """
    single = _F_SINGLE_BYTES_RE.fullmatch(text)
    if single is not None:
        # The Signature field of one signature (``sig1=:…:``), on every request: one member, a byte
        # sequence without parameters, read without the general walk below.
        data = _fast_bytes(single.group(2))
        if data is None:
            return None
        return {single.group(1): Item(data)}, {single.group(1): single.group(2)}
    members: dict[str, Item | InnerList] = {}
    texts: dict[str, str] = {}
    pos, end = 0, len(text)
    while True:
        match = _F_MEMBER_RE.match(text, pos)
        if match is None:
            return None
        key, items_text, list_params, item_text, flag_params = match.groups()
        member: Item | InnerList | None
        if items_text is not None:
            items = _items_cache.get(items_text)
            if items is None:
                items = _fast_items(items_text)
                if items is None:
                    return None
                if len(_items_cache) >= _F_ITEMS_CACHE_SIZE:
                    _items_cache.clear()
                _items_cache[items_text] = items
            params = _fast_params(list_params)
            member = None if params is None else InnerList(items, params)
            start = match.start(2) - 1
        elif item_text is not None:
            if ";" in item_text:
                found = _fast_items(item_text)
                member = None if found is None else found[0]
            else:  # a bare item alone (a ";" could only sit in its parameters or inside a string)
                value = _fast_bare(item_text)
                member = None if value is None else Item(value)
            start = match.start(4)
        else:
            params = _fast_params(flag_params)
            member = None if params is None else Item(True, params)
            start = match.start(5)
        if member is None or key in members or len(members) >= _MAX_MEMBERS:
            return None
        members[key] = member
        pos = match.end()
        texts[key] = text[start:pos]
        if pos == end:
            return members, texts
        separator = _F_SEPARATOR_RE.match(text, pos)
        if separator is None:
            return None
        pos = separator.end()


def _strict_dictionary(
    value: str, field: str, max_length: int, lenient_param_keys: frozenset[str]
) -> tuple[dict[str, Item | InnerList], dict[str, str]]:
    """RFC 8941 §4.2 step by step (the reference the fast path is tested against)."""
    parser = _checked_parser(value, field, max_length, lenient_param_keys)
    members = parser.dictionary()
    _finish(parser, value)
    return members, {key: value[start:end] for key, (start, end) in parser.spans.items()}


class DictionaryMembers(NamedTuple):
    """A parsed dictionary with each member's value text as received.

    ``canonical`` is True when the whole text was read by the fast path, which accepts only the
    §4.1 serialisation: each text in ``texts`` is then exactly what serialising its member gives, so
    a signature base may use it instead of serialising the member again.  False says nothing either
    way (the strict parser also accepts non-canonical spellings).
    """

    members: dict[str, Item | InnerList]
    texts: dict[str, str]
    canonical: bool


def _dictionary(
    value: str, field: str, max_length: int, lenient_param_keys: frozenset[str]
) -> DictionaryMembers:
    # A leniency only changes how a named spelling is read; text that does not contain one is read
    # alike with or without it, so only such text may take the fast path.
    if (
        type(value) is str
        and 0 < len(value) <= max_length
        and value.isascii()
        and (not lenient_param_keys or not any(spelling in value for spelling in lenient_param_keys))
    ):
        fast = _fast_dictionary(value)
        if fast is not None:
            return DictionaryMembers(fast[0], fast[1], True)
    members, texts = _strict_dictionary(value, field, max_length, lenient_param_keys)
    return DictionaryMembers(members, texts, False)


def parse_dictionary(
    value: str, *, field: str, max_length: int = MAX_FIELD_LENGTH
) -> dict[str, Item | InnerList]:
    """Parse a Dictionary field value (RFC 8941 §4.2 with ``field_type = "dictionary"``).

    ``value`` is the combined field value (multiple field lines joined with ``", "``).  ``field`` names
    the header for error messages.  Raises :class:`InvalidInput` (``bad_structured_field``).
    """
    if type(value) is str and 0 < len(value) <= max_length and value.isascii():
        fast = _fast_dictionary(value)
        if fast is not None:
            return fast[0]
    return _strict_dictionary(value, field, max_length, frozenset())[0]


def parse_dictionary_members(
    value: str,
    *,
    field: str,
    lenient_param_keys: frozenset[str] = frozenset(),
    max_length: int = MAX_FIELD_LENGTH,
) -> DictionaryMembers:
    """:func:`parse_dictionary`, also returning each member's value text exactly as it was received.

    Why: a signer that signed a ``Signature-Input`` member that cannot be re-serialised (an upper-case
    parameter key, accepted only when named in ``lenient_param_keys``) signed the text it sent; the
    verifier can only rebuild that base from the same text.  And when the text is canonical
    (:attr:`DictionaryMembers.canonical`) the verifier may use it rather than serialise it again.
    """
    return _dictionary(value, field, max_length, lenient_param_keys)


def parse_item(value: str, *, field: str, max_length: int = MAX_FIELD_LENGTH) -> Item:
    """Parse an Item field value (RFC 8941 §4.2 with ``field_type = "item"``), e.g. a legacy
    sf-string ``Signature-Agent``."""
    parser = _checked_parser(value, field, max_length, frozenset())
    item = parser.item()
    _finish(parser, value)
    return item


def _checked_parser(value: str, field: str, max_length: int, lenient: frozenset[str]) -> _Parser:
    if not isinstance(value, str):
        raise InvalidInput("structured field must be text", code="bad_structured_field", field=field)
    if len(value) > max_length:
        raise InvalidInput(
            "structured header field too long", code="too_large", field=field, limit=max_length
        )
    if not value.isascii():
        raise _fail(field, "non_ascii", 0)
    parser = _Parser(value, field, lenient)
    parser.skip(" ")  # §4.2 step 2
    return parser


def _finish(parser: _Parser, value: str) -> None:
    parser.skip(" ")  # §4.2 steps 6-7
    if parser.pos != len(value):
        raise parser.fail("trailing_characters")


# --- serialisation (RFC 8941 §4.1) ---------------------------------------------------------------


def _serialize_bare(value: BareItem) -> str:
    # A plain string first: component identifiers and most parameters are strings (``type() is``
    # leaves a Token, a str subclass, to its own branch below).
    if type(value) is str:  # §4.1.6
        if _PRINTABLE_RE.fullmatch(value) is None:
            raise InvalidInput("string has characters outside %x20-7E", code="bad_structured_field")
        if '"' in value or "\\" in value:
            return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return '"' + value + '"'
    # §4.1.3.1: the order of the checks matters because bool is an int and Token is a str.
    if isinstance(value, bool):
        return "?1" if value else "?0"  # §4.1.9
    if isinstance(value, int):  # §4.1.4
        if not -_MAX_INTEGER <= value <= _MAX_INTEGER:
            raise InvalidInput("integer out of structured field range", code="bad_structured_field")
        return str(value)
    if isinstance(value, Decimal):  # §4.1.5
        return _serialize_decimal(value)
    if isinstance(value, Token):  # §4.1.7
        if _TOKEN_RE.fullmatch(value) is None:
            raise InvalidInput("invalid token", code="bad_structured_field")
        return str(value)
    if isinstance(value, str):  # §4.1.6
        if _PRINTABLE_RE.fullmatch(value) is None:
            raise InvalidInput("string has characters outside %x20-7E", code="bad_structured_field")
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bytes):  # §4.1.8
        return ":" + base64.b64encode(value).decode("ascii") + ":"
    raise InvalidInput("unsupported structured field value", code="bad_structured_field")


def _serialize_decimal(value: Decimal) -> str:
    if not value.is_finite():
        raise InvalidInput("decimal must be finite", code="bad_structured_field")
    rounded = value.quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN)
    integer_part = abs(int(rounded))
    if integer_part > 999_999_999_999:
        raise InvalidInput("decimal out of structured field range", code="bad_structured_field")
    text = f"{rounded:f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def serialize_params(params: Params) -> str:
    """§4.1.1.2: each parameter as ``;key`` (Boolean true) or ``;key=value``; the signature base
    builds the ``@signature-params`` line from the items it serialised and these."""
    out: list[str] = []
    for key, value in params:  # §4.1.1.2
        if _KEY_RE.fullmatch(key) is None:
            raise InvalidInput("invalid structured field key", code="bad_structured_field")
        out.append(";" + key if value is True else f";{key}={_serialize_bare(value)}")
    return "".join(out)


def serialize_item(item: Item) -> str:
    """§4.1.3: the bare item followed by its parameters."""
    return _serialize_bare(item.value) + serialize_params(item.params)


def serialize_inner_list(inner: InnerList) -> str:
    """§4.1.1.1: ``(`` items separated by one SP ``)`` followed by the list's parameters."""
    return "(" + " ".join(serialize_item(item) for item in inner.items) + ")" + serialize_params(inner.params)


def serialize_dictionary(members: Mapping[str, Item | InnerList]) -> str:
    """§4.1.2: members joined by ``", "``; a Boolean-true item is written as its key and parameters."""
    out: list[str] = []
    for key, member in members.items():
        if _KEY_RE.fullmatch(key) is None:
            raise InvalidInput("invalid structured field key", code="bad_structured_field")
        if isinstance(member, InnerList):
            out.append(f"{key}={serialize_inner_list(member)}")
        elif member.value is True:
            out.append(key + serialize_params(member.params))
        else:
            out.append(f"{key}={serialize_item(member)}")
    return ", ".join(out)
