"""The CLI starts without its heavy dependencies: lazy command groups, static help, spelt-out choices.

Why these tests and no timing assertion: the start-up time is measured in bench/bench_cli_startup.py;
what keeps it low is structural and is checked here: ``--help`` imports no heavy module, and the
static tables that make that possible (the root's command list, the option choices) say exactly what
the real commands and the real enums say.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import get_args

import click
import pytest

from mudrika.cli import COMMANDS, cli
from mudrika.cli._choices import DID_METHODS, IDENTITY_PROVIDERS, KEY_TYPES
from mudrika.crypto.keys import KeyType
from mudrika.identity.provision import DidMethod
from mudrika.trust.models import IdentityProvider

#: Modules that cost tens to hundreds of milliseconds to import; none may load for ``--help``.
HEAVY = (
    "anyio",
    "cryptography",
    "didkit",
    "httpcore",
    "httpx",
    "joserfc",
    "keycloak",
    "pydantic",
    "redis",
    "requests",
    "rich",
    "yaml",
)


def _leaf_paths(command: click.Command, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    if isinstance(command, click.Group):
        return [
            leaf for name, sub in sorted(command.commands.items()) for leaf in _leaf_paths(sub, (*path, name))
        ]
    return [path]


def _help_paths() -> list[tuple[str, ...]]:
    """The root, every top-level command and every subcommand."""
    paths: list[tuple[str, ...]] = [()]
    for name, entry in sorted(COMMANDS.items()):
        command = entry.load()
        paths.append((name,))
        if isinstance(command, click.Group):
            paths += _leaf_paths(command, (name,))
    return paths


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_static_short_help_equals_the_commands_own(name: str) -> None:
    command = COMMANDS[name].load()
    assert command.name == name
    assert COMMANDS[name].short_help == command.get_short_help_str(limit=10_000)


def test_the_root_lists_every_command_with_its_short_help(capsys: pytest.CaptureFixture[str]) -> None:
    from mudrika.cli import main

    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for name, entry in COMMANDS.items():
        assert f"{name} {entry.short_help}" in out
    assert "Exit codes (every command): 0 ok 1 verification or operation failed" in out


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from mudrika.cli import main

    assert main(["no-such-command"]) == 2
    assert "No such command" in capsys.readouterr().err


def test_spelt_out_choices_equal_their_sources() -> None:
    assert tuple(member.value for member in KeyType) == KEY_TYPES
    assert get_args(DidMethod) == DID_METHODS
    assert get_args(IdentityProvider) == IDENTITY_PROVIDERS


def test_lazy_group_resolves_only_known_names() -> None:
    context = click.Context(cli)
    assert cli.get_command(context, "nothing-here") is None
    assert cli.list_commands(context) == sorted(COMMANDS)


@pytest.mark.parametrize("path", _help_paths(), ids=lambda path: " ".join(path) or "root")
def test_help_imports_no_heavy_module(path: tuple[str, ...]) -> None:
    # A fresh interpreter: this test process has long imported everything.
    probe = (
        "import contextlib, io, json, sys\n"
        "from mudrika.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({list(path)!r} + ['--help'])\n"
        f"heavy = {HEAVY!r}\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & set(heavy))\n"
        "print(json.dumps({'code': code, 'loaded': loaded}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(result.stdout) == {"code": 0, "loaded": []}
