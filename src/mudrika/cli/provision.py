"""``mudrika provision``: give an agent its key, DID, DID document, CSR and AgentIdentity JSON.

The identity modules are imported inside the command, so that ``mudrika provision --help`` starts
without them.  Every option is checked (``check_request``) before the password is read, so a usage
error costs neither a prompt nor a file; what the run did — key created or reused, each file written,
and with ``--force`` the identity it replaced — is said on stderr and, with ``--json``, on stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from mudrika.cli._choices import did_method_option, key_type_options
from mudrika.cli._common import (
    did_web_options,
    dns_names_option,
    emit_json,
    err,
    force_option,
    json_option,
    key_directory_option,
    password_options,
    read_password,
)

if TYPE_CHECKING:
    from mudrika.identity.provision import ProvisionResult

__all__ = ["provision_command"]


@click.command("provision")
@click.option("--name", required=True, help="The agent's name (≤ 64 characters): the CSR's common name.")
@key_directory_option("Directory for the agent's files; created with mode 0700.")
@key_type_options("Key type of a NEW key (an existing key of another type is refused unless --force).")
@did_method_option(
    "DID method: key/jwk (self-contained), web (served over HTTPS), bindu (self-certifying, needs --author)."
)
@click.option("--author", help="did:bindu: the author, e.g. an e-mail address.")
@did_web_options(
    host="did:web: the domain that will serve did.json.",
    path=(
        "did:web: optional path under the domain, e.g. --host shop.example --path agents/alice gives "
        "did:web:shop.example:agents:alice, served at https://shop.example/agents/alice/did.json."
    ),
)
@click.option("--endpoint", help="The agent's A2A endpoint (https://…), listed as a DID document service.")
@click.option("--agentdns-url", help="The agent's AgentDNS URL (https://…), recorded in the AgentIdentity.")
@dns_names_option("DNS name for the CSR's subjectAltName (repeatable).")
@force_option(
    "an existing agent whose identity these options would change (key type, DID method, did:web "
    "host/port/path, did:bindu author/name): its key and files are replaced, its old did:web document removed"
)
@json_option(
    help_text="Print one JSON document on stdout: did, key (created/reused), files, written, replaced, identity."
)
@password_options
def provision_command(
    name: str,
    out_dir: Path,
    key_type: str,
    rsa_bits: str,
    method: str,
    author: str | None,
    host: str | None,
    web_path: str | None,
    port: int | None,
    endpoint: str | None,
    agentdns_url: str | None,
    dns_names: tuple[str, ...],
    force: bool,
    as_json: bool,
    password_env: str | None,
    password_file: Path | None,
) -> None:
    """Create (or reuse) the agent's encrypted key and write did.json, agent.csr and identity.json.

    Re-running with the same options is safe: an existing private.pem is unlocked and reused, never
    replaced, and the DID stays the same; only the files derived from the key are rewritten.  Options
    that would change the identity (another key type, DID method, did:web host/port/path, did:bindu
    author/name) are refused (exit 1) unless --force, which replaces the old identity and says so.
    """
    from mudrika.identity.provision import check_request, provision_agent

    request = check_request(
        name=name,
        key_type=key_type,
        rsa_bits=int(rsa_bits),
        method=method,
        author=author,
        web_host=host,
        web_path=web_path,
        web_port=port,
        endpoint=endpoint,
        agentdns_url=agentdns_url,
        dns_names=dns_names,
    )
    password = read_password(password_env, password_file, confirm=not (out_dir / "private.pem").exists())
    result = provision_agent(request, out_dir=out_dir, password=password, force=force)
    _report(result)
    if as_json:
        emit_json(result.to_json())


def _report(result: ProvisionResult) -> None:
    """The human account on stderr: the key, the DID, what was replaced and removed, every file written."""
    verb = "created a new" if result.key_created else "reused the existing"
    err(f"{verb} {result.key_type.value} key; DID {result.identity.did}")
    replaced = result.replaced
    if replaced is not None:
        what = "; ".join(str(difference) for difference in replaced.differences)
        err(f"replaced {replaced.did or 'the existing key'} ({what})")
        for path in replaced.removed:
            err(f"  removed       {path}")
    err("wrote:")
    for path in result.written:
        err(f"  {path}")
