"""An independent SD-JWT implementation (node ``@sd-jwt/core``, tests/node) reads every token of our
v0.2 chains: the root with the issuer's key, each hop with the key the previous token's ``cnf``
names, and recovers the same mandates we signed."""

from __future__ import annotations

from typing import Any

import pytest

from tests._support.ap2_v02 import build
from tests._support.node import run_node_peer

pytestmark = pytest.mark.interop


def node_verify(token: str, public_jwk: dict[str, Any], now: int) -> dict[str, Any]:
    request = {"presentation": token, "issuer_public_jwk": public_jwk, "nonce": None, "now": now}
    decoded = run_node_peer("sdjwt_verify.mjs", request)
    assert isinstance(decoded, dict)
    return decoded


def test_node_reads_every_token_of_both_chains() -> None:
    transaction = build()
    for chain, open_content, closed_content in (
        (transaction.checkout_chain, transaction.open_checkout, transaction.closed_checkout),
        (transaction.payment_chain, transaction.open_payment, transaction.closed_payment),
    ):
        root, hop = chain.split("~~")
        read_root = node_verify(root + "~", transaction.keys.issuer.public_key.to_jwk(), transaction.now)
        assert read_root["ok"], read_root.get("error")
        assert read_root["payload"]["delegate_payload"] == [open_content]
        next_key = read_root["payload"]["delegate_payload"][0]["cnf"]["jwk"]
        read_hop = node_verify(hop, next_key, transaction.now)
        assert read_hop["ok"], read_hop.get("error")
        assert read_hop["header"]["typ"] == "kb+sd-jwt"
        assert read_hop["payload"]["delegate_payload"] == [closed_content]
        # A hop checked with a key other than the one cnf names is refused by the peer too.
        wrong = node_verify(hop, transaction.keys.issuer.public_key.to_jwk(), transaction.now)
        assert not wrong["ok"]
