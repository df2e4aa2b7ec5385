"""HTTP signature algorithm names (RFC 9421 §6.2 registry) bound to mudrika key types.

Why a table bound to the key type: RFC 9421 §3.2 step 6 lets the algorithm come from configuration,
the key, or the ``alg`` parameter, and says they must agree.  We take it from the *key*: the ``alg``
parameter is only accepted when it names an algorithm for that key's type and the verifier's
allow-list contains it, so a header can never pick how a key is used.

secp256k1 has no registered name.  mudrika uses the private name ``ecdsa-secp256k1-sha256`` (ECDSA over
secp256k1 with SHA-256, raw 64-byte r||s as in §3.3.4), which only mudrika peers understand and which
a verifier accepts only when its allow-list names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from mudrika.crypto.keys import KeyType

__all__ = [
    "ALGORITHMS",
    "DEFAULT_FOR_KEY_TYPE",
    "PRIVATE_ALGORITHMS",
    "REGISTERED_ALGORITHMS",
    "HttpSigAlgorithm",
]


@dataclass(frozen=True, slots=True)
class HttpSigAlgorithm:
    """One HTTP signature algorithm: its name, the key type it needs, and the JWS primitive it maps to.

    ``jws`` names the identical primitive in :mod:`mudrika.crypto.keys` (RFC 9421 §3.3.x match RFC 7518:
    ``rsa-pss-sha512`` is PSS with SHA-512, MGF1-SHA-512 and a 64-byte salt, exactly ``PS512``).
    """

    name: str
    key_type: KeyType
    jws: str
    registered: bool


ALGORITHMS: Final[Mapping[str, HttpSigAlgorithm]] = {
    alg.name: alg
    for alg in (
        HttpSigAlgorithm("ed25519", KeyType.ED25519, "EdDSA", True),  # §3.3.6
        HttpSigAlgorithm("ecdsa-p256-sha256", KeyType.P256, "ES256", True),  # §3.3.4
        HttpSigAlgorithm("rsa-pss-sha512", KeyType.RSA, "PS512", True),  # §3.3.1
        HttpSigAlgorithm("rsa-v1_5-sha256", KeyType.RSA, "RS256", True),  # §3.3.2
        HttpSigAlgorithm("ecdsa-secp256k1-sha256", KeyType.SECP256K1, "ES256K", False),  # private
    )
}
REGISTERED_ALGORITHMS: Final = frozenset(name for name, alg in ALGORITHMS.items() if alg.registered)
PRIVATE_ALGORITHMS: Final = frozenset(name for name, alg in ALGORITHMS.items() if not alg.registered)
DEFAULT_FOR_KEY_TYPE: Final[Mapping[KeyType, str]] = {
    KeyType.ED25519: "ed25519",
    KeyType.P256: "ecdsa-p256-sha256",
    KeyType.RSA: "rsa-pss-sha512",
    KeyType.SECP256K1: "ecdsa-secp256k1-sha256",
}
