"""The verification report: every named check of an AP2 chain, with what it expected and what it got.

Why a report and not just an exception: a dispute analyst must see *which* binding failed, whose key
or claim it rests on, and which checks could not even run because an earlier link was not admitted.
So :func:`mudrika.payments.chain.inspect_chain` never raises on a failed check; it returns a
:class:`VerificationReport` whose :class:`Check` entries each carry a stable dotted ``id`` (listed in
``docs/payments.md`` "Checks"), a status, short secret-free ``expected``/``got`` strings, the ``party``
the fact rests on and the ``key`` (kid or thumbprint) it was verified with.

Three statuses, never more:

* ``passed``  the check ran and held;
* ``failed``  the check ran and did not hold (``error`` says which exception type it maps to);
* ``skipped`` the check could not run because a prerequisite failed (python-tuf style: a link is
  admitted only after the previous one verified).  A skipped check is never counted as passed.

:attr:`VerificationReport.ok` is true only when there is at least one check and every check passed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple

from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    MudrikaError,
    PolicyDenied,
    ReplayError,
    ResolutionError,
    SignatureError,
    UntrustedKeyError,
    VerificationError,
)

__all__ = [
    "ERROR_KINDS",
    "REPORT_FORMAT",
    "Check",
    "CheckStatus",
    "ErrorKind",
    "VerificationReport",
    "error_kind_of",
]

REPORT_FORMAT: Final = "mudrika.report/v1"

CheckStatus = Literal["passed", "failed", "skipped"]
ErrorKind = Literal[
    "invalid_input",
    "signature",
    "expired",
    "replay",
    "binding",
    "policy",
    "untrusted_key",
    "unavailable",
    "verification",
]

#: The exception class :meth:`VerificationReport.raise_for_failure` raises for each error kind.
ERROR_KINDS: Final[Mapping[str, type[MudrikaError]]] = {
    "invalid_input": InvalidInput,
    "signature": SignatureError,
    "expired": ExpiredError,
    "replay": ReplayError,
    "binding": BindingError,
    "policy": PolicyDenied,
    "untrusted_key": UntrustedKeyError,
    "unavailable": ResolutionError,
    "verification": VerificationError,
}

_MAX_TEXT: Final = 200


def _short(value: str | None) -> str | None:
    if value is None:
        return None
    return value if len(value) <= _MAX_TEXT else value[: _MAX_TEXT - 1] + "…"


def error_kind_of(exc: BaseException) -> ErrorKind:
    """The report's error kind for an exception (most specific class first)."""
    ordered: tuple[tuple[type[BaseException], ErrorKind], ...] = (
        (SignatureError, "signature"),
        (ExpiredError, "expired"),
        (ReplayError, "replay"),
        (BindingError, "binding"),
        (PolicyDenied, "policy"),
        (UntrustedKeyError, "untrusted_key"),
        (ResolutionError, "unavailable"),
        (InvalidInput, "invalid_input"),
    )
    for cls, kind in ordered:
        if isinstance(exc, cls):
            return kind
    if isinstance(exc, MudrikaError) and not isinstance(exc, VerificationError):
        return "unavailable"
    return "verification"


class Check(NamedTuple):
    """One named check.  ``expected``/``got``/``detail`` never hold a secret; :meth:`to_dict` and the
    HTML report cut them to 200 characters.

    A ``NamedTuple`` (immutable, cheap to build: a chain records ~60 of them per verification).
    Build checks through the verifier; :meth:`make` validates hand-built ones.
    """

    id: str
    status: CheckStatus
    party: str
    expected: str | None = None
    got: str | None = None
    key: str | None = None
    detail: str | None = None
    error: ErrorKind | None = None
    code: str | None = None

    @classmethod
    def make(
        cls,
        check_id: str,
        status: CheckStatus,
        party: str,
        *,
        expected: str | None = None,
        got: str | None = None,
        key: str | None = None,
        detail: str | None = None,
        error: ErrorKind | None = None,
        code: str | None = None,
    ) -> Check:
        """A validated check: known status, an error kind exactly when failed, texts shortened."""
        if status not in ("passed", "failed", "skipped"):
            raise ValueError(f"bad check status {status!r}")
        if (status == "failed") != (error is not None):
            raise ValueError("a failed check needs an error kind, and only a failed check has one")
        return cls(
            check_id, status, party, _short(expected), _short(got), _short(key), _short(detail), error, code
        )

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def skipped(self) -> bool:
        return self.status == "skipped"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; texts are cut to 200 characters here (values seen while verifying can be
        long: an ``aud`` or a merchant name is whatever the signer put there)."""
        return {
            "id": self.id,
            "status": self.status,
            "passed": self.status == "passed",
            "party": self.party,
            "expected": _short(self.expected),
            "got": _short(self.got),
            "key": _short(self.key),
            "detail": _short(self.detail),
            "error": self.error,
            "code": self.code,
        }


@dataclass(frozen=True, slots=True)
class VerificationReport:
    """Every check of one verification, in the order they were evaluated."""

    checks: tuple[Check, ...]
    evaluated_at: str
    """The time the chain was evaluated at (ISO 8601, UTC): ``now`` or the evidence time."""
    mode: Literal["online", "offline"]
    """``offline`` when every key came from a snapshot that cannot touch the network."""
    hashes: Mapping[str, str] = field(default_factory=dict)
    """The recomputed hashes of the mandates that parsed (``intent``, ``cart_contents``, ``cart``,
    ``payment_contents``): what a dispute can quote."""

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(check.passed for check in self.checks)

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.failed)

    @property
    def skipped(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.skipped)

    @property
    def first_failure(self) -> Check | None:
        for check in self.checks:
            if check.failed:
                return check
        return None

    def by_id(self, check_id: str) -> Check:
        """The check with this id; ``KeyError`` when the report has none (e.g. not applicable)."""
        for check in self.checks:
            if check.id == check_id:
                return check
        raise KeyError(check_id)

    def raise_for_failure(self) -> None:
        """Raise the typed error of the first failed check; do nothing when :attr:`ok`.

        A report with no failure but a skipped check (cannot happen from our verifier, but a report
        can be built by hand) raises :class:`~mudrika.errors.VerificationError`: fail closed.
        """
        if self.ok:
            return
        first = self.first_failure
        if first is None:
            raise VerificationError("verification incomplete", code="incomplete")
        error_type = ERROR_KINDS[first.error or "verification"]
        raise error_type(
            f"check {first.id} failed" + (f": {first.detail}" if first.detail else ""),
            code=first.code or first.id,
            check=first.id,
            party=first.party,
            expected=first.expected,
            got=first.got,
        )

    def to_dict(self) -> dict[str, Any]:
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        for check in self.checks:
            counts[check.status] += 1
        return {
            "format": REPORT_FORMAT,
            "ok": self.ok,
            "evaluated_at": self.evaluated_at,
            "mode": self.mode,
            "counts": counts,
            "hashes": dict(self.hashes),
            "checks": [check.to_dict() for check in self.checks],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """The report as one JSON document (see ``docs/payments.md`` for the format)."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)
