"""Verify an AP2 v0.1 chain intent → cart → payment: :func:`verify_chain` and :func:`inspect_chain`.

The two functions run the same checks (ids in ``docs/payments.md`` "Checks"):

* :func:`inspect_chain` returns a :class:`~mudrika.payments.chain.report.VerificationReport` and never
  raises on a failed check — for dispute tools and logs that must show everything;
* :func:`verify_chain` returns the :class:`VerifiedChain` or raises the first failed check's typed
  error (``SignatureError``, ``ExpiredError``, ``ReplayError``, ``BindingError``, ``PolicyDenied``,
  ``UntrustedKeyError``, ``DocumentError`` when a signer's DID has no usable document (offline: none
  in the evidence); ``InvalidInput`` for a mandate that does not parse; ``ResolutionError`` when a
  key could not be fetched).  ``except VerificationError`` always means *refuse*.

The chain is a small state machine (python-tuf's trusted metadata set): a link is admitted only
after the link before it verified.

    (1) input    the three mandates parse strictly and match the AP2 v0.1 schema
    (2) intent   the user's intent: constraints understood, signature (or safely unsigned), expiry
    (3) cart     no unsigned member; the merchant's signature and every claim of it; expiry, total
    (4) payment  no unsigned member; the credential (issuer in the trust root, signature,
                 disclosures, time claims, vct, cnf, sub) and the user's key-binding JWT (typ, time,
                 aud, nonce, sd_hash, transaction_data, intent binding)
    (5) links    ids, totals, method, merchant, timestamps across the mandates; intent constraints;
                 no intent member left unsigned
    (6) replay   the merchant's jti and the KB nonce are claimed as single use — last, so a chain
                 refused for any other reason never burns a single-use value

When a stage does not pass, every check of the later stages is reported as ``skipped``.

Trust comes from ``trust_root=`` (a :class:`~mudrika.payments.trustroot.TrustRoot`: issuers and
their keys, pinned merchants, algorithms, credential types, leeway, maximum ages, legacy chains),
a required keyword without a default.  ``keys=`` is *evidence* (a bundle's snapshots, a resolver):
a key only it vouches for leaves the verdict UNANCHORED.  The report lists every key the verdict
rests on with its RFC 7638 thumbprint and provenance, and says why a verdict is not anchored.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from mudrika.crypto.jcs import DEFAULT_MAX_BYTES
from mudrika.crypto.keys import PublicKey
from mudrika.errors import InvalidInput, MudrikaError, VerificationError
from mudrika.payments.chain._cart import MERCHANT_CLAIM_CHECKS, CartFacts, check_cart, merchant_jti_key
from mudrika.payments.chain._common import (
    DEFAULT_ALGORITHMS,
    Recorder,
    Time,
    epoch,
    fingerprint,
    iso,
)
from mudrika.payments.chain._compare import chain_facts, compare_values
from mudrika.payments.chain._hashes import chain_hashes
from mudrika.payments.chain._intent import INTENT_JWS_CHECKS, IntentFacts, check_intent
from mudrika.payments.chain._jws import JWS_PHASES
from mudrika.payments.chain._keys import (
    PROVENANCE_CLASSES,
    Anchors,
    KeyMaterial,
    KeySource,
    ResolvedKey,
    StageRules,
)
from mudrika.payments.chain._links import LINK_CHECKS, check_links
from mudrika.payments.chain._payment import (
    ISSUER_CHECKS,
    KB_CHECKS,
    LEGACY_STATEMENT,
    PaymentFacts,
    check_payment,
    kb_nonce_key,
)
from mudrika.payments.chain._trust import Trust
from mudrika.payments.chain.report import KeyEvidence, VerificationReport
from mudrika.payments.models import Ap2Model, CartMandate, IntentMandate, PaymentMandate, Received, receive
from mudrika.payments.trustroot import TrustRoot, UnsafeNoTrustRoot
from mudrika.stores.replay import ReplayStore

__all__ = [
    "DEFAULT_ALGORITHMS",
    "EXPECTATIONS",
    "KeyMaterial",
    "KeySource",
    "ResolvedKey",
    "VerifiedChain",
    "inspect_chain",
    "verify_chain",
]

_M = TypeVar("_M", bound=Ap2Model)

MandateInput = Received[Any] | bytes | str | Mapping[str, Any]

#: The per-case expectations; each comes from the analyst (or the trust root) or, flagged, the evidence.
EXPECTATIONS: Final = ("merchant_audience", "kb_audience", "kb_nonce")
_EXPECTATION_NAMES: Final = frozenset(EXPECTATIONS)

# Every check id of stages (2)-(6), with its party, for reporting skipped stages.
_INTENT_STAGE: Final = (
    ("intent.constraints", "user"),
    ("intent.authorization", "user"),
    *((name, "user") for name in INTENT_JWS_CHECKS),
    ("intent.expiry", "user"),
)
_CART_STAGE: Final = (
    ("cart.unsigned_members", "merchant"),
    ("merchant.jws.present", "merchant"),
    *((f"merchant.jws.{name}", "merchant") for name in JWS_PHASES),
    *((name, "merchant") for name in MERCHANT_CLAIM_CHECKS),
    ("cart.expiry", "merchant"),
    ("cart.total", "merchant"),
)
_PAYMENT_STAGE: Final = (
    ("payment.unsigned_members", "user"),
    ("user.authorization.present", "user"),
    ("issuer.sdjwt.format", "issuer"),
    *((name, "issuer") for name in ISSUER_CHECKS),
    *((name, "user") for name in KB_CHECKS),
)
_REPLAY_STAGE: Final = (("replay.merchant_jti", "merchant"), ("replay.kb_nonce", "user"))


@dataclass(frozen=True)
class VerifiedChain:
    """A chain that passed every check, anchored in the trust root: the mandates and the facts.

    :attr:`report` is drawn on first use: a caller that only needs the verdict never pays for the
    texts of ~60 checks.  Everything it is drawn from (the parsed mandates and tokens, the keys, the
    values each check saw) is immutable, so it is the report an eager verifier would have returned.
    """

    intent: Received[IntentMandate]
    cart: Received[CartMandate]
    payment: Received[PaymentMandate]
    merchant_did: str
    merchant_kid: str
    issuer: str
    user_key: PublicKey
    user_did: str | None
    """The DID that signed the intent (``None`` for an unsigned intent)."""
    intent_bound: bool
    """False only for a legacy chain the trust root accepted: the intent is not bound to the payment."""
    merchant_claims: Mapping[str, Any] = field(repr=False)
    credential: Mapping[str, Any] = field(repr=False)
    kb_claims: Mapping[str, Any] = field(repr=False)
    draw_report: Callable[[], VerificationReport] = field(repr=False, compare=False)
    """Builds :attr:`report`; called once, on first use."""

    @functools.cached_property
    def report(self) -> VerificationReport:
        """Every check of the verification, with the verdict (OK) and the keys it rests on."""
        return self.draw_report()


@dataclass(frozen=True, slots=True)
class _Policy:
    trust: Trust
    rules: StageRules
    """What every signed stage (intent, cart, payment) checks against."""
    merchant_audience: str
    kb_audience: str
    kb_nonce: str = field(repr=False)  # the processor's challenge: never in a repr or a log
    asserted_by_evidence: frozenset[str]
    max_bytes: int

    def expectation_sources(self) -> dict[str, dict[str, str]]:
        values = {
            "merchant_audience": self.merchant_audience,
            "kb_audience": self.kb_audience,
            "kb_nonce": fingerprint(self.kb_nonce),
        }
        return {
            name: {"value": value, "source": "evidence" if name in self.asserted_by_evidence else "analyst"}
            for name, value in values.items()
        }


def _policy(
    *,
    trust_root: TrustRoot | UnsafeNoTrustRoot,
    keys: KeySource,
    merchant_audience: str,
    kb_audience: str,
    kb_nonce: str,
    asserted_by_evidence: Collection[str],
    now: Time,
    max_bytes: int,
) -> _Policy:
    """Check the caller's expectations; a bad expectation is a usage error, never a failed check."""
    # Duck-typed on purpose: isinstance() against the runtime-checkable KeySource Protocol took
    # ~7 µs per call against ~0.13 µs for these two attribute reads (timeit, Python 3.11).
    if not callable(getattr(keys, "assertion_key", None)) or not isinstance(
        getattr(keys, "offline", None), bool
    ):
        raise InvalidInput("keys must be a KeySource (e.g. KeyMaterial)", code="bad_policy")
    trust = Trust.of(trust_root)
    for name, value in (
        ("merchant_audience", merchant_audience),
        ("kb_audience", kb_audience),
        ("kb_nonce", kb_nonce),
    ):
        if not isinstance(value, str) or not value:
            raise InvalidInput(f"{name} must be a non-empty string", code="bad_policy", expectation=name)
    asserted = frozenset(asserted_by_evidence)
    if isinstance(asserted_by_evidence, str) or not asserted <= _EXPECTATION_NAMES:
        raise InvalidInput(
            "asserted_by_evidence names expectations: " + ", ".join(EXPECTATIONS), code="bad_policy"
        )
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise InvalidInput("max_bytes must be a positive integer", code="bad_policy")
    return _Policy(
        trust=trust,
        rules=StageRules(
            keys=Anchors(trust.root, keys), algorithms=trust.algorithms, now=epoch(now), leeway=trust.leeway
        ),
        merchant_audience=merchant_audience,
        kb_audience=kb_audience,
        kb_nonce=kb_nonce,
        asserted_by_evidence=asserted,
        max_bytes=max_bytes,
    )


class _TrustedChain:
    """The state machine: each ``admit_*`` runs only when the previous link was admitted."""

    def __init__(self, policy: _Policy) -> None:
        self.policy = policy
        self.rec = Recorder()
        self.hashes: dict[str, str] = {}
        self.intent: Received[IntentMandate] | None = None
        self.cart: Received[CartMandate] | None = None
        self.payment: Received[PaymentMandate] | None = None
        self.intent_facts: IntentFacts | None = None
        self.cart_facts: CartFacts | None = None
        self.payment_facts: PaymentFacts | None = None
        self.linked = False
        self.single_use = False

    # (1) input ------------------------------------------------------------------------------------
    def admit_inputs(self, intent: MandateInput, cart: MandateInput, payment: MandateInput) -> bool:
        limit = self.policy.max_bytes
        self.intent = self._receive("input.intent", "user", intent, IntentMandate, limit)
        self.cart = self._receive("input.cart", "merchant", cart, CartMandate, limit)
        self.payment = self._receive("input.payment", "user", payment, PaymentMandate, limit)
        self.hashes = chain_hashes(self.intent, self.cart, self.payment)
        return self.intent is not None and self.cart is not None and self.payment is not None

    def _receive(
        self, check_id: str, party: str, value: MandateInput, model: type[_M], limit: int
    ) -> Received[_M] | None:
        if isinstance(value, Received):
            if isinstance(value.model, model):
                self.rec.passed(
                    check_id, party, expected=model.__name__, got="already received (strict parse)"
                )
                return value
            self.rec.failed(
                check_id,
                party,
                error="invalid_input",
                code="wrong_mandate_type",
                expected=model.__name__,
                got=type(value.model).__name__,
            )
            return None
        try:
            received = receive(model, value, max_bytes=limit)
        except MudrikaError as exc:
            self.rec.from_error(check_id, party, exc, expected=f"{model.__name__} (strict JSON, AP2 v0.1)")
            return None
        self.rec.passed(check_id, party, expected=model.__name__, got="parsed strictly, schema valid")
        return received

    # (2) intent -----------------------------------------------------------------------------------
    def admit_intent(self) -> bool:
        assert self.intent is not None
        self.intent_facts = check_intent(
            self.rec,
            self.intent,
            expected_hash=self.hashes["intent"],
            max_age=self.policy.trust.intent_max_age,
            rules=self.policy.rules,
        )
        return self.intent_facts is not None

    # (3) cart -------------------------------------------------------------------------------------
    def admit_cart(self) -> bool:
        assert self.intent_facts is not None
        assert self.cart is not None
        self.cart_facts = check_cart(
            self.rec,
            self.cart,
            audience=self.policy.merchant_audience,
            contents_hash=self.hashes["cart_contents"],
            rules=self.policy.rules,
        )
        return self.cart_facts is not None

    # (4) payment ----------------------------------------------------------------------------------
    def admit_payment(self) -> bool:
        assert self.intent_facts is not None
        assert self.cart_facts is not None
        assert self.cart is not None
        assert self.payment is not None
        p = self.policy
        self.payment_facts = check_payment(
            self.rec,
            self.payment,
            self.cart,
            trusted_issuers=p.trust.trusts_issuer,
            accepted_vct=p.trust.accepted_vct,
            kb_audience=p.kb_audience,
            kb_nonce=p.kb_nonce,
            kb_max_age=p.trust.kb_max_age,
            payment_hash=self.hashes["payment_contents"],
            cart_hash=self.hashes["cart"],
            intent_mandate_hash=self.hashes["intent_mandate"],
            accept_legacy=p.trust.accept_legacy,
            intent_signer_did=self.intent_facts.user_did,
            rules=p.rules,
        )
        return self.payment_facts is not None

    # (5) links ------------------------------------------------------------------------------------
    def admit_links(self) -> bool:
        assert self.intent is not None
        assert self.intent_facts is not None
        assert self.cart is not None
        assert self.cart_facts is not None
        assert self.payment is not None
        assert self.payment_facts is not None
        self.linked = check_links(
            self.rec,
            intent=self.intent,
            intent_facts=self.intent_facts,
            cart=self.cart,
            cart_facts=self.cart_facts,
            payment=self.payment,
            payment_facts=self.payment_facts,
            leeway=self.policy.trust.leeway,
        )
        return self.linked

    # (6) replay -----------------------------------------------------------------------------------
    def claim_single_use(self, store: ReplayStore) -> bool:
        assert self.linked
        assert self.cart_facts is not None
        assert self.payment_facts is not None
        p = self.policy
        cart = self.cart_facts
        ok = self._claim(
            store,
            "replay.merchant_jti",
            "merchant",
            merchant_jti_key(cart.merchant_did, cart.jti),
            cart.exp + p.trust.leeway,
            key_id=cart.key.kid,
        )
        kb_expiry = self.payment_facts.kb_iat + p.trust.kb_max_age + p.trust.leeway
        ok &= self._claim(
            store,
            "replay.kb_nonce",
            "user",
            kb_nonce_key(p.kb_audience, p.kb_nonce),
            kb_expiry,
            key_id=self.payment_facts.holder_thumbprint,
        )
        self.single_use = ok
        return ok

    def _claim(
        self,
        store: ReplayStore,
        check_id: str,
        party: str,
        replay_key: str,
        expires_at: float,
        *,
        key_id: str,
    ) -> bool:
        try:
            first = store.claim(replay_key, expires_at)
        except MudrikaError as exc:
            # Fail closed: a store that cannot answer never admits the chain.
            self.rec.from_error(check_id, party, exc, key=key_id)
            return False
        return self.rec.check(
            check_id,
            party,
            first,
            error="replay",
            code="replay",
            expected="first use",
            got="first use" if first else "already used",
            key=key_id,
        )

    # ----------------------------------------------------------------------------------------------
    def run(
        self, intent: MandateInput, cart: MandateInput, payment: MandateInput, store: ReplayStore
    ) -> None:
        stages = (
            (self.admit_intent, _INTENT_STAGE, "the intent was not admitted"),
            (self.admit_cart, _CART_STAGE, "the cart was not admitted"),
            (self.admit_payment, _PAYMENT_STAGE, "the payment was not admitted"),
            (self.admit_links, LINK_CHECKS, "the mandates do not link up"),
            (lambda: self.claim_single_use(store), _REPLAY_STAGE, ""),
        )
        if not self.admit_inputs(intent, cart, payment):
            for _, ids, _ in stages:
                self.rec.skip(ids, because="a mandate did not parse")
            return
        for index, (admit, _, because) in enumerate(stages):
            if not admit():
                for _, later, _ in stages[index + 1 :]:
                    self.rec.skip(later, because=because)
                return

    # -- anchoring ----------------------------------------------------------------------------------
    def key_evidence(self) -> list[tuple[str, ResolvedKey]]:
        """Every key the verdict rests on, by role (only those of stages that were admitted)."""
        keys: list[tuple[str, ResolvedKey]] = []
        holder: ResolvedKey | None = None
        if self.payment_facts is not None:
            facts = self.payment_facts
            holder = ResolvedKey(
                key=facts.holder_key,
                kid=facts.holder_thumbprint,
                owner="holder (cnf.jwk) of the credential of " + facts.issuer,
                source="cnf",
                provenance="credential-cnf",
                anchored=facts.issuer_key.anchored,
            )
        if self.intent_facts is not None and self.intent_facts.signer is not None:
            signer = self.intent_facts.signer
            # The user's DID vouches for nothing by itself: the intent key is anchored when it is the
            # holder key a trusted issuer certified (intent.signer_is_holder passed).
            through_cnf = self.linked and holder is not None and holder.anchored and signer.key == holder.key
            keys.append(
                (
                    "user (intent)",
                    ResolvedKey(
                        key=signer.key,
                        kid=signer.kid,
                        owner=signer.owner,
                        source=signer.source,
                        provenance=signer.provenance,
                        anchored=through_cnf,
                        note="the cnf key of a credential the trust root anchors"
                        if through_cnf
                        else signer.note,
                    ),
                )
            )
        if self.cart_facts is not None:
            keys.append(("merchant", self.cart_facts.key))
        if self.payment_facts is not None:
            keys.append(("issuer", self.payment_facts.issuer_key))
        if holder is not None:
            keys.append(("user (cnf)", holder))
        return keys

    def unanchored_because(self, keys: list[tuple[str, ResolvedKey]]) -> list[str]:
        """Why the verdict is not anchored (empty when it is): a missing trust root, a key the root
        does not anchor, an expectation the evidence asserted."""
        p = self.policy
        because: list[str] = []
        if p.trust.root is None:
            because.append("no trust root was given: every key and issuer is the evidence's own word")
        for role, key in keys:
            if not key.anchored:
                because.append(
                    f"the {role} key {key.kid} is not anchored: {PROVENANCE_CLASSES.get(key.provenance, key.provenance)}"
                )
        for name in EXPECTATIONS:
            if name in p.asserted_by_evidence:
                because.append(f"{name} was asserted by the evidence, not by the analyst or the trust root")
        return because

    def report(self) -> VerificationReport:
        p = self.policy
        mode: Literal["online", "offline"] = "offline" if p.rules.keys.offline else "online"
        keys = self.key_evidence()
        because = self.unanchored_because(keys)
        complete = self.single_use
        anchored = complete and not because
        statements: list[str] = []
        if self.payment_facts is not None and not self.payment_facts.intent_bound:
            statements.append(LEGACY_STATEMENT)
        return VerificationReport(
            checks=tuple(self.rec.checks),
            evaluated_at=iso(p.rules.now),
            mode=mode,
            hashes=self.hashes,
            anchored=anchored,
            unanchored_because=tuple(because),
            keys=tuple(
                KeyEvidence(
                    role=role,
                    owner=key.owner,
                    kid=key.kid,
                    thumbprint=key.thumbprint,
                    provenance=key.provenance,
                    anchored=key.anchored,
                    note=key.note,
                )
                for role, key in keys
            ),
            expectations=p.expectation_sources(),
            statements=tuple(statements),
            trust_root=p.trust.root.fingerprint if p.trust.root is not None else None,
            facts=chain_facts(self.intent, self.cart, self.payment),
            # Only after a failure: the link checks that compare these values may have been skipped.
            comparisons=() if self.linked else compare_values(self.intent, self.cart, self.payment),
        )


def _run(
    intent: MandateInput,
    cart: MandateInput,
    payment: MandateInput,
    replay_store: ReplayStore,
    **expectations: Any,
) -> _TrustedChain:
    """Check the expectations once, then walk the chain link by link (shared by inspect and verify)."""
    chain = _TrustedChain(_policy(**expectations))
    chain.run(intent, cart, payment, replay_store)
    return chain


def inspect_chain(
    intent: MandateInput,
    cart: MandateInput,
    payment: MandateInput,
    *,
    trust_root: TrustRoot | UnsafeNoTrustRoot,
    keys: KeySource,
    merchant_audience: str,
    kb_audience: str,
    kb_nonce: str,
    now: Time,
    replay_store: ReplayStore,
    asserted_by_evidence: Collection[str] = (),
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> VerificationReport:
    """Run every check of the chain and report each one with a verdict; never raises on a failed check.

    Mandates are :class:`~mudrika.payments.models.Received` objects or raw JSON (bytes, text or an
    already-parsed mapping; parsed strictly, at most ``max_bytes`` each).  ``trust_root`` is the
    analyst's :class:`~mudrika.payments.trustroot.TrustRoot` (issuers and keys, pinned merchants,
    algorithms, credential types, leeway, maximum ages, legacy chains); ``UnsafeNoTrustRoot`` checks
    everything but can only give UNANCHORED.  ``keys`` is the *evidence* key source
    (:class:`KeyMaterial` over a resolver, or a bundle's offline snapshot): it answers for parties
    the trust root does not pin, and those keys leave the verdict UNANCHORED.
    ``merchant_audience`` is the ``aud`` the merchant's cart JWT must carry; ``kb_audience`` and
    ``kb_nonce`` what the user's key-binding JWT must carry; name in ``asserted_by_evidence`` those
    of them that came from the evidence rather than from you (the verdict is then UNANCHORED).
    ``replay_store`` records the merchant ``jti`` and the KB nonce as used when — and only when —
    everything else passed.  ``now`` is the evaluation time (the evidence time in a dispute).

    Raises only :class:`~mudrika.errors.InvalidInput` (``bad_policy``, ``bad_leeway``,
    ``naive_time``) for expectations that are themselves malformed.
    """
    chain = _run(
        intent,
        cart,
        payment,
        replay_store,
        trust_root=trust_root,
        keys=keys,
        merchant_audience=merchant_audience,
        kb_audience=kb_audience,
        kb_nonce=kb_nonce,
        asserted_by_evidence=asserted_by_evidence,
        now=now,
        max_bytes=max_bytes,
    )
    return chain.report()


def verify_chain(
    intent: MandateInput,
    cart: MandateInput,
    payment: MandateInput,
    *,
    trust_root: TrustRoot,
    keys: KeySource,
    merchant_audience: str,
    kb_audience: str,
    kb_nonce: str,
    now: Time,
    replay_store: ReplayStore,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> VerifiedChain:
    """Verify the chain; return what it proves, or raise the first failed check's typed error.

    Same checks as :func:`inspect_chain`.  The error carries ``code`` (the failed check's code) and
    the fields ``check``, ``party``, ``expected`` and ``got``.  A chain whose checks all pass but
    whose verdict is UNANCHORED (a key the trust root does not anchor) raises
    :class:`~mudrika.errors.UntrustedKeyError` with code ``unanchored``.
    """
    if not isinstance(trust_root, TrustRoot):
        raise InvalidInput(
            "verify_chain needs a TrustRoot: an unanchored chain never verifies", code="bad_policy"
        )
    chain = _run(
        intent,
        cart,
        payment,
        replay_store,
        trust_root=trust_root,
        keys=keys,
        merchant_audience=merchant_audience,
        kb_audience=kb_audience,
        kb_nonce=kb_nonce,
        asserted_by_evidence=(),
        now=now,
        max_bytes=max_bytes,
    )
    if not (chain.single_use and chain.rec.all_passed and not chain.unanchored_because(chain.key_evidence())):
        # Refused: the report (drawn now) raises the first failed check's typed error, or
        # ``unanchored``.  A report that raised nothing here could not have been complete.
        chain.report().raise_for_failure()
        raise VerificationError("the chain was not fully verified", code="chain_incomplete")
    intent_facts, cart_facts, payment_facts = chain.intent_facts, chain.cart_facts, chain.payment_facts
    # Explicit, not ``assert`` (stripped under ``python -O``): a report without failures must also have
    # admitted every link (single use was checked above), or nothing is returned.
    if (
        intent_facts is None
        or cart_facts is None
        or payment_facts is None
        or chain.intent is None
        or chain.cart is None
        or chain.payment is None
    ):
        raise VerificationError("the chain was not fully verified", code="chain_incomplete")
    return VerifiedChain(
        intent=chain.intent,
        cart=chain.cart,
        payment=chain.payment,
        merchant_did=cart_facts.merchant_did,
        merchant_kid=cart_facts.key.kid,
        issuer=payment_facts.issuer,
        user_key=payment_facts.holder_key,
        user_did=intent_facts.user_did,
        intent_bound=payment_facts.intent_bound,
        merchant_claims=cart_facts.claims,
        credential=payment_facts.credential,
        kb_claims=payment_facts.kb_claims,
        draw_report=chain.report,
    )
