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
from typing import Any, Final

from mudrika.crypto.jose import header_kid
from mudrika.errors import IncompleteVerification, InvalidInput, MudrikaError
from mudrika.identity.anchoring import AnchoredKey
from mudrika.payments._time import Time, epoch, iso
from mudrika.payments._values import format_minor_units
from mudrika.payments.credential_status import (
    PinnedStatusKey,
    RecordedStatusList,
    StatusJudgement,
    judge_credential_status,
)
from mudrika.payments.report import (
    Check,
    Comparison,
    KeyEvidence,
    Recorder,
    StepFailed,
    VerificationReport,
    attestation,
    fingerprint,
    printable,
    record_credential_status,
    record_signing_time,
    status_key_evidence,
    status_statements,
)
from mudrika.payments.trustroot import TrustRoot
from mudrika.payments.v02._compare import compare_v02
from mudrika.payments.v02.bindings import (
    VerifiedCheckoutJwt,
    check_checkout_hash,
    check_payment_amount,
    check_payment_payee,
    check_preset_values,
    check_reference_present,
    check_transaction_id,
    merchant_anchor,
    read_checkout,
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
from mudrika.payments.v02.meanings import MEANINGS
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
    receipt_signer,
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
    """The merchant's checkout JWT, when its signature verified under a pinned key."""
    checkout_jwt_hash: str | None = None
    """H(presented ``checkout_jwt``), whenever the closed checkout mandate could be read."""
    checkout_seen: Checkout | None = None
    """The Checkout later checks compare against: the verified one, else what the JWT says."""
    merchant_key: KeyEvidence | None = None
    payment_tokens: tuple[VerifiedToken, ...] | None = None
    checkout_receipt: VerifiedReceipt | None = None
    payment_receipt: VerifiedReceipt | None = None
    receipt_keys: list[KeyEvidence] = field(default_factory=list)
    status_judgements: list[StatusJudgement] = field(default_factory=list)
    status_unproven: list[str] = field(default_factory=list)
    status_keys: list[KeyEvidence] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _StatusInputs:
    """The status lists recorded at the purchase (judged) and those supplied since (notes)."""

    recorded: tuple[RecordedStatusList, ...] = ()
    later: tuple[str, ...] = ()


def _check(
    state: _State,
    check_id: str,
    party: str,
    step: Callable[[], Any],
    *,
    basis: str | None = None,
    expected: str | None = None,
) -> Any:
    """Record one check; ``None`` (and the failure recorded) when it did not hold.  ``basis`` says,
    on a passed check, that it was evaluated on data no verified signature covers."""
    try:
        return state.recorder.run_or_stop(check_id, party, step, expected=expected, detail=basis)
    except StepFailed:
        return None


def _skip(state: _State, check_ids: Sequence[str], party: str, why: str) -> None:
    state.recorder.skip_each(check_ids, party, detail=f"not run: {why}")


def _unverified(tokens: Sequence[VerifiedToken], what: str) -> str | None:
    """The basis note for checks evaluated on a chain that did not fully verify, else ``None``."""
    if all(token.verified for token in tokens):
        return None
    return (
        f"evaluated on what the {what} says: a check of that chain failed, so no verified signature covers it"
    )


def _chain(
    state: _State,
    text: str,
    *,
    kind: MandateKind,
    trust_root: TrustRoot,
    hops: Sequence[HopExpectation],
    now: float,
    root_issuer: str | None,
) -> tuple[VerifiedToken, ...] | None:
    """Every token of the chain, evaluated; ``None`` only when the chain cannot be split at all."""
    prefix = f"v02.{kind}"
    parsed: ParsedChain | None = _check(state, f"{prefix}.wire", "presenter", lambda: parse_chain(text))
    if parsed is None:
        return None
    # Every hop is checked against its own expectation: a hop without one fails its aud check
    # (``no_expectation``); expectations for hops the chain does not have fail here, and the hops
    # it does have are still evaluated.
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
    tokens = verify_tokens(
        parsed,
        kind=kind,
        trust_root=trust_root,
        hops=hops,
        now=now,
        recorder=state.recorder,
        prefix=prefix,
        root_issuer=root_issuer,
    )
    state.hashes[f"open_{kind}"] = tokens[0].sd_hash
    state.hashes[f"closed_{kind}"] = tokens[-1].sd_hash
    return tokens


def _constraints(
    state: _State,
    prefix: str,
    opens: Sequence[VerifiedToken],
    evaluate: Callable[[Mapping[str, Any]], None],
    basis: str | None,
) -> None:
    for token in opens:
        if token.content is None:
            _skip(
                state,
                [f"{prefix}.hop{token.index}.constraints"],
                token.party,
                "the mandate could not be read",
            )
            continue
        for position, raw in enumerate(token.content.get("constraints", [])):
            kind = raw.get("type") if isinstance(raw, dict) else None
            _check(
                state,
                f"{prefix}.hop{token.index}.constraint{position}",
                token.party,
                functools.partial(evaluate, raw),
                basis=basis,
                expected=str(kind)[:100],
            )


def _open_mandates(
    state: _State,
    prefix: str,
    tokens: tuple[VerifiedToken, ...],
    required: str,
    evaluate: Callable[[Mapping[str, Any]], None] | None,
    basis: str | None,
    not_run: tuple[str, str] = ("", ""),
) -> None:
    """What the open mandates demand of the closed one: its pre-set values repeated, the
    ``required`` constraint present, then every constraint evaluated by ``evaluate`` -- or, with
    nothing to evaluate against (``evaluate`` is ``None``), each hop's constraints marked not run,
    by ``not_run`` (party, why).  A check whose mandates could not be read is marked not run."""
    closed, opens = tokens[-1], tokens[:-1]
    required_id = f"{prefix}.{required.rsplit('.', maxsplit=1)[-1]}_required"
    if any(token.content is None for token in tokens):
        _skip(state, [f"{prefix}.preset"], closed.party, "a mandate of the chain could not be read")
    else:
        _check(
            state, f"{prefix}.preset", closed.party, lambda: check_preset_values(opens, closed), basis=basis
        )
    if any(token.content is None for token in opens):
        _skip(state, [required_id], opens[0].party, "an open mandate could not be read")
    else:
        _check(
            state, required_id, opens[0].party, lambda: check_reference_present(opens, required), basis=basis
        )
    if evaluate is None:
        _skip(state, [f"{prefix}.hop{t.index}.constraints" for t in opens], not_run[0], not_run[1])
        return
    _constraints(state, prefix, opens, evaluate, basis)


def _merchant_key(
    mandate: CheckoutMandate, trust_root: TrustRoot, verified: VerifiedCheckoutJwt | None
) -> KeyEvidence:
    """The merchant's key record: anchored when the trust root pins the key the checkout JWT names
    (whether or not its signature then verified), not anchored otherwise."""
    if verified is not None:
        return KeyEvidence(
            "merchant",
            verified.merchant,
            verified.key,
            verified.thumbprint,
            f"trust root: merchants[{verified.merchant[:120]}]",
            True,
        )
    try:
        anchor = merchant_anchor(mandate.checkout_jwt, trust_root=trust_root)
    except MudrikaError as exc:
        return KeyEvidence(
            "merchant",
            "(the merchant the checkout names)",
            "",
            "",
            "not in the trust root",
            False,
            note=f"the checkout JWT's key is not pinned ({exc.code})",
        )
    return KeyEvidence(
        "merchant",
        anchor.owner,
        anchor.kid,
        anchor.key.thumbprint(),
        f"trust root: merchants[{anchor.owner[:120]}]",
        True,
        note="pinned, but the checkout JWT did not verify under it",
    )


def _checkout_stage(
    state: _State,
    evidence: V02Evidence,
    trust_root: TrustRoot,
    hops: Sequence[HopExpectation],
    now: float,
    root_issuer: str | None,
) -> None:
    later = ["checkout_hash", "merchant_signature", "preset", "line_items_required"]
    tokens = _chain(
        state,
        evidence.checkout_chain,
        kind="checkout",
        trust_root=trust_root,
        hops=hops,
        now=now,
        root_issuer=root_issuer,
    )
    state.checkout_tokens = tokens
    if tokens is None:
        _skip(
            state,
            [f"v02.checkout.{name}" for name in later],
            "merchant",
            "the checkout chain could not be read",
        )
        return
    basis = _unverified(tokens, "checkout chain")
    closed = tokens[-1]
    mandate = closed.mandate if isinstance(closed.mandate, CheckoutMandate) else None
    if mandate is None:
        _skip(
            state,
            ["v02.checkout.checkout_hash", "v02.checkout.merchant_signature"],
            closed.party,
            "the closed checkout mandate could not be read",
        )
    else:
        closed_mandate = mandate
        computed = _check(
            state,
            "v02.checkout.checkout_hash",
            closed.party,
            lambda: check_checkout_hash(closed_mandate),
            basis=basis,
        )
        if computed is not None:
            state.hashes["checkout_jwt"] = computed
        if closed_mandate.checkout_jwt.isascii():
            state.checkout_jwt_hash = sd_digest(closed_mandate.checkout_jwt)
        verified: VerifiedCheckoutJwt | None = _check(
            state,
            "v02.checkout.merchant_signature",
            "merchant",
            lambda: verify_checkout_jwt(
                closed_mandate.checkout_jwt, trust_root=trust_root, closed_at=closed.iat
            ),
        )
        state.checkout_jwt = verified
        state.merchant_key = _merchant_key(closed_mandate, trust_root, verified)
        if verified is not None:
            state.checkout_seen = verified.checkout
        else:
            try:
                state.checkout_seen = read_checkout(closed_mandate.checkout_jwt)
            except MudrikaError:
                state.checkout_seen = None
    seen = state.checkout_seen
    if seen is None:
        _open_mandates(
            state,
            "v02.checkout",
            tokens,
            "checkout.line_items",
            None,
            basis,
            ("merchant", "no readable checkout to evaluate against"),
        )
        return
    scope = CheckoutScope(checkout=seen)
    if state.checkout_jwt is None:
        basis = "evaluated on what the checkout JWT says: the merchant's signature did not verify"
    _open_mandates(
        state,
        "v02.checkout",
        tokens,
        "checkout.line_items",
        lambda raw: evaluate_checkout_constraint(raw, scope),
        basis,
    )


def _payment_stage(
    state: _State,
    text: str,
    trust_root: TrustRoot,
    hops: Sequence[HopExpectation],
    now: float,
    usage: MandateUsage | None,
    root_issuer: str | None,
) -> None:
    later = ["transaction_id", "payee", "amount", "preset", "reference_required"]
    tokens = _chain(
        state, text, kind="payment", trust_root=trust_root, hops=hops, now=now, root_issuer=root_issuer
    )
    state.payment_tokens = tokens
    if tokens is None:
        _skip(
            state, [f"v02.payment.{name}" for name in later], "payer", "the payment chain could not be read"
        )
        return
    closed = tokens[-1]
    payment = closed.mandate if isinstance(closed.mandate, PaymentMandate) else None
    basis = _unverified(tokens, "payment chain")
    if state.checkout_tokens is not None and basis is None:
        basis = _unverified(state.checkout_tokens, "checkout chain")
    if basis is None and state.checkout_jwt is None:
        basis = "evaluated on what the checkout JWT says: the merchant's signature did not verify"
    checkout_hash, checkout = state.checkout_jwt_hash, state.checkout_seen
    if payment is None:
        _skip(
            state,
            [f"v02.payment.{name}" for name in later[:3]],
            closed.party,
            "the closed payment mandate could not be read",
        )
    else:
        paid = payment
        if checkout_hash is None:
            _skip(state, ["v02.payment.transaction_id"], closed.party, "the checkout JWT could not be read")
        else:
            _check(
                state,
                "v02.payment.transaction_id",
                closed.party,
                lambda: check_transaction_id(paid, checkout_hash),
                basis=basis,
            )
        if checkout is None:
            _skip(
                state,
                ["v02.payment.payee", "v02.payment.amount"],
                closed.party,
                "the checkout could not be read",
            )
        else:
            _check(
                state,
                "v02.payment.payee",
                closed.party,
                lambda: check_payment_payee(paid, checkout),
                basis=basis,
            )
            _check(
                state,
                "v02.payment.amount",
                closed.party,
                lambda: check_payment_amount(paid, checkout),
                basis=basis,
            )
    checkout_tokens = state.checkout_tokens
    if payment is None or checkout_tokens is None or closed.iat is None:
        _open_mandates(
            state,
            "v02.payment",
            tokens,
            "payment.reference",
            None,
            basis,
            ("payer", "the closed payment mandate, its iat or the checkout chain could not be read"),
        )
        return
    scope = PaymentScope(
        payment=payment, open_checkout_hash=checkout_tokens[0].sd_hash, closed_at=closed.iat, usage=usage
    )
    _open_mandates(
        state,
        "v02.payment",
        tokens,
        "payment.reference",
        lambda raw: evaluate_payment_constraint(raw, scope),
        basis,
    )


def _receipt_stage(state: _State, evidence: V02Evidence, trust_root: TrustRoot, now: float) -> None:
    if evidence.checkout_receipt is not None:
        if state.checkout_jwt is not None:
            issuer: str | None = state.checkout_jwt.merchant
        else:
            issuer = state.checkout_seen.merchant.id if state.checkout_seen is not None else None
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
    role = f"{kind} receipt signer"
    if tokens is None or (kind == "checkout" and expected_issuer is None):
        _skip(state, names, "receipt issuer", f"the {kind} mandate could not be read")
        state.receipt_keys.append(
            KeyEvidence(
                role, "(not established)", "", "", "not evaluated", None, note="the receipt was not checked"
            )
        )
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
    state.receipt_keys.append(_receipt_key(role, token, kind, trust_root, verified))
    if verified is None:
        _skip(state, names[1:], "receipt issuer", "the receipt's signature did not verify")
        return None
    receipt = verified.receipt
    _check(state, names[1], receipt.iss, lambda: check_receipt_reference(receipt, closed))
    _check(state, names[2], receipt.iss, lambda: check_receipt_status(receipt))
    return verified


def _receipt_key(
    role: str, token: str, kind: ReceiptKind, trust_root: TrustRoot, verified: VerifiedReceipt | None
) -> KeyEvidence:
    if verified is not None:
        return KeyEvidence(role, verified.receipt.iss, verified.key, verified.thumbprint, "trust root", True)
    try:
        anchor = receipt_signer(token, kind=kind, trust_root=trust_root)
    except MudrikaError as exc:
        return KeyEvidence(
            role,
            "(the receipt's iss)",
            "",
            "",
            "not in the trust root",
            False,
            note=f"the receipt's key is not pinned ({exc.code})",
        )
    return KeyEvidence(
        role,
        anchor.owner,
        anchor.kid,
        anchor.key.thumbprint(),
        "trust root",
        True,
        note="pinned, but the receipt did not verify under it",
    )


def _root_issuer_of(token: VerifiedToken, root_issuer: str | None) -> str | None:
    iss = token.payload.get("iss") if token.payload is not None else None
    return iss if isinstance(iss, str) else root_issuer


def _anchor_or_none(find: Callable[..., AnchoredKey], *args: Any, **kwargs: Any) -> AnchoredKey | None:
    """The anchored key a signature that already verified was checked with (its window is read)."""
    try:
        return find(*args, **kwargs)
    except MudrikaError:
        return None


def _numeric(claims: Mapping[str, Any] | None, name: str) -> float | None:
    value = claims.get(name) if claims is not None else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _as_of_purchase_stage(
    state: _State,
    evidence: V02Evidence,
    trust_root: TrustRoot,
    now: float,
    root_issuer: str | None,
    status: _StatusInputs,
) -> None:
    """Was each pinned key inside its window when it signed, and had either open mandate been
    revoked by the purchase?  Only for signatures that verified, and only where something is
    pinned or claimed (a window, a ``status`` claim).

    Who dates whom (a time outside the judged key's control that the signature predates): a root
    mandate is dated by the receipt over its chain (signed by the merchant or the payment
    processor, never by a key the issuer vouches for); the merchant's checkout JWT by the shopping
    agent's closed checkout mandate, whose ``checkout_hash`` covers it (the agent's key is vouched
    for by the issuer, not the merchant).  A receipt is dated by nothing after it.
    """
    rec = state.recorder
    receipts = {"checkout": state.checkout_receipt, "payment": state.payment_receipt}
    for kind, tokens in (("checkout", state.checkout_tokens), ("payment", state.payment_tokens)):
        if tokens is None or not tokens[0].signed:
            continue
        root = tokens[0]
        issuer = _root_issuer_of(root, root_issuer)
        kid = root.header.get("kid") if root.header is not None else None
        if issuer is None:
            continue
        receipt = receipts[kind]
        if isinstance(kid, str):
            anchor = _anchor_or_none(
                trust_root.anchor, "issuer", issuer, kid, algorithms=trust_root.algorithm_set
            )
            if anchor is not None:
                record_signing_time(
                    rec,
                    f"v02.{kind}.root_key_window",
                    root.party,
                    anchor,
                    key_id=anchor.kid,
                    signer_claimed=_numeric(root.payload, "iat"),
                    attested=attestation(
                        _numeric(receipt.claims, "iat") if receipt is not None else None,
                        f"the {kind} receipt over this chain",
                    ),
                )
        if root.payload is not None and "status" in root.payload:

            def issuer_key(header: Mapping[str, Any], issuer: str = issuer) -> PinnedStatusKey:
                anchored = trust_root.anchor(
                    "issuer",
                    issuer,
                    header_kid(header, what="the status list token"),
                    algorithms=trust_root.algorithm_set,
                )
                return PinnedStatusKey(anchored.trusted, anchored.validity)

            judgement = judge_credential_status(
                root.payload,
                status.recorded,
                key=issuer_key,
                issuer=issuer,
                purchase_time=now,
                max_age=trust_root.status_rules.max_age_seconds,
                when_absent=trust_root.status_rules.when_absent,
                later=status.later,
            )
            if judgement is None:  # not reached: the payload names a status (checked above)
                continue
            state.status_judgements.append(judgement)
            status_key = status_key_evidence(judgement, owner=issuer, role=f"issuer ({kind} status list)")
            if status_key is not None:
                state.status_keys.append(status_key)
            reason = record_credential_status(
                rec, f"v02.{kind}.status", root.party, judgement, key_id=root.key
            )
            if reason is not None:
                state.status_unproven.append(reason)
    checkout_jwt, tokens = state.checkout_jwt, state.checkout_tokens
    if checkout_jwt is not None and tokens is not None and tokens[-1].signed:
        closed = tokens[-1].mandate
        anchor = (
            _anchor_or_none(merchant_anchor, closed.checkout_jwt, trust_root=trust_root)
            if isinstance(closed, CheckoutMandate)
            else None
        )
        if anchor is not None:
            record_signing_time(
                rec,
                "v02.checkout.merchant_key_window",
                "merchant",
                anchor,
                key_id=anchor.kid,
                signer_claimed=_numeric(checkout_jwt.raw, "iat"),
                attested=attestation(
                    _numeric(tokens[-1].payload, "iat"),
                    "the shopping agent's checkout mandate over this checkout",
                ),
            )
    receipt_tokens: tuple[tuple[ReceiptKind, str | None], ...] = (
        ("checkout", evidence.checkout_receipt),
        ("payment", evidence.payment_receipt),
    )
    for receipt_kind, token in receipt_tokens:
        verified = receipts[receipt_kind]
        if token is None or verified is None:
            continue
        anchor = _anchor_or_none(receipt_signer, token, kind=receipt_kind, trust_root=trust_root)
        if anchor is not None:
            record_signing_time(
                rec,
                f"v02.receipt.{receipt_kind}.key_window",
                "receipt issuer",
                anchor,
                key_id=anchor.kid,
                signer_claimed=_numeric(verified.claims, "iat"),
                attested=None,
            )


def _expiry(tokens: Sequence[VerifiedToken], now: float) -> float:
    """Until when a claim must be held: the earliest ``exp`` of the open mandates (after it no new
    closed mandate can be made from them), at most 30 days."""
    ends = [
        float(claims["exp"])
        for token in tokens[:-1]
        for claims in (token.payload or {}, token.content or {})
        if isinstance(claims.get("exp"), int)
    ]
    return min([*ends, now + _MAX_CLAIM_SECONDS])


def _claim_all(store: ReplayStore, keys: Sequence[str], expires_at: float) -> bool:
    for key in keys:
        claim_or_raise(store, key, expires_at)
    return True


def _single_use(state: _State, store: ReplayStore, now: float) -> None:
    """Claim the checkout, then the payment.  Reached only when every check passed, so every value
    used here was verified; each is still tested explicitly (never an ``assert``), and a missing one
    is recorded as a failed claim rather than taken on trust."""
    checkout_tokens = state.checkout_tokens
    checkout = state.checkout_jwt
    if checkout_tokens is None or checkout is None:
        state.recorder.failed(
            "v02.single_use.checkout",
            "verifier",
            error="verification",
            code="verification_incomplete",
            detail="nothing to claim: the checkout was not verified",
        )
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
    party = payment_tokens[-1].party
    if claimed is None:
        # Claims are taken in one fixed order, so exactly one racer gets past the checkout's claim.
        _skip(state, ["v02.single_use.payment"], party, "the checkout was already used")
        return
    payment = payment_tokens[-1].mandate
    if not isinstance(payment, PaymentMandate):
        state.recorder.failed(
            "v02.single_use.payment",
            party,
            error="verification",
            code="verification_incomplete",
            detail="nothing to claim: the closed payment mandate was not verified",
        )
        return
    payment_keys = ["ap2v02:payment:" + payment.transaction_id]
    recurring = any(
        isinstance(raw, dict) and raw.get("type") == "payment.agent_recurrence"
        for token in payment_tokens[:-1]
        for raw in (token.content or {}).get("constraints", [])
    )
    if not recurring:
        payment_keys.append("ap2v02:open-payment:" + _issuer_jwt_hash(payment_tokens[0]))
    _check(
        state,
        "v02.single_use.payment",
        party,
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
    root_issuer: str | None,
    status: _StatusInputs,
) -> tuple[_State, VerificationReport]:
    if not isinstance(trust_root, TrustRoot):
        raise InvalidInput("trust_root must be a TrustRoot", code="bad_trust_root")
    if not isinstance(evidence, V02Evidence) or not isinstance(evidence.checkout_chain, str):
        raise InvalidInput("evidence must be V02Evidence with a checkout chain", code="bad_evidence")
    if evidence.payment_chain is None and payment_hops:
        raise InvalidInput("payment hop expectations given without a payment chain", code="bad_evidence")
    if root_issuer is not None and (
        not isinstance(root_issuer, str) or not trust_root.trusts_issuer(root_issuer)
    ):
        # The analyst names an issuer of their own trust root, or none: never an issuer to trust ad hoc.
        raise InvalidInput("root_issuer must be an issuer of the trust root", code="bad_root_issuer")
    at = epoch(now)
    state = _State()
    _checkout_stage(state, evidence, trust_root, tuple(checkout_hops), at, root_issuer)
    if evidence.payment_chain is not None:
        _payment_stage(state, evidence.payment_chain, trust_root, tuple(payment_hops), at, usage, root_issuer)
    _receipt_stage(state, evidence, trust_root, at)
    _as_of_purchase_stage(state, evidence, trust_root, at, root_issuer, status)
    if replay_store is not None:
        if state.recorder.all_passed:
            _single_use(state, replay_store, at)
        else:
            names = ["v02.single_use.checkout"] + (
                ["v02.single_use.payment"] if evidence.payment_chain else []
            )
            _skip(state, names, "verifier", "nothing is consumed unless every check passed")
    keys = _key_evidence(state, payment_given=evidence.payment_chain is not None)
    expectations = _expectations(checkout_hops, "checkout") | _expectations(payment_hops, "payment")
    unanchored = [
        f"the expected {name.rsplit('.', 1)[1]} of {name.rsplit('.', 1)[0]} came from the evidence"
        for name, item in expectations.items()
        if item["source"] == "evidence"
    ] + state.status_unproven
    checks = tuple(state.recorder.checks)
    report = VerificationReport(
        checks=checks,
        evaluated_at=iso(at),
        mode="offline",
        hashes=dict(state.hashes),
        unanchored_because=tuple(unanchored),
        keys=keys,
        expectations=expectations,
        # Both chains usually name the same list entry: each sentence is said once.
        statements=_statements(state, consumed=replay_store is not None)
        + tuple(
            dict.fromkeys(
                sentence for judgement in state.status_judgements for sentence in status_statements(judgement)
            )
        ),
        trust_root=trust_root.fingerprint,
        comparisons=_comparisons(state, checks),
        meanings=MEANINGS,
    )
    return state, report


def _comparisons(state: _State, checks: Sequence[Check]) -> tuple[Comparison, ...]:
    """The values that differ, after a failure (a report whose checks all passed has none to show)."""
    if state.recorder.all_passed:
        return ()
    passed = {check.id for check in checks if check.passed}
    return compare_v02(
        checkout_tokens=state.checkout_tokens,
        payment_tokens=state.payment_tokens,
        checkout=state.checkout_seen,
        merchant_verified=state.checkout_jwt is not None,
        receipts={"checkout": state.checkout_receipt, "payment": state.payment_receipt},
        passed=passed.__contains__,
    )


def _key_evidence(state: _State, *, payment_given: bool) -> tuple[KeyEvidence, ...]:
    """Every key the verdict rests on, each with its own anchoring: the root's from the trust root
    (by issuer and ``kid``, or ``x5c`` path-validated), each hop's from the ``cnf`` of the token
    before it -- anchored only when that token verified under an anchored key --, the merchant's and
    the receipt signers' from the trust root.  A party no stage reached is listed as not evaluated."""
    keys: list[KeyEvidence] = []
    chains = [("checkout", state.checkout_tokens)] + (
        [("payment", state.payment_tokens)] if payment_given else []
    )
    for kind, tokens in chains:
        if tokens is None:
            keys.append(
                KeyEvidence(
                    f"issuer ({kind})",
                    "(not established)",
                    "",
                    "",
                    "not evaluated",
                    None,
                    note=f"the {kind} chain could not be read",
                )
            )
            continue
        for token in tokens:
            role = "issuer" if token.role == "root" else f"agent (cnf, hop {token.index})"
            anchored = {"anchored": True, "unanchored": False, "not evaluated": None}[token.anchoring]
            note = None
            if token.role == "root" and token.issuer_source == "verifier":
                note = "issuer named by the verifier (root_issuer); the root mandate carries no iss"
            keys.append(
                KeyEvidence(
                    role,
                    token.party,
                    token.key or "",
                    token.thumbprint or "",
                    token.provenance,
                    anchored,
                    note,
                )
            )
    if state.merchant_key is not None:
        keys.append(state.merchant_key)
    elif state.checkout_tokens is not None:
        keys.append(
            KeyEvidence(
                "merchant",
                "(not established)",
                "",
                "",
                "not evaluated",
                None,
                note="the closed checkout mandate could not be read",
            )
        )
    keys.extend(state.receipt_keys)
    keys.extend(state.status_keys)
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


def _total_or_none(checkout: Checkout) -> int | None:
    """The checkout's total in minor units, or ``None`` when it does not have exactly one (an
    unverified checkout may not; the amount check reports that)."""
    try:
        return checkout.total.amount
    except MudrikaError:
        return None


def _statements(state: _State, *, consumed: bool) -> tuple[str, ...]:
    said: list[str] = []
    checkout = state.checkout_seen
    total = _total_or_none(checkout) if checkout is not None else None
    if checkout is not None and total is not None:
        described = (
            f"for {format_minor_units(checkout.currency, total)} ({len(checkout.line_items)} line items)"
        )
        said.append(
            f"Merchant {_shown(checkout.merchant.id)} signed checkout {_shown(checkout.id)} {described}."
            if state.checkout_jwt is not None
            else f"A checkout JWT that did not verify names merchant {_shown(checkout.merchant.id)} and "
            f"checkout {_shown(checkout.id)} {described}."
        )
    if state.payment_tokens is not None:
        payment = state.payment_tokens[-1].mandate
        if isinstance(payment, PaymentMandate):
            said.append(
                "The closed payment mandate pays "
                f"{format_minor_units(payment.payment_amount.currency, payment.payment_amount.amount)} "
                f"to {_shown(payment.payee.id)} with instrument "
                f"{_shown(payment.payment_instrument.type)}, bound to the checkout by transaction_id."
            )
    for tokens, kind in ((state.checkout_tokens, "checkout"), (state.payment_tokens, "payment")):
        if tokens is None:
            continue
        root = tokens[0]
        said.append(
            f"The {kind} mandate was opened by {_shown(root.party)} and closed by the agent after "
            f"{len(tokens) - 1} hop(s)."
        )
        if root.issuer_source == "verifier":
            said.append(
                f"The {kind} root mandate carries no iss: its issuer {_shown(root.party)} was supplied by "
                "the verifier (root_issuer), not asserted by the token."
            )
        if not all(token.verified for token in tokens):
            said.append(
                f"A check of the {kind} chain failed: its other checks were still evaluated, on what its "
                "tokens say; they show whether the evidence is consistent, not who signed it."
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
    root_issuer: str | None = None,
    status_lists: Sequence[RecordedStatusList] = (),
    later_status_lists: Sequence[str] = (),
) -> VerificationReport:
    """Run every check and report each one; never raises on a failed check.

    ``checkout_hops``/``payment_hops`` are the expected ``aud``/``nonce`` of each KB-SD-JWT hop, in
    chain order.  ``usage`` is the verifier's record of earlier payments under the open payment
    mandate (``None``: no history, so ``payment.budget``/``payment.agent_recurrence`` fail).
    ``replay_store=None`` only for offline dispute analysis: nothing is consumed and no
    ``v02.single_use.*`` check is reported.  ``root_issuer`` names the issuer (an entry of
    ``trust_root.issuers``) the verifier expects to have signed the root mandates: a root without
    ``iss`` (as the specification's examples and its SDK write them) is judged under it, and a root
    whose ``iss`` names another fails ``iss_not_expected``; ``None``: each root must name its issuer.
    ``status_lists``: the status list tokens recorded at the purchase, on which an open mandate's
    ``status`` claim is judged as of ``now``; ``later_status_lists``: lists from after the purchase,
    shown as notes, never judged into the verdict (``docs/disputes-over-time.md``).
    Raises ``InvalidInput`` only for unusable arguments.
    """
    return _run(
        evidence,
        trust_root=trust_root,
        checkout_hops=checkout_hops,
        payment_hops=payment_hops,
        now=now,
        usage=usage,
        replay_store=replay_store,
        root_issuer=root_issuer,
        status=_StatusInputs(tuple(status_lists), tuple(later_status_lists)),
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
    root_issuer: str | None = None,
    status_lists: Sequence[RecordedStatusList] = (),
) -> VerifiedTransaction:
    """Verify and consume; return what the evidence proves or raise the first failed check's typed
    error (``code`` is the check's code; ``check``, ``party``, ``expected``, ``got`` are fields).
    An open mandate naming a status list needs that list, fetched at the purchase, in
    ``status_lists`` (and kept in the evidence bundle)."""
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
        root_issuer=root_issuer,
        status=_StatusInputs(tuple(status_lists)),
    )
    report.raise_for_failure()
    # raise_for_failure raised unless every check passed; each value is still tested explicitly
    # (never an ``assert``, which ``python -O`` removes) before it is vouched for.
    tokens = state.checkout_tokens
    checkout = state.checkout_jwt
    closed = tokens[-1].mandate if tokens is not None else None
    if tokens is None or checkout is None or not isinstance(closed, CheckoutMandate):
        raise IncompleteVerification("the checkout was not fully verified")
    payment: PaymentMandate | None = None
    if state.payment_tokens is not None:
        last = state.payment_tokens[-1].mandate
        if not isinstance(last, PaymentMandate):
            raise IncompleteVerification("the payment was not fully verified")
        payment = last
    checkout_receipt = state.checkout_receipt.receipt if state.checkout_receipt else None
    payment_receipt = state.payment_receipt.receipt if state.payment_receipt else None
    if not (checkout_receipt is None or isinstance(checkout_receipt, CheckoutReceipt)) or not (
        payment_receipt is None or isinstance(payment_receipt, PaymentReceipt)
    ):
        raise IncompleteVerification("a receipt was not verified as its kind")
    return VerifiedTransaction(
        checkout=checkout.checkout,
        checkout_mandate=closed,
        payment_mandate=payment,
        checkout_receipt=checkout_receipt,
        payment_receipt=payment_receipt,
        report=report,
    )
