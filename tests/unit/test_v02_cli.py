"""``mudrika mandate v02``: a whole v0.2 transaction signed and verified through main(), and the
v0.2 evidence bundle through ``mudrika dispute verify``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.keystore import write_private_key
from mudrika.payments.v02 import sd_digest
from tests._support.ap2_v02 import (
    AGENT_PROVIDER,
    AGENT_PROVIDER_KID,
    CHECKOUT_NONCE,
    CP_AUDIENCE,
    FIXTURE_TIME,
    MERCHANT_DID,
    MERCHANT_KID,
    PAYMENT_NONCE,
    build,
    bundle_document,
    trust_root_for,
)
from tests._support.ap2_v02 import Keys as V02Keys
from tests._support.cli import run_cli_json
from tests._support.evidence import BUNDLE as BUNDLE_V01
from tests._support.paths import FIXTURES as PATHS_FIXTURES

PASSWORD = "correct horse battery staple"
NOW = "2026-05-01T12:00:00Z"
FIXTURES = PATHS_FIXTURES / "ap2-v02"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("MUDRIKA_TEST_PASSWORD", PASSWORD)
    keys = V02Keys(
        issuer=KeyPair.generate(KeyType.P256),
        merchant=KeyPair.generate(KeyType.P256),
        agent=KeyPair.generate(KeyType.P256),
    )
    for name in ("issuer", "merchant", "agent"):
        write_private_key(tmp_path / "keys" / f"{name}.pem", getattr(keys, name), PASSWORD.encode())
    (tmp_path / "trust-root.json").write_text(trust_root_for(keys).to_json())
    template = build(keys=keys, now=1777636800)
    for name in ("checkout", "open_checkout", "closed_checkout"):
        (tmp_path / f"{name}.json").write_text(json.dumps(getattr(template, name)))
    return {"dir": tmp_path, "keys": tmp_path / "keys", "template": template}


def key_args(world: dict[str, Any], name: str) -> list[str]:
    return ["--key", str(world["keys"] / f"{name}.pem"), "--password-env", "MUDRIKA_TEST_PASSWORD"]


def test_a_transaction_is_signed_and_verified_through_the_cli(
    capsys: pytest.CaptureFixture[str], world: dict[str, Any]
) -> None:
    base: Path = world["dir"]
    code, signed, _ = run_cli_json(
        capsys, "mandate", "v02", "sign-checkout", str(base / "checkout.json"), *key_args(world, "merchant"),
        "--kid", MERCHANT_KID,
    )  # fmt: skip
    assert code == 0
    assert signed["checkout_hash"] == sd_digest(signed["checkout_jwt"])
    closed = {"vct": "mandate.checkout.1", **signed}
    (base / "closed.json").write_text(json.dumps(closed))
    code, root, _ = run_cli_json(
        capsys, "mandate", "v02", "issue-open", str(base / "open_checkout.json"), *key_args(world, "issuer"),
        "--iss", AGENT_PROVIDER, "--kid", AGENT_PROVIDER_KID, "--now", "2026-05-01T11:59:00Z",
    )  # fmt: skip
    assert code == 0
    assert "/delegate_payload/0" in root["disclosable_paths"]
    (base / "root.txt").write_text(root["sd_jwt"])
    code, presented, _ = run_cli_json(
        capsys, "mandate", "v02", "present", str(base / "root.txt"), str(base / "closed.json"),
        *key_args(world, "agent"), "--aud", MERCHANT_DID, "--nonce", CHECKOUT_NONCE, "--now", NOW,
    )  # fmt: skip
    assert code == 0
    (base / "chain.txt").write_text(presented["chain"])
    verify = (
        "mandate", "v02", "verify", "--trust-root", str(base / "trust-root.json"),
        "--checkout-chain", str(base / "chain.txt"), "--checkout-aud", MERCHANT_DID,
        "--checkout-nonce", CHECKOUT_NONCE, "--at", NOW, "--json",
    )  # fmt: skip
    code, report, err = run_cli_json(capsys, *verify, "--replay-db", str(base / "replay.sqlite"))
    assert code == 0, err
    assert report["verdict"] == "OK"
    assert report["format"] == "mudrika.report/v2"
    assert "OK: every check passed" in err
    # The same consent a second time, on the same replay database: refused.
    code, report, _ = run_cli_json(capsys, *verify, "--replay-db", str(base / "replay.sqlite"))
    assert code == 1
    assert report["verdict"] == "FAILED"
    wrong_nonce = [arg if arg != CHECKOUT_NONCE else "guessed" for arg in verify]
    code, report, _ = run_cli_json(capsys, *wrong_nonce)
    assert code == 1
    assert "guessed" not in json.dumps(report)


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], world: dict[str, Any]) -> None:
    base: Path = world["dir"]
    trust = ("--trust-root", str(base / "trust-root.json"))
    assert run_cli_json(capsys, "mandate", "v02", "verify", *trust)[0] == 2
    assert (
        run_cli_json(
            capsys, "mandate", "v02", "verify", *trust, "--checkout-chain", "x", "--checkout-aud", "a"
        )[0]
        == 2
    )
    (base / "chain.txt").write_text(world["template"].checkout_chain)
    (base / "usage.json").write_text('{"occurrences": 1, "currency": "USD", "refunds": 3}')
    code, error, _ = run_cli_json(
        capsys, "mandate", "v02", "verify", *trust, "--checkout-chain", str(base / "chain.txt"),
        "--checkout-aud", MERCHANT_DID, "--checkout-nonce", CHECKOUT_NONCE, "--usage", str(base / "usage.json"), "--json",
    )  # fmt: skip
    assert code == 2
    assert error["error"]["code"] == "bad_usage"
    (base / "bad.json").write_text('{"vct": "mandate.checkout.open.1", "vct": "twice"}')
    code, _, err = run_cli_json(
        capsys, "mandate", "v02", "issue-open", str(base / "bad.json"), *key_args(world, "issuer"),
        "--iss", AGENT_PROVIDER, "--kid", AGENT_PROVIDER_KID,
    )  # fmt: skip
    assert code == 2
    assert "duplicate_key" in err


def test_a_v02_bundle_is_verified_by_both_commands(capsys: pytest.CaptureFixture[str]) -> None:
    bundle, trust_root = str(FIXTURES / "bundle.json"), str(FIXTURES / "trust-root.json")
    code, report, err = run_cli_json(
        capsys, "dispute", "verify", bundle, "--trust-root", trust_root, "--json"
    )
    assert code == 1  # the nonces came from the bundle: UNANCHORED
    assert report["results"][0]["report"]["verdict"] == "UNANCHORED"
    assert "UNANCHORED" in err
    code, report, _ = run_cli_json(
        capsys, "mandate", "v02", "verify", bundle, "--trust-root", trust_root, "--json",
        "--checkout-aud", MERCHANT_DID, "--checkout-nonce", "checkout-nonce-7f3a",
        "--payment-aud", "https://credentials.example", "--payment-nonce", "payment-nonce-91c2",
    )  # fmt: skip
    assert code == 0
    assert report["verdict"] == "OK"
    code, _, err = run_cli_json(capsys, "dispute", "verify", bundle)
    assert code == 2
    assert "trust root" in err


def test_dispute_verify_writes_the_page_of_a_v02_bundle(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bundle, trust_root = str(FIXTURES / "bundle.json"), str(FIXTURES / "trust-root.json")
    page = tmp_path / "report.html"
    code, _, err = run_cli_json(
        capsys, "dispute", "verify", bundle, "--trust-root", trust_root, "--html", str(page)
    )
    assert code == 1  # UNANCHORED, as above: the page is written all the same
    assert "wrote" in err
    text = page.read_text(encoding="utf-8")
    assert '<div class="banner"><h2>UNANCHORED</h2>' in text
    assert "v02.checkout.hop1.signature" in text
    assert "Raw signed bytes" not in text  # a v0.2 bundle carries chains, not mandate objects


def analyst_case(bundle: object, **members: object) -> dict[str, object]:
    """A case line whose hop expectations are the analyst's own records of the payment."""
    return {
        "bundle": bundle,
        "checkout_hops": [{"aud": MERCHANT_DID, "nonce": CHECKOUT_NONCE}],
        "payment_hops": [{"aud": CP_AUDIENCE, "nonce": PAYMENT_NONCE}],
        **members,
    }


def batch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trust_root: Path, *cases: dict[str, object]
) -> tuple[int, dict[str, Any]]:
    """Run ``dispute verify --cases`` over two or more cases: exit code and results by case id."""
    assert len(cases) >= 2  # one case prints its report alone
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in cases), encoding="utf-8")
    code, summary, _ = run_cli_json(
        capsys, "dispute", "verify", "--cases", str(path), "--trust-root", str(trust_root), "--json"
    )
    return code, {result["path"]: result for result in summary["results"]}


def failed_checks(result: dict[str, Any]) -> dict[str, str]:
    return {check["id"]: check["code"] for check in result["report"]["checks"] if check["status"] == "failed"}


def test_a_case_file_anchors_v02_hops(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bundle = str(FIXTURES / "bundle.json")
    wrong = analyst_case(bundle, id="wrong-nonce")
    wrong["payment_hops"] = [{"aud": CP_AUDIENCE, "nonce": "a-nonce-we-never-issued"}]
    code, results = batch(
        capsys, tmp_path, FIXTURES / "trust-root.json", analyst_case(bundle, id="ours"), wrong,
        {"bundle": bundle, "id": "evidence-word"},
    )  # fmt: skip
    assert code == 1
    assert results["ours"]["verdict"] == "OK"
    assert results["evidence-word"]["verdict"] == "UNANCHORED"
    assert results["wrong-nonce"]["verdict"] == "FAILED"
    assert failed_checks(results["wrong-nonce"]) == {"v02.payment.hop1.nonce": "wrong_nonce"}


def test_a_case_file_carries_the_usage_a_budget_needs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    budget = {"type": "payment.budget", "max": 500.00, "currency": "USD"}
    transaction = build(
        now=FIXTURE_TIME, open_payment_hook=lambda mandate: mandate["constraints"].append(budget)
    )
    bundle = bundle_document(transaction)
    trust_root = tmp_path / "trust-root.json"
    trust_root.write_text(transaction.trust_root.to_json(), encoding="utf-8")
    fresh = {"occurrences": 0, "spent_minor": 0, "currency": "USD", "last_used_at": None}
    spent = {**fresh, "occurrences": 9, "spent_minor": 49_999}
    code, results = batch(
        capsys, tmp_path, trust_root,
        analyst_case(bundle, id="no-usage"),
        analyst_case(bundle, id="fresh", usage=fresh),
        analyst_case(bundle, id="spent", usage=spent),
    )  # fmt: skip
    assert code == 1
    assert results["fresh"]["verdict"] == "OK"
    assert list(failed_checks(results["no-usage"]).values()) == ["usage_history_required"]
    assert list(failed_checks(results["spent"]).values()) == ["budget_exceeded"]


@pytest.mark.parametrize(
    "members",
    [
        {"checkout_hops": []},
        {"checkout_hops": [{"aud": MERCHANT_DID}]},
        {"payment_hops": [{"aud": CP_AUDIENCE, "nonce": ""}]},
        {"usage": {"spent": 1, "currency": "USD"}},
        {"usage": {"occurrences": -1, "currency": "USD"}},
    ],
)
def test_malformed_v02_case_members_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, members: dict[str, object]
) -> None:
    bundle = str(FIXTURES / "bundle.json")
    code, results = batch(
        capsys, tmp_path, FIXTURES / "trust-root.json", analyst_case(bundle, id="ok"),
        {"bundle": bundle, "id": "bad", **members},
    )  # fmt: skip
    assert code == 2
    assert results["ok"]["verdict"] == "OK"
    (refused,) = [result for name, result in results.items() if name.endswith("cases.jsonl:2")]
    assert refused["error"]["code"] == "bad_case"  # named by its line: its id was not read


def test_v02_case_members_on_a_v01_bundle_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    v01 = Path(__file__).resolve().parents[2] / "fixtures" / "evidence"
    case = analyst_case(str(v01 / "bundle.json"))
    code, results = batch(capsys, tmp_path, v01 / "trust-root.json", {**case, "id": "a"}, {**case, "id": "b"})
    assert code == 2
    assert results["a"]["error"]["code"] == "v02_case_for_v01_bundle"


#: The analyst's own records of the fixture payment, as ``dispute verify`` flags (hop order).
ANCHORS = (
    "--checkout-aud", MERCHANT_DID, "--checkout-nonce", CHECKOUT_NONCE,
    "--payment-aud", CP_AUDIENCE, "--payment-nonce", PAYMENT_NONCE,
)  # fmt: skip


def test_dispute_verify_anchors_one_v02_bundle_with_flags(capsys: pytest.CaptureFixture[str]) -> None:
    bundle, trust_root = str(FIXTURES / "bundle.json"), str(FIXTURES / "trust-root.json")
    code, document, err = run_cli_json(
        capsys, "dispute", "verify", bundle, "--trust-root", trust_root, *ANCHORS, "--json"
    )
    assert code == 0, err
    (row,) = document["results"]
    assert (row["verdict"], row["report"]["anchored"]) == ("OK", True)
    wrong = [*ANCHORS[:-1], "a-nonce-we-never-issued"]
    code, document, _ = run_cli_json(
        capsys, "dispute", "verify", bundle, "--trust-root", trust_root, *wrong, "--json"
    )
    assert code == 1
    assert failed_checks(document["results"][0]) == {"v02.payment.hop1.nonce": "wrong_nonce"}


def test_dispute_verify_takes_the_usage_record_of_one_v02_bundle(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    budget = {"type": "payment.budget", "max": 500.00, "currency": "USD"}
    transaction = build(
        now=FIXTURE_TIME, open_payment_hook=lambda mandate: mandate["constraints"].append(budget)
    )
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps(bundle_document(transaction)), encoding="utf-8")
    trust_root = tmp_path / "trust-root.json"
    trust_root.write_text(transaction.trust_root.to_json(), encoding="utf-8")
    usage = tmp_path / "usage.json"
    usage.write_text(
        json.dumps({"occurrences": 9, "spent_minor": 49_999, "currency": "USD", "last_used_at": None})
    )
    argv = ("dispute", "verify", str(bundle), "--trust-root", str(trust_root), *ANCHORS, "--json")
    code, document, _ = run_cli_json(capsys, *argv, "--usage", str(usage))
    assert code == 1
    assert list(failed_checks(document["results"][0]).values()) == ["budget_exceeded"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--checkout-aud", MERCHANT_DID), "give one --checkout-nonce for each --checkout-aud"),
        (("--payment-nonce", PAYMENT_NONCE), "give one --payment-nonce for each --payment-aud"),
        ((*ANCHORS, str(FIXTURES / "bundle.json")), "one payment"),
    ],
    ids=["checkout-aud-alone", "payment-nonce-alone", "two-bundles"],
)
def test_dispute_verify_v02_flags_are_checked(
    capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], message: str
) -> None:
    bundle, trust_root = str(FIXTURES / "bundle.json"), str(FIXTURES / "trust-root.json")
    code, _, err = run_cli_json(capsys, "dispute", "verify", bundle, "--trust-root", trust_root, *extra)
    assert code == 2
    assert message in err


def test_v02_flags_on_a_v01_bundle_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli_json(capsys, "dispute", "verify", str(BUNDLE_V01), *ANCHORS)
    assert code == 2
    assert "v02_case_for_v01_bundle" in err


def test_each_commands_out_file_is_the_next_commands_input(
    capsys: pytest.CaptureFixture[str], world: dict[str, Any]
) -> None:
    """docs/ap2-v02.md wrote ``issue-open … > root.json`` and then read ``root.txt``: the JSON a
    command writes was not accepted by the next one.  Now ``--out`` files chain as they are."""
    base: Path = world["dir"]
    code, signed, _ = run_cli_json(
        capsys, "mandate", "v02", "sign-checkout", str(base / "checkout.json"), *key_args(world, "merchant"),
        "--kid", MERCHANT_KID,
    )  # fmt: skip
    assert code == 0
    (base / "closed.json").write_text(json.dumps({"vct": "mandate.checkout.1", **signed}))
    code, _, err = run_cli_json(
        capsys, "mandate", "v02", "issue-open", str(base / "open_checkout.json"), *key_args(world, "issuer"),
        "--iss", AGENT_PROVIDER, "--kid", AGENT_PROVIDER_KID, "--now", "2026-05-01T11:59:00Z",
        "--out", str(base / "root.json"),
    )  # fmt: skip
    assert code == 0, err
    code, _, err = run_cli_json(
        capsys, "mandate", "v02", "present", str(base / "root.json"), str(base / "closed.json"),
        *key_args(world, "agent"), "--aud", MERCHANT_DID, "--nonce", CHECKOUT_NONCE, "--now", NOW,
        "--out", str(base / "chain.json"),
    )  # fmt: skip
    assert code == 0, err
    code, report, err = run_cli_json(
        capsys, "mandate", "v02", "verify", "--trust-root", str(base / "trust-root.json"),
        "--checkout-chain", str(base / "chain.json"), "--checkout-aud", MERCHANT_DID,
        "--checkout-nonce", CHECKOUT_NONCE, "--at", NOW, "--json",
    )  # fmt: skip
    assert code == 0, err
    assert report["verdict"] == "OK"
    # A JSON document that holds no token is refused by name, never read as one.
    (base / "other.json").write_text(json.dumps({"checkout_jwt": "x"}))
    code, refused, _ = run_cli_json(
        capsys, "mandate", "v02", "present", str(base / "other.json"), str(base / "closed.json"),
        *key_args(world, "agent"), "--aud", MERCHANT_DID, "--nonce", CHECKOUT_NONCE, "--json",
    )  # fmt: skip
    assert code == 2
    assert refused["error"]["code"] == "malformed_token"
