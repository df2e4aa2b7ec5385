"""The SD-JWT fast paths against the slow paths they replaced.

Why these tests: Disclosure processing now carries each node's path as RFC 6901 text, places a
Disclosure as a (path, parent) pair and builds the public :class:`Disclosure` objects only when asked;
:func:`sdjwt.parse` checks every Disclosure in three C passes when the text is plain.  Each must
answer exactly as the straightforward code did -- the same processed payload, the same Disclosures
(digest, path, name, parent, in presentation order), the same error code for the same input.  The
reference implementations below are that straightforward code, kept here as the oracle.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mudrika.crypto import sdjwt
from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.sdjwt._disclosure import DecodedDisclosure, decode_disclosure, decode_disclosures
from mudrika.crypto.sdjwt._pointer import format_pointer
from mudrika.crypto.sdjwt._process import ELLIPSIS, RESERVED_NAMES, SD, process
from mudrika.errors import InvalidInput, MudrikaError, VerificationError

ISSUER_KEY = KeyPair.generate("p256")

# -- the reference processor: the walker as it was, path tuples formatted at placement --------------


class _Reference:
    def __init__(self, by_digest: Mapping[str, DecodedDisclosure], max_depth: int) -> None:
        self.by_digest = by_digest
        self.max_depth = max_depth
        self.seen: set[str] = set()
        self.placed: dict[str, tuple[str, str | None]] = {}

    def claim(self, digest: str) -> DecodedDisclosure | None:
        if digest in self.seen:
            raise VerificationError("a digest appears more than once", code="duplicate_digest")
        self.seen.add(digest)
        return self.by_digest.get(digest)

    def walk(self, node: Any, path: tuple[str, ...], parent: str | None, depth: int) -> Any:
        if depth > self.max_depth:
            raise InvalidInput("too deep", code="too_deep")
        if isinstance(node, dict):
            return self.obj(node, path, parent, depth)
        if isinstance(node, list):
            return self.arr(node, path, parent, depth)
        return node

    def obj(self, node: dict[str, Any], path: tuple[str, ...], parent: str | None, depth: int) -> Any:
        digests: Any = ()
        if SD in node:
            digests = node[SD]
            if not isinstance(digests, list) or not all(isinstance(item, str) for item in digests):
                raise InvalidInput("bad _sd", code="malformed_sd")
        out: dict[str, Any] = {}
        for name, value in node.items():
            if name in RESERVED_NAMES:
                if name == SD:
                    continue
                if name == ELLIPSIS:
                    raise InvalidInput("misplaced", code="misplaced_ellipsis")
                if depth != 0:
                    raise InvalidInput("nested _sd_alg", code="misplaced_sd_alg")
                continue
            out[name] = self.walk(value, (*path, name), parent, depth + 1)
        for digest in digests:
            found = self.claim(digest)
            if found is None:
                continue
            if found.name is None:
                raise VerificationError("shape", code="disclosure_shape_mismatch")
            if found.name in RESERVED_NAMES:
                raise VerificationError("reserved", code="reserved_claim_name")
            if found.name in out:
                raise VerificationError("clash", code="claim_name_clash")
            member = (*path, found.name)
            self.placed[digest] = (format_pointer(member), parent)
            out[found.name] = self.walk(found.value, member, digest, depth + 1)
        return out

    def arr(self, node: list[Any], path: tuple[str, ...], parent: str | None, depth: int) -> Any:
        out: list[Any] = []
        for element in node:
            if isinstance(element, dict) and ELLIPSIS in element:
                digest = element[ELLIPSIS]
                if len(element) != 1 or not isinstance(digest, str):
                    raise InvalidInput("misplaced", code="misplaced_ellipsis")
                found = self.claim(digest)
                if found is None:
                    continue
                if found.name is not None:
                    raise VerificationError("shape", code="disclosure_shape_mismatch")
                element_path = (*path, str(len(out)))
                self.placed[digest] = (format_pointer(element_path), parent)
                out.append(self.walk(found.value, element_path, digest, depth + 1))
                continue
            out.append(self.walk(element, (*path, str(len(out))), parent, depth + 1))
        return out


def _reference_process(
    payload: Mapping[str, Any], disclosures: Sequence[DecodedDisclosure], max_depth: int
) -> tuple[dict[str, Any], list[tuple[str, str, str | None, str | None]]]:
    by_digest: dict[str, DecodedDisclosure] = {}
    for item in disclosures:
        if item.digest in by_digest:
            raise VerificationError("twice", code="duplicate_disclosure")
        by_digest[item.digest] = item
    walker = _Reference(by_digest, max_depth)
    processed = walker.walk(dict(payload), (), None, 0)
    if any(item.digest not in walker.placed for item in disclosures):
        raise VerificationError("unreferenced", code="unreferenced_disclosure")
    placed = [
        (item.digest, walker.placed[item.digest][0], item.name, walker.placed[item.digest][1])
        for item in disclosures
    ]
    return processed, placed


def _outcome_of_fast(
    payload: Mapping[str, Any], disclosures: Sequence[DecodedDisclosure], max_depth: int
) -> tuple[str, Any]:
    try:
        result = process(payload, disclosures, max_depth=max_depth)
    except MudrikaError as exc:
        return "error", exc.code
    described = [(d.digest, d.path, d.name, d.parent) for d in result.disclosures]
    return "ok", (result.payload, described)


def _outcome_of_reference(
    payload: Mapping[str, Any], disclosures: Sequence[DecodedDisclosure], max_depth: int
) -> tuple[str, Any]:
    try:
        return "ok", _reference_process(payload, disclosures, max_depth)
    except MudrikaError as exc:
        return "error", exc.code


# -- generated SD-JWTs -------------------------------------------------------------------------------

_names = st.one_of(
    st.sampled_from(["a/b", "~", "~1", "x~0/", "/", "~/~"]),
    st.text(alphabet="abxy_.~/ é", min_size=1, max_size=5),
).filter(lambda n: n not in RESERVED_NAMES)
_leaves = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=6))
_values = st.recursive(
    _leaves,
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(_names, children, max_size=3)),
    max_leaves=10,
)
_claims = st.dictionaries(st.text(alphabet="pq", min_size=1, max_size=3).map(lambda n: "c_" + n), _values)


def _paths(node: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    children: list[tuple[str, Any]] = []
    if isinstance(node, dict):
        children = list(node.items())
    elif isinstance(node, list):
        children = [(str(index), value) for index, value in enumerate(node)]
    for token, value in children:
        path = (*prefix, token)
        found.append(path)
        found.extend(_paths(value, path))
    return found


def _decoded(issued: sdjwt.SdJwt, chosen: Sequence[str]) -> list[DecodedDisclosure]:
    by_path = {d.path: d.encoded for d in issued.disclosures}
    return [decode_disclosure(by_path[path], max_bytes=8192, max_depth=32) for path in chosen]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claims=_claims, data=st.data())
def test_processing_matches_the_reference_walker(claims: dict[str, Any], data: st.DataObject) -> None:
    """Any issued SD-JWT, any subset and order of its Disclosures (including ones whose parent is
    left out, so they are unreferenced), at any depth limit: the same payload, the same Disclosures
    with the same paths and parents, or the same error code."""
    paths = [format_pointer(path) for path in _paths(claims, ())]
    disclosable = data.draw(st.lists(st.sampled_from(paths), unique=True, max_size=6)) if paths else []
    issued = sdjwt.issue(
        claims, issuer_key=ISSUER_KEY, kid=None, disclosable=disclosable, holder_key=None, decoys=1
    )
    available = [d.path for d in issued.disclosures]
    chosen = data.draw(st.permutations(available)) if available else []
    chosen = chosen[: data.draw(st.integers(0, len(chosen)))]
    decoded = _decoded(issued, chosen)
    max_depth = data.draw(st.sampled_from((1, 2, 3, 32)))
    assert _outcome_of_fast(issued.payload, decoded, max_depth) == _outcome_of_reference(
        issued.payload, decoded, max_depth
    )


def _disclosure(salt: str, *content: Any) -> DecodedDisclosure:
    encoded = b64url_encode(json.dumps([salt, *content]).encode())
    return decode_disclosure(encoded, max_bytes=8192, max_depth=32)


def _crafted_cases() -> list[tuple[dict[str, Any], list[DecodedDisclosure]]]:
    member = _disclosure("s1", "name", {"inner": 1})
    element = _disclosure("s2", "value")
    reserved = _disclosure("s3", "_sd", 1)
    nested = _disclosure("s4", "deep", {"_sd_alg": "sha-256"})
    escaped = _disclosure("s5", "a/b~c~1", {"~/": 1})
    return [
        ({"_sd": [member.digest, member.digest]}, [member]),  # a digest twice
        ({"_sd": [member.digest], "x": [{"...": member.digest}]}, [member]),  # twice, object and array
        ({"_sd": [element.digest]}, [element]),  # array Disclosure in an object
        ({"list": [{"...": member.digest}]}, [member]),  # object Disclosure in an array
        ({"_sd": [reserved.digest]}, [reserved]),  # reserved claim name
        ({"_sd": [member.digest], "name": 1}, [member]),  # clash
        ({"_sd": [nested.digest]}, [nested]),  # _sd_alg nested inside a disclosed value
        ({"_sd": "not a list"}, []),
        ({"_sd": [1]}, []),
        ({"...": "x"}, []),
        ({"list": [{"...": "x", "y": 1}]}, []),
        ({"list": [{"...": 1}]}, []),
        ({"a": {"_sd_alg": "sha-256"}}, []),
        ({"_sd": [member.digest]}, [member, member]),  # the same Disclosure sent twice
        ({"_sd": []}, [member]),  # unreferenced
        ({"_sd": ["decoy", member.digest], "list": [{"...": element.digest}, 3]}, [element, member]),
        ({"deep": {"deeper": {"deepest": [1]}}}, []),
        # RFC 6901 escapes in every position: '~' is '~0' and '/' is '~1', '~' first.
        ({"x/y~": {"_sd": [escaped.digest]}, "l~/": [{"...": element.digest}]}, [escaped, element]),
    ]


@pytest.mark.parametrize("max_depth", [1, 2, 3, 32])
@pytest.mark.parametrize("case", range(len(_crafted_cases())))
def test_every_refusal_matches_the_reference_walker(case: int, max_depth: int) -> None:
    payload, disclosures = _crafted_cases()[case]
    fast = _outcome_of_fast(payload, disclosures, max_depth)
    assert fast == _outcome_of_reference(payload, disclosures, max_depth)


def test_disclosures_are_built_once_and_in_presentation_order() -> None:
    first = _disclosure("s1", "b", 2)
    second = _disclosure("s2", "a", 1)
    processed = process({"_sd": [second.digest, first.digest]}, [first, second], max_depth=32)
    assert processed.payload == {"a": 1, "b": 2}
    assert [d.name for d in processed.disclosures] == ["b", "a"]
    assert processed.disclosures is processed.disclosures
    assert "s1" not in repr(processed)
    assert "s1" not in repr(first)


# -- parse: the three C passes against the per-Disclosure loop -----------------------------------------

_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")


def _reference_parse(text: str, limits: sdjwt.SdJwtLimits) -> tuple[str, Any]:
    """The checks of parse() as a plain loop (size, then base64url, per Disclosure, in order)."""
    try:
        if len(text) > limits.max_bytes:
            raise InvalidInput("too large", code="too_large")
        parts = text.split("~")
        if len(parts) < 2:
            raise InvalidInput("no ~", code="malformed_sd_jwt")
        issuer_jwt, disclosures, last = parts[0], parts[1:-1], parts[-1]
        if len(disclosures) > limits.max_disclosures:
            raise InvalidInput("too many", code="too_many_disclosures")

        def jwt_shape(token: str) -> None:
            pieces = token.split(".")
            if len(pieces) != 3 or not all(_SEGMENT.fullmatch(piece) for piece in pieces):
                raise InvalidInput("not a JWS", code="malformed_sd_jwt")

        jwt_shape(issuer_jwt)
        for item in disclosures:
            if len(item) > limits.max_disclosure_bytes:
                raise InvalidInput("too large", code="disclosure_too_large")
            if not _SEGMENT.fullmatch(item):
                raise InvalidInput("malformed", code="malformed_sd_jwt")
        if last:
            jwt_shape(last)
        sd_jwt = "".join([issuer_jwt, "~", *(d + "~" for d in disclosures)])
        return "ok", (issuer_jwt, tuple(disclosures), last or None, sd_jwt)
    except InvalidInput as exc:
        return "error", exc.code


def _fast_parse(text: str, limits: sdjwt.SdJwtLimits) -> tuple[str, Any]:
    try:
        parsed = sdjwt.parse(text, limits=limits)
    except InvalidInput as exc:
        return "error", exc.code
    return "ok", (parsed.issuer_jwt, parsed.disclosures, parsed.kb_jwt, parsed.sd_jwt)


_pieces = st.one_of(
    st.sampled_from(["a.b.c", "aa.bb.cc", "a.b", "a..c", "", "Zz-_", "x.y", "é", "a b", "ab=", "AAAAAAAAAA"]),
    st.text(alphabet="ab.-_=é ", max_size=12),
)


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_pieces, min_size=1, max_size=7), small=st.booleans())
def test_parse_matches_the_per_disclosure_loop(pieces: list[str], small: bool) -> None:
    """Plain or not, with empty, dotted, oversized or foreign Disclosures in any position: the same
    parts or the same error code as checking each Disclosure in turn."""
    limits = sdjwt.SdJwtLimits(max_disclosure_bytes=6, max_disclosures=4) if small else sdjwt.DEFAULT_LIMITS
    text = "~".join(pieces)
    assert _fast_parse(text, limits) == _reference_parse(text, limits)


def test_sd_hash_of_a_verified_presentation_is_the_digest_of_what_was_presented() -> None:
    holder = KeyPair.generate("p256")
    issued = sdjwt.issue(
        {"iss": "https://i.example", "iat": 10, "exp": 10**10, "a": 1, "b": 2},
        issuer_key=ISSUER_KEY,
        kid=None,
        disclosable=["/a", "/b"],
        holder_key=holder.public_key,
    )
    text = sdjwt.present(issued, disclose=["/b"], holder_key=holder, aud="aud", nonce="n", iat=100)
    verified = sdjwt.verify(
        text,
        issuer_key=sdjwt.holder_key_from_cnf({"cnf": {"jwk": ISSUER_KEY.public_key.to_jwk()}}),
        issuer="https://i.example",
        now=100,
        require_key_binding=True,
        expected_aud="aud",
        expected_nonce="n",
        kb_max_age=60,
    )
    assert verified.sd_hash == sdjwt.digest_of(text[: text.rindex("~") + 1])
    assert verified.payload["b"] == 2
    assert "a" not in verified.payload
    assert [d.path for d in verified.disclosures] == ["/b"]


_MALFORMED = [
    b64url_encode(b'"not an array"'),
    b64url_encode(b'["only-salt"]'),
    b64url_encode(b'[1, "name", 2]'),
    b64url_encode(b'["salt", 7, 2]'),
    b64url_encode(b'["salt", "a", 1, 2]'),
    b64url_encode(b'["s", {"a": 1, "a": 2}]'),
    "not*base64",
    b64url_encode(b"["),
]


@pytest.mark.parametrize("bad", range(len(_MALFORMED) + 1))
def test_decoding_every_disclosure_in_one_loop_is_decoding_each(bad: int) -> None:
    """The same records, or the first malformed one's error code, as decoding one at a time."""
    good = [_disclosure(f"s{index}", f"n{index}", index).encoded for index in range(3)]
    good.append(_disclosure("s9", [1, {"x": None}]).encoded)
    items = good if bad == len(_MALFORMED) else [*good[:2], _MALFORMED[bad], *good[2:]]

    def one_at_a_time() -> object:
        try:
            return [decode_disclosure(item, max_bytes=8192, max_depth=32) for item in items]
        except MudrikaError as exc:
            return exc.code

    def in_one_loop() -> object:
        try:
            return decode_disclosures(items, max_bytes=8192, max_depth=32)
        except MudrikaError as exc:
            return exc.code

    assert in_one_loop() == one_at_a_time()
