"""Running the ``mudrika`` command line in-process, the way the CLI tests read its answer."""

from __future__ import annotations

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
