"""Shared pieces of the AP2 v0.1 signers and chain verifier: time, limits, the check recorder.

Why a recorder: the verifier must report every named check (passed, failed or skipped) and never
raise on a failed one, yet the code that runs a check should read like straight-line verification.
:class:`Recorder` gives each stage a small vocabulary — ``passed``, ``failed``, ``skip`` and
``run`` (call a function, turn a :class:`~mudrika.errors.MudrikaError` into a failed check) — so a
stage is a list of checks in the order they depend on each other.  The AP2 v0.2 verifier uses the
same recorder (``Recorder(validate=True)``, :meth:`Recorder.run_or_stop`, :meth:`Recorder.skip_each`):
its stages stop at the first failed step instead of carrying on with ``None``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

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
    "TIME_CLAIMS",
    "Recorder",
    "StepFailed",
    "Time",
    "check_leeway",
    "check_time_claims",
    "epoch",
    "fingerprint",
    "iso",
    "numeric_date",
]

T = TypeVar("T")

#: The RFC 7519 time claims every JWT/JWS of the chain is checked for, in this order.
TIME_CLAIMS: Final = ("iat", "nbf", "exp")


def check_leeway(leeway: float) -> float:
    if isinstance(leeway, bool) or not isinstance(leeway, int | float) or not 0 <= leeway <= MAX_LEEWAY:
        raise InvalidInput("leeway must be between 0 and 30 seconds", code="bad_leeway", limit=MAX_LEEWAY)
    return float(leeway)


def fingerprint(text: str) -> str:
    """A short, non-reversible label for a value that should not be printed (a nonce, a token)."""
    return "sha256:" + b64url_encode(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())[:16]


class StepFailed(Exception):
    """Raised by :meth:`Recorder.run_or_stop` after it recorded a failure: the stage stops there."""


class Recorder:
    """Collects :class:`Check` results in evaluation order.

    ``validate`` builds every check with :meth:`Check.make` (status and error kind validated, long
    texts shortened), as the v0.2 report promises; the v0.1 report keeps its texts whole.
    """

    __slots__ = ("_validate", "checks")

    def __init__(self, *, validate: bool = False) -> None:
        self.checks: list[Check] = []
        self._validate = validate

    def _add(self, check: Check) -> None:
        if self._validate:
            check = Check.make(
                check.id,
                check.status,
                check.party,
                expected=check.expected,
                got=check.got,
                key=check.key,
                detail=check.detail,
                error=check.error,
                code=check.code,
            )
        self.checks.append(check)

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
        self._add(Check(check_id, "passed", party, expected, got, key, detail))

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
        self._add(Check(check_id, "failed", party, expected, got, key, detail, error, code))

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
            self._add(Check(check_id, "skipped", party, detail=f"not run: {because}"))

    def skip_each(self, check_ids: Iterable[str], party: str, *, detail: str) -> None:
        """Record each of ``check_ids`` of one ``party`` as skipped (never counted as passed)."""
        for check_id in check_ids:
            self._add(Check(check_id, "skipped", party, detail=detail))

    def run_or_stop(
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
            said_expected, said_got = exc.fields.get("expected"), exc.fields.get("got")
            if expected is None and said_expected is not None:
                expected = str(said_expected)
            got = None if said_got is None else str(said_got)
            self.from_error(check_id, party, exc, expected=expected, got=got, key=key)
            raise StepFailed(check_id) from None
        self.passed(check_id, party, expected=expected, got=got, key=key, detail=detail)
        return result

    def all_passed_since(self, start: int) -> bool:
        return all(check.passed for check in self.checks[start:])


def numeric_date(value: Any) -> float | None:
    """A JWT NumericDate as seconds; ``None`` for anything else (``bool``, text, NaN, infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def check_time_claims(
    rec: Recorder,
    prefix: str,
    party: str,
    claims: Mapping[str, Any],
    *,
    now: float,
    leeway: float,
    key: str | None,
    require_exp: bool,
    max_age: float | None = None,
) -> float | None:
    """The one boundary rule for every time claim of every JWT/JWS of the chain (RFC 7519 §4.1.4-6).

    Records ``{prefix}.iat``, ``{prefix}.nbf`` and ``{prefix}.exp``, each a named check:

    * ``iat`` is required, a NumericDate, and not in the future: ``iat <= now + leeway``; with
      ``max_age`` also not older than ``now - max_age - leeway`` (both ends inclusive);
    * ``nbf``, when present, must be a NumericDate and ``now >= nbf - leeway`` (valid from that
      instant on, inclusive);
    * ``exp`` (required when ``require_exp``), when present, a NumericDate with ``now < exp + leeway``:
      valid strictly before ``exp + leeway``; at exactly ``exp + leeway`` the token has expired.

    Returns ``iat`` when all three passed, else ``None``.
    """
    start = len(rec.checks)
    iat = numeric_date(claims.get("iat"))
    newest = now + leeway
    oldest = now - max_age - leeway if max_age is not None else None
    iat_ok = iat is not None and iat <= newest and (oldest is None or oldest <= iat)
    window = f"[{iso(oldest)}, {iso(newest)}]" if oldest is not None else f"not after {iso(newest)}"
    rec.check(
        f"{prefix}.iat",
        party,
        iat_ok,
        error="expired" if iat is not None and oldest is not None and iat < oldest else "verification",
        code="iat_invalid" if iat is None or iat > newest else "too_old",
        expected=f"iat a NumericDate {window}",
        got=iso(iat) if iat is not None else str(claims.get("iat"))[:32],
        key=key,
    )
    if "nbf" in claims:
        nbf = numeric_date(claims["nbf"])
        rec.check(
            f"{prefix}.nbf",
            party,
            nbf is not None and now >= nbf - leeway,
            error="expired",
            code="not_yet_valid",
            expected=f"evaluated at or after nbf - leeway = {iso(nbf - leeway) if nbf is not None else '?'}",
            got=f"nbf={iso(nbf) if nbf is not None else str(claims['nbf'])[:32]}, evaluated at {iso(now)}",
            key=key,
        )
    else:
        rec.passed(f"{prefix}.nbf", party, expected="nbf honoured when present", got="no nbf", key=key)
    if "exp" in claims or require_exp:
        exp = numeric_date(claims.get("exp"))
        rec.check(
            f"{prefix}.exp",
            party,
            exp is not None and now < exp + leeway,
            error="expired",
            code="expired" if exp is not None else "exp_missing",
            expected=f"evaluated before exp + leeway = {iso(exp + leeway) if exp is not None else '?'}",
            got=f"exp={iso(exp) if exp is not None else str(claims.get('exp'))[:32]}, evaluated at {iso(now)}",
            key=key,
        )
    else:
        rec.passed(f"{prefix}.exp", party, expected="exp honoured when present", got="no exp", key=key)
    if not rec.all_passed_since(start):
        return None
    assert iat is not None
    return iat
