"""``mudrika did``: create a DID for a key, or resolve one.

The identity modules (pydantic models, cryptography, httpx, didkit) are imported inside the
commands, so that ``mudrika did --help`` starts without them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from mudrika.cli._choices import did_method_option
from mudrika.cli._common import (
    did_web_options,
    emit_json,
    err,
    force_option,
    json_option,
    password_options,
    read_json_file,
    read_password,
)
from mudrika.errors import InvalidInput

if TYPE_CHECKING:
    from mudrika.crypto.keys import PublicKey

__all__ = ["did_group"]

_MAX_KEY_FILE = 64 * 1024
_MAX_SNAPSHOT = 10 * 1024 * 1024


def _public_key(key: str, password_env: str | None, password_file: Path | None) -> PublicKey:
    """A public PEM is used as is; a private key (a path, file:PATH or env:VAR, as every --key) is
    unlocked only to derive its public half."""
    from mudrika.crypto.keys import PublicKey
    from mudrika.crypto.keystore import load_private_key

    if key.startswith(("env:", "file:")):
        return load_private_key(key, read_password(password_env, password_file)).public_key
    path = Path(key)
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_KEY_FILE + 1)  # never more than the cap, whatever the file holds
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", code="not_found") from None
    if b"PRIVATE KEY" in data:
        return load_private_key(path, read_password(password_env, password_file)).public_key
    return PublicKey.from_pem(data)


@click.group("did")
def did_group() -> None:
    """Create and resolve DIDs (did:key, did:jwk, did:web, did:bindu; methods you name through didkit)."""


@did_group.command("create")
@did_method_option()
@click.option(
    "--key",
    "key_uri",
    required=True,
    help="public.pem, or the private key: a path, file:PATH or env:VAR (then a password source is needed).",
)
@click.option("--author", help="did:bindu: the author (e.g. an e-mail address; sanitised the Bindu way).")
@click.option("--name", "agent_name", help="did:bindu: the agent name.")
@did_web_options(
    host="did:web: the domain that serves did.json.", path="did:web: optional path, e.g. agents/payments."
)
@click.option("--endpoint", help="did:web/did:bindu: the agent's A2A endpoint, listed as a service.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the DID document here (did:web: at its .well-known/ or path location).",
)
@force_option("an existing document file")
@json_option(help_text="Print {did, did_document} as one JSON document.")
@password_options
def create(
    method: str,
    key_uri: str,
    author: str | None,
    agent_name: str | None,
    host: str | None,
    web_path: str | None,
    port: int | None,
    endpoint: str | None,
    out: Path | None,
    force: bool,
    as_json: bool,
    password_env: str | None,
    password_file: Path | None,
) -> None:
    """Derive the DID and DID document for a key."""
    from mudrika.crypto.keystore import write_file_atomic
    from mudrika.identity.methods import web
    from mudrika.identity.provision import DidMethod, agent_document, create_did

    public = _public_key(key_uri, password_env, password_file)
    did = create_did(
        public,
        cast(DidMethod, method),
        author=author,
        agent_name=agent_name,
        web_host=host,
        web_path=web_path,
        web_port=port,
    )
    document = agent_document(did, public, endpoint=endpoint)
    if out is not None:
        if method == "web":
            written = web.write_document(did, document, out, force=force)
        else:
            data = (json.dumps(document.to_json(), indent=2, ensure_ascii=False) + "\n").encode()
            written = write_file_atomic(out / "did.json", data, force=force, private_dir=False)
        err(f"wrote {written}")
    if as_json:
        emit_json({"did": did, "did_document": document.to_json()})
    else:
        click.echo(did)


@did_group.command("resolve")
@click.argument("did")
@click.option(
    "--snapshot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Resolve offline from this JSON file mapping DIDs to DID documents (never touches the network).",
)
@json_option(help_text="Print the full resolution result (document + metadata).")
@click.option(
    "--allow-private-network",
    is_flag=True,
    help="Development only: let did:web reach loopback and private addresses (logged as a warning).",
)
@click.option(
    "--didkit-method",
    "didkit_methods",
    multiple=True,
    metavar="METHOD",
    help="Resolve this DID method (e.g. pkh) through didkit, which dials out by itself, outside the "
    "egress policy; repeatable.  Without it only did:key, did:jwk and did:web are resolved.",
)
def resolve(
    did: str,
    snapshot: Path | None,
    as_json: bool,
    allow_private_network: bool,
    didkit_methods: tuple[str, ...],
) -> None:
    """Resolve DID to its DID document (did:key/did:jwk locally, did:web over HTTPS, the methods named
    with --didkit-method via didkit).

    did:web goes through the egress policy: loopback, private, link-local and metadata addresses are
    refused unless --allow-private-network is given.  Any other method is refused
    (methodNotSupported) unless named with --didkit-method: didkit is never a silent fallback, since
    it dials whatever a method implies (did:onion: the local Tor proxy) without the egress policy.
    """
    from mudrika.identity.resolver import DIDResolver
    from mudrika.net.egress import EgressPolicy

    if snapshot is not None:
        if didkit_methods:
            raise click.UsageError("--snapshot resolves offline; --didkit-method would dial out")
        documents: Any = read_json_file(snapshot, max_bytes=_MAX_SNAPSHOT)
        if not isinstance(documents, dict):
            raise InvalidInput("a snapshot is a JSON object mapping DIDs to documents", code="bad_snapshot")
        resolver = DIDResolver.offline(documents)
    else:
        # didkit only for the methods the user named on this command line.
        egress = EgressPolicy(allow_private_networks=allow_private_network)
        resolver = DIDResolver(didkit_methods=didkit_methods, egress=egress)
    result = resolver.resolve(did)
    if as_json:
        emit_json(
            {
                "didDocument": result.document.to_json(),
                "didDocumentMetadata": dict(result.document_metadata),
                "didResolutionMetadata": dict(result.resolution_metadata),
            }
        )
    else:
        click.echo(json.dumps(result.document.to_json(), indent=2, ensure_ascii=False))
