"""The A2A-Extensions header parsing and the AP2 URI copies in trust (equal to payments')."""

from __future__ import annotations

import pytest

from mudrika.errors import InvalidInput
from mudrika.payments import a2a as payments_a2a
from mudrika.trust.a2a.extensions import (
    AP2_V01_EXTENSION_URI,
    AP2_V02_EXTENSION_URI,
    AP2_VERSION_FOR_URI,
    MAX_EXTENSIONS,
    ap2_versions,
    requested_extensions,
)


def test_trust_copies_equal_the_payments_uris() -> None:
    assert payments_a2a.AP2_EXTENSION_URI == AP2_V01_EXTENSION_URI
    assert payments_a2a.AP2_V02_EXTENSION_URI == AP2_V02_EXTENSION_URI
    assert frozenset(AP2_VERSION_FOR_URI) == payments_a2a.AP2_EXTENSION_URIS


def test_header_values_are_split_and_trimmed() -> None:
    values = [f" {AP2_V02_EXTENSION_URI} ,https://example.com/geo/v1", "", f"{AP2_V01_EXTENSION_URI},,"]
    extensions = requested_extensions(values)
    assert extensions == {AP2_V01_EXTENSION_URI, AP2_V02_EXTENSION_URI, "https://example.com/geo/v1"}
    assert ap2_versions(extensions) == {"0.1", "0.2"}
    assert ap2_versions(["https://example.com/geo/v1"]) == frozenset()


@pytest.mark.parametrize(
    ("values", "code"),
    [
        ([",".join(f"https://e.example/{n}" for n in range(MAX_EXTENSIONS + 1))], "too_many_extensions"),
        (["https://e.example/" + "a" * 600], "bad_extension_uri"),
        (["https://e.example/a b"], "bad_extension_uri"),
        (["https://e.example/\x00"], "bad_extension_uri"),
    ],
)
def test_attacker_sized_headers_are_refused(values: list[str], code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        requested_extensions(values)
    assert info.value.code == code
