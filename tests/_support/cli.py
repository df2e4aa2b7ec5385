"""Running the ``mudrika`` command line in-process, the way the CLI tests read its answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mudrika.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``mudrika <argv>`` through :func:`mudrika.cli.main` and return (exit code, stdout, stderr).

    The CLI's contract is all three at once (machine output on stdout, human text on stderr, exit
    0/1/2), so the tests read them together from pytest's captured streams.
    """
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """:func:`run_cli` with stdout read as the one JSON document a ``--json`` run prints (``None``
    when it printed nothing)."""
    code, out, err = run_cli(capsys, *argv)
    return code, json.loads(out) if out.strip() else None, err
