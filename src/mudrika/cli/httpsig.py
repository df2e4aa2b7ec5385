"""``mudrika httpsig sign|verify``: RFC 9421 signed requests under a named profile.

Why in the CLI: an operator wiring an agent to a Web Bot Auth site or a TAP merchant needs to see the
exact headers mudrika sends, and a site operator needs to check a captured request with the same
verifier the middleware runs — offline, with the keys given on the command line.

A request is a JSON file ``{"method", "url", "headers": {…}, "body": "<text>"}`` (``-`` for stdin) or
the flags ``--method``/``--url``/``--header``/``--body-file``; flags override the file.  Profiles:
``web-bot-auth``, ``agent-browser-auth``, ``agent-payer-auth`` (docs/webbotauth.md) and
``mudrika-did`` (docs/replay.md).  ``verify`` takes its trust as options: ``--origin`` (the
audience), ``--directory URL=FILE`` (an agent's key set, a JWK Set file), ``--tap-registry URL`` with
``--tap-jwks FILE``, ``--alg``, ``--max-age``; it never fetches anything.  Exit codes: 0 signed /
verified, 1 verification failed, 2 malformed input or usage.
"""

from __future__ import annotations

import json
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
    read_prefix,
    split_pairs,
)

__all__ = ["httpsig_group"]

_PROFILES = ("web-bot-auth", "agent-browser-auth", "agent-payer-auth", "mudrika-did")
_MAX_REQUEST = 2 * 1024 * 1024
_MAX_JWKS = 256 * 1024


def _request(
    source: str | None, method: str | None, url: str | None, headers: tuple[str, ...], body_file: Path | None
) -> tuple[str, str, dict[str, str], bytes]:
    from mudrika.crypto.jcs import loads_strict
    from mudrika.errors import InvalidInput

    document: dict[str, Any] = {}
    if source is not None:
        loaded = loads_strict(read_prefix(source, _MAX_REQUEST), max_bytes=_MAX_REQUEST)
        if not isinstance(loaded, dict):
            raise InvalidInput("a request file is a JSON object", code="not_an_object")
        document = loaded
    given = document.get("headers", {})
    if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
        raise InvalidInput("request headers are an object of strings", code="bad_request_file")
    merged = dict(given)
    for line in headers:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise click.BadParameter("use NAME:VALUE", param_hint="--header")
        merged[name.strip()] = value.strip()
    body_text = document.get("body", "")
    if not isinstance(body_text, str):
        raise InvalidInput("request body is a string", code="bad_request_file")
    body = body_file.read_bytes() if body_file is not None else body_text.encode("utf-8")
    final_method = method or document.get("method") or "GET"
    final_url = url or document.get("url")
    if not isinstance(final_url, str) or not isinstance(final_method, str):
        raise InvalidInput("the request needs a url (--url or the file's url)", code="bad_request_file")
    return final_method, final_url, merged, body


def _request_options(func: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--request",
                "source",
                metavar="FILE|-",
                help="The request as JSON (method, url, headers, body).",
            ),
            click.option("--method", help="HTTP method (default: the file's, else GET)."),
            click.option("--url", help="Absolute request URL (overrides the file's)."),
            click.option("--header", "headers", multiple=True, help="A header NAME:VALUE (repeatable)."),
            click.option(
                "--body-file", type=click.Path(dir_okay=False, path_type=Path), help="The body bytes."
            ),
        ]
    ):
        func = option(func)
    return func


@click.group(name="httpsig")
def httpsig_group() -> None:
    """Sign and verify RFC 9421 requests as Web Bot Auth, Visa TAP or DID-signed agents."""


@httpsig_group.command(name="sign")
@_request_options
@click.option("--profile", type=click.Choice(_PROFILES), required=True, help="The profile to sign under.")
@click.option(
    "--key", "key_uri", required=True, help="The agent's private key: a path, file:PATH or env:VAR."
)
@click.option("--signature-agent", help="web-bot-auth: the agent's directory origin (or JWKS URL).")
@click.option("--keyid", help="agent-*-auth: the registry's key id; mudrika-did: the DID URL.")
@click.option("--expires-in", type=int, default=60, show_default=True, help="Seconds the signature is valid.")
@password_options
@json_option("the signed headers")
def sign_command(
    source: str | None,
    method: str | None,
    url: str | None,
    headers: tuple[str, ...],
    body_file: Path | None,
    profile: str,
    key_uri: str,
    signature_agent: str | None,
    keyid: str | None,
    expires_in: int,
    password_env: str | None,
    password_file: Path | None,
    as_json: bool,
) -> int:
    """Sign a request and print the header fields to add (one per line, or JSON)."""
    from mudrika.errors import InvalidInput
    from mudrika.trust.httpsig import HttpMessageSigner, TrustedAgentSigner, WebBotAuthSigner

    request = _request(source, method, url, headers, body_file)
    pair = load_signing_key(key_uri, password_env, password_file)
    out: dict[str, str]
    if profile == "web-bot-auth":
        if signature_agent is None:
            raise InvalidInput("web-bot-auth needs --signature-agent", code="missing_option")
        out = (
            WebBotAuthSigner(pair, signature_agent=signature_agent, expires_in=expires_in)
            .sign(*request)
            .headers
        )
    elif profile == "mudrika-did":
        if keyid is None:
            raise InvalidInput("mudrika-did needs --keyid (a DID URL)", code="missing_option")
        out = HttpMessageSigner(pair, keyid, expires_in=expires_in).sign(*request).as_dict()
    else:
        if keyid is None:
            raise InvalidInput(f"{profile} needs --keyid", code="missing_option")
        out = TrustedAgentSigner(pair, keyid, tag=profile, expires_in=expires_in).sign(*request).headers
    if as_json:
        emit_json({"profile": profile, "headers": out})
    else:
        for name, value in out.items():
            click.echo(f"{name}: {value}")
    err(f"signed as {profile}")
    return EXIT_OK


@httpsig_group.command(name="verify")
@_request_options
@click.option(
    "--profile", type=click.Choice(_PROFILES), help="Require this profile (default: the signature's tag)."
)
@click.option(
    "--origin", "origins", multiple=True, required=True, help="This server's public origin (repeatable)."
)
@click.option(
    "--directory", "directories", multiple=True, help="URL=FILE: an agent's key set (JWK Set) (repeatable)."
)
@click.option("--tap-registry", help="TAP: the agent registry's JWKS URL (with --tap-jwks).")
@click.option(
    "--tap-jwks", type=click.Path(dir_okay=False, path_type=Path), help="TAP: the registry's JWK Set file."
)
@click.option(
    "--alg",
    "algorithms",
    multiple=True,
    help="An accepted algorithm (repeatable; default: the registered ones).",
)
@click.option(
    "--max-age",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds after created a signature is accepted.",
)
@click.option(
    "--max-lifetime",
    type=int,
    default=86400,
    show_default=True,
    help="Longest expires - created (web-bot-auth).",
)
@click.option("--now", type=float, help="Verify at this Unix time (default: now).")
@click.option(
    "--leniency", "leniencies", multiple=True, help="A named leniency, e.g. keyid-mixed-case (repeatable)."
)
@json_option("the verified request")
def verify_command(
    source: str | None,
    method: str | None,
    url: str | None,
    headers: tuple[str, ...],
    body_file: Path | None,
    profile: str | None,
    origins: tuple[str, ...],
    directories: tuple[str, ...],
    tap_registry: str | None,
    tap_jwks: Path | None,
    algorithms: tuple[str, ...],
    max_age: float,
    max_lifetime: int,
    now: float | None,
    leniencies: tuple[str, ...],
    as_json: bool,
) -> int:
    """Verify a signed request offline with the keys given; exit 1 when it does not verify."""
    from mudrika.errors import InvalidInput
    from mudrika.identity.resolver import DIDResolver
    from mudrika.stores.replay import MemoryReplayStore
    from mudrika.trust.httpsig import (
        REGISTERED_ALGORITHMS,
        HttpSignatureVerifier,
        ResolverKeyLookup,
        StaticDirectories,
        WebSignatureVerifier,
        web_profile_of,
    )

    method_, url_, headers_, body = _request(source, method, url, headers, body_file)
    allowed = algorithms or tuple(sorted(REGISTERED_ALGORITHMS))
    found = web_profile_of(headers_) or "mudrika-did"
    if profile is not None and profile != found:
        raise InvalidInput("the signature is not of the required profile", code="wrong_tag", found=found)
    store = MemoryReplayStore()
    if found == "mudrika-did":
        did_verifier = HttpSignatureVerifier(
            keys=ResolverKeyLookup(DIDResolver.offline({})),
            replay_store=store,
            origins=origins,
            algorithms=allowed,
            max_age=max_age,
        )
        did_result = did_verifier.verify(method_, url_, headers_, body, now=now)
        result: dict[str, Any] = {"profile": found, "did": did_result.did, "keyid": did_result.keyid}
    else:
        tables = {}
        for agent_url, path in split_pairs(directories, option="--directory", form="URL=FILE"):
            tables[agent_url] = read_json_file(path, max_bytes=_MAX_JWKS)
        tap_keys = None
        if (tap_registry is None) != (tap_jwks is None):
            raise InvalidInput("--tap-registry and --tap-jwks go together", code="missing_option")
        if tap_registry is not None and tap_jwks is not None:
            tap_keys = StaticDirectories({tap_registry: read_json_file(tap_jwks, max_bytes=_MAX_JWKS)})
        verifier = WebSignatureVerifier(
            agents=StaticDirectories(tables),
            tap_registry=tap_registry,
            tap_keys=tap_keys,
            replay_store=store,
            origins=origins,
            algorithms=allowed,
            max_age=max_age,
            max_lifetime=max_lifetime,
            leniency=leniencies,
        )
        verified = verifier.verify(method_, url_, headers_, body, now=now)
        result = {
            "profile": verified.profile,
            "agent": verified.agent,
            "identifier": verified.identifier,
            "keyid": verified.keyid,
            "thumbprint": verified.thumbprint,
            "algorithm": verified.algorithm,
            "components": list(verified.components),
            "created": verified.created,
            "expires": verified.expires,
        }
    if as_json:
        emit_json({"ok": True, **result})
    err(f"verified: {json.dumps(result, sort_keys=True)}")
    return EXIT_OK
