"""The tamper matrix: every single change to a valid AP2 chain must fail at least one named check.

Starting from a valid, fully signed chain (intent JWS, merchant JWT, SD-JWT VC with a disclosure,
KB-JWT), the test makes one change at a time and re-verifies with a fresh replay store:

* every leaf of the three mandates' raw JSON (strings get a character appended, numbers +1,
  booleans flipped), the signature strings included;
* in every JWS (intent, merchant, issuer, KB): a character flipped in the middle of the header,
  the payload and the signature segment, and every leaf of the decoded header and payload changed
  and re-encoded (the signature kept);
* in every disclosure: a character flipped, and every leaf of the decoded array changed and
  re-encoded.

It lists and counts the mutations and asserts that none survives.

Then targeted tampering, each case with the exact check id that must fail: every time claim of
every token at and around its boundary, intents swapped after the payment (unsigned, the same
user's earlier one, another user's; bound and legacy chains), an unsigned member at every level,
a credential type the trust root does not accept, a subject that contradicts ``cnf``, and the
merchant JWT's ``typ``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mudrika.payments.chain import inspect_chain
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder
from tests._support.json_tamper import changed, decode_json, encode_json, leaves, replaced

pytestmark = pytest.mark.security

Mutation = tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]


def flip(segment: str) -> str:
    """Change one character in the middle (a whole 6-bit group: never a padding-only change)."""
    middle = len(segment) // 2
    return segment[:middle] + ("B" if segment[middle] == "A" else "A") + segment[middle + 1 :]


def jws_variants(token: str) -> Iterator[tuple[str, str]]:
    segments = token.split(".")
    for index, name in enumerate(("header", "payload", "signature")):
        flipped = list(segments)
        flipped[index] = flip(segments[index])
        yield f"{name} flipped", ".".join(flipped)
    for index, name in enumerate(("header", "payload")):
        decoded = decode_json(segments[index])
        for path, value in leaves(decoded):
            edited = list(segments)
            edited[index] = encode_json(replaced(decoded, path, changed(value)))
            yield f"{name}{list(path)} changed", ".".join(edited)


def disclosure_variants(disclosure: str) -> Iterator[tuple[str, str]]:
    yield "flipped", flip(disclosure)
    decoded = decode_json(disclosure)
    for path, value in leaves(decoded):
        yield f"{list(path)} changed", encode_json(replaced(decoded, path, changed(value)))


def mutations(intent: dict[str, Any], cart: dict[str, Any], payment: dict[str, Any]) -> Iterator[Mutation]:
    mandates = {"intent": intent, "cart": cart, "payment": payment}
    # 1. Every leaf of every mandate's raw JSON.
    for name, document in mandates.items():
        for path, value in leaves(document):
            edited = {**mandates, name: replaced(document, path, changed(value))}
            yield f"{name} leaf {list(path)}", edited["intent"], edited["cart"], edited["payment"]
    # 2. Every segment and claim of the compact JWSs.
    for label, value in jws_variants(intent["user_authorization"]):
        yield f"intent JWS {label}", {**intent, "user_authorization": value}, cart, payment
    for label, value in jws_variants(cart["merchant_authorization"]):
        yield f"merchant JWT {label}", intent, {**cart, "merchant_authorization": value}, payment
    parts = payment["user_authorization"].split("~")
    issuer_jwt, disclosures, kb_jwt = parts[0], parts[1:-1], parts[-1]

    def presentation(issuer: str, items: list[str], kb: str) -> dict[str, Any]:
        return {**payment, "user_authorization": "~".join([issuer, *items, kb])}

    for label, value in jws_variants(issuer_jwt):
        yield f"issuer JWT {label}", intent, cart, presentation(value, disclosures, kb_jwt)
    for index, disclosure in enumerate(disclosures):
        for label, value in disclosure_variants(disclosure):
            items = list(disclosures)
            items[index] = value
            yield f"disclosure {index} {label}", intent, cart, presentation(issuer_jwt, items, kb_jwt)
    for label, value in jws_variants(kb_jwt):
        yield f"KB-JWT {label}", intent, cart, presentation(issuer_jwt, disclosures, value)


def test_no_single_mutation_survives() -> None:
    chain = evidence_builder().build_chain(key_type="p256")
    expectations = chain.expectations()
    intent, cart, payment = chain.intent.plain(), chain.cart.plain(), chain.payment.plain()
    baseline = inspect_chain(intent, cart, payment, replay_store=MemoryReplayStore(), **expectations)
    assert baseline.ok

    tried: list[str] = []
    survivors: list[str] = []
    failed_checks: set[str] = set()
    for label, m_intent, m_cart, m_payment in mutations(intent, cart, payment):
        tried.append(label)
        report = inspect_chain(m_intent, m_cart, m_payment, replay_store=MemoryReplayStore(), **expectations)
        failures = report.failures
        if report.ok or not failures:
            survivors.append(label)
        failed_checks.update(check.id for check in failures)

    print(f"\ntamper matrix: {len(tried)} mutations, {len(survivors)} survivors")
    print(f"checks that caught them: {', '.join(sorted(failed_checks))}")
    assert len(tried) > 100
    assert len(tried) == len(set(tried)), "mutation labels must be unique"
    assert not survivors, survivors


# -- Targeted tampering, each with the exact check that must fail ----------------------------------

LEEWAY = 5
"""The trust root's leeway in the boundary cases (so the rule's ``± leeway`` is exercised)."""


def _inspect(chain: Any, intent: Any = None, cart: Any = None, payment: Any = None, **trust: Any) -> Any:
    return inspect_chain(
        intent if intent is not None else chain.intent,
        cart if cart is not None else chain.cart,
        payment if payment is not None else chain.payment,
        replay_store=MemoryReplayStore(),
        **chain.expectations(**trust),
    )


def _failed_ids(report: Any) -> list[str]:
    return [check.id for check in report.failures]


# Each token, the builder argument that overrides its claims, and its check prefix.
TOKENS = (
    ("intent_claims", "intent.jws"),
    ("merchant_claims", "merchant.jwt"),
    ("credential_claims", "issuer.jwt"),
    ("kb_claims", "user.kb"),
)
# (claim, offset from the evaluation time, passes?) — the documented rule with leeway L:
# valid while now < exp + L (exactly at exp + L: expired); valid from nbf - L on (inclusive);
# iat not after now + L (inclusive).
BOUNDARY = (
    ("exp", -LEEWAY - 1, False),
    ("exp", -LEEWAY, False),
    ("exp", -LEEWAY + 1, True),
    ("nbf", LEEWAY - 1, True),
    ("nbf", LEEWAY, True),
    ("nbf", LEEWAY + 1, False),
    ("iat", LEEWAY, True),
    ("iat", LEEWAY + 1, False),
)


@pytest.mark.parametrize(("argument", "prefix"), TOKENS, ids=[prefix for _, prefix in TOKENS])
@pytest.mark.parametrize(("claim", "offset", "passes"), BOUNDARY, ids=[f"{c}{o:+d}" for c, o, _ in BOUNDARY])
def test_every_time_claim_of_every_token_at_its_boundary(
    argument: str, prefix: str, claim: str, offset: int, passes: bool
) -> None:
    builder = evidence_builder()
    now = builder.EVIDENCE_TIME
    chain = builder.build_chain(**{argument: {claim: now + offset}})
    report = _inspect(chain, leeway_seconds=LEEWAY)
    if passes:
        assert report.verdict == "OK", _failed_ids(report)
        assert report.by_id(f"{prefix}.{claim}").passed
    else:
        assert _failed_ids(report) == [f"{prefix}.{claim}"]


def _intent_swaps() -> dict[str, Any]:
    """Intents that could be put in place of the one the user's key-binding JWT covers."""
    builder = evidence_builder()
    genuine = builder.build_chain()
    unsigned = genuine.intent.with_member("user_authorization", None)
    earlier = builder.build_chain(
        now=builder.EVIDENCE_TIME - 86400,
        edit_intent=lambda intent: intent.update(intent_expiry="2025-10-30T00:00:00Z"),
    ).intent
    another_user = builder.build_chain(seed_prefix="another person").intent
    return {"unsigned": unsigned, "earlier-same-user": earlier, "other-user": another_user}


@pytest.mark.parametrize("swap", ["unsigned", "earlier-same-user", "other-user"])
def test_an_intent_swapped_after_the_payment_is_caught(swap: str) -> None:
    builder = evidence_builder()
    chain = builder.build_chain()
    intent = _intent_swaps()[swap]
    report = _inspect(chain, intent=intent)
    assert _failed_ids(report) == ["user.kb.intent_binding"]
    assert report.by_id("user.kb.intent_binding").code == "intent_hash_mismatch"


@pytest.mark.parametrize(
    ("swap", "expected"),
    [
        # Nothing binds an unsigned intent in a legacy chain: refused, not judged.
        ("unsigned", ["intent.unsigned_members"]),
        # The same user's earlier intent is a valid intent the user signed: a legacy chain cannot
        # tell, and the report says so in words.
        ("earlier-same-user", []),
        ("other-user", ["intent.signer_is_holder"]),
    ],
)
def test_legacy_chains_accepted_by_the_trust_root_say_the_intent_is_not_bound(
    swap: str, expected: list[str]
) -> None:
    legacy = evidence_builder().build_chain(bind_intent=False)
    refused = _inspect(legacy)
    assert _failed_ids(refused) == ["user.kb.intent_binding"]
    assert refused.by_id("user.kb.intent_binding").code == "intent_not_bound"
    report = _inspect(legacy, intent=_intent_swaps()[swap], accept_legacy_unbound_intent=True)
    assert _failed_ids(report) == expected
    if not expected:
        assert report.verdict == "OK"
        assert any("NOT bound to this payment" in statement for statement in report.statements)
        assert "NOT BOUND" in (report.by_id("user.kb.intent_binding").got or "")


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("payment", ["payment.unsigned_members"]),
        ("cart", ["cart.unsigned_members"]),
        ("intent", ["intent.constraints", "intent.jws.intent_hash"]),
        ("cart.contents", ["merchant.jwt.cart_hash"]),
        ("payment.payment_mandate_contents", ["user.kb.transaction_data"]),
        ("cart.contents.payment_request.details", ["merchant.jwt.cart_hash"]),
    ],
)
def test_an_unsigned_member_at_any_level_is_refused(where: str, expected: list[str]) -> None:
    chain = evidence_builder().build_chain()
    mandates = {"intent": chain.intent.plain(), "cart": chain.cart.plain(), "payment": chain.payment.plain()}
    name, *path = where.split(".")
    target = mandates[name]
    for step in path:
        target = target[step]
    target["refund_to"] = "acct-of-attacker"
    report = inspect_chain(
        mandates["intent"],
        mandates["cart"],
        mandates["payment"],
        replay_store=MemoryReplayStore(),
        **chain.expectations(),
    )
    assert _failed_ids(report) == expected


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"vct": "https://credentials.example/age-over-18"}, ["issuer.jwt.vct"]),
        ({"vct": None}, ["issuer.jwt.vct"]),
        ({"sub": "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"}, ["issuer.jwt.sub"]),
        ({"sub": "did:web:someone-else.example"}, ["issuer.jwt.sub"]),
        ({"sub": "alice"}, ["issuer.jwt.sub"]),
        ({"sub": None}, []),
    ],
)
def test_credential_type_and_subject(claims: dict[str, Any], expected: list[str]) -> None:
    report = _inspect(evidence_builder().build_chain(credential_claims=claims))
    assert _failed_ids(report) == expected
    if expected and expected[0] == "issuer.jwt.sub":
        assert report.by_id("issuer.jwt.sub").code == "sub_contradicts_cnf"


def test_the_credential_subject_may_be_the_did_that_signed_the_intent() -> None:
    builder = evidence_builder()
    chain = builder.build_chain()
    assert chain.user_did.startswith("did:key:")
    report = _inspect(chain)
    assert report.by_id("issuer.jwt.sub").got is not None
    assert "its key is the cnf key" in (report.by_id("issuer.jwt.sub").got or "")


def test_a_vct_accepted_for_one_issuer_only() -> None:
    builder = evidence_builder()
    vct = "https://credentials.example/payment-user/v2"
    chain = builder.build_chain(credential_claims={"vct": vct})
    issuer_entry = {"jwks": chain.jwks[builder.ISSUER], "vct": [vct]}
    assert _inspect(chain, issuers={builder.ISSUER: issuer_entry}).verdict == "OK"
    assert _failed_ids(_inspect(chain)) == ["issuer.jwt.vct"]


def test_the_merchant_jwt_typ_is_enforced() -> None:
    report = _inspect(evidence_builder().build_chain(merchant_typ="ap2-intent+jwt"))
    assert _failed_ids(report) == ["merchant.jwt.typ"]
