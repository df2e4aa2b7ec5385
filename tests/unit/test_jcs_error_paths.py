"""Every way out of the strict JSON parser is ``InvalidInput`` with a stable code.

Regression for a leak found by fuzzing: a document nested deeper than ``max_depth`` that also held an
escape JSON does not have (``"\\x"``, a short ``"\\u12"``) *before* the point where it became too deep
made the error-path tokenizer (``locate``) decode that string with ``json.loads`` and raise the raw
``json.JSONDecodeError``.  1,304 of 1.1 M fuzzed inputs hit it, through JCS, trust roots and both
evidence bundle formats.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mudrika.crypto.jcs import loads_strict
from mudrika.errors import InvalidInput
from mudrika.payments.bundle import parse_bundle
from mudrika.payments.trustroot import parse_trust_root
from mudrika.payments.v02.bundle import parse_v02_bundle

DEEP = "[" * 200

#: (text, the code it must be refused with).  Depth wins over every other problem that the
#: tokenizer can read past (it skips string contents); a bad escape in a string is such a problem.
SHAPES: list[tuple[str, str]] = [
    (DEEP + '"\\x"', "too_deep"),  # the shape as first reported: the escape after the depth limit
    ('["\\x",' + DEEP, "too_deep"),  # the escape before the depth limit: this one leaked
    ('{"\\x":' + DEEP, "too_deep"),  # ... in a key
    ('["\\u12",' + DEEP, "too_deep"),  # ... a truncated \u escape
    ('["\\u12' + DEEP, "malformed_json"),  # an unterminated string: the brackets are its text
    ('["a\\', "malformed_json"),  # a backslash at the very end: not a token, the syntax error stands
    ('[{"a":1,"a":2},"\\x",' + DEEP, "too_deep"),  # a duplicate key, then the escape, then depth
    ('[{"a":1,"a":2},"\\x"]', "duplicate_key"),  # the same without the depth: the first problem
    ('[1e999,"\\x"]', "non_finite_number"),
    ('[9007199254740993,"\\x"]', "integer_out_of_range"),
    ('["\\x"]', "malformed_json"),
]


@pytest.mark.parametrize(("text", "code"), SHAPES)
def test_deep_nesting_with_a_bad_escape_is_invalid_input(text: str, code: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        loads_strict(text)
    assert caught.value.code == code
    # Bytes take the same path as text.
    with pytest.raises(InvalidInput) as again:
        loads_strict(text.encode())
    assert again.value.code == code


@pytest.mark.parametrize("max_depth", [1, 2, 8, 64, 199, 200, 201])
def test_the_verdict_holds_at_every_depth_limit(max_depth: int) -> None:
    """Below the document's depth it is too deep; at or above it the bad escape is the problem."""
    text = '["\\x",' + "[" * 199
    with pytest.raises(InvalidInput) as caught:
        loads_strict(text, max_depth=max_depth)
    assert caught.value.code == ("too_deep" if max_depth < 200 else "malformed_json")


@pytest.mark.parametrize(
    "parse",
    [parse_trust_root, parse_bundle, parse_v02_bundle],
    ids=["trust_root", "bundle_v01", "bundle_v02"],
)
def test_documents_read_by_the_strict_parser_refuse_the_shape(parse: Callable[[str], Any]) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse('{"format":"\\x",' + '"a":' * 1 + DEEP)
    assert caught.value.code == "too_deep"
