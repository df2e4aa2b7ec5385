"""DID and DID URL syntax (W3C DID Core 1.0 §3.1 and §3.2, with RFC 3986 for path, query and fragment).

Why a hand-written parser: every identifier an agent presents — a ``kid`` header, a mandate issuer, a
DID document id — passes through here before anything is looked up, so it must be strict (one
spelling per identifier, bounded length, percent-encoding checked) and must say *what* was wrong with
a stable code.  ``str()`` of a parsed value gives back exactly the input: we never normalise, because
a normalised identifier is a different string from the one that was signed.

Grammar (DID Core §3.1, §3.2)::

    did                = "did:" method-name ":" method-specific-id
    method-name        = 1*method-char
    method-char        = %x61-7A / DIGIT
    method-specific-id = *( *idchar ":" ) 1*idchar
    idchar             = ALPHA / DIGIT / "." / "-" / "_" / pct-encoded
    pct-encoded        = "%" HEXDIG HEXDIG
    did-url            = did path-abempty [ "?" query ] [ "#" fragment ]

and from RFC 3986: ``path-abempty = *( "/" segment )``, ``segment = *pchar``, ``query`` and
``fragment`` = ``*( pchar / "/" / "?" )``, ``pchar = unreserved / pct-encoded / sub-delims / ":" / "@"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from mudrika.errors import InvalidInput

__all__ = [
    "DID",
    "DIDURL",
    "MAX_DID_URL_LENGTH",
    "MAX_METHOD_NAME_LENGTH",
    "parse_cache_clear",
    "parse_did",
    "parse_did_url",
    "path_segment_refusal",
]

#: Longest DID URL we accept.  DID Core sets no limit; ours bounds every lookup and log line.
MAX_DID_URL_LENGTH: Final = 2048
#: Longest method name we accept (registered method names are all far shorter).
MAX_METHOD_NAME_LENGTH: Final = 64

_PCT = r"%[0-9A-Fa-f]{2}"
_IDCHAR = rf"(?:[A-Za-z0-9._-]|{_PCT})"
_PCHAR = rf"(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|{_PCT})"
_METHOD_RE: Final = re.compile(r"[a-z0-9]+")
_MSID_RE: Final = re.compile(rf"(?:{_IDCHAR}*:)*{_IDCHAR}+")
_PATH_RE: Final = re.compile(rf"(?:/{_PCHAR}*)*")
_QUERY_RE: Final = re.compile(rf"(?:{_PCHAR}|[/?])*")
# One expression for the common, valid case; the component checks below only run to explain a failure.
_DID_URL_RE: Final = re.compile(
    rf"did:([a-z0-9]{{1,{MAX_METHOD_NAME_LENGTH}}}):((?:{_IDCHAR}*:)*{_IDCHAR}+)"
    rf"((?:/{_PCHAR}*)*)(?:\?((?:{_PCHAR}|[/?])*))?(?:#((?:{_PCHAR}|[/?])*))?"
)
#: The most common shape on its own: a bare DID whose method-specific id is one run of unencoded
#: idchars (every did:key, did:jwk and did:bindu, a did:web without a path).  Whatever this matches,
#: the full grammar above matches with the same method and id and no path, query or fragment; it
#: costs a tenth as much because it has no alternation to backtrack through, and it is tried first.
_PLAIN_DID_RE: Final = re.compile(rf"did:([a-z0-9]{{1,{MAX_METHOD_NAME_LENGTH}}}):([A-Za-z0-9._-]+)")
_BAD_PCT_RE: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SEGMENT_RE: Final = re.compile(rf"{_IDCHAR}+")
_PCT_BYTE_RE: Final = re.compile(r"%([0-9A-Fa-f]{2})")
#: Bytes a path segment may not carry percent-encoded: RFC 3986 unreserved characters (their encoding
#: is a second spelling of the same path; ``%2E`` is ``.``), the separators a web server or file system
#: splits on (slash, backslash), ``%`` itself (double encoding: ``%252E`` decodes to ``%2E`` on the next
#: pass), NUL and every other control character.
_NOT_PCT_ENCODABLE: Final = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/\\%" + bytes(range(0x20)) + b"\x7f"
)


@dataclass(frozen=True, slots=True)
class DID:
    """A bare DID: ``did:<method>:<method-specific-id>``."""

    method: str
    method_specific_id: str

    def __str__(self) -> str:
        return f"did:{self.method}:{self.method_specific_id}"


@dataclass(frozen=True, slots=True)
class DIDURL:
    """A DID URL: a DID plus optional path (``path-abempty``, may be ``""``), query and fragment.

    ``query`` and ``fragment`` are ``None`` when absent and ``""`` when present but empty, so that
    ``str()`` reproduces the input exactly (``did:x:y#`` and ``did:x:y`` are different strings).
    """

    did: DID
    path: str = ""
    query: str | None = None
    fragment: str | None = None

    def __str__(self) -> str:
        text = f"did:{self.did.method}:{self.did.method_specific_id}{self.path}"
        if self.query is not None:
            text += "?" + self.query
        if self.fragment is not None:
            text += "#" + self.fragment
        return text

    @property
    def did_str(self) -> str:
        """The bare DID this URL belongs to, as a string."""
        return str(self.did)

    @property
    def is_bare_did(self) -> bool:
        return not self.path and self.query is None and self.fragment is None

    @classmethod
    def absolute(cls, ref: str, base_did: DID | str) -> DIDURL:
        """Resolve a reference found inside a DID document against the document's DID.

        DID Core §3.2.2 allows relative DID URLs in documents (``#key-1``, ``?service=x``,
        ``/path``); they are relative to the DID of the document.  An absolute DID URL is parsed
        and returned unchanged — it is *not* forced onto ``base_did``: callers that need the DID to
        match (the document model does) check ``.did`` themselves.
        """
        if not isinstance(ref, str) or not ref:
            raise InvalidInput("empty DID URL reference", code="empty")
        if ref.startswith("did:"):
            return parse_did_url(ref)
        base = base_did if isinstance(base_did, DID) else parse_did(base_did)
        if ref[0] not in "#?/":
            raise InvalidInput(
                "relative DID URL must start with '#', '?' or '/'", code="not_a_did", ref=ref[:64]
            )
        return parse_did_url(str(base) + ref)


def path_segment_refusal(segment: str) -> str | None:
    """Why ``segment`` — one ``:``-separated part of a method-specific id that a method maps onto a URL
    or file path (did:web's path) — may not be used, or None when it may.

    Why one function: the did:web driver builds the fetch URL from these segments, ``did_roles``
    matches them against policy patterns, and ``write_document`` turns them into directories.  If the
    matcher compared ``%2E%2E`` as an opaque string while the web server decoded it to ``..``,
    ``did:web:example.com:agents:%2E%2E:users:mallory`` would match ``agents:*`` and fetch
    ``/users/mallory/did.json``.  So every consumer asks this function, and a segment has exactly one
    spelling: percent-encoding is kept only for bytes that need it (never an unreserved character,
    separator, ``%`` or control byte) and the dot segments ``.`` and ``..`` are refused.

    Reasons: ``syntax`` (not 1+ idchars), ``dot_segment``, ``encoded_separator`` (``%2F``, ``%5C``),
    ``double_encoding`` (``%25``), ``encoded_control``, ``encoded_unreserved`` (``%2E``, ``%41`` …).
    """
    if not _SEGMENT_RE.fullmatch(segment):
        return "syntax"
    if segment in (".", ".."):
        return "dot_segment"
    for match in _PCT_BYTE_RE.finditer(segment):
        byte = int(match.group(1), 16)
        if byte not in _NOT_PCT_ENCODABLE:
            continue
        if byte in b"/\\":
            return "encoded_separator"
        if byte == ord("%"):
            return "double_encoding"
        if byte < 0x20 or byte == 0x7F:
            return "encoded_control"
        return "encoded_unreserved"
    return None


# The slots of the two frozen dataclasses, set through their descriptors for the plain-DID fast path:
# the generated ``__init__`` goes through ``object.__setattr__`` once per field, which re-checks the
# class on every call and costs more than matching the DID.  Same objects, same fields, same values.
_NEW: Final = object.__new__
_SET_METHOD: Final = DID.__dict__["method"].__set__
_SET_MSID: Final = DID.__dict__["method_specific_id"].__set__
_SET_URL_DID: Final = DIDURL.__dict__["did"].__set__
_SET_PATH: Final = DIDURL.__dict__["path"].__set__
_SET_QUERY: Final = DIDURL.__dict__["query"].__set__
_SET_FRAGMENT: Final = DIDURL.__dict__["fragment"].__set__


def _bare(method: str, method_specific_id: str) -> DIDURL:
    """``DIDURL(DID(method, method_specific_id))``, built without the dataclass ``__init__``."""
    did = _NEW(DID)
    _SET_METHOD(did, method)
    _SET_MSID(did, method_specific_id)
    url = _NEW(DIDURL)
    _SET_URL_DID(url, did)
    _SET_PATH(url, "")
    _SET_QUERY(url, None)
    _SET_FRAGMENT(url, None)
    return url


def _fail(code: str, message: str, text: str) -> InvalidInput:
    return InvalidInput(message, code=code, did=text[:128])


def _explain(text: str) -> InvalidInput:
    """Say precisely why ``text`` is not a DID URL (only reached when the fast regex failed)."""
    if not text.startswith("did:"):
        return _fail("not_a_did", "not a DID: it must start with 'did:'", text)
    method, sep, rest = text[4:].partition(":")
    if len(method) > MAX_METHOD_NAME_LENGTH:
        return _fail("too_long", f"DID method name longer than {MAX_METHOD_NAME_LENGTH} characters", text)
    if not _METHOD_RE.fullmatch(method):
        return _fail("bad_method", "DID method name must be 1+ characters of a-z and 0-9", text)
    if not sep:
        return _fail("bad_method_specific_id", "DID has no method-specific id after the method", text)
    cut = len(rest)
    for delimiter in "/?#":
        index = rest.find(delimiter)
        if index != -1:
            cut = min(cut, index)
    msid, tail = rest[:cut], rest[cut:]
    if _BAD_PCT_RE.search(msid):
        return _fail("bad_percent_encoding", "'%' must be followed by two hex digits", text)
    if not _MSID_RE.fullmatch(msid):
        return _fail(
            "bad_method_specific_id",
            "method-specific id must be non-empty, use only A-Z a-z 0-9 . - _ %XX and ':' "
            "separators, and must not end with ':'",
            text,
        )
    before_fragment, _, fragment = tail.partition("#")
    path, _, query = before_fragment.partition("?")
    for part, regex, code, label in (
        (path, _PATH_RE, "bad_path", "path"),
        (query, _QUERY_RE, "bad_query", "query"),
        (fragment, _QUERY_RE, "bad_fragment", "fragment"),
    ):
        if _BAD_PCT_RE.search(part):
            return _fail(
                "bad_percent_encoding", f"'%' in the {label} must be followed by two hex digits", text
            )
        if not regex.fullmatch(part):
            return _fail(code, f"DID URL {label} contains characters RFC 3986 does not allow there", text)
    # Every component passed on its own, so the combination is what failed; say so generically.
    return _fail("not_a_did", "not a valid DID URL", text)


@lru_cache(maxsize=4096)
def _parse(text: str) -> DIDURL:
    plain = _PLAIN_DID_RE.fullmatch(text)
    if plain is not None:
        return _bare(plain[1], plain[2])
    match = _DID_URL_RE.fullmatch(text)
    if match is None:
        raise _explain(text)
    method, msid, path, query, fragment = match.groups()
    return DIDURL(DID(method, msid), path, query, fragment)


def parse_cache_clear() -> None:
    """Empty the LRU of parsed DID URLs.

    Why public: a benchmark that claims a cold parse must be able to say this cache was empty, and a
    test can start from a known state.  Correctness never depends on it (entries are immutable).
    """
    _parse.cache_clear()


def parse_did_url(text: str) -> DIDURL:
    """Parse a DID URL (a bare DID is a DID URL too); raise :class:`InvalidInput` with a precise code.

    Codes: ``empty``, ``not_a_did``, ``too_long``, ``bad_method``, ``bad_method_specific_id``,
    ``bad_percent_encoding``, ``bad_path``, ``bad_query``, ``bad_fragment``.
    """
    if not isinstance(text, str):
        raise InvalidInput("a DID URL must be a string", code="not_a_did")
    if not text:
        raise InvalidInput("empty DID", code="empty")
    if len(text) > MAX_DID_URL_LENGTH:
        raise InvalidInput(
            f"DID URL longer than {MAX_DID_URL_LENGTH} characters",
            code="too_long",
            limit=MAX_DID_URL_LENGTH,
            got=len(text),
        )
    return _parse(text)


def parse_did(text: str) -> DID:
    """Parse a bare DID; a DID URL with a path, query or fragment is refused (``not_a_did``)."""
    url = parse_did_url(text)
    if not url.is_bare_did:
        raise InvalidInput(
            "a DID URL (with path, query or fragment) was given where a bare DID is required",
            code="not_a_did",
            did=text[:128],
        )
    return url.did
