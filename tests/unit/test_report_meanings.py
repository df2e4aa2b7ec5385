"""Every check a verifier records reads as a sentence of its own profile, and the kernel stays shared.

Why over the tamper matrices: they drive each verifier through every failure its checks can catch
(every leaf of every token, header, disclosure and receipt changed), so the check ids they record
are the ids an analyst will meet.  A new check without a sentence would otherwise reach a dispute
report as "check v02.checkout.hop1.aud did not hold".
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from functools import cache, partial
from pathlib import Path

import pytest

import mudrika.payments.chain as chain_package
import mudrika.payments.report as kernel
from mudrika.errors import InvalidInput, MudrikaError, UnavailableError, VerificationError
from mudrika.payments.chain import MEANINGS as V01_MEANINGS
from mudrika.payments.chain import inspect_chain, verify_chain
from mudrika.payments.report import (
    GENERIC_MEANING,
    Check,
    MeaningTable,
    VerificationReport,
    render_html,
    render_text,
)
from mudrika.payments.v02 import MEANINGS as V02_MEANINGS
from mudrika.payments.v02 import HopExpectation, V02Evidence, verify_v02
from mudrika.stores.replay import MemoryReplayStore
from tests._support.ap2_v02 import Transaction, build, inspect
from tests._support.evidence import evidence_builder
from tests.security import test_mandate_tamper_matrix as v01_matrix
from tests.security import test_v02_tamper_matrix as v02_matrix

PAYMENTS = Path(__file__).resolve().parents[2] / "src" / "mudrika" / "payments"


@cache
def v02_transaction() -> Transaction:
    return build()


def v02_cases() -> Iterator[tuple[str, V02Evidence]]:
    transaction = v02_transaction()
    yield "valid", transaction.evidence()
    yield from v02_matrix.mutations(transaction)


@cache
def v02_reports() -> tuple[tuple[str, VerificationReport], ...]:
    transaction = v02_transaction()
    return tuple((name, inspect(transaction, evidence)) for name, evidence in v02_cases())


@cache
def v01_reports() -> tuple[tuple[str, VerificationReport], ...]:
    chain = evidence_builder().build_chain(key_type="p256")
    expectations = chain.expectations()
    intent, cart, payment = chain.intent.plain(), chain.cart.plain(), chain.payment.plain()
    cases = [("valid", intent, cart, payment), *v01_matrix.mutations(intent, cart, payment)]
    return tuple(
        (name, inspect_chain(i, c, p, replay_store=MemoryReplayStore(), **expectations))
        for name, i, c, p in cases
    )


def unexplained(reports: tuple[tuple[str, VerificationReport], ...], table: MeaningTable) -> dict[str, str]:
    """Each recorded check id the table has no sentence for, with a case that recorded it."""
    missing: dict[str, str] = {}
    for name, report in reports:
        for check in report.checks:
            if table.sentence_for(check.id, check.detail) is None:
                missing.setdefault(check.id, name)
    return missing


def test_every_check_the_v02_verifier_records_has_a_sentence() -> None:
    reports = v02_reports()
    recorded = {check.id for _, report in reports for check in report.checks}
    assert len(reports) > 150
    # The matrix reaches the root, the agent's hop, the merchant's checkout and both receipts.
    assert {"v02.checkout.hop0.signature", "v02.payment.hop1.aud", "v02.receipt.payment.status"} <= recorded
    assert unexplained(reports, V02_MEANINGS) == {}


def test_every_check_the_v01_verifier_records_has_a_sentence() -> None:
    reports = v01_reports()
    recorded = {check.id for _, report in reports for check in report.checks}
    assert len(reports) > 100
    assert {"merchant.jws.signature", "user.kb.nonce", "chain.total"} <= recorded
    assert unexplained(reports, V01_MEANINGS) == {}


def test_every_v02_failure_reads_in_words_in_every_rendering() -> None:
    generic = GENERIC_MEANING.format(id="")
    for name, report in v02_reports():
        assert report.meanings is V02_MEANINGS
        failures = report.failure_dicts()
        assert all(not failure["meaning"].startswith(generic) for failure in failures), name
        text = render_text(report, title=name)
        assert generic not in text, name
        assert generic not in report.summary(), name
        for failure in report.failures[:1]:
            assert report.meanings.meaning(failure) in text
            assert render_html(report, title=name).count("<h3>") >= 1


def test_the_wrong_audience_of_the_shopping_agent_reads_as_such() -> None:
    transaction = v02_transaction()
    elsewhere = HopExpectation("did:web:another-merchant.example", "nonce-of-another-session")
    report = inspect(transaction, checkout_hops=(elsewhere,))
    failed = {check.id: report.meanings.meaning(check) for check in report.failures}
    assert failed["v02.checkout.hop1.aud"] == (
        "the agent's key-binding token at hop 1 of the checkout chain was addressed to another audience "
        "than the one you expect"
    )


def test_a_table_looks_up_detail_then_exact_id_then_pattern_then_suffix() -> None:
    table = MeaningTable(
        sentences={"a.b.exp": "exact"},
        patterns=((re.compile(r"p\.hop(?P<hop>[0-9]+)\.x"), "pattern at hop {hop}"),),
        by_detail={"a.b.exp": {"marker": "by detail"}},
        by_suffix=((".exp", "by suffix"),),
    )
    assert table.sentence_for("a.b.exp", "the marker differed") == "by detail"
    assert table.sentence_for("a.b.exp", "something else") == "exact"
    assert table.sentence_for("p.hop3.x") == "pattern at hop 3"
    assert table.sentence_for("p.hop3.xy") is None  # a pattern matches the whole id
    assert table.sentence_for("c.d.exp") == "by suffix"
    assert table.sentence_for("c.d.other") is None
    unknown = Check.make("c.d.other", "failed", "someone", error="verification", code="x")
    assert table.meaning(unknown) == "check c.d.other did not hold"
    assert table.rests_on(unknown) == "someone's signature"
    assert table.value_labels(unknown) == ("found", "expected")


def test_a_signed_hash_is_labelled_as_signed_and_recomputed_in_both_profiles() -> None:
    v01 = Check.make("merchant.jwt.cart_hash", "failed", "merchant", error="binding", code="x")
    v02 = Check.make("v02.checkout.hop1.binding", "failed", "delegate 1", error="binding", code="x")
    assert V01_MEANINGS.value_labels(v01) == ("signed value", "recomputed value")
    assert V02_MEANINGS.value_labels(v02) == ("signed value", "recomputed value")
    assert V01_MEANINGS.rests_on(v01) == "the merchant's signature"


#: What ``mudrika.payments.chain`` exported before the kernel moved out of it: user code imports these.
CHAIN_EXPORTS_BEFORE_THE_KERNEL = (
    "ERROR_KINDS",
    "REPORT_FORMAT",
    "Check",
    "CheckStatus",
    "Comparison",
    "ErrorKind",
    "KeyMaterial",
    "KeySource",
    "ResolvedKey",
    "VerificationReport",
    "VerifiedCart",
    "VerifiedChain",
    "error_kind_of",
    "inspect_chain",
    "kb_nonce_key",
    "merchant_jti_key",
    "printable",
    "render_html",
    "render_text",
    "verify_cart",
    "verify_chain",
)


@pytest.mark.parametrize("name", CHAIN_EXPORTS_BEFORE_THE_KERNEL)
def test_the_chain_package_still_exports_what_it_exported(name: str) -> None:
    assert name in chain_package.__all__
    value = getattr(chain_package, name)
    if name in kernel.__all__:
        # The same object, not a copy: isinstance checks and identity hold across both paths.
        assert value is getattr(kernel, name)


def test_the_kernel_imports_neither_profile() -> None:
    for path in (PAYMENTS / "report").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(("mudrika.payments.chain", "mudrika.payments.v02")), path


def test_no_assert_drives_control_flow_in_payments() -> None:
    """``python -O`` strips ``assert``: a check written as one would vanish from an optimised verifier."""
    sites = sorted(
        f"{path.relative_to(PAYMENTS)}:{node.lineno}"
        for path in PAYMENTS.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assert)
    )
    assert sites == []


def raised_by(call: Callable[[], object]) -> MudrikaError | None:
    try:
        call()
    except MudrikaError as exc:
        return exc
    return None


def test_each_refusal_of_the_raising_verifiers_is_a_typed_error() -> None:
    """``verify_chain`` / ``verify_v02`` refuse with a ``VerificationError`` -- or ``InvalidInput`` for
    input they could not read, ``UnavailableError`` for a store that cannot answer -- never anything
    untyped (docs/architecture.md "Verification APIs")."""
    transaction = v02_transaction()
    arguments = transaction.verifier_arguments()
    kinds: set[str] = set()
    for name, evidence in list(v02_cases())[1:]:
        exc = raised_by(partial(verify_v02, evidence, **arguments, replay_store=MemoryReplayStore()))
        assert exc is not None, name
        assert isinstance(exc, VerificationError | InvalidInput | UnavailableError), (name, exc)
        kinds.add(type(exc).__name__)
    chain = evidence_builder().build_chain(key_type="p256")
    expectations = chain.expectations()
    intent, cart, payment = chain.intent.plain(), chain.cart.plain(), chain.payment.plain()
    for name, i, c, p in v01_matrix.mutations(intent, cart, payment):
        exc = raised_by(partial(verify_chain, i, c, p, replay_store=MemoryReplayStore(), **expectations))
        assert exc is not None, name
        assert isinstance(exc, VerificationError | InvalidInput | UnavailableError), (name, exc)
        kinds.add(type(exc).__name__)
    assert "SignatureError" in kinds


def documented_v01_checks() -> dict[str, tuple[str | None, frozenset[str]]]:
    """docs/payments.md "Checks", read as the specification: each check id with the party its table
    (or its stage's heading) names and the error kinds its ``error`` column allows (``None`` for a
    stage that names no party: the input checks belong to whoever sent each mandate)."""
    docs = (PAYMENTS.parents[2] / "docs" / "payments.md").read_text(encoding="utf-8")
    section = docs[docs.index("\n## Checks") + 1 :]
    end = section.find("\n## ")
    section = section if end < 0 else section[:end]
    documented: dict[str, tuple[str | None, frozenset[str]]] = {}
    stage_party: str | None = None
    has_party_column = False
    for line in section.splitlines():
        if line.startswith("### "):
            named = re.search(r"party `(\w+)`", line)
            stage_party = named.group(1) if named else None
        elif line.startswith("| id |"):
            has_party_column = line.startswith("| id | party |")
        elif row := re.match(r"\| `([a-z_.]+)` \| ([^|]+)\|(?: ([^|]+)\|)?", line):
            check_id, first, second = row.group(1), row.group(2).strip(), (row.group(3) or "").strip()
            party, errors = (first, second) if has_party_column else (stage_party, first)
            kinds = (
                frozenset() if errors == "(none)" else frozenset(kind.strip() for kind in errors.split("/"))
            )
            documented[check_id] = (party, kinds)
    return documented


def test_every_v01_check_has_the_party_and_error_kind_its_documentation_gives() -> None:
    """Generated from the documentation's tables × every report of the tamper matrix: a check
    recorded under another party, or failing with an error kind its row does not name, is either a
    wrong report or a wrong document."""
    documented = documented_v01_checks()
    assert len(documented) > 70
    seen_parties: dict[str, set[str]] = {}
    seen_failures: set[str] = set()
    for name, report in v01_reports():
        for check in report.checks:
            if check.id not in documented:
                continue
            party, kinds = documented[check.id]
            if party is not None:
                assert check.party == party, (name, check.id, check.party)
            seen_parties.setdefault(check.id, set()).add(check.party)
            if check.failed:
                assert check.error in kinds, (name, check.id, check.error, sorted(kinds))
                seen_failures.add(check.id)
    # The matrix records every documented check; it makes those fail that a changed byte reaches
    # first (a stage after a failed one is skipped), the signatures and hashes of every party among them.
    assert set(seen_parties) == set(documented)
    assert {
        "intent.jws.signature",
        "merchant.jws.signature",
        "user.kb.signature",
        "cart.total",
    } <= seen_failures


def test_every_v01_report_lists_every_check_exactly_once() -> None:
    """A stage that did not run reports its checks as skipped, never leaves them out: over the
    tamper matrix, every report holds the valid chain's 77 checks, each once, in the same order."""
    reports = v01_reports()
    name, valid = reports[0]
    assert name == "valid"
    order = [check.id for check in valid.checks]
    assert len(order) == len(set(order)) == 77
    for name, report in reports[1:]:
        assert [check.id for check in report.checks] == order, name
