"""The analyst's trust root (mudrika.trust-root/v1): strict loading, every problem listed, the schema."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from mudrika.crypto.keys import ALL_ALGORITHMS, KeyPair
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity.methods import key as did_key
from mudrika.payments.trustroot import (
    SCHEMA_FILE,
    TrustRoot,
    UnsafeNoTrustRoot,
    json_schema,
    load_trust_root,
    parse_trust_root,
    schema_text,
)
from tests._support.evidence import TRUST_ROOT, evidence_builder
from tests._support.paths import REPO_ROOT


def _document() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(TRUST_ROOT.read_text(encoding="utf-8"))
    return value


def _problems(document: dict[str, Any]) -> list[dict[str, str]]:
    with pytest.raises(InvalidInput) as info:
        parse_trust_root(document)
    assert info.value.code == "bad_trust_root"
    errors: list[dict[str, str]] = info.value.fields["errors"]
    return errors


def test_the_fixture_loads_and_answers() -> None:
    root = load_trust_root(TRUST_ROOT)
    builder = evidence_builder()
    assert root.trusts_issuer(builder.ISSUER)
    assert not root.trusts_issuer("https://someone.example")
    assert root.pins_merchant(builder.MERCHANT_DID)
    assert root.accepted_vct_of(builder.ISSUER) == frozenset({"urn:mudrika:ap2:payment-user:1"})
    assert root.accepted_vct_of("https://someone.example") == frozenset()
    genuine = builder.build_chain()
    assert (
        root.anchor("merchant", builder.MERCHANT_DID, builder.MERCHANT_KID, algorithms=ALL_ALGORITHMS).key
        == genuine.merchant_key.public_key
    )
    assert (
        root.anchor("issuer", builder.ISSUER, builder.ISSUER_KID, algorithms=ALL_ALGORITHMS).key
        == genuine.issuer_key.public_key
    )
    with pytest.raises(UntrustedKeyError) as info:
        root.anchor("issuer", builder.ISSUER, "rotated-away", algorithms=ALL_ALGORITHMS)
    assert info.value.code == "key_not_pinned"
    with pytest.raises(UntrustedKeyError) as info:
        root.anchor("merchant", "did:web:other.example", "did:web:other.example#k", algorithms=ALL_ALGORITHMS)
    assert info.value.code == "not_in_trust_root"
    assert root.fingerprint == parse_trust_root(root.to_json()).fingerprint
    assert root.fingerprint.startswith("sha256:")
    assert [row[:3] for row in root.pinned_keys()] == [
        ("issuer", builder.ISSUER, builder.ISSUER_KID),
        ("merchant", builder.MERCHANT_DID, builder.MERCHANT_KID),
    ]


def test_the_model_is_frozen() -> None:
    root = load_trust_root(TRUST_ROOT)
    with pytest.raises(ValueError, match="frozen"):
        root.leeway_seconds = 30


def test_every_schema_problem_is_listed() -> None:
    document = _document()
    document["surprise"] = 1
    document["leeway_seconds"] = 60
    document["algorithms"] = ["none"]
    document["max_age_seconds"] = {"key_binding": 0}
    locations = {problem["loc"] for problem in _problems(document)}
    assert {"surprise", "leeway_seconds", "algorithms.0", "max_age_seconds.key_binding"} <= locations


def test_every_key_material_problem_is_listed() -> None:
    builder = evidence_builder()
    document = _document()
    jwks = document["issuers"][builder.ISSUER]["jwks"]
    document["issuers"]["https://no-keys.example"] = {}
    document["issuers"]["http://plain-http.example"] = {"jwks": jwks}
    document["issuers"]["https://both.example"] = {"jwks": jwks, "did_document": {"id": "did:web:x"}}
    document["issuers"]["https://duplicate.example"] = {"jwks": {"keys": [jwks["keys"][0], jwks["keys"][0]]}}
    document["issuers"]["https://broken-key.example"] = {"jwks": {"keys": [{**jwks["keys"][0], "x": "AAAA"}]}}
    document["merchants"]["https://not-a-did.example"] = {"jwks": jwks}
    wrong_id = {**document["merchants"][builder.MERCHANT_DID]["did_document"], "id": "did:web:other.example"}
    document["merchants"]["did:web:third.example"] = {"did_document": wrong_id}
    problems = _problems(document)
    assert sorted(problem["loc"] for problem in problems) == sorted(
        [
            "issuers.https://no-keys.example",
            "issuers.http://plain-http.example",
            "issuers.https://both.example",
            "issuers.https://duplicate.example",
            "issuers.https://broken-key.example",
            "merchants.https://not-a-did.example",
            "merchants.did:web:third.example",
        ]
    )
    # Messages say what is wrong, never echo key material.
    assert all("AAAA" not in problem["msg"] for problem in problems)


def test_a_self_certifying_issuer_needs_no_key_material() -> None:
    issuer = KeyPair.generate("ed25519")
    did = did_key.create(issuer.public_key)
    root = parse_trust_root(
        {
            "format": "mudrika.trust-root/v1",
            "issuers": {did: {"vct": ["urn:example:vct"]}},
            "accepted_vct": [],
        }
    )
    kid = f"{did}#{did.removeprefix('did:key:')}"
    assert root.anchor("issuer", did, kid, algorithms=ALL_ALGORITHMS).key == issuer.public_key
    assert root.pinned_keys() == [("issuer", did, kid, issuer.public_key.thumbprint())]


def test_an_issuer_without_any_accepted_vct_is_refused() -> None:
    document = _document()
    document["accepted_vct"] = []
    assert [problem["loc"] for problem in _problems(document)] == ["accepted_vct"]


def test_not_a_trust_root_and_size_caps(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_trust_root({"format": "mudrika.evidence/v1"})
    assert info.value.code == "not_a_trust_root"
    with pytest.raises(InvalidInput) as info:
        parse_trust_root(TRUST_ROOT.read_bytes(), max_bytes=100)
    assert info.value.code == "too_large"
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 200)
    with pytest.raises(InvalidInput) as info:
        load_trust_root(big, max_bytes=100)
    assert info.value.code == "too_large"
    with pytest.raises(InvalidInput) as info:
        load_trust_root(tmp_path / "missing.json")
    assert info.value.code == "unreadable"
    duplicated = TRUST_ROOT.read_text().replace(
        '"format": "mudrika.trust-root/v1",', '"format": "mudrika.trust-root/v1", "format": "x",', 1
    )
    with pytest.raises(InvalidInput) as info:
        parse_trust_root(duplicated)
    assert info.value.code == "duplicate_key"


def test_the_shipped_schema_is_the_models_schema() -> None:
    shipped = json.loads(schema_text())
    assert shipped == json_schema()
    source = REPO_ROOT / "src" / "mudrika" / "payments" / "trustroot" / SCHEMA_FILE
    assert json.loads(source.read_text(encoding="utf-8")) == shipped
    assert shipped["additionalProperties"] is False
    assert set(shipped["required"]) == {"format"}
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "payments/trustroot/*.schema.json" in pyproject  # shipped as package data


def test_unsafe_no_trust_root_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mudrika.payments.trustroot"):
        unsafe = UnsafeNoTrustRoot(["https://issuer.example"])
    assert "UNANCHORED" in caplog.text
    assert unsafe.asserted_issuers == frozenset({"https://issuer.example"})
    with pytest.raises(InvalidInput):
        UnsafeNoTrustRoot("https://issuer.example")
    assert not isinstance(unsafe, TrustRoot)
