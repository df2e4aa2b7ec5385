"""Hypothesis properties of mudrika.crypto.sdjwt.

1. issue -> present(random subset) -> verify round-trips and reveals exactly the chosen subset (plus
   the ancestors a chosen claim needs, §4.2.6), nothing more.
2. Any single-character change to a valid SD-JWT+KB is rejected.
3. Arbitrary text never escapes the error hierarchy.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mudrika.crypto import sdjwt
from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.sdjwt._pointer import format_pointer
from mudrika.errors import MudrikaError
from tests._support.sdjwt import UNBOUND

NOW = 1_800_000_000
ISSUER_KEY = KeyPair.generate("p256")
HOLDER_KEY = KeyPair.generate("p256")
TRUSTED = TrustedKey.for_key(ISSUER_KEY.public_key)

_names = st.text(alphabet="abcdefxyz_.~/ é", min_size=1, max_size=6).filter(
    lambda name: name not in {"_sd", "...", "_sd_alg"}
)
_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_values = st.recursive(
    _leaves,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_names, children, max_size=4)),
    max_leaves=12,
)
_claims = st.dictionaries(
    st.text(alphabet="pqrs", min_size=1, max_size=4).map(lambda n: "c_" + n), _values, max_size=5
)


def _paths(node: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    children: list[tuple[str, Any]] = []
    if isinstance(node, dict):
        children = [(name, value) for name, value in node.items()]
    elif isinstance(node, list):
        children = [(str(index), value) for index, value in enumerate(node)]
    for token, value in children:
        path = (*prefix, token)
        found.append(path)
        found.extend(_paths(value, path))
    return found


def _expected(
    node: Any, prefix: tuple[str, ...], marked: set[tuple[str, ...]], shown: set[tuple[str, ...]]
) -> Any:
    """The reference model: drop every marked claim that was not shown; keep everything else."""
    if isinstance(node, dict):
        return {
            name: _expected(value, (*prefix, name), marked, shown)
            for name, value in node.items()
            if (*prefix, name) not in marked or (*prefix, name) in shown
        }
    if isinstance(node, list):
        return [
            _expected(value, (*prefix, str(index)), marked, shown)
            for index, value in enumerate(node)
            if (*prefix, str(index)) not in marked or (*prefix, str(index)) in shown
        ]
    return node


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claims=_claims, data=st.data())
def test_round_trip_reveals_exactly_the_chosen_subset(claims: dict[str, Any], data: st.DataObject) -> None:
    all_paths = _paths(claims, ())
    marked = data.draw(st.sets(st.sampled_from(all_paths)) if all_paths else st.just(set()), label="marked")
    chosen = data.draw(st.sets(st.sampled_from(sorted(marked))) if marked else st.just(set()), label="chosen")
    decoys = data.draw(st.integers(min_value=0, max_value=2), label="decoys")
    base = {"iat": NOW - 1, "exp": NOW + 60}
    issued = sdjwt.issue(
        {**base, **claims},
        issuer_key=ISSUER_KEY,
        kid=None,
        disclosable=[format_pointer(path) for path in marked],
        holder_key=HOLDER_KEY.public_key,
        decoys=decoys,
    )
    assert set(issued.disclosable_paths) == {format_pointer(path) for path in marked}
    presentation = sdjwt.present(
        issued,
        disclose=[format_pointer(path) for path in chosen],
        holder_key=HOLDER_KEY,
        aud="aud",
        nonce="nonce",
        iat=NOW,
    )
    verified = sdjwt.verify(
        presentation,
        issuer_key=TRUSTED,
        issuer=None,
        now=NOW,
        require_key_binding=True,
        expected_aud="aud",
        expected_nonce="nonce",
        kb_max_age=60,
    )
    # A chosen claim brings the marked ancestors it needs; nothing else is revealed.
    shown = {path[:cut] for path in chosen for cut in range(1, len(path) + 1)} & marked
    expected = {
        **base,
        **_expected(claims, (), marked, shown),
        "cnf": {"jwk": HOLDER_KEY.public_key.to_jwk()},
    }
    assert verified.payload == expected
    assert len(verified.disclosures) == len(shown)
    assert verified.key_bound


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_any_single_character_change_is_rejected(data: st.DataObject) -> None:
    issued = sdjwt.issue(
        {"iat": NOW - 1, "exp": NOW + 60, "a": "x", "b": [1, 2]},
        issuer_key=ISSUER_KEY,
        kid=None,
        disclosable=["/a", "/b/1"],
        holder_key=HOLDER_KEY.public_key,
    )
    presentation = sdjwt.present(
        issued, disclose=["/a", "/b/1"], holder_key=HOLDER_KEY, aud="a", nonce="n", iat=NOW
    )
    index = data.draw(st.integers(min_value=0, max_value=len(presentation) - 1), label="index")
    replacement = data.draw(
        st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~").filter(
            lambda char: char != presentation[index]
        ),
        label="replacement",
    )
    mutated = presentation[:index] + replacement + presentation[index + 1 :]
    try:
        sdjwt.verify(
            mutated,
            issuer_key=TRUSTED,
            issuer=None,
            now=NOW,
            require_key_binding=True,
            expected_aud="a",
            expected_nonce="n",
            kb_max_age=60,
        )
    except MudrikaError:
        return
    raise AssertionError(f"mutation at {index} was accepted")


@settings(max_examples=150, deadline=None)
@given(text=st.one_of(st.text(max_size=200), st.text(alphabet="ab.~_-=", max_size=60)))
def test_garbage_only_raises_mudrika_errors(text: str) -> None:
    try:
        sdjwt.verify(
            text,
            issuer_key=TRUSTED,
            now=NOW,
            kb_max_age=60,
            **UNBOUND,
        )
    except MudrikaError:
        return
    raise AssertionError("garbage was accepted")
