"""What the mandate commands share: reading their input, the signer's key, the signing time, the report.

Why one module: ``mudrika mandate`` (AP2 v0.1) and ``mudrika mandate v02`` sign different objects
but promise the same things: FILE or '-' read under the strict parser's size limit, ``--key`` read
only with a named password source, ``--now`` in the same time syntax as ``dispute --at``, a verify
command that consumes the mandates it accepts in a replay store the user may name, and the same
outputs and exit code for its report (text on stderr, ``--html``, ``--json``; 0 OK, 1 otherwise).
Written once, the two groups cannot drift apart.  Nothing heavy is imported at module level: the
replay stores are loaded only when a verification runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mudrika.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    emit_json,
    html_option,
    json_option,
    private_key_option,
    read_input,
)
from mudrika.cli.dispute import parse_time_option, print_report, write_html
from mudrika.crypto.jcs import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from mudrika.payments.chain import VerificationReport
    from mudrika.stores.replay import ReplayStore

__all__ = [
    "finish_report",
    "read_source",
    "replay_db_option",
    "replay_store",
    "report_options",
    "signer_key_option",
    "signing_time",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def read_source(source: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """FILE or '-' (stdin), refused when larger than the strict JSON parser would accept."""
    return read_input(source, max_bytes=max_bytes)


def signing_time(text: str | None) -> datetime:
    """The ``--now`` option's time, or the current time when it was not given."""
    return parse_time_option(text, "--now") or datetime.now(UTC)


def signer_key_option(func: _F) -> _F:
    """``--key``: where the signer's private key is (its password comes from ``password_options``)."""
    return private_key_option("Private key of the signer: a path, file:PATH or env:VAR.")(func)


def report_options(func: _F) -> _F:
    """``--json`` and ``--html``: the two optional forms of a verify command's report."""
    func = html_option("Write an HTML report.")(func)
    return json_option("the report")(func)


def replay_db_option(help_text: str) -> Callable[[_F], _F]:
    """``--replay-db FILE``: the SQLite store :func:`replay_store` opens (default: one for this run only)."""
    return click.option("--replay-db", type=click.Path(dir_okay=False, path_type=Path), help=help_text)


@contextmanager
def replay_store(path: Path | None) -> Iterator[ReplayStore]:
    """The SQLite store at ``--replay-db`` (remembered across runs), else one for this run; closed after."""
    from mudrika.stores.replay import MemoryReplayStore, SqliteReplayStore

    store: ReplayStore = SqliteReplayStore(path) if path is not None else MemoryReplayStore()
    try:
        yield store
    finally:
        store.close()


def finish_report(
    report: VerificationReport,
    *,
    title: str,
    as_json: bool,
    html_path: Path | None,
    verbose: bool = False,
    json_lists_passed: bool | None = None,
) -> int:
    """Show ``report`` (stderr, then ``--html`` and ``--json`` when asked) and return the exit code.

    ``json_lists_passed`` defaults to ``verbose``: ``mandate verify`` lists passed checks in its JSON
    only with ``-v``, while ``mandate v02 verify`` (which has no ``-v``) has always listed them all,
    and scripts read that document.
    """
    print_report(report, title=title, verbose=verbose)
    if html_path is not None:
        write_html(report, html_path, title=title, verbose=verbose)
    if as_json:
        emit_json(report.to_dict(verbose=verbose if json_lists_passed is None else json_lists_passed))
    return EXIT_OK if report.ok else EXIT_FAILED
