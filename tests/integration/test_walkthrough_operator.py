"""The operator's walkthrough, end to end, as README.md and docs/identity.md "Provisioning an agent"
tell it: a fleet of 50 agents provisioned with ``mudrika provision``, then checked the way an operator
would before handing CSRs to a CA and DID documents to a web server.

The fleet mixes every shape the page describes: did:key with Ed25519 and P-256 keys, did:web agents
with ``--host``/``--path`` (one with ``--port``), and a did:bindu agent with ``--author``; each in its
own directory, the password from an environment variable, the ``--json`` output parsed.  Checked: 50
distinct DIDs; every directory 0700 and every file 0600; every DID document (and every did:web copy
under ``web/``) parses and names its DID as ``id``; every CSR verifies with OpenSSL and carries the
DID as a URI subjectAltName; and the re-run rules: the same options reuse the key (same DID), another
key type is refused without ``--force`` and replaces the identity with it, a wrong password exits 1
with ``wrong_password`` and changes nothing.

Why in-process: each provision costs one PBKDF2 at 600,000 rounds (about 0.3 s of CPU), and a
``mudrika`` process start (the interpreter and its imports) costs more than that again: 50
provisions as subprocesses took 47 s on the shared 2-core test machine, the whole test with 50 calls
of :func:`mudrika.cli.main` (the same command: option parsing, ``--json`` output, exit codes) 7–14 s.
OpenSSL, the independent checker, still runs as its own process.
"""

from __future__ import annotations

import json
import secrets
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests._support.cli import run_cli, run_cli_json

pytestmark = pytest.mark.integration

FLEET_SIZE = 50
PASSWORD_ENV = "FLEET_KEY_PASSWORD"
WEB_HOST = "agents.fleet.example"


@dataclass(frozen=True)
class Agent:
    """One agent of the fleet: its name and the ``mudrika provision`` options that shape it."""

    name: str
    options: tuple[str, ...]

    def argv(self, out: Path, *extra: str) -> list[str]:
        return ["provision", "--name", self.name, "--out", str(out), *self.options, *extra]


def _fleet() -> list[Agent]:
    """Agent 0 is did:bindu, agents 1–5 did:web (agent 5 on a port), the rest did:key, alternating
    Ed25519 and P-256."""
    fleet = [Agent("agent-00", ("--method", "bindu", "--author", "ops@fleet.example"))]
    for index in range(1, 6):
        name = f"agent-{index:02d}"
        web = ("--method", "web", "--host", WEB_HOST, "--path", f"agents/{name}")
        fleet.append(Agent(name, (*web, "--port", "8443") if index == 5 else web))
    for index in range(6, FLEET_SIZE):
        key_type = "ed25519" if index % 2 == 0 else "p256"
        fleet.append(Agent(f"agent-{index:02d}", ("--method", "key", "--type", key_type)))
    return fleet


def _provision(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any, str]:
    return run_cli_json(capsys, *argv, "--password-env", PASSWORD_ENV, "--json")


def _openssl_csr(csr: Path) -> tuple[bool, str]:
    """Whether OpenSSL verifies the CSR's self-signature, and its text form (subject, SANs)."""
    checked = subprocess.run(
        ["openssl", "req", "-in", str(csr), "-verify", "-noout", "-text"],
        capture_output=True,
        text=True,
        check=False,
    )
    verified = checked.returncode == 0 and "verify OK" in (checked.stderr + checked.stdout)
    return verified, checked.stdout


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_an_operator_provisions_and_checks_a_fleet_of_fifty_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, secrets.token_urlsafe(24))
    fleet = _fleet()
    outputs: dict[str, dict[str, Any]] = {}
    for agent in fleet:
        code, output, err = _provision(capsys, agent.argv(tmp_path / agent.name))
        assert code == 0, err
        assert output["key"] == "created"
        assert output["replaced"] is None
        outputs[agent.name] = output

    dids = {output["did"] for output in outputs.values()}
    assert len(dids) == FLEET_SIZE
    assert sum(did.startswith("did:key:") for did in dids) == FLEET_SIZE - 6
    assert sum(did.startswith("did:web:") for did in dids) == 5
    assert sum(did.startswith("did:bindu:ops_at_fleet_example:agent-00:") for did in dids) == 1
    assert outputs["agent-03"]["did"] == f"did:web:{WEB_HOST}:agents:agent-03"
    assert outputs["agent-05"]["did"] == f"did:web:{WEB_HOST}%3A8443:agents:agent-05"
    assert {outputs[f"agent-{i:02d}"]["key_type"] for i in (6, 7)} == {"ed25519", "p256"}

    for agent in fleet:
        output, directory = outputs[agent.name], tmp_path / agent.name
        files = {role: Path(path) for role, path in output["files"].items()}
        assert _mode(files["private_key"]) == 0o600
        for path in directory.rglob("*"):
            assert _mode(path) == (0o700 if path.is_dir() else 0o600), path
        assert _mode(directory) == 0o700
        documents = [files["did_document"]] + ([files["web_did_json"]] if "web_did_json" in files else [])
        assert len(documents) == (2 if output["did"].startswith("did:web:") else 1)
        for document in documents:
            assert json.loads(document.read_text())["id"] == output["did"]
        assert json.loads(files["identity"].read_text())["did"] == output["did"]
        verified, text = _openssl_csr(files["csr"])
        assert verified, agent.name
        assert f"URI:{output['did']}" in text
        assert f"CN = {agent.name}" in text or f"CN={agent.name}" in text

    # Same options again: the key is reused, the DID kept.
    p256_agent = fleet[7]
    directory = tmp_path / p256_agent.name
    code, again, err = _provision(capsys, p256_agent.argv(directory))
    assert code == 0, err
    assert (again["key"], again["did"], again["replaced"]) == (
        "reused",
        outputs[p256_agent.name]["did"],
        None,
    )

    # Another key type would be another DID: refused without --force, nothing changed.
    key_before = (directory / "private.pem").read_bytes()
    code, refused, _ = _provision(capsys, [*p256_agent.argv(directory), "--type", "ed25519"])
    assert code == 1
    assert refused["error"]["code"] == "key_type_mismatch"
    assert (directory / "private.pem").read_bytes() == key_before
    assert json.loads((directory / "identity.json").read_text())["did"] == outputs[p256_agent.name]["did"]

    # --force replaces the identity, and says so.
    code, forced, err = _provision(capsys, [*p256_agent.argv(directory), "--type", "ed25519", "--force"])
    assert code == 0, err
    assert (forced["key"], forced["key_type"]) == ("created", "ed25519")
    assert forced["did"] != outputs[p256_agent.name]["did"]
    assert forced["replaced"]["did"] == outputs[p256_agent.name]["did"]
    assert (directory / "private.pem").read_bytes() != key_before
    verified, text = _openssl_csr(directory / "agent.csr")
    assert verified
    assert f"URI:{forced['did']}" in text

    # A wrong password: exit 1, wrong_password, the key untouched.
    other = tmp_path / fleet[8].name
    key_before = (other / "private.pem").read_bytes()
    monkeypatch.setenv(PASSWORD_ENV, "not-the-fleet-password")
    code, wrong, _ = _provision(capsys, fleet[8].argv(other))
    assert code == 1
    assert wrong["error"]["code"] == "wrong_password"
    assert (other / "private.pem").read_bytes() == key_before
    code, _, err = run_cli(capsys, *fleet[8].argv(other), "--password-env", PASSWORD_ENV)
    assert code == 1
    assert "(wrong_password" in err
