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

import base64
import copy
import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.payments.v02 import V02Evidence, append_hop, inspect_v02, sd_digest
from tests._support.ap2_v02 import CP_AUDIENCE, MERCHANT_DID, Transaction, build

pytestmark = pytest.mark.security

Path_ = tuple[str | int, ...]


def leaves(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    elif isinstance(value, bool | int | float | str):
        yield path, value


def changed(value: bool | float | str) -> bool | float | str:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return value + "x"


def replaced(document: Any, path: Path_, value: Any) -> Any:
    result = copy.deepcopy(document)
    target = result
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return result


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def encode(value: Any) -> str:
    return b64(json.dumps(value, separators=(",", ":")).encode())


def jwt_mutations(jwt: str) -> Iterator[tuple[str, str]]:
    header, payload, signature = jwt.split(".")
    for part, name in ((0, "header"), (1, "payload")):
        decoded = unb64((header, payload)[part])
        for path, value in leaves(decoded):
            pieces = [header, payload, signature]
            pieces[part] = encode(replaced(decoded, path, changed(value)))
            yield f"{name}{list(path)}", ".".join(pieces)
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    yield "signature", f"{header}.{payload}.{flipped}"


def chain_mutations(chain: str, label: str) -> Iterator[tuple[str, str]]:
    tokens = chain.split("~~")
    for index, token in enumerate(tokens):
        parts = token.split("~")
        for name, forged in jwt_mutations(parts[0]):
            yield (
                f"{label} token {index} {name}",
                "~~".join([*tokens[:index], "~".join([forged, *parts[1:]]), *tokens[index + 1 :]]),
            )
        for position in range(1, len(parts)):
            if not parts[position]:
                continue
            decoded = unb64(parts[position])
            for path, value in leaves(decoded):
                new_parts = list(parts)
                new_parts[position] = encode(replaced(decoded, path, changed(value)))
                yield (
                    f"{label} token {index} disclosure {position} {list(path)}",
                    "~~".join([*tokens[:index], "~".join(new_parts), *tokens[index + 1 :]]),
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
            nonce="checkout-nonce-7f3a",
            now=transaction.now,
        )
        payment = {**transaction.closed_payment, "transaction_id": sd_digest(checkout_jwt)}
        payment_chain = append_hop(
            transaction.payment_root,
            payment,
            holder_key=transaction.keys.agent,
            audience=CP_AUDIENCE,
            nonce="payment-nonce-91c2",
            now=transaction.now,
        )
        yield (
            f"agent re-signs over checkout_jwt {name}",
            V02Evidence(checkout_chain=checkout_chain, payment_chain=payment_chain),
        )


def test_no_single_change_survives() -> None:
    transaction = build()

    def verdict(evidence: V02Evidence) -> str:
        return inspect_v02(
            evidence,
            trust_root=transaction.trust_root,
            checkout_hops=transaction.checkout_hops,
            payment_hops=transaction.payment_hops,
            now=transaction.now,
            usage=None,
            replay_store=None,
        ).verdict

    assert verdict(transaction.evidence()) == "OK"
    survivors: list[str] = []
    count = 0
    for name, evidence in mutations(transaction):
        count += 1
        if verdict(evidence) != "FAILED":
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
    report = inspect_v02(
        replace(evidence, **{target: corrupted}),
        trust_root=TRANSACTION.trust_root,
        checkout_hops=TRANSACTION.checkout_hops,
        payment_hops=TRANSACTION.payment_hops,
        now=TRANSACTION.now,
        usage=None,
        replay_store=None,
    )
    assert report.verdict == ("OK" if corrupted == original else "FAILED")
