"""``mudrika keys``: generate an agent's signing key into a private directory.

The key classes (and cryptography behind them) are imported inside the command, so that
``mudrika keys --help`` starts without them.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from mudrika.cli._choices import key_type_options
from mudrika.cli._common import (
    emit_json,
    err,
    force_option,
    json_option,
    key_directory_option,
    password_options,
    read_password,
)

__all__ = ["keys_group"]

PRIVATE_KEY_FILE = "private.pem"
PUBLIC_KEY_FILE = "public.pem"


@click.group("keys")
def keys_group() -> None:
    """Create and inspect signing keys (Ed25519, P-256, secp256k1, RSA)."""


@keys_group.command("generate")
@key_type_options("Key type. ed25519 is the smallest and fastest; p256 is the AP2 default for merchants.")
@key_directory_option("Directory for private.pem (encrypted PKCS#8, mode 0600) and public.pem; created 0700.")
@force_option("existing key files (default: refuse to overwrite)")
@json_option("the result")
@password_options
def generate(
    key_type: str,
    rsa_bits: str,
    out_dir: Path,
    force: bool,
    as_json: bool,
    password_env: str | None,
    password_file: Path | None,
) -> None:
    """Generate a key pair; the private key is always written encrypted with your password."""
    from mudrika.crypto.keys import KeyPair, KeyType
    from mudrika.crypto.keystore import write_file_atomic, write_private_key

    password = read_password(password_env, password_file, confirm=True)
    pair = KeyPair.generate(KeyType(key_type), rsa_bits=int(rsa_bits))
    private_path = write_private_key(out_dir / PRIVATE_KEY_FILE, pair, password, force=force)
    public_path = write_file_atomic(out_dir / PUBLIC_KEY_FILE, pair.public_key.to_pem(), force=force)
    result = {
        "key_type": pair.key_type.value,
        "thumbprint": pair.public_key.thumbprint(),
        "public_key_multibase": pair.public_key.to_multikey(),
        "public_jwk": pair.public_key.to_jwk(),
        "private_key": str(private_path),
        "public_key": str(public_path),
    }
    err(f"wrote {private_path} (encrypted, 0600) and {public_path}")
    if as_json:
        emit_json(result)


@keys_group.command("inspect")
@click.argument("source", metavar="KEY")
@json_option("the key's public facts")
@password_options
def inspect_command(source: str, as_json: bool, password_env: str | None, password_file: Path | None) -> None:
    """Show a key's type, RFC 7638 thumbprint, did:key and public JWK (never its private part).

    KEY is a public key (PEM, or a JWK file) or a private key named the way every --key is (a path,
    file:PATH or env:VAR; encrypted, so its password comes from --password-env/--password-file).
    """
    from mudrika.cli._common import read_json_file
    from mudrika.crypto.keys import PublicKey
    from mudrika.crypto.keystore import read_key_uri
    from mudrika.identity.provision import create_did

    public: PublicKey
    kind = "public"
    candidate = Path(source)
    text = candidate.read_bytes() if candidate.is_file() and candidate.stat().st_size <= 64 * 1024 else b""
    if b"PUBLIC KEY" in text:
        public = PublicKey.from_pem(text)
    elif text.lstrip().startswith(b"{"):
        public = PublicKey.from_jwk(read_json_file(source, max_bytes=64 * 1024))
    else:
        from mudrika.crypto.keys import KeyPair

        data = read_key_uri(source)  # the private file's permissions are checked here
        public = KeyPair.from_pem(data, read_password(password_env, password_file)).public_key
        kind = "private"
    result = {
        "kind": kind,
        "key_type": public.key_type.value,
        "thumbprint": public.thumbprint(),
        "did_key": create_did(public, "key"),
        "public_key_multibase": public.to_multikey(),
        "public_jwk": public.to_jwk(),
    }
    if as_json:
        emit_json(result)
        return
    for name in ("kind", "key_type", "thumbprint", "did_key", "public_key_multibase"):
        click.echo(f"{name}: {result[name]}")
    click.echo("public_jwk: " + json.dumps(result["public_jwk"], sort_keys=True))
