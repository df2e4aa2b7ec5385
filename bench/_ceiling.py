"""This machine's physical limit for signature verification, measured with ``openssl speed``.

Why: a throughput figure means little without the ceiling beside it.  A v0.1 chain needs four ES256
verifies, so on a core that verifies 11,000 P-256 signatures a second no implementation can check more
than about 2,750 chains a second; a row that reaches 2,000 is near the floor, one that reaches 200 is
not.  Bench rows state their own throughput per core (they time one thread) beside
:func:`limit_per_core` for the verifies the operation must do.

``bench/run_all.py`` measures once and hands the numbers to every script through the environment
(:data:`ENVIRONMENT`), so a whole run states one ceiling; a script run on its own measures for itself.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from functools import cache

__all__ = ["ALGORITHMS", "ENVIRONMENT", "export", "limit_per_core", "limits", "per_core_cell"]

ENVIRONMENT = "MUDRIKA_BENCH_OPENSSL_VERIFIES"
"""``ES256=16825,EdDSA=9868,RS256=61797``: verifies per second per core, as one run measured them."""

ALGORITHMS = ("ES256", "EdDSA", "RS256")
"""JOSE names of the algorithms measured: P-256 ECDSA, Ed25519, RSA-2048 (PKCS#1 v1.5 and PSS verify
at the same speed: the cost is the public-key operation)."""


def _measure() -> dict[str, float]:
    """One second per algorithm of ``openssl speed -mr`` (machine-readable), verifies per second."""
    completed = subprocess.run(
        ["openssl", "speed", "-seconds", "1", "-mr", "ecdsap256", "ed25519", "rsa2048"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found: dict[str, float] = {}
    for line in completed.stdout.splitlines():
        fields = line.split(":")
        # +F2:<i>:<bits>:<sign/s>:<verify/s> (RSA), +F4 the same for ECDSA, +F6:<i>:<bits>:<name>:<sign/s>:<verify/s>
        if fields[0] == "+F2" and fields[2] == "2048":
            found["RS256"] = float(fields[4])
        elif fields[0] == "+F4" and fields[2] == "256":
            found["ES256"] = float(fields[4])
        elif fields[0] == "+F6" and fields[3] == "Ed25519":
            found["EdDSA"] = float(fields[5])
    missing = [name for name in ALGORITHMS if name not in found]
    if missing:
        raise RuntimeError(f"openssl speed did not report {', '.join(missing)}")
    return found


@cache
def limits() -> dict[str, float]:
    """Verifies per second per core for each of :data:`ALGORITHMS` (from the environment when set)."""
    given = os.environ.get(ENVIRONMENT)
    if given:
        return {name: float(value) for name, value in (pair.split("=", 1) for pair in given.split(","))}
    return _measure()


def export() -> str:
    """The value of :data:`ENVIRONMENT` for child processes (measuring now if not yet measured)."""
    return ",".join(f"{name}={limits()[name]:.0f}" for name in ALGORITHMS)


def limit_per_core(verifies: Mapping[str, int]) -> float:
    """Operations per second one core can do at most when each needs ``verifies`` (``{"ES256": 4}``)."""
    seconds = sum(count / limits()[name] for name, count in verifies.items())
    return 1.0 / seconds


def per_core_cell(us_per_op: float, verifies: Mapping[str, int] | None = None) -> str:
    """``12,345/s`` (ours, one core) and, when the operation verifies signatures, `` of ≤ 2,750/s`` (its limit)."""
    ours = f"{1e6 / us_per_op:,.0f}/s"
    if not verifies:
        return ours
    return f"{ours} of ≤ {limit_per_core(verifies):,.0f}/s"
