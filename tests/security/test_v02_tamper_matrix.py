"""The v0.2 tamper matrix: every single change to a valid transaction must fail at least one check.

Starting from a valid transaction (checkout chain, payment chain, two receipts), the test makes one
change at a time and re-verifies:

* in every token of both chains (root and hop): every leaf of the decoded header and payload
  changed and re-encoded (the signature kept), and a character of the signature flipped;
* in every disclosure of every token: every leaf of the decoded array changed and re-encoded;
* with the agent as the attacker (it holds the hop key, so it re-signs the closing hop): every leaf
  of the merchant-signed checkout JWT's payload changed, ``checkout_hash`` recomputed to match;
* in both receipts: every leaf of the header and payload changed and re-encoded.

Leaves: strings get a character appended, numbers +1, booleans flipped.  It counts the mutations
and asserts that none survives.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.payments.v02 import V02Evidence, append_hop, sd_digest
from tests._support.ap2_v02 import (
    CHECKOUT_NONCE,
    CP_AUDIENCE,
    MERCHANT_DID,
    PAYMENT_NONCE,
    Transaction,
    build,
    inspect,
)
from tests._support.json_tamper import changed, decode_json, encode_json, leaves, replaced

pytestmark = pytest.mark.security


def jwt_mutations(jwt: str) -> Iterator[tuple[str, str]]:
    header, payload, signature = jwt.split(".")
    for part, name in ((0, "header"), (1, "payload")):
        decoded = decode_json((header, payload)[part])
        for path, value in leaves(decoded):
            pieces = [header, payload, signature]
            pieces[part] = encode_json(replaced(decoded, path, changed(value)))
            yield f"{name}{list(path)}", ".".join(pieces)
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    yield "signature", f"{header}.{payload}.{flipped}"


def with_part(tokens: list[str], index: int, position: int, text: str) -> str:
    """The chain of ``tokens`` with part ``position`` (0: the JWT, then the disclosures) of token
    ``index`` replaced by ``text``."""
    parts = tokens[index].split("~")
    parts[position] = text
    return "~~".join([*tokens[:index], "~".join(parts), *tokens[index + 1 :]])


def chain_mutations(chain: str, label: str) -> Iterator[tuple[str, str]]:
    tokens = chain.split("~~")
    for index, token in enumerate(tokens):
        parts = token.split("~")
        for name, forged in jwt_mutations(parts[0]):
            yield f"{label} token {index} {name}", with_part(tokens, index, 0, forged)
        for position in range(1, len(parts)):
            if not parts[position]:
                continue
            decoded = decode_json(parts[position])
            for path, value in leaves(decoded):
                forged = encode_json(replaced(decoded, path, changed(value)))
                yield (
                    f"{label} token {index} disclosure {position} {list(path)}",
                    with_part(tokens, index, position, forged),
                )


def mutations(transaction: Transaction) -> Iterator[tuple[str, V02Evidence]]:
    evidence = transaction.evidence()
    for name, chain in chain_mutations(transaction.checkout_chain, "checkout"):
        yield name, replace(evidence, checkout_chain=chain)
    for name, chain in chain_mutations(transaction.payment_chain, "payment"):
        yield name, replace(evidence, payment_chain=chain)
    for name, receipt in jwt_mutations(transaction.checkout_receipt):
        yield f"checkout receipt {name}", replace(evidence, checkout_receipt=receipt)
    for name, receipt in jwt_mutations(transaction.payment_receipt):
        yield f"payment receipt {name}", replace(evidence, payment_receipt=receipt)
    # The agent re-signs its closing hops over a checkout JWT it changed (and a matching hash).
    for name, checkout_jwt in jwt_mutations(transaction.checkout_jwt):
        closed = {
            **transaction.closed_checkout,
            "checkout_jwt": checkout_jwt,
            "checkout_hash": sd_digest(checkout_jwt),
        }
        checkout_chain = append_hop(
            transaction.checkout_root,
            closed,
            holder_key=transaction.keys.agent,
            audience=MERCHANT_DID,
            nonce=CHECKOUT_NONCE,
            now=transaction.now,
        )
        payment = {**transaction.closed_payment, "transaction_id": sd_digest(checkout_jwt)}
        payment_chain = append_hop(
            transaction.payment_root,
            payment,
            holder_key=transaction.keys.agent,
            audience=CP_AUDIENCE,
            nonce=PAYMENT_NONCE,
            now=transaction.now,
        )
        yield (
            f"agent re-signs over checkout_jwt {name}",
            V02Evidence(checkout_chain=checkout_chain, payment_chain=payment_chain),
        )


def test_no_single_change_survives() -> None:
    transaction = build()
    assert inspect(transaction).verdict == "OK"
    survivors: list[str] = []
    count = 0
    for name, evidence in mutations(transaction):
        count += 1
        if inspect(transaction, evidence).verdict != "FAILED":
            survivors.append(name)
    assert count > 150, count
    assert survivors == []


ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~=+/\x00é"  # no whitespace: a chain is stripped
TRANSACTION = build()


@given(
    target=st.sampled_from(["checkout_chain", "payment_chain", "checkout_receipt", "payment_receipt"]),
    position=st.floats(min_value=0.0, max_value=1.0),
    replacement=st.text(alphabet=ALPHABET, min_size=0, max_size=3),
)
@settings(max_examples=300, deadline=None)
def test_corrupted_evidence_is_reported_never_raised(target: str, position: float, replacement: str) -> None:
    evidence = TRANSACTION.evidence()
    original = getattr(evidence, target)
    index = min(int(position * len(original)), len(original) - 1)
    corrupted = original[:index] + replacement + original[index + 1 :]
    report = inspect(TRANSACTION, replace(evidence, **{target: corrupted}))
    assert report.verdict == ("OK" if corrupted == original else "FAILED")
