"""The ``~~`` chain wire form: splitting, joining and the caps applied before decoding."""

from __future__ import annotations

import pytest

from mudrika.errors import InvalidInput
from mudrika.payments.v02 import join_chain, parse_chain, receipt_reference, sd_digest
from tests._support.ap2_v02 import build


def test_a_chain_splits_into_root_and_hops_with_their_sd_jwt_forms() -> None:
    transaction = build()
    chain = parse_chain(transaction.checkout_chain)
    assert chain.hop_count == 1
    assert chain.tokens[0].sd_jwt == transaction.checkout_root
    assert chain.tokens[1].sd_jwt == transaction.checkout_chain.split("~~")[1]
    assert join_chain([token.sd_jwt for token in chain.tokens]) == transaction.checkout_chain


def test_sd_digest_is_base64url_sha256_without_padding() -> None:
    # SHA-256("abc") = ba7816bf...; base64url without '='.
    assert sd_digest("abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("a.b.c~", "malformed_chain"),  # no hop
        ("a.b.c~~d.e.f", "malformed_chain"),  # last hop without '~' (a KB-JWT would sit here)
        ("a.b.c~~~d.e.f~", "malformed_chain"),  # empty token
        ("~~d.e.f~", "malformed_chain"),
        ("a.b~~d.e.f~", "malformed_sd_jwt"),  # not a compact JWS
        ("a.b.c~d!~~d.e.f~", "malformed_sd_jwt"),  # disclosure outside base64url
    ],
)
def test_malformed_chains_are_invalid_input(text: str, code: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_chain(text)
    assert caught.value.code == code


def test_caps_apply_before_decoding() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_chain("a.b.c~" * 10 + "~~d.e.f~", max_bytes=32)
    assert caught.value.code == "too_large"
    with pytest.raises(InvalidInput) as caught:
        parse_chain("~~".join(["a.b.c"] * 5) + "~", max_hops=3)
    assert caught.value.code == "too_many_hops"
    with pytest.raises(InvalidInput) as caught:
        parse_chain("a.b.c~~d.e.\xe9~".encode("latin-1"))
    assert caught.value.code == "malformed_chain"


def test_join_needs_complete_tokens() -> None:
    with pytest.raises(InvalidInput):
        join_chain(["a.b.c~"])
    with pytest.raises(InvalidInput):
        join_chain(["a.b.c~", "d.e.f"])


def test_a_receipt_references_the_closing_hop_as_presented() -> None:
    transaction = build()
    closing_hop = parse_chain(transaction.payment_chain).tokens[-1].sd_jwt
    assert receipt_reference(transaction.payment_chain) == sd_digest(closing_hop)
    with pytest.raises(InvalidInput) as caught:
        receipt_reference(transaction.payment_root)
    assert caught.value.code == "malformed_chain"
