"""The command line's one grammar (docs/cli.md), held over every command.

Why: a newcomer met ``--out`` as a directory in one command and a file in the next, ``--json``
missing where they expected it, files rewritten silently, and ``--key`` meaning "a file" in one
group and "a path, file:PATH or env:VAR" in another.  Each rule below is read from the commands
themselves (every leaf of ``mudrika``), so a new command that breaks one fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from mudrika.cli import COMMANDS
from tests._support.cli import run_cli_json

KEY_GRAMMAR = "a path, file:PATH or env:VAR"
#: Commands that run until interrupted: they print no result document to take ``--json``.
SERVERS = {("directory", "serve")}
#: Commands whose ``--out`` directory must be new or empty: they never replace a file.
NEVER_REPLACE = {("demo",)}


def _leaves() -> dict[tuple[str, ...], click.Command]:
    found: dict[tuple[str, ...], click.Command] = {}

    def walk(path: tuple[str, ...], command: click.Command) -> None:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk((*path, name), sub)
        else:
            found[path] = command

    for name, entry in COMMANDS.items():
        walk((name,), entry.load())
    return found


LEAVES = _leaves()


def _option(command: click.Command, flag: str) -> click.Option | None:
    return next((p for p in command.params if isinstance(p, click.Option) and flag in p.opts), None)


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_command_takes_json(path: tuple[str, ...]) -> None:
    if path in SERVERS:
        assert _option(LEAVES[path], "--json") is None
        return
    assert _option(LEAVES[path], "--json") is not None, f"{' '.join(path)} has no --json"


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_out_is_a_file_or_a_directory_and_replacing_needs_force(path: tuple[str, ...]) -> None:
    command = LEAVES[path]
    out = _option(command, "--out")
    if out is None:
        return
    assert isinstance(out.type, click.Path)
    metavar = out.make_metavar(click.Context(command))
    assert metavar in {"FILE", "DIRECTORY"}, f"{' '.join(path)}: --out {metavar}"
    if not out.type.file_okay:
        assert metavar == "DIRECTORY"
    if not out.type.dir_okay:
        assert metavar == "FILE"
    if path not in NEVER_REPLACE:
        assert _option(command, "--force") is not None, f"{' '.join(path)} writes --out without --force"


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_key_is_named_one_way(path: tuple[str, ...]) -> None:
    key = _option(LEAVES[path], "--key")
    if key is None:
        return
    assert key.help is not None
    assert KEY_GRAMMAR in key.help, f"{' '.join(path)} --key: {key.help!r}"


def test_the_tables_name_only_commands_that_exist() -> None:
    assert set(LEAVES) >= SERVERS
    assert set(LEAVES) >= NEVER_REPLACE


def test_a_command_that_writes_the_trust_root_reports_it_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root.json"
    code, first, _ = run_cli_json(capsys, "trust-root", "init", str(root), "--json")
    assert code == 0
    assert first["path"] == str(root)
    assert first["changed"] is True
    # The same policy written again has the same fingerprint: it names the content, not the write.
    code, again, _ = run_cli_json(capsys, "trust-root", "init", str(root), "--force", "--json")
    assert code == 0
    assert again["fingerprint"] == first["fingerprint"]


def test_keys_inspect_shows_the_public_facts_and_never_the_private_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("INSPECT_PW", "correct horse battery staple")
    code, generated, _ = run_cli_json(
        capsys, "keys", "generate", "--out", str(tmp_path / "k"), "--password-env", "INSPECT_PW", "--json"
    )
    assert code == 0
    code, public, _ = run_cli_json(capsys, "keys", "inspect", str(tmp_path / "k" / "public.pem"), "--json")
    assert code == 0
    code, private, err = run_cli_json(
        capsys,
        "keys",
        "inspect",
        str(tmp_path / "k" / "private.pem"),
        "--password-env",
        "INSPECT_PW",
        "--json",
    )
    assert code == 0
    assert (public["kind"], private["kind"]) == ("public", "private")
    for shown in (public, private):
        assert shown["thumbprint"] == generated["thumbprint"]
        assert shown["public_jwk"] == generated["public_jwk"]
        assert shown["did_key"].startswith("did:key:z")
    shown_text = json.dumps(private) + err
    assert "PRIVATE KEY" not in shown_text
    assert '"d"' not in shown_text
