"""Shared pieces of the by-construction security matrices (``tests/security/test_anchoring_matrix.py``,
``tests/security/test_key_window_matrix.py``): the pinned parties, the recorded status list, the
CLI's answer read as a report, and the AST walk that lists every call site of a rule in ``src/``.

Why shared: each matrix proves one rule holds at *every* place a verdict applies it.  The parties
they pin, the entry points they drive and the way they find the rule's call sites must be the same,
or one matrix could quietly test a weaker setup than the other.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.statuslist import StatusList, sign_status_list_token
from mudrika.payments.credential_status import RecordedStatusList
from mudrika.payments.trustroot import TrustRoot
from tests._support.cli import run_cli_json
from tests._support.paths import REPO_ROOT

__all__ = [
    "ENTRY_POINTS",
    "EntryPoint",
    "Party",
    "Pinning",
    "bundle_file",
    "call_sites",
    "cli_report",
    "evidence_of",
    "party",
    "status_record",
]

Pinning = Literal["did-document", "jwks"]
EntryPoint = Literal["inspect", "verify", "cli"]
ENTRY_POINTS: Final[tuple[EntryPoint, ...]] = ("inspect", "verify", "cli")


@dataclass(frozen=True)
class Party:
    """A pinned party: its identifier, the kid of its assertion key, the key, a second key its DID
    document lists only under ``authentication``, and ``extra`` further assertion keys (kid, key)
    for the roles a matrix keeps apart (each signature under its own kid)."""

    owner: str
    kid: str
    key: KeyPair
    login_key: KeyPair
    extra: tuple[tuple[str, KeyPair], ...] = ()

    @property
    def login_kid(self) -> str:
        return self.owner + "#login-1"

    @property
    def assertion_keys(self) -> tuple[tuple[str, KeyPair], ...]:
        """Every (kid, key) the party signs with: the main key first, then the extra ones."""
        return ((self.kid, self.key), *self.extra)

    def key_of(self, kid: str) -> KeyPair:
        return dict(self.assertion_keys)[kid]

    def did_document(self) -> dict[str, Any]:
        methods = [
            {
                "id": kid,
                "type": "JsonWebKey2020",
                "controller": self.owner,
                "publicKeyJwk": key.public_key.to_jwk(),
            }
            for kid, key in (*self.assertion_keys, (self.login_kid, self.login_key))
        ]
        assertion = [kid for kid, _ in self.assertion_keys]
        return {
            "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
            "id": self.owner,
            "verificationMethod": methods,
            "assertionMethod": assertion,
            "authentication": [*assertion, self.login_kid],
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [{**key.public_key.to_jwk(), "kid": kid} for kid, key in self.assertion_keys]}

    def pin(self, pinning: Pinning) -> dict[str, Any]:
        if pinning == "did-document":
            return {"did_document": self.did_document()}
        return {"jwks": self.jwks()}


def party(owner: str, kid: str, key_type: KeyType, *, extra: Collection[str] = ()) -> Party:
    """A party with fresh keys of ``key_type``: its main key under ``kid`` and one under each kid of
    ``extra``."""
    return Party(
        owner,
        kid,
        KeyPair.generate(key_type),
        KeyPair.generate(key_type),
        tuple((name, KeyPair.generate(key_type)) for name in extra),
    )


def evidence_of(issuer: Party, merchant: Party) -> tuple[dict[str, Any], dict[str, Any]]:
    """The evidence's key material (DID documents, JWK Sets) as the merchant would record it: the
    parties' published material, never the analyst's trust."""
    documents = {merchant.owner: merchant.did_document()}
    jwks: dict[str, Any] = {}
    if issuer.owner.startswith("did:"):
        documents[issuer.owner] = issuer.did_document()
    else:
        jwks[issuer.owner] = issuer.jwks()
    return documents, jwks


def status_record(key: KeyPair, kid: str, *, uri: str, iat: int) -> RecordedStatusList:
    """A status list for ``uri`` (every entry VALID) signed by ``key`` under ``kid`` at ``iat`` and
    current for an hour, as the merchant recorded it."""
    token = sign_status_list_token(StatusList(64, 1), key=key, uri=uri, iat=iat, exp=iat + 3600, kid=kid)
    return RecordedStatusList(uri=uri, token=token, at="2026-01-01T00:00:00Z", via="test")


def cli_report(
    capsys: pytest.CaptureFixture[str], argv: list[str], root: TrustRoot, tmp: Path
) -> dict[str, Any]:
    """Run ``mudrika <argv> --trust-root ROOT --json`` and return its report document; the exit
    code must agree with the verdict."""
    root_file = tmp / "trust-root.json"
    root_file.write_text(root.to_json(), encoding="utf-8")
    argv = [*argv, "--trust-root", str(root_file), "--json"]
    code, document, _ = run_cli_json(capsys, *argv)
    if argv[0] == "dispute":  # one shape for one bundle or many: the report is the first row's
        document = document["results"][0]["report"]
    assert isinstance(document, dict), document
    assert (code == 0) == (document.get("verdict") == "OK"), (code, document.get("verdict"))
    return document


def call_sites(rule_names: Collection[str], *, rule_home: Collection[str] = ()) -> set[str]:
    """Every ``module:function`` (or ``module:Class.method``) in ``src/`` that calls a function or
    method named in ``rule_names``, skipping the modules of ``rule_home`` (paths under ``src/``)."""
    found: set[str] = set()
    src = REPO_ROOT / "src"
    for path in sorted((src / "mudrika").rglob("*.py")):
        relative = path.relative_to(src).as_posix()
        if relative in rule_home:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for scope, body in _scopes(tree):
            for node in ast.walk(body):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                    if name in rule_names:
                        found.add(f"{relative}:{scope}")
    return found


def _scopes(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


def bundle_file(tmp: Path, document: dict[str, Any]) -> Path:
    """Write an evidence bundle document where the CLI reads it."""
    path = tmp / "bundle.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def chain_expectations(chain: Any, root: TrustRoot, recorded: list[RecordedStatusList]) -> dict[str, Any]:
    """The verifier's arguments for a v0.1 ``chain`` (tests/_support/evidence.py) judged under ``root``
    with the status lists ``recorded`` at the purchase: what both matrices hand every entry point."""
    return {
        "trust_root": root,
        "keys": chain.keys(),
        "merchant_audience": chain.merchant_audience,
        "kb_audience": chain.kb_audience,
        "kb_nonce": chain.nonce,
        "now": chain.now,
        "status_lists": recorded,
    }
