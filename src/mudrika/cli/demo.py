"""``mudrika demo``: the toolkit's main job in one command, on 127.0.0.1 only.

Why a command and not a script: the README's first command runs it right after installation, and a
test runs it in-process and checks every step's outcome from its ``--json`` document.  The heavy
imports (a2a-sdk, uvicorn, the middleware, the payments verifier) happen inside the command.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from mudrika.cli._common import EXIT_FAILED, EXIT_OK, emit_json, err, json_option
from mudrika.errors import InvalidInput, KeyStoreError, UnavailableError

__all__ = ["demo_command"]

#: The third-party modules of the ``demo`` extra (the server, the A2A SDK and its protobuf types).
_DEMO_MODULES = frozenset({"a2a", "google", "starlette", "uvicorn"})


def _prepare(out: Path | None) -> Path:
    """The directory the demo writes into: a new temporary one, or ``--out`` if it is new or empty."""
    if out is None:
        return Path(tempfile.mkdtemp(prefix="mudrika-demo-"))
    if out.exists() and not out.is_dir():
        raise InvalidInput(f"--out {out} is not a directory", code="not_a_directory", path=str(out))
    if out.is_dir() and any(out.iterdir()):
        raise KeyStoreError(
            f"{out} is not empty; the demo writes only into a new or empty directory", code="exists"
        )
    return out


@click.command("demo")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    metavar="DIRECTORY",
    help="Write keys and files here (a new or empty directory). Default: a new temporary directory.",
)
@json_option(help_text="Print one JSON document with each step's outcome.")
def demo_command(out_dir: Path | None, as_json: bool) -> int:
    """Run an agent purchase end to end on 127.0.0.1: protected, signed, verified offline.

    \b
    1. provision a merchant (did:web), a shopping agent (did:key) and a credential issuer
       (did:bindu), and write the analyst's trust root;
    2. start a real a2a-sdk merchant under uvicorn behind the A2A middleware;
    3. the shopping agent is refused (no credentials, too low a trust level), then buys:
       intent -> signed cart -> payment with key binding, as AP2 DataParts;
    4. write the evidence bundle and verify it offline against the trust root (text + HTML);
    5. change the amount in a copy and show the failing checks;
    6. list every file and the CLI command that reruns each step.

    Nothing leaves 127.0.0.1; stores are in memory; bearer tokens come from a local development
    issuer (no Keycloak). Exit 0 when every step showed what it should, 1 otherwise.
    """
    try:
        from mudrika.cli._demo import run_demo
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] not in _DEMO_MODULES:
            raise
        raise UnavailableError(
            "mudrika demo needs a2a-sdk, starlette and uvicorn: pip install 'mudrika[demo]'",
            code="demo_dependencies_missing",
            module=exc.name,
        ) from None

    out = _prepare(out_dir)
    run = run_demo(out, err)
    err("demo: every step did what it shows" if run.ok else "demo: a step did not show what it should")
    if as_json:
        emit_json(run.to_dict())
    return EXIT_OK if run.ok else EXIT_FAILED
