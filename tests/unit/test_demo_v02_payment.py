"""The demo's v0.2 shopping agent pays what the merchant signed, and only once the signature holds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mudrika.cli._demo._identities import Provisioned, provision_parties
from mudrika.cli._demo._v02 import ITEMS, close_mandates, issue_open_mandates, merchant_offer, merchant_settle
from mudrika.crypto.b64url import b64url_decode
from mudrika.errors import SignatureError
from mudrika.payments.v02 import sign_checkout_jwt
from mudrika.stores.replay import MemoryReplayStore


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Provisioned:
    out: Path = tmp_path_factory.mktemp("demo")
    return provision_parties(out, merchant_endpoint="http://127.0.0.1:9/a2a")


def test_the_payment_amount_is_the_total_of_the_signed_checkout(world: Provisioned) -> None:
    now = time.time()
    roots = issue_open_mandates(world, now=now)
    offer, checkout_nonce, payment_nonce = merchant_offer(world.merchant, list(ITEMS))
    checkout_chain, payment_chain = close_mandates(
        roots, offer, shopper=world.shopper, merchant=world.merchant, now=now
    )
    sale = merchant_settle(
        world.merchant,
        checkout_chain,
        payment_chain,
        trust_root=world.trust_root,
        checkout_nonce=checkout_nonce,
        payment_nonce=payment_nonce,
        replay_store=MemoryReplayStore(),
    )
    assert (sale.total_minor, sale.currency) == (sum(price * n for _, price, n in ITEMS.values()), "USD")


def test_a_checkout_the_merchant_did_not_sign_is_not_paid(world: Provisioned) -> None:
    now = time.time()
    roots = issue_open_mandates(world, now=now)
    offer, _, _ = merchant_offer(world.merchant, list(ITEMS))
    checkout = json.loads(b64url_decode(str(offer["checkout_jwt"]).split(".")[1]))
    checkout["totals"] = [{"type": "subtotal", "amount": 1}, {"type": "total", "amount": 1}]
    forged = {**offer, "checkout_jwt": sign_checkout_jwt(checkout, merchant_key=world.shopper.key, kid="k")}
    with pytest.raises(SignatureError):
        close_mandates(roots, forged, shopper=world.shopper, merchant=world.merchant, now=now)
