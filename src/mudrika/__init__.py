"""mudrika: the signet ring for AI agents — identity, trust and payments security for A2A and AP2."""

from mudrika.errors import (
    BindingError,
    DocumentError,
    ExpiredError,
    IdpUnavailable,
    InvalidInput,
    KeyStoreError,
    MudrikaError,
    PolicyDenied,
    ReplayError,
    ResolutionError,
    SignatureError,
    UnavailableError,
    UntrustedKeyError,
    VerificationError,
)

__version__ = "0.1.0"

# The A2A auth errors live in mudrika.trust.jsonrpc.  They are importable from the root, but loaded
# lazily, so that `import mudrika` from offline dispute tooling never pulls in the trust layer.
_LAZY_ERRORS = frozenset(
    {
        "A2AAuthError",
        "AuthenticationRequired",
        "InsufficientPermissions",
        "InvalidSignature",
        "InvalidToken",
        "TokenExpired",
    }
)


def __getattr__(name: str) -> object:
    if name in _LAZY_ERRORS:
        from mudrika.trust import jsonrpc

        return getattr(jsonrpc, name)
    raise AttributeError(f"module 'mudrika' has no attribute {name!r}")


__all__ = [
    "A2AAuthError",
    "AuthenticationRequired",
    "BindingError",
    "DocumentError",
    "ExpiredError",
    "IdpUnavailable",
    "InsufficientPermissions",
    "InvalidInput",
    "InvalidSignature",
    "InvalidToken",
    "KeyStoreError",
    "MudrikaError",
    "PolicyDenied",
    "ReplayError",
    "ResolutionError",
    "SignatureError",
    "TokenExpired",
    "UnavailableError",
    "UntrustedKeyError",
    "VerificationError",
    "__version__",
]
