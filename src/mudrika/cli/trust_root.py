"""``mudrika trust-root``: write and read the analyst's trust root (the keys and policy you trust).

Why a command group: a dispute verdict is only as good as the keys it rests on, and those must be
chosen by the analyst, before the dispute, never taken from the evidence.  ``init`` writes a new
``mudrika.trust-root/v1`` file with the policy (algorithms, accepted credential types, leeway,
maximum ages, legacy chains, the audiences you verify as); ``add-issuer`` pins a credential issuer's
JWK Set or DID document; ``add-merchant`` pins a merchant's DID document or JWK Set; ``show`` lists
every pinned key with its RFC 7638 thumbprint, so it can be compared with the party out of band.

Every change re-validates the whole file (the same strict loader the verifier uses) before it is
written, atomically.  The payments modules are imported inside the commands, so that
``mudrika trust-root --help`` starts without them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from mudrika.cli._common import audience_options, emit_json, err, force_option, json_option, read_json_file

__all__ = ["trust_root_group"]

_MAX_INPUT = 1024 * 1024

_F = TypeVar("_F", bound=Callable[..., Any])


def _load_document(path: Path) -> dict[str, Any]:
    """The trust-root file as a plain JSON object (validated: a broken file is never edited)."""
    from mudrika.payments.trustroot import load_trust_root

    root = load_trust_root(path)
    document: dict[str, Any] = json.loads(root.to_json())
    return document


def _write(path: Path, document: dict[str, Any], *, force: bool) -> None:
    """Validate ``document`` strictly, then write it atomically."""
    from mudrika.crypto.keystore import write_file_atomic
    from mudrika.payments.trustroot import parse_trust_root

    root = parse_trust_root(document)
    write_file_atomic(path, (root.to_json() + "\n").encode("utf-8"), force=force, private_dir=False)
    err(f"wrote {path} (trust root {root.fingerprint})")


def _key_material(jwks: Path | None, did_document: Path | None) -> dict[str, Any]:
    if jwks is not None and did_document is not None:
        raise click.UsageError("give --jwks or --did-document, not both")
    if jwks is not None:
        return {"jwks": read_json_file(jwks, max_bytes=_MAX_INPUT)}
    if did_document is not None:
        return {"did_document": read_json_file(did_document, max_bytes=_MAX_INPUT)}
    return {}


def _jwks_option(help_text: str) -> Callable[[_F], _F]:
    """``--jwks FILE``: the JWK Set pinned for an issuer or a merchant (a snapshot, read now)."""
    return click.option(
        "--jwks", type=click.Path(dir_okay=False, exists=True, path_type=Path), help=help_text
    )


def _did_document_option(help_text: str) -> Callable[[_F], _F]:
    """``--did-document FILE``: the DID document snapshot pinned for an issuer or a merchant."""
    return click.option(
        "--did-document", type=click.Path(dir_okay=False, exists=True, path_type=Path), help=help_text
    )


#: ``--source``: where the pinned key material came from, recorded with it and shown in reports.
_source_option = click.option("--source", help="Where and when you obtained these keys (shown in reports).")


def _pin(
    path: Path,
    section: str,
    name: str,
    *,
    jwks: Path | None,
    did_document: Path | None,
    source: str | None,
    vcts: tuple[str, ...] = (),
) -> None:
    """Put ``name`` with its key material into ``section`` (issuers or merchants) of FILE, replacing it.

    Why one function: an issuer and a merchant are pinned the same way (the validated file is read,
    the entry rebuilt from the options, the whole file validated again and written); only issuers
    carry their own accepted credential types.
    """
    document = _load_document(path)
    entry = _key_material(jwks, did_document)
    if vcts:
        entry["vct"] = list(vcts)
    if source is not None:
        entry["source"] = source
    document[section][name] = entry
    _write(path, document, force=True)


@click.group("trust-root")
def trust_root_group() -> None:
    """Write and inspect your trust root: the issuers, merchants and policy dispute verdicts rest on."""


@trust_root_group.command("init")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--description", help="Free text: whose trust root this is and what it is for.")
@click.option(
    "--vct",
    "vcts",
    multiple=True,
    help="A credential type (vct) accepted from every issuer without its own list (repeatable). "
    "Default: the profile's payment credential.",
)
@click.option(
    "--algorithm",
    "algorithms",
    multiple=True,
    help="Accepted JWS algorithm (repeatable). Default: ES256, ES256K, EdDSA, Ed25519.",
)
@click.option("--leeway", type=click.FloatRange(0, 30), default=0.0, show_default=True, help="Seconds.")
@click.option(
    "--kb-max-age",
    type=click.FloatRange(1, 86400),
    default=300.0,
    show_default=True,
    help="Oldest acceptable key-binding JWT (seconds before the evaluation time).",
)
@click.option("--intent-max-age", type=click.FloatRange(1, 366 * 86400), help="Oldest acceptable intent JWS.")
@audience_options(
    merchant="The 'aud' merchants' cart JWTs must carry (who you verify as).",
    kb="The 'aud' users' key-binding JWTs must carry (who you verify as).",
)
@click.option(
    "--accept-legacy-unbound-intent",
    is_flag=True,
    help="Accept legacy v0.1 chains whose key-binding JWT does not cover the intent (reported in words).",
)
@force_option("an existing file")
def init_command(
    path: Path,
    description: str | None,
    vcts: tuple[str, ...],
    algorithms: tuple[str, ...],
    leeway: float,
    kb_max_age: float,
    intent_max_age: float | None,
    merchant_aud: str | None,
    kb_aud: str | None,
    accept_legacy_unbound_intent: bool,
    force: bool,
) -> None:
    """Write a new trust root FILE with no issuers or merchants yet, and the policy given."""
    from mudrika.payments.profile import PAYMENT_CREDENTIAL_VCT
    from mudrika.payments.trustroot import TRUST_ROOT_FORMAT

    document: dict[str, Any] = {
        "format": TRUST_ROOT_FORMAT,
        "issuers": {},
        "merchants": {},
        "accepted_vct": list(vcts) or [PAYMENT_CREDENTIAL_VCT],
        "leeway_seconds": leeway,
        "max_age_seconds": {"key_binding": kb_max_age},
        "verifier": {},
        "accept_legacy_unbound_intent": accept_legacy_unbound_intent,
    }
    if description is not None:
        document["description"] = description
    if algorithms:
        document["algorithms"] = list(algorithms)
    if intent_max_age is not None:
        document["max_age_seconds"]["intent"] = intent_max_age
    if merchant_aud is not None:
        document["verifier"]["merchant_audience"] = merchant_aud
    if kb_aud is not None:
        document["verifier"]["kb_audience"] = kb_aud
    _write(path, document, force=force)


@trust_root_group.command("add-issuer")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.argument("issuer")
@_jwks_option("The issuer's JWK Set.")
@_did_document_option("A snapshot of the issuer's DID document (an issuer identified by a DID).")
@click.option(
    "--vct", "vcts", multiple=True, help="A credential type accepted from this issuer (repeatable)."
)
@_source_option
def add_issuer_command(
    path: Path,
    issuer: str,
    jwks: Path | None,
    did_document: Path | None,
    vcts: tuple[str, ...],
    source: str | None,
) -> None:
    """Pin credential issuer ISSUER (its 'iss') in FILE, with its keys; replaces an earlier entry.

    Give --jwks for an https issuer, --did-document for a DID issuer, or neither for a did:key /
    did:jwk issuer (its key is the identifier).
    """
    _pin(path, "issuers", issuer, jwks=jwks, did_document=did_document, source=source, vcts=vcts)


@trust_root_group.command("add-merchant")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.argument("did")
@_did_document_option("A snapshot of the merchant's DID document.")
@_jwks_option("A JWK Set of the merchant's signing keys (kid: DID URLs of DID, or #fragments).")
@_source_option
def add_merchant_command(
    path: Path, did: str, did_document: Path | None, jwks: Path | None, source: str | None
) -> None:
    """Pin merchant DID in FILE with a snapshot of its cart-signing keys; replaces an earlier entry."""
    _pin(path, "merchants", did, jwks=jwks, did_document=did_document, source=source)


@trust_root_group.command("show")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@json_option(help_text="Print the pinned keys and policy as JSON on stdout.")
def show_command(path: Path, as_json: bool) -> None:
    """List FILE's policy and every pinned key with its RFC 7638 thumbprint."""
    from mudrika.payments.trustroot import load_trust_root

    root = load_trust_root(path)
    rows = root.pinned_keys()
    policy = {
        "fingerprint": root.fingerprint,
        "algorithms": list(root.algorithms),
        "accepted_vct": list(root.accepted_vct),
        "leeway_seconds": root.leeway_seconds,
        "max_age_seconds": root.max_age_seconds.model_dump(exclude_none=True),
        "verifier": root.verifier.model_dump(exclude_none=True),
        "accept_legacy_unbound_intent": root.accept_legacy_unbound_intent,
    }
    if as_json:
        emit_json(
            {
                **policy,
                "keys": [
                    {"role": role, "owner": owner, "kid": kid, "thumbprint": thumbprint}
                    for role, owner, kid, thumbprint in rows
                ],
            }
        )
        return
    # One line per key, never wrapped: thumbprints are compared with the party out of band.
    err(f"trust root {path}")
    for role, owner, kid, thumbprint in rows:
        err(f"  {role}: {owner} kid={kid} thumbprint={thumbprint}")
    for name, value in policy.items():
        err(f"{name}: {value}")
