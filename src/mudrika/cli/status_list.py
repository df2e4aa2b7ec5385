"""``mudrika status-list``: keep an issuer's Token Status List, sign it, and check a credential against it.

Why a command group: an issuer that puts ``status.status_list`` into the credentials it issues
(``credential issue --status-uri --status-index``) must also keep the list those point into, flip an
entry when it revokes or suspends a credential, and publish the re-signed token
(draft-ietf-oauth-status-list-20).  A verifier, or an analyst months later, checks a credential
against such a token with the issuer's key — never with a key the token names.

The list file (``mudrika.status-list/v1``) is JSON: ``{format, uri, bits, size, lst}`` with ``lst``
exactly as a Status List Token carries it, so the file is the token's payload minus the signature.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import click

from mudrika.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    did_documents_option,
    emit_json,
    err,
    force_option,
    json_option,
    load_signing_key,
    now_option,
    output_file_options,
    password_options,
    private_key_option,
    read_file,
    read_json_file,
    write_output,
)
from mudrika.errors import InvalidInput

__all__ = ["status_list_group"]

FORMAT: Final = "mudrika.status-list/v1"
_MAX_FILE: Final = 16 * 1024 * 1024
_NAMES: Final = {0: "VALID", 1: "INVALID", 2: "SUSPENDED", 3: "APPLICATION_SPECIFIC"}
_VALUE_WORDS: Final = {"valid": 0, "invalid": 1, "revoked": 1, "suspended": 2}


def _name(value: int) -> str:
    return _NAMES.get(value, "APPLICATION_SPECIFIC" if 0x0C <= value <= 0x0F else "RESERVED")


def _read_list(path: Path) -> tuple[str, Any]:
    """``(uri, StatusList)`` from a list file, refusing anything that is not one."""
    from mudrika.crypto.statuslist import StatusList, StatusReference

    document = read_json_file(path, max_bytes=_MAX_FILE)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidInput(f"{path} is not a {FORMAT} file", code="bad_status_list_file")
    uri, size = document.get("uri"), document.get("size")
    if not isinstance(uri, str) or isinstance(size, bool) or not isinstance(size, int):
        raise InvalidInput(f"{path} needs 'uri' and 'size'", code="bad_status_list_file")
    StatusReference(0, uri)
    status_list = StatusList.decode(document.get("lst"), document.get("bits"))
    return uri, StatusList.from_bytes(status_list.to_bytes(), status_list.bits, size=size)


def _list_document(uri: str, status_list: Any) -> bytes:
    document = {"format": FORMAT, "uri": uri, "size": status_list.size, **status_list.to_json()}
    return (json.dumps(document, indent=2) + "\n").encode("ascii")


def _summary(uri: str, status_list: Any) -> dict[str, Any]:
    counts = status_list.counts()
    return {
        "uri": uri,
        "bits": status_list.bits,
        "size": status_list.size,
        "counts": {_name(value) if value < 4 else f"0x{value:02x}": n for value, n in counts.items()},
    }


@click.group("status-list")
def status_list_group() -> None:
    """Keep, sign and check IETF Token Status Lists (revocation and suspension of credentials)."""


@status_list_group.command("create")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--uri", required=True, help="The list's URI: what credentials name and the token's 'sub'.")
@click.option("--size", type=click.IntRange(1, 1 << 28), required=True, help="Number of entries.")
@click.option(
    "--bits",
    type=click.Choice(["1", "2", "4", "8"]),
    default="1",
    show_default=True,
    help="Bits per entry (2 or more to hold SUSPENDED).",
)
@force_option("an existing list file")
@json_option("the list's metadata")
def create_command(path: Path, uri: str, size: int, bits: str, force: bool, as_json: bool) -> None:
    """Create a list file of SIZE entries, all VALID."""
    from mudrika.crypto.statuslist import StatusList, StatusReference

    StatusReference(0, uri)
    status_list = StatusList(size, int(bits))
    write_output(path, _list_document(uri, status_list), force=force)
    if as_json:
        emit_json(_summary(uri, status_list))


@status_list_group.command("set")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("index", type=click.IntRange(0, None))
@click.argument("value")
@json_option("the entry and the list's counts")
def set_command(path: Path, index: int, value: str, as_json: bool) -> None:
    """Set entry INDEX to VALUE (valid, invalid/revoked, suspended, or a number) in place."""
    word = value.strip().lower()
    if word in _VALUE_WORDS:
        number = _VALUE_WORDS[word]
    elif word.isdigit() or (word.startswith("0x") and len(word) > 2):
        number = int(word, 0)
    else:
        raise click.BadParameter("valid, invalid, revoked, suspended or a number", param_hint="VALUE")
    uri, status_list = _read_list(path)
    previous = status_list.get(index)
    status_list.set(index, number)
    write_output(path, _list_document(uri, status_list), force=True)
    if as_json:
        emit_json({"index": index, "previous": previous, "value": number, **_summary(uri, status_list)})
    else:
        err(f"entry {index}: {_name(previous)} -> {_name(number)}")


@status_list_group.command("show")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@json_option("the metadata and counts")
def show_command(path: Path, as_json: bool) -> None:
    """Show a list file's URI, bits, size and how many entries hold each value."""
    uri, status_list = _read_list(path)
    summary = _summary(uri, status_list)
    if as_json:
        emit_json(summary)
        return
    err(f"{uri}: {status_list.size} entries of {status_list.bits} bit(s)")
    for name, count in summary["counts"].items():
        err(f"  {name}: {count}")


@status_list_group.command("sign")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@private_key_option("The issuer's private key: a path, file:PATH or env:VAR (the credentials' issuer).")
@click.option("--kid", help="The issuer key's id (a DID URL, or its JWK Set kid) for the header.")
@click.option("--issuer", help="Optional 'iss' claim (the credentials' issuer).")
@click.option(
    "--ttl",
    type=click.IntRange(1, None),
    default=3600,
    show_default=True,
    help="'ttl': seconds a client may cache the token.",
)
@click.option(
    "--lifetime",
    type=click.IntRange(1, None),
    default=86400,
    show_default=True,
    help="'exp' = 'iat' + this many seconds.",
)
@now_option("Issuance time 'iat' (ISO 8601 or UNIX seconds). Default: now.")
@output_file_options("the status list token")
@json_option(help_text='Print {"token", "uri", "written"} as one JSON document.')
@password_options
def sign_command(
    path: Path,
    key_uri: str,
    kid: str | None,
    issuer: str | None,
    ttl: int,
    lifetime: int,
    now_text: str | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
    password_env: str | None,
    password_file: Path | None,
) -> None:
    """Sign the list as a Status List Token (typ statuslist+jwt) to publish at its URI."""
    from mudrika.cli._mandates import signing_time
    from mudrika.crypto.statuslist import sign_status_list_token

    uri, status_list = _read_list(path)
    iat = int(signing_time(now_text).timestamp())
    pair = load_signing_key(key_uri, password_env, password_file)
    token = sign_status_list_token(
        status_list, key=pair, uri=uri, iat=iat, exp=iat + lifetime, ttl=ttl, kid=kid, issuer=issuer
    )
    written = None
    if out_path is not None:
        written = str(write_output(out_path, (token + "\n").encode("ascii"), force=force))
    if as_json:
        emit_json({"token": token, "uri": uri, "written": written})
    elif out_path is None:
        click.echo(token)


def _trusted_key(
    issuer_key_file: Path | None, kid: str | None, documents: tuple[str, ...], algorithms: tuple[str, ...]
) -> Any:
    """The issuer's key as the verifier trusts it: a PEM file, or a DID URL resolved offline."""
    from mudrika.crypto.jose import TrustedKey, asymmetric_allow_list
    from mudrika.crypto.keys import PublicKey

    if (issuer_key_file is None) == (kid is None):
        raise click.UsageError("give the issuer's key with exactly one of --issuer-key or --kid")
    if issuer_key_file is not None:
        public = PublicKey.from_pem(read_file(issuer_key_file, max_bytes=64 * 1024))
        trusted_kid = None
    else:
        from mudrika.cli._keycheck import did_documents
        from mudrika.crypto.keys import ALL_ALGORITHMS
        from mudrika.identity.anchoring import resolve_anchored
        from mudrika.identity.resolver import DIDResolver

        snapshot = did_documents(documents, lambda p: read_json_file(p, max_bytes=1024 * 1024))
        # The one anchoring rule: the kid must be an absolute DID URL of the DID it names, listed
        # under assertionMethod in that DID's (offline) document.
        public = resolve_anchored(
            DIDResolver.offline(snapshot),
            kid,
            trusted_owners=None,
            relationship="assertionMethod",
            algorithms=ALL_ALGORITHMS,
        ).key
        trusted_kid = kid
    allowed = (
        asymmetric_allow_list(algorithms, refusal="--alg must name asymmetric algorithms")
        if algorithms
        else frozenset({public.default_algorithm})
    )
    return TrustedKey(key=public, algorithms=allowed, kid=trusted_kid)


@status_list_group.command("check")
@click.option(
    "--token",
    "token_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The Status List Token (a file). Without it, the token is fetched from the URI.",
)
@click.option(
    "--credential",
    "credential_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The credential (SD-JWT or JWT) whose status.status_list to check.",
)
@click.option("--idx", type=click.IntRange(0, None), help="The index to check (instead of --credential).")
@click.option("--uri", help="The list's URI (with --idx).")
@click.option(
    "--issuer-key",
    "issuer_key_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The credential issuer's public key (PEM).",
)
@click.option("--kid", help="The credential issuer's key as a DID URL (resolved offline).")
@did_documents_option("The issuer's DID document, for a DID that is not did:key / did:jwk (repeatable).")
@click.option("--issuer", help="Expected 'iss' of the list token (when it carries one).")
@click.option("--alg", "algorithms", multiple=True, help="An accepted algorithm (default: the key's own).")
@click.option(
    "--max-age",
    type=click.FloatRange(1, None),
    default=86400.0,
    show_default=True,
    help="Refuse a list token issued longer ago than this (seconds).",
)
@now_option(
    "Judge the list as of this time, e.g. the purchase (ISO 8601 or UNIX seconds): the list "
    "must have been current then (iat <= TIME < exp). Default: now."
)
@click.option(
    "--allow-private-networks",
    is_flag=True,
    help="Development only: let the fetch reach loopback and private addresses.",
)
@json_option("the status and the list token's metadata")
def check_command(
    token_file: Path | None,
    credential_file: Path | None,
    idx: int | None,
    uri: str | None,
    issuer_key_file: Path | None,
    kid: str | None,
    did_document_files: tuple[str, ...],
    issuer: str | None,
    algorithms: tuple[str, ...],
    max_age: float,
    now_text: str | None,
    allow_private_networks: bool,
    as_json: bool,
) -> int:
    """Check a credential (or --idx/--uri) against a Status List Token signed by its issuer; exit 0
    only when the entry is VALID."""
    from mudrika.cli._mandates import signing_time
    from mudrika.crypto.jose import verify_compact
    from mudrika.crypto.statuslist import StatusReference, read_status_reference, verify_status_list_token

    if (credential_file is None) == (idx is None and uri is None):
        raise click.UsageError("give either --credential or --idx with --uri")
    if credential_file is None and (idx is None or uri is None):
        raise click.UsageError("--idx and --uri go together")
    trusted = _trusted_key(issuer_key_file, kid, did_document_files, algorithms)
    now = signing_time(now_text).timestamp()
    if credential_file is not None:
        # The Referenced Token is validated first (§8.3): its issuer JWT must verify under the same
        # issuer key the list must be signed with.
        from mudrika.crypto.jcs import loads_strict

        text = read_file(credential_file, max_bytes=1024 * 1024).decode("ascii", "replace").strip()
        issuer_jwt = text.split("~", 1)[0]
        payload = verify_compact(issuer_jwt, key=trusted).payload
        claims = loads_strict(payload)
        if not isinstance(claims, dict):
            raise InvalidInput("the credential's payload is not a JSON object", code="malformed_jwt")
        reference = read_status_reference(claims)
    else:
        assert idx is not None
        assert uri is not None
        reference = StatusReference(idx, uri)
    if token_file is not None:
        token = read_file(token_file, max_bytes=16 * 1024 * 1024).strip()
    else:
        from mudrika.identity.statuslist import StatusListClient
        from mudrika.net.egress import EgressPolicy

        egress = EgressPolicy(
            allow_private_networks=allow_private_networks,
            schemes=("https", "http") if allow_private_networks else ("https",),
        )
        token = StatusListClient(egress=egress).fetch(reference.uri)
    verified = verify_status_list_token(
        token,
        key=trusted,
        uri=reference.uri,
        issuer=issuer,
        now=now,
        max_age=max_age,
    )
    value = verified.status_of(reference.idx)
    result = {
        "ok": value == 0,
        "valid": value == 0,
        "status": value,
        "status_name": _name(value),
        "idx": reference.idx,
        "uri": reference.uri,
        "list_iat": verified.issued_at,
        "list_exp": verified.expires_at,
        "list_ttl": verified.ttl,
    }
    if as_json:
        emit_json(result)
    err(f"entry {reference.idx} of {reference.uri}: {_name(value)}")
    return EXIT_OK if value == 0 else EXIT_FAILED
