"""The checks only the AP2 v0.1 chain makes: time claims, mandate expiry, signed hashes, replay keys.

Why apart from the recorder (:mod:`mudrika.payments.report`): the recorder and the report are
shared with the v0.2 verifier, these rules are v0.1's own (RFC 7519 time claims with a bounded
leeway, the ``iss`` of each token bound to its signer, the replay-store key format of
``docs/payments.md``).  Each records named checks through the shared :class:`Recorder`.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from mudrika.crypto.b64url import b64url_encode
from mudrika.errors import InvalidInput
from mudrika.payments._time import Time, epoch, iso
from mudrika.payments.profile import DEFAULT_ALGORITHMS, MAX_CART_LIFETIME, MAX_LEEWAY, MAX_TOKEN_BYTES
from mudrika.payments.report import Recorder, Texts, found, same_text

if TYPE_CHECKING:
    from mudrika.payments.chain._keys import StageRules

__all__ = [
    "DEFAULT_ALGORITHMS",
    "MAX_CART_LIFETIME",
    "MAX_LEEWAY",
    "MAX_TOKEN_BYTES",
    "TIME_CLAIMS",
    "Time",
    "check_iss_is_signer",
    "check_leeway",
    "check_mandate_expiry",
    "check_signed_hash",
    "check_time_claims",
    "epoch",
    "iso",
    "numeric_date",
    "single_use_key",
]

#: The RFC 7519 time claims every JWT/JWS of the chain is checked for, in this order.
TIME_CLAIMS: Final = ("iat", "nbf", "exp")


def check_leeway(leeway: float) -> float:
    if isinstance(leeway, bool) or not isinstance(leeway, int | float) or not 0 <= leeway <= MAX_LEEWAY:
        raise InvalidInput("leeway must be between 0 and 30 seconds", code="bad_leeway", limit=MAX_LEEWAY)
    return float(leeway)


def single_use_key(namespace: str, first: str, second: str) -> str:
    """A replay-store key: ``namespace`` + base64url(SHA-256 over ``first`` NUL ``second`` in UTF-8).

    A digest, so the key has a fixed length whatever the claims hold and no raw claim text (a nonce)
    reaches a store, a log or an error; the format is documented (docs/payments.md), and stores that
    persist claims across an upgrade depend on it staying the same."""
    data = f"{first}\x00{second}".encode("utf-8", "surrogatepass")
    return namespace + b64url_encode(hashlib.sha256(data).digest())


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
