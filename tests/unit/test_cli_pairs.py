"""``NAME=VALUE`` option values: where each kind of value is split, and what is refused."""

from __future__ import annotations

import click
import pytest

from mudrika.cli._common import split_at_known_names, split_pairs


def test_split_pairs_splits_at_the_last_equals_sign() -> None:
    # A name (a URI with a query) may hold '='; a file path does not.
    assert split_pairs(("https://i.example/?t=a=jwks.json",), option="--jwks", form="NAME=FILE") == [
        ("https://i.example/?t=a", "jwks.json")
    ]


@pytest.mark.parametrize("value", ["no-sign", "=file", "name="])
def test_split_pairs_refuses_a_value_without_both_sides(value: str) -> None:
    with pytest.raises(click.BadParameter, match="use NAME=FILE"):
        split_pairs((value,), option="--jwks", form="NAME=FILE")


def test_known_names_decide_where_the_name_ends() -> None:
    names = {"did:web:m.example", "https://i.example/?t=a"}
    values = ("did:web:m.example=https GET https://m.example/did.json?v=2", "https://i.example/?t=a=x=y")
    assert split_at_known_names(values, names, option="--via", form="OWNER=TEXT", what="owner") == [
        ("did:web:m.example", "https GET https://m.example/did.json?v=2"),
        ("https://i.example/?t=a", "x=y"),
    ]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("did:web:other.example=x", "names no owner"),
        ("did:web:m.example=", "nothing follows"),
        ("a=b=c", "could name more than one owner"),
        ("no-sign", "names no owner"),
    ],
)
def test_known_names_refuse_what_names_none_or_two(value: str, problem: str) -> None:
    with pytest.raises(click.BadParameter, match=problem):
        split_at_known_names(
            (value,), {"did:web:m.example", "a", "a=b"}, option="--via", form="OWNER=TEXT", what="owner"
        )
