"""``mudrika csr``: certificate signing requests bound to an agent's DID.

cryptography and the identity modules are imported inside the command, so that
``mudrika csr --help`` starts without them.
"""

from __future__ import annotations

from pathlib import Path

import click

from mudrika.cli._common import (
    dns_names_option,
    emit_json,
    force_option,
    json_option,
    load_signing_key,
    out_file_option,
    password_options,
    private_key_option,
    read_json_file,
    write_output,
)
from mudrika.errors import InvalidInput

__all__ = ["csr_group"]

_MAX_DID_DOCUMENT = 1024 * 1024


def default_common_name(did: str) -> str:
    """did:bindu carries the agent name; for other methods the operator must say it with --cn."""
    from mudrika.identity.did import parse_did

    parsed = parse_did(did)
    if parsed.method == "bindu":
        parts = parsed.method_specific_id.split(":")
        if len(parts) == 3 and parts[1]:
            return parts[1]
    raise InvalidInput(
        "give the agent name with --cn (the common name is never the DID)", code="missing_cn", option="--cn"
    )


@click.group("csr")
def csr_group() -> None:
    """Create PKCS#10 CSRs signed by the agent's identity key, with the DID in the subjectAltName."""


@csr_group.command("create")
@private_key_option("Private key: a path, file:PATH or env:VAR.")
@click.option("--did", required=True, help="The agent's DID; it goes into the SAN as a URI.")
@click.option(
    "--cn", help="Common name: the agent's name (≤ 64 characters). Defaults to did:bindu's name part."
)
@dns_names_option("Add a DNS name to the SAN (repeatable).")
@out_file_option("Write the CSR PEM here.")
@click.option(
    "--self-signed-cert",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a self-signed development certificate here.",
)
@click.option("--days", type=click.IntRange(1, 397), default=30, show_default=True)
@force_option("existing output files")
@json_option("the result")
@click.option(
    "--did-document",
    "did_document_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The DID's document, to check --key against --did offline (needed for did:web and others).",
)
@password_options
def create(
    key_uri: str,
    did: str,
    cn: str | None,
    dns_names: tuple[str, ...],
    out_path: Path | None,
    self_signed_cert: Path | None,
    days: int,
    force: bool,
    as_json: bool,
    did_document_file: Path | None,
    password_env: str | None,
    password_file: Path | None,
) -> None:
    """Create a CSR (and optionally a development certificate) for the key and DID."""
    from mudrika.identity.csr import create_csr, fingerprint_sha256, self_signed_certificate, to_pem

    common_name = cn or default_common_name(did)
    pair = load_signing_key(key_uri, password_env, password_file)
    # A CSR whose SAN names a DID the key does not control is refused here, not by a CA months later.
    from mudrika.cli._keycheck import check_key_in_did, did_documents

    files = [] if did_document_file is None else [did_document_file]
    documents = did_documents(files, lambda path: read_json_file(path, max_bytes=_MAX_DID_DOCUMENT))
    check_key_in_did(pair, did=did, documents=documents)
    csr = create_csr(pair, agent_name=common_name, did=did, dns_names=dns_names)
    csr_pem = to_pem(csr)
    result: dict[str, object] = {
        "csr_fingerprint": fingerprint_sha256(csr),
        "common_name": common_name,
        "did": did,
    }
    if out_path is not None:
        write_output(out_path, csr_pem, force=force)
        result["csr"] = str(out_path)
    if self_signed_cert is not None:
        cert = self_signed_certificate(pair, agent_name=common_name, did=did, dns_names=dns_names, days=days)
        write_output(self_signed_cert, to_pem(cert), force=force)
        result["certificate"] = str(self_signed_cert)
        result["certificate_fingerprint"] = fingerprint_sha256(cert)
    if as_json:
        result["csr_pem"] = csr_pem.decode()
        emit_json(result)
    elif out_path is None:
        click.echo(csr_pem.decode(), nl=False)
