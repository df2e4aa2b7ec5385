"""The AP2 v0.2 verifier: checkout and payment delegation chains, their bindings, constraints,
receipts and single use — one report of named checks, in the same shape as the v0.1 chain's.

Order (specification.md "Verification", Merchant → Credential Provider → Dispute):

1. ``v02.checkout.*``: the checkout chain, token by token (:mod:`~mudrika.payments.v02.hops`);
   then ``checkout_hash`` recomputed, the merchant's ``checkout_jwt`` signature, the pre-set
   values, the required ``checkout.line_items``, and every constraint of every open mandate.
2. ``v02.payment.*`` (when a payment chain is given): the payment chain; ``transaction_id`` ==
   the recomputed checkout hash, payee and amount against the signed checkout, the pre-set values,
   the required ``payment.reference`` (== the hash of the open checkout mandate as presented), and
   every constraint.
3. ``v02.receipt.checkout.*`` / ``v02.receipt.payment.*`` (when given): signer from the trust root,
   ``reference`` == the hash of the closed mandate as presented, ``status``.
4. ``v02.single_use.*`` (when a replay store is given, and only once every check above passed —
   nothing unauthorised consumes shared capacity): the checkout, the payment's transaction and each
   open mandate that allows no recurrence are claimed, so one consent cannot pay twice on any
   replica sharing the store.

:func:`inspect_v02` never raises on a failed check; :func:`verify_v02` runs the same checks,
requires a replay store, and returns what the evidence proves or raises the first failure's typed
error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from mudrika.errors import InvalidInput, MudrikaError
from mudrika.payments._time import Time, epoch, iso
from mudrika.payments.chain._common import Recorder, StepFailed, fingerprint
from mudrika.payments.chain._text import printable
from mudrika.payments.chain.report import KeyEvidence, VerificationReport
from mudrika.payments.trustroot import TrustRoot
from mudrika.payments.v02.bindings import (
    VerifiedCheckoutJwt,
    check_checkout_hash,
    check_payment_amount,
    check_payment_payee,
    check_preset_values,
    check_reference_present,
    check_transaction_id,
    verify_checkout_jwt,
)
from mudrika.payments.v02.constraints import (
    CheckoutScope,
    MandateUsage,
    PaymentScope,
    evaluate_checkout_constraint,
    evaluate_payment_constraint,
)
from mudrika.payments.v02.hops import HopExpectation, VerifiedToken, verify_tokens
from mudrika.payments.v02.models import (
    Checkout,
    CheckoutMandate,
    CheckoutReceipt,
    PaymentMandate,
    PaymentReceipt,
)
from mudrika.payments.v02.profile import MandateKind
from mudrika.payments.v02.receipts import (
    ReceiptKind,
    VerifiedReceipt,
    check_receipt_reference,
    check_receipt_status,
    verify_receipt_jwt,
)
from mudrika.payments.v02.wire import ParsedChain, parse_chain, sd_digest
from mudrika.stores.replay import ReplayStore, claim_or_raise

__all__ = ["V02Evidence", "VerifiedTransaction", "inspect_v02", "verify_v02"]

#: Longest a single-use claim is held (the replay stores refuse more than 31 days).
_MAX_CLAIM_SECONDS: Final = 30 * 86400.0


@dataclass(frozen=True, slots=True)
class V02Evidence:
    """The wire forms of one v0.2 transaction: the checkout chain, and optionally the payment chain
    and the two receipts (compact JWTs)."""

    checkout_chain: str = field(repr=False)
    payment_chain: str | None = field(default=None, repr=False)
    checkout_receipt: str | None = field(default=None, repr=False)
    payment_receipt: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class VerifiedTransaction:
    """What :func:`verify_v02` vouches for."""

    checkout: Checkout
    checkout_mandate: CheckoutMandate
    payment_mandate: PaymentMandate | None
    checkout_receipt: CheckoutReceipt | None
    payment_receipt: PaymentReceipt | None
    report: VerificationReport


@dataclass(slots=True)
class _State:
    recorder: Recorder = field(default_factory=functools.partial(Recorder, validate=True))
    hashes: dict[str, str] = field(default_factory=dict)
    checkout_tokens: tuple[VerifiedToken, ...] | None = None
    checkout_jwt: VerifiedCheckoutJwt | None = None
    payment_tokens: tuple[VerifiedToken, ...] | None = None
    checkout_receipt: VerifiedReceipt | None = None
    payment_receipt: VerifiedReceipt | None = None


def _check(state: _State, check_id: str, party: str, step: Callable[[], Any], **texts: str | None) -> Any:
    """Record one check; ``None`` (and the failure recorded) when it did not hold."""
    try:
        return state.recorder.run_or_stop(check_id, party, step, **texts)
    except StepFailed:
        return None


def _skip(state: _State, check_ids: Sequence[str], party: str, why: str) -> None:
    state.recorder.skip_each(check_ids, party, detail=why)


def _chain(
    state: _State,
    text: str,
    *,
    kind: MandateKind,
    trust_root: TrustRoot,
    hops: Sequence[HopExpectation],
    now: float,
) -> tuple[VerifiedToken, ...] | None:
    prefix = f"v02.{kind}"
    parsed: ParsedChain | None = _check(state, f"{prefix}.wire", "presenter", lambda: parse_chain(text))
    if parsed is None:
        return None
    # Every hop is checked against its own expectation: a hop without one fails its aud check
    # (``no_expectation``); expectations for hops the chain does not have fail here.
    if len(hops) > parsed.hop_count:
        state.recorder.failed(
            f"{prefix}.hops",
            "presenter",
            error="binding",
            code="missing_hops",
            expected=str(len(hops)),
            got=str(parsed.hop_count),
            detail="the chain has fewer hops than the verifier expected",
        )
        return None
    tokens = verify_tokens(
        parsed, kind=kind, trust_root=trust_root, hops=hops, now=now, recorder=state.recorder, prefix=prefix
    )
    if tokens is not None:
        state.hashes[f"open_{kind}"] = tokens[0].sd_hash
        state.hashes[f"closed_{kind}"] = tokens[-1].sd_hash
    return tokens


def _constraints(
    state: _State, prefix: str, opens: Sequence[VerifiedToken], evaluate: Callable[[Mapping[str, Any]], None]
) -> None:
    for token in opens:
        for position, raw in enumerate(token.content.get("constraints", [])):
            kind = raw.get("type") if isinstance(raw, dict) else None
            _check(
                state,
                f"{prefix}.hop{token.index}.constraint{position}",
                token.party,
                functools.partial(evaluate, raw),
                expected=str(kind)[:100],
            )


def _admitted(
    state: _State,
    text: str,
    kind: Literal["checkout", "payment"],
    trust_root: TrustRoot,
    hops: Sequence[HopExpectation],
    now: float,
    later: Sequence[str],
    party: str,
) -> tuple[VerifiedToken, ...] | None:
    """The chain's verified tokens, or ``None`` after marking the stage's ``later`` checks not run:
    nothing is judged about mandates whose chain was not admitted."""
    tokens = _chain(state, text, kind=kind, trust_root=trust_root, hops=hops, now=now)
    if tokens is None:
        _skip(state, [f"v02.{kind}.{name}" for name in later], party, f"the {kind} chain was not admitted")
    return tokens


def _open_mandates(
    state: _State,
    prefix: str,
    tokens: tuple[VerifiedToken, ...],
    required: str,
    evaluate: Callable[[Mapping[str, Any]], None] | None,
    not_run: tuple[str, str] = ("", ""),
) -> None:
    """What the open mandates demand of the closed one: its pre-set values repeated, the
    ``required`` constraint present, then every constraint evaluated by ``evaluate`` -- or, with no
    verified counterpart to evaluate against (``evaluate`` is ``None``), each hop's constraints
    marked not run, by ``not_run`` (party, why)."""
    closed, opens = tokens[-1], tokens[:-1]
    _check(state, f"{prefix}.preset", closed.party, lambda: check_preset_values(opens, closed))
    _check(
        state,
        f"{prefix}.{required.rsplit('.', maxsplit=1)[-1]}_required",
        opens[0].party,
        lambda: check_reference_present(opens, required),
    )
    if evaluate is None:
        _skip(state, [f"{prefix}.hop{t.index}.constraints" for t in opens], *not_run)
        return
    _constraints(state, prefix, opens, evaluate)


def _checkout_stage(
    state: _State, evidence: V02Evidence, trust_root: TrustRoot, hops: Sequence[HopExpectation], now: float
) -> None:
    later = ["checkout_hash", "merchant_signature", "preset", "line_items_required"]
    tokens = _admitted(state, evidence.checkout_chain, "checkout", trust_root, hops, now, later, "merchant")
    state.checkout_tokens = tokens
    if tokens is None:
        return
    closed = tokens[-1]
    assert isinstance(closed.mandate, CheckoutMandate)
    mandate = closed.mandate
    computed = _check(state, "v02.checkout.checkout_hash", closed.party, lambda: check_checkout_hash(mandate))
    if computed is not None:
        state.hashes["checkout_jwt"] = computed
    merchant = _check(
        state,
        "v02.checkout.merchant_signature",
        "merchant",
        lambda: verify_checkout_jwt(mandate.checkout_jwt, trust_root=trust_root, closed_at=closed.iat),
    )
    state.checkout_jwt = merchant
    if merchant is None or computed is None:
        _open_mandates(
            state, "v02.checkout", tokens, "checkout.line_items", None, ("merchant", "no verified checkout")
        )
        return
    scope = CheckoutScope(checkout=merchant.checkout)
    _open_mandates(
        state,
        "v02.checkout",
        tokens,
        "checkout.line_items",
        lambda raw: evaluate_checkout_constraint(raw, scope),
    )


def _payment_stage(
    state: _State,
    text: str,
    trust_root: TrustRoot,
    hops: Sequence[HopExpectation],
    now: float,
    usage: MandateUsage | None,
) -> None:
    later = ["transaction_id", "payee", "amount", "preset", "reference_required"]
    tokens = _admitted(state, text, "payment", trust_root, hops, now, later, "payer")
    state.payment_tokens = tokens
    if tokens is None:
        return
    closed = tokens[-1]
    assert isinstance(closed.mandate, PaymentMandate)
    payment = closed.mandate
    checkout = state.checkout_jwt
    checkout_tokens = state.checkout_tokens
    if checkout is None or checkout_tokens is None:
        _skip(
            state,
            [f"v02.payment.{name}" for name in later[:3]],
            closed.party,
            "the checkout was not verified",
        )
    else:
        _check(
            state,
            "v02.payment.transaction_id",
            closed.party,
            lambda: check_transaction_id(payment, checkout.checkout_hash),
        )
        _check(
            state, "v02.payment.payee", closed.party, lambda: check_payment_payee(payment, checkout.checkout)
        )
        _check(
            state,
            "v02.payment.amount",
            closed.party,
            lambda: check_payment_amount(payment, checkout.checkout),
        )
    if checkout_tokens is None or closed.iat is None:
        _open_mandates(
            state,
            "v02.payment",
            tokens,
            "payment.reference",
            None,
            ("payer", "the checkout was not verified"),
        )
        return
    scope = PaymentScope(
        payment=payment, open_checkout_hash=checkout_tokens[0].sd_hash, closed_at=closed.iat, usage=usage
    )
    _open_mandates(
        state, "v02.payment", tokens, "payment.reference", lambda raw: evaluate_payment_constraint(raw, scope)
    )


def _receipt_stage(state: _State, evidence: V02Evidence, trust_root: TrustRoot, now: float) -> None:
    if evidence.checkout_receipt is not None:
        issuer = state.checkout_jwt.merchant if state.checkout_jwt else None
        state.checkout_receipt = _receipt(
            state, "checkout", evidence.checkout_receipt, state.checkout_tokens, issuer, trust_root, now
        )
    if evidence.payment_receipt is not None:
        state.payment_receipt = _receipt(
            state, "payment", evidence.payment_receipt, state.payment_tokens, None, trust_root, now
        )


def _receipt(
    state: _State,
    kind: ReceiptKind,
    token: str,
    tokens: tuple[VerifiedToken, ...] | None,
    expected_issuer: str | None,
    trust_root: TrustRoot,
    now: float,
) -> VerifiedReceipt | None:
    prefix = f"v02.receipt.{kind}"
    names = [f"{prefix}.signature", f"{prefix}.reference", f"{prefix}.status"]
    if tokens is None or (kind == "checkout" and expected_issuer is None):
        _skip(state, names, "receipt issuer", f"the {kind} mandate was not verified")
        return None
    closed = tokens[-1]
    verified: VerifiedReceipt | None = _check(
        state,
        names[0],
        "receipt issuer",
        lambda: verify_receipt_jwt(
            token, kind=kind, trust_root=trust_root, expected_issuer=expected_issuer, now=now
        ),
    )
    if verified is None:
        _skip(state, names[1:], "receipt issuer", "the receipt's signature did not verify")
        return None
    receipt = verified.receipt
    _check(state, names[1], receipt.iss, lambda: check_receipt_reference(receipt, closed))
    _check(state, names[2], receipt.iss, lambda: check_receipt_status(receipt))
    return verified


def _expiry(tokens: Sequence[VerifiedToken], now: float) -> float:
    """Until when a claim must be held: the earliest ``exp`` of the open mandates (after it no new
    closed mandate can be made from them), at most 30 days."""
    ends = [
        float(claims["exp"])
        for token in tokens[:-1]
        for claims in (token.payload, token.content)
        if isinstance(claims.get("exp"), int)
    ]
    return min([*ends, now + _MAX_CLAIM_SECONDS])


def _claim_all(store: ReplayStore, keys: Sequence[str], expires_at: float) -> bool:
    for key in keys:
        claim_or_raise(store, key, expires_at)
    return True


def _single_use(state: _State, store: ReplayStore, now: float) -> None:
    checkout_tokens = state.checkout_tokens
    checkout = state.checkout_jwt
    if checkout_tokens is None or checkout is None:  # pragma: no cover - only reached when every check passed
        return
    checkout_keys = [
        "ap2v02:checkout:" + checkout.checkout_hash,
        "ap2v02:open-checkout:" + _issuer_jwt_hash(checkout_tokens[0]),
    ]
    claimed = _check(
        state,
        "v02.single_use.checkout",
        checkout.merchant,
        lambda: _claim_all(store, checkout_keys, _expiry(checkout_tokens, now)),
    )
    payment_tokens = state.payment_tokens
    if payment_tokens is None:
        return
    if claimed is None:
        # Claims are taken in one fixed order, so exactly one racer gets past the checkout's claim.
        _skip(state, ["v02.single_use.payment"], payment_tokens[-1].party, "the checkout was already used")
        return
    payment = payment_tokens[-1].mandate
    assert isinstance(payment, PaymentMandate)
    payment_keys = ["ap2v02:payment:" + payment.transaction_id]
    recurring = any(
        isinstance(raw, dict) and raw.get("type") == "payment.agent_recurrence"
        for token in payment_tokens[:-1]
        for raw in token.content.get("constraints", [])
    )
    if not recurring:
        payment_keys.append("ap2v02:open-payment:" + _issuer_jwt_hash(payment_tokens[0]))
    _check(
        state,
        "v02.single_use.payment",
        payment_tokens[-1].party,
        lambda: _claim_all(store, payment_keys, _expiry(payment_tokens, now)),
    )


def _issuer_jwt_hash(token: VerifiedToken) -> str:
    # The issuer-signed JWT alone: the same open mandate whatever disclosures a presentation chose.
    return sd_digest(token.parsed.issuer_jwt)


def _run(
    evidence: V02Evidence,
    *,
    trust_root: TrustRoot,
    checkout_hops: Sequence[HopExpectation],
    payment_hops: Sequence[HopExpectation],
    now: Time,
    usage: MandateUsage | None,
    replay_store: ReplayStore | None,
) -> tuple[_State, VerificationReport]:
    if not isinstance(trust_root, TrustRoot):
        raise InvalidInput("trust_root must be a TrustRoot", code="bad_trust_root")
    if not isinstance(evidence, V02Evidence) or not isinstance(evidence.checkout_chain, str):
        raise InvalidInput("evidence must be V02Evidence with a checkout chain", code="bad_evidence")
    if evidence.payment_chain is None and payment_hops:
        raise InvalidInput("payment hop expectations given without a payment chain", code="bad_evidence")
    at = epoch(now)
    state = _State()
    _checkout_stage(state, evidence, trust_root, tuple(checkout_hops), at)
    if evidence.payment_chain is not None:
        _payment_stage(state, evidence.payment_chain, trust_root, tuple(payment_hops), at, usage)
    _receipt_stage(state, evidence, trust_root, at)
    if replay_store is not None:
        if state.recorder.all_passed:
            _single_use(state, replay_store, at)
        else:
            names = ["v02.single_use.checkout"] + (
                ["v02.single_use.payment"] if evidence.payment_chain else []
            )
            _skip(state, names, "verifier", "nothing is consumed unless every check passed")
    keys = _key_evidence(state)
    expectations = _expectations(checkout_hops, "checkout") | _expectations(payment_hops, "payment")
    unanchored = [
        f"the expected {name.rsplit('.', 1)[1]} of {name.rsplit('.', 1)[0]} came from the evidence"
        for name, item in expectations.items()
        if item["source"] == "evidence"
    ]
    report = VerificationReport(
        checks=tuple(state.recorder.checks),
        evaluated_at=iso(at),
        mode="offline",
        hashes=dict(state.hashes),
        anchored=not unanchored,
        unanchored_because=tuple(unanchored),
        keys=keys,
        expectations=expectations,
        statements=_statements(state, consumed=replay_store is not None),
        trust_root=trust_root.fingerprint,
    )
    return state, report


def _key_evidence(state: _State) -> tuple[KeyEvidence, ...]:
    """Every key the verdict rests on.  All are anchored: the root's and the merchant's come from the
    trust root by identifier and ``kid``, each hop key from a ``cnf`` signed by an admitted token."""
    keys: list[KeyEvidence] = []
    for tokens in (state.checkout_tokens, state.payment_tokens):
        for token in tokens or ():
            role = "issuer" if token.role == "root" else f"agent (cnf, hop {token.index})"
            keys.append(KeyEvidence(role, token.party, token.key, token.thumbprint, token.provenance, True))
    if state.checkout_jwt is not None:
        merchant = state.checkout_jwt
        keys.append(
            KeyEvidence(
                "merchant",
                merchant.merchant,
                merchant.key,
                merchant.thumbprint,
                f"trust root: merchants[{merchant.merchant[:120]}]",
                True,
            )
        )
    for kind, receipt in (("checkout", state.checkout_receipt), ("payment", state.payment_receipt)):
        if receipt is not None:
            keys.append(
                KeyEvidence(
                    f"{kind} receipt signer",
                    receipt.receipt.iss,
                    receipt.key,
                    receipt.thumbprint,
                    "trust root",
                    True,
                )
            )
    return tuple(keys)


def _expectations(hops: Sequence[HopExpectation], kind: str) -> dict[str, dict[str, str]]:
    table: dict[str, dict[str, str]] = {}
    for index, hop in enumerate(hops, start=1):
        table[f"{kind}.hop{index}.aud"] = {"value": hop.audience, "source": hop.source}
        table[f"{kind}.hop{index}.nonce"] = {"value": fingerprint(hop.nonce), "source": hop.source}
    return table


def _shown(text: str) -> str:
    """A party-supplied value inside a statement: one line, control characters made visible, capped."""
    return printable(text, limit=120)


def _statements(state: _State, *, consumed: bool) -> tuple[str, ...]:
    said: list[str] = []
    if state.checkout_jwt is not None:
        checkout = state.checkout_jwt.checkout
        total = checkout.total
        said.append(
            f"Merchant {_shown(checkout.merchant.id)} signed checkout {_shown(checkout.id)} for {total.amount} "
            f"minor units of {checkout.currency} ({len(checkout.line_items)} line items)."
        )
    if state.payment_tokens is not None:
        payment = state.payment_tokens[-1].mandate
        if isinstance(payment, PaymentMandate):
            said.append(
                f"The closed payment mandate pays {payment.payment_amount.amount} minor units of "
                f"{payment.payment_amount.currency} to {_shown(payment.payee.id)} with instrument "
                f"{_shown(payment.payment_instrument.type)}, bound to the checkout by transaction_id."
            )
    for tokens, kind in ((state.checkout_tokens, "checkout"), (state.payment_tokens, "payment")):
        if tokens is not None:
            said.append(
                f"The {kind} mandate was opened by {_shown(tokens[0].party)} and closed by the agent after "
                f"{len(tokens) - 1} hop(s)."
            )
    said.append(
        "Receipt references are checked as the specification defines them (the hash of the closing hop as "
        "presented), not as the official SDK computes them (its JWT alone)."
    )
    if not consumed:
        said.append("Nothing was consumed: single use is not part of an offline analysis.")
    return tuple(said)


def inspect_v02(
    evidence: V02Evidence,
    *,
    trust_root: TrustRoot,
    checkout_hops: Sequence[HopExpectation],
    payment_hops: Sequence[HopExpectation],
    now: Time,
    usage: MandateUsage | None,
    replay_store: ReplayStore | None,
) -> VerificationReport:
    """Run every check and report each one; never raises on a failed check.

    ``checkout_hops``/``payment_hops`` are the expected ``aud``/``nonce`` of each KB-SD-JWT hop, in
    chain order.  ``usage`` is the verifier's record of earlier payments under the open payment
    mandate (``None``: no history, so ``payment.budget``/``payment.agent_recurrence`` fail).
    ``replay_store=None`` only for offline dispute analysis: nothing is consumed and no
    ``v02.single_use.*`` check is reported.  Raises ``InvalidInput`` only for unusable arguments.
    """
    return _run(
        evidence,
        trust_root=trust_root,
        checkout_hops=checkout_hops,
        payment_hops=payment_hops,
        now=now,
        usage=usage,
        replay_store=replay_store,
    )[1]


def verify_v02(
    evidence: V02Evidence,
    *,
    trust_root: TrustRoot,
    checkout_hops: Sequence[HopExpectation],
    payment_hops: Sequence[HopExpectation],
    now: Time,
    usage: MandateUsage | None,
    replay_store: ReplayStore,
) -> VerifiedTransaction:
    """Verify and consume; return what the evidence proves or raise the first failed check's typed
    error (``code`` is the check's code; ``check``, ``party``, ``expected``, ``got`` are fields)."""
    if replay_store is None:
        raise InvalidInput("verify_v02 consumes the mandates: a replay store is required", code="bad_policy")
    state, report = _run(
        evidence,
        trust_root=trust_root,
        checkout_hops=checkout_hops,
        payment_hops=payment_hops,
        now=now,
        usage=usage,
        replay_store=replay_store,
    )
    report.raise_for_failure()
    tokens = state.checkout_tokens
    checkout = state.checkout_jwt
    if tokens is None or checkout is None:  # pragma: no cover - raise_for_failure raised
        raise MudrikaError("verification incomplete", code="incomplete")
    closed = tokens[-1].mandate
    assert isinstance(closed, CheckoutMandate)
    payment: PaymentMandate | None = None
    if state.payment_tokens is not None:
        last = state.payment_tokens[-1].mandate
        assert isinstance(last, PaymentMandate)
        payment = last
    checkout_receipt = state.checkout_receipt.receipt if state.checkout_receipt else None
    payment_receipt = state.payment_receipt.receipt if state.payment_receipt else None
    assert checkout_receipt is None or isinstance(checkout_receipt, CheckoutReceipt)
    assert payment_receipt is None or isinstance(payment_receipt, PaymentReceipt)
    return VerifiedTransaction(
        checkout=checkout.checkout,
        checkout_mandate=closed,
        payment_mandate=payment,
        checkout_receipt=checkout_receipt,
        payment_receipt=payment_receipt,
        report=report,
    )
