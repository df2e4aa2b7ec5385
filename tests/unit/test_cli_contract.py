"""Every command keeps the CLI contract: exit codes 0/1/2, errors that name their code, one JSON document.

The table below holds each command to the exit-code table (0 ok, 1 verification or operation failed,
2 usage or malformed input): a usage error, a malformed input and a failed operation for every
command, and a refused overwrite exits 1 wherever a command refuses one.  A new command fails
``test_every_command_is_in_the_table`` until it is added here.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
from pydantic import BaseModel, ValidationError

from mudrika.cli import COMMANDS, main
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.keystore import write_file_atomic, write_private_key
from mudrika.errors import InvalidInput
from mudrika.identity.methods import key as did_key
from mudrika.identity.resolver import DIDResolver
from tests._support.cli import run_cli, run_cli_json
from tests._support.evidence import BUNDLE
from tests._support.offline import forbid_network
from tests._support.paths import FIXTURES

PASSWORD = "contract-test-password"
PW = ("--password-env", "MUDRIKA_CONTRACT_PW")
POLICY = str(FIXTURES / "policy" / "agent-policy.yaml")
AP2 = FIXTURES / "ap2"
V02 = FIXTURES / "ap2-v02"
LATE = "2026-06-01T00:00:00Z"


@dataclass(frozen=True)
class Workspace:
    """Files the cases point at, made once per test in its own temporary directory."""

    dir: Path
    key: str  # an encrypted Ed25519 private key
    did: str  # its did:key
    garbage: str  # not JSON, not PEM
    duplicate_keys: str  # {"a": 1, "a": 2}
    empty_object: str  # {}
    array: str  # []
    bad_bundle: str  # the bundle format marker and nothing else
    bad_policy: str  # a policy file that does not validate
    existing_keys: str  # a directory that already holds private.pem
    existing_file: str  # a file that exists (refused as an output)
    existing_document_dir: str  # a directory that already holds did.json
    cart: str  # a signed CartMandate (from the evidence bundle)
    intent: str  # the signed IntentMandate it fulfils
    card: str  # an unsigned Agent Card


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("MUDRIKA_CONTRACT_PW", PASSWORD)
    monkeypatch.delenv("MUDRIKA_UNSET_PW", raising=False)
    monkeypatch.setenv("MUDRIKA_WRONG_PW", "not the password at all")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    forbid_network(monkeypatch)
    pair = KeyPair.generate("ed25519")
    write_private_key(tmp_path / "keys" / "private.pem", pair, PASSWORD.encode())
    files = {
        "garbage": b"garbage {",
        "dup.json": b'{"a": 1, "a": 2}',
        "empty.json": b"{}",
        "array.json": b"[]",
        "bad-bundle.json": b'{"format": "mudrika.evidence/v1"}',
        "bad-policy.json": b'{"roles": 5}',
        "existing.pem": b"already here\n",
        "doc/did.json": b"{}",
        "cart.json": json.dumps(json.loads(BUNDLE.read_bytes())["mandates"]["cart"]).encode(),
        "card.json": b'{"name": "contract agent"}',
        "intent.json": json.dumps(json.loads(BUNDLE.read_bytes())["mandates"]["intent"]).encode(),
    }
    for name, data in files.items():
        write_file_atomic(tmp_path / name, data, force=False, private_dir=False)
    return Workspace(
        dir=tmp_path,
        key=str(tmp_path / "keys" / "private.pem"),
        did=did_key.create(pair.public_key),
        garbage=str(tmp_path / "garbage"),
        duplicate_keys=str(tmp_path / "dup.json"),
        empty_object=str(tmp_path / "empty.json"),
        array=str(tmp_path / "array.json"),
        bad_bundle=str(tmp_path / "bad-bundle.json"),
        bad_policy=str(tmp_path / "bad-policy.json"),
        existing_keys=str(tmp_path / "keys"),
        existing_file=str(tmp_path / "existing.pem"),
        existing_document_dir=str(tmp_path / "doc"),
        cart=str(tmp_path / "cart.json"),
        intent=str(tmp_path / "intent.json"),
        card=str(tmp_path / "card.json"),
    )


@dataclass(frozen=True)
class Case:
    """One invocation and what the contract says it must give."""

    path: tuple[str, ...]
    argv: Callable[[Workspace], list[str]]
    exit_code: int
    code: str | None  # the error code, or None when the command reports a verdict (not an error)


def _provision_twice(ws: Workspace) -> list[str]:
    first = ["provision", "--name", "agent", "--out", str(ws.dir / "agent"), *PW]
    assert main(first) == 0
    return ["provision", "--name", "agent", "--out", str(ws.dir / "agent"), "--type", "p256", *PW, "--json"]


def _v02_chain_file(ws: Workspace) -> str:
    """A file holding a (syntactically) delegated AP2 v0.2 chain, for ``mandate v02 present``."""
    path = ws.dir / "v02-chain.txt"
    path.write_text("a.b.c~~d.e.f~")
    return str(path)


def _bundle_into_existing_file(ws: Workspace) -> list[str]:
    """``dispute bundle`` of the fixture chain, with --out naming a file that exists."""
    payment = ws.dir / "payment.json"
    payment.write_text(json.dumps(json.loads(BUNDLE.read_text())["mandates"]["payment"]))
    return [
        "--intent", ws.intent, "--cart", ws.cart, "--payment", str(payment),
        "--merchant-aud", "a", "--kb-aud", "a", "--kb-nonce", "n", "--out", ws.existing_file, "--json",
    ]  # fmt: skip


def _root_with_a_revoked_key(ws: Workspace) -> Path:
    """A trust root pinning one issuer key (``k1``) revoked as compromised on 2026-10-01."""
    key = KeyPair.generate("p256").public_key.to_jwk()
    key["kid"] = "k1"
    root = ws.dir / "windows-root.json"
    root.write_text(
        json.dumps(
            {
                "format": "mudrika.trust-root/v1",
                "accepted_vct": ["urn:example:vct"],
                "issuers": {
                    "https://issuer.example": {
                        "jwks": {"keys": [key]},
                        "key_windows": {
                            "k1": {"revoked_at": "2026-10-01T00:00:00Z", "reason": "compromised"}
                        },
                    }
                },
            }
        )
    )
    (ws.dir / "windows-jwks.json").write_text(json.dumps({"keys": [key]}))
    return root


def _revoke_again(ws: Workspace) -> list[str]:
    """``revoke-key`` of a key already revoked at another time, without --force."""
    root = _root_with_a_revoked_key(ws)
    return [str(root), "--owner", "https://issuer.example", "--kid", "k1", "--at", "2026-09-01T00:00:00Z", "--reason", "compromised", "--json"]  # fmt: skip


def _replace_windowed_entry(ws: Workspace) -> list[str]:
    """``add-issuer`` over an entry whose key windows it would drop, without --force."""
    root = _root_with_a_revoked_key(ws)
    return [str(root), "https://issuer.example", "--jwks", str(ws.dir / "windows-jwks.json"), "--json"]


_ISSUE = ("--holder-did", "did:key:z6MkkH2Tx3GPMHffHM2Au2nKZGLfUTVQAfbhMo2gycbbTjhF")


def _issue(ws: Workspace) -> list[str]:
    """``credential issue`` by the workspace key's did:key, to itself (a valid issuance so far)."""
    kid = f"{ws.did}#{ws.did.removeprefix('did:key:')}"
    return ["--key", ws.key, "--issuer", ws.did, "--kid", kid, "--holder-did", ws.did, *PW]


def _status_list_file(ws: Workspace) -> str:
    """A list file (``status-list create``) whose entry 0 is INVALID."""
    path = str(ws.dir / "status-list.json")
    if not Path(path).exists():
        assert main(["status-list", "create", path, "--uri", "https://i.example/l", "--size", "8"]) == 0
        assert main(["status-list", "set", path, "0", "invalid"]) == 0
    return path


def _status_list_check(ws: Workspace) -> list[str]:
    """``status-list check`` of entry 0 (INVALID) against the list signed by the workspace key."""
    token = str(ws.dir / "status-list.jwt")
    assert main(["status-list", "sign", _status_list_file(ws), "--key", ws.key, "--out", token, *PW]) == 0
    kid = f"{ws.did}#{ws.did.removeprefix('did:key:')}"
    return ["--token", token, "--idx", "0", "--uri", "https://i.example/l", "--kid", kid, "--json"]


def _unsigned_request(ws: Workspace) -> str:
    """A well-formed request file that carries no signature (``httpsig verify`` must fail it, 1)."""
    path = ws.dir / "unsigned-request.json"
    path.write_text(json.dumps({"method": "GET", "url": "https://shop.example/", "headers": {}}))
    return str(path)


def _unsigned_directory(ws: Workspace) -> str:
    """A saved directory response without possession proofs (``--require-signatures`` fails it, 1)."""
    path = ws.dir / "directory-response.json"
    jwk = KeyPair.generate("ed25519").public_key.to_jwk()
    headers = {"Content-Type": "application/http-message-signatures-directory+json"}
    path.write_text(
        json.dumps({"url": "https://agent.example", "headers": headers, "body": json.dumps({"keys": [jwk]})})
    )
    return str(path)


def _garbled_issuer_dir(ws: Workspace) -> str:
    """An issuer directory whose ``issuer.json`` is not JSON (``dev token`` must refuse it, 2)."""
    directory = ws.dir / "garbled-issuer"
    write_file_atomic(directory / "issuer.json", b"garbage {", force=False)
    return str(directory)


def _shared_issuer_dir(ws: Workspace) -> str:
    """An issuer directory others can read (``dev issuer`` must refuse to keep its key there, 1)."""
    directory = ws.dir / "shared-issuer"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    return str(directory)


_WBA = ("--profile", "web-bot-auth", "--signature-agent", "https://agent.example")

_SIGN_CART = ("--merchant-did", "did:web:shop.example", "--kid", "did:web:shop.example#k1", "--aud", "a")
_SIGN_PAYMENT = ("--aud", "a", "--nonce", "n")

#: Malformed input: exit 2 and the error's own code.
MALFORMED: tuple[Case, ...] = (
    Case(("credential", "issue"), lambda w: [*_issue(w), "--claims", w.garbage, "--json"], 2, "malformed_json"),
    Case(("card", "sign"), lambda w: [w.garbage, "--key", w.key, "--kid", f"{w.did}#k", *PW, "--json"], 2, "malformed_json"),
    Case(("card", "verify"), lambda w: [w.garbage, "--trust-did", w.did, "--json"], 2, "malformed_json"),
    Case(("keys", "generate"), lambda w: ["--out", str(w.dir / "k"), "--password-env", "MUDRIKA_UNSET_PW", "--json"], 2, "no_password"),
    Case(("keys", "inspect"), lambda w: [w.garbage, *PW, "--json"], 2, "bad_private_key"),
    Case(("demo",), lambda w: ["--out", w.existing_file, "--json"], 2, "not_a_directory"),
    Case(("dev", "issuer"), lambda w: ["--issuer-dir", str(w.dir / "issuer"), "--host", "0.0.0.0", "--json"], 2, "not_loopback"),
    Case(("dev", "token"), lambda w: ["--issuer-dir", _garbled_issuer_dir(w), "--role", "agent", "--json"], 2, "malformed_json"),
    Case(("did", "create"), lambda w: ["--key", w.garbage, "--json"], 2, "bad_pem"),
    Case(("did", "resolve"), lambda w: ["did:KEY:abc", "--json"], 2, "invalidDid"),
    Case(("csr", "create"), lambda w: ["--key", w.key, "--did", "not-a-did", *PW, "--json"], 2, "not_a_did"),
    Case(("provision",), lambda w: ["--name", "a", "--out", str(w.dir / "p"), "--agentdns-url", "http://x", *PW, "--json"], 2, "bad_agentdns_url"),
    Case(("jcs",), lambda w: [w.duplicate_keys, "--json"], 2, "duplicate_key"),
    Case(("hash",), lambda w: [w.duplicate_keys, "--json"], 2, "duplicate_key"),
    Case(("mandate", "sign-intent"), lambda w: [w.empty_object, "--key", w.key, "--kid", f"{w.did}#k", *PW, "--json"], 2, "schema_mismatch"),
    Case(("mandate", "sign-cart"), lambda w: [w.array, "--key", w.key, *_SIGN_CART, *PW, "--json"], 2, "not_an_object"),
    Case(("mandate", "sign-payment"), lambda w: [w.array, "--key", w.key, "--cart", w.empty_object, "--intent", w.intent, "--credential", w.garbage, *_SIGN_PAYMENT, *PW, "--json"], 2, "not_an_object"),
    Case(("mandate", "verify"), lambda w: [w.bad_bundle, "--json"], 2, "bad_bundle"),
    Case(("mandate", "v02", "issue-open"), lambda w: [w.duplicate_keys, "--key", w.key, "--iss", "https://i.example", "--kid", "k", *PW, "--json"], 2, "duplicate_key"),
    Case(("mandate", "v02", "present"), lambda w: [w.garbage, w.empty_object, "--key", w.key, "--aud", "a", "--nonce", "n", *PW, "--json"], 2, "malformed_sd_jwt"),
    Case(("mandate", "v02", "sign-checkout"), lambda w: [w.array, "--key", w.key, "--kid", "k", *PW, "--json"], 2, "not_an_object"),
    Case(("mandate", "v02", "sign-receipt"), lambda w: [w.empty_object, "--kind", "checkout", "--key", w.key, "--kid", "k", *PW, "--json"], 2, "malformed_mandate"),
    Case(("mandate", "v02", "verify"), lambda w: [w.bad_bundle, "--trust-root", str(V02 / "trust-root.json"), "--json"], 2, "not_a_bundle"),
    Case(("dispute", "verify"), lambda w: [w.bad_bundle, "--json"], 2, "bad_bundle"),
    Case(("dispute", "verify"), lambda w: [str(BUNDLE), str(BUNDLE), "--scheduler", "not-an-address", "--json"], 2, "bad_scheduler"),
    Case(("dispute", "inspect"), lambda w: [w.bad_bundle, "--json"], 2, "bad_bundle"),
    Case(("dispute", "bundle"), lambda w: ["--intent", w.garbage, "--cart", w.cart, "--payment", w.garbage, "--merchant-aud", "a", "--kb-aud", "a", "--kb-nonce", "n", "--json"], 2, "malformed_json"),
    Case(("credential", "issue"), lambda w: ["--key", w.key, "--issuer", w.did, "--kid", f"{w.did}#k", *_ISSUE, "--claims", w.array, *PW, "--json"], 2, "not_an_object"),
    Case(("policy", "check"), lambda w: ["--config", w.bad_policy, "--operation", "message/send", "--json"], 2, "invalid_policy"),
    Case(("trust-root", "init"), lambda w: [str(w.dir / "root.json"), "--algorithm", "none", "--json"], 2, "bad_trust_root"),
    Case(("trust-root", "add-issuer"), lambda w: [w.garbage, "https://issuer.example", "--json"], 2, "malformed_json"),
    Case(("trust-root", "add-merchant"), lambda w: [w.garbage, "did:web:shop.example", "--json"], 2, "malformed_json"),
    Case(("trust-root", "show"), lambda w: [w.garbage, "--json"], 2, "malformed_json"),
    Case(("trust-root", "revoke-key"), lambda w: [w.garbage, "--owner", "o", "--kid", "k", "--at", "2026-10-01T00:00:00Z", "--reason", "superseded", "--json"], 2, "malformed_json"),
    Case(("trust-root", "rotate-key"), lambda w: [w.garbage, "--owner", "o", "--old-kid", "k", "--at", "2026-10-01T00:00:00Z", "--jwks", w.empty_object, "--json"], 2, "malformed_json"),
    Case(("card", "sign"), lambda w: [w.duplicate_keys, "--key", w.key, "--kid", f"{w.did}#k", *PW, "--json"], 2, "duplicate_key"),
    Case(("card", "verify"), lambda w: [w.duplicate_keys, "--trust-did", w.did, "--json"], 2, "duplicate_key"),
    Case(("status-list", "create"), lambda w: [str(w.dir / "l.json"), "--uri", "not a uri", "--size", "8", "--json"], 2, "bad_status_claim"),
    Case(("status-list", "set"), lambda w: [w.garbage, "0", "valid", "--json"], 2, "malformed_json"),
    Case(("status-list", "show"), lambda w: [w.empty_object, "--json"], 2, "bad_status_list_file"),
    Case(("status-list", "sign"), lambda w: [w.garbage, "--key", w.key, *PW, "--json"], 2, "malformed_json"),
    Case(("status-list", "check"), lambda w: [*_status_list_check(w)[2:], "--token", w.garbage], 2, "malformed_jws"),
    Case(("httpsig", "sign"), lambda w: ["--request", w.garbage, *_WBA, "--key", w.key, *PW, "--json"], 2, "malformed_json"),
    Case(("httpsig", "verify"), lambda w: ["--request", w.garbage, "--origin", "https://shop.example", "--json"], 2, "malformed_json"),
    Case(("directory", "serve"), lambda w: ["--key", w.garbage, "--authority", "agent.example", *PW], 2, "bad_private_key"),
    Case(("directory", "fetch"), lambda w: ["http://agent.example", "--json"], 2, "bad_signature_agent"),
    Case(("directory", "verify"), lambda w: [w.garbage, "--json"], 2, "malformed_json"),
)  # fmt: skip

#: A failed verification or operation: exit 1.  Every refused overwrite is here, and agrees.
FAILED: tuple[Case, ...] = (
    Case(("credential", "issue"), lambda w: [*_issue(w), "--out", w.existing_file, "--json"], 1, "exists"),
    Case(("card", "sign"), lambda w: [w.card, "--key", str(w.dir / "absent.pem"), "--kid", f"{w.did}#k", *PW, "--json"], 1, "not_found"),
    Case(("card", "verify"), lambda w: [w.card, "--trust-did", w.did, "--json"], 1, None),
    Case(("keys", "generate"), lambda w: ["--out", w.existing_keys, *PW, "--json"], 1, "exists"),
    Case(("keys", "inspect"), lambda w: [w.key, "--password-env", "MUDRIKA_WRONG_PW", "--json"], 1, "wrong_password"),
    Case(("demo",), lambda w: ["--out", w.existing_keys, "--json"], 1, "exists"),
    Case(("dev", "issuer"), lambda w: ["--issuer-dir", _shared_issuer_dir(w), "--port", "0", "--json"], 1, "insecure_permissions"),
    Case(("dev", "token"), lambda w: ["--issuer-dir", str(w.dir / "never-started"), "--json"], 1, "no_issuer"),
    Case(("did", "create"), lambda w: ["--key", w.key, "--out", w.existing_document_dir, *PW, "--json"], 1, "exists"),
    Case(("did", "resolve"), lambda w: ["did:web:shop.example", "--snapshot", w.empty_object, "--json"], 1, "notFound"),
    Case(("csr", "create"), lambda w: ["--key", w.key, "--did", w.did, "--cn", "a", "--out", w.existing_file, *PW, "--json"], 1, "exists"),
    Case(("provision",), lambda w: _provision_twice(w)[1:], 1, "key_type_mismatch"),
    Case(("mandate", "sign-intent"), lambda w: [str(AP2 / "intent_mandate.json"), "--key", str(w.dir / "absent.pem"), "--kid", f"{w.did}#k", *PW, "--json"], 1, "not_found"),
    Case(("mandate", "sign-cart"), lambda w: [str(AP2 / "cart_contents.json"), "--key", str(w.dir / "absent.pem"), *_SIGN_CART, *PW, "--json"], 1, "not_found"),
    Case(("mandate", "sign-payment"), lambda w: [str(AP2 / "payment_mandate_contents.json"), "--key", str(w.dir / "absent.pem"), "--cart", w.cart, "--intent", w.intent, "--credential", w.garbage, *_SIGN_PAYMENT, *PW, "--json"], 1, "not_found"),
    Case(("mandate", "verify"), lambda w: [str(BUNDLE), "--at", LATE, "--json"], 1, None),
    Case(("mandate", "v02", "issue-open"), lambda w: [w.empty_object, "--key", str(w.dir / "absent.pem"), "--iss", "https://i.example", "--kid", "k", *PW, "--json"], 1, "not_found"),
    Case(("mandate", "v02", "present"), lambda w: [_v02_chain_file(w), w.empty_object, "--key", str(w.dir / "absent.pem"), "--aud", "a", "--nonce", "n", *PW, "--json"], 1, "not_found"),
    Case(("mandate", "v02", "sign-checkout"), lambda w: [w.empty_object, "--key", str(w.dir / "absent.pem"), "--kid", "k", *PW, "--json"], 1, "not_found"),
    Case(("mandate", "v02", "sign-receipt"), lambda w: [w.empty_object, "--kind", "payment", "--key", str(w.dir / "absent.pem"), "--kid", "k", *PW, "--json"], 1, "not_found"),
    Case(("mandate", "v02", "verify"), lambda w: [str(V02 / "bundle.json"), "--trust-root", str(V02 / "trust-root.json"), "--json"], 1, None),
    Case(("dispute", "verify"), lambda w: [str(BUNDLE), "--at", LATE, "--json"], 1, None),
    Case(("dispute", "bundle"), _bundle_into_existing_file, 1, "exists"),
    Case(("credential", "issue"), lambda w: ["--key", str(w.dir / "absent.pem"), "--issuer", w.did, "--kid", f"{w.did}#k", *_ISSUE, *PW, "--json"], 1, "not_found"),
    Case(("policy", "check"), lambda w: ["--config", POLICY, "--roles", "agent-viewer", "--operation", "message/send", "--json"], 1, None),
    Case(("trust-root", "init"), lambda w: [w.existing_file, "--json"], 1, "exists"),
    Case(("trust-root", "revoke-key"), _revoke_again, 1, "already_revoked"),
    Case(("trust-root", "add-issuer"), _replace_windowed_entry, 1, "would_drop_windows"),
    Case(("card", "sign"), lambda w: [w.empty_object, "--key", str(w.dir / "absent.pem"), "--kid", f"{w.did}#k", *PW, "--json"], 1, "not_found"),
    Case(("card", "verify"), lambda w: [w.empty_object, "--trust-did", w.did, "--json"], 1, None),
    Case(("status-list", "create"), lambda w: [w.existing_file, "--uri", "https://i.example/l", "--size", "8", "--json"], 1, "exists"),
    Case(("status-list", "sign"), lambda w: [_status_list_file(w), "--key", str(w.dir / "absent.pem"), *PW, "--json"], 1, "not_found"),
    Case(("status-list", "check"), _status_list_check, 1, None),
    Case(("httpsig", "sign"), lambda w: ["--url", "https://shop.example/", *_WBA, "--key", str(w.dir / "absent.pem"), *PW, "--json"], 1, "not_found"),
    Case(("httpsig", "verify"), lambda w: ["--request", _unsigned_request(w), "--origin", "https://shop.example", "--json"], 1, "no_signature"),
    Case(("directory", "serve"), lambda w: ["--key", str(w.dir / "absent.pem"), "--authority", "agent.example", *PW], 1, "not_found"),
    Case(("directory", "fetch"), lambda w: ["https://127.0.0.1", "--json"], 1, "egress_denied"),
    Case(("directory", "verify"), lambda w: [_unsigned_directory(w), "--require-signatures", "--json"], 1, "directory_unsigned"),
)  # fmt: skip

#: Commands that have no way to fail other than malformed input, and why.
NEVER_FAIL_WITH_1 = {
    ("jcs",): "canonicalises its input or refuses it as malformed",
    ("hash",): "hashes its input or refuses it as malformed",
    ("trust-root", "rotate-key"): "adds the new key and supersedes the old one, or refuses malformed input",
    ("trust-root", "add-merchant"): "edits the file (always replacing it) or refuses malformed input",
    ("trust-root", "show"): "prints the file or refuses it as malformed",
    ("dispute", "inspect"): "lists what the bundle claims (verifying nothing) or refuses it as malformed",
    ("status-list", "set"): "edits the file (always replacing it) or refuses malformed input",
    ("status-list", "show"): "prints the file's summary or refuses it as malformed",
}


def _leaves(command: click.Command, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    if isinstance(command, click.Group):
        return [leaf for name, sub in command.commands.items() for leaf in _leaves(sub, (*path, name))]
    return [path]


LEAVES = sorted(leaf for name, entry in COMMANDS.items() for leaf in _leaves(entry.load(), (name,)))


def _has_json_flag(path: tuple[str, ...]) -> bool:
    command: click.Command = COMMANDS[path[0]].load()
    for name in path[1:]:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return any(param.name == "as_json" for param in command.params)


def _error_document(out: str) -> dict[str, Any]:
    document = json.loads(out)  # exactly one JSON document, nothing else on stdout
    assert set(document) == {"error"}
    error = document["error"]
    assert isinstance(error, dict)
    assert set(error) == {"code", "message", "fields"}
    assert isinstance(error["message"], str)
    assert error["message"]
    assert isinstance(error["fields"], dict)
    return error


def test_every_command_is_in_the_table() -> None:
    assert sorted({case.path for case in MALFORMED}) == LEAVES
    assert sorted({case.path for case in FAILED} | set(NEVER_FAIL_WITH_1)) == LEAVES


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_help_exits_0(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, *path, "--help")
    assert code == 0
    assert "Usage: mudrika " + " ".join(path) in out


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_usage_error_exits_2(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, *path, "--no-such-option")
    assert code == 2
    assert out == ""
    assert "No such option" in err
    code, out, _ = run_cli(capsys, *path, "--no-such-option", "--json")
    assert code == 2
    assert _error_document(out)["code"] == "usage"


@pytest.mark.parametrize(
    "case", MALFORMED + FAILED, ids=lambda case: f"{' '.join(case.path)}-{case.exit_code}"
)
def test_outcome_follows_the_exit_code_table(
    case: Case, ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, *case.path, *case.argv(ws))
    assert code == case.exit_code, err
    if case.code is None:
        report = json.loads(out)  # a verdict: the report itself, with the failure inside it
        if case.path == ("dispute", "verify"):  # one shape for one bundle or a batch: a row per bundle
            (row,) = report["results"]
            report = row["report"]
        assert report.get("ok", report.get("allowed")) is False
        return
    assert f"({case.code}" in err  # the human line names the code
    assert "Traceback" not in err
    if _has_json_flag(case.path):
        assert _error_document(out)["code"] == case.code
    else:
        assert out == ""


def test_a_bad_option_value_is_reported_in_json_with_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "keys", "generate", "--json", "--type", "dsa", "--out", "x")
    assert code == 2
    error = _error_document(out)
    assert error["code"] == "usage"
    assert error["fields"] == {"param": "--type"}


def test_the_human_line_names_message_code_and_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "did", "resolve", "did:KEY:abc")
    assert code == 2
    assert err == (
        "error: invalid DID: DID method name must be 1+ characters of a-z and 0-9 (invalidDid; reason=bad_method)\n"
    )


@pytest.mark.parametrize(
    "argv",
    [["-v", "did", "resolve", "did:KEY:abc"], ["did", "resolve", "did:KEY:abc", "-v"]],
    ids=["global", "per-command"],
)
def test_verbose_adds_the_cause_chain(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.splitlines()[1] == (
        "  caused by: mudrika.errors.InvalidInput: DID method name must be 1+ characters of a-z and 0-9 "
        "(bad_method; did=did:KEY:abc)"
    )


def test_verbose_json_lists_the_causes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "-v", "did", "resolve", "did:KEY:abc", "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["causes"] == [
        {
            "type": "mudrika.errors.InvalidInput",
            "code": "bad_method",
            "message": "DID method name must be 1+ characters of a-z and 0-9",
            "fields": {"did": "did:KEY:abc"},
        }
    ]


def test_a_foreign_cause_shows_only_its_type(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def resolve(self: DIDResolver, did: str, accept: str = "") -> Any:
        try:
            raise ValueError("token=s3cr3t-value")
        except ValueError as exc:
            raise InvalidInput("the driver refused the DID", code="driver_refused") from exc

    monkeypatch.setattr(DIDResolver, "resolve", resolve)
    code, out, err = run_cli(capsys, "-v", "did", "resolve", "did:web:shop.example", "--json")
    assert code == 2
    assert "  caused by: ValueError" in err.splitlines()
    assert json.loads(out)["error"]["causes"] == [{"type": "ValueError"}]
    assert "s3cr3t" not in out + err


def test_an_unexpected_exception_is_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def resolve(self: DIDResolver, did: str, accept: str = "") -> Any:
        raise RuntimeError("password=hunter2")

    monkeypatch.setattr(DIDResolver, "resolve", resolve)
    code, out, err = run_cli(capsys, "did", "resolve", "did:web:shop.example")
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        "error: unexpected internal error: RuntimeError (internal_error; type=RuntimeError)",
        "  (run with -v for the traceback)",
    ]
    code, out, err = run_cli(capsys, "-v", "did", "resolve", "did:web:shop.example", "--json")
    assert code == 1
    assert json.loads(out) == {
        "error": {
            "code": "internal_error",
            "message": "unexpected internal error: RuntimeError",
            "fields": {"type": "RuntimeError"},
            "causes": [],
        }
    }
    assert "Traceback (most recent call last):" in err
    assert 'raise RuntimeError("password=hunter2")' in err  # the source line of the frame, not a message
    assert err.rstrip().endswith("\nRuntimeError")


def test_control_characters_in_errors_are_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "-v", "did", "resolve", "did:KEY:\x1b[31mred")
    assert code == 2
    assert "\x1b" not in err
    assert 'did="did:KEY:\\u001b[31mred"' in err


def test_every_validation_problem_is_listed_once(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "dispute", "verify", ws.bad_bundle)
    assert code == 2
    assert out == ""
    assert err.count("malformed evidence bundle") == 1
    for field in ("evidence_time", "mandates", "expectations", "keys"):
        assert err.count(f"{field}: Field required") == 1


def test_a_batch_reports_each_malformed_bundle_as_an_error_object(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "dispute", "verify", ws.bad_bundle, ws.garbage, "--json")
    assert code == 2
    results = json.loads(out)["results"]
    assert [r["error"]["code"] for r in results] == ["bad_bundle", "malformed_json"]
    assert [r["path"] for r in results] == [ws.bad_bundle, ws.garbage]


class _Pair(BaseModel):
    first: int
    second: int


def _raising(exc: BaseException) -> Callable[..., Any]:
    def resolve(self: DIDResolver, did: str, accept: str = "") -> Any:
        raise exc

    return resolve


def test_a_stray_pydantic_error_lists_every_problem(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValidationError) as info:
        _Pair.model_validate({"second": "x"})
    monkeypatch.setattr(DIDResolver, "resolve", _raising(info.value))
    code, _, err = run_cli(capsys, "did", "resolve", "did:web:shop.example")
    assert code == 2
    assert err.splitlines() == [
        "error: invalid input (2 problems) (invalid_input)",
        "  - first: Field required",
        "  - second: Input should be a valid integer, unable to parse string as an integer",
    ]


def test_an_os_error_is_an_operation_failure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(DIDResolver, "resolve", _raising(PermissionError(13, "Permission denied", "/srv/x")))
    code, out, err = run_cli(capsys, "did", "resolve", "did:web:shop.example", "--json")
    assert code == 1
    assert err == "error: Permission denied (os_error; filename=/srv/x)\n"
    assert _error_document(out) == {
        "code": "os_error",
        "message": "Permission denied",
        "fields": {"filename": "/srv/x"},
    }


def test_an_interrupt_exits_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(DIDResolver, "resolve", _raising(KeyboardInterrupt()))
    code, _, err = run_cli(capsys, "did", "resolve", "did:web:shop.example")
    assert code == 1
    assert err.splitlines()[-1] == "error: aborted (aborted)"


# --- the grammar (docs/cli.md): --json, --out and --force, --key, held over every command -----------------
# Why here: a newcomer met --out as a directory in one command and a file in the next, --json missing
# where they expected it, files rewritten silently, and --key meaning "a file" in one group and "a path,
# file:PATH or env:VAR" in another.  Each rule is read from the commands themselves.

KEY_GRAMMAR = "a path, file:PATH or env:VAR"
#: Commands that run until interrupted: they print no result document to take ``--json``.
SERVERS = {("directory", "serve")}
#: Commands whose ``--out`` directory must be new or empty: they never replace a file.
NEVER_REPLACE = {("demo",)}


def _leaf_commands() -> dict[tuple[str, ...], click.Command]:
    found: dict[tuple[str, ...], click.Command] = {}

    def walk(path: tuple[str, ...], command: click.Command) -> None:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk((*path, name), sub)
        else:
            found[path] = command

    for name, entry in COMMANDS.items():
        walk((name,), entry.load())
    return found


LEAF_COMMANDS = _leaf_commands()


def _option(command: click.Command, flag: str) -> click.Option | None:
    return next((p for p in command.params if isinstance(p, click.Option) and flag in p.opts), None)


@pytest.mark.parametrize("path", sorted(LEAF_COMMANDS), ids=" ".join)
def test_every_command_takes_json(path: tuple[str, ...]) -> None:
    if path in SERVERS:
        assert _option(LEAF_COMMANDS[path], "--json") is None
        return
    assert _option(LEAF_COMMANDS[path], "--json") is not None, f"{' '.join(path)} has no --json"


@pytest.mark.parametrize("path", sorted(LEAF_COMMANDS), ids=" ".join)
def test_out_is_a_file_or_a_directory_and_replacing_needs_force(path: tuple[str, ...]) -> None:
    command = LEAF_COMMANDS[path]
    out = _option(command, "--out")
    if out is None:
        return
    assert isinstance(out.type, click.Path)
    metavar = out.make_metavar(click.Context(command))
    assert metavar in {"FILE", "DIRECTORY"}, f"{' '.join(path)}: --out {metavar}"
    if not out.type.file_okay:
        assert metavar == "DIRECTORY"
    if not out.type.dir_okay:
        assert metavar == "FILE"
    if path not in NEVER_REPLACE:
        assert _option(command, "--force") is not None, f"{' '.join(path)} writes --out without --force"


@pytest.mark.parametrize("path", sorted(LEAF_COMMANDS), ids=" ".join)
def test_every_key_is_named_one_way(path: tuple[str, ...]) -> None:
    key = _option(LEAF_COMMANDS[path], "--key")
    if key is None:
        return
    assert key.help is not None
    assert KEY_GRAMMAR in key.help, f"{' '.join(path)} --key: {key.help!r}"


def test_the_tables_name_only_commands_that_exist() -> None:
    assert set(LEAF_COMMANDS) >= SERVERS
    assert set(LEAF_COMMANDS) >= NEVER_REPLACE


def test_a_command_that_writes_the_trust_root_reports_it_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root.json"
    code, first, _ = run_cli_json(capsys, "trust-root", "init", str(root), "--json")
    assert code == 0
    assert first["path"] == str(root)
    assert first["changed"] is True
    # The same policy written again has the same fingerprint: it names the content, not the write.
    code, again, _ = run_cli_json(capsys, "trust-root", "init", str(root), "--force", "--json")
    assert code == 0
    assert again["fingerprint"] == first["fingerprint"]


def test_keys_inspect_shows_the_public_facts_and_never_the_private_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("INSPECT_PW", "correct horse battery staple")
    code, generated, _ = run_cli_json(
        capsys, "keys", "generate", "--out", str(tmp_path / "k"), "--password-env", "INSPECT_PW", "--json"
    )
    assert code == 0
    code, public, _ = run_cli_json(capsys, "keys", "inspect", str(tmp_path / "k" / "public.pem"), "--json")
    assert code == 0
    code, private, err = run_cli_json(
        capsys,
        "keys",
        "inspect",
        str(tmp_path / "k" / "private.pem"),
        "--password-env",
        "INSPECT_PW",
        "--json",
    )
    assert code == 0
    assert (public["kind"], private["kind"]) == ("public", "private")
    for shown in (public, private):
        assert shown["thumbprint"] == generated["thumbprint"]
        assert shown["public_jwk"] == generated["public_jwk"]
        assert shown["did_key"].startswith("did:key:z")
    shown_text = json.dumps(private) + err
    assert "PRIVATE KEY" not in shown_text
    assert '"d"' not in shown_text
