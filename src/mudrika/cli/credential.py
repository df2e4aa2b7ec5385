"""``mudrika credential issue``: the SD-JWT VC a wallet's issuer gives the user, from the command line.

Why: ``mandate sign-payment`` presents the user's payment credential (an SD-JWT VC whose ``cnf``
is the user's key) with a key-binding JWT, and without a command that issues one the merchant →
user → analyst flow could only be run through the Python API.  The issuer's key is checked against
its ``--kid`` before signing (a DID issuer: resolved offline, from ``--did-document`` when it is not
did:key / did:jwk; an https issuer: the kid in the JWK Set it publishes, ``--jwks``), so a
credential signed with the wrong key is refused now rather than found in a dispute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mudrika.cli._common import (
    emit_json,
    json_option,
    load_signing_key,
    now_option,
    output_file_options,
    password_options,
    private_key_option,
    read_file,
    read_json_file,
    status_options,
    status_reference,
    write_output,
)
from mudrika.errors import InvalidInput

__all__ = ["credential_group"]

_MAX_FILE = 1024 * 1024


def _read_json(path: str) -> Any:
    return read_json_file(path, max_bytes=_MAX_FILE)


@click.group("credential")
def credential_group() -> None:
    """Issue SD-JWT VC payment credentials bound to a user's key (the wallet issuer's side)."""


@credential_group.command("issue")
@private_key_option("The issuer's private key: a path, file:PATH or env:VAR.")
@click.option("--issuer", required=True, help="The issuer identifier ('iss'): a DID or an https URL.")
@click.option(
    "--kid",
    required=True,
    help="The issuer key's id: a DID URL of --issuer, or the 'kid' in the issuer's JWK Set.",
)
@click.option(
    "--holder-did",
    help="The user's did:key / did:jwk: its key becomes cnf.jwk (and 'sub' unless --subject).",
)
@click.option(
    "--holder-key",
    "holder_key_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The user's public key (PEM) for cnf.jwk, instead of --holder-did.",
)
@click.option("--subject", help="'sub' of the credential (default: --holder-did when given).")
@click.option(
    "--claims",
    "claims_file",
    metavar="FILE",
    help="A JSON object of further claims (name, card art ...).",
)
@click.option(
    "--disclosable",
    multiple=True,
    metavar="POINTER",
    help="Make this claim selectively disclosable (RFC 6901 pointer into --claims, e.g. /email); repeatable.",
)
@click.option("--vct", help="Credential type. Default: mudrika's payment-user credential type.")
@click.option(
    "--ttl",
    type=click.IntRange(60, 5 * 366 * 86400),
    default=30 * 86400,
    show_default=True,
    help="Lifetime in seconds.",
)
@now_option("Issuance time (ISO 8601 or UNIX seconds). Default: now.")
@click.option(
    "--jwks",
    "jwks_file",
    metavar="FILE",
    help="The https issuer's published JWK Set: --key must be the key listed under --kid.",
)
@click.option(
    "--did-document",
    "did_document_file",
    metavar="FILE",
    help="The DID issuer's DID document (not needed for did:key / did:jwk).",
)
@status_options("the credential")
@output_file_options("the credential")
@json_option(help_text="Print {credential, issuer, holder_thumbprint, ...} as JSON.")
@password_options
def issue_command(
    key_uri: str,
    issuer: str,
    kid: str,
    holder_did: str | None,
    holder_key_file: Path | None,
    subject: str | None,
    claims_file: str | None,
    disclosable: tuple[str, ...],
    vct: str | None,
    ttl: int,
    now_text: str | None,
    jwks_file: str | None,
    did_document_file: str | None,
    status_uri: str | None,
    status_index: int | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
    password_env: str | None,
    password_file: Path | None,
) -> None:
    """Issue the user's payment credential (SD-JWT VC, cnf = the user's key) in compact form.

    The output (<issuer-jwt>~<disclosure>~...~) is what `mudrika mandate sign-payment --credential`
    reads. The issuer key must be the one --kid names (checked offline before signing).
    """
    from mudrika.cli._keycheck import check_key_matches, did_documents
    from mudrika.cli._mandates import signing_time
    from mudrika.crypto.keys import PublicKey
    from mudrika.identity.resolver import DIDResolver
    from mudrika.payments.profile import PAYMENT_CREDENTIAL_VCT
    from mudrika.payments.signing import issue_user_credential

    if (holder_did is None) == (holder_key_file is None):
        raise click.UsageError("give the user's key with exactly one of --holder-did or --holder-key")
    status = status_reference(status_uri, status_index)
    if holder_did is not None:
        if not holder_did.startswith(("did:key:", "did:jwk:")):
            raise click.BadParameter(
                "a did:key or did:jwk (its key is computed offline)", param_hint="--holder-did"
            )
        document = DIDResolver.offline({}).resolve(holder_did).document
        methods = document.verification_methods or ()
        if not methods:
            raise InvalidInput("the holder DID has no key", code="key_not_in_did", did=holder_did)
        holder = methods[0].public_key()
        if not isinstance(holder, PublicKey):
            raise InvalidInput("the holder DID's key cannot sign", code="bad_holder_key", did=holder_did)
    else:
        assert holder_key_file is not None
        holder = PublicKey.from_pem(read_file(holder_key_file, max_bytes=_MAX_FILE))
    claims = _read_json(claims_file) if claims_file is not None else {}
    if not isinstance(claims, dict):
        raise InvalidInput("--claims must hold a JSON object", code="not_an_object")
    now = signing_time(now_text)
    pair = load_signing_key(key_uri, password_env, password_file)
    if issuer.startswith("did:"):
        if not kid.startswith(issuer + "#"):
            raise click.BadParameter(f"a DID URL of {issuer} (e.g. {issuer}#key-1)", param_hint="--kid")
        documents = did_documents([did_document_file] if did_document_file else [], _read_json)
        check_key_matches(pair, kid=kid, documents=documents)
    else:
        if jwks_file is None:
            raise InvalidInput(
                "cannot check the issuer key of an https issuer without its JWK Set: give --jwks FILE",
                code="jwks_needed",
                option="--jwks",
            )
        _check_jwks(pair.public_key, kid, _read_json(jwks_file))
    credential = issue_user_credential(
        issuer_key=pair,
        issuer=issuer,
        kid=kid,
        user_key=holder,
        now=now,
        ttl=ttl,
        subject=subject or holder_did,
        claims=claims,
        disclosable=disclosable,
        vct=vct or PAYMENT_CREDENTIAL_VCT,
        status=status,
    )
    compact = credential.compact()
    if out_path is not None:
        write_output(out_path, (compact + "\n").encode("ascii"), force=force)
    if as_json:
        emit_json(
            {
                "credential": compact,
                "issuer": issuer,
                "kid": kid,
                "vct": vct or PAYMENT_CREDENTIAL_VCT,
                "holder_thumbprint": holder.thumbprint(),
                "disclosable": list(credential.disclosable_paths),
                "status": status.to_claim() if status is not None else None,
            }
        )
    elif out_path is None:
        click.echo(compact)


def _check_jwks(key: Any, kid: str, jwks: Any) -> None:
    """The JWK Set verifiers will use must list ``key`` under ``kid``; read by the same rules a
    verifier applies (one key per kid, signing keys only)."""
    from mudrika.crypto.jose import ASYMMETRIC_ALGORITHMS
    from mudrika.trust.keycloak.jwks import parse_jwks

    listed = parse_jwks(jwks, algorithms=ASYMMETRIC_ALGORITHMS).get(kid)
    if listed is None:
        raise InvalidInput(
            f"the JWK Set lists no signing key with kid {kid}", code="key_not_in_jwks", kid=kid
        )
    if listed.key != key:
        raise InvalidInput(
            f"the key given with --key is not the key the JWK Set lists under {kid}",
            code="key_mismatch",
            kid=kid,
            got_thumbprint=key.thumbprint(),
        )
