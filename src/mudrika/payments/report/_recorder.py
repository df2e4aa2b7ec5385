"""The check recorder both AP2 verifiers write their verdicts with.

Why a recorder: a verifier must report every named check (passed, failed or skipped) and never
raise on a failed one, yet the code that runs a check should read like straight-line verification.
:class:`Recorder` gives each stage a small vocabulary — ``passed``, ``failed``, ``skip`` and
``run`` (call a function, turn a :class:`~mudrika.errors.MudrikaError` into a failed check) — so a
stage is a list of checks in the order they depend on each other.  The AP2 v0.2 verifier uses it
with ``Recorder(validate=True)``, :meth:`Recorder.run_or_stop` and :meth:`Recorder.skip_each`: its
stages stop at the first failed step instead of carrying on with ``None``.  The v0.1 stages record
a passed check's texts with ``passed_later`` / ``check_later``: formatted only when a report is
drawn, since ``verify_cart`` and ``verify_chain`` return without one on the pass path.  Nothing here
knows either profile's check ids: those, and what they mean, belong to the profile.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from typing import Any, TypedDict, TypeVar, Unpack, cast

from mudrika.crypto.b64url import b64url_encode
from mudrika.errors import MudrikaError
from mudrika.payments.report._model import Check, ErrorKind, error_kind_of

__all__ = [
    "CheckNotes",
    "Deferred",
    "FailureNotes",
    "Recorder",
    "StepFailed",
    "Texts",
    "fingerprint",
    "found",
    "no_texts",
    "said_texts",
    "same_text",
]

T = TypeVar("T")


def fingerprint(text: str) -> str:
    """A short, non-reversible label for a value that should not be printed (a nonce, a token)."""
    return "sha256:" + b64url_encode(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())[:16]


class StepFailed(Exception):
    """Raised by :meth:`Recorder.run_or_stop` after it recorded a failure: the stage stops there."""


#: What a check expected and what it got, as the report shows them.
Texts = tuple[str | None, str | None]


#: A passed check not formatted yet: ``(id, party, key, texts, values)``; a plain tuple is the
#: cheapest record Python builds (a :class:`Check` is a ``NamedTuple``, never a plain tuple).
Deferred = tuple[str, str, str | None, Callable[..., Texts], tuple[Any, ...]]


def _given(expected: str | None, got: str | None) -> Texts:
    return expected, got


def said_texts(exc: MudrikaError) -> Texts:
    """The ``expected`` and ``got`` an error names in its fields, as text (``None`` when it names
    none): what the failed check made from it shows, since the code that raised knows what it saw."""
    expected, got = exc.fields.get("expected"), exc.fields.get("got")
    return None if expected is None else str(expected), None if got is None else str(got)


def no_texts() -> Texts:
    """The texts of a check that shows neither an expected nor a found value (a verified signature)."""
    return None, None


def _formatted(entry: Deferred) -> Check:
    check_id, party, key, texts, values = entry
    expected, got = texts(*values)
    return Check(check_id, "passed", party, expected, got, key)


class FailureNotes(TypedDict, total=False):
    """What a failed check may say beyond its id, party and error: the texts a reader compares, and
    the key it concerns.  Keyword arguments of the recorder's failure methods, named once here."""

    expected: str | None
    got: str | None
    key: str | None


class CheckNotes(FailureNotes, total=False):
    """:class:`FailureNotes` plus a free-text ``detail``."""

    detail: str | None


class Recorder:
    """Collects :class:`Check` results in evaluation order.

    ``validate`` builds every check with :meth:`Check.make` (status and error kind validated, long
    texts shortened), as the v0.2 report promises; the v0.1 report keeps its texts whole.

    Why :meth:`passed_later` and :meth:`check_later`: on the pass path most of the cost of a check is
    formatting what it expected and got, and :func:`~mudrika.payments.chain.verify_cart` /
    ``verify_chain`` return without drawing a report.  Those two record the values and a function
    that formats them; :attr:`checks` formats them when it is read.  A failed check is formatted at
    once.
    """

    __slots__ = ("_entries", "_pending", "_validate", "last_not_passed")

    def __init__(self, *, validate: bool = False) -> None:
        self._entries: list[Check | Deferred] = []
        self._validate = validate
        self._pending = False
        self.last_not_passed = -1
        """Index of the latest check that did not pass (-1: none); read-only for callers.

        "Did every check of this stage pass?" is then one comparison instead of a walk over the
        stage's checks: a stage notes the value when it starts and compares at its end (equal means
        nothing failed or was skipped in between; an attribute read, where :meth:`all_passed_since`
        and ``len()`` are two calls per stage on the pass path)."""

    def __len__(self) -> int:
        """How many checks were recorded (a stage's first index, for :meth:`all_passed_since`)."""
        return len(self._entries)

    @property
    def checks(self) -> list[Check]:
        """Every check in evaluation order, deferred texts formatted now."""
        entries = self._entries
        if self._pending:
            for index, entry in enumerate(entries):
                if not isinstance(entry, Check):
                    entries[index] = _formatted(entry)
            self._pending = False
        return cast(list[Check], entries)

    @property
    def all_passed(self) -> bool:
        """True when at least one check was recorded and every one passed."""
        return bool(self._entries) and self.last_not_passed < 0

    def _add(self, check: Check) -> None:
        if check.status != "passed":
            self.last_not_passed = len(self._entries)
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
        self._entries.append(check)

    def passed_later(
        self, check_id: str, party: str, texts: Callable[..., Texts], *values: Any, key: str | None = None
    ) -> None:
        """Record a passed check whose texts are ``texts(*values)``, formatted when the report is drawn."""
        if self._validate:
            expected, got = texts(*values)
            self._add(Check(check_id, "passed", party, expected, got, key))
        else:
            self._entries.append((check_id, party, key, texts, values))
            self._pending = True

    def passed_later_all(self, deferred: tuple[Deferred, ...]) -> None:
        """Record checks that passed together, each ``(id, party, key, texts, values)`` as
        :meth:`passed_later` takes them: one call for a group that only passes as a whole (the four
        phases of a verified JWS)."""
        if self._validate:
            for entry in deferred:
                self._add(_formatted(entry))
        else:
            self._entries.extend(deferred)
            self._pending = True

    def check_later(
        self,
        check_id: str,
        party: str,
        ok: bool,
        texts: Callable[..., Texts],
        *values: Any,
        error: ErrorKind,
        code: str,
        key: str | None = None,
    ) -> bool:
        """:meth:`check` with its texts made by ``texts(*values)``: later when ``ok``, now when not."""
        if ok and not self._validate:
            self._entries.append((check_id, party, key, texts, values))
            self._pending = True
            return ok
        expected, got = texts(*values)
        if ok:
            self._add(Check(check_id, "passed", party, expected, got, key))
        else:
            self._add(Check(check_id, "failed", party, expected, got, key, None, error, code))
        return ok

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
        if detail is None and not self._validate:
            # Texts already made: only the Check itself is left for when the report is drawn.
            self._entries.append((check_id, party, key, _given, (expected, got)))
            self._pending = True
        else:
            self._add(Check(check_id, "passed", party, expected, got, key, detail))

    def failed(
        self, check_id: str, party: str, *, error: ErrorKind, code: str, **notes: Unpack[CheckNotes]
    ) -> None:
        expected, got, key, detail = (
            notes.get("expected"),
            notes.get("got"),
            notes.get("key"),
            notes.get("detail"),
        )
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
        if ok and detail is None and not self._validate:
            # What :meth:`passed` records, without a second call on the pass path.
            self._entries.append((check_id, party, key, _given, (expected, got)))
            self._pending = True
        elif ok:
            self._add(Check(check_id, "passed", party, expected, got, key, detail))
        else:
            self._add(Check(check_id, "failed", party, expected, got, key, detail, error, code))
        return ok

    def from_error(self, check_id: str, party: str, exc: MudrikaError, **notes: Unpack[FailureNotes]) -> None:
        """A failed check from an exception (its message is generic and secret-free by contract)."""
        self.failed(check_id, party, error=error_kind_of(exc), code=exc.code, detail=exc.message, **notes)

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

    def run_or_stop(self, check_id: str, party: str, step: Callable[[], T], **notes: Unpack[CheckNotes]) -> T:
        """Run ``step``; record it passed, or record the error it raised and raise :class:`StepFailed`.

        On failure the error's own ``expected`` (when the caller gave none) and ``got`` fields are
        what the check shows: the step knows what it saw."""
        expected, key = notes.get("expected"), notes.get("key")
        try:
            result = step()
        except MudrikaError as exc:
            said_expected, got = said_texts(exc)
            if expected is None:
                expected = said_expected
            self.from_error(check_id, party, exc, expected=expected, got=got, key=key)
            raise StepFailed(check_id) from None
        self.passed(
            check_id, party, expected=expected, got=notes.get("got"), key=key, detail=notes.get("detail")
        )
        return result

    def all_passed_since(self, start: int) -> bool:
        """True when every check recorded from index ``start`` on passed (none failed or skipped)."""
        return self.last_not_passed < start


def same_text(got: Any, expected: str) -> bool:
    """``got`` is the text ``expected``, compared in constant time (hashes, audiences, nonces)."""
    return isinstance(got, str) and hmac.compare_digest(got.encode(), expected.encode())


def found(expected: str | None, value: Any, limit: int | None = None) -> Texts:
    """The texts of a comparison: what was expected, and the value found as text (cut to ``limit``)."""
    return expected, str(value)[:limit]
