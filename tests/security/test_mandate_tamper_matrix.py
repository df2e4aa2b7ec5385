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
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from mudrika.crypto._b64 import b64url_decode, b64url_encode
from mudrika.payments.chain import inspect_chain
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder

pytestmark = pytest.mark.security

Path_ = tuple[str | int, ...]
Mutation = tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]


def leaves(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every string, number and boolean in a JSON value, with its path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    elif isinstance(value, bool | int | float | str):
        yield path, value


def changed(value: bool | float | str) -> bool | float | str:
    """A different value of the same JSON type."""
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


def flip(segment: str) -> str:
    """Change one character in the middle (a whole 6-bit group: never a padding-only change)."""
    middle = len(segment) // 2
    return segment[:middle] + ("B" if segment[middle] == "A" else "A") + segment[middle + 1 :]


def encode_json(value: Any) -> str:
    return b64url_encode(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def jws_variants(token: str) -> Iterator[tuple[str, str]]:
    segments = token.split(".")
    for index, name in enumerate(("header", "payload", "signature")):
        flipped = list(segments)
        flipped[index] = flip(segments[index])
        yield f"{name} flipped", ".".join(flipped)
    for index, name in enumerate(("header", "payload")):
        decoded = json.loads(b64url_decode(segments[index]))
        for path, value in leaves(decoded):
            edited = list(segments)
            edited[index] = encode_json(replaced(decoded, path, changed(value)))
            yield f"{name}{list(path)} changed", ".".join(edited)


def disclosure_variants(disclosure: str) -> Iterator[tuple[str, str]]:
    yield "flipped", flip(disclosure)
    decoded = json.loads(b64url_decode(disclosure))
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
