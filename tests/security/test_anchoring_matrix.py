"""Anchoring, tested by construction: every key consumer × every kid form × every entry point.

A red team once got a purchase signed entirely by an attacker's did:key verified OK: the trust root
looked a kid up without asking whether its DID *is* the pinned owner, and the tests only ever tried
the pinned kid signed by a wrong key.  This module does not pick examples.  It takes

* the list of **consumers** — every place a verdict turns a kid into a pinned key (AP2 v0.1 credential
  issuer and merchant; AP2 v0.2 root issuer, checkout JWT and both receipts; the status list a
  credential or open mandate names, in both profiles; A2A card signatures), each
  with the way its owner can be pinned (a DID document, a JWK Set);
* the list of **kid forms** an attacker controls (a fresh did:key or did:jwk, another pinned party's
  kid, another DID on the pinned host, a relative or fragment-only kid, a kid with a query or another
  case, a JWKS kid for a DID owner and the reverse, a key the owner lists only under
  ``authentication``, a pinned key under an algorithm the verifier does not allow);
* the **entry points** (offline ``inspect_*``, online ``verify_*``, the CLI);

and generates every combination.  Each must end non-OK and not anchored, naming the consumer's check;
the pinned key itself must pass everywhere.  :func:`test_every_anchoring_call_site_is_a_consumer`
walks ``src/`` for calls of the anchoring rule, so a new consumer without cases fails the suite.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.statuslist import StatusReference
from mudrika.errors import MudrikaError, VerificationError
from mudrika.identity.methods import jwk as did_jwk
from mudrika.identity.methods import key as did_key
from mudrika.payments.chain import inspect_chain, verify_chain
from mudrika.payments.credential_status import RecordedStatusList
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02 import VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN, inspect_v02, verify_v02
from mudrika.stores.replay import MemoryReplayStore
from tests._support import ap2_v02
from tests._support.evidence import evidence_builder
from tests._support.matrix import (
    ENTRY_POINTS,
    EntryPoint,
    Party,
    Pinning,
    call_sites,
    chain_expectations,
    cli_report,
    evidence_of,
    status_record,
)

pytestmark = pytest.mark.security

_ISSUER_DID: Final = "did:web:issuer.example"
_MERCHANT_DID: Final = ap2_v02.MERCHANT_DID


# -- kid forms ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Forgery:
    """What signs one consumer's token in one form: the key and the kid its header names."""

    key: KeyPair
    kid: str


#: form name -> (the pinned owner, the other pinned party, a fresh attacker key) -> the forgery, or
#: ``None`` where the form does not apply to that pinning.
FormMaker = Callable[[Party, Party, KeyPair, Pinning], Forgery | None]


def _did_key(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery:
    did = did_key.create(attacker.public_key)
    return Forgery(attacker, f"{did}#{did.removeprefix('did:key:')}")


def _did_jwk(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery:
    return Forgery(attacker, did_jwk.create(attacker.public_key) + "#0")


def _other_party(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery:
    return Forgery(other.key, other.kid)


def _same_host(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery | None:
    if not owner.owner.startswith("did:web:"):
        return None
    return Forgery(attacker, owner.owner + ":users:mallory#key-1")


def _fragment_only(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery | None:
    if not owner.owner.startswith("did:"):
        return None
    return Forgery(owner.key, "#" + owner.kid.partition("#")[2])


def _with_query(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery | None:
    if not owner.owner.startswith("did:"):
        return None
    did, _, fragment = owner.kid.partition("#")
    return Forgery(owner.key, f"{did}?versionId=1#{fragment}")


def _other_case(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery:
    if owner.owner.startswith("did:web:"):
        host = owner.owner.removeprefix("did:web:")
        return Forgery(owner.key, owner.kid.replace(host, host.upper(), 1))
    return Forgery(owner.key, owner.kid.upper())


def _plain_kid_for_did(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery | None:
    if not owner.owner.startswith("did:"):
        return None
    return Forgery(owner.key, owner.kid.partition("#")[2])


def _did_kid_for_jwks(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery | None:
    if owner.owner.startswith("did:"):
        return None
    return Forgery(owner.key, f"did:web:{owner.owner.removeprefix('https://')}#{owner.kid}")


def _login_only(owner: Party, other: Party, attacker: KeyPair, pinning: Pinning) -> Forgery | None:
    if pinning != "did-document":
        return None
    return Forgery(owner.login_key, owner.login_kid)


FORMS: Final[dict[str, FormMaker]] = {
    "did:key of a fresh key": _did_key,
    "did:jwk of a fresh key": _did_jwk,
    "another pinned party's kid": _other_party,
    "another DID on the pinned host": _same_host,
    "fragment-only kid": _fragment_only,
    "kid with a query": _with_query,
    "kid in another case": _other_case,
    "JWKS-style kid for a DID owner": _plain_kid_for_did,
    "DID URL kid for a JWKS owner": _did_kid_for_jwks,
    "key listed only under authentication": _login_only,
}
#: A pinned key under an algorithm the verifier does not allow is the remaining form: the genuine key
#: and kid, with the trust root's algorithms narrowed to exclude the key's (``DISALLOWED_ALGORITHM``).
DISALLOWED_ALGORITHM: Final = "a pinned key under a disallowed algorithm"
GENUINE: Final = "the pinned key itself"


# -- consumers ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One entry point's answer: the verdict, whether it says it is anchored, and the failed checks."""

    verdict: str
    anchored: bool
    failed: frozenset[str]


@dataclass(frozen=True)
class Consumer:
    """A place a verdict anchors a key: its name, the check a forgery must fail, the pinnings its owner
    may have, and a runner that builds a chain with ``forgery`` in its role and verifies it."""

    name: str
    checks: frozenset[str]
    """A forgery must fail one of these (the key lookup, or the signature over the anchored key)."""
    pinnings: tuple[Pinning, ...]
    run: Callable[
        [Pinning, Forgery | None, frozenset[str] | None, EntryPoint, Path, pytest.CaptureFixture[str]],
        Outcome,
    ]
    owner: Callable[[Pinning], Party]
    other: Callable[[Pinning], Party]


# the status list a credential names: signed by its issuer's key, as the trust root anchors it --------

_STATUS_ROLE: Final = "status_list"
_STATUS_URI: Final = "https://issuer.example/statuslists/1"
_STATUS_REFERENCE: Final = StatusReference(5, _STATUS_URI)


def _status_record(signer: Forgery, purchase: int) -> RecordedStatusList:
    """The list the merchant recorded at the purchase (entry 5 VALID), signed by ``signer``."""
    return status_record(signer.key, signer.kid, uri=_STATUS_URI, iat=purchase - 60)


# v0.2 --------------------------------------------------------------------------------------------------

_V02_KEYS = ap2_v02.Keys()
_V02_ISSUERS: Final[dict[Pinning, Party]] = {
    "did-document": Party(
        _ISSUER_DID, _ISSUER_DID + "#key-1", _V02_KEYS.issuer, KeyPair.generate(KeyType.P256)
    ),
    "jwks": Party(
        ap2_v02.AGENT_PROVIDER, ap2_v02.AGENT_PROVIDER_KID, _V02_KEYS.issuer, KeyPair.generate(KeyType.P256)
    ),
}
_V02_MERCHANT: Final = Party(
    _MERCHANT_DID, ap2_v02.MERCHANT_KID, _V02_KEYS.merchant, KeyPair.generate(KeyType.P256)
)


def _v02_root(
    issuer: Party, merchant: Party, pinning: Pinning, algorithms: frozenset[str] | None
) -> TrustRoot:
    document: dict[str, Any] = {
        "format": "mudrika.trust-root/v1",
        "issuers": {issuer.owner: {**issuer.pin(pinning), "vct": [VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN]}},
        "merchants": {merchant.owner: merchant.pin(pinning)},
        "algorithms": sorted(algorithms) if algorithms is not None else ["ES256"],
        "leeway_seconds": 0.0,
        "max_age_seconds": {"key_binding": 300.0},
    }
    return parse_trust_root(document)


def _v02_runner(
    role: str,
) -> Callable[
    [Pinning, Forgery | None, frozenset[str] | None, EntryPoint, Path, pytest.CaptureFixture[str]], Outcome
]:
    def run(
        pinning: Pinning,
        forgery: Forgery | None,
        algorithms: frozenset[str] | None,
        entry: EntryPoint,
        tmp: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> Outcome:
        issuer = _V02_ISSUERS[pinning]
        root = _v02_root(issuer, _V02_MERCHANT, pinning, algorithms)
        signers = {"root_issuer": ap2_v02.Signer(issuer.key, issuer.kid)}
        status_signer = Forgery(issuer.key, issuer.kid)
        if forgery is not None and role == _STATUS_ROLE:
            status_signer = forgery
        elif forgery is not None:
            signers[role] = ap2_v02.Signer(forgery.key, forgery.kid)
        with_status = role == _STATUS_ROLE
        transaction = ap2_v02.build(
            now=ap2_v02.FIXTURE_TIME,
            keys=_V02_KEYS,
            issuer=issuer.owner,
            signers=signers,
            trust_root=root,
            root_status=_STATUS_REFERENCE if with_status else None,
        )
        arguments = {
            **transaction.verifier_arguments(),
            "status_lists": [_status_record(status_signer, ap2_v02.FIXTURE_TIME)] if with_status else [],
        }
        if entry == "inspect":
            return _outcome(inspect_v02(transaction.evidence(), **arguments, replay_store=None))
        if entry == "verify":
            return _raised(
                lambda: verify_v02(transaction.evidence(), **arguments, replay_store=MemoryReplayStore())
            )
        files: list[str] = []
        for name, text in (
            ("checkout-chain", transaction.checkout_chain),
            ("payment-chain", transaction.payment_chain),
            ("checkout-receipt", transaction.checkout_receipt),
            ("payment-receipt", transaction.payment_receipt),
        ):
            (tmp / name).write_text(text, encoding="utf-8")
            files += [f"--{name}", str(tmp / name)]
        for record in arguments["status_lists"]:
            (tmp / "status.jwt").write_text(record.token, encoding="utf-8")
            files += ["--status-list", f"{record.uri}={tmp / 'status.jwt'}"]
        expectations = [
            *("--checkout-aud", ap2_v02.MERCHANT_DID, "--checkout-nonce", ap2_v02.CHECKOUT_NONCE),
            *("--payment-aud", ap2_v02.CP_AUDIENCE, "--payment-nonce", ap2_v02.PAYMENT_NONCE),
            *("--at", str(ap2_v02.FIXTURE_TIME)),
        ]
        return _cli(capsys, ["mandate", "v02", "verify", *files, *expectations], root, tmp)

    return run


# v0.1 --------------------------------------------------------------------------------------------------

_BUILDER = evidence_builder()
_V01_GENUINE = _BUILDER.build_chain(seeded=False)
_V01_ISSUERS: Final[dict[Pinning, Party]] = {
    "did-document": Party(
        _ISSUER_DID, _ISSUER_DID + "#key-1", _V01_GENUINE.issuer_key, KeyPair.generate(KeyType.ED25519)
    ),
    "jwks": Party(
        _BUILDER.ISSUER, _BUILDER.ISSUER_KID, _V01_GENUINE.issuer_key, KeyPair.generate(KeyType.ED25519)
    ),
}
_V01_MERCHANTS: Final[dict[Pinning, Party]] = {
    pinning: Party(
        _BUILDER.MERCHANT_DID,
        _BUILDER.MERCHANT_KID,
        _V01_GENUINE.merchant_key,
        KeyPair.generate(KeyType.ED25519),
    )
    for pinning in ("did-document", "jwks")
}


def _v01_runner(
    role: str,
) -> Callable[
    [Pinning, Forgery | None, frozenset[str] | None, EntryPoint, Path, pytest.CaptureFixture[str]], Outcome
]:
    def run(
        pinning: Pinning,
        forgery: Forgery | None,
        algorithms: frozenset[str] | None,
        entry: EntryPoint,
        tmp: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> Outcome:
        issuer, merchant = _V01_ISSUERS[pinning], _V01_MERCHANTS[pinning]
        signers: dict[str, tuple[KeyPair, str]] = {
            "issuer_signer": (issuer.key, issuer.kid),
            "merchant_signer": (merchant.key, merchant.kid),
        }
        status_signer = Forgery(issuer.key, issuer.kid)
        if forgery is not None and role == _STATUS_ROLE:
            status_signer = forgery
        elif forgery is not None:
            signers[role] = (forgery.key, forgery.kid)
        with_status = role == _STATUS_ROLE
        chain = _BUILDER.build_chain(
            seeded=False,
            issuer=issuer.owner,
            credential_status=_STATUS_REFERENCE if with_status else None,
            **signers,
        )
        recorded = [_status_record(status_signer, chain.now)] if with_status else []
        document = chain.trust_root_document(
            issuers={issuer.owner: issuer.pin(pinning)},
            merchants={merchant.owner: merchant.pin(pinning)},
            **({"algorithms": sorted(algorithms)} if algorithms is not None else {}),
        )
        chain.did_documents, chain.jwks = evidence_of(issuer, merchant)
        chain.trusted_issuers = (issuer.owner,)
        root = parse_trust_root(document)
        expectations = chain_expectations(chain, root, recorded)
        if entry == "inspect":
            return _outcome(
                inspect_chain(
                    chain.intent, chain.cart, chain.payment, **expectations, replay_store=MemoryReplayStore()
                )
            )
        if entry == "verify":
            return _raised(
                lambda: verify_chain(
                    chain.intent, chain.cart, chain.payment, **expectations, replay_store=MemoryReplayStore()
                )
            )
        bundle = tmp / "bundle.json"
        document = chain.bundle().model_dump(mode="json", exclude_none=True)
        if recorded:
            document["status_lists"] = [record.model_dump(mode="json") for record in recorded]
        bundle.write_text(json.dumps(document), encoding="utf-8")
        return _cli(capsys, ["dispute", "verify", str(bundle), "--kb-nonce", chain.nonce], root, tmp)

    return run


CONSUMERS: Final[tuple[Consumer, ...]] = (
    Consumer(
        "v02.root_issuer",
        frozenset({"v02.checkout.hop0.key", "v02.checkout.hop0.signature"}),
        ("did-document", "jwks"),
        _v02_runner("root_issuer"),
        owner=lambda pinning: _V02_ISSUERS[pinning],
        other=lambda pinning: _V02_MERCHANT,
    ),
    Consumer(
        "v02.checkout_jwt",
        frozenset({"v02.checkout.merchant_signature"}),
        ("did-document", "jwks"),
        _v02_runner("checkout_jwt"),
        owner=lambda pinning: _V02_MERCHANT,
        other=lambda pinning: _V02_ISSUERS[pinning],
    ),
    Consumer(
        "v02.checkout_receipt",
        frozenset({"v02.receipt.checkout.signature"}),
        ("did-document", "jwks"),
        _v02_runner("checkout_receipt"),
        owner=lambda pinning: _V02_MERCHANT,
        other=lambda pinning: _V02_ISSUERS[pinning],
    ),
    Consumer(
        "v02.payment_receipt",
        frozenset({"v02.receipt.payment.signature"}),
        ("did-document", "jwks"),
        _v02_runner("payment_receipt"),
        owner=lambda pinning: _V02_MERCHANT,
        other=lambda pinning: _V02_ISSUERS[pinning],
    ),
    Consumer(
        "v02.status_list",
        frozenset({"v02.checkout.status", "v02.payment.status"}),
        ("did-document", "jwks"),
        _v02_runner(_STATUS_ROLE),
        owner=lambda pinning: _V02_ISSUERS[pinning],
        other=lambda pinning: _V02_MERCHANT,
    ),
    Consumer(
        "v01.credential_issuer",
        frozenset({"issuer.jwt.key", "issuer.jwt.signature"}),
        ("did-document", "jwks"),
        _v01_runner("issuer_signer"),
        owner=lambda pinning: _V01_ISSUERS[pinning],
        other=lambda pinning: _V01_MERCHANTS[pinning],
    ),
    Consumer(
        "v01.cart_merchant",
        # A cart names its merchant by the kid; a kid of another DID than the cart's iss verifies under
        # that DID's own (unanchored) key and then fails the iss check.
        frozenset({"merchant.jws.key", "merchant.jws.signature", "merchant.jwt.iss"}),
        ("did-document", "jwks"),
        _v01_runner("merchant_signer"),
        owner=lambda pinning: _V01_MERCHANTS[pinning],
        other=lambda pinning: _V01_ISSUERS[pinning],
    ),
    Consumer(
        "v01.status_list",
        frozenset({"issuer.credential.status"}),
        ("did-document", "jwks"),
        _v01_runner(_STATUS_ROLE),
        owner=lambda pinning: _V01_ISSUERS[pinning],
        other=lambda pinning: _V01_MERCHANTS[pinning],
    ),
)


# -- entry-point answers --------------------------------------------------------------------------------


def _outcome(report: VerificationReport) -> Outcome:
    return Outcome(report.verdict, report.anchored is True, frozenset(check.id for check in report.failures))


def _raised(call: Callable[[], object]) -> Outcome:
    try:
        call()
    except VerificationError as exc:
        check = exc.fields.get("check")
        return Outcome("FAILED", False, frozenset({str(check)} if check else {exc.code}))
    except MudrikaError as exc:  # pragma: no cover - a refusal of another kind is itself a failure
        pytest.fail(
            f"the online verifier refused with {type(exc).__name__} {exc.code}, not a VerificationError"
        )
    return Outcome("OK", True, frozenset())


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str], root: TrustRoot, tmp: Path) -> Outcome:
    """Run ``mudrika <argv> --trust-root ROOT --json``: the exit code must agree with the verdict."""
    document = cli_report(capsys, argv, root, tmp)
    failed = frozenset(check["id"] for check in document.get("checks", ()) if check.get("status") == "failed")
    return Outcome(str(document.get("verdict")), document.get("anchored") is True, failed)


# -- the matrix -----------------------------------------------------------------------------------------


def _cases() -> Iterator[Any]:
    for consumer in CONSUMERS:
        for pinning in consumer.pinnings:
            for form in (*FORMS, DISALLOWED_ALGORITHM, GENUINE):
                maker = FORMS.get(form)
                owner, other = consumer.owner(pinning), consumer.other(pinning)
                if maker is not None and maker(owner, other, KeyPair.generate(KeyType.P256), pinning) is None:
                    continue
                for entry in ENTRY_POINTS:
                    yield pytest.param(
                        consumer, pinning, form, entry, id=f"{consumer.name}-{pinning}-{form}-{entry}"
                    )


@pytest.mark.parametrize(("consumer", "pinning", "form", "entry"), list(_cases()))
def test_anchoring(
    consumer: Consumer,
    pinning: Pinning,
    form: str,
    entry: EntryPoint,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    owner, other = consumer.owner(pinning), consumer.other(pinning)
    key_type = owner.key.public_key.key_type
    algorithms: frozenset[str] | None = None
    forgery: Forgery | None
    if form == GENUINE:
        forgery = None
    elif form == DISALLOWED_ALGORITHM:
        forgery = None
        algorithms = frozenset({"ES256K"} if key_type is not KeyType.SECP256K1 else {"EdDSA"})
    else:
        forgery = FORMS[form](owner, other, KeyPair.generate(key_type), pinning)
    outcome = consumer.run(pinning, forgery, algorithms, entry, tmp_path, capsys)
    if form == GENUINE:
        assert outcome == Outcome("OK", True, frozenset()), outcome
        return
    assert outcome.verdict != "OK", outcome
    assert not outcome.anchored, outcome
    if form == DISALLOWED_ALGORITHM:
        assert outcome.failed, outcome  # every signature of the profile is refused, not only this role's
    else:
        assert outcome.failed & consumer.checks, (outcome, consumer.checks)


# -- the list of consumers is the list of call sites ----------------------------------------------------

#: Every function in src/ that applies the anchoring rule, and the consumer(s) above that exercise it
#: (or the test module that generates its own matrix).  A new call site without an entry fails.
CALL_SITES: Final[dict[str, str]] = {
    "mudrika/payments/trustroot/_model.py:TrustRoot.anchor": "every trust-root consumer above",
    "mudrika/payments/trustroot/_model.py:TrustRoot.model_post_init": (
        "every trust-root consumer above (TrustRoot.anchor answers a pinned kid named exactly from "
        "the keys anchored here when the root loads)"
    ),
    "mudrika/payments/trustroot/_model.py:TrustRoot.pinned_keys": "trust-root show (lists, never verifies)",
    "mudrika/payments/v02/hops.py:_root_key": "v02.root_issuer",
    "mudrika/payments/v02/bindings.py:merchant_anchor": "v02.checkout_jwt",
    "mudrika/payments/v02/receipts.py:_signer": "v02.checkout_receipt, v02.payment_receipt",
    "mudrika/payments/v02/verifier.py:_as_of_purchase_stage": "v02.status_list (and the key windows)",
    "mudrika/payments/chain/_keys.py:_root_key": "v01.credential_issuer, v01.cart_merchant",
    "mudrika/payments/chain/_keys.py:KeyMaterial._lookup": "v01 evidence keys (unanchored by definition)",
    "mudrika/trust/a2a/_didkeys.py:DidKeyTrust.key_for": "tests/security/test_anchoring_a2a.py",
    "mudrika/trust/a2a/_didkeys.py:DidKeyTrust.akey_for": "tests/security/test_anchoring_a2a.py",
    "mudrika/trust/httpsig/_keys.py:DocumentKeyLookup.lookup": "tests/unit/test_httpsig.py (authentication)",
    "mudrika/trust/httpsig/_keys.py:ResolverKeyLookup.lookup": "tests/unit/test_httpsig.py (authentication)",
    "mudrika/trust/httpsig/_keys.py:ResolverKeyLookup.alookup": "tests/security/test_httpsig_attacks.py",
    "mudrika/cli/status_list.py:_trusted_key": "tests/unit/test_cli_status_list.py (status-list check --kid)",
}
_RULE_NAMES: Final = frozenset(
    {"anchor_key", "anchor_resolved", "resolve_anchored", "aresolve_anchored", "anchor"}
)


def _call_sites() -> set[str]:
    return call_sites(_RULE_NAMES, rule_home={"mudrika/identity/anchoring.py"})


def test_every_anchoring_call_site_is_a_consumer() -> None:
    assert _call_sites() == set(CALL_SITES)


def test_the_matrix_covers_every_consumer_and_form() -> None:
    cases = list(_cases())
    for consumer in CONSUMERS:
        forms = {case.values[2] for case in cases if case.values[0] is consumer}
        assert {DISALLOWED_ALGORITHM, GENUINE} <= forms
        assert len(forms) >= 8, (consumer.name, forms)
