"""Verify an AP2 v0.1 chain intent → cart → payment: :func:`verify_chain` and :func:`inspect_chain`.

The two functions run the same checks (ids in ``docs/payments.md`` "Checks"):

* :func:`inspect_chain` returns a :class:`~mudrika.payments.chain.report.VerificationReport` and never
  raises on a failed check — for dispute tools and logs that must show everything;
* :func:`verify_chain` returns the :class:`VerifiedChain` or raises the first failed check's typed
  error (``SignatureError``, ``ExpiredError``, ``ReplayError``, ``BindingError``, ``PolicyDenied``,
  ``UntrustedKeyError``; ``InvalidInput`` for a mandate that does not parse; ``ResolutionError``
  when a key could not be fetched).  ``except VerificationError`` always means *refuse*.

The chain is a small state machine (python-tuf's trusted metadata set): a link is admitted only
after the link before it verified.

    (1) input    the three mandates parse strictly and match the AP2 v0.1 schema
    (2) intent   the user's intent: constraints understood, signature (or safely unsigned), expiry
    (3) cart     the merchant's signature and every claim of it, cart expiry and total
    (4) payment  the credential (issuer trusted, signature, disclosures, validity, cnf) and the
                 user's key-binding JWT (typ, time, aud, nonce, sd_hash, transaction_data)
    (5) links    ids, totals, method, merchant, timestamps across the mandates; intent constraints
    (6) replay   the merchant's jti and the KB nonce are claimed as single use — last, so a chain
                 refused for any other reason never burns a single-use value

When a stage does not pass, every check of the later stages is reported as ``skipped``.
Every expectation (audiences, nonce, trusted issuers, algorithms, key source, replay store, time) is
a keyword argument without a default: nothing is trusted by omission.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from mudrika.crypto.jcs import DEFAULT_MAX_BYTES
from mudrika.crypto.keys import ALGORITHMS_BY_KEY_TYPE, PublicKey
from mudrika.errors import InvalidInput, MudrikaError, VerificationError
from mudrika.payments.chain._cart import MERCHANT_CLAIM_CHECKS, CartFacts, check_cart, merchant_jti_key
from mudrika.payments.chain._common import (
    DEFAULT_ALGORITHMS,
    Recorder,
    Time,
    check_leeway,
    epoch,
    iso,
)
from mudrika.payments.chain._hashes import chain_hashes
from mudrika.payments.chain._intent import INTENT_JWS_CHECKS, IntentFacts, check_intent
from mudrika.payments.chain._jws import JWS_PHASES
from mudrika.payments.chain._keys import KeyMaterial, KeySource, ResolvedKey
from mudrika.payments.chain._links import LINK_CHECKS, check_links
from mudrika.payments.chain._payment import (
    ISSUER_CHECKS,
    KB_CHECKS,
    PaymentFacts,
    check_payment,
    kb_nonce_key,
)
from mudrika.payments.chain.report import VerificationReport
from mudrika.payments.models import (
    CartMandate,
    IntentMandate,
    PaymentMandate,
    Received,
    receive_cart,
    receive_intent,
    receive_payment,
)
from mudrika.payments.profile import KB_MAX_AGE
from mudrika.stores.replay import ReplayStore

__all__ = [
    "DEFAULT_ALGORITHMS",
    "KeyMaterial",
    "KeySource",
    "ResolvedKey",
    "VerifiedChain",
    "inspect_chain",
    "verify_chain",
]

_KNOWN_ALGORITHMS: Final = frozenset().union(*ALGORITHMS_BY_KEY_TYPE.values())
_MAX_KB_AGE: Final = 86400.0

MandateInput = Received[Any] | bytes | str | Mapping[str, Any]

# Every check id of stages (2)-(6), with its party, for reporting skipped stages.
_INTENT_STAGE: Final = (
    ("intent.constraints", "user"),
    ("intent.authorization", "user"),
    *((name, "user") for name in INTENT_JWS_CHECKS),
    ("intent.expiry", "user"),
)
_CART_STAGE: Final = (
    ("merchant.jws.present", "merchant"),
    *((f"merchant.jws.{name}", "merchant") for name in JWS_PHASES),
    *((name, "merchant") for name in MERCHANT_CLAIM_CHECKS),
    ("cart.expiry", "merchant"),
    ("cart.total", "merchant"),
)
_PAYMENT_STAGE: Final = (
    ("user.authorization.present", "user"),
    ("issuer.sdjwt.format", "issuer"),
    *((name, "issuer") for name in ISSUER_CHECKS),
    *((name, "user") for name in KB_CHECKS),
)
_REPLAY_STAGE: Final = (("replay.merchant_jti", "merchant"), ("replay.kb_nonce", "user"))


@dataclass(frozen=True, slots=True)
class VerifiedChain:
    """A chain that passed every check: the mandates and the facts the checks established."""

    intent: Received[IntentMandate]
    cart: Received[CartMandate]
    payment: Received[PaymentMandate]
    merchant_did: str
    merchant_kid: str
    issuer: str
    user_key: PublicKey
    user_did: str | None
    """The DID that signed the intent (``None`` for an unsigned intent)."""
    merchant_claims: Mapping[str, Any] = field(repr=False)
    credential: Mapping[str, Any] = field(repr=False)
    kb_claims: Mapping[str, Any] = field(repr=False)
    report: VerificationReport = field(repr=False)


@dataclass(frozen=True, slots=True)
class _Policy:
    keys: KeySource
    trusted_issuers: frozenset[str]
    merchant_audience: str
    kb_audience: str
    kb_nonce: str
    now: float
    algorithms: frozenset[str]
    leeway: float
    kb_max_age: float
    max_bytes: int

    def signed(self) -> dict[str, Any]:
        """The expectations every signed stage (intent, cart, payment) checks against."""
        return {"keys": self.keys, "algorithms": self.algorithms, "now": self.now, "leeway": self.leeway}


def _policy(
    *,
    keys: KeySource,
    trusted_issuers: Collection[str],
    merchant_audience: str,
    kb_audience: str,
    kb_nonce: str,
    now: Time,
    algorithms: Collection[str],
    leeway: float,
    kb_max_age: float,
    max_bytes: int,
) -> _Policy:
    """Check the caller's expectations; a bad expectation is a usage error, never a failed check."""
    # Duck-typed on purpose: isinstance() against a runtime-checkable Protocol costs ~20 µs per call.
    if not callable(getattr(keys, "assertion_key", None)) or not isinstance(
        getattr(keys, "offline", None), bool
    ):
        raise InvalidInput("keys must be a KeySource (e.g. KeyMaterial)", code="bad_policy")
    if isinstance(trusted_issuers, str) or not trusted_issuers:
        raise InvalidInput("trusted_issuers must be a non-empty collection of issuers", code="bad_policy")
    if isinstance(algorithms, str) or not algorithms or not set(algorithms) <= _KNOWN_ALGORITHMS:
        raise InvalidInput("algorithms must be a non-empty set of JWS algorithm names", code="bad_policy")
    for name, value in (
        ("merchant_audience", merchant_audience),
        ("kb_audience", kb_audience),
        ("kb_nonce", kb_nonce),
    ):
        if not isinstance(value, str) or not value:
            raise InvalidInput(f"{name} must be a non-empty string", code="bad_policy", expectation=name)
    if (
        isinstance(kb_max_age, bool)
        or not isinstance(kb_max_age, int | float)
        or not 0 < kb_max_age <= _MAX_KB_AGE
    ):
        raise InvalidInput("kb_max_age must be in (0, 86400] seconds", code="bad_policy")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise InvalidInput("max_bytes must be a positive integer", code="bad_policy")
    return _Policy(
        keys=keys,
        trusted_issuers=frozenset(trusted_issuers),
        merchant_audience=merchant_audience,
        kb_audience=kb_audience,
        kb_nonce=kb_nonce,
        now=epoch(now),
        algorithms=frozenset(algorithms),
        leeway=check_leeway(leeway),
        kb_max_age=float(kb_max_age),
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
        self.intent = self._receive(
            "input.intent", "user", intent, model=IntentMandate, receiver=receive_intent, limit=limit
        )
        self.cart = self._receive(
            "input.cart", "merchant", cart, model=CartMandate, receiver=receive_cart, limit=limit
        )
        self.payment = self._receive(
            "input.payment", "user", payment, model=PaymentMandate, receiver=receive_payment, limit=limit
        )
        self.hashes = chain_hashes(self.intent, self.cart, self.payment)
        return self.intent is not None and self.cart is not None and self.payment is not None

    def _receive(
        self, check_id: str, party: str, value: MandateInput, *, model: type[Any], receiver: Any, limit: int
    ) -> Any:
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
            received = receiver(value, max_bytes=limit)
        except MudrikaError as exc:
            self.rec.from_error(check_id, party, exc, expected=f"{model.__name__} (strict JSON, AP2 v0.1)")
            return None
        self.rec.passed(check_id, party, expected=model.__name__, got="parsed strictly, schema valid")
        return received

    # (2) intent -----------------------------------------------------------------------------------
    def admit_intent(self) -> bool:
        assert self.intent is not None
        self.intent_facts = check_intent(
            self.rec, self.intent, expected_hash=self.hashes["intent"], **self.policy.signed()
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
            **self.policy.signed(),
        )
        return self.cart_facts is not None

    # (4) payment ----------------------------------------------------------------------------------
    def admit_payment(self) -> bool:
        assert self.cart_facts is not None
        assert self.cart is not None
        assert self.payment is not None
        p = self.policy
        self.payment_facts = check_payment(
            self.rec,
            self.payment,
            self.cart,
            trusted_issuers=p.trusted_issuers,
            kb_audience=p.kb_audience,
            kb_nonce=p.kb_nonce,
            kb_max_age=p.kb_max_age,
            payment_hash=self.hashes["payment_contents"],
            cart_hash=self.hashes["cart"],
            **p.signed(),
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
            leeway=self.policy.leeway,
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
            cart.exp + p.leeway,
            key_id=cart.key.kid,
        )
        kb_expiry = self.payment_facts.kb_iat + p.kb_max_age + p.leeway
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

    def report(self) -> VerificationReport:
        mode: Literal["online", "offline"] = "offline" if self.policy.keys.offline else "online"
        return VerificationReport(
            checks=tuple(self.rec.checks), evaluated_at=iso(self.policy.now), mode=mode, hashes=self.hashes
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
    keys: KeySource,
    trusted_issuers: Collection[str],
    merchant_audience: str,
    kb_audience: str,
    kb_nonce: str,
    now: Time,
    replay_store: ReplayStore,
    algorithms: Collection[str],
    leeway: float = 0.0,
    kb_max_age: float = KB_MAX_AGE,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> VerificationReport:
    """Run every check of the chain and report each one; never raises on a failed check.

    Mandates are :class:`~mudrika.payments.models.Received` objects or raw JSON (bytes, text or an
    already-parsed mapping; parsed strictly, at most ``max_bytes`` each).  ``keys`` is where keys
    come from (:class:`KeyMaterial` over a :class:`~mudrika.identity.resolver.DIDResolver` online, or
    :meth:`KeyMaterial.offline_snapshot` / an evidence bundle offline).  ``trusted_issuers`` are the
    credential issuers (``iss``) accepted; ``merchant_audience`` the ``aud`` the merchant's cart JWT
    must carry; ``kb_audience`` and ``kb_nonce`` what the user's key-binding JWT must carry.
    ``algorithms`` is the JWS allow-list (e.g. :data:`DEFAULT_ALGORITHMS`), intersected with each
    key's type.  ``replay_store`` records the merchant ``jti`` and the KB nonce as used when — and
    only when — everything else passed.  ``now`` is the evaluation time (the evidence time in a
    dispute); ``leeway`` 0-30 s; ``kb_max_age`` the oldest acceptable key-binding ``iat``.

    Raises only :class:`~mudrika.errors.InvalidInput` (``bad_policy``, ``bad_leeway``,
    ``naive_time``) for expectations that are themselves malformed.
    """
    chain = _run(
        intent,
        cart,
        payment,
        replay_store,
        keys=keys,
        trusted_issuers=trusted_issuers,
        merchant_audience=merchant_audience,
        kb_audience=kb_audience,
        kb_nonce=kb_nonce,
        now=now,
        algorithms=algorithms,
        leeway=leeway,
        kb_max_age=kb_max_age,
        max_bytes=max_bytes,
    )
    return chain.report()


def verify_chain(
    intent: MandateInput,
    cart: MandateInput,
    payment: MandateInput,
    *,
    keys: KeySource,
    trusted_issuers: Collection[str],
    merchant_audience: str,
    kb_audience: str,
    kb_nonce: str,
    now: Time,
    replay_store: ReplayStore,
    algorithms: Collection[str],
    leeway: float = 0.0,
    kb_max_age: float = KB_MAX_AGE,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> VerifiedChain:
    """Verify the chain; return what it proves, or raise the first failed check's typed error.

    Same arguments and checks as :func:`inspect_chain`.  The error carries ``code`` (the failed
    check's code) and the fields ``check``, ``party``, ``expected`` and ``got``.
    """
    chain = _run(
        intent,
        cart,
        payment,
        replay_store,
        keys=keys,
        trusted_issuers=trusted_issuers,
        merchant_audience=merchant_audience,
        kb_audience=kb_audience,
        kb_nonce=kb_nonce,
        now=now,
        algorithms=algorithms,
        leeway=leeway,
        kb_max_age=kb_max_age,
        max_bytes=max_bytes,
    )
    report = chain.report()
    report.raise_for_failure()
    intent_facts, cart_facts, payment_facts = chain.intent_facts, chain.cart_facts, chain.payment_facts
    # Explicit, not ``assert`` (stripped under ``python -O``): a report without failures must also have
    # admitted every link and claimed every single-use value, or nothing is returned.
    if (
        not chain.single_use
        or intent_facts is None
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
        merchant_claims=cart_facts.claims,
        credential=payment_facts.credential,
        kb_claims=payment_facts.kb_claims,
        report=report,
    )
