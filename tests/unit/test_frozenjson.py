"""Read-only JSON containers: what ``freeze`` copies, keeps, refuses, and what ``thaw`` gives back."""

from __future__ import annotations

import copy
import enum
import pickle
from collections import OrderedDict
from decimal import Decimal
from typing import Any

import pytest

from mudrika.crypto.frozenjson import (
    EncoderReadyDict,
    EncoderReadyList,
    FrozenJSONDict,
    FrozenJSONList,
    freeze,
    freeze_encoder_ready,
    thaw,
)
from mudrika.errors import InvalidInput


class _Level(enum.IntEnum):
    HIGH = 3


def _nest(levels: int) -> list[Any]:
    value: list[Any] = ["leaf"]
    for _ in range(levels):
        value = [value]
    return value


def test_every_container_is_copied_read_only_and_every_scalar_is_kept() -> None:
    decimal = Decimal("1.5")
    source: dict[str, Any] = {
        "s": "text",
        "i": 7,
        "f": 2.5,
        "b": True,
        "n": None,
        "tuple": (1, [2, {"x": (3,)}]),
        "ordered": OrderedDict([("k", [4.0])]),
        "enum": _Level.HIGH,
        "other": decimal,
    }
    frozen = freeze(source, max_depth=8)
    assert type(frozen) is FrozenJSONDict
    assert frozen == {**source, "tuple": [1, [2, {"x": [3]}]], "ordered": {"k": [4.0]}}
    assert type(frozen["tuple"]) is FrozenJSONList
    assert type(frozen["tuple"][1][1]) is FrozenJSONDict
    assert type(frozen["tuple"][1][1]["x"]) is FrozenJSONList
    assert type(frozen["ordered"]) is FrozenJSONDict
    assert frozen["enum"] is _Level.HIGH  # an int subclass is kept, not copied or converted
    assert frozen["other"] is decimal  # not a JSON type: kept for the serialiser to refuse
    source["tuple"][1][1]["x"] = "changed later"
    assert frozen["tuple"][1][1]["x"] == [3]  # a copy, not a view


def test_the_encoder_ready_freeze_uses_its_own_types_at_every_level() -> None:
    frozen = freeze_encoder_ready([{"a": [1, {"b": []}]}, ()], max_depth=8)
    assert type(frozen) is EncoderReadyList
    assert type(frozen[0]) is EncoderReadyDict
    assert type(frozen[0]["a"]) is EncoderReadyList
    assert type(frozen[0]["a"][1]["b"]) is EncoderReadyList
    assert type(frozen[1]) is EncoderReadyList


@pytest.mark.parametrize("freezer", [freeze, freeze_encoder_ready])
def test_nesting_is_limited_like_the_strict_parser(freezer: Any) -> None:
    assert freezer(_nest(3), max_depth=4) == _nest(3)  # four containers: the top one is depth 1
    for value, limit in ((_nest(4), 4), ({"a": {"b": {}}}, 2), (_nest(100_000), 1_000_000)):
        with pytest.raises(InvalidInput) as refused:
            freezer(value, max_depth=limit)
        assert (refused.value.code, refused.value.fields["limit"]) == ("too_deep", limit)


def test_scalars_alone_are_returned_as_they_are() -> None:
    for scalar in ("x", 1, 1.5, False, None):
        assert freeze(scalar, max_depth=1) is scalar


def test_frozen_containers_refuse_every_change_and_copy_to_themselves() -> None:
    frozen = freeze({"a": [1, 2]}, max_depth=4)
    with pytest.raises(TypeError, match="read-only"):
        frozen["b"] = 1
    with pytest.raises(TypeError, match="read-only"):
        frozen["a"].append(3)
    assert copy.copy(frozen) is frozen
    assert copy.deepcopy(frozen) is frozen
    restored = pickle.loads(pickle.dumps(frozen))
    assert restored == frozen
    assert type(restored) is FrozenJSONDict
    assert type(restored["a"]) is FrozenJSONList


def test_thaw_gives_a_plain_mutable_deep_copy() -> None:
    frozen = freeze({"a": [1, {"b": (2,)}]}, max_depth=4)
    plain = thaw(frozen)
    assert plain == {"a": [1, {"b": [2]}]}
    assert type(plain) is dict
    assert type(plain["a"]) is list
    assert type(plain["a"][1]) is dict
    plain["a"].append(3)
    assert frozen["a"] == [1, {"b": [2]}]
