"""``mudrika card sign|verify``: Agent Card signatures (A2A 1.0 §8.4) from the command line.

Why in the CLI: an operator publishes the card at ``/.well-known/agent-card.json`` and must sign it
with the agent's DID key before deploying, and a client operator must be able to check a fetched card
against the DIDs they trust, offline, with the same verifier the library uses.

``sign`` appends a signature (existing ones are kept: key rotation) and prints the signed card on
stdout.  ``verify`` takes its trust on the command line — ``--trust-did`` (repeatable) and
``--alg`` (repeatable) — and resolves did:key / did:jwk locally and other DIDs only from the DID
documents given with ``--did-document`` (never the network).  Exit codes: 0 signed / verified,
1 no signature verifies, 2 malformed card or usage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mudrika.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    emit_document,
    emit_json,
    err,
    json_option,
    load_signing_key,
    output_file_options,
    password_options,
    private_key_option,
    read_json_file,
    read_prefix,
)

__all__ = ["card_group"]

_FORMS = ("a2a", "a2a-sdk-1.3")
#: Largest --did-document file read (a DID document is a few KB; the cap keeps a wrong file cheap).
_MAX_DID_DOCUMENT = 1024 * 1024


def _card(source: str) -> dict[str, Any]:
    from mudrika.trust.a2a.cards import MAX_CARD_BYTES, load_card

    return load_card(read_prefix(source, MAX_CARD_BYTES))


@click.group(name="card")
def card_group() -> None:
    """Sign and verify A2A Agent Cards (JWS over the RFC 8785 form, kid a DID URL)."""


@card_group.command(name="sign")
@click.argument("source", metavar="CARD|-")
@private_key_option("The agent's private key: a path, file:PATH or env:VAR.")
@click.option(
    "--kid",
    required=True,
    help="DID URL of the key's verification method (assertionMethod), e.g. did:web:…#key-1.",
)
@click.option("--alg", help="JWS algorithm (default: the key type's default, e.g. ES256, EdDSA).")
@click.option(
    "--form",
    type=click.Choice(_FORMS),
    default="a2a",
    show_default=True,
    help="Canonical form: the A2A specification's, or a2a-sdk 1.3's (for its verifiers).",
)
@password_options
@output_file_options("the signed card")
@json_option(help_text="The signed card is one JSON document already; --json also reports failures as JSON.")
def sign_command(
    source: str,
    key_uri: str,
    kid: str,
    alg: str | None,
    form: str,
    password_env: str | None,
    password_file: Path | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
) -> int:
    """Append a signature to an Agent Card and print the signed card on stdout."""
    from mudrika.trust.a2a.cards import sign_card

    card = _card(source)
    pair = load_signing_key(key_uri, password_env, password_file)
    signed = sign_card(card, pair, kid=kid, alg=alg, form="a2a-sdk-1.3" if form == "a2a-sdk-1.3" else "a2a")
    emit_document(signed, out_path, force=force)
    err(f"signed with {kid} ({len(signed['signatures'])} signature(s) on the card)")
    return EXIT_OK


@card_group.command(name="verify")
@click.argument("source", metavar="CARD|-")
@click.option(
    "--trust-did", "trusted", multiple=True, required=True, help="A DID trusted to sign cards (repeatable)."
)
@click.option(
    "--alg",
    "algorithms",
    multiple=True,
    default=("ES256", "EdDSA", "Ed25519"),
    show_default=True,
    help="An accepted JWS algorithm (repeatable; asymmetric only).",
)
@click.option(
    "--did-document",
    "documents",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A DID document (JSON) to resolve non-self-certifying DIDs offline (repeatable).",
)
@click.option("--accept-sdk-form", is_flag=True, help="Also accept a2a-sdk 1.3's canonical form.")
@json_option("the report")
def verify_command(
    source: str,
    trusted: tuple[str, ...],
    algorithms: tuple[str, ...],
    documents: tuple[Path, ...],
    accept_sdk_form: bool,
    as_json: bool,
) -> int:
    """Verify an Agent Card's signatures against the DIDs you trust; exit 1 when none verifies."""
    from mudrika.cli._keycheck import did_documents
    from mudrika.identity.resolver import DIDResolver
    from mudrika.trust.a2a.cards import AgentCardVerifier

    snapshot = did_documents(documents, lambda path: read_json_file(path, max_bytes=_MAX_DID_DOCUMENT))
    verifier = AgentCardVerifier(
        resolver=DIDResolver.offline(snapshot),
        trusted_dids=trusted,
        algorithms=algorithms,
        accept_sdk_form=accept_sdk_form,
    )
    report = verifier.inspect(_card(source))
    if as_json:
        emit_json({"ok": report.verified, **report.to_dict()})
    for check in report.checks:
        outcome = f"ok ({check.form} form)" if check.passed else f"failed: {check.code}"
        err(f"signature {check.index}: {check.kid or '?'} {outcome}")
    if not report.checks:
        err("the card carries no signature")
    if not report.verified:
        err("verification failed: no signature verifies with a trusted key")
        return EXIT_FAILED
    err(f"verified: signed by {report.signer}")
    return EXIT_OK
