"""The check recorder of the v0.2 verifier (private): every named check, in evaluation order.

Why a recorder: :func:`mudrika.payments.v02.inspect_v02` must report each check (passed, failed or
skipped) and never raise on a failed one, yet each stage should read like straight-line
verification.  :meth:`Recorder.run` calls a step and turns a :class:`~mudrika.errors.MudrikaError`
into a failed check with its typed error kind and code; :meth:`Recorder.skip` marks what could not
run because an earlier link was not admitted (never counted as passed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

from mudrika.crypto._b64 import b64url_encode
from mudrika.errors import MudrikaError
from mudrika.payments.chain.report import Check, ErrorKind, error_kind_of

__all__ = ["Recorder", "StepFailed", "label"]

T = TypeVar("T")


class StepFailed(Exception):
    """Raised by :meth:`Recorder.run` after it recorded a failure: the stage stops there."""


def label(text: str) -> str:
    """A short non-reversible label for a value that must not be printed (a nonce, a token)."""
    return "sha256:" + b64url_encode(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())[:16]


class Recorder:
    """Collects :class:`~mudrika.payments.chain.report.Check` results."""

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
        self.checks.append(
            Check.make(check_id, "passed", party, expected=expected, got=got, key=key, detail=detail)
        )

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
        self.checks.append(
            Check.make(
                check_id,
                "failed",
                party,
                expected=expected,
                got=got,
                key=key,
                detail=detail,
                error=error,
                code=code,
            )
        )

    def skip(self, check_ids: Iterable[str], party: str, *, detail: str) -> None:
        for check_id in check_ids:
            self.checks.append(Check.make(check_id, "skipped", party, detail=detail))

    def run(
        self,
        check_id: str,
        party: str,
        step: Callable[[], T],
        *,
        expected: str | None = None,
        got: str | None = None,
        key: str | None = None,
        detail: str | None = None,
    ) -> T:
        """Run ``step``; record it passed, or record the error it raised and raise :class:`StepFailed`."""
        try:
            result = step()
        except MudrikaError as exc:
            self.failed(
                check_id,
                party,
                error=error_kind_of(exc),
                code=exc.code,
                expected=expected if expected is not None else _field(exc, "expected"),
                got=_field(exc, "got"),
                key=key,
                detail=exc.message,
            )
            raise StepFailed(check_id) from None
        self.passed(check_id, party, expected=expected, got=got, key=key, detail=detail)
        return result


def _field(exc: MudrikaError, name: str) -> str | None:
    value = exc.fields.get(name)
    return None if value is None else str(value)
