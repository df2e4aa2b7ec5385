"""Key validity windows, tested by construction: every consumer × every window form × every entry point.

A dispute is judged months after the purchase; meanwhile keys expire, are rotated (superseded) or are
reported compromised, and the analyst pins that in the trust root (``key_windows``).  One function,
:func:`mudrika.identity.anchoring.judge_signing_time`, decides whether a signature falls inside its
key's window.  The status lists once escaped it: they were verified under the pinned key with no
question about its window, and nothing noticed, because no test listed every place that must ask.
This module does not pick examples.  It takes

* the list of **consumers** (:data:`CONSUMERS`) — every place a verdict judges a pinned key's window
  for one signature, with the key that signs it, the check that must fail, and the times known for
  that signature: the signer's own ``iat`` and the time, vouched for by *another* key's signature,
  that the signature is known to predate (its attested time, or none);
* the list of **window forms** (:data:`FORMS`), each placed relative to that signature's known times
  (expired, superseded or compromised before it, not yet valid, ended at the very instant, a
  compromise that a back-dated ``iat`` tries to slip under; and the passing controls: a window that
  holds the signature, one that starts at its instant, a supersession or a compromise after it);
* the **entry points** (offline ``inspect_*``, online ``verify_*`` which raises, and the CLI's
  ``dispute verify``, of v0.1 and v0.2 bundles alike; a cart verified on its own has only the
  online ``verify_cart``);

and generates every combination, pinning each consumer's owner both by a DID document and by a JWK
Set.  The outcome each case must have is derived from the rule alone, in :data:`FORMS`' table: a
compromised key is cleared only by an attested time, every other end also by the signer's claim.
Each signature of a transaction is made under its own kid, and only the consumer's kid has a window,
so a failing case must fail *exactly* the consumer's checks, each with the rule's code, and a passing
one must leave the verdict OK with those checks passed.

A status list the analyst supplies from after the purchase is judged by the same rule as of its own
``iat`` but only ever becomes a note (:data:`LATER_CONSUMERS`, :func:`test_later_status_list_window`):
offline and through the CLI, since the online verifier runs at the purchase, when no later list exists.

The whole product (about 720 cases) runs in well under a minute, so no entry point gets a subset.
Two walks of ``src/`` keep the lists complete: :func:`test_every_window_call_site_is_a_consumer`
fails on a new call of the rule without cases here, and
:func:`test_every_public_verifier_taking_a_trust_root_is_covered` on a new public function taking a
trust root — the place a verifier that never calls the rule would hide.  This matrix found one:
``verify_cart`` (a v0.1 cart received on its own) verified the cart under the merchant's pinned key
and accepted it whatever window the trust root pinned for that key.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.statuslist import StatusReference
from mudrika.errors import MudrikaError, VerificationError
from mudrika.identity.anchoring import TimeCode
from mudrika.payments.chain import inspect_chain, verify_cart, verify_chain
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02 import VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN, V02Evidence, inspect_v02, verify_v02
from mudrika.stores.replay import MemoryReplayStore
from tests._support import ap2_v02
from tests._support.evidence import evidence_builder
from tests._support.matrix import (
    ENTRY_POINTS,
    EntryPoint,
    Party,
    Pinning,
    bundle_file,
    call_sites,
    chain_expectations,
    cli_report,
    evidence_of,
    party,
    status_record,
)
from tests._support.paths import REPO_ROOT

pytestmark = pytest.mark.security

DAY: Final = 86_400
PINNINGS: Final[tuple[Pinning, ...]] = ("did-document", "jwks")
Section = Literal["issuers", "merchants"]

_BUILDER = evidence_builder()
#: The purchase of the v0.1 chains (the fixture's evidence time) and of the v0.2 transactions.
V01_PURCHASE: Final[int] = _BUILDER.EVIDENCE_TIME
V02_PURCHASE: Final[int] = ap2_v02.FIXTURE_TIME
#: When the status list recorded at the purchase was issued, and when a later list was.
STATUS_ISSUED: Final = 60
LATER_ISSUED: Final = 3 * DAY

_STATUS_URI: Final = "https://issuer.example/statuslists/1"
_STATUS_REFERENCE: Final = StatusReference(5, _STATUS_URI)
_ISSUER_DID: Final = "did:web:issuer.example"


# -- the rule, per form ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dating:
    """What is known of one signature's time: the signer's own ``iat`` (``claimed``) and a time
    vouched for by another key's signature that it predates (``attested``); ``None`` when absent."""

    claimed: int | None
    attested: int | None

    @property
    def earliest(self) -> int:
        return min(time for time in (self.claimed, self.attested) if time is not None)

    @property
    def latest(self) -> int:
        return max(time for time in (self.claimed, self.attested) if time is not None)


Window = dict[str, str]


def _utc(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _back_dated(dating: Dating) -> int | None:
    """An instant after the signer's claim and at or before the attested time (``None`` when the
    signature lacks either, or they coincide): where a thief's back-dated ``iat`` would hide."""
    if dating.claimed is None or dating.attested is None or dating.claimed >= dating.attested:
        return None
    return dating.claimed + (dating.attested - dating.claimed + 1) // 2


def _expired_before(d: Dating) -> Window | None:
    return {"valid_until": _utc(d.earliest - DAY)}


def _expired_at_the_instant(d: Dating) -> Window | None:
    return {"valid_until": _utc(d.earliest)}


def _superseded_before(d: Dating) -> Window | None:
    return {"revoked_at": _utc(d.earliest - DAY), "reason": "superseded"}


def _not_yet_valid(d: Dating) -> Window | None:
    return {"valid_from": _utc(d.latest + DAY)}


def _compromised_before(d: Dating) -> Window | None:
    return {"revoked_at": _utc(d.earliest - DAY), "reason": "compromised"}


def _compromised_under_a_back_dated_claim(d: Dating) -> Window | None:
    between = _back_dated(d)
    return None if between is None else {"revoked_at": _utc(between), "reason": "compromised"}


def _superseded_between_claim_and_attestation(d: Dating) -> Window | None:
    between = _back_dated(d)
    return None if between is None else {"revoked_at": _utc(between), "reason": "superseded"}


def _containing(d: Dating) -> Window | None:
    return {"valid_from": _utc(d.earliest - DAY), "valid_until": _utc(d.latest + DAY)}


def _starting_at_the_instant(d: Dating) -> Window | None:
    return {"valid_from": _utc(d.earliest)}


def _superseded_after(d: Dating) -> Window | None:
    return {"revoked_at": _utc(d.latest + DAY), "reason": "superseded"}


def _compromised_after(d: Dating) -> Window | None:
    return {"revoked_at": _utc(d.latest + DAY), "reason": "compromised"}


@dataclass(frozen=True)
class Form:
    """One window, placed relative to a signature's known times (``None``: not applicable to it),
    and the code :func:`judge_signing_time`'s rule gives it when the signature has an attested
    time and when it has only its signer's claim (``None``: the signature stands)."""

    window: Callable[[Dating], Window | None]
    attested: TimeCode | None
    claimed_only: TimeCode | None

    def expected(self, dating: Dating) -> TimeCode | None:
        return self.attested if dating.attested is not None else self.claimed_only


#: The rule, form by form (``docs/disputes-over-time.md``, "Key validity windows"): an end that is
#: not a compromise (expiry, supersession) is judged by the earliest known time, claimed or attested;
#: a start by every known time; a compromise by the attested time alone, since a thief writes any
#: ``iat`` — without one it is unproven whichever side of the compromise the claim falls.
FORMS: Final[dict[str, Form]] = {
    #                                                              attested            claimed only
    "expired before it": Form(_expired_before, "key_expired", "key_expired"),
    "expired at its instant": Form(_expired_at_the_instant, "key_expired", "key_expired"),
    "superseded before it": Form(_superseded_before, "key_superseded", "key_superseded"),
    "not yet valid": Form(_not_yet_valid, "key_not_yet_valid", "key_not_yet_valid"),
    "compromised before it": Form(_compromised_before, "key_compromised", "signing_time_unproven"),
    # The next two need both times (a claim before the attestation): generated only where both exist.
    "compromised under a back-dated iat": Form(
        _compromised_under_a_back_dated_claim, "key_compromised", "signing_time_unproven"
    ),
    "superseded between its iat and the attestation": Form(
        _superseded_between_claim_and_attestation, None, None
    ),
    "a window holding it": Form(_containing, None, None),
    "valid from its instant": Form(_starting_at_the_instant, None, None),
    "superseded after it": Form(_superseded_after, None, None),
    "compromised after it": Form(_compromised_after, None, "signing_time_unproven"),
}


# -- consumers ------------------------------------------------------------------------------------------

#: ``v01-cart``: a v0.1 cart verified on its own (``verify_cart``, online only), not in a chain.
Profile = Literal["v01", "v01-cart", "v02"]


@dataclass(frozen=True)
class Consumer:
    """A place a verdict judges a pinned key's window: what is signed, by which role's key, the
    checks a window closed before the signature must fail, and what dates that signature."""

    name: str
    profile: Profile
    role: str
    """The signing role whose kid carries the window (the runner gives every role its own kid)."""
    checks: frozenset[str]
    dating: Dating
    dated_by: str
    """Who vouches for the attested time, in words ("nothing": only the signer's own iat)."""
    receipts: bool = True
    payment_receipt_by: Literal["merchant", "issuer"] = "merchant"
    checkout_iat: int | None = None
    """An ``iat`` the merchant puts into the UCP Checkout it signs (a Checkout need not carry one)."""
    entries: tuple[EntryPoint, ...] = ENTRY_POINTS


#: Every consumer, with the times the builders sign at (stated here, not read back from the tokens).
CONSUMERS: Final[tuple[Consumer, ...]] = (
    Consumer(
        "v01.cart_merchant",
        "v01",
        "merchant",
        frozenset({"merchant.key.window"}),
        Dating(claimed=V01_PURCHASE - 120, attested=V01_PURCHASE - 2),
        "the user's key-binding JWT over the cart (its iat)",
    ),
    Consumer(
        "v01.cart_alone",
        "v01-cart",
        "merchant",
        frozenset({"merchant.key.window"}),
        Dating(claimed=V01_PURCHASE - 120, attested=None),
        "nothing: the key-binding JWT that dates the cart in a chain does not exist yet",
        entries=("verify",),  # verify_cart is the online API of a shopping agent or processor
    ),
    Consumer(
        "v01.credential_issuer",
        "v01",
        "issuer",
        frozenset({"issuer.key.window"}),
        Dating(claimed=V01_PURCHASE - 30 * DAY, attested=None),
        "nothing: no key the issuer does not control signs after the credential in AP2 v0.1",
    ),
    Consumer(
        "v01.status_list",
        "v01",
        "status_list",
        frozenset({"issuer.credential.status"}),
        Dating(claimed=V01_PURCHASE - STATUS_ISSUED, attested=None),
        "nothing: a status list is dated by its own iat alone",
    ),
    Consumer(
        "v02.root_issuer",
        "v02",
        "root_issuer",
        frozenset({"v02.checkout.root_key_window", "v02.payment.root_key_window"}),
        Dating(claimed=V02_PURCHASE - 60, attested=V02_PURCHASE),
        "the receipt over each chain (its iat)",
    ),
    Consumer(
        "v02.root_issuer_without_receipts",
        "v02",
        "root_issuer",
        frozenset({"v02.checkout.root_key_window", "v02.payment.root_key_window"}),
        Dating(claimed=V02_PURCHASE - 60, attested=None),
        "nothing: no receipt was kept",
        receipts=False,
    ),
    Consumer(
        "v02.checkout_jwt",
        "v02",
        "checkout_jwt",
        frozenset({"v02.checkout.merchant_key_window"}),
        Dating(claimed=None, attested=V02_PURCHASE),  # a UCP Checkout carries no iat
        "the shopping agent's closed checkout mandate over the checkout (its iat)",
    ),
    Consumer(
        "v02.checkout_jwt_with_iat",
        "v02",
        "checkout_jwt",
        frozenset({"v02.checkout.merchant_key_window"}),
        Dating(claimed=V02_PURCHASE - 30, attested=V02_PURCHASE),
        "the shopping agent's closed checkout mandate over the checkout (its iat)",
        checkout_iat=V02_PURCHASE - 30,
    ),
    Consumer(
        "v02.checkout_receipt",
        "v02",
        "checkout_receipt",
        frozenset({"v02.receipt.checkout.key_window"}),
        Dating(claimed=V02_PURCHASE, attested=None),
        "nothing signs after a receipt",
    ),
    Consumer(
        "v02.payment_receipt",
        "v02",
        "payment_receipt",
        frozenset({"v02.receipt.payment.key_window"}),
        Dating(claimed=V02_PURCHASE, attested=None),
        "nothing signs after a receipt",
    ),
    Consumer(
        "v02.payment_receipt_by_the_issuer",
        "v02",
        "payment_receipt",
        frozenset({"v02.receipt.payment.key_window"}),
        Dating(claimed=V02_PURCHASE, attested=None),
        "nothing signs after a receipt",
        payment_receipt_by="issuer",
    ),
    Consumer(
        "v02.status_list",
        "v02",
        "status_list",
        frozenset({"v02.checkout.status", "v02.payment.status"}),
        Dating(claimed=V02_PURCHASE - STATUS_ISSUED, attested=None),
        "nothing: a status list is dated by its own iat alone",
    ),
)

#: A status list supplied from after the purchase: judged as of its own iat, shown as a note.
LATER_CONSUMERS: Final[tuple[Consumer, ...]] = (
    Consumer(
        "v01.later_status_list",
        "v01",
        "later_status_list",
        frozenset(),
        Dating(claimed=V01_PURCHASE + LATER_ISSUED, attested=None),
        "nothing: a status list is dated by its own iat alone",
    ),
    Consumer(
        "v02.later_status_list",
        "v02",
        "later_status_list",
        frozenset(),
        Dating(claimed=V02_PURCHASE + LATER_ISSUED, attested=None),
        "nothing: a status list is dated by its own iat alone",
    ),
)


# -- the parties: every signing role under its own kid --------------------------------------------------


def _issuer_kids(owner: str, main_kid: str) -> tuple[str, ...]:
    """The issuer's further kids, one per role besides its main (root mandate / credential) key:
    the recorded status list, a later status list, a payment receipt."""
    names = ("status-1", "later-1", "receipt-1")
    return tuple(f"{owner}#{name}" if owner.startswith("did:") else f"{main_kid}-{name}" for name in names)


def _issuers(owner_of_jwks: str, kid_of_jwks: str, key_type: KeyType) -> dict[Pinning, Party]:
    return {
        "did-document": party(
            _ISSUER_DID,
            _ISSUER_DID + "#key-1",
            key_type,
            extra=_issuer_kids(_ISSUER_DID, _ISSUER_DID + "#key-1"),
        ),
        "jwks": party(owner_of_jwks, kid_of_jwks, key_type, extra=_issuer_kids(owner_of_jwks, kid_of_jwks)),
    }


_V02_ISSUERS: Final = _issuers(ap2_v02.AGENT_PROVIDER, ap2_v02.AGENT_PROVIDER_KID, KeyType.P256)
_V02_MERCHANT: Final = party(
    ap2_v02.MERCHANT_DID,
    ap2_v02.MERCHANT_KID,
    KeyType.P256,
    extra=(ap2_v02.MERCHANT_DID + "#checkout-receipt-1", ap2_v02.MERCHANT_DID + "#payment-receipt-1"),
)
_V01_ISSUERS: Final = _issuers(_BUILDER.ISSUER, _BUILDER.ISSUER_KID, KeyType.ED25519)
_V01_MERCHANT: Final = party(_BUILDER.MERCHANT_DID, _BUILDER.MERCHANT_KID, KeyType.ED25519)


@dataclass(frozen=True)
class Signer:
    """Who signs one role: the pinned party, the trust-root section it is pinned in, and the kid."""

    section: Section
    party: Party
    kid: str

    @property
    def key(self) -> KeyPair:
        return self.party.key_of(self.kid)


def _layout(consumer: Consumer, pinning: Pinning) -> dict[str, Signer]:
    """Every signing role of the consumer's profile, each under a kid no other role uses."""
    if consumer.profile != "v02":
        issuer, merchant = _V01_ISSUERS[pinning], _V01_MERCHANT
        status_kid, later_kid, _ = _issuer_kids_of(issuer)
        return {
            "issuer": Signer("issuers", issuer, issuer.kid),
            "merchant": Signer("merchants", merchant, merchant.kid),
            "status_list": Signer("issuers", issuer, status_kid),
            "later_status_list": Signer("issuers", issuer, later_kid),
        }
    issuer, merchant = _V02_ISSUERS[pinning], _V02_MERCHANT
    status_kid, later_kid, receipt_kid = _issuer_kids_of(issuer)
    checkout_receipt_kid, payment_receipt_kid = (kid for kid, _ in merchant.extra)
    payment_receipt = (
        Signer("issuers", issuer, receipt_kid)
        if consumer.payment_receipt_by == "issuer"
        else Signer("merchants", merchant, payment_receipt_kid)
    )
    return {
        "root_issuer": Signer("issuers", issuer, issuer.kid),
        "checkout_jwt": Signer("merchants", merchant, merchant.kid),
        "checkout_receipt": Signer("merchants", merchant, checkout_receipt_kid),
        "payment_receipt": payment_receipt,
        "status_list": Signer("issuers", issuer, status_kid),
        "later_status_list": Signer("issuers", issuer, later_kid),
    }


def _issuer_kids_of(issuer: Party) -> tuple[str, str, str]:
    status_kid, later_kid, receipt_kid = (kid for kid, _ in issuer.extra)
    return status_kid, later_kid, receipt_kid


def _entry(signer_party: Party, pinning: Pinning, windows: Mapping[str, Window]) -> dict[str, Any]:
    entry = signer_party.pin(pinning)
    if windows:
        entry["key_windows"] = dict(windows)
    return entry


def _windows_of(
    layout: Mapping[str, Signer], role: str, window: Window | None
) -> dict[str, dict[str, Window]]:
    """``{section: {kid: window}}`` with the one window on ``role``'s kid (nothing when ``None``)."""
    if window is None:
        return {}
    signer = layout[role]
    return {signer.section: {signer.kid: window}}


# -- answers --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One entry point's answer: the verdict, each failed check with its code, the checks that
    passed, and the report's statements (``()`` where the entry point raised)."""

    verdict: str
    failed: Mapping[str, str | None]
    passed: frozenset[str] | None = None
    """``None`` where the entry point answers without a report (``verify_cart`` returns the cart)."""
    statements: tuple[str, ...] = field(default=())


def _outcome(report: VerificationReport) -> Outcome:
    return Outcome(
        report.verdict,
        {check.id: check.code for check in report.failures},
        frozenset(check.id for check in report.checks if check.passed),
        tuple(report.statements),
    )


def _raised(call: Callable[[], Any]) -> Outcome:
    """The online verifier: it returns what the evidence proves, or raises the first failed check."""
    try:
        verified = call()
    except VerificationError as exc:
        return Outcome("FAILED", {str(exc.fields.get("check")): exc.code})
    except MudrikaError as exc:  # pragma: no cover - a refusal of another kind is itself a failure
        pytest.fail(
            f"the online verifier refused with {type(exc).__name__} {exc.code}, not a VerificationError"
        )
    report = getattr(verified, "report", None)
    return _outcome(report) if isinstance(report, VerificationReport) else Outcome("OK", {})


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str], root: TrustRoot, tmp: Path) -> Outcome:
    document = cli_report(capsys, argv, root, tmp)
    checks = document.get("checks", ())
    return Outcome(
        str(document.get("verdict")),
        {check["id"]: check.get("code") for check in checks if check.get("status") == "failed"},
        frozenset(check["id"] for check in checks if check.get("status") == "passed"),
        tuple(document.get("statements", ())),
    )


def _later_files(tmp: Path, later: list[str]) -> list[str]:
    arguments: list[str] = []
    for index, token in enumerate(later):
        path = tmp / f"later-{index}.jwt"
        path.write_text(token, encoding="utf-8")
        arguments += ["--later-status", str(path)]
    return arguments


# -- runners --------------------------------------------------------------------------------------------


def _run(
    consumer: Consumer,
    pinning: Pinning,
    window: Window | None,
    entry: EntryPoint,
    tmp: Path,
    capsys: pytest.CaptureFixture[str],
) -> Outcome:
    """Build a transaction of the consumer's profile with every role signed under its own kid, pin
    ``window`` on the consumer's kid alone, and verify it through ``entry``."""
    layout = _layout(consumer, pinning)
    windows = _windows_of(layout, consumer.role, window)
    later_signer = layout["later_status_list"]
    later = (
        [
            status_record(
                later_signer.key, later_signer.kid, uri=_STATUS_URI, iat=_purchase(consumer) + LATER_ISSUED
            ).token
        ]
        if consumer.role == "later_status_list"
        else []
    )
    if consumer.profile != "v02":
        return _run_v01(consumer, layout, pinning, windows, later, entry, tmp, capsys)
    return _run_v02(consumer, layout, pinning, windows, later, entry, tmp, capsys)


def _purchase(consumer: Consumer) -> int:
    return V02_PURCHASE if consumer.profile == "v02" else V01_PURCHASE


def _run_v02(
    consumer: Consumer,
    layout: Mapping[str, Signer],
    pinning: Pinning,
    windows: Mapping[str, Mapping[str, Window]],
    later: list[str],
    entry: EntryPoint,
    tmp: Path,
    capsys: pytest.CaptureFixture[str],
) -> Outcome:
    issuer, merchant = layout["root_issuer"].party, layout["checkout_jwt"].party
    root = parse_trust_root(
        {
            "format": "mudrika.trust-root/v1",
            "issuers": {
                issuer.owner: {
                    **_entry(issuer, pinning, windows.get("issuers", {})),
                    "vct": [VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN],
                }
            },
            "merchants": {merchant.owner: _entry(merchant, pinning, windows.get("merchants", {}))},
            "algorithms": ["ES256"],
            "leeway_seconds": 0.0,
            "max_age_seconds": {"key_binding": 300.0},
        }
    )
    receipt_issuer = layout["payment_receipt"].party.owner

    def payment_receipt_by(claims: dict[str, Any]) -> None:
        claims["iss"] = receipt_issuer

    def checkout_iat(checkout: dict[str, Any]) -> None:
        if consumer.checkout_iat is not None:
            checkout["iat"] = consumer.checkout_iat

    transaction = ap2_v02.build(
        now=V02_PURCHASE,
        keys=ap2_v02.Keys(issuer=issuer.key, merchant=merchant.key),
        issuer=issuer.owner,
        signers={role: ap2_v02.Signer(layout[role].key, layout[role].kid) for role in ap2_v02.SIGNING_ROLES},
        trust_root=root,
        root_status=_STATUS_REFERENCE,
        payment_receipt_hook=payment_receipt_by,
        checkout_hook=checkout_iat,
    )
    status = layout["status_list"]
    recorded = [status_record(status.key, status.kid, uri=_STATUS_URI, iat=V02_PURCHASE - STATUS_ISSUED)]
    evidence: V02Evidence = transaction.evidence(receipts=consumer.receipts)
    arguments = {**transaction.verifier_arguments(), "status_lists": recorded}
    if entry == "inspect":
        return _outcome(inspect_v02(evidence, **arguments, replay_store=None, later_status_lists=later))
    if entry == "verify":
        return _raised(lambda: verify_v02(evidence, **arguments, replay_store=MemoryReplayStore()))
    document = ap2_v02.bundle_document(transaction)
    document["evidence_time"] = _utc(V02_PURCHASE)
    document["status_lists"] = [record.model_dump(mode="json") for record in recorded]
    if not consumer.receipts:
        del document["checkout_receipt"], document["payment_receipt"]
    # The hops' aud and nonce are the analyst's record, not the bundle's word (else UNANCHORED).
    expectations = [
        *("--checkout-aud", ap2_v02.MERCHANT_DID, "--checkout-nonce", ap2_v02.CHECKOUT_NONCE),
        *("--payment-aud", ap2_v02.CP_AUDIENCE, "--payment-nonce", ap2_v02.PAYMENT_NONCE),
    ]
    argv = ["dispute", "verify", "--verbose", str(bundle_file(tmp, document)), *expectations]
    argv += _later_files(tmp, later)
    return _cli(capsys, argv, root, tmp)


def _run_v01(
    consumer: Consumer,
    layout: Mapping[str, Signer],
    pinning: Pinning,
    windows: Mapping[str, Mapping[str, Window]],
    later: list[str],
    entry: EntryPoint,
    tmp: Path,
    capsys: pytest.CaptureFixture[str],
) -> Outcome:
    issuer, merchant = layout["issuer"], layout["merchant"]
    chain = _BUILDER.build_chain(
        seeded=False,
        issuer=issuer.party.owner,
        credential_status=_STATUS_REFERENCE,
        issuer_signer=(issuer.key, issuer.kid),
        merchant_signer=(merchant.key, merchant.kid),
    )
    status = layout["status_list"]
    recorded = [status_record(status.key, status.kid, uri=_STATUS_URI, iat=chain.now - STATUS_ISSUED)]
    root = parse_trust_root(
        chain.trust_root_document(
            issuers={issuer.party.owner: _entry(issuer.party, pinning, windows.get("issuers", {}))},
            merchants={merchant.party.owner: _entry(merchant.party, pinning, windows.get("merchants", {}))},
        )
    )
    chain.did_documents, chain.jwks = evidence_of(issuer.party, merchant.party)
    chain.trusted_issuers = (issuer.party.owner,)
    expectations = chain_expectations(chain, root, recorded)
    if consumer.profile == "v01-cart":
        assert entry == "verify", entry
        return _raised(
            lambda: verify_cart(
                chain.cart,
                trust_root=root,
                keys=chain.keys(),
                audience=chain.merchant_audience,
                now=chain.now,
                replay_store=MemoryReplayStore(),
            )
        )
    if entry == "inspect":
        return _outcome(
            inspect_chain(
                chain.intent,
                chain.cart,
                chain.payment,
                **expectations,
                replay_store=MemoryReplayStore(),
                later_status_lists=later,
            )
        )
    if entry == "verify":
        return _raised(
            lambda: verify_chain(
                chain.intent, chain.cart, chain.payment, **expectations, replay_store=MemoryReplayStore()
            )
        )
    document = chain.bundle().model_dump(mode="json", exclude_none=True)
    document["status_lists"] = [record.model_dump(mode="json") for record in recorded]
    argv = [
        "dispute",
        "verify",
        "--verbose",  # the whole report, passed checks too, whatever the verdict
        str(bundle_file(tmp, document)),
        "--kb-nonce",
        chain.nonce,
        *_later_files(tmp, later),
    ]
    return _cli(capsys, argv, root, tmp)


# -- the matrix -----------------------------------------------------------------------------------------


def _cases(consumers: tuple[Consumer, ...], entries: tuple[EntryPoint, ...]) -> Iterator[Any]:
    for consumer in consumers:
        for form_name, form in FORMS.items():
            if form.window(consumer.dating) is None:
                continue
            for pinning in PINNINGS:
                for entry in (entry for entry in entries if entry in consumer.entries):
                    yield pytest.param(
                        consumer,
                        pinning,
                        form_name,
                        entry,
                        id=f"{consumer.name}-{pinning}-{form_name}-{entry}",
                    )


def test_the_baseline_without_windows_is_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every transaction the matrix builds verifies OK with no window pinned, through every entry
    point: any failure below is the window's doing."""
    for consumer in CONSUMERS:
        for pinning in PINNINGS:
            for entry in consumer.entries:
                outcome = _run(consumer, pinning, None, entry, tmp_path, capsys)
                assert (outcome.verdict, dict(outcome.failed)) == ("OK", {}), (consumer.name, pinning, entry)


@pytest.mark.parametrize(("consumer", "pinning", "form", "entry"), list(_cases(CONSUMERS, ENTRY_POINTS)))
def test_key_window(
    consumer: Consumer,
    pinning: Pinning,
    form: str,
    entry: EntryPoint,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    window = FORMS[form].window(consumer.dating)
    expected = FORMS[form].expected(consumer.dating)
    outcome = _run(consumer, pinning, window, entry, tmp_path, capsys)
    if expected is None:
        assert (outcome.verdict, dict(outcome.failed)) == ("OK", {}), outcome
        if outcome.passed is not None:
            assert consumer.checks <= outcome.passed, (consumer.checks, outcome.passed)
        return
    assert outcome.verdict != "OK", outcome
    if entry == "verify":
        # The online verifier raises the first failed check: one of the consumer's, with the rule's code.
        [(check, code)] = outcome.failed.items()
        assert check in consumer.checks, (check, consumer.checks)
        assert code == expected, (check, code, expected)
    else:
        assert dict(outcome.failed) == dict.fromkeys(consumer.checks, expected), outcome.failed


#: What a later list's note says when its key's window refuses it, by the rule's code.
_REFUSED_WORDS: Final[dict[TimeCode, str]] = {
    "key_expired": "the key's pinned validity ended",
    "key_superseded": "revoked (superseded)",
    "key_not_yet_valid": "the key became valid only on",
    "key_compromised": "reported compromised",
    "signing_time_unproven": "no time outside the signer's control",
}
_LATER_ENTRY_POINTS: Final[tuple[EntryPoint, ...]] = ("inspect", "cli")


@pytest.mark.parametrize(
    ("consumer", "pinning", "form", "entry"), list(_cases(LATER_CONSUMERS, _LATER_ENTRY_POINTS))
)
def test_later_status_list_window(
    consumer: Consumer,
    pinning: Pinning,
    form: str,
    entry: EntryPoint,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A later list never changes the verdict, but it counts only when its key's window holds at its
    own iat: otherwise the note says it does not count, and why."""
    expected = FORMS[form].expected(consumer.dating)
    outcome = _run(consumer, pinning, FORMS[form].window(consumer.dating), entry, tmp_path, capsys)
    assert (outcome.verdict, dict(outcome.failed)) == ("OK", {}), outcome
    refused = [s for s in outcome.statements if "a later status list was supplied but does not count" in s]
    if expected is None:
        assert not refused, outcome.statements
        assert any("lists the credential as valid" in s for s in outcome.statements), outcome.statements
    else:
        [note] = refused
        assert "outside the window" in note, note
        assert _REFUSED_WORDS[expected] in note, (expected, note)


def test_the_matrix_covers_every_consumer_with_failing_and_passing_forms() -> None:
    """Each consumer meets every code its dating allows and at least one passing form, through
    every entry point: a consumer whose dating left it only passing cases would prove nothing."""
    cases = list(_cases(CONSUMERS, ENTRY_POINTS))
    for consumer in CONSUMERS:
        mine = [case.values for case in cases if case.values[0] is consumer]
        for entry in consumer.entries:
            expected = {FORMS[values[2]].expected(consumer.dating) for values in mine if values[3] == entry}
            assert None in expected, consumer.name
            needed: set[TimeCode] = {"key_expired", "key_superseded", "key_not_yet_valid"}
            needed.add("key_compromised" if consumer.dating.attested is not None else "signing_time_unproven")
            assert needed <= expected, (consumer.name, entry, expected)


# -- the list of consumers is the list of call sites ----------------------------------------------------

#: Every function in src/ that applies the window rule, and the consumers above that exercise it.
#: A new call site without an entry fails, and so does an entry naming a consumer that does not exist.
CALL_SITES: Final[dict[str, tuple[str, ...]]] = {
    # The report form of the rule: each as-of-purchase stage below records through it.
    "mudrika/payments/report/_asof.py:record_signing_time": (
        "v01.cart_merchant",
        "v01.cart_alone",
        "v01.credential_issuer",
        "v02.root_issuer",
        "v02.root_issuer_without_receipts",
        "v02.checkout_jwt",
        "v02.checkout_jwt_with_iat",
        "v02.checkout_receipt",
        "v02.payment_receipt",
        "v02.payment_receipt_by_the_issuer",
    ),
    # A cart on its own, online (the gap this matrix found: it judged no window before).
    "mudrika/payments/chain/_cart.py:verify_cart": ("v01.cart_alone",),
    "mudrika/payments/chain/_verifier.py:_TrustedChain.admit_as_of_purchase": (
        "v01.cart_merchant",
        "v01.credential_issuer",
    ),
    "mudrika/payments/v02/verifier.py:_as_of_purchase_stage": (
        "v02.root_issuer",
        "v02.root_issuer_without_receipts",
        "v02.checkout_jwt",
        "v02.checkout_jwt_with_iat",
        "v02.checkout_receipt",
        "v02.payment_receipt",
        "v02.payment_receipt_by_the_issuer",
    ),
    # The status-list form: the resolver's answer carries the window, judged at the list's iat.
    "mudrika/payments/credential_status.py:_Witness.outside_window": (
        "v01.status_list",
        "v02.status_list",
        "v01.later_status_list",
        "v02.later_status_list",
    ),
    "mudrika/payments/credential_status.py:judge_credential_status": ("v01.status_list", "v02.status_list"),
    "mudrika/payments/credential_status.py:_later_status": ("v01.later_status_list", "v02.later_status_list"),
}
_RULE_NAMES: Final = frozenset({"judge_signing_time", "record_signing_time", "outside_window"})


def test_every_window_call_site_is_a_consumer() -> None:
    assert call_sites(_RULE_NAMES, rule_home={"mudrika/identity/anchoring.py"}) == set(CALL_SITES)
    known = {consumer.name for consumer in (*CONSUMERS, *LATER_CONSUMERS)}
    for site, consumers in CALL_SITES.items():
        assert consumers, site
        assert set(consumers) <= known, (site, set(consumers) - known)
    assert {name for consumers in CALL_SITES.values() for name in consumers} == known


# -- every public verifier that takes a trust root reaches the rule ------------------------------------

#: Every public function in src/ that takes a ``trust_root``, and how the matrix reaches the window
#: rule through it — or why it gives no verdict of its own.  The call-site walk above cannot see an
#: entry point that verifies under a pinned key *without* calling the rule (``verify_cart`` was one:
#: it verified a cart under the merchant's pinned key and judged no window); this list can, since
#: a new function taking a trust root fails until someone says which consumer covers it.
VERIFIERS: Final[dict[str, str]] = {
    "mudrika/payments/chain/_verifier.py:inspect_chain": "the inspect entry point of every v01 consumer",
    "mudrika/payments/chain/_verifier.py:verify_chain": "the verify entry point of every v01 consumer",
    "mudrika/payments/chain/_cart.py:verify_cart": "v01.cart_alone",
    "mudrika/payments/v02/verifier.py:inspect_v02": "the inspect entry point of every v02 consumer",
    "mudrika/payments/v02/verifier.py:verify_v02": "the verify entry point of every v02 consumer",
    "mudrika/payments/bundle.py:inspect_bundle": "the cli entry point (dispute verify) of every v01 consumer",
    "mudrika/payments/v02/bundle.py:inspect_v02_bundle": "the cli entry point of every v02 consumer",
    "mudrika/payments/v02/bundle.py:inspect_v02_case": "the cli entry point of every v02 consumer",
    "mudrika/payments/batch.py:inspect_bundle_bytes": "the cli entry point (dispute verify of one bundle)",
    "mudrika/payments/batch.py:verify_bundle_bytes": "dispute verify --cases: inspect_bundle_bytes per bundle",
    "mudrika/payments/batch.py:verify_bundles": "dispute verify --cases: verify_bundle_bytes per bundle",
    "mudrika/payments/batch.py:verify_batch": "dispute verify --jobs/--scheduler: verify_bundles per chunk",
    # Building blocks of the v0.2 verifier: each returns a verified piece, never a verdict, and its
    # one caller (inspect_v02 / verify_v02) judges that piece's key window in _as_of_purchase_stage.
    "mudrika/payments/v02/hops.py:verify_tokens": "building block: v02.root_issuer (the root's window)",
    "mudrika/payments/v02/bindings.py:verify_checkout_jwt": "building block: v02.checkout_jwt",
    "mudrika/payments/v02/receipts.py:verify_receipt_jwt": "building block: v02.*_receipt",
    "mudrika/payments/v02/bindings.py:merchant_anchor": "key lookup (no signature): v02.checkout_jwt",
    "mudrika/payments/v02/receipts.py:receipt_signer": "key lookup (no signature): v02.*_receipt",
    # The demo's own flows call the verifiers above (verify_cart, verify_v02).
    "mudrika/cli/_demo/_shopper.py:buy": "demo: verify_cart",
    "mudrika/cli/_demo/_v02.py:merchant_settle": "demo: verify_v02",
}


def _takes_a_trust_root() -> set[str]:
    found: set[str] = set()
    src = REPO_ROOT / "src"
    for path in sorted((src / "mudrika").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                arguments = node.args
                names = {arg.arg for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
                if "trust_root" in names:
                    found.add(f"{path.relative_to(src).as_posix()}:{node.name}")
    return found


def test_every_public_verifier_taking_a_trust_root_is_covered() -> None:
    assert _takes_a_trust_root() == set(VERIFIERS)
