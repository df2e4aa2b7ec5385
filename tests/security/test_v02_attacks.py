"""Attacks on v0.2 chains beyond the SDK's gaps: splicing, type confusion, algorithm and hash
substitution, stale mandates, pre-set values, receipts (including the spec/SDK ``reference``
mismatch, pinned here)."""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.sdjwt import issue
from mudrika.payments.report import VerificationReport
from mudrika.payments.v02 import (
    VCT_PAYMENT,
    HopExpectation,
    V02Evidence,
    append_hop,
    join_chain,
    sd_digest,
    sign_receipt,
)
from tests._support.ap2_v02 import (
    AGENT_PROVIDER,
    AGENT_PROVIDER_KID,
    CHECKOUT_NONCE,
    MERCHANT_DID,
    MERCHANT_KID,
    Transaction,
    build,
    inspect,
    refused,
    replace_hop_jwt,
    resign,
)

pytestmark = pytest.mark.security


def checkout_only(transaction: Transaction, chain: str) -> VerificationReport:
    return inspect(transaction, V02Evidence(checkout_chain=chain), payment_hops=())


def raw_hop(transaction: Transaction, claims: dict[str, Any], *, typ: str, key: KeyPair | None = None) -> str:
    """A terminal hop over the checkout root with exactly ``claims`` (signed, disclosable delegate)."""
    hop = issue(
        claims,
        issuer_key=key or transaction.keys.agent,
        kid=None,
        disclosable=["/delegate_payload/0"],
        holder_key=None,
        typ=typ,
        alg="ES256",
    )
    return join_chain([transaction.checkout_root, hop.compact()])


def hop_claims(transaction: Transaction, **changes: Any) -> dict[str, Any]:
    claims: dict[str, Any] = {
        "delegate_payload": [dict(transaction.closed_checkout)],
        "iat": transaction.now,
        "aud": MERCHANT_DID,
        "nonce": CHECKOUT_NONCE,
        "sd_hash": sd_digest(transaction.checkout_root),
    }
    claims.update(changes)
    return {name: value for name, value in claims.items() if value is not None}


def test_the_raw_hop_builder_makes_an_acceptable_hop() -> None:
    transaction = build()
    assert checkout_only(transaction, raw_hop(transaction, hop_claims(transaction), typ="kb+sd-jwt")).ok


def test_a_hop_spliced_onto_another_root_breaks_its_binding() -> None:
    first, second = build(), build()
    second_hop = second.checkout_chain.split("~~")[1]
    spliced = first.checkout_root[:-1] + "~~" + second_hop
    report = checkout_only(first, spliced)
    # The hop is signed by another agent key than the first root's cnf names.
    assert report.by_id("v02.checkout.hop1.signature").failed


def test_both_binding_claims_or_neither_is_refused() -> None:
    transaction = build()
    both = hop_claims(transaction, issuer_jwt_hash=sd_digest(transaction.checkout_root.split("~")[0]))
    refused(
        checkout_only(transaction, raw_hop(transaction, both, typ="kb+sd-jwt")),
        "v02.checkout.hop1.binding",
        "binding_claims",
    )
    neither = hop_claims(transaction, sd_hash=None)
    refused(
        checkout_only(transaction, raw_hop(transaction, neither, typ="kb+sd-jwt")),
        "v02.checkout.hop1.binding",
        "binding_claims",
    )
    wrong = hop_claims(transaction, sd_hash=sd_digest("another presentation"))
    refused(
        checkout_only(transaction, raw_hop(transaction, wrong, typ="kb+sd-jwt")),
        "v02.checkout.hop1.binding",
        "sd_hash_mismatch",
    )


def test_type_confusion_is_refused() -> None:
    transaction = build()
    refused(
        checkout_only(transaction, raw_hop(transaction, hop_claims(transaction), typ="kb+sd-jwt+kb")),
        "v02.checkout.hop1.typ",
        "wrong_typ",
    )
    refused(
        checkout_only(transaction, raw_hop(transaction, hop_claims(transaction), typ="kb+jwt")),
        "v02.checkout.hop1.typ",
        "wrong_typ",
    )
    with_cnf = hop_claims(transaction)
    with_cnf["delegate_payload"] = [
        {**transaction.closed_checkout, "cnf": {"jwk": KeyPair.generate(KeyType.P256).public_key.to_jwk()}}
    ]
    refused(
        checkout_only(transaction, raw_hop(transaction, with_cnf, typ="kb+sd-jwt")),
        "v02.checkout.hop1.schema",
        "malformed_mandate",
    )
    payment_in_checkout_chain = hop_claims(transaction)
    payment_in_checkout_chain["delegate_payload"] = [dict(transaction.closed_payment)]
    refused(
        checkout_only(transaction, raw_hop(transaction, payment_in_checkout_chain, typ="kb+sd-jwt")),
        "v02.checkout.hop1.vct",
        "wrong_vct",
    )
    assert transaction.closed_payment["vct"] == VCT_PAYMENT


def test_a_hop_signed_by_a_key_other_than_cnf_fails() -> None:
    transaction = build()
    chain = raw_hop(transaction, hop_claims(transaction), typ="kb+sd-jwt", key=KeyPair.generate(KeyType.P256))
    assert checkout_only(transaction, chain).by_id("v02.checkout.hop1.signature").error == "signature"


@pytest.mark.parametrize("alg", ["none", "HS256", "ES384", "EdDSA"])
def test_hop_algorithms_other_than_es256_are_refused(alg: str) -> None:
    transaction = build()
    hop_jwt = transaction.checkout_chain.split("~~")[1].split("~")[0]
    forged = resign(hop_jwt, transaction.keys.agent, header={"alg": alg})
    report = checkout_only(transaction, replace_hop_jwt(transaction.checkout_chain, 1, forged))
    assert report.by_id("v02.checkout.hop1.signature").failed


def test_an_unaccepted_sd_alg_is_refused() -> None:
    transaction = build()
    hop_jwt = transaction.checkout_chain.split("~~")[1].split("~")[0]
    forged = resign(hop_jwt, transaction.keys.agent, payload={"_sd_alg": "sha-512"})
    refused(
        checkout_only(transaction, replace_hop_jwt(transaction.checkout_chain, 1, forged)),
        "v02.checkout.hop1.sd_alg",
        "unsupported_sd_alg",
    )


def test_unknown_top_level_claims_and_extra_delegates_are_refused() -> None:
    transaction = build()
    refused(
        checkout_only(
            transaction, raw_hop(transaction, hop_claims(transaction, amount_override=1), typ="kb+sd-jwt")
        ),
        "v02.checkout.hop1.claims",
        "unknown_claim",
    )
    two = hop_claims(transaction)
    two["delegate_payload"] = [dict(transaction.closed_checkout), dict(transaction.closed_checkout)]
    hop = issue(
        two,
        issuer_key=transaction.keys.agent,
        kid=None,
        disclosable=["/delegate_payload/0", "/delegate_payload/1"],
        holder_key=None,
        typ="kb+sd-jwt",
        alg="ES256",
    )
    chain = join_chain([transaction.checkout_root, hop.compact()])
    refused(checkout_only(transaction, chain), "v02.checkout.hop1.delegate", "bad_delegate_payload")


def test_expired_open_mandates_and_future_hops_are_refused() -> None:
    transaction = build()
    refused(
        inspect(
            transaction, transaction.evidence(payment=False), payment_hops=(), now=transaction.now + 3600
        ),
        "v02.checkout.hop0.time",
        "expired",
    )
    future = hop_claims(transaction, iat=transaction.now + 60)
    refused(
        checkout_only(transaction, raw_hop(transaction, future, typ="kb+sd-jwt")),
        "v02.checkout.hop1.iat",
        "iat_in_future",
    )


def test_an_open_mandate_without_exp_is_refused() -> None:
    # Our signer refuses to issue one, so the root is made with the raw SD-JWT issuer.
    transaction = build()
    content = {name: value for name, value in transaction.open_checkout.items() if name != "exp"}
    root = issue(
        {"iss": AGENT_PROVIDER, "iat": transaction.now, "delegate_payload": [content]},
        issuer_key=transaction.keys.issuer,
        kid=AGENT_PROVIDER_KID,
        disclosable=["/delegate_payload/0"],
        holder_key=None,
        typ="dc+sd-jwt",
    )
    chain = append_hop(
        root.compact(),
        transaction.closed_checkout,
        holder_key=transaction.keys.agent,
        audience=MERCHANT_DID,
        nonce=CHECKOUT_NONCE,
        now=transaction.now,
    )
    refused(checkout_only(transaction, chain), "v02.checkout.hop0.time", "open_mandate_without_exp")


def test_closed_mandates_repeat_every_preset_value() -> None:
    other_instrument = {"id": "pi-other", "type": "card"}
    transaction = build(closed_payment_hook=lambda closed: closed.update(payment_instrument=other_instrument))
    refused(inspect(transaction), "v02.payment.preset", "preset_changed")
    dropped = build(open_payment_hook=lambda mandate: mandate.update(execution_date="2026-04-01"))
    refused(inspect(dropped), "v02.payment.preset", "preset_missing")


def test_the_payment_must_pay_the_checkout_total_to_its_merchant() -> None:
    cheaper = build(
        closed_payment_hook=lambda closed: closed.update(payment_amount={"amount": 100, "currency": "USD"})
    )
    refused(inspect(cheaper), "v02.payment.amount", "amount_mismatch")
    elsewhere = build(
        closed_payment_hook=lambda closed: closed.update(
            payee={"id": "did:web:attacker.example", "name": "A"}
        )
    )
    refused(inspect(elsewhere), "v02.payment.payee", "payee_mismatch")


def test_an_unknown_constraint_fails_the_mandate() -> None:
    transaction = build(
        open_payment_hook=lambda mandate: mandate["constraints"].append({"type": "com.example.tip"})
    )
    refused(inspect(transaction), "v02.payment.hop0.constraint4", "unknown_constraint")


def test_an_untrusted_merchant_cannot_sign_the_checkout() -> None:
    transaction = build(
        checkout_hook=lambda checkout: checkout["merchant"].update(id="did:web:unpinned.example")
    )
    refused(
        inspect(transaction, transaction.evidence(receipts=False)),
        "v02.checkout.merchant_signature",
        "untrusted_merchant",
    )


def test_receipt_reference_follows_the_specification_not_the_sdk() -> None:
    # The SDK's samples hash the closing hop's JWT alone (MandateClient.get_closed_mandate_jwt ->
    # compute_sha256_b64url); the specification hashes the closed mandate "in the same manner as the
    # sd_hash" (the hop's SD-JWT form).  We follow the specification and name the SDK's form.
    sdk_style: dict[str, str] = {}

    def sdk_reference(claims: dict[str, Any]) -> None:
        sdk_style["reference"] = claims["reference"]

    transaction = build(checkout_receipt_hook=sdk_reference)
    closing_hop = transaction.checkout_chain.rsplit("~~", 1)[1]
    assert sdk_style["reference"] == sd_digest(closing_hop)
    assert sd_digest(closing_hop) != sd_digest(closing_hop.split("~")[0])
    jwt_only = sign_receipt(
        {
            "status": "Success",
            "iss": MERCHANT_DID,
            "iat": transaction.now,
            "reference": sd_digest(closing_hop.split("~")[0]),
            "order_id": "order-1",
        },
        kind="checkout",
        key=transaction.keys.merchant,
        kid=MERCHANT_KID,
    )
    evidence = V02Evidence(checkout_chain=transaction.checkout_chain, checkout_receipt=jwt_only)
    refused(
        inspect(transaction, evidence, payment_hops=()),
        "v02.receipt.checkout.reference",
        "receipt_reference_is_jwt_hash",
    )


def test_receipts_are_signed_by_the_party_the_trust_root_pins() -> None:
    transaction = build()
    stranger = sign_receipt(
        {
            "status": "Success",
            "iss": MERCHANT_DID,
            "iat": transaction.now,
            "reference": "R" * 43,
            "order_id": "o",
        },
        kind="checkout",
        key=KeyPair.generate(KeyType.P256),
        kid=MERCHANT_KID,
    )
    evidence = V02Evidence(checkout_chain=transaction.checkout_chain, checkout_receipt=stranger)
    assert (
        inspect(transaction, evidence, payment_hops=()).by_id("v02.receipt.checkout.signature").error
        == "signature"
    )
    error = build(
        checkout_receipt_hook=lambda claims: claims.update(
            status="Error", error="invalid_mandate", error_description="refused", order_id=None
        )
    )
    # The receipt schema lets an Error receipt carry ``order_id: null``; it is still read as an error.
    assert error.checkout_receipt
    refused(inspect(error), "v02.receipt.checkout.status", "receipt_error")


def test_an_error_receipt_says_the_transaction_did_not_complete() -> None:
    def as_error(claims: dict[str, Any]) -> None:
        claims.update(status="Error", error="invalid_mandate", error_description="refused")
        del claims["order_id"]

    transaction = build(checkout_receipt_hook=as_error)
    refused(inspect(transaction), "v02.receipt.checkout.status", "receipt_error")


def test_a_receipt_from_another_issuer_than_the_checkout_merchant_is_refused() -> None:
    transaction = build(checkout_receipt_hook=lambda claims: claims.update(iss="did:web:other.example"))
    refused(inspect(transaction), "v02.receipt.checkout.signature", "wrong_receipt_issuer")


def test_an_intermediate_hop_must_name_the_next_key() -> None:
    transaction = build()
    middle = append_hop(
        transaction.checkout_root,
        {**transaction.open_checkout, "cnf": {"jwk": KeyPair.generate(KeyType.P256).public_key.to_jwk()}},
        holder_key=transaction.keys.agent,
        audience="https://sub-agent.example",
        nonce="n",
        now=transaction.now,
    )
    # A closed mandate appended by the *first* agent, not the delegate the middle hop named.
    chain = append_hop(
        middle,
        transaction.closed_checkout,
        holder_key=transaction.keys.agent,
        audience=MERCHANT_DID,
        nonce="n2",
        now=transaction.now,
    )
    hops = (HopExpectation("https://sub-agent.example", "n"), HopExpectation(MERCHANT_DID, "n2"))
    report = inspect(transaction, V02Evidence(checkout_chain=chain), checkout_hops=hops, payment_hops=())
    assert report.by_id("v02.checkout.hop2.signature").error == "signature"


def test_party_values_in_statements_cannot_drive_a_terminal() -> None:
    hostile = {"id": "pi-card-1", "type": "card\x1b[2J\nOK: forged"}

    def instrument(mandate: dict[str, Any]) -> None:
        mandate["payment_instrument"] = dict(hostile)

    transaction = build(open_payment_hook=instrument, closed_payment_hook=instrument)
    report = inspect(transaction)
    text = " ".join(report.statements)
    assert "\x1b" not in text
    assert "\n" not in text
    assert "\\x1b[2J\\x0aOK: forged" in text
