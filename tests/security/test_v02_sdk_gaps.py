"""One attack per gap of the official AP2 v0.2 Python SDK: each is accepted by the SDK's checks
(at the location named in docs/ap2-v02.md "SDK gaps") and refused by ours.

The SDK is not on PyPI (PyPI ``ap2`` is an unrelated v0.1 repackaging), so the test command cannot
install it.  Each attack is therefore first run through :mod:`tests._support.sdk_checks`, which makes
exactly the checks the SDK's verification path makes, on the libraries the SDK is built on (PyPI
``sd-jwt``, ``jwcrypto``), with the optional arguments a caller may leave out left out: it must
accept.  Then ours must refuse, with the named check and code.
"""

from __future__ import annotations

import base64
import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID
from jwcrypto.jwk import JWK  # type: ignore[import-untyped]
from jwcrypto.jws import InvalidJWSSignature  # type: ignore[import-untyped]

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import ReplayError
from mudrika.payments.v02 import (
    HopExpectation,
    V02Evidence,
    append_hop,
    inspect_v02,
    sd_digest,
    sign_checkout_jwt,
    verify_v02,
)
from mudrika.stores.replay import MemoryReplayStore
from tests._support.ap2_v02 import (
    CHECKOUT_NONCE,
    CP_AUDIENCE,
    MERCHANT_DID,
    MERCHANT_KID,
    PAYMENT_NONCE,
    Keys,
    Transaction,
    build,
    inspect,
    refused,
    replace_hop_jwt,
    resign,
    trust_root_for,
)
from tests._support.sdk_checks import (
    SdkExpectations,
    SdkRefusal,
    verify_chain_like_the_sdk,
    verify_like_the_sdk,
)

pytestmark = pytest.mark.security


def sdk_accepts(
    transaction: Transaction, evidence: V02Evidence | None = None, *, now: int | None = None
) -> None:
    """The SDK's checks pass (they raise ``SdkRefusal`` or a library error otherwise)."""
    accepted = verify_like_the_sdk(
        evidence or transaction.evidence(),
        root_key=issuer_jwk(transaction),
        now=transaction.now if now is None else now,
    )
    assert "checkout" in accepted


def issuer_jwk(transaction: Transaction) -> JWK:
    return JWK(**transaction.keys.issuer.public_key.to_jwk())


def other_checkout_jwt(keys: Keys) -> str:
    """A second checkout the same merchant signed (another price)."""
    base = build(keys=keys).checkout
    base["id"] = "chk_other"
    base["totals"] = [{"type": "subtotal", "amount": 100}, {"type": "total", "amount": 100}]
    return sign_checkout_jwt(base, merchant_key=keys.merchant, kid=MERCHANT_KID)


def test_gap_331_358_checkout_hash_is_recomputed_from_the_presented_checkout() -> None:
    # SDK: CheckoutMandateChain.verify compares checkout_hash only with an optional expected value.
    keys = Keys()
    swapped = other_checkout_jwt(keys)
    transaction = build(
        keys=keys, closed_checkout_hook=lambda closed: closed.update(checkout_hash=sd_digest(swapped))
    )
    sdk_accepts(transaction, transaction.evidence(payment=False))
    refused(
        inspect(transaction, transaction.evidence(payment=False), payment_hops=()),
        "v02.checkout.checkout_hash",
        "checkout_hash_mismatch",
    )


def test_gap_359_the_merchant_signature_on_checkout_jwt_is_verified() -> None:
    # SDK: extract_parsed_checkout_object base64-decodes the payload and never checks the signature.
    real = Keys()
    attacker = Keys(issuer=real.issuer, merchant=KeyPair.generate(KeyType.P256), agent=real.agent)
    forged = build(keys=attacker)  # the checkout JWT is signed by a key that is not the merchant's
    sdk_accepts(forged, forged.evidence(receipts=False))
    report = inspect(forged, forged.evidence(receipts=False), trust_root=trust_root_for(real))
    check = report.by_id("v02.checkout.merchant_signature")
    assert check.failed
    assert check.error == "signature"
    # The SDK's own test fixtures use an unsigned 'hdr.<payload>.sig' checkout JWT: refused too.
    unsigned = "e30." + forged.checkout_jwt.split(".")[1] + ".c2ln"
    fake = build(
        keys=real,
        closed_checkout_hook=lambda closed: closed.update(
            checkout_jwt=unsigned, checkout_hash=sd_digest(unsigned)
        ),
    )
    sdk_accepts(fake, fake.evidence(receipts=False))
    assert inspect(fake, fake.evidence(receipts=False)).by_id("v02.checkout.merchant_signature").failed


def test_gap_328_transaction_id_binds_the_payment_to_the_checkout_always() -> None:
    # SDK: PaymentMandateChain.verify checks transaction_id only when expected_transaction_id is passed.
    keys = Keys()
    elsewhere = sd_digest(other_checkout_jwt(keys))
    transaction = build(keys=keys, closed_payment_hook=lambda closed: closed.update(transaction_id=elsewhere))
    sdk_accepts(transaction)
    refused(inspect(transaction), "v02.payment.transaction_id", "transaction_id_mismatch")


def test_gap_328_payment_reference_is_required_and_matched() -> None:
    # SDK: PaymentReferenceEvaluator needs the optional open_checkout_hash argument.
    unrelated = {"type": "payment.reference", "conditional_transaction_id": "Q" * 43}
    transaction = build(open_payment_hook=lambda mandate: mandate["constraints"].__setitem__(3, unrelated))
    sdk_accepts(transaction)
    refused(inspect(transaction), "v02.payment.hop0.constraint3", "reference_mismatch")
    without = build(open_payment_hook=lambda mandate: mandate["constraints"].pop(3))
    sdk_accepts(without)
    refused(inspect(without), "v02.payment.reference_required", "required_constraint_missing")


def three_token_chain(transaction: Transaction, middle_audience: str) -> str:
    second = KeyPair.generate(KeyType.P256)
    narrower = {**transaction.open_checkout, "cnf": {"jwk": second.public_key.to_jwk()}}
    middle = append_hop(
        transaction.checkout_root,
        narrower,
        holder_key=transaction.keys.agent,
        audience=middle_audience,
        nonce="delegation-nonce",
        now=transaction.now,
    )
    return append_hop(
        middle,
        transaction.closed_checkout,
        holder_key=second,
        audience=MERCHANT_DID,
        nonce=CHECKOUT_NONCE,
        now=transaction.now,
    )


def test_gap_313_aud_and_nonce_are_checked_on_intermediate_hops() -> None:
    # SDK: kb_sd_jwt.verify calls verify_expected_claims only for terminal hops, and chain.verify_chain
    # passes expectations to the last hop only.
    transaction = build()
    chain = three_token_chain(transaction, "https://attacker-agent.example")
    # The SDK's generic delegation verifier (the layer with the gap) takes the terminal expectations:
    terminal = transaction.checkout_hops[0]
    mandates = verify_chain_like_the_sdk(
        chain,
        root_key=issuer_jwk(transaction),
        now=transaction.now,
        expected_aud=terminal.audience,
        expected_nonce=terminal.nonce,
    )
    assert len(mandates) == 3
    hops = (HopExpectation("https://sub-agent.example", "delegation-nonce"), terminal)
    report = inspect(transaction, V02Evidence(checkout_chain=chain), checkout_hops=hops, payment_hops=())
    refused(report, "v02.checkout.hop1.aud", "wrong_aud")


@pytest.mark.parametrize("claim", ["aud", "nonce"])
def test_gap_319_326_aud_and_nonce_are_required_on_every_hop(claim: str) -> None:
    # SDK: a terminal hop missing aud/nonce passes when the caller gave no expectation.
    transaction = build()
    hop_jwt = transaction.checkout_chain.split("~~")[1].split("~")[0]
    stripped = resign(hop_jwt, transaction.keys.agent, payload={claim: None})
    chain = replace_hop_jwt(transaction.checkout_chain, 1, stripped)
    sdk_accepts(transaction, V02Evidence(checkout_chain=chain))
    report = inspect(transaction, V02Evidence(checkout_chain=chain), payment_hops=())
    refused(report, f"v02.checkout.hop1.{claim}", f"{claim}_missing")


def test_gap_319_a_verifier_without_expectations_does_not_accept_a_hop() -> None:
    transaction = build()
    sdk_accepts(transaction, transaction.evidence(payment=False))
    report = inspect(transaction, transaction.evidence(payment=False), checkout_hops=(), payment_hops=())
    refused(report, "v02.checkout.hop1.aud", "no_expectation")


def test_gap_346_one_consent_cannot_pay_twice() -> None:
    # SDK: nothing records an accepted closed Payment Mandate; the same chain verifies again.
    transaction = build()
    arguments = {**transaction.verifier_arguments(), "replay_store": MemoryReplayStore()}
    sdk_accepts(transaction)
    sdk_accepts(transaction)  # the SDK keeps no record: the same consent is accepted again
    verify_v02(transaction.evidence(), **arguments)
    with pytest.raises(ReplayError):
        verify_v02(transaction.evidence(), **arguments)
    # A *new* closed payment made from the same open mandate for the same checkout is refused too.
    again = append_hop(
        transaction.payment_root,
        transaction.closed_payment,
        holder_key=transaction.keys.agent,
        audience=CP_AUDIENCE,
        nonce=PAYMENT_NONCE,
        now=transaction.now + 1,
    )
    fresh_checkout_store = V02Evidence(checkout_chain=transaction.checkout_chain, payment_chain=again)
    report = inspect_v02(fresh_checkout_store, **{**arguments, "now": transaction.now + 1})
    assert report.by_id("v02.single_use.checkout").code == "replay"


def over_root(transaction: Transaction, root_jwt: str) -> str:
    """The transaction's closing checkout hop, made afresh over another root JWT (so it binds it)."""
    expected = transaction.checkout_hops[0]
    return append_hop(
        replace_hop_jwt(transaction.checkout_root, 0, root_jwt),
        transaction.closed_checkout,
        holder_key=transaction.keys.agent,
        audience=expected.audience,
        nonce=expected.nonce,
        now=transaction.now,
    )


def test_gap_259_root_iss_is_required_and_trusted() -> None:
    # SDK: sd_jwt.verify's key callback ignores the issuer; the SDK's own roots carry no iss.
    transaction = build()
    root_jwt = transaction.checkout_chain.split("~")[0]
    for changes, code in (
        ({"iss": None}, "root_iss_missing"),
        ({"iss": "https://someone-else.example"}, "untrusted_issuer"),
    ):
        forged = resign(root_jwt, transaction.keys.issuer, payload=changes)
        chain = over_root(transaction, forged)
        sdk_accepts(transaction, V02Evidence(checkout_chain=chain))
        report = inspect(transaction, V02Evidence(checkout_chain=chain), payment_hops=())
        refused(report, "v02.checkout.hop0.iss", code)


def test_gap_x5c_chains_are_never_accepted_without_path_validation() -> None:
    # SDK: X5cOrKidPublicKeyProvider accepts any x5c chain when no trusted_roots are given, and never
    # checks validity dates or basic constraints.
    transaction = build()
    attacker = KeyPair.generate(KeyType.P256)
    private = serialization.load_pem_private_key(attacker.private_pem_unencrypted(), password=None)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agent provider")])
    start = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())  # type: ignore[arg-type]
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
        .sign(private, hashes.SHA256())  # type: ignore[arg-type]
    )
    x5c = [base64.b64encode(certificate.public_bytes(serialization.Encoding.DER)).decode()]
    root_jwt = transaction.checkout_chain.split("~")[0]
    forged = resign(root_jwt, attacker, header={"x5c": x5c})
    chain = over_root(transaction, forged)
    sdk_accepts(transaction, V02Evidence(checkout_chain=chain))  # no trusted roots given: any chain
    report = inspect(transaction, V02Evidence(checkout_chain=chain), payment_hops=())
    refused(report, "v02.checkout.hop0.key", "x5c_refused")


def test_gap_hops_have_a_maximum_age() -> None:
    # SDK: chain._check_time_claims only refuses an iat in the future; a captured hop never ages out.
    transaction = build()
    sdk_accepts(transaction, transaction.evidence(payment=False), now=transaction.now + 301)
    report = inspect(
        transaction, transaction.evidence(payment=False), payment_hops=(), now=transaction.now + 301
    )
    refused(report, "v02.checkout.hop1.iat", "hop_too_old")


def test_the_sdk_checks_refuse_what_the_sdk_refuses() -> None:
    # The stand-in is only evidence if it is not a pushover: what the SDK checks, it checks.
    transaction = build()
    sdk_accepts(transaction)
    root_key = issuer_jwk(transaction)
    hop_jwt = transaction.checkout_chain.split("~~")[1].split("~")[0]
    stranger = KeyPair.generate(KeyType.P256)
    refusals: list[tuple[V02Evidence, SdkExpectations]] = [
        # a hop signed by a key other than the previous cnf.jwk
        (
            V02Evidence(
                checkout_chain=replace_hop_jwt(transaction.checkout_chain, 1, resign(hop_jwt, stranger))
            ),
            SdkExpectations(),
        ),
        # a hop whose sd_hash does not bind the root it follows
        (
            V02Evidence(
                checkout_chain=replace_hop_jwt(
                    transaction.checkout_chain,
                    1,
                    resign(hop_jwt, transaction.keys.agent, payload={"sd_hash": "A" * 43}),
                )
            ),
            SdkExpectations(),
        ),
        # the terminal aud / nonce, when the caller gives them
        (transaction.evidence(payment=False), SdkExpectations(checkout_aud="https://elsewhere.example")),
        (transaction.evidence(payment=False), SdkExpectations(checkout_nonce="another-nonce")),
        # checkout_hash and transaction_id, when the caller gives them
        (transaction.evidence(), SdkExpectations(expected_checkout_hash="A" * 43)),
        (transaction.evidence(), SdkExpectations(expected_transaction_id="A" * 43)),
        (transaction.evidence(), SdkExpectations(expected_open_checkout_hash="A" * 43)),
    ]
    for evidence, expectations in refusals:
        with pytest.raises((SdkRefusal, InvalidJWSSignature)):
            verify_like_the_sdk(evidence, root_key=root_key, now=transaction.now, expectations=expectations)
    with pytest.raises(SdkRefusal):  # an expired root
        verify_like_the_sdk(transaction.evidence(), root_key=root_key, now=transaction.now + 10**8)
