"""Shared CLI plumbing: exit-code mapping, JSON output, password sources.

Why here: every command must map errors to the same exit codes and must read passwords the same safe
way (environment variable or file named by the user, a prompt only on a terminal, never a literal).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from mudrika.errors import InvalidInput, MudrikaError, VerificationError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

_log = logging.getLogger("mudrika.cli")


def run_cli(group: click.Group, argv: list[str]) -> int:
    """Invoke ``group`` with ``argv`` and translate every outcome into the documented exit code."""
    try:
        result = group.main(args=argv, prog_name="mudrika", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort:
        err("aborted")
        return EXIT_FAILED
    except click.UsageError as exc:
        exc.show(file=sys.stderr)
        return EXIT_USAGE
    except click.ClickException as exc:
        exc.show(file=sys.stderr)
        return EXIT_USAGE
    except InvalidInput as exc:
        err(f"error: {exc.message}")
        return EXIT_USAGE
    except VerificationError as exc:
        err(f"verification failed: {exc.message}")
        return EXIT_FAILED
    except MudrikaError as exc:
        err(f"error: {exc.message}")
        return EXIT_FAILED
    return int(result) if isinstance(result, int) else EXIT_OK


def err(message: str) -> None:
    """Human text goes to stderr so stdout stays one JSON document."""
    click.echo(message, err=True)


def emit_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False))


def read_password(password_env: str | None, password_file: Path | None, *, confirm: bool = False) -> bytes:
    """Read a key password from an environment variable or file the user *names*; never a literal.

    Falls back to an interactive prompt only when stdin is a terminal, so scripts never hang.
    """
    if password_env and password_file:
        raise click.UsageError("give --password-env or --password-file, not both")
    if password_env:
        value = os.environ.get(password_env)
        if not value:
            raise InvalidInput(f"environment variable {password_env} is not set or empty", code="no_password")
        return value.encode()
    if password_file:
        try:
            data = password_file.read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read password file {password_file}: {exc.strerror}") from None
        value_bytes = data.rstrip(b"\r\n")
        if not value_bytes:
            raise InvalidInput(f"password file {password_file} is empty", code="no_password")
        return value_bytes
    if not sys.stdin.isatty():
        raise InvalidInput(
            "no password source: pass --password-env VAR or --password-file FILE "
            "(mudrika never prompts when stdin is not a terminal)",
            code="no_password",
        )
    value = click.prompt("Key password", hide_input=True, confirmation_prompt=confirm)
    return str(value).encode()


def password_options(func: Any) -> Any:
    """Decorate a command with the two sanctioned password sources."""
    func = click.option(
        "--password-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Read the key password from this file (first line).",
    )(func)
    func = click.option(
        "--password-env",
        metavar="VAR",
        help="Read the key password from the environment variable VAR (never pass the password itself).",
    )(func)
    return func
