"""Verify an AP2 v0.1 chain intent → cart → payment: :func:`verify_chain` and :func:`inspect_chain`.

The two functions run the same checks (ids in ``docs/payments.md`` "Checks"):

* :func:`inspect_chain` returns a :class:`~mudrika.payments.report.VerificationReport` and never
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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from mudrika.crypto.jcs import DEFAULT_MAX_BYTES
from mudrika.crypto.jose import header_kid
from mudrika.crypto.keys import PublicKey
from mudrika.errors import IncompleteVerification, InvalidInput, MudrikaError, UntrustedKeyError
from mudrika.payments.chain._cart import MERCHANT_CLAIM_CHECKS, CartFacts, check_cart, merchant_jti_key
from mudrika.payments.chain._common import DEFAULT_ALGORITHMS, Time, epoch, iso, numeric_date
from mudrika.payments.chain._compare import chain_facts, compare_values, user_signed_at
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
from mudrika.payments.chain._meanings import MEANINGS
from mudrika.payments.chain._payment import (
    ISSUER_CHECKS,
    KB_CHECKS,
    LEGACY_STATEMENT,
    PaymentFacts,
    Presented,
    check_payment,
    expected_holder,
    kb_nonce_key,
    read_presentation,
)
from mudrika.payments.chain._trust import Trust
from mudrika.payments.credential_status import (
    PinnedStatusKey,
    RecordedStatusList,
    StatusJudgement,
    judge_credential_status,
)
from mudrika.payments.models import Ap2Model, CartMandate, IntentMandate, PaymentMandate, Received, receive
from mudrika.payments.report import (
    Comparison,
    KeyEvidence,
    Recorder,
    VerificationReport,
    attestation,
    fingerprint,
    record_credential_status,
    record_signing_time,
    status_key_evidence,
    status_statements,
)
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
    status_lists: tuple[RecordedStatusList, ...] = ()
    """The status list tokens recorded at the purchase (evidence, judged with the issuer's key)."""
    later_status_lists: tuple[str, ...] = ()
    """Lists the analyst supplies from after the purchase: shown as notes, never in the verdict."""

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
    status_lists: Sequence[RecordedStatusList] = (),
    later_status_lists: Sequence[str] = (),
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
        status_lists=tuple(status_lists),
        later_status_lists=tuple(later_status_lists),
    )


@dataclass(frozen=True, slots=True)
class _Admitted:
    """Everything the chain proved, returned only by a run whose every stage passed."""

    intent: Received[IntentMandate]
    cart: Received[CartMandate]
    payment: Received[PaymentMandate]
    intent_facts: IntentFacts
    cart_facts: CartFacts
    payment_facts: PaymentFacts


#: The parties whose keys a v0.1 verdict rests on, by role, with the stage that establishes each.
_KEY_ROLES: Final = (
    ("merchant", "the cart stage"),
    ("issuer", "the payment stage"),
    ("user (cnf)", "the payment stage"),
)


class _TrustedChain:
    """The state machine: each stage runs only when the previous one returned what it verified.

    python-tuf style: a stage takes the verified values of the stages before it as arguments and
    returns its own (or ``None``), so no stage can read a value nobody verified; the attributes
    below are kept only to draw the report.
    """

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
        self.admitted: _Admitted | None = None
        self.status_judgement: StatusJudgement | None = None
        self.presented: Presented | None = None
        self.status_unproven: str | None = None

    # (1) input ------------------------------------------------------------------------------------
    def admit_inputs(
        self, intent: MandateInput, cart: MandateInput, payment: MandateInput
    ) -> tuple[Received[IntentMandate], Received[CartMandate], Received[PaymentMandate]] | None:
        limit = self.policy.max_bytes
        self.intent = self._receive("input.intent", "user", intent, IntentMandate, limit)
        self.cart = self._receive("input.cart", "merchant", cart, CartMandate, limit)
        self.payment = self._receive("input.payment", "user", payment, PaymentMandate, limit)
        self.hashes = chain_hashes(self.intent, self.cart, self.payment)
        if self.intent is None or self.cart is None or self.payment is None:
            return None
        return self.intent, self.cart, self.payment

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
    def admit_intent(self, intent: Received[IntentMandate]) -> IntentFacts | None:
        self.intent_facts = check_intent(
            self.rec,
            intent,
            expected_hash=self.hashes["intent"],
            max_age=self.policy.trust.intent_max_age,
            rules=self.policy.rules,
        )
        return self.intent_facts

    # (3) cart -------------------------------------------------------------------------------------
    def admit_cart(self, cart: Received[CartMandate]) -> CartFacts | None:
        self.cart_facts = check_cart(
            self.rec,
            cart,
            audience=self.policy.merchant_audience,
            contents_hash=self.hashes["cart_contents"],
            rules=self.policy.rules,
        )
        return self.cart_facts

    # (4) payment ----------------------------------------------------------------------------------
    def admit_payment(
        self, payment: Received[PaymentMandate], cart: Received[CartMandate], intent_facts: IntentFacts
    ) -> PaymentFacts | None:
        p = self.policy
        self.payment_facts = check_payment(
            self.rec,
            payment,
            cart,
            trusted_issuers=p.trust.trusts_issuer,
            accepted_vct=p.trust.accepted_vct,
            kb_audience=p.kb_audience,
            kb_nonce=p.kb_nonce,
            kb_max_age=p.trust.kb_max_age,
            payment_hash=self.hashes["payment_contents"],
            cart_hash=self.hashes["cart"],
            intent_mandate_hash=self.hashes["intent_mandate"],
            accept_legacy=p.trust.accept_legacy,
            intent_signer_did=intent_facts.user_did,
            rules=p.rules,
            presented=self.presented,
        )
        return self.payment_facts

    # (5) as of the purchase -----------------------------------------------------------------------
    def admit_as_of_purchase(self, cart_facts: CartFacts, payment_facts: PaymentFacts) -> bool:
        """The two questions about the day of the purchase: was each pinned key inside its window
        when it signed, and had the credential been revoked by then?

        Who dates whom: the merchant's cart JWT is covered by the user's key-binding JWT
        (``transaction_data`` holds the cart's hash), signed with a key the *issuer* vouches for, so
        its ``iat`` is a time outside the merchant's control that the cart predates.  Nothing signed
        after the credential by a key the issuer does not vouch for covers it in AP2 v0.1, so the
        issuer's signature is dated by its own ``iat`` alone (enough against a supersession, never
        against a compromise).  Checks appear only when there is something to judge: a pinned
        window, a ``status`` claim.
        """
        p = self.policy
        holds = record_signing_time(
            self.rec,
            "merchant.key.window",
            "merchant",
            cart_facts.key,
            key_id=cart_facts.key.kid,
            signer_claimed=numeric_date(cart_facts.claims.get("iat")),
            attested=attestation(payment_facts.kb_iat, "the user's key-binding JWT over this cart"),
        )
        holds &= record_signing_time(
            self.rec,
            "issuer.key.window",
            "issuer",
            payment_facts.issuer_key,
            key_id=payment_facts.issuer_key.kid,
            signer_claimed=numeric_date(payment_facts.credential.get("iat")),
            attested=None,
        )
        issuer_key = payment_facts.issuer_key
        algorithms = p.rules.algorithms

        def status_key(header: Mapping[str, Any]) -> PinnedStatusKey:
            kid = header_kid(header, what="the status list token")
            key = p.rules.keys.issuer_key(kid, owner=payment_facts.issuer)
            trusted = key.trusted(algorithms)
            if trusted is None:
                raise UntrustedKeyError(
                    "no allowed algorithm for the status list's key", code="alg_not_allowed"
                )
            return PinnedStatusKey(trusted, key.validity)

        judgement = judge_credential_status(
            payment_facts.credential,
            p.status_lists,
            key=status_key,
            issuer=payment_facts.issuer,
            purchase_time=p.rules.now,
            max_age=p.trust.status.max_age_seconds,
            when_absent=p.trust.status.when_absent,
            later=p.later_status_lists,
        )
        self.status_judgement = judgement
        self.status_unproven = record_credential_status(
            self.rec, "issuer.credential.status", "issuer", judgement, key_id=issuer_key.kid
        )
        return holds and (judgement is None or judgement.holds is not False)

    # (6) links ------------------------------------------------------------------------------------
    def admit_links(self, admitted: _Admitted) -> bool:
        self.linked = check_links(
            self.rec,
            intent=admitted.intent,
            intent_facts=admitted.intent_facts,
            cart=admitted.cart,
            cart_facts=admitted.cart_facts,
            payment=admitted.payment,
            payment_facts=admitted.payment_facts,
            leeway=self.policy.trust.leeway,
        )
        return self.linked

    # (7) replay -----------------------------------------------------------------------------------
    def claim_single_use(self, store: ReplayStore, admitted: _Admitted) -> bool:
        p = self.policy
        cart = admitted.cart_facts
        ok = self._claim(
            store,
            "replay.merchant_jti",
            "merchant",
            merchant_jti_key(cart.merchant_did, cart.jti),
            cart.exp + p.trust.leeway,
            key_id=cart.key.kid,
        )
        kb_expiry = admitted.payment_facts.kb_iat + p.trust.kb_max_age + p.trust.leeway
        ok &= self._claim(
            store,
            "replay.kb_nonce",
            "user",
            kb_nonce_key(p.kb_audience, p.kb_nonce),
            kb_expiry,
            key_id=admitted.payment_facts.holder_thumbprint,
        )
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
    def _skip_from(self, stage: int, because: str) -> None:
        """Record every check of stage ``stage`` and the stages after it as not run."""
        for ids in (_INTENT_STAGE, _CART_STAGE, _PAYMENT_STAGE, LINK_CHECKS, _REPLAY_STAGE)[stage:]:
            self.rec.skip(ids, because=because)

    def run(
        self, intent: MandateInput, cart: MandateInput, payment: MandateInput, store: ReplayStore
    ) -> None:
        received = self.admit_inputs(intent, cart, payment)
        if received is None:
            self._skip_from(0, "a mandate did not parse")
            return
        intent_m, cart_m, payment_m = received
        # The credential's cnf key, unverified, as the key the intent's signer is compared with
        # (never trusted for it: Anchors.expect_holder); the parse is the payment stage's own.
        self.presented = read_presentation(payment_m)
        holder = expected_holder(self.presented)
        if holder is not None:
            self.policy.rules.keys.expect_holder(holder)
        intent_facts = self.admit_intent(intent_m)
        if intent_facts is None:
            self._skip_from(1, "the intent was not admitted")
            return
        cart_facts = self.admit_cart(cart_m)
        if cart_facts is None:
            self._skip_from(2, "the cart was not admitted")
            return
        payment_facts = self.admit_payment(payment_m, cart_m, intent_facts)
        if payment_facts is None:
            self._skip_from(3, "the payment was not admitted")
            return
        admitted = _Admitted(intent_m, cart_m, payment_m, intent_facts, cart_facts, payment_facts)
        as_of_purchase = self.admit_as_of_purchase(cart_facts, payment_facts)
        if not self.admit_links(admitted):
            self._skip_from(4, "the mandates do not link up")
            return
        if not as_of_purchase:
            self.rec.skip(_REPLAY_STAGE, because="a key or the credential was not valid at the purchase")
            return
        if self.claim_single_use(store, admitted):
            self.admitted = admitted

    # -- anchoring ----------------------------------------------------------------------------------
    def _intent_key_anchored(self, holder: ResolvedKey | None, signer: ResolvedKey) -> bool | None:
        """The user's intent key is anchored only as the anchored ``cnf`` key: decided by the
        ``intent.signer_is_holder`` check, so not evaluated while that check has not run."""
        # Linked means every link check passed (this one included): no report is drawn on that path.
        status = (
            "passed"
            if self.linked
            else next(
                (check.status for check in self.rec.checks if check.id == "intent.signer_is_holder"),
                "skipped",
            )
        )
        if status == "skipped":
            return None
        return status == "passed" and holder is not None and holder.anchored and signer.key == holder.key

    def key_evidence(self, *, thumbprints: bool = True) -> list[KeyEvidence]:
        """Every key the verdict rests on, by role; a party whose stage did not establish its key is
        listed as not evaluated (``anchored=None``), never as anchored or unanchored.

        ``thumbprints=False`` leaves the thumbprints empty: deciding whether the verdict is anchored
        (:meth:`unanchored_because`) reads the roles, kids, provenances and anchoring only, and a
        thumbprint is a hash per key that only a report shows."""
        keys: list[KeyEvidence] = []
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
            anchored = self._intent_key_anchored(holder, signer)
            note = signer.note
            if anchored:
                note = "the cnf key of a credential the trust root anchors"
            elif anchored is None:
                note = "anchored only as the credential's cnf key, which was not compared (an earlier stage failed)"
            keys.append(
                _evidence("user (intent)", signer, anchored=anchored, note=note, thumbprint=thumbprints)
            )
        established = {
            "merchant": self.cart_facts.key if self.cart_facts is not None else None,
            "issuer": self.payment_facts.issuer_key if self.payment_facts is not None else None,
            "user (cnf)": holder,
        }
        for role, stage in _KEY_ROLES:
            key = established[role]
            if key is None:
                keys.append(
                    KeyEvidence(
                        role=role,
                        owner="(not established)",
                        kid="",
                        thumbprint="",
                        provenance="not evaluated",
                        anchored=None,
                        note=f"{stage} did not admit a key",
                    )
                )
            else:
                keys.append(
                    _evidence(role, key, anchored=key.anchored, note=key.note, thumbprint=thumbprints)
                )
        if self.payment_facts is not None:
            status_key = status_key_evidence(
                self.status_judgement, owner=self.payment_facts.issuer, role="issuer (status list)"
            )
            if status_key is not None:
                keys.append(status_key)
        return keys

    def unanchored_because(self, keys: list[KeyEvidence]) -> list[str]:
        """Why the verdict is not anchored (empty when it is): a missing trust root, a key the root
        does not anchor, an expectation the evidence asserted.  A key not evaluated is not a reason
        here: its record says so, and the report's anchoring reads it from there."""
        p = self.policy
        because: list[str] = []
        if p.trust.root is None:
            because.append("no trust root was given: every key and issuer is the evidence's own word")
        for key in keys:
            if key.anchored is False:
                because.append(
                    f"the {key.role} key {key.kid} is not anchored: {PROVENANCE_CLASSES.get(key.provenance, key.provenance)}"
                )
        for name in EXPECTATIONS:
            if name in p.asserted_by_evidence:
                because.append(f"{name} was asserted by the evidence, not by the analyst or the trust root")
        if self.status_unproven is not None:
            because.append(self.status_unproven)
        return because

    def comparisons(self) -> tuple[Comparison, ...]:
        """The values that differ, after a failure; the user's signing time only when their key-binding
        signature and its ``iat`` verified (otherwise nothing vouches for it)."""
        signed_at = None
        if self.payment is not None and all(
            _passed(self.rec, check_id) for check_id in ("user.kb.signature", "user.kb.iat")
        ):
            signed_at = user_signed_at(self.payment)
        merchant_did = self.cart_facts.merchant_did if self.cart_facts is not None else None
        return compare_values(
            self.intent, self.cart, self.payment, signed_at=signed_at, merchant_did=merchant_did
        )

    def report(self) -> VerificationReport:
        p = self.policy
        mode: Literal["online", "offline"] = "offline" if p.rules.keys.offline else "online"
        keys = self.key_evidence()
        statements: list[str] = []
        if self.payment_facts is not None and not self.payment_facts.intent_bound:
            statements.append(LEGACY_STATEMENT)
        statements.extend(status_statements(self.status_judgement))
        return VerificationReport(
            checks=tuple(self.rec.checks),
            evaluated_at=iso(p.rules.now),
            mode=mode,
            hashes=self.hashes,
            unanchored_because=tuple(self.unanchored_because(keys)),
            keys=tuple(keys),
            expectations=p.expectation_sources(),
            statements=tuple(statements),
            trust_root=p.trust.root.fingerprint if p.trust.root is not None else None,
            facts=chain_facts(self.intent, self.cart, self.payment),
            # Only after a failure: the link checks that compare these values may have been skipped.
            comparisons=() if self.linked else self.comparisons(),
            meanings=MEANINGS,
        )


def _evidence(
    role: str, key: ResolvedKey, *, anchored: bool | None, note: str | None, thumbprint: bool = True
) -> KeyEvidence:
    return KeyEvidence(
        role=role,
        owner=key.owner,
        kid=key.kid,
        thumbprint=key.thumbprint if thumbprint else "",
        provenance=key.provenance,
        anchored=anchored,
        note=note,
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
    status_lists: Sequence[RecordedStatusList] = (),
    later_status_lists: Sequence[str] = (),
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
    ``status_lists``: the status list tokens the merchant recorded at the purchase; a credential
    naming a status list is judged on them as of ``now`` (``docs/disputes-over-time.md``), and the
    trust root decides what a missing one is worth.  ``later_status_lists``: tokens from after the
    purchase, shown as notes ("revoked after the purchase") and never part of the verdict.

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
        status_lists=status_lists,
        later_status_lists=later_status_lists,
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
    status_lists: Sequence[RecordedStatusList] = (),
) -> VerifiedChain:
    """Verify the chain; return what it proves, or raise the first failed check's typed error.

    Same checks as :func:`inspect_chain`.  A merchant whose user's credential names a status list
    fetches that list (:class:`~mudrika.identity.statuslist.StatusListClient`), passes it as
    ``status_lists`` (see :func:`~mudrika.payments.credential_status.record_status_list`) and keeps
    it in the evidence bundle: without it such a credential is refused (or, if the trust root says
    so, UNANCHORED).  The error carries ``code`` (the failed check's code) and
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
        status_lists=status_lists,
    )
    admitted = chain.admitted
    if (
        admitted is None
        or not chain.rec.all_passed
        or chain.unanchored_because(chain.key_evidence(thumbprints=False))
    ):
        # Refused: the report (drawn now) raises the first failed check's typed error, or
        # ``unanchored``.  A report that raised nothing here could not have been complete.
        chain.report().raise_for_failure()
        raise IncompleteVerification("the chain was not fully verified")
    intent_facts, cart_facts, payment_facts = (
        admitted.intent_facts,
        admitted.cart_facts,
        admitted.payment_facts,
    )
    return VerifiedChain(
        intent=admitted.intent,
        cart=admitted.cart,
        payment=admitted.payment,
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


def _passed(rec: Recorder, check_id: str) -> bool:
    """``check_id`` was recorded and passed (a check never recorded did not pass)."""
    return any(check.id == check_id and check.passed for check in rec.checks)
