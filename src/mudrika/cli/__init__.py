"""The ``mudrika`` command line: one module per command group (noun), all reached through :func:`main`.

Contract (DESIGN.md): exit 0 ok, 1 verification/operation failed, 2 usage or malformed input;
``--json`` prints one JSON document on stdout, human text goes to stderr.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import click

from mudrika import __version__
from mudrika.cli._common import run_cli

__all__ = ["cli", "main"]

# Each entry is "module:attribute" of a click command or group added under the root group.
_COMMANDS: tuple[str, ...] = (
    "mudrika.cli.policy:policy_group",
    "mudrika.cli.jcs:jcs_command",
    "mudrika.cli.jcs:hash_command",
    "mudrika.cli.keys:keys_group",
    "mudrika.cli.did:did_group",
    "mudrika.cli.csr:csr_group",
    "mudrika.cli.provision:provision_command",
    "mudrika.cli.mandate:mandate_group",
    "mudrika.cli.dispute:dispute_group",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mudrika")
def cli() -> None:
    """mudrika: keys, DIDs, trust and AP2 mandates for AI agents.

    Exit codes: 0 ok, 1 verification or operation failed, 2 usage or malformed input.
    With --json a command prints one JSON document on stdout; human text always goes to stderr.
    """


def _register() -> None:
    for spec in _COMMANDS:
        module_name, _, attr = spec.partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        cli.add_command(command)


_register()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI in-process and return its exit code (testable without a subprocess)."""
    return run_cli(cli, list(sys.argv[1:] if argv is None else argv))
