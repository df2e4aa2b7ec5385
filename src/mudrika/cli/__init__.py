"""The ``mudrika`` command line: one module per command group (noun), all reached through :func:`main`.

Contract: exit 0 ok, 1 verification or operation failed, 2 usage or malformed input; ``--json`` prints
one JSON document on stdout (the result, or ``{"error": {...}}`` on failure); human text goes to stderr.

Why the commands are registered lazily: importing every command module pulls in pydantic, cryptography,
rich and httpx, which costs most of a second, and a user who types ``mudrika --help`` or
``mudrika keys --help`` must not wait for the payments verifier to load.  The root group therefore
knows each command only by name, import path and short help (:data:`COMMANDS`), and imports the one
module that is invoked.  A test holds the static short help equal to each command's real one.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import click

from mudrika import __version__
from mudrika.cli._common import EXIT_CODE_HELP, adopt_error_contract, run_cli, verbose_option

__all__ = ["COMMANDS", "LazyCommand", "cli", "main"]


@dataclass(frozen=True, slots=True)
class LazyCommand:
    """Where a top-level command lives (``module:attribute``) and the help line the root shows for it."""

    target: str
    short_help: str

    def load(self) -> click.Command:
        module_name, _, attribute = self.target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.target} is not a click command")
        return command


#: Every top-level command, by the name users type.  The short help is repeated here (not read from
#: the module) so that the root ``--help`` imports nothing; tests/unit/test_cli_startup.py holds it
#: equal to each command's own first docstring sentence.
COMMANDS: dict[str, LazyCommand] = {
    "card": LazyCommand(
        "mudrika.cli.card:card_group",
        "Sign and verify A2A Agent Cards (JWS over the RFC 8785 form, kid a DID URL).",
    ),
    "credential": LazyCommand(
        "mudrika.cli.credential:credential_group",
        "Issue SD-JWT VC payment credentials bound to a user's key (the wallet issuer's side).",
    ),
    "csr": LazyCommand(
        "mudrika.cli.csr:csr_group",
        "Create PKCS#10 CSRs signed by the agent's identity key, with the DID in the subjectAltName.",
    ),
    "demo": LazyCommand(
        "mudrika.cli.demo:demo_command",
        "Run an agent purchase end to end on 127.0.0.1: protected, signed, verified offline.",
    ),
    "dev": LazyCommand(
        "mudrika.cli.dev:dev_group",
        "Develop without Keycloak: a local OpenID issuer on 127.0.0.1 and tokens with chosen roles.",
    ),
    "did": LazyCommand(
        "mudrika.cli.did:did_group",
        "Create and resolve DIDs (did:key, did:jwk, did:web, did:bindu; methods you name through didkit).",
    ),
    "directory": LazyCommand(
        "mudrika.cli.directory:directory_group",
        "Serve, fetch and verify Web Bot Auth key directories (HTTP Message Signatures directories).",
    ),
    "dispute": LazyCommand(
        "mudrika.cli.dispute:dispute_group",
        "Adjudicate AP2 payments from evidence bundles (offline: never touches the network).",
    ),
    "hash": LazyCommand("mudrika.cli.jcs:hash_command", "Print the AP2 mandate hash of a JSON document."),
    "jcs": LazyCommand(
        "mudrika.cli.jcs:jcs_command", "Print the RFC 8785 canonical form of a JSON document."
    ),
    "httpsig": LazyCommand(
        "mudrika.cli.httpsig:httpsig_group",
        "Sign and verify RFC 9421 requests as Web Bot Auth, Visa TAP or DID-signed agents.",
    ),
    "keys": LazyCommand(
        "mudrika.cli.keys:keys_group", "Create and inspect signing keys (Ed25519, P-256, secp256k1, RSA)."
    ),
    "mandate": LazyCommand(
        "mudrika.cli.mandate:mandate_group",
        "Sign and verify AP2 v0.1 mandates (intent -> cart -> payment).",
    ),
    "policy": LazyCommand(
        "mudrika.cli.policy:policy_group", "Inspect operation policies (trust levels, roles, IdP groups)."
    ),
    "provision": LazyCommand(
        "mudrika.cli.provision:provision_command",
        "Create (or reuse) the agent's encrypted key and write did.json, agent.csr and identity.json.",
    ),
    "status-list": LazyCommand(
        "mudrika.cli.status_list:status_list_group",
        "Keep, sign and check IETF Token Status Lists (revocation and suspension of credentials).",
    ),
    "trust-root": LazyCommand(
        "mudrika.cli.trust_root:trust_root_group",
        "Write and inspect your trust root: the issuers, merchants and policy dispute verdicts rest on.",
    ),
}


class LazyGroup(click.Group):
    """A root group that imports a command's module only when that command is invoked.

    ``--help`` lists the commands from :data:`COMMANDS` without importing any of them.  A loaded
    command is adopted into the error contract (its ``--json`` flag also switches error output to
    JSON, and it accepts ``-v/--verbose``) before it runs.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        return adopt_error_contract(entry.load())

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name].short_help) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODE_HELP,
)
@click.version_option(__version__, prog_name="mudrika")
@verbose_option
def cli() -> None:
    """mudrika: keys, DIDs, trust and AP2 mandates for AI agents.

    With --json a command prints one JSON document on stdout (on failure: {"error": {"code",
    "message", "fields"}}); human text always goes to stderr.  -v/--verbose adds the cause chain
    of an error (and, for an unexpected error, the traceback).
    """


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI in-process and return its exit code (testable without a subprocess)."""
    return run_cli(cli, list(sys.argv[1:] if argv is None else argv))
