"""Shared pieces of the AP2 v0.1 signers and chain verifier: time, limits, the check recorder.

Why a recorder: the verifier must report every named check (passed, failed or skipped) and never
raise on a failed one, yet the code that runs a check should read like straight-line verification.
:class:`Recorder` gives each stage a small vocabulary — ``passed``, ``failed``, ``skip`` and
``run`` (call a function, turn a :class:`~mudrika.errors.MudrikaError` into a failed check) — so a
stage is a list of checks in the order they depend on each other.  The AP2 v0.2 verifier uses the
same recorder (``Recorder(validate=True)``, :meth:`Recorder.run_or_stop`, :meth:`Recorder.skip_each`):
its stages stop at the first failed step instead of carrying on with ``None``.  The v0.1 stages
record a passed check's texts with ``passed_later`` / ``check_later``: formatted only when a report
is drawn, since ``verify_cart`` and ``verify_chain`` return without one on the pass path.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypedDict, TypeVar, Unpack, cast

from mudrika.crypto._b64 import b64url_encode
from mudrika.errors import InvalidInput, MudrikaError
from mudrika.payments._time import Time, epoch, iso
from mudrika.payments.chain.report import Check, ErrorKind, error_kind_of
from mudrika.payments.profile import DEFAULT_ALGORITHMS, MAX_CART_LIFETIME, MAX_LEEWAY, MAX_TOKEN_BYTES

if TYPE_CHECKING:
    from mudrika.payments.chain._keys import StageRules

__all__ = [
    "DEFAULT_ALGORITHMS",
    "MAX_CART_LIFETIME",
    "MAX_LEEWAY",
    "MAX_TOKEN_BYTES",
    "TIME_CLAIMS",
    "CheckNotes",
    "Deferred",
    "FailureNotes",
    "Recorder",
    "StepFailed",
    "Texts",
    "Time",
    "check_leeway",
    "check_mandate_expiry",
    "check_signed_hash",
    "check_time_claims",
    "epoch",
    "fingerprint",
    "found",
    "iso",
    "no_texts",
    "numeric_date",
    "same_text",
    "single_use_key",
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


def single_use_key(namespace: str, first: str, second: str) -> str:
    """A replay-store key: ``namespace`` + base64url(SHA-256 over ``first`` NUL ``second`` in UTF-8).

    A digest, so the key has a fixed length whatever the claims hold and no raw claim text (a nonce)
    reaches a store, a log or an error; the format is documented (docs/payments.md), and stores that
    persist claims across an upgrade depend on it staying the same."""
    data = f"{first}\x00{second}".encode("utf-8", "surrogatepass")
    return namespace + b64url_encode(hashlib.sha256(data).digest())


class StepFailed(Exception):
    """Raised by :meth:`Recorder.run_or_stop` after it recorded a failure: the stage stops there."""


#: What a check expected and what it got, as the report shows them.
Texts = tuple[str | None, str | None]


#: A passed check not formatted yet: ``(id, party, key, texts, values)``; a plain tuple is the
#: cheapest record Python builds (a :class:`Check` is a ``NamedTuple``, never a plain tuple).
Deferred = tuple[str, str, str | None, Callable[..., Texts], tuple[Any, ...]]


def _given(expected: str | None, got: str | None) -> Texts:
    return expected, got


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
            said_expected, said_got = exc.fields.get("expected"), exc.fields.get("got")
            if expected is None and said_expected is not None:
                expected = str(said_expected)
            got = None if said_got is None else str(said_got)
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


def check_signed_hash(
    rec: Recorder, check_id: str, party: str, signed: Any, recomputed: str, *, code: str, key: str
) -> bool:
    """Record a hash a party signed against the one recomputed from the bytes received (a binding
    check; the report shows the signed value cut to 64 characters)."""
    return rec.check_later(
        check_id,
        party,
        same_text(signed, recomputed),
        found,
        recomputed,
        signed,
        64,
        error="binding",
        code=code,
        key=key,
    )


def check_iss_is_signer(
    rec: Recorder,
    check_id: str,
    party: str,
    claims: Mapping[str, Any],
    owner: str | None,
    *,
    code: str,
    key: str,
) -> bool:
    """Record that the token's ``iss`` (RFC 7519 §4.1.1) is the party whose key signed it -- the
    DID that owns the ``kid`` -- so a key of one party cannot speak for another."""
    iss = claims.get("iss")
    return rec.check_later(
        check_id, party, iss == owner, found, owner, iss, error="binding", code=code, key=key
    )


def found(expected: str | None, value: Any, limit: int | None = None) -> Texts:
    """The texts of a comparison: what was expected, and the value found as text (cut to ``limit``)."""
    return expected, str(value)[:limit]


def _evaluated_before(deadline: str, now: float) -> Texts:
    """The texts of an expiry check: the deadline as the mandate wrote it, and the evaluation time."""
    return f"evaluated before {deadline}", f"evaluated at {iso(now)}"


def check_mandate_expiry(
    rec: Recorder,
    rules: StageRules,
    check_id: str,
    party: str,
    deadline: str,
    expires_at: float,
    *,
    code: str,
) -> bool:
    """Record a mandate's own expiry (``intent_expiry``, ``cart_expiry``): valid strictly before
    ``expires_at + leeway``, the same rule as a JWT's ``exp``."""
    now, leeway = rules.now, rules.leeway
    return rec.check_later(
        check_id,
        party,
        now < expires_at + leeway,
        _evaluated_before,
        deadline,
        now,
        error="expired",
        code=code,
    )


def numeric_date(value: Any) -> float | None:
    """A JWT NumericDate as seconds; ``None`` for anything else (``bool``, text, NaN, infinity)."""
    kind = type(value)
    if kind is int or kind is float:
        # What the strict parser returns: one identity test instead of three isinstance() calls (a
        # ``bool`` is an ``int`` subclass, so it never takes this path).
        return float(value) if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def check_time_claims(
    rec: Recorder,
    rules: StageRules,
    prefix: str,
    party: str,
    claims: Mapping[str, Any],
    *,
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
    now, leeway = rules.now, rules.leeway
    mark = rec.last_not_passed
    iat_id, nbf_id, exp_id = _time_ids(prefix)
    raw_iat = claims.get("iat")
    iat = numeric_date(raw_iat)
    newest = now + leeway
    oldest = now - max_age - leeway if max_age is not None else None
    rec.check_later(
        iat_id,
        party,
        iat is not None and iat <= newest and (oldest is None or oldest <= iat),
        _iat_texts,
        iat,
        raw_iat,
        oldest,
        newest,
        error="expired" if iat is not None and oldest is not None and iat < oldest else "verification",
        code="iat_invalid" if iat is None or iat > newest else "too_old",
        key=key,
    )
    if "nbf" in claims:
        raw_nbf = claims["nbf"]
        nbf = numeric_date(raw_nbf)
        rec.check_later(
            nbf_id,
            party,
            nbf is not None and now >= nbf - leeway,
            _nbf_texts,
            nbf,
            raw_nbf,
            leeway,
            now,
            error="expired",
            code="not_yet_valid",
            key=key,
        )
    else:
        rec.passed(nbf_id, party, expected="nbf honoured when present", got="no nbf", key=key)
    if "exp" in claims or require_exp:
        raw_exp = claims.get("exp")
        exp = numeric_date(raw_exp)
        rec.check_later(
            exp_id,
            party,
            exp is not None and now < exp + leeway,
            _exp_texts,
            exp,
            raw_exp,
            leeway,
            now,
            error="expired",
            code="expired" if exp is not None else "exp_missing",
            key=key,
        )
    else:
        rec.passed(exp_id, party, expected="exp honoured when present", got="no exp", key=key)
    if rec.last_not_passed != mark:
        return None
    return iat  # not None: the iat check above passed


@functools.lru_cache(maxsize=16)
def _time_ids(prefix: str) -> tuple[str, str, str]:
    """``{prefix}.iat|nbf|exp``: the same four prefixes recur, so their ids are built once."""
    iat_id, nbf_id, exp_id = (f"{prefix}.{claim}" for claim in TIME_CLAIMS)
    return iat_id, nbf_id, exp_id


def _iat_texts(iat: float | None, raw: Any, oldest: float | None, newest: float) -> Texts:
    window = f"[{iso(oldest)}, {iso(newest)}]" if oldest is not None else f"not after {iso(newest)}"
    return f"iat a NumericDate {window}", iso(iat) if iat is not None else str(raw)[:32]


def _nbf_texts(nbf: float | None, raw: Any, leeway: float, now: float) -> Texts:
    return (
        f"evaluated at or after nbf - leeway = {iso(nbf - leeway) if nbf is not None else '?'}",
        f"nbf={iso(nbf) if nbf is not None else str(raw)[:32]}, evaluated at {iso(now)}",
    )


def _exp_texts(exp: float | None, raw: Any, leeway: float, now: float) -> Texts:
    return (
        f"evaluated before exp + leeway = {iso(exp + leeway) if exp is not None else '?'}",
        f"exp={iso(exp) if exp is not None else str(raw)[:32]}, evaluated at {iso(now)}",
    )
