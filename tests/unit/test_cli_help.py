"""Every group's command list says what each command does, whole: never a sentence cut with "...".

Why: ``mudrika keys --help`` listed ``generate  Generate a key pair; the private key is always
written...`` — click cuts a command's docstring at the terminal width, and a cut sentence tells a
newcomer less than no sentence at all.
"""

from __future__ import annotations

import click
import pytest

from mudrika.cli import COMMANDS, main
from mudrika.cli._common import first_sentence


def _groups() -> dict[tuple[str, ...], click.Group]:
    found: dict[tuple[str, ...], click.Group] = {}

    def walk(path: tuple[str, ...], command: click.Command) -> None:
        if isinstance(command, click.Group):
            found[path] = command
            for name, sub in command.commands.items():
                walk((*path, name), sub)

    for name, entry in COMMANDS.items():
        walk((name,), entry.load())
    return found


GROUPS = _groups()


def _words(text: str) -> str:
    # click wraps lines (and may break after a hyphen): compare the characters, not the layout.
    return "".join(text.split())


@pytest.mark.parametrize("path", sorted(GROUPS), ids=" ".join)
def test_group_help_lists_every_command_uncut(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*path, "--help"]) == 0
    listing = _words(capsys.readouterr().out.split("Commands:", 1)[1])
    for name, command in GROUPS[path].commands.items():
        said = command.short_help or first_sentence(command.help or "")
        assert said, f"{' '.join(path)} {name} says nothing"
        assert _words(said) in listing, f"{' '.join(path)} {name}: {said!r} is cut"


def test_the_root_help_lists_every_command_whole(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    listing = _words(capsys.readouterr().out.split("Commands:", 1)[1])
    for entry in COMMANDS.values():
        assert _words(entry.short_help) in listing


def test_the_first_sentence_ends_at_a_full_stop_not_an_ellipsis() -> None:
    assert first_sentence("Verify a chain: FILE... are mandates.  More.\n\nDetails.") == (
        "Verify a chain: FILE... are mandates."
    )
    assert first_sentence("One line without a stop") == "One line without a stop"
