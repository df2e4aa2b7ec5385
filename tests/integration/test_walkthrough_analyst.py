"""The dispute analyst's walkthrough, end to end, as README.md and docs/payments.md tell it: from the
demo's evidence to a trust root, three tampers and a 200-bundle batch.

The analyst starts from ``mudrika demo --out DIR --json`` and takes its AP2 v0.1 evidence bundle.
``mudrika dispute inspect BUNDLE --json`` shows what the bundle claims (parties, audiences, nonces,
keys with their thumbprints); the analyst confirms the two keys to pin against the parties' own
public keys (``mudrika keys inspect``: out of band, not the bundle's word), writes the DID documents
out of the bundle and builds a trust root with ``trust-root init`` / ``add-issuer`` /
``add-merchant``, then verifies with the processor's nonce: OK, anchored.  Three tampered copies
(the amount raised, the purchase date moved, the payment made out to another merchant) each fail;
the human report names the changed value, and never in its "Verified:" sentence; the date comes
first under "values that differ", beside the time the user signed.  A mistyped ``--kb-nonce`` reads
neutrally.  Then 200 bundles (150 genuine copies, 50 tampered) go through ``--cases`` with
``--jobs 2``: ``--summary-only --json`` counts them, and ``--json`` lists all 200 in one shape.

Why in-process (``mudrika.cli.main``): the demo costs a few seconds either way, and every other step
is one CLI call whose interpreter start would cost more than its work.  Why one test: the
walkthrough's value is that the steps fit together with nothing but what the docs give; each step
alone is tested elsewhere.  The 200 bundles are JSON copies and edits of the one the demo wrote.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests._support.cli import run_cli, run_cli_json

pytestmark = pytest.mark.integration

BATCH_GENUINE = 150
BATCH_TAMPERED = 50
OTHER_MERCHANT = "did:web:other-shop.example"
FORGED_DATE = "2026-01-02T03:04:05Z"

Tamper = Callable[[dict[str, Any]], str]
"""Edits a bundle (a JSON object) in place as an adversary would; returns the forged value."""


def _contents(bundle: dict[str, Any]) -> dict[str, Any]:
    contents: dict[str, Any] = bundle["mandates"]["payment"]["payment_mandate_contents"]
    return contents


def _raise_amount(bundle: dict[str, Any]) -> str:
    amount = _contents(bundle)["payment_details_total"]["amount"]
    amount["value"] = 1384.90
    return f"{amount['currency']} 1,384.90"


def _move_date(bundle: dict[str, Any]) -> str:
    _contents(bundle)["timestamp"] = FORGED_DATE
    return FORGED_DATE


def _swap_merchant(bundle: dict[str, Any]) -> str:
    _contents(bundle)["merchant_agent"] = OTHER_MERCHANT
    return OTHER_MERCHANT


TAMPERS: dict[str, Tamper] = {"amount": _raise_amount, "date": _move_date, "merchant": _swap_merchant}


def _tampered(genuine: dict[str, Any], tamper: Tamper) -> tuple[dict[str, Any], str]:
    bundle = copy.deepcopy(genuine)
    return bundle, tamper(bundle)


def _claim(claims: dict[str, Any], section: str, role: str) -> str:
    (value,) = {item["value"] for item in claims[section] if item["role"] == role}
    return str(value)


def _verified_and_claimed(summary: str) -> tuple[str, str]:
    """The verdict paragraph's "Verified: …" sentence and its "claimed, not verified" part."""
    verified = summary.split("Verified: ", 1)[1].split(" What the mandates say", 1)[0]
    claimed = summary.split("(claimed, not verified): ", 1)[1]
    return verified, claimed


def _section(report_text: str, heading: str) -> list[str]:
    """The lines under one upper-case heading of the text report, up to the next heading."""
    lines = report_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith(" "):
            break
        body.append(line)
    return body


def test_an_analyst_goes_from_the_demo_to_a_trust_root_three_tampers_and_a_batch_of_200(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 1. The demo's evidence.
    code, demo, err = run_cli_json(capsys, "demo", "--out", str(tmp_path / "demo"), "--json")
    assert code == 0, err
    (verify_step,) = [step for step in demo["steps"] if step["step"] == "verify"]
    evidence = Path(verify_step["details"]["ap2-v0.1"]["bundle"])
    (provision_step,) = [step for step in demo["steps"] if step["step"] == "provision"]
    party_files = {
        name: Path(party["files"]["did_document"]).parent
        for name, party in provision_step["details"]["parties"].items()
    }
    case = tmp_path / "case"
    case.mkdir()
    bundle_path = case / "bundle.json"
    bundle_path.write_bytes(evidence.read_bytes())
    genuine = json.loads(bundle_path.read_text())

    # 2. What the bundle claims, unverified: who, which audiences, which nonce, which keys.
    code, inspected, err = run_cli_json(capsys, "dispute", "inspect", str(bundle_path), "--json")
    assert code == 0, err
    claims = inspected["claims"]
    assert claims["verified"] is False
    assert claims["problems"] == []
    merchant = _claim(claims, "parties", "merchant (cart signer)")
    issuer = _claim(claims, "parties", "credential issuer")
    merchant_audience = _claim(claims, "audiences", "merchant cart JWT aud (signed)")
    kb_audience = _claim(claims, "audiences", "user key-binding JWT aud (signed)")
    nonce = _claim(claims, "nonces", "user key-binding JWT nonce (signed)")
    assert merchant.startswith("did:web:")
    assert issuer.startswith("did:bindu:")
    carried = {
        key["owner"]: key["thumbprint"]
        for key in claims["keys"]
        if key["where"].startswith("keys.did_documents")
    }
    assert set(carried) == {merchant, issuer}

    # Out of band: each party's own public key, compared with the thumbprint the bundle carries.
    for owner, party in ((merchant, "merchant"), (issuer, "credential issuer")):
        code, own_key, err = run_cli_json(
            capsys, "keys", "inspect", str(party_files[party] / "public.pem"), "--json"
        )
        assert code == 0, err
        assert own_key["thumbprint"] == carried[owner], party

    # Confirmed: pin the bundle's DID documents, and the audiences the processor verified as.
    documents = {merchant: case / "merchant-did.json", issuer: case / "issuer-did.json"}
    for did, path in documents.items():
        path.write_text(json.dumps(genuine["keys"]["did_documents"][did]))
    root = case / "trust-root.json"
    source = ("--source", "confirmed with the party: the key thumbprint matches")
    for argv in (
        ("init", str(root), "--merchant-aud", merchant_audience, "--kb-aud", kb_audience),
        ("add-issuer", str(root), issuer, "--did-document", str(documents[issuer]), *source),
        ("add-merchant", str(root), merchant, "--did-document", str(documents[merchant]), *source),
    ):
        code, written, err = run_cli_json(capsys, "trust-root", *argv, "--json")
        assert code == 0, err
        assert written["changed"] is True
    code, _, shown = run_cli(capsys, "trust-root", "show", str(root))  # for a person: on stderr
    assert code == 0
    assert all(f"thumbprint={thumbprint}" in shown for thumbprint in carried.values())

    verify = ["dispute", "verify", "--trust-root", str(root)]
    code, verified, err = run_cli_json(capsys, *verify, str(bundle_path), "--kb-nonce", nonce, "--json")
    assert code == 0, err
    (row,) = verified["results"]
    assert (row["verdict"], row["report"]["anchoring"]) == ("OK", "anchored")
    assert verified["summary"]["verdicts"]["OK"] == 1
    assert "Anchored in your trust root: yes." in err

    # 3. Three tampers, each in its own copy: FAILED, the changed value named, never as verified fact.
    for name, tamper in TAMPERS.items():
        bundle, forged = _tampered(genuine, tamper)
        path = case / f"tampered-{name}.json"
        path.write_text(json.dumps(bundle))
        code, document, text = run_cli_json(capsys, *verify, str(path), "--kb-nonce", nonce, "--json")
        assert code == 1, name
        (row,) = document["results"]
        assert row["verdict"] == "FAILED", name
        assert [failure["id"] for failure in row["report"]["failures"]] == ["user.kb.transaction_data"]
        summary = row["report"]["summary"]
        assert summary in text
        verified_part, claimed_part = _verified_and_claimed(summary)
        assert forged not in verified_part, name
        assert forged in claimed_part, name
        differ = _section(text, "VALUES THAT DIFFER")
        assert any(forged in line for line in differ), (name, differ)
        if name == "date":
            (signed_at,) = [
                value
                for label, value in row["report"]["comparisons"][0]["values"].items()
                if "signed" in label
            ]
            assert differ[0].startswith("  payment date:")
            assert differ[1].split(": ", 1)[1].strip() == FORGED_DATE
            assert "user signed at" in differ[2]
            assert differ[2].split(": ", 1)[1].strip() == signed_at
            assert signed_at[:19] == _contents(genuine)["timestamp"][:19]

    # A nonce mistyped by the analyst: neutral words, no accusation.
    code, _, text = run_cli(capsys, *verify, str(bundle_path), "--kb-nonce", nonce + "x")
    assert code == 1
    assert "user.kb.nonce: the key-binding nonce differs from the one you supplied (--kb-nonce)" in text
    assert "replayed" not in text

    # 4. A batch of 200: genuine copies and tampered ones, the nonce from the analyst's case file.
    bundles = case / "bundles"
    bundles.mkdir()
    tampers = list(TAMPERS.values())
    lines = []
    for index in range(BATCH_GENUINE + BATCH_TAMPERED):
        if index < BATCH_GENUINE:
            bundle = genuine
        else:
            bundle, _ = _tampered(genuine, tampers[index % len(tampers)])
        (bundles / f"{index:04d}.json").write_text(json.dumps(bundle))
        lines.append(
            json.dumps({"id": f"case-{index:04d}", "bundle": f"bundles/{index:04d}.json", "kb_nonce": nonce})
        )
    cases = case / "cases.jsonl"
    cases.write_text("\n".join(lines) + "\n")

    batch = [*verify, "--cases", str(cases), "--jobs", "2", "--json"]
    code, counted, err = run_cli_json(capsys, *batch, "--summary-only")
    assert code == 1, err
    assert counted == {
        "summary": {
            "bundles": 200,
            "verdicts": {"OK": BATCH_GENUINE, "UNANCHORED": 0, "FAILED": BATCH_TAMPERED, "ERROR": 0},
            "first_failures": {"user.kb.transaction_data": BATCH_TAMPERED},
        }
    }
    assert "case-0000" not in err  # the summary alone: no line per bundle

    code, listed, _ = run_cli_json(capsys, *batch)
    assert code == 1
    assert set(listed) == {"results", "summary"}
    assert listed["summary"] == counted["summary"]
    assert len(listed["results"]) == 200
    assert [row["path"] for row in listed["results"]] == [f"case-{index:04d}" for index in range(200)]
    verdicts = [row["verdict"] for row in listed["results"]]
    assert verdicts == ["OK"] * BATCH_GENUINE + ["FAILED"] * BATCH_TAMPERED
