"""One exception hierarchy for all of mudrika.

Why one tree: callers must be able to write ``except VerificationError`` and know that every failed
check lands there (fail closed), while malformed input and unavailable services are told apart so a
server can answer 400-ish, 401/403-ish and 503-ish differently.  Every error carries a stable machine
``code`` and structured fields; messages never contain secrets, tokens or private key material.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BindingError",
    "EgressDenied",
    "ExpiredError",
    "IdpUnavailable",
    "InvalidInput",
    "KeyStoreError",
    "MudrikaError",
    "NotYetValidError",
    "PolicyDenied",
    "ReplayError",
    "ResolutionError",
    "SignatureError",
    "UnavailableError",
    "UntrustedKeyError",
    "VerificationError",
]


class MudrikaError(Exception):
    """Base class.  ``code`` is a stable machine identifier; ``fields`` are structured, secret-free."""

    default_code = "error"

    def __init__(self, message: str, *, code: str | None = None, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.fields: dict[str, Any] = fields

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class InvalidInput(MudrikaError):
    """Malformed JSON, DID, key, token or mandate: the input could not even be checked."""

    default_code = "invalid_input"


class KeyStoreError(MudrikaError):
    """A key file could not be written or read safely (permissions, existing file, bad password)."""

    default_code = "keystore"


class VerificationError(MudrikaError):
    """Anything that failed a check.  Catching this must always mean *deny*."""

    default_code = "verification_failed"


class SignatureError(VerificationError):
    default_code = "bad_signature"


class ExpiredError(VerificationError):
    default_code = "expired"


class NotYetValidError(VerificationError):
    """A time claim says "not before" a moment still ahead (``nbf``, a signature ``created`` in the
    future).  Not an :class:`ExpiredError`: telling the client "expired" makes it refresh, which
    cannot help."""

    default_code = "not_yet_valid"


class EgressDenied(VerificationError):
    """An outbound fetch was refused by the egress policy (address, spelling, scheme or size).

    A verification failure, not an outage: the input named a destination we will not contact."""

    default_code = "egress_denied"


class ReplayError(VerificationError):
    default_code = "replay"


class BindingError(VerificationError):
    """A hash, id or party binding between two objects did not hold."""

    default_code = "binding_mismatch"


class PolicyDenied(VerificationError):
    default_code = "policy_denied"


class UntrustedKeyError(VerificationError):
    """The key is well formed but not one we were told to trust (or not authorised for the purpose)."""

    default_code = "untrusted_key"


class UnavailableError(MudrikaError):
    """A dependency (network, resolver, IdP, Redis) could not be reached.  Callers fail closed."""

    default_code = "unavailable"


class ResolutionError(UnavailableError):
    """DID resolution failed for a reason other than a malformed DID (e.g. notFound, network)."""

    default_code = "resolution_failed"


class IdpUnavailable(UnavailableError):
    default_code = "idp_unavailable"
