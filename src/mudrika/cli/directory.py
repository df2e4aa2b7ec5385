"""``mudrika directory serve|fetch|verify``: HTTP Message Signatures key directories.

Why in the CLI: a mudrika agent that browses Web Bot Auth sites must publish its keys at
``/.well-known/http-message-signatures-directory`` (``serve``), and an operator debugging a refused
agent needs to see what its directory actually answers, through the same fetcher and checks the
verifier uses (``fetch``: egress policy, no redirects, media type, size cap, possession proofs), or
check a saved response offline (``verify``).  Exit codes: 0 ok, 1 refused or unreachable, 2
malformed input or usage.
"""

from __future__ import annotations

import json
import ssl
import time
from pathlib import Path
from typing import Any

import click

from mudrika.cli._common import (
    EXIT_OK,
    emit_json,
    err,
    json_option,
    load_signing_key,
    password_options,
    read_json_file,
)

__all__ = ["directory_group"]

_MAX_RESPONSE_FILE = 512 * 1024


def _summary(directory: Any) -> dict[str, Any]:
    return {
        "agent": directory.ref.agent if directory.ref is not None else None,
        "url": directory.ref.url if directory.ref is not None else None,
        "keys": [
            {"thumbprint": tp, "kty": key.to_jwk()["kty"]} for tp, key in sorted(directory.keys.items())
        ],
        "signed": sorted(directory.signed),
    }


@click.group(name="directory")
def directory_group() -> None:
    """Serve, fetch and verify Web Bot Auth key directories (HTTP Message Signatures directories)."""


@directory_group.command(name="serve")
@click.option(
    "--key",
    "key_uris",
    multiple=True,
    required=True,
    help="An agent's private key: a path, file:PATH or env:VAR (repeatable).",
)
@click.option(
    "--authority", "authorities", multiple=True, required=True, help="HOST[:PORT] clients use (repeatable)."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8443, show_default=True, help="Port to listen on.")
@click.option(
    "--tls-cert", type=click.Path(dir_okay=False, path_type=Path), help="TLS certificate chain (PEM)."
)
@click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path), help="TLS private key (PEM).")
@click.option(
    "--max-age", type=int, default=86400, show_default=True, help="Cache-Control max-age of the directory."
)
@password_options
def serve_command(
    key_uris: tuple[str, ...],
    authorities: tuple[str, ...],
    host: str,
    port: int,
    tls_cert: Path | None,
    tls_key: Path | None,
    max_age: int,
    password_env: str | None,
    password_file: Path | None,
) -> int:
    """Serve the agent's public keys, each with a possession proof, until interrupted."""
    import uvicorn

    from mudrika.errors import InvalidInput
    from mudrika.trust.httpsig import directory_app

    pairs = [load_signing_key(uri, password_env, password_file) for uri in key_uris]
    if (tls_cert is None) != (tls_key is None):
        raise InvalidInput("--tls-cert and --tls-key go together", code="missing_option")
    app = directory_app(pairs, authorities=authorities, max_age=max_age)
    for pair in pairs:
        err(f"serving key {pair.public_key.thumbprint()}")
    tls: dict[str, Any] = {}
    if tls_cert is not None and tls_key is not None:
        tls = {"ssl_certfile": str(tls_cert), "ssl_keyfile": str(tls_key)}
    else:
        err("warning: no TLS: verifiers only fetch directories over https (put a TLS proxy in front)")
    uvicorn.run(app, host=host, port=port, log_level="warning", **tls)
    return EXIT_OK


@directory_group.command(name="fetch")
@click.argument("agent")
@click.option(
    "--type",
    "agent_type",
    type=click.Choice(["directory", "jwks_uri", "cimd"]),
    default="directory",
    show_default=True,
    help="How AGENT resolves to keys.",
)
@click.option("--require-signatures", is_flag=True, help="Keep only keys with a valid possession proof.")
@click.option(
    "--allow-private-networks", is_flag=True, help="Development: allow loopback and private addresses."
)
@click.option(
    "--ca-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Trust this CA bundle (PEM) instead of the system store.",
)
@json_option("the directory")
def fetch_command(
    agent: str,
    agent_type: str,
    require_signatures: bool,
    allow_private_networks: bool,
    ca_file: Path | None,
    as_json: bool,
) -> int:
    """Fetch an agent's key directory as a verifier would, and show its keys."""
    from mudrika.net.egress import EgressPolicy
    from mudrika.trust.httpsig import DirectoryCache, agent_ref

    ref = agent_ref(agent, agent_type)
    verify: ssl.SSLContext | bool = True
    if ca_file is not None:
        verify = ssl.create_default_context(cafile=str(ca_file))
    cache = DirectoryCache(
        allow=[ref.origin],
        egress=EgressPolicy(allow_private_networks=allow_private_networks),
        require_signatures=require_signatures,
        verify=verify,
    )
    summary = _summary(cache.keys_for(ref))
    if as_json:
        emit_json({"ok": True, **summary})
    err(f"{len(summary['keys'])} key(s) from {ref.url}; {len(summary['signed'])} with a possession proof")
    return EXIT_OK


@directory_group.command(name="verify")
@click.argument("response_file", metavar="RESPONSE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--require-signatures", is_flag=True, help="Refuse keys without a valid possession proof.")
@click.option("--now", type=float, help="Check the proofs at this Unix time (default: now).")
@json_option("the directory")
def verify_command(response_file: Path, require_signatures: bool, now: float | None, as_json: bool) -> int:
    """Check a saved directory response: {"url", "headers": {...}, "body": "<text>"} (offline)."""
    import httpx

    from mudrika.errors import InvalidInput, UntrustedKeyError
    from mudrika.trust.httpsig import (
        DIRECTORY_MEDIA_TYPE,
        REGISTERED_ALGORITHMS,
        agent_ref,
        verify_directory_response,
    )

    document = read_json_file(response_file, max_bytes=_MAX_RESPONSE_FILE)
    if not isinstance(document, dict):
        raise InvalidInput("a response file is a JSON object", code="not_an_object")
    url, headers, body = document.get("url"), document.get("headers"), document.get("body")
    if not isinstance(url, str) or not isinstance(headers, dict) or not isinstance(body, str):
        raise InvalidInput("a response file has url, headers and body", code="bad_response_file")
    ref = agent_ref(url)
    received = httpx.Headers(headers)
    media = received.get("content-type", "").partition(";")[0].strip().lower()
    if media != DIRECTORY_MEDIA_TYPE:
        raise UntrustedKeyError("directory has the wrong media type", code="directory_media_type")
    directory = verify_directory_response(
        ref,
        received,
        body.encode("utf-8"),
        algorithms=REGISTERED_ALGORITHMS,
        require_signatures=require_signatures,
        now=time.time() if now is None else now,
    )
    summary = _summary(directory)
    if as_json:
        emit_json({"ok": True, **summary})
    err(f"verified: {json.dumps(summary['signed'])} proved possession")
    return EXIT_OK
