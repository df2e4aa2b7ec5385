"""Fresh, single-use nonces for challenge/response (AP2 key-binding JWT ``nonce``, proof-of-possession).

Why MAC-bound instead of stored at issue time: a verifier that writes every nonce it hands out lets
anyone fill its store by asking for nonces.  Here the nonce carries its own expiry and audience under
an HMAC-SHA256 with a server secret, so issuing costs no storage and a nonce we never issued (or one
edited to live longer, or sent to another audience) is rejected before the store is touched.  Only a
nonce that passes every check is claimed in the :class:`~mudrika.stores.replay.ReplayStore`, which
makes it single use across replicas when the store is shared.

Wire format (unpadded base64url of 73 bytes, 98 characters)::

    version (1 byte, 0x01) | random (16) | expires_at_ms (8, big endian) | audience digest (16) | mac (32)

``audience digest`` = SHA-256("mudrika-nonce-aud" 0x00 audience)[:16]; ``mac`` = HMAC-SHA256(secret,
"mudrika-nonce-v1" 0x00 || the 41 bytes before it).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import re
import secrets
import time
from collections.abc import Sequence
from typing import Final

from mudrika.errors import BindingError, ExpiredError, InvalidInput, VerificationError
from mudrika.stores._replay_base import Clock
from mudrika.stores.replay import ReplayStore, aclaim_or_raise, claim_or_raise

__all__ = ["NonceIssuer"]

_VERSION: Final = 1
_RANDOM_BYTES: Final = 16
_EXPIRY_BYTES: Final = 8
_AUD_BYTES: Final = 16
_MAC_BYTES: Final = 32
_BODY_BYTES: Final = 1 + _RANDOM_BYTES + _EXPIRY_BYTES + _AUD_BYTES
_RAW_BYTES: Final = _BODY_BYTES + _MAC_BYTES
_NONCE_CHARS: Final = math.ceil(_RAW_BYTES * 4 / 3)
_NONCE_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
_MAC_CONTEXT: Final = b"mudrika-nonce-v1\x00"
_AUD_CONTEXT: Final = b"mudrika-nonce-aud\x00"
_MIN_SECRET_BYTES: Final = 32
_MAX_AUDIENCE_BYTES: Final = 512
_MAX_LEEWAY: Final = 30.0


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _audience_digest(audience: str) -> bytes:
    if not isinstance(audience, str) or not audience:
        raise InvalidInput("audience must be a non-empty string", code="nonce_audience_invalid")
    try:
        raw = audience.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("audience is not valid UTF-8 text", code="nonce_audience_invalid") from None
    if len(raw) > _MAX_AUDIENCE_BYTES:
        raise InvalidInput("audience too long", code="nonce_audience_invalid", limit=_MAX_AUDIENCE_BYTES)
    return hashlib.sha256(_AUD_CONTEXT + raw).digest()[:_AUD_BYTES]


def _unknown() -> VerificationError:
    # One answer for malformed, forged and foreign-secret nonces: nothing for a prober to tell apart.
    return VerificationError("unknown nonce", code="unknown_nonce")


class NonceIssuer:
    """Issues nonces bound to an audience and expiry; consumes each at most once.

    ``secret`` (>= 32 random bytes, shared by every replica) signs new nonces; ``previous_secrets``
    are still accepted when consuming, for rotation.  ``store`` must be shared by the replicas for
    single use to hold across them (Redis).  ``leeway`` (0..30 s) absorbs clock skew between the
    replica that issued and the one that consumes.
    """

    def __init__(
        self,
        secret: bytes,
        store: ReplayStore,
        *,
        previous_secrets: Sequence[bytes] = (),
        max_ttl: float = 3600.0,
        leeway: float = 0.0,
        key_prefix: str = "nonce:",
        clock: Clock = time.time,
    ) -> None:
        for candidate in (secret, *previous_secrets):
            if not isinstance(candidate, bytes) or len(candidate) < _MIN_SECRET_BYTES:
                raise InvalidInput(
                    "nonce secret must be at least 32 bytes", code="weak_secret", limit=_MIN_SECRET_BYTES
                )
        if not (math.isfinite(max_ttl) and max_ttl > 0):
            raise InvalidInput("max_ttl must be a positive number", code="nonce_config")
        if not (math.isfinite(leeway) and 0 <= leeway <= _MAX_LEEWAY):
            raise InvalidInput("leeway must be between 0 and 30 seconds", code="nonce_config")
        if not key_prefix:
            raise InvalidInput("key_prefix must not be empty", code="nonce_config")
        self.__secrets: tuple[bytes, ...] = (secret, *previous_secrets)
        self._store = store
        self._max_ttl = float(max_ttl)
        self._leeway = float(leeway)
        self._key_prefix = key_prefix
        self._clock = clock

    def __repr__(self) -> str:
        return f"NonceIssuer(store={self._store!r}, max_ttl={self._max_ttl}, leeway={self._leeway})"

    def issue(self, audience: str, ttl: float = 300.0) -> str:
        """A fresh nonce for ``audience`` valid for ``ttl`` seconds (128 random bits + MAC)."""
        digest = _audience_digest(audience)
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl):
            raise InvalidInput("ttl must be a number of seconds", code="nonce_ttl_invalid")
        if not 0 < ttl <= self._max_ttl:
            raise InvalidInput("ttl out of range", code="nonce_ttl_invalid", limit=self._max_ttl)
        expires_ms = math.ceil((self._clock() + ttl) * 1000)
        body = (
            bytes([_VERSION])
            + secrets.token_bytes(_RANDOM_BYTES)
            + expires_ms.to_bytes(_EXPIRY_BYTES, "big")
            + digest
        )
        return _b64(body + self._mac(self.__secrets[0], body))

    def consume(self, nonce: str, audience: str) -> None:
        """Accept ``nonce`` for ``audience`` once, or raise.

        Raises VerificationError ``unknown_nonce`` (malformed, forged, other secret), ExpiredError
        ``nonce_expired``, BindingError ``nonce_audience`` (issued for another audience), ReplayError
        ``replay`` (already consumed), or UnavailableError when the store cannot record the use.
        """
        key, expires_at = self._check(nonce, audience)
        claim_or_raise(self._store, key, expires_at)

    async def aconsume(self, nonce: str, audience: str) -> None:
        """Async form of :meth:`consume`."""
        key, expires_at = self._check(nonce, audience)
        await aclaim_or_raise(self._store, key, expires_at)

    @staticmethod
    def _mac(secret: bytes, body: bytes) -> bytes:
        return hmac.new(secret, _MAC_CONTEXT + body, hashlib.sha256).digest()

    def _check(self, nonce: str, audience: str) -> tuple[str, float]:
        """Steps 1-4 of consuming; returns the replay key and how long to hold it."""
        expected_digest = _audience_digest(audience)
        # 1. Shape: exact length, base64url alphabet, canonical spelling, known version.
        if not isinstance(nonce, str) or len(nonce) != _NONCE_CHARS or not _NONCE_RE.fullmatch(nonce):
            raise _unknown()
        raw = base64.urlsafe_b64decode(nonce + "=" * (-len(nonce) % 4))
        if len(raw) != _RAW_BYTES or _b64(raw) != nonce or raw[0] != _VERSION:
            raise _unknown()
        body, mac = raw[:_BODY_BYTES], raw[_BODY_BYTES:]
        # 2. MAC under the current or a previous secret, compared in constant time (every secret tried).
        matched = False
        for secret in self.__secrets:
            matched |= hmac.compare_digest(self._mac(secret, body), mac)
        if not matched:
            raise _unknown()
        # 3. Expiry (authenticated above, so it is the value we issued).
        offset = 1 + _RANDOM_BYTES
        expires_at = int.from_bytes(body[offset : offset + _EXPIRY_BYTES], "big") / 1000
        if self._clock() >= expires_at + self._leeway:
            raise ExpiredError("nonce expired", code="nonce_expired")
        # 4. Audience.
        if not hmac.compare_digest(body[offset + _EXPIRY_BYTES :], expected_digest):
            raise BindingError("nonce issued for another audience", code="nonce_audience")
        # 5. (caller) Single use: claimed under a digest of the nonce, never the nonce itself.
        key = self._key_prefix + _b64(hashlib.sha256(raw).digest())
        return key, expires_at + self._leeway
