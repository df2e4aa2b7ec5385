"""The demo's script: six steps, each recorded as an outcome (for ``--json``) and told in a few lines.

Why every step records what it *observed* rather than what it expected: the test of the demo and a
reader of ``--json`` must be able to tell a refusal that happened from one that was merely printed.
A step that raises ends the demo with the CLI's error report (its code, exit 1 or 2), never a
partial success.
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

from mudrika.cli._demo._evidence import tamper_amount, verify_file, write_bundle
from mudrika.cli._demo._identities import PASSWORD_FILE, Provisioned, dump, provision_parties
from mudrika.cli._demo._merchant import (
    DEV_ISSUER,
    ERROR_PROFILE,
    TOKEN_AUDIENCE,
    Merchant,
    Sale,
    serve_merchant,
)
from mudrika.cli._demo._shopper import (
    Purchase,
    Refusal,
    V02Purchase,
    attempt_with_token,
    attempt_without_credentials,
    buy,
    buy_v02,
)
from mudrika.cli._demo._v02 import (
    V02Sale,
    issue_open_mandates,
    verify_v02_file,
    write_v02_bundle,
)
from mudrika.cli._demo._verified import Verified
from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.keystore import write_file_atomic
from mudrika.errors import VerificationError
from mudrika.payments.signing import issue_user_credential
from mudrika.trust.jsonrpc import A2AProfileCode, Reason

__all__ = ["DEMO_FORMAT", "STEP_NAMES", "DemoRun", "StepOutcome", "run_demo"]

DEMO_FORMAT: Final = "mudrika.demo/v1"
VIEWER_ROLE: Final = "catalogue-viewer"
SHOPPER_ROLE: Final = "shopping-agent"
TOKEN_KID: Final = "demo-dev-issuer-1"  # noqa: S105 - a key id, not a secret

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """One step: its name, whether it did what the demo shows, and what it observed."""

    step: str
    ok: bool
    details: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "ok": self.ok, "details": self.details}


@dataclass
class DemoRun:
    """The outcomes so far and the directory every file went to."""

    out: Path
    steps: list[StepOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return len(self.steps) == len(STEP_NAMES) and all(step.ok for step in self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": DEMO_FORMAT,
            "ok": self.ok,
            "out": str(self.out),
            "steps": [step.to_dict() for step in self.steps],
        }


STEP_NAMES: Final = ("provision", "serve", "refusals", "purchase", "verify", "tamper", "files")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _policy(shopper_did: str) -> dict[str, Any]:
    """The merchant's policy: sending messages needs an operator; the shopping agent's DID is one."""
    return {
        "version": 1,
        "allow_anonymous": False,
        "roles": [
            {"role_id": "demo-1", "role_name": VIEWER_ROLE, "realm_name": "demo", "trust_level": "viewer"},
            {"role_id": "demo-2", "role_name": SHOPPER_ROLE, "realm_name": "demo", "trust_level": "operator"},
        ],
        "operations": {
            "message/send": {"min_level": "operator"},
            "tasks/get": {"min_level": "viewer"},
            "tasks/cancel": {"min_level": "admin"},
        },
        "did_roles": {shopper_did: {"roles": [SHOPPER_ROLE]}},
    }


def _viewer_token(key: KeyPair, now: float) -> str:
    """An access token from the local development issuer, for a caller that may only browse."""
    claims = {
        "iss": DEV_ISSUER,
        "aud": TOKEN_AUDIENCE,
        "sub": "demo-browser",
        "azp": "demo-browser",
        "typ": "Bearer",
        "iat": int(now),
        "exp": int(now) + 300,
        "jti": secrets.token_urlsafe(12),
        "realm_access": {"roles": [VIEWER_ROLE]},
    }
    return sign_jwt(claims, key, alg=key.public_key.default_algorithm, kid=TOKEN_KID, typ="JWT")


def _refusal_line(refusal: Refusal) -> str:
    line = f"HTTP {refusal.status}, {refusal.code} {refusal.message}"
    if refusal.reason is not None:
        line += f", reason {refusal.reason}"
    if refusal.challenge is not None:
        line += f" (WWW-Authenticate: {refusal.challenge})"
    return line


def _cli(*args: str | Path) -> str:
    return "mudrika " + " ".join(shlex.quote(str(arg)) for arg in args)


def run_demo(out: Path, say: Say) -> DemoRun:
    """Run the six steps into ``out`` (a new or empty directory), telling ``say`` as they go."""
    run = DemoRun(out=out)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"

    # (1) identities and the analyst's trust root
    world = provision_parties(out, merchant_endpoint=url)
    policy_file = write_file_atomic(
        out / "merchant" / "policy.json", dump(_policy(world.shopper.did)), force=False, private_dir=False
    )
    credential = issue_user_credential(
        issuer_key=world.issuer.key,
        issuer=world.issuer.did,
        kid=world.issuer.kid,
        user_key=world.shopper.key.public_key,
        now=time.time(),
        ttl=365 * 86400,
        subject=world.shopper.did,
        claims={"email": "shopper@demo.example", "card_network": "visa"},
        disclosable=["/email"],
    )
    credential_file = write_file_atomic(
        out / "shopper" / "credential.sd-jwt", credential.compact().encode() + b"\n", force=False
    )
    _step_provision(run, world, policy_file, credential_file, say)

    # (2)-(4) the merchant's server, the refusals, the purchase
    token_key = KeyPair.generate("p256")
    merchant = Merchant(
        party=world.merchant,
        trust_root=world.trust_root,
        merchant_audience=world.shopper.did,
        kb_audience=world.merchant.did,
    )
    with serve_merchant(
        port=port, merchant=merchant, policy_file=policy_file, token_key=token_key, token_kid=TOKEN_KID
    ) as served:
        run.steps.append(
            StepOutcome(
                "serve",
                True,
                {
                    "url": served.url,
                    "agent_card": served.url + ".well-known/agent-card.json",
                    "authenticators": ["http-message-signature (RFC 9421, did:key)", "Bearer"],
                    "token_issuer": DEV_ISSUER,
                    "policy": str(policy_file),
                    "error_profile": ERROR_PROFILE,
                },
            )
        )
        say(f"2. merchant agent (a2a-sdk under uvicorn) listening on {served.url}")
        say("   behind A2AAuthMiddleware: DID-signed requests and bearer tokens, policy " + str(policy_file))
        say("   bearer tokens come from a local development issuer signed by this demo (no Keycloak here)")
        say("   refusals in the A2A 1.0 error profile: HTTP 401/403 with a typed error.data reason")

        no_credentials = asyncio.run(attempt_without_credentials(served.card))
        low_trust = asyncio.run(attempt_with_token(served.card, _viewer_token(token_key, time.time())))
        refused = (
            (no_credentials.status, no_credentials.code, no_credentials.reason)
            == (401, A2AProfileCode.UNAUTHENTICATED, Reason.AUTHENTICATION_REQUIRED)
            and (low_trust.status, low_trust.code, low_trust.reason)
            == (403, A2AProfileCode.PERMISSION_DENIED, Reason.PERMISSION_DENIED)
            and not merchant.sales
        )
        run.steps.append(
            StepOutcome(
                "refusals",
                refused,
                {"no_credentials": no_credentials.to_dict(), "low_trust_level": low_trust.to_dict()},
            )
        )
        say("3. the shopping agent calls through the a2a-sdk client:")
        say(f"   no credentials  -> {_refusal_line(no_credentials)}")
        say(f"   bearer token, role {VIEWER_ROLE} (viewer < operator)")
        say(f"                   -> {_refusal_line(low_trust)}")
        purchase = asyncio.run(
            buy(
                served.card,
                shopper=world.shopper,
                credential=credential,
                trust_root=world.trust_root,
                merchant=world.merchant,
            )
        )
        roots = issue_open_mandates(world, now=time.time())
        purchase_v02 = asyncio.run(
            buy_v02(served.card, shopper=world.shopper, merchant=world.merchant, roots=roots)
        )
    sales, sales_v02 = list(merchant.sales), list(merchant.v02_sales)
    _step_purchase(run, world, purchase, sales, purchase_v02, sales_v02, say)
    if len(sales) != 1 or len(sales_v02) != 1:
        # Nothing to bundle: say which check the merchant's verifier refused (its error code).
        raise VerificationError(
            "the merchant refused a purchase", code="purchase_refused", refusals=list(merchant.refusals)
        )
    sale, sale_v02 = sales[0], sales_v02[0]
    evidence = out / "evidence"
    mandate_files = _write_mandates(evidence, purchase)

    # (4) the evidence bundles, verified offline against the analyst's trust root; the tampered copy
    # of step (5) is judged under exactly the same expectations, so only the changed field can fail.
    analyse_v01 = partial(verify_file, trust_root_path=world.trust_root_path, kb_nonce=sale.kb_nonce)
    bundle_path = write_bundle(sale, world, evidence / "bundle-v01.json", merchant_audience=world.shopper.did)
    verified = analyse_v01(
        bundle_path, html=out / "analyst" / "report-v01.html", title="mudrika demo: AP2 v0.1 purchase"
    )
    bundle_v02 = write_v02_bundle(sale_v02, evidence / "bundle-v02.json")
    verified_v02 = verify_v02_file(
        bundle_v02, world.trust_root_path, sale_v02, html=out / "analyst" / "report-v02.html"
    )
    _step_verify(run, {"ap2-v0.1": (bundle_path, verified), "ap2-v0.2": (bundle_v02, verified_v02)}, say)

    # (5) one field of a copy changed: the amount
    tampered_path = evidence / "bundle-v01-tampered.json"
    original, changed = tamper_amount(bundle_path, tampered_path)
    tampered = analyse_v01(
        tampered_path,
        html=out / "analyst" / "report-v01-tampered.html",
        title="mudrika demo: AP2 v0.1 purchase, amount changed",
    )
    _step_tamper(run, tampered_path, tampered, original, changed, say)

    # (6) where everything is, and how to rerun each step
    _step_files(
        run,
        world,
        policy_file,
        credential_file,
        mandate_files,
        (bundle_path, tampered_path, bundle_v02),
        (sale, sale_v02),
        say,
    )
    return run


def _step_provision(run: DemoRun, world: Provisioned, policy: Path, credential: Path, say: Say) -> None:
    parties = {
        party.role: {"did": party.did, "kid": party.kid, "files": party.files}
        for party in (world.merchant, world.shopper, world.issuer)
    }
    run.steps.append(
        StepOutcome(
            "provision",
            True,
            {
                "parties": parties,
                "trust_root": str(world.trust_root_path),
                "trust_root_fingerprint": world.trust_root.fingerprint,
                "policy": str(policy),
                "credential": str(credential),
            },
        )
    )
    say(f"1. provisioned three parties in {run.out} (key, DID, DID document, CSR each):")
    for party in (world.merchant, world.shopper, world.issuer):
        say(f"   {party.role:<18} {party.did}")
    say(f"   the issuer gave the shopper an SD-JWT VC payment credential: {credential}")
    say(f"   analyst's trust root (pins the issuer and the merchant): {world.trust_root_path}")


def _step_purchase(
    run: DemoRun,
    world: Provisioned,
    purchase: Purchase,
    sales: list[Sale],
    purchase_v02: V02Purchase,
    sales_v02: list[V02Sale],
    say: Say,
) -> None:
    cart = purchase.cart.model.contents
    total = cart.payment_request.details.total.amount
    v01 = {
        "accepted": len(sales) == 1 and purchase.answer.startswith("payment accepted"),
        "carried_as": "A2A DataParts ap2.mandates.IntentMandate / CartMandate / PaymentMandate",
        "signer": world.shopper.did,
        "cart_id": cart.id,
        "cart_signed_by": world.merchant.did,
        "total": {"currency": total.currency, "value": str(total.value)},
        "merchant_answer": purchase.answer,
    }
    v02: dict[str, Any] = {
        "accepted": len(sales_v02) == 1 and purchase_v02.answer.startswith("payment accepted"),
        "carried_as": "A2A DataParts ap2.mandates.CheckoutMandateSdJwt / PaymentMandateSdJwt",
        "open_mandates_issued_by": world.issuer.did,
        "delegate": world.shopper.did,
        "checkout_signed_by": world.merchant.did,
        "receipts": sorted(purchase_v02.receipts),
        "merchant_answer": purchase_v02.answer,
    }
    if sales_v02:
        minor = sales_v02[0].total_minor
        v02["total"] = {"currency": sales_v02[0].currency, "value": f"{minor // 100}.{minor % 100:02d}"}
    run.steps.append(
        StepOutcome(
            "purchase",
            bool(v01["accepted"] and v02["accepted"]),
            {"request_auth": "http-message-signature (RFC 9421)", "ap2-v0.1": v01, "ap2-v0.2": v02},
        )
    )
    say("   then buys twice, every request RFC 9421-signed by its did:key (policy did_roles: operator):")
    say("   AP2 v0.1: intent (signed by the user) -> cart (signed by the merchant, checked against the")
    say("   trust root) -> payment (SD-JWT VC + key-binding JWT over intent, cart and payment)")
    say(f"             merchant: {purchase.answer}")
    say("   AP2 v0.2: open checkout and payment mandates from the issuer, bound to the agent's key ->")
    say("   checkout JWT signed by the merchant -> both mandates closed by key-binding hops")
    say(f"             merchant: {purchase_v02.answer}, with signed checkout and payment receipts")


def _write_mandates(directory: Path, purchase: Purchase) -> dict[str, str]:
    files: dict[str, str] = {}
    for name, mandate in (
        ("intent", purchase.intent),
        ("cart", purchase.cart),
        ("payment", purchase.payment),
    ):
        path = write_file_atomic(
            directory / f"{name}.json", dump(mandate.plain()), force=False, private_dir=False
        )
        files[name] = str(path)
    return files


def _step_verify(run: DemoRun, verified: dict[str, tuple[Path, Verified]], say: Say) -> None:
    details: dict[str, Any] = {}
    say("4. evidence bundles, verified offline against the analyst's trust root:")
    for profile, (bundle, result) in verified.items():
        report = result.report
        details[profile] = {
            "bundle": str(bundle),
            "verdict": report.verdict,
            "checks": len(report.checks),
            "failed_checks": [check.id for check in report.failures],
            "html_report": str(result.html),
        }
        say(f"   {profile}: {bundle}")
        for line in result.text.splitlines()[1:3]:
            say("   | " + line)
        say(f"   HTML report: {result.html}")
    ok = all(item["verdict"] == "OK" for item in details.values())
    run.steps.append(StepOutcome("verify", ok, details))


def _step_tamper(run: DemoRun, path: Path, tampered: Verified, original: Any, changed: Any, say: Say) -> None:
    report = tampered.report
    failing = tampered.failing()
    run.steps.append(
        StepOutcome(
            "tamper",
            report.verdict == "FAILED" and bool(failing),
            {
                "bundle": str(path),
                "field": "mandates.cart.contents.payment_request.details.total.amount.value",
                "original": original,
                "tampered": changed,
                "verdict": report.verdict,
                "failing_checks": failing,
                "html_report": str(tampered.html),
            },
        )
    )
    say(f"5. a copy with the cart total changed from {original} to {changed}: {path}")
    say(f"   verdict {report.verdict}; failing checks:")
    for item in failing:
        say(f"   - {item['check']}: expected {item['expected']}, got {item['got']}")
    say(f"   HTML report: {tampered.html}")


def _step_files(
    run: DemoRun,
    world: Provisioned,
    policy: Path,
    credential: Path,
    mandates: dict[str, str],
    bundles: tuple[Path, Path, Path],
    sales: tuple[Sale, V02Sale],
    say: Say,
) -> None:
    out = run.out
    bundle, tampered, bundle_v02 = bundles
    sale, sale_v02 = sales
    password = out / PASSWORD_FILE
    pw = ("--password-file", password)
    commands = {
        "provision": _cli("provision", "--name", "my-agent", "--out", out / "again", "--method", "key", *pw),
        "credential": _cli(
            "credential",
            "issue",
            "--key",
            world.issuer.files["private_key"],
            "--issuer",
            world.issuer.did,
            "--kid",
            world.issuer.kid,
            "--holder-did",
            world.shopper.did,
            "--did-document",
            world.issuer.files["did_document"],
            *pw,
            "--out",
            out / "again-credential.sd-jwt",
        ),
        "trust_root": _cli("trust-root", "show", world.trust_root_path),
        "serve_and_buy": _cli("demo", "--out", out / "again-demo"),
        "refusal": _cli(
            "policy",
            "check",
            "--config",
            policy,
            "--roles",
            "catalogue-viewer",
            "--operation",
            "message/send",
        ),
        "bundle": _cli(
            "dispute",
            "bundle",
            "--intent",
            mandates["intent"],
            "--cart",
            mandates["cart"],
            "--payment",
            mandates["payment"],
            "--merchant-aud",
            world.shopper.did,
            "--kb-aud",
            world.merchant.did,
            "--kb-nonce",
            sale.kb_nonce,
            "--did-document",
            world.merchant.files["did_document"],
            "--did-document",
            world.issuer.files["did_document"],
            "--trusted-issuer",
            world.issuer.did,
            "--out",
            out / "again-bundle.json",
        ),
        "verify": _cli(
            "dispute",
            "verify",
            bundle,
            "--trust-root",
            world.trust_root_path,
            "--kb-nonce",
            sale.kb_nonce,
            "--html",
            out / "again-report.html",
        ),
        "tamper": _cli(
            "dispute", "verify", tampered, "--trust-root", world.trust_root_path, "--kb-nonce", sale.kb_nonce
        ),
        "verify_v02": _cli(
            "mandate",
            "v02",
            "verify",
            bundle_v02,
            "--trust-root",
            world.trust_root_path,
            "--checkout-aud",
            sale_v02.audience,
            "--checkout-nonce",
            sale_v02.checkout_nonce,
            "--payment-aud",
            sale_v02.audience,
            "--payment-nonce",
            sale_v02.payment_nonce,
        ),
    }
    files = {
        "password_file": str(password),
        "policy": str(policy),
        "credential": str(credential),
        "trust_root": str(world.trust_root_path),
        "mandates": mandates,
        "bundle": str(bundle),
        "tampered_bundle": str(tampered),
        "bundle_v02": str(bundle_v02),
        **{
            f"{party.role.replace(' ', '_')}_dir": str(party.directory)
            for party in (world.merchant, world.shopper, world.issuer)
        },
    }
    run.steps.append(
        StepOutcome(
            "files", all(Path(p).exists() for p in _paths(files)), {"files": files, "rerun": commands}
        )
    )
    say(f"6. every file is under {out}; the key password is in {password} (0600)")
    for name, command in commands.items():
        say(f"   {name:<14} {command}")


def _paths(files: dict[str, Any]) -> list[str]:
    paths: list[str] = []
    for value in files.values():
        paths.extend(value.values() if isinstance(value, dict) else [value])
    return paths
