"""TrustLevel: total order, parsing, and refusal to compare against anything that is not a level."""

from __future__ import annotations

import itertools

import pytest

from mudrika.errors import InvalidInput
from mudrika.trust.levels import TrustLevel, parse

HIGHEST_FIRST = [
    TrustLevel.SUPER_ADMIN,
    TrustLevel.ADMIN,
    TrustLevel.MANAGER,
    TrustLevel.OPERATOR,
    TrustLevel.EDITOR,
    TrustLevel.ANALYST,
    TrustLevel.AUDITOR,
    TrustLevel.SUPPORT,
    TrustLevel.VIEWER,
    TrustLevel.GUEST,
]


def test_documented_order_is_the_sort_order() -> None:
    assert sorted(TrustLevel, reverse=True) == HIGHEST_FIRST
    assert max(TrustLevel) is TrustLevel.SUPER_ADMIN
    assert min(TrustLevel) is TrustLevel.GUEST


@pytest.mark.parametrize(("higher", "lower"), [(a, b) for a, b in itertools.combinations(HIGHEST_FIRST, 2)])
def test_every_pair_compares_by_rank(higher: TrustLevel, lower: TrustLevel) -> None:
    assert higher > lower
    assert higher >= lower
    assert lower < higher
    assert lower <= higher
    assert not higher < lower
    assert not lower > higher
    assert not lower >= higher
    assert not higher <= lower
    assert higher != lower


@pytest.mark.parametrize("level", list(TrustLevel))
def test_reflexive_comparisons(level: TrustLevel) -> None:
    assert level <= level
    assert level >= level
    assert not level < level
    assert not level > level


def test_example_from_the_brief() -> None:
    assert TrustLevel.ADMIN > TrustLevel.VIEWER


def test_ranks_are_zero_for_guest_to_nine_for_super_admin() -> None:
    assert [level.rank for level in reversed(HIGHEST_FIRST)] == list(range(10))


@pytest.mark.parametrize("level", list(TrustLevel))
def test_value_is_snake_name_and_equals_its_string(level: TrustLevel) -> None:
    assert level.value == level.name.lower()
    assert level == level.value
    assert hash(level) == hash(level.value)
    lookup: dict[str, int] = {level.value: 1}
    assert lookup[level] == 1
    assert str(level) == level.value


@pytest.mark.parametrize("other", ["admin", "zzz", 3, 3.5, None, b"admin"])
def test_ordering_against_non_levels_raises(other: object) -> None:
    admin = TrustLevel.ADMIN
    with pytest.raises(TypeError, match="cannot order TrustLevel"):
        _ = admin < other
    with pytest.raises(TypeError):
        _ = admin >= other
    with pytest.raises(TypeError):
        _ = other > admin


def test_string_on_the_left_does_not_fall_back_to_alphabetical_order() -> None:
    # "zzz" > "admin" alphabetically; the reflected TrustLevel method must refuse instead.
    with pytest.raises(TypeError):
        _ = TrustLevel.ADMIN < "zzz"
    with pytest.raises(TypeError):
        _ = TrustLevel.ADMIN > "a"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("admin", TrustLevel.ADMIN),
        ("ADMIN", TrustLevel.ADMIN),
        ("  Manager\n", TrustLevel.MANAGER),
        ("super_admin", TrustLevel.SUPER_ADMIN),
        ("super-admin", TrustLevel.SUPER_ADMIN),
        ("Super-Admin", TrustLevel.SUPER_ADMIN),
        ("\tguest ", TrustLevel.GUEST),
        ("viewer", TrustLevel.VIEWER),
    ],
)
def test_parse_accepts_case_space_and_dash(text: str, expected: TrustLevel) -> None:
    assert parse(text) is expected
    assert TrustLevel.parse(text) is expected


def test_parse_returns_members_unchanged() -> None:
    assert parse(TrustLevel.AUDITOR) is TrustLevel.AUDITOR


@pytest.mark.parametrize(
    "text", ["", "   ", "root", "admins", "super admin", "super__admin", "adm in", "ädmin"]
)
def test_parse_rejects_unknown_names_listing_valid_values(text: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse(text)
    assert info.value.code == "invalid_trust_level"
    message = info.value.message
    for level in TrustLevel:
        assert level.value in message
    # Listed highest first, as documented.
    assert message.index("super_admin") < message.index("guest")


def test_parse_error_carries_structured_fields() -> None:
    with pytest.raises(InvalidInput) as info:
        parse(" Root ")
    assert info.value.fields["got"] == "Root"
    assert info.value.fields["valid"][0] == "super_admin"


@pytest.mark.parametrize("value", [None, 5, b"admin", ["admin"]])
def test_parse_rejects_non_strings(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        parse(value)  # type: ignore[arg-type]
    assert info.value.code == "invalid_trust_level"


def test_parse_rejects_overlong_input() -> None:
    with pytest.raises(InvalidInput, match="too long"):
        parse("admin" + " " * 100)
