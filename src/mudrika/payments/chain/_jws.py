"""One compact JWS checked as four named checks: header, key, alg, signature (RFC 7515 §5.2).

Why split one verification into four checks: in a dispute "the signature is bad", "the key is not
the merchant's" and "the algorithm is not allowed" mean different things (a forgery, a wrong or
rotated key, a downgrade attempt).  The JWS is still verified in a single pass through the steps of
:func:`mudrika.crypto.jose.verify_compact` — the header is parsed once — and the phase that raised
tells which check failed; the phases after it are reported as skipped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple, TypeVar

from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import KeyResolver, TrustedKey, open_compact, verify_opened
from mudrika.errors import IncompleteVerification, InvalidInput, MudrikaError, VerificationError
from mudrika.payments.chain._common import MAX_TOKEN_BYTES
from mudrika.payments.chain._keys import ResolvedKey
from mudrika.payments.report import Recorder, Texts, no_texts, said_texts

__all__ = ["JWS_PHASES", "CheckedJWS", "check_jws", "run_jws_phases"]

#: Sub-check suffixes in the order they run.
JWS_PHASES: Final = ("header", "key", "alg", "signature")

R = TypeVar("R")


class CheckedJWS(NamedTuple):
    """A verified JWS: its header, its claims, the key it verified with.  The stages' facts are
    named tuples: immutable like a frozen dataclass, at a third of the cost to build."""

    header: Mapping[str, Any]
    claims: dict[str, Any]
    key: ResolvedKey


class _Phase:
    __slots__ = ("header", "name", "resolved")

    def __init__(self) -> None:
        self.name = "header"
        self.header: Mapping[str, Any] = {}
        self.resolved: ResolvedKey | None = None


@functools.lru_cache(maxsize=64)
def _listed(algorithms: frozenset[str]) -> str:
    """The allow-list as the report shows it (sorted, comma-separated); the same few sets recur."""
    return ",".join(sorted(algorithms))


def _allowed_key(resolved: ResolvedKey, algorithms: frozenset[str], alg: Any) -> TrustedKey:
    """The ``alg`` phase: the policy ∩ the key's own algorithms must admit the header's ``alg``."""
    trusted = resolved.trusted(algorithms)
    if trusted is None or alg not in trusted.algorithms:
        # ``expected`` and ``got`` are what the report shows beside the refusal (see _record_failure).
        raise VerificationError(
            "algorithm not allowed for this key",
            code="alg_not_allowed",
            expected=_listed(trusted.algorithms)
            if trusted
            else "none: the policy allows no algorithm of this key",
            got=str(alg)[:16],
        )
    return trusted


def _record_failure(
    rec: Recorder, prefix: str, party: str, failed_at: int, exc: MudrikaError, resolved: ResolvedKey | None
) -> None:
    """The phases before ``failed_at`` passed, that one failed with ``exc``, the later ones skipped.

    The failed check shows the ``expected`` and ``got`` the error names, when it names them (the
    allow-list and the header's ``alg``; the ``typ`` a stage requires), as a reader compares them.
    """
    kid = resolved.kid if resolved else None
    for name in JWS_PHASES[:failed_at]:
        rec.passed(f"{prefix}.{name}", party, key=kid if name != "header" else None)
    name = JWS_PHASES[failed_at]
    expected, got = said_texts(exc)
    rec.from_error(f"{prefix}.{name}", party, exc, key=kid, expected=expected, got=got)
    rec.skip(
        ((f"{prefix}.{later}", party) for later in JWS_PHASES[failed_at + 1 :]),
        because=f"{prefix}.{name} failed",
    )


def _record_passed(
    rec: Recorder,
    prefix: str,
    party: str,
    header: Mapping[str, Any],
    resolved: ResolvedKey,
    algorithms: frozenset[str],
) -> None:
    """The four phases passed: recorded in one call, texts formatted when a report is drawn."""
    header_id, key_id, alg_id, signature_id = _phase_ids(prefix)
    kid = resolved.kid
    alg = header.get("alg")
    rec.passed_later_all(
        (
            (header_id, party, None, _header_texts, (alg, header.get("typ", _NO_TYP))),
            (key_id, party, kid, _key_texts, (resolved,)),
            (alg_id, party, kid, _alg_texts, (algorithms, alg)),
            (signature_id, party, kid, no_texts, ()),
        )
    )


def run_jws_phases(
    rec: Recorder,
    prefix: str,
    party: str,
    verify: Callable[[KeyResolver], R],
    *,
    resolve: Callable[[Mapping[str, Any]], ResolvedKey],
    algorithms: frozenset[str],
) -> tuple[R, ResolvedKey] | None:
    """Run ``verify(key_resolver)`` and record ``{prefix}.header|key|alg|signature``.

    For a JWS that another module verifies (the SD-JWT issuer JWT): ``verify`` must call the resolver
    it is given with the parsed protected header (as :func:`~mudrika.crypto.jose.verify_compact`
    does) before checking the signature.  ``resolve`` gets that header and returns the owner's key or
    raises.  Anything ``verify`` raises after the resolver returned is a failed ``signature`` check
    (the signed content is unusable).  :func:`check_jws` records the same checks for a plain JWS.
    """
    phase = _Phase()

    def key_for(header: Mapping[str, Any]) -> TrustedKey:
        # RFC 7515 §5.2 step 5 passed inside verify_compact: the header is understood.
        phase.header = header
        phase.name = "key"
        resolved = resolve(header)
        phase.resolved = resolved
        phase.name = "alg"
        trusted = _allowed_key(resolved, algorithms, header.get("alg"))
        phase.name = "signature"
        return trusted

    try:
        result = verify(key_for)
    except MudrikaError as exc:
        _record_failure(rec, prefix, party, JWS_PHASES.index(phase.name), exc, phase.resolved)
        return None
    resolved = phase.resolved
    if resolved is None:
        # ``verify`` returned without asking for a key: nothing says whose signature this is, so
        # the JWS is refused at its key check, never taken as verified.
        _record_failure(
            rec,
            prefix,
            party,
            JWS_PHASES.index("key"),
            IncompleteVerification("the JWS was never checked against a key"),
            None,
        )
        return None
    _record_passed(rec, prefix, party, phase.header, resolved, algorithms)
    return result, resolved


_NO_TYP: Final = object()


@functools.lru_cache(maxsize=64)
def _phase_ids(prefix: str) -> tuple[str, ...]:
    return tuple(f"{prefix}.{name}" for name in JWS_PHASES)


def _header_texts(alg: Any, typ: Any) -> Texts:
    return None, f"alg={alg}" + ("" if typ is _NO_TYP else f", typ={typ}")


def _key_texts(resolved: ResolvedKey) -> Texts:
    return None, f"{resolved.source} key of {resolved.owner}"


def _alg_texts(algorithms: frozenset[str], alg: Any) -> Texts:
    return _listed(algorithms), str(alg)


def check_jws(
    rec: Recorder,
    prefix: str,
    party: str,
    token: str,
    *,
    resolve: Callable[[Mapping[str, Any]], ResolvedKey],
    algorithms: frozenset[str],
    expected_typ: str | None,
) -> CheckedJWS | None:
    """Verify a compact JWS whose payload is a JWT claims set; record the four checks.

    The phases run in straight-line code (:func:`~mudrika.crypto.jose.open_compact`, then the key,
    the algorithm, and :func:`~mudrika.crypto.jose.verify_opened`): the steps of ``verify_compact``,
    without the resolver callback and the phase bookkeeping a callback needs.  The signature check
    also requires the payload to be a JSON object.
    """
    phase = 0  # index in JWS_PHASES of the step running: the one that failed if anything raises
    resolved: ResolvedKey | None = None
    try:
        opened = open_compact(token, expected_typ=expected_typ, max_bytes=MAX_TOKEN_BYTES)
        header = opened.header
        phase = 1
        key = resolved = resolve(header)
        phase = 2
        trusted = _allowed_key(key, algorithms, header.get("alg"))
        phase = 3
        payload = verify_opened(opened, key=trusted)
        claims = loads_strict(payload, max_bytes=MAX_TOKEN_BYTES, max_depth=32)
        if not isinstance(claims, dict):
            raise InvalidInput("JWT payload is not a JSON object", code="malformed_jwt")
    except MudrikaError as exc:
        _record_failure(rec, prefix, party, phase, exc, resolved)
        return None
    _record_passed(rec, prefix, party, header, key, algorithms)
    return CheckedJWS(header, claims, key)
