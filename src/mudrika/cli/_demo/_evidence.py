"""Steps 4 and 5 of the demo: the merchant's evidence bundle, verified offline by the analyst, then a
tampered copy.

Why the analyst re-reads everything from disk: a dispute is decided months later from files, by
someone who holds only their own trust root.  So the bundle is written, read back strictly, and
verified with ``inspect_bundle`` against the trust-root file, with the nonce from the merchant's
records, exactly as ``mudrika dispute verify`` does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mudrika.cli._demo._identities import Provisioned, dump, iso
from mudrika.cli._demo._merchant import Sale
from mudrika.cli._demo._verified import Verified, keep_report
from mudrika.crypto.keystore import write_file_atomic
from mudrika.payments.bundle import build_bundle, inspect_bundle, load_bundle, parse_bundle
from mudrika.payments.trustroot import load_trust_root

__all__ = ["tamper_amount", "verify_file", "write_bundle"]

#: Where the cart total sits in a bundle: the field the tampering step changes.
TOTAL_PATH = ("mandates", "cart", "contents", "payment_request", "details", "total", "amount", "value")


def write_bundle(sale: Sale, world: Provisioned, path: Path, *, merchant_audience: str) -> Path:
    """The merchant's evidence: the chain as received, the key material it verified with, the nonce."""
    fetched = {
        world.merchant.did: {
            "at": iso(sale.accepted_at),
            "via": f"the merchant's own DID document ({world.merchant.files['did_document']})",
        },
        world.issuer.did: {
            "at": iso(sale.accepted_at),
            "via": f"the issuer's DID document ({world.issuer.files['did_document']})",
        },
    }
    bundle = build_bundle(
        sale.intent,
        sale.cart,
        sale.payment,
        evidence_time=sale.accepted_at,
        merchant_audience=merchant_audience,
        kb_audience=world.merchant.did,
        kb_nonce=sale.kb_nonce,
        trusted_issuers=[world.issuer.did],
        did_documents={world.merchant.did: world.merchant.document, world.issuer.did: world.issuer.document},
        fetched=fetched,
        description="mudrika demo: one AP2 v0.1 purchase over A2A, as the merchant accepted it",
    )
    return write_file_atomic(path, (bundle.to_json() + "\n").encode(), force=False, private_dir=False)


def verify_file(
    bundle_path: Path, trust_root_path: Path, *, kb_nonce: str, html: Path, title: str
) -> Verified:
    """Verify a bundle file offline against a trust-root file; write the HTML report beside it."""
    bundle = load_bundle(bundle_path)
    report = inspect_bundle(bundle, trust_root=load_trust_root(trust_root_path), kb_nonce=kb_nonce)
    return keep_report(report, title=title, html=html, mandates=_raw_mandates(bundle_path))


def _raw_mandates(bundle_path: Path) -> dict[str, Any]:
    mandates: dict[str, Any] = json.loads(bundle_path.read_text(encoding="utf-8"))["mandates"]
    return mandates


def tamper_amount(bundle_path: Path, copy_path: Path) -> tuple[Any, Any]:
    """Copy the bundle with the cart total changed; return (original, tampered) amounts."""
    document = json.loads(bundle_path.read_text(encoding="utf-8"))
    holder = document
    for name in TOTAL_PATH[:-1]:
        holder = holder[name]
    original = holder[TOTAL_PATH[-1]]
    tampered = round(float(original) / 10, 2)
    holder[TOTAL_PATH[-1]] = tampered
    parse_bundle(json.dumps(document))  # still a well-formed bundle: only a check can catch it
    write_file_atomic(copy_path, dump(document), force=False, private_dir=False)
    return original, tampered
