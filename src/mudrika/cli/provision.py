"""``mudrika provision``: give an agent its key, DID, DID document, CSR and AgentIdentity JSON.

The identity modules are imported inside the command, so that ``mudrika provision --help`` starts
without them.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

from mudrika.cli._choices import did_method_option, key_type_options
from mudrika.cli._common import (
    did_web_options,
    dns_names_option,
    emit_json,
    err,
    json_option,
    key_directory_option,
    password_options,
    read_password,
)

__all__ = ["provision_command"]


@click.command("provision")
@click.option("--name", required=True, help="The agent's name (≤ 64 characters): the CSR's common name.")
@key_directory_option("Directory for the agent's files; created with mode 0700.")
@key_type_options("Key type of a NEW key (an existing key is always reused).")
@did_method_option(
    "DID method: key/jwk (self-contained), web (served over HTTPS), bindu (self-certifying, needs --author)."
)
@click.option("--author", help="did:bindu: the author, e.g. an e-mail address.")
@did_web_options(
    host="did:web: the domain that will serve did.json.", path="did:web: optional path under the domain."
)
@click.option("--endpoint", help="The agent's A2A endpoint (https://…), listed as a DID document service.")
@click.option("--agentdns-url", help="The agent's AgentDNS URL (https://…), recorded in the AgentIdentity.")
@dns_names_option("DNS name for the CSR's subjectAltName (repeatable).")
@json_option("the AgentIdentity")
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
    as_json: bool,
    password_env: str | None,
    password_file: Path | None,
) -> None:
    """Create (or reuse) the agent's encrypted key and write did.json, agent.csr and identity.json.

    Re-running is safe: an existing private.pem is unlocked and reused, never replaced, so the DID stays
    the same; only the files derived from the key are rewritten.
    """
    from mudrika.crypto.keys import KeyType
    from mudrika.identity.provision import DidMethod, provision

    password = read_password(password_env, password_file, confirm=not (out_dir / "private.pem").exists())
    result = provision(
        name=name,
        out_dir=out_dir,
        password=password,
        key_type=KeyType(key_type),
        rsa_bits=int(rsa_bits),
        method=cast(DidMethod, method),
        author=author,
        web_host=host,
        web_path=web_path,
        web_port=port,
        endpoint=endpoint,
        agentdns_url=agentdns_url,
        dns_names=dns_names,
    )
    verb = "created a new" if result.key_created else "reused the existing"
    err(f"{verb} {key_type} key; DID {result.identity.did}")
    for label, path in result.files.items():
        err(f"  {label:13} {path}")
    if as_json:
        emit_json(result.identity.to_json())
