"""The merchant-signed checkout JWT and the bindings around it, checked one by one."""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import BindingError, InvalidInput, MudrikaError, UntrustedKeyError, VerificationError
from mudrika.payments.v02 import sign_checkout_jwt
from mudrika.payments.v02.bindings import check_checkout_hash, verify_checkout_jwt
from mudrika.payments.v02.models import CheckoutMandate
from tests._support.ap2_v02 import MERCHANT_KID, build, resign

CLOSED_AT = 1_777_636_800


def checkout_jwt(transaction: Any, **changes: Any) -> str:
    return sign_checkout_jwt(
        {**transaction.checkout, **changes}, merchant_key=transaction.keys.merchant, kid=MERCHANT_KID
    )


def refused(token: str, transaction: Any, code: str, kind: type[MudrikaError] = VerificationError) -> None:
    with pytest.raises(kind) as caught:
        verify_checkout_jwt(token, trust_root=transaction.trust_root, closed_at=CLOSED_AT)
    assert caught.value.code == code


def test_a_merchant_signed_checkout_verifies_and_names_its_key() -> None:
    transaction = build()
    verified = verify_checkout_jwt(
        transaction.checkout_jwt, trust_root=transaction.trust_root, closed_at=CLOSED_AT
    )
    assert verified.checkout.total.amount == 20900
    assert verified.key == MERCHANT_KID
    assert verified.thumbprint == transaction.keys.merchant.public_key.thumbprint()


def test_the_checkout_is_judged_when_the_mandate_closed_it() -> None:
    transaction = build()
    verify_checkout_jwt(
        checkout_jwt(
            transaction, exp=CLOSED_AT + 1, nbf=CLOSED_AT, iat=CLOSED_AT, expires_at="2026-05-01T12:00:00Z"
        ),
        trust_root=transaction.trust_root,
        closed_at=CLOSED_AT,
    )
    refused(checkout_jwt(transaction, exp=CLOSED_AT), transaction, "checkout_expired")
    refused(checkout_jwt(transaction, expires_at="2026-05-01T11:59:59Z"), transaction, "checkout_expired")
    refused(checkout_jwt(transaction, nbf=CLOSED_AT + 1), transaction, "not_yet_valid")
    refused(checkout_jwt(transaction, iat=CLOSED_AT + 1), transaction, "checkout_after_mandate")
    refused(checkout_jwt(transaction, exp="soon"), transaction, "bad_time_claim", InvalidInput)
    refused(
        checkout_jwt(transaction, expires_at="2026-05-01T12:00:00"), transaction, "bad_datetime", InvalidInput
    )
    with pytest.raises(VerificationError):
        verify_checkout_jwt(transaction.checkout_jwt, trust_root=transaction.trust_root, closed_at=None)


def test_only_the_pinned_merchant_key_counts() -> None:
    transaction = build()
    refused(
        resign(transaction.checkout_jwt, transaction.keys.merchant, header={"kid": None}),
        transaction,
        "no_kid",
        UntrustedKeyError,
    )
    refused(
        resign(transaction.checkout_jwt, transaction.keys.merchant, header={"kid": MERCHANT_DID_OTHER_KEY}),
        transaction,
        "key_not_pinned",
        UntrustedKeyError,
    )
    refused(
        resign(transaction.checkout_jwt, transaction.keys.merchant, header={"jwk": {"kty": "EC"}}),
        transaction,
        "jwk_refused",
        UntrustedKeyError,
    )
    eddsa = sign_jwt(transaction.checkout, KeyPair.generate(KeyType.ED25519), kid=MERCHANT_KID)
    with pytest.raises(VerificationError):
        verify_checkout_jwt(eddsa, trust_root=transaction.trust_root, closed_at=CLOSED_AT)
    nameless = dict(transaction.checkout)
    del nameless["merchant"]
    refused(
        sign_jwt(nameless, transaction.keys.merchant, kid=MERCHANT_KID),
        transaction,
        "checkout_without_merchant",
        InvalidInput,
    )


MERCHANT_DID_OTHER_KEY = MERCHANT_KID.replace("#key-1", "#key-2")


def test_checkout_hash_is_recomputed() -> None:
    transaction = build()
    closed = CheckoutMandate.model_validate(transaction.closed_checkout)
    assert check_checkout_hash(closed) == transaction.closed_checkout["checkout_hash"]
    other = CheckoutMandate.model_validate(
        {**transaction.closed_checkout, "checkout_jwt": transaction.checkout_jwt + "x"}
    )
    with pytest.raises(BindingError) as caught:
        check_checkout_hash(other)
    assert caught.value.code == "checkout_hash_mismatch"


def test_signers_refuse_what_the_verifier_would_refuse() -> None:
    transaction = build()
    with pytest.raises(InvalidInput):
        sign_checkout_jwt(
            transaction.checkout, merchant_key=KeyPair.generate(KeyType.ED25519), kid=MERCHANT_KID
        )
    with pytest.raises(InvalidInput):
        sign_checkout_jwt(
            {**transaction.checkout, "merchant": None}, merchant_key=transaction.keys.merchant, kid="k"
        )
