"""The forged evidence bundle: fresh attacker keys filed under the real names.

An attacker who controls the evidence writes a bundle in which the user, the merchant
(``did:web:stride-athletics.example``) and the credential issuer (``https://wallet-issuer.example``)
all have keys the attacker generated, and signs a complete chain with them.  Every signature in it
verifies against the bundle's own key material.  Before the trust root existed this gave
"OK: every check passed".  Now:

* under the analyst's genuine trust root it FAILS, on an untrusted key;
* with no trust root it is UNANCHORED (every check runs and passes, but never OK);
* only under a trust root that pins the attacker's own keys is it OK — trust is the analyst's call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.cli import main
from mudrika.errors import UntrustedKeyError
from mudrika.payments.bundle import EvidenceBundle, inspect_bundle, load_bundle, parse_bundle
from mudrika.payments.chain import verify_chain
from mudrika.payments.trustroot import load_trust_root
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import BUNDLE, NONCE, TRUST_ROOT, evidence_builder

pytestmark = pytest.mark.security


@pytest.fixture(scope="module")
def forged() -> Any:
    """The fixture purchase, re-signed end to end with fresh attacker keys under the real names."""
    return evidence_builder().build_chain(seeded=False)


def _forged_bundle(forged: Any) -> EvidenceBundle:
    bundle: EvidenceBundle = forged.bundle(description="forged: attacker keys under the real names")
    return bundle


@pytest.mark.usefixtures("no_network")
def test_the_forged_bundle_is_internally_consistent(forged: Any) -> None:
    """Without the analyst's trust every check passes: the forgery is only detectable as unanchored."""
    report = inspect_bundle(_forged_bundle(forged), trust_root=None)
    assert report.checks_passed
    assert report.verdict == "UNANCHORED"
    assert not report.ok
    genuine = inspect_bundle(load_bundle(BUNDLE), trust_root=None)
    # The two bundles now differ visibly: by the thumbprints every key is shown with.
    assert [key.thumbprint for key in report.keys] != [key.thumbprint for key in genuine.keys]


@pytest.mark.usefixtures("no_network")
def test_the_forged_bundle_fails_under_the_genuine_trust_root(forged: Any) -> None:
    report = inspect_bundle(_forged_bundle(forged), trust_root=load_trust_root(TRUST_ROOT), kb_nonce=NONCE)
    assert report.verdict == "FAILED"
    first = report.first_failure
    assert first is not None
    assert (first.id, first.error, first.code) == (
        "merchant.jws.key",
        "untrusted_key",
        "evidence_key_mismatch",
    )
    with pytest.raises(UntrustedKeyError):
        verify_chain(
            forged.intent,
            forged.cart,
            forged.payment,
            replay_store=MemoryReplayStore(),
            **{**forged.expectations(), "trust_root": load_trust_root(TRUST_ROOT)},
        )


@pytest.mark.usefixtures("no_network")
def test_stripping_the_bundles_keys_does_not_help_the_forger(forged: Any) -> None:
    """Without any key material of its own the bundle is checked against the pinned keys alone."""
    document = json.loads(_forged_bundle(forged).to_json())
    document["keys"] = {}
    report = inspect_bundle(
        parse_bundle(json.dumps(document)), trust_root=load_trust_root(TRUST_ROOT), kb_nonce=NONCE
    )
    first = report.first_failure
    assert first is not None
    assert (first.id, first.error) == ("merchant.jws.signature", "signature")


@pytest.mark.usefixtures("no_network")
def test_the_issuer_is_caught_too_when_the_merchant_is_genuine() -> None:
    """Only the credential issuer forged: the issuer key check fails, not just the first link."""
    builder = evidence_builder()
    genuine = builder.build_chain()
    document = json.loads(genuine.bundle().to_json())
    forged_issuer = builder.build_chain(seed_prefix="attacker")
    # The attacker's user, credential and key binding next to the genuine merchant's cart, with the
    # attacker's issuer JWKS in the bundle under the real issuer's name.
    document["mandates"]["payment"] = forged_issuer.payment.plain()
    document["mandates"]["intent"] = forged_issuer.intent.plain()
    document["keys"]["jwks"] = forged_issuer.jwks
    report = inspect_bundle(
        parse_bundle(json.dumps(document)), trust_root=load_trust_root(TRUST_ROOT), kb_nonce=NONCE
    )
    assert report.verdict == "FAILED"
    assert "issuer.jwt.key" in [check.id for check in report.failures]
    assert report.by_id("issuer.jwt.key").code == "evidence_key_mismatch"


@pytest.mark.usefixtures("no_network")
def test_the_forged_bundle_passes_only_under_a_trust_root_pinning_the_attackers_keys(
    forged: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    attackers_root = forged.trust_root()
    report = inspect_bundle(_forged_bundle(forged), trust_root=attackers_root, kb_nonce=NONCE)
    assert report.verdict == "OK"
    assert report.trust_root == attackers_root.fingerprint != load_trust_root(TRUST_ROOT).fingerprint
    # The same through the command line: exit 1 under the genuine root, 0 under the attacker's.
    bundle = tmp_path / "forged.json"
    bundle.write_text(_forged_bundle(forged).to_json())
    root = tmp_path / "attackers-root.json"
    root.write_text(attackers_root.to_json())
    assert main(["dispute", "verify", str(bundle), "--trust-root", str(TRUST_ROOT), "--kb-nonce", NONCE]) == 1
    assert main(["dispute", "verify", str(bundle), "--trust-root", str(root), "--kb-nonce", NONCE]) == 0
    assert main(["dispute", "verify", str(bundle), "--json"]) == 1
    out = capsys.readouterr().out
    assert json.loads(out)["results"][0]["report"]["verdict"] == "UNANCHORED"
