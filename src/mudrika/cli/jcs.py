"""``mudrika jcs`` and ``mudrika hash``: RFC 8785 canonical bytes and the AP2 mandate hash of a JSON file.

Why in the CLI: a dispute analyst or a merchant debugging a ``cart_hash`` mismatch needs to see the exact
bytes that were hashed, and to recompute the hash offline, with the same strict parser the verifier
uses (a document the verifier would refuse is refused here too, with the same message).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Final, TypeVar

import click

from mudrika.cli._common import emit_json, json_option, read_prefix
from mudrika.crypto.jcs import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, canonicalize, loads_strict, mandate_hash

__all__ = ["hash_command", "jcs_command"]


_F = TypeVar("_F", bound=Callable[..., Any])


#: The two size limits every reading command shares: option, default, help.
_LIMITS: Final = (
    ("--max-depth", DEFAULT_MAX_DEPTH, "Refuse arrays/objects nested deeper than this."),
    (
        "--max-bytes",
        DEFAULT_MAX_BYTES,
        "Refuse documents larger than this many bytes (checked before parsing).",
    ),
)


def _limits(func: _F) -> _F:
    """The FILE argument and the two size limits every reading command shares."""
    for name, default, help_text in _LIMITS:
        limit = click.option(
            name, type=click.IntRange(min=1), default=default, show_default=True, help=help_text
        )
        func = limit(func)
    return click.argument("source", metavar="[FILE|-]", required=False, default="-")(func)


def _load(source: str, max_bytes: int, max_depth: int) -> object:
    data = read_prefix(source, max_bytes)
    return loads_strict(data, max_bytes=max_bytes, max_depth=max_depth)


@click.command("jcs")
@json_option(help_text='Print {"canonical": <the canonical form as text>, "bytes": N} as one JSON document.')
@_limits
def jcs_command(source: str, max_bytes: int, max_depth: int, as_json: bool) -> None:
    """Print the RFC 8785 canonical form of a JSON document.

    The document is parsed strictly (duplicate keys, lone surrogates, NaN/Infinity, integers beyond
    2^53-1, too deep or too large are refused with exit code 2) and its canonical UTF-8 bytes are
    written to stdout exactly: no trailing newline, so `mudrika jcs cart.json | sha256sum` hashes the
    same bytes the mandate hash covers.

    FILE is a JSON document; '-' or nothing reads standard input.
    """
    canonical = canonicalize(_load(source, max_bytes, max_depth))
    if as_json:
        emit_json({"canonical": canonical.decode("utf-8"), "bytes": len(canonical)})
        return
    sys.stdout.flush()  # anything already written through the text layer goes first
    sys.stdout.buffer.write(canonical)
    sys.stdout.buffer.flush()


@click.command("hash")
@json_option(help_text="Print {hash, algorithm, canonicalization} as one JSON document.")
@_limits
def hash_command(source: str, max_bytes: int, max_depth: int, as_json: bool) -> None:
    """Print the AP2 mandate hash of a JSON document.

    The hash is base64url (no padding) of SHA-256 over the RFC 8785 canonical bytes of the document
    as received -- the value a cart_hash, intent_hash or transaction_data entry must equal.  The
    document is parsed strictly; malformed input exits with code 2.

    FILE is a JSON document; '-' or nothing reads standard input.
    """
    digest = mandate_hash(_load(source, max_bytes, max_depth))
    if as_json:
        emit_json({"hash": digest, "algorithm": "sha-256", "canonicalization": "RFC 8785"})
    else:
        click.echo(digest)
