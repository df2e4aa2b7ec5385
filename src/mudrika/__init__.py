"""mudrika: the signet ring for AI agents — identity, trust and payments security for A2A and AP2."""

from mudrika.errors import (
    BindingError,
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

__all__ = [
    "BindingError",
    "ExpiredError",
    "IdpUnavailable",
    "InvalidInput",
    "KeyStoreError",
    "MudrikaError",
    "PolicyDenied",
    "ReplayError",
    "ResolutionError",
    "SignatureError",
    "UnavailableError",
    "UntrustedKeyError",
    "VerificationError",
    "__version__",
]
