"""One exception hierarchy for all of mudrika.

Why one tree: callers must be able to write ``except VerificationError`` and know that every failed
check lands there (fail closed), while malformed input and unavailable services are told apart so a
server can answer 400-ish, 401/403-ish and 503-ish differently.  Every error carries a stable machine
``code`` and structured fields; messages never contain secrets, tokens or private key material.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "BindingError",
    "DocumentError",
    "EgressDenied",
    "ExpiredError",
    "IdpUnavailable",
    "IncompleteVerification",
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
    """Base class.  ``code`` is a stable machine identifier; ``fields`` are structured, secret-free.

    A subclass names its default code in its header, ``class ReplayError(VerificationError,
    code="replay")``, so the code sits beside the class it identifies.  Two classes may not claim the
    same code: callers and logs match on codes, and a shared one would let a reader mistake one
    failure for another.  (A module reloaded in place, as a notebook's autoreload does, defines the
    same class again under the same name: that is the same owner, not a second one.)
    """

    default_code: ClassVar[str] = "error"
    _code_owners: ClassVar[dict[str, type[MudrikaError]]] = {}

    def __init_subclass__(cls, *, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is None:
            return
        owner = MudrikaError._code_owners.get(code)
        if owner is not None and (owner.__module__, owner.__qualname__) != (cls.__module__, cls.__qualname__):
            raise TypeError(f"error code {code!r} already belongs to {owner.__qualname__}")
        MudrikaError._code_owners[code] = cls
        cls.default_code = code

    def __init__(self, message: str, *, code: str | None = None, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.fields: dict[str, Any] = fields

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class InvalidInput(MudrikaError, code="invalid_input"):
    """Malformed JSON, DID, key, token or mandate: the input could not even be checked."""


class KeyStoreError(MudrikaError, code="keystore"):
    """A key file could not be written or read safely (permissions, existing file, bad password)."""


class VerificationError(MudrikaError, code="verification_failed"):
    """Anything that failed a check.  Catching this must always mean *deny*."""


class SignatureError(VerificationError, code="bad_signature"):
    """A signature did not verify under the key it claims, or was made with a refused algorithm."""


class ExpiredError(VerificationError, code="expired"):
    """A time claim says the object's life is over (``exp``, a mandate's or credential's expiry)."""


class NotYetValidError(VerificationError, code="not_yet_valid"):
    """A time claim says "not before" a moment still ahead (``nbf``, a signature ``created`` in the
    future).  Not an :class:`ExpiredError`: telling the client "expired" makes it refresh, which
    cannot help."""


class EgressDenied(VerificationError, code="egress_denied"):
    """An outbound fetch was refused by the egress policy (address, spelling, scheme or size).

    A verification failure, not an outage: the input named a destination we will not contact."""


class ReplayError(VerificationError, code="replay"):
    """A single-use value (nonce, ``jti``, mandate id) was presented a second time."""


class BindingError(VerificationError, code="binding_mismatch"):
    """A hash, id or party binding between two objects did not hold."""


class PolicyDenied(VerificationError, code="policy_denied"):
    """Authenticated, but the caller's trust level or roles do not allow the operation."""


class UntrustedKeyError(VerificationError, code="untrusted_key"):
    """The key is well formed but not one we were told to trust (or not authorised for the purpose)."""


class DocumentError(VerificationError, code="document_unusable"):
    """The document the input names is absent or unusable: a fact about that input, not an outage.

    Raised with the DID Resolution error code that says which (``notFound`` — a 404/410 answer, a
    DID missing from a snapshot; ``invalidDidDocument`` — a body that is not JSON, not a DID Core
    document, too large; ``methodNotSupported``; ``representationNotSupported``).  Why a
    :class:`VerificationError` and not an :class:`UnavailableError`: whoever names a DID chooses
    whether its document exists and what it holds, so "no usable document" must read as a deny
    (401, exit 1 "verification failed").  Read as an outage it would answer 503 "retry later" to a
    request that can never succeed, and let any caller make the service look down at will.  The
    python-tuf split, ``RepositoryError`` (bad data) apart from ``DownloadError`` (could not fetch).
    """


class IncompleteVerification(VerificationError, code="verification_incomplete"):
    """A verifier could not establish everything it would vouch for, although no check reported a
    failure (a check did not run, or a stage left nothing to return).  A refusal like any other:
    ``except VerificationError`` must catch it, so it is never the base :class:`MudrikaError`.
    Both AP2 verifiers raise it, with this one code, for this one situation."""


class UnavailableError(MudrikaError, code="unavailable"):
    """A dependency (network, resolver, IdP, Redis) could not be reached.  Callers fail closed."""


class ResolutionError(UnavailableError, code="resolution_failed"):
    """DID resolution could not finish: the document could not be *fetched* (DNS failure, refused
    connection, timeout, TLS failure, a 5xx/408/429 answer, rate limit), code ``internalError``.

    Only the could-not-fetch side: an absent or invalid document is a :class:`DocumentError`, a
    malformed DID :class:`InvalidInput` (``invalidDid``), a destination the egress policy refuses
    :class:`EgressDenied`.  So ``except ResolutionError`` always means "try again later" (503).
    """


class IdpUnavailable(UnavailableError, code="idp_unavailable"):
    """The identity provider (its discovery document or JWKS) could not be reached."""
