"""The verification report: every named check of an AP2 chain, with what it expected and what it got.

Why a report and not just an exception: a dispute analyst must see *which* binding failed, whose key
or claim it rests on, and which checks could not even run because an earlier link was not admitted.
So :func:`mudrika.payments.chain.inspect_chain` and :func:`mudrika.payments.v02.inspect_v02` never
raise on a failed check; each returns a :class:`VerificationReport` whose :class:`Check` entries
each carry a stable dotted ``id`` (listed in ``docs/payments.md`` "Checks" and ``docs/ap2-v02.md``
"Every check"; what each means is the profile's :class:`MeaningTable`), a status, short secret-free ``expected``/``got`` strings, the ``party``
the fact rests on and the ``key`` (kid or thumbprint) it was verified with.

Three statuses, never more:

* ``passed``  the check ran and held;
* ``failed``  the check ran and did not hold (``error`` says which exception type it maps to);
* ``skipped`` the check could not run because a prerequisite failed (python-tuf style: a link is
  admitted only after the previous one verified).  A skipped check is never counted as passed.

Three verdicts (:attr:`VerificationReport.verdict`):

* ``OK``          every check passed *and* every key and expectation the verdict rests on is anchored
  in the analyst's trust root (or supplied by the analyst);
* ``FAILED``      a check failed (or could not run);
* ``UNANCHORED``  every check passed, but some key rests only on material the evidence brought (a
  DID-document or JWKS snapshot, a key the bundle pins), or an expectation (audience, nonce) came
  from the evidence, or no trust root was given.  A judged party can produce such a chain for
  itself, so it is never OK.

:attr:`VerificationReport.ok` is true only for ``OK``.

Anchoring has one source.  Each key record (:class:`KeyEvidence`) says whether that key is
``anchored``, ``unanchored`` or ``not evaluated`` (its stage never ran, so nobody looked), and
:func:`anchoring_of` reduces the records and the verifier's non-key reasons (an expectation taken
from the evidence, no trust root) to the report's one answer.  The JSON ``anchored`` member, the
summary's "Anchored in your trust root" sentence, the HTML anchoring line and the verdict all read
:attr:`VerificationReport.anchoring`; none of them is stored separately, so they cannot disagree
(an earlier release stored ``anchored`` beside the keys, and a v0.2 report said ``true`` in JSON
while its summary said "no").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Final, Literal, NamedTuple

from mudrika.errors import (
    BindingError,
    DocumentError,
    ExpiredError,
    IncompleteVerification,
    InvalidInput,
    MudrikaError,
    PolicyDenied,
    ReplayError,
    ResolutionError,
    SignatureError,
    UntrustedKeyError,
    VerificationError,
)

__all__ = [
    "ANCHORED_SENTENCE",
    "ERROR_KINDS",
    "GENERIC_MEANING",
    "REPORT_FORMAT",
    "Anchoring",
    "Check",
    "CheckStatus",
    "Comparison",
    "ErrorKind",
    "KeyEvidence",
    "MeaningTable",
    "TimelineStage",
    "Verdict",
    "VerificationReport",
    "anchoring_of",
    "error_kind_of",
]

REPORT_FORMAT: Final = "mudrika.report/v2"
"""v2 (this version) adds ``verdict``, ``anchored``, ``unanchored_because``, ``keys`` (every key the
verdict rests on, with its RFC 7638 thumbprint and provenance), ``expectations`` (each with its
source), ``statements`` and ``trust_root``; v1 had only ``ok`` and the checks.  Additive members of
v2: ``summary`` (the verdict paragraph), ``facts``, ``failures`` (each failed check with its plain
meaning, ``signed_value`` / ``recomputed_value`` or ``expected`` / ``found``), ``comparisons``
(values read from the mandates after a failure: evidence from unsigned data) and ``passed``
(a count; the passed checks themselves are listed in ``checks`` only when verbose)."""

Verdict = Literal["OK", "FAILED", "UNANCHORED"]

Anchoring = Literal["anchored", "unanchored", "not evaluated"]
"""Whether what a verdict rests on is vouched for by the analyst's trust root: ``anchored`` (yes),
``unanchored`` (no: some key or expectation came from the evidence, or a key was named by a token
that did not verify) or ``not evaluated`` (a key was never looked at because its stage did not run:
neither yes nor no)."""

#: The summary's anchoring sentence opens with this, then ``yes``, ``no`` or ``not evaluated``.
ANCHORED_SENTENCE: Final = "Anchored in your trust root:"

_ANSWER: Final[Mapping[str, str]] = {"anchored": "yes", "unanchored": "no", "not evaluated": "not evaluated"}

CheckStatus = Literal["passed", "failed", "skipped"]
ErrorKind = Literal[
    "invalid_input",
    "signature",
    "expired",
    "replay",
    "binding",
    "policy",
    "untrusted_key",
    "document",
    "unavailable",
    "verification",
]

#: The exception class :meth:`VerificationReport.raise_for_failure` raises for each error kind.
ERROR_KINDS: Final[Mapping[str, type[MudrikaError]]] = {
    "invalid_input": InvalidInput,
    "signature": SignatureError,
    "expired": ExpiredError,
    "replay": ReplayError,
    "binding": BindingError,
    "policy": PolicyDenied,
    "untrusted_key": UntrustedKeyError,
    "document": DocumentError,
    "unavailable": ResolutionError,
    "verification": VerificationError,
}

_MAX_TEXT: Final = 200
_STATUS_OF: Final = attrgetter("status")
_ALL_PASSED: Final = frozenset({"passed"})


def _short(value: str | None) -> str | None:
    if value is None:
        return None
    return value if len(value) <= _MAX_TEXT else value[: _MAX_TEXT - 1] + "…"


def error_kind_of(exc: BaseException) -> ErrorKind:
    """The report's error kind for an exception (most specific class first)."""
    ordered: tuple[tuple[type[BaseException], ErrorKind], ...] = (
        (SignatureError, "signature"),
        (ExpiredError, "expired"),
        (ReplayError, "replay"),
        (BindingError, "binding"),
        (PolicyDenied, "policy"),
        (UntrustedKeyError, "untrusted_key"),
        (DocumentError, "document"),
        (ResolutionError, "unavailable"),
        (InvalidInput, "invalid_input"),
    )
    for cls, kind in ordered:
        if isinstance(exc, cls):
            return kind
    if isinstance(exc, MudrikaError) and not isinstance(exc, VerificationError):
        return "unavailable"
    return "verification"


#: What :meth:`MeaningTable.meaning` says of a check its profile's table has no sentence for.
GENERIC_MEANING: Final = "check {id} did not hold"


class TimelineStage(NamedTuple):
    """One signed step of a profile's timeline: who signed what, and which checks vouch for it.

    Why content checks beside the signature: a signature verifies over what the party signed, and
    a hash check says whether the bytes presented are still those.  A payment changed after the user
    signed it has a verified signature and a failed hash; the timeline must not show that green.
    """

    name: str
    signer: str
    signatures: tuple[str, ...]
    """The checks that the party's signature verified (all present must pass)."""
    content: tuple[str, ...]
    """The checks that the presented content is what was signed (hashes, disclosures, bindings)."""
    what: str
    absent: str = "not checked"
    """What the step says when none of its signature checks was recorded."""


@dataclass(frozen=True, slots=True)
class MeaningTable:
    """What each check id of one profile means, in words a person deciding the dispute can quote.

    Why a table per profile and not one list here: the report, its renderings and the recorder are
    shared by the AP2 v0.1 and v0.2 verifiers, whose check ids have nothing in common.  Each profile
    hands its own table to every report it draws (:attr:`VerificationReport.meanings`), so a v0.2
    failure reads "the shopping agent's token was addressed to another audience", not a bare id.

    A sentence is looked up in this order: ``by_detail`` (a check whose ``detail`` names which part
    differed, e.g. which hash of a ``transaction_data`` entry), ``sentences`` (exact ids),
    ``patterns`` (templated ids such as ``v02.checkout.hop2.aud``: a compiled regular expression
    matched against the whole id, and a :meth:`str.format` template over its named groups), then
    ``by_suffix`` (a family of ids: every ``*.exp``).  No sentence: :data:`GENERIC_MEANING`.
    """

    sentences: Mapping[str, str]
    patterns: tuple[tuple[re.Pattern[str], str], ...] = ()
    by_detail: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    by_suffix: tuple[tuple[str, str], ...] = ()
    signed_hash_checks: frozenset[str] = frozenset()
    """Checks that compare a hash a party signed with the one recomputed from the bytes received."""
    signatures: Mapping[str, str] = field(default_factory=dict)
    """How a check's ``party`` reads as the signature a fact rests on (``user`` → "the user's signature")."""
    timeline: tuple[TimelineStage, ...] = ()
    """The profile's signed steps in order, as the HTML timeline draws them (v0.1: intent, cart,
    payment; v0.2: the open mandates, the merchant's checkout, the agent's closing hops)."""

    def sentence_for(self, check_id: str, detail: str | None = None) -> str | None:
        """The table's sentence for ``check_id`` (given its ``detail``), ``None`` when it has none."""
        if detail:
            for marker, sentence in self.by_detail.get(check_id, {}).items():
                if marker in detail:
                    return sentence
        exact = self.sentences.get(check_id)
        if exact is not None:
            return exact
        for pattern, template in self.patterns:
            match = pattern.fullmatch(check_id)
            if match is not None:
                return template.format(**match.groupdict())
        for suffix, sentence in self.by_suffix:
            if check_id.endswith(suffix):
                return sentence
        return None

    def meaning(self, check: Check) -> str:
        """The plain-language meaning of a failed (or skipped) check."""
        sentence = self.sentence_for(check.id, check.detail)
        return sentence if sentence is not None else GENERIC_MEANING.format(id=check.id)

    def value_labels(self, check: Check) -> tuple[str, str]:
        """How to name ``(got, expected)`` of a check for a person.

        For a hash comparison, ``got`` is what the party *signed* and ``expected`` what we
        *recomputed* from the bytes received, so "signed value" / "recomputed value"; for every other
        check ``expected`` is what your trust root or the profile requires, so "found" / "expected".
        """
        if check.id in self.signed_hash_checks:
            return ("signed value", "recomputed value")
        return ("found", "expected")

    def rests_on(self, check: Check) -> str:
        """Whose signature a check's fact rests on (not who is to blame for a failure)."""
        return self.signatures.get(check.party, f"{check.party}'s signature")


class Comparison(NamedTuple):
    """Two values read straight from the mandates that differ, after a check failed.

    Evidence from unsigned data: the link checks that compare these values were skipped (an earlier
    signature or hash failed), so either side may be the part altered after signing.  It informs
    a person; it never changes the verdict.
    """

    name: str
    meaning: str
    left: str
    left_value: str
    right: str
    right_value: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "meaning": self.meaning,
            "values": {self.left: _short(self.left_value), self.right: _short(self.right_value)},
            "evidence": "unsigned data: read from the mandates, not covered by a verified signature",
        }


class Check(NamedTuple):
    """One named check.  ``expected``/``got``/``detail`` never hold a secret; :meth:`to_dict` and the
    HTML report cut them to 200 characters.

    A ``NamedTuple`` (immutable, cheap to build: a chain records ~60 of them per verification).
    Build checks through the verifier; :meth:`make` validates hand-built ones.
    """

    id: str
    status: CheckStatus
    party: str
    expected: str | None = None
    got: str | None = None
    key: str | None = None
    detail: str | None = None
    error: ErrorKind | None = None
    code: str | None = None

    @classmethod
    def make(
        cls,
        check_id: str,
        status: CheckStatus,
        party: str,
        *,
        expected: str | None = None,
        got: str | None = None,
        key: str | None = None,
        detail: str | None = None,
        error: ErrorKind | None = None,
        code: str | None = None,
    ) -> Check:
        """A validated check: known status, an error kind exactly when failed, texts shortened."""
        if status not in ("passed", "failed", "skipped"):
            raise ValueError(f"bad check status {status!r}")
        if (status == "failed") != (error is not None):
            raise ValueError("a failed check needs an error kind, and only a failed check has one")
        return cls(
            check_id, status, party, _short(expected), _short(got), _short(key), _short(detail), error, code
        )

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def skipped(self) -> bool:
        return self.status == "skipped"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; texts are cut to 200 characters here (values seen while verifying can be
        long: an ``aud`` or a merchant name is whatever the signer put there)."""
        return {
            "id": self.id,
            "status": self.status,
            "passed": self.status == "passed",
            "party": self.party,
            "expected": _short(self.expected),
            "got": _short(self.got),
            "key": _short(self.key),
            "detail": _short(self.detail),
            "error": self.error,
            "code": self.code,
        }


class KeyEvidence(NamedTuple):
    """One key the verdict rests on: whose, which, its RFC 7638 thumbprint, and where it came from."""

    role: str
    """``merchant``, ``issuer``, ``user (intent)`` or ``user (cnf)``."""
    owner: str
    kid: str
    thumbprint: str
    provenance: str
    anchored: bool | None
    """``True`` anchored, ``False`` not anchored, ``None`` not evaluated (the stage that would have
    established this key did not run)."""
    note: str | None = None

    @property
    def anchoring(self) -> Anchoring:
        if self.anchored is None:
            return "not evaluated"
        return "anchored" if self.anchored else "unanchored"

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "owner": _short(self.owner),
            "kid": _short(self.kid),
            "thumbprint": self.thumbprint,
            "provenance": self.provenance,
            "anchored": self.anchored,
            "anchoring": self.anchoring,
            "note": _short(self.note),
        }


def anchoring_of(keys: tuple[KeyEvidence, ...], reasons: tuple[str, ...]) -> Anchoring:
    """The one anchoring rule of a report, over its key records and the verifier's other reasons.

    ``unanchored`` when a reason is given (an expectation from the evidence, no trust root) or any key
    is not anchored: one unvouched key is enough for a party to have produced the chain itself.
    Otherwise ``not evaluated`` when a key was not evaluated, or no key was recorded at all (nothing
    vouches for a verdict that rests on no key).  Otherwise ``anchored``.
    """
    if reasons or any(key.anchored is False for key in keys):
        return "unanchored"
    if not keys or any(key.anchored is None for key in keys):
        return "not evaluated"
    return "anchored"


@dataclass(frozen=True, slots=True)
class VerificationReport:
    """Every check of one verification, in the order they were evaluated."""

    checks: tuple[Check, ...]
    evaluated_at: str
    """The time the chain was evaluated at (ISO 8601, UTC): ``now`` or the evidence time."""
    mode: Literal["online", "offline"]
    """``offline`` when every key came from a snapshot that cannot touch the network."""
    hashes: Mapping[str, str] = field(default_factory=dict)
    """The recomputed hashes of the mandates that parsed (``intent``, ``intent_mandate``,
    ``cart_contents``, ``cart``, ``payment_contents``): what a dispute can quote."""
    unanchored_because: tuple[str, ...] = ()
    """Why the verdict is not anchored, in sentences; besides the keys (whose records say it
    themselves), an expectation taken from the evidence or a missing trust root."""
    keys: tuple[KeyEvidence, ...] = ()
    expectations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """``{name: {"value", "source"}}``; source ``trust-root``, ``analyst`` or ``evidence``."""
    statements: tuple[str, ...] = ()
    """What the verdict means in words an analyst can quote (e.g. an intent not bound to the payment)."""
    trust_root: str | None = None
    """Fingerprint of the trust root used, ``None`` when none was given."""
    facts: Mapping[str, str] = field(default_factory=dict)
    """What the mandates say (merchant, items, totals, when): the verdict paragraph quotes them."""
    comparisons: tuple[Comparison, ...] = ()
    """Differing values read from the mandates after a failure (evidence from unsigned data)."""
    meanings: MeaningTable = field(kw_only=True)
    """The check vocabulary of the profile that drew this report: what each failed check means, which
    checks compare signed hashes, how its parties read.  Required: a report never guesses a profile."""

    @property
    def checks_passed(self) -> bool:
        # One pass in C over the statuses: every verdict (and raise_for_failure) asks this.
        return set(map(_STATUS_OF, self.checks)) == _ALL_PASSED

    @property
    def anchoring(self) -> Anchoring:
        """The report's one anchoring answer (:func:`anchoring_of`): every rendering reads this."""
        return anchoring_of(self.keys, self.unanchored_because)

    @property
    def anchored(self) -> bool | None:
        """The JSON ``anchored`` member: ``True``, ``False``, or ``None`` for "not evaluated"."""
        anchoring = self.anchoring
        return None if anchoring == "not evaluated" else anchoring == "anchored"

    @property
    def verdict(self) -> Verdict:
        if not self.checks_passed:
            return "FAILED"
        return "OK" if self.anchoring == "anchored" else "UNANCHORED"

    def not_anchored_because(self) -> tuple[str, ...]:
        """The reasons behind :attr:`anchoring` other than ``anchored``: the verifier's sentences, then
        one per key record that is not anchored (or not evaluated), from the record itself."""
        reasons = list(self.unanchored_because)
        for key in self.keys:
            if key.anchored is True:
                continue
            said = f"the {key.role} key {key.kid or '(none)'}"
            if any(said in reason for reason in reasons):
                continue
            state = "is not anchored" if key.anchored is False else "was not evaluated"
            reasons.append(f"{said} {state}" + (f": {key.note}" if key.note else ""))
        if not self.keys and not reasons:
            reasons.append("no key was recorded")
        return tuple(reasons)

    def anchoring_sentence(self) -> str:
        """``Anchored in your trust root: yes|no|not evaluated`` (with the reasons when not yes)."""
        anchoring = self.anchoring
        sentence = f"{ANCHORED_SENTENCE} {_ANSWER[anchoring]}"
        if anchoring == "anchored":
            return sentence + "."
        reasons = self.not_anchored_because()
        return sentence + (" (" + "; ".join(reasons) + ")." if reasons else ".")

    @property
    def ok(self) -> bool:
        return self.verdict == "OK"

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.failed)

    @property
    def skipped(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.skipped)

    @property
    def first_failure(self) -> Check | None:
        for check in self.checks:
            if check.failed:
                return check
        return None

    def by_id(self, check_id: str) -> Check:
        """The check with this id; ``KeyError`` when the report has none (e.g. not applicable)."""
        for check in self.checks:
            if check.id == check_id:
                return check
        raise KeyError(check_id)

    def raise_for_failure(self) -> None:
        """Raise the typed error of the first failed check; do nothing when :attr:`ok`.

        A report with no failure but a skipped check (cannot happen from our verifier, but a report
        can be built by hand) raises :class:`~mudrika.errors.VerificationError`: fail closed.
        """
        if self.ok:
            return
        first = self.first_failure
        if first is None and self.checks_passed:
            raise UntrustedKeyError(
                "every check passed, but the verdict is not anchored in the trust root",
                code="unanchored",
                because=list(self.not_anchored_because()),
            )
        if first is None:
            raise IncompleteVerification("a check did not run, though none failed", check=None)
        error_type = ERROR_KINDS[first.error or "verification"]
        raise error_type(
            f"check {first.id} failed" + (f": {first.detail}" if first.detail else ""),
            code=first.code or first.id,
            check=first.id,
            party=first.party,
            expected=first.expected,
            got=first.got,
        )

    def _signature_held(self, check_id: str) -> bool:
        try:
            return self.by_id(check_id).passed
        except KeyError:
            return False

    def _owner(self, role: str) -> str | None:
        for key in self.keys:
            if key.role == role:
                return key.owner
        return None

    def _part_verified(self, *check_ids: str) -> bool:
        """Every check that vouches for one part's content passed (its signature and its hash)."""
        return all(self._signature_held(check_id) for check_id in check_ids)

    def _failed_anchoring_sentence(self) -> str:
        """The anchoring sentence of a FAILED report, short when keys were never looked at.

        Why not the full reasons: after a failure the later stages never ran, and a paragraph that
        ends on "the payment stage did not admit a key" reads as a second finding about a stage
        nobody evaluated.  The per-key reasons stay in the report's anchoring section."""
        if self.anchoring == "not evaluated":
            return (
                f"{ANCHORED_SENTENCE} {_ANSWER['not evaluated']} (verification stopped before every key "
                "the verdict would rest on was looked at)."
            )
        return self.anchoring_sentence()

    def summary(self) -> str:
        """The verdict paragraph: who paid whom, what, how much, when; whose signature each fact rests
        on; anchored or not.

        Only facts whose part verified are stated as facts.  After a failure, a part whose signature
        or hash did not pass (the payment contents changed after the user signed them) is quoted as
        *claimed, not verified*: its date or amount may be exactly what was forged.  A FAILED
        paragraph gives its anchoring answer right after the verdict and ends on what the mandates
        say, never on a stage that did not run."""
        facts = self.facts
        sentences: list[str] = []
        failures = self.failures
        if self.verdict == "OK":
            sentences.append("Verdict OK: every check passed and every key is anchored in your trust root.")
        elif self.verdict == "UNANCHORED":
            sentences.append(
                "Verdict UNANCHORED: every check passed, but the verdict rests on something your trust "
                "root does not vouch for, so a party to the dispute could have produced this chain itself."
            )
        else:
            first = failures[0] if failures else None
            sentences.append(
                f"Verdict FAILED: {len(failures)} check{'s' if len(failures) != 1 else ''} failed"
                + (f"; first {first.id}: {self.meanings.meaning(first)}." if first is not None else ".")
            )
            sentences.append(self._failed_anchoring_sentence())
        if facts.get("merchant_name") or facts.get("paid_total"):
            if self.verdict == "FAILED":
                sentences.extend(self._failed_facts())
            else:
                sentences.extend(self._passed_facts())
        if self.comparisons:
            sentences.append(
                "Values that differ (read from the mandates, evidence from unsigned data): "
                + "; ".join(
                    f"{c.name}: {c.left} {c.left_value}, {c.right} {c.right_value}" for c in self.comparisons
                )
                + "."
            )
        if self.verdict != "FAILED":
            sentences.append(self.anchoring_sentence())
        return " ".join(sentences)

    def _payer(self) -> str:
        return self._owner("user (intent)") or (
            "the holder of a credential from " + issuer
            if (issuer := self._owner("issuer")) is not None
            else "the user"
        )

    def _payee(self) -> str:
        facts = self.facts
        merchant = facts.get("merchant_name", facts.get("paid_to", "an unknown merchant"))
        merchant_did = self._owner("merchant")
        return f"{merchant} ({merchant_did})" if merchant_did else merchant

    def _passed_facts(self) -> list[str]:
        """Every check passed: the whole purchase is stated, and whose signature each part rests on."""
        facts = self.facts
        amount = facts.get("paid_total", facts.get("cart_total", "an unknown amount"))
        what = facts.get("items", "the cart")
        when = facts.get("paid_at", "an unrecorded time")
        order = facts.get("order_id", "?")
        purchase = f"{self._payer()} paid {self._payee()} {amount} for {what} (order {order}) at {when}."
        return [
            purchase if self.verdict == "OK" else "The mandates say that " + purchase,
            "The items and the cart total ("
            + facts.get("cart_total", "?")
            + ") rest on the merchant's signature; the amount paid and the order rest on the user's "
            "signature, and the user's key on the credential issuer's signature.",
        ]

    def _failed_facts(self) -> list[str]:
        """A check failed: each part is stated as verified only when its signature and hash passed."""
        facts = self.facts
        cart_verified = self._part_verified("merchant.jws.signature", "merchant.jwt.cart_hash")
        payment_verified = self._part_verified("user.kb.signature", "user.kb.transaction_data")
        what = facts.get("items", "the cart")
        order = facts.get("order_id", "?")
        cart = f"a cart from {self._payee()} for {what}, total {facts.get('cart_total', '?')} (order {order})"
        payment = (
            f"{self._payer()} paid {facts.get('paid_total', 'an unknown amount')} to "
            f"{facts.get('paid_to', 'an unknown merchant')} for order {order} at "
            f"{facts.get('paid_at', 'an unrecorded time')}"
        )
        verified: list[str] = []
        claimed: list[str] = []
        if facts.get("merchant_name"):
            (verified if cart_verified else claimed).append(
                ("the merchant signed " if cart_verified else "the cart names ") + cart
            )
        if facts.get("paid_total"):
            (verified if payment_verified else claimed).append(
                ("the user signed that " if payment_verified else "the payment says ") + payment
            )
        said = []
        if verified:
            said.append("Verified: " + "; ".join(verified) + ".")
        if claimed:
            said.append(
                "What the mandates say that a failed or unrun check does not vouch for (claimed, not "
                "verified): " + "; ".join(claimed) + "."
            )
        return said

    def failure_dicts(self) -> list[dict[str, Any]]:
        """Each failed check with its plain meaning and its values under names a person reads right."""
        result = []
        for check in self.failures:
            got_label, expected_label = self.meanings.value_labels(check)
            result.append(
                {
                    "id": check.id,
                    "meaning": self.meanings.meaning(check),
                    "rests_on": self.meanings.rests_on(check),
                    got_label.replace(" ", "_"): _short(check.got),
                    expected_label.replace(" ", "_"): _short(check.expected),
                    "key": _short(check.key),
                    "detail": _short(check.detail),
                    "error": check.error,
                    "code": check.code,
                }
            )
        return result

    def to_dict(self, *, verbose: bool = True) -> dict[str, Any]:
        """JSON-ready form.  ``verbose=False`` (the CLI default) lists only the checks that did not
        pass; the passed ones are counted in ``passed``."""
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        for check in self.checks:
            counts[check.status] += 1
        return {
            "format": REPORT_FORMAT,
            "verdict": self.verdict,
            "ok": self.ok,
            "anchored": self.anchored,
            "anchoring": self.anchoring,
            "unanchored_because": [_short(reason) for reason in self.not_anchored_because()]
            if self.anchoring != "anchored"
            else [],
            "evaluated_at": self.evaluated_at,
            "mode": self.mode,
            "trust_root": self.trust_root,
            "counts": counts,
            "statements": list(self.statements),
            "expectations": {
                name: {"value": _short(item.get("value")), "source": item.get("source")}
                for name, item in self.expectations.items()
            },
            "keys": [key.to_dict() for key in self.keys],
            "hashes": dict(self.hashes),
            "summary": self.summary(),
            "facts": {name: _short(value) for name, value in self.facts.items()},
            "failures": self.failure_dicts(),
            "comparisons": [comparison.to_dict() for comparison in self.comparisons],
            "passed": {"count": counts["passed"], "listed": verbose},
            "checks": [check.to_dict() for check in self.checks if verbose or not check.passed],
        }

    def to_json(self, *, indent: int | None = 2, verbose: bool = True) -> str:
        """The report as one JSON document (see ``docs/payments.md`` for the format)."""
        return json.dumps(self.to_dict(verbose=verbose), indent=indent, ensure_ascii=False)
