"""One compact JWS checked as four named checks: header, key, alg, signature (RFC 7515 §5.2).

Why split one verification into four checks: in a dispute "the signature is bad", "the key is not
the merchant's" and "the algorithm is not allowed" mean different things (a forgery, a wrong or
rotated key, a downgrade attempt).  The JWS is still verified by :func:`mudrika.crypto.jose.verify_compact`
in a single pass — the header is parsed once — and the phase that raised tells which check failed;
the phases after it are reported as skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import KeyResolver, TrustedKey, verify_compact
from mudrika.errors import InvalidInput, MudrikaError, VerificationError
from mudrika.payments.chain._common import MAX_TOKEN_BYTES, Recorder
from mudrika.payments.chain._keys import ResolvedKey

__all__ = ["JWS_PHASES", "CheckedJWS", "check_jws", "run_jws_phases"]

#: Sub-check suffixes in the order they run.
JWS_PHASES: Final = ("header", "key", "alg", "signature")

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class CheckedJWS:
    header: Mapping[str, Any]
    claims: dict[str, Any]
    key: ResolvedKey


class _Phase:
    __slots__ = ("header", "name", "resolved")

    def __init__(self) -> None:
        self.name = "header"
        self.header: Mapping[str, Any] = {}
        self.resolved: ResolvedKey | None = None


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

    ``verify`` must call the resolver it is given with the parsed protected header (as
    :func:`~mudrika.crypto.jose.verify_compact` does) before checking the signature.  ``resolve``
    gets that header and returns the owner's key or raises.  Anything ``verify`` raises after the
    resolver returned is a failed ``signature`` check (the signed content is unusable).
    """
    phase = _Phase()

    def key_for(header: Mapping[str, Any]) -> TrustedKey:
        # RFC 7515 §5.2 step 5 passed inside verify_compact: the header is understood.
        phase.header = header
        phase.name = "key"
        resolved = resolve(header)
        phase.resolved = resolved
        phase.name = "alg"
        trusted = resolved.trusted(algorithms)
        alg = header.get("alg")
        if trusted is None or alg not in trusted.algorithms:
            raise VerificationError(
                "algorithm not allowed for this key",
                code="alg_not_allowed",
                alg=str(alg)[:16],
                allowed=sorted(trusted.algorithms if trusted else ()),
            )
        phase.name = "signature"
        return trusted

    try:
        result = verify(key_for)
    except MudrikaError as exc:
        failed_at = JWS_PHASES.index(phase.name)
        kid = phase.resolved.kid if phase.resolved else None
        for name in JWS_PHASES[:failed_at]:
            rec.passed(f"{prefix}.{name}", party, key=kid if name != "header" else None)
        rec.from_error(f"{prefix}.{phase.name}", party, exc, key=kid)
        rec.skip(
            ((f"{prefix}.{name}", party) for name in JWS_PHASES[failed_at + 1 :]),
            because=f"{prefix}.{phase.name} failed",
        )
        return None
    resolved = phase.resolved
    assert resolved is not None  # verify() called key_for before it checked the signature
    header = phase.header
    alg = str(header.get("alg"))
    typ = f", typ={header['typ']}" if "typ" in header else ""
    rec.passed(f"{prefix}.header", party, got=f"alg={alg}{typ}")
    rec.passed(f"{prefix}.key", party, got=f"{resolved.source} key of {resolved.owner}", key=resolved.kid)
    rec.passed(f"{prefix}.alg", party, expected=",".join(sorted(algorithms)), got=alg, key=resolved.kid)
    rec.passed(f"{prefix}.signature", party, key=resolved.kid)
    return result, resolved


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

    The signature check also requires the payload to be a JSON object.
    """

    def verify(key_for: KeyResolver) -> tuple[Mapping[str, Any], dict[str, Any]]:
        verified = verify_compact(token, key=key_for, expected_typ=expected_typ, max_bytes=MAX_TOKEN_BYTES)
        claims = loads_strict(verified.payload, max_bytes=MAX_TOKEN_BYTES, max_depth=32)
        if not isinstance(claims, dict):
            raise InvalidInput("JWT payload is not a JSON object", code="malformed_jwt")
        return verified.header, claims

    outcome = run_jws_phases(rec, prefix, party, verify, resolve=resolve, algorithms=algorithms)
    if outcome is None:
        return None
    (header, claims), resolved = outcome
    return CheckedJWS(header=header, claims=claims, key=resolved)
