"""``mudrika trust-root init|add-issuer|add-merchant|show``: the analyst writes and reads a trust root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mudrika.payments.trustroot import load_trust_root
from tests._support.cli import run_cli
from tests._support.evidence import BUNDLE, NONCE, TRUST_ROOT, evidence_builder


@pytest.fixture
def snapshots(tmp_path: Path) -> dict[str, Path]:
    """The genuine issuer's JWK Set and the merchant's DID document, as files an analyst pinned."""
    chain = evidence_builder().build_chain()
    builder = evidence_builder()
    jwks = tmp_path / "issuer-jwks.json"
    jwks.write_text(json.dumps(chain.jwks[builder.ISSUER]))
    document = tmp_path / "merchant-did.json"
    document.write_text(json.dumps(chain.did_documents[builder.MERCHANT_DID]))
    return {"jwks": jwks, "document": document}


def test_init_add_show_and_verify(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, snapshots: dict[str, Path]
) -> None:
    builder = evidence_builder()
    root = str(tmp_path / "root.json")
    aud = builder.MERCHANT_AUDIENCE
    assert run_cli(capsys, "trust-root", "init", root, "--merchant-aud", aud, "--kb-aud", aud)[0] == 0
    assert run_cli(capsys, "trust-root", "init", root)[0] == 1  # never overwritten without --force
    code, _, err = run_cli(
        capsys, "trust-root", "add-issuer", root, builder.ISSUER, "--jwks", str(snapshots["jwks"])
    )
    assert code == 0, err
    code, _, err = run_cli(
        capsys,
        "trust-root",
        "add-merchant",
        root,
        builder.MERCHANT_DID,
        "--did-document",
        str(snapshots["document"]),
        "--source",
        "pinned at onboarding",
    )
    assert code == 0, err
    # The hand-written root carries the same trust as the fixture's (same keys, same policy).
    written, fixture = load_trust_root(root), load_trust_root(TRUST_ROOT)
    assert written.pinned_keys() == fixture.pinned_keys()
    code, out, _ = run_cli(capsys, "trust-root", "show", root, "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["fingerprint"] == written.fingerprint
    assert [(key["role"], key["thumbprint"]) for key in shown["keys"]] == [
        ("issuer", "ij40EeFkDAwv1WZlfp1kSw2umINfw6ap3QkrNPcUkyM"),
        ("merchant", "W1COp5sh4XJjdJJhehqepuwWoGMjOeyWIwof0QHuZV4"),
    ]
    assert shown["accept_legacy_unbound_intent"] is False
    code, out, err = run_cli(capsys, "trust-root", "show", root)
    assert code == 0
    assert out == ""
    assert "W1COp5sh4XJjdJJhehqepuwWoGMjOeyWIwof0QHuZV4" in err.replace("\n", "").replace("│", "").replace(
        " ", ""
    )
    code, _, err = run_cli(
        capsys, "dispute", "verify", str(BUNDLE), "--trust-root", root, "--kb-nonce", NONCE
    )
    assert code == 0, err


def test_a_bad_change_is_refused_and_the_file_kept(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, snapshots: dict[str, Path]
) -> None:
    root = tmp_path / "root.json"
    assert run_cli(capsys, "trust-root", "init", str(root))[0] == 0
    before = root.read_bytes()
    broken = tmp_path / "broken-jwks.json"
    broken.write_text(json.dumps({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AAAA", "kid": "k"}]}))
    code, _, err = run_cli(
        capsys, "trust-root", "add-issuer", str(root), "https://issuer.example", "--jwks", str(broken)
    )
    assert code == 2
    assert "malformed trust root" in err
    code, _, _ = run_cli(
        capsys,
        "trust-root",
        "add-merchant",
        str(root),
        "did:web:x.example",
        "--jwks",
        str(snapshots["jwks"]),
        "--did-document",
        str(snapshots["document"]),
    )
    assert code == 2
    assert run_cli(capsys, "trust-root", "add-merchant", str(root), "https://not-a-did.example")[0] == 2
    assert root.read_bytes() == before
    assert run_cli(capsys, "trust-root", "init", str(tmp_path / "x.json"), "--leeway", "60")[0] == 2


def test_init_policy_options(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = tmp_path / "root.json"
    code, _, err = run_cli(
        capsys,
        "trust-root",
        "init",
        str(root),
        "--vct",
        "urn:example:payment:2",
        "--algorithm",
        "ES256",
        "--leeway",
        "5",
        "--kb-max-age",
        "120",
        "--intent-max-age",
        "86400",
        "--accept-legacy-unbound-intent",
        "--description",
        "analyst A, case 42",
    )
    assert code == 0, err
    loaded = load_trust_root(root)
    assert loaded.accepted_vct == ["urn:example:payment:2"]
    assert loaded.algorithms == ["ES256"]
    assert loaded.leeway_seconds == 5
    assert loaded.max_age_seconds.key_binding == 120
    assert loaded.max_age_seconds.intent == 86400
    assert loaded.accept_legacy_unbound_intent
    assert loaded.description == "analyst A, case 42"


@pytest.mark.parametrize(
    ("command", "owner", "hint"),
    [
        (
            "add-merchant",
            "did:web:shop.example",
            "give the merchant's keys: --did-document FILE or --jwks FILE",
        ),
        (
            "add-issuer",
            "https://issuer.example",
            "give the issuer's keys: --jwks FILE or --did-document FILE",
        ),
    ],
)
def test_pinning_without_keys_says_which_option_to_give(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, owner: str, hint: str
) -> None:
    root = tmp_path / "root.json"
    assert run_cli(capsys, "trust-root", "init", str(root))[0] == 0
    before = root.read_bytes()
    code, _, err = run_cli(capsys, "trust-root", command, str(root), owner)
    assert code == 2
    assert hint in err
    assert "malformed trust root" not in err  # the file is fine: the command line lacks the keys
    assert root.read_bytes() == before


def test_a_self_certifying_owner_needs_no_key_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "root.json"
    assert run_cli(capsys, "trust-root", "init", str(root))[0] == 0
    did = "did:key:z6MkkH2Tx3GPMHffHM2Au2nKZGLfUTVQAfbhMo2gycbbTjhF"
    code, _, err = run_cli(capsys, "trust-root", "add-merchant", str(root), did)
    assert code == 0, err
    assert did in load_trust_root(root).merchants


def test_show_prints_readable_values_not_python_reprs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "root.json"
    code, _, _ = run_cli(
        capsys, "trust-root", "init", str(root), "--algorithm", "ES256", "--algorithm", "EdDSA",
        "--merchant-aud", "https://shop.example", "--kb-max-age", "120", "--intent-max-age", "86400",
    )  # fmt: skip
    assert code == 0
    code, out, err = run_cli(capsys, "trust-root", "show", str(root))
    assert code == 0
    assert out == ""
    lines = err.splitlines()
    assert "algorithms: ES256, EdDSA" in lines
    assert "accepted_vct: urn:mudrika:ap2:payment-user:1" in lines
    assert "leeway_seconds: 0" in lines
    assert "max_age_seconds: key_binding=120, intent=86400" in lines
    assert "verifier: merchant_audience=https://shop.example" in lines
    assert "accept_legacy_unbound_intent: no" in lines
    for repr_mark in ("[", "{", "'", "True", "False", "None", ".0"):
        assert repr_mark not in err.replace(str(root), "")
