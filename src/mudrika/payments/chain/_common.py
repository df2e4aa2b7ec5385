"""Shared pieces of the AP2 v0.1 signers and chain verifier: time, limits, the check recorder.

Why a recorder: the verifier must report every named check (passed, failed or skipped) and never
raise on a failed one, yet the code that runs a check should read like straight-line verification.
:class:`Recorder` gives each stage a small vocabulary — ``passed``, ``failed``, ``skip`` and
``run`` (call a function, turn a :class:`~mudrika.errors.MudrikaError` into a failed check) — so a
stage is a list of checks in the order they depend on each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

from mudrika.crypto._b64 import b64url_encode
from mudrika.errors import InvalidInput, MudrikaError
from mudrika.payments._time import Time, epoch, iso
from mudrika.payments.chain.report import Check, ErrorKind, error_kind_of
from mudrika.payments.profile import DEFAULT_ALGORITHMS, MAX_CART_LIFETIME, MAX_LEEWAY, MAX_TOKEN_BYTES

__all__ = [
    "DEFAULT_ALGORITHMS",
    "MAX_CART_LIFETIME",
    "MAX_LEEWAY",
    "MAX_TOKEN_BYTES",
    "Recorder",
    "Time",
    "check_leeway",
    "epoch",
    "fingerprint",
    "iso",
]

T = TypeVar("T")


def check_leeway(leeway: float) -> float:
    if isinstance(leeway, bool) or not isinstance(leeway, int | float) or not 0 <= leeway <= MAX_LEEWAY:
        raise InvalidInput("leeway must be between 0 and 30 seconds", code="bad_leeway", limit=MAX_LEEWAY)
    return float(leeway)


def fingerprint(text: str) -> str:
    """A short, non-reversible label for a value that should not be printed (a nonce, a token)."""
    return "sha256:" + b64url_encode(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())[:16]


class Recorder:
    """Collects :class:`Check` results in evaluation order."""

    __slots__ = ("checks",)

    def __init__(self) -> None:
        self.checks: list[Check] = []

    def passed(
        self,
        check_id: str,
        party: str,
        *,
        expected: str | None = None,
        got: str | None = None,
        key: str | None = None,
        detail: str | None = None,
    ) -> None:
        self.checks.append(Check(check_id, "passed", party, expected, got, key, detail))

    def failed(
        self,
        check_id: str,
        party: str,
        *,
        error: ErrorKind,
        code: str,
        expected: str | None = None,
        got: str | None = None,
        key: str | None = None,
        detail: str | None = None,
    ) -> None:
        self.checks.append(Check(check_id, "failed", party, expected, got, key, detail, error, code))

    def check(
        self,
        check_id: str,
        party: str,
        ok: bool,
        *,
        error: ErrorKind,
        code: str,
        expected: str | None = None,
        got: str | None = None,
        key: str | None = None,
        detail: str | None = None,
    ) -> bool:
        """Record a comparison: passed when ``ok``, else failed with ``error``/``code``."""
        if ok:
            self.passed(check_id, party, expected=expected, got=got, key=key, detail=detail)
        else:
            self.failed(
                check_id, party, error=error, code=code, expected=expected, got=got, key=key, detail=detail
            )
        return ok

    def from_error(
        self,
        check_id: str,
        party: str,
        exc: MudrikaError,
        *,
        expected: str | None = None,
        got: str | None = None,
        key: str | None = None,
    ) -> None:
        """A failed check from an exception (its message is generic and secret-free by contract)."""
        self.failed(
            check_id,
            party,
            error=error_kind_of(exc),
            code=exc.code,
            expected=expected,
            got=got,
            key=key,
            detail=exc.message,
        )

    def run(
        self,
        check_id: str,
        party: str,
        func: Callable[[], T],
        *,
        expected: str | None = None,
        key: str | None = None,
        describe: Callable[[T], str | None] | None = None,
    ) -> T | None:
        """Run ``func``; record passed (with ``describe(result)`` as ``got``) or the error as failed."""
        try:
            result = func()
        except MudrikaError as exc:
            self.from_error(check_id, party, exc, expected=expected, key=key)
            return None
        self.passed(check_id, party, expected=expected, got=describe(result) if describe else None, key=key)
        return result

    def skip(self, ids: Iterable[tuple[str, str]], *, because: str) -> None:
        """Record each ``(id, party)`` as skipped: its prerequisite did not pass."""
        for check_id, party in ids:
            self.checks.append(Check(check_id, "skipped", party, detail=f"not run: {because}"))

    def all_passed_since(self, start: int) -> bool:
        return all(check.passed for check in self.checks[start:])
