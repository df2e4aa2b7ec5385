"""Sender-constrained access tokens: DPoP proofs (RFC 9449) and certificate-bound tokens (RFC 8705).

Why: a token carrying ``cnf`` was issued to one key.  Accepting it as a plain bearer token throws the
binding away — whoever copies the token gets its roles.  So a bound token is accepted only with the
proof its binding names, and never under ``Authorization: Bearer``:

* ``cnf.jkt`` (Keycloak "DPoP-bound access tokens"): ``Authorization: DPoP <token>`` plus exactly
  one ``DPoP`` header holding a proof JWT signed by the key whose RFC 7638 thumbprint is ``jkt``;
* ``cnf.x5t#S256`` (RFC 8705 §3): the SHA-256 of the TLS client certificate the server saw (the ASGI
  TLS extension's ``client_cert_chain``) must equal it; a server that does not expose the client
  certificate refuses such tokens.

The proof's embedded ``jwk`` is *evidence*: it is trusted only because the issuer-signed token names
its thumbprint.  :class:`DPoPVerifier` checks a proof (RFC 9449 §4.3, steps numbered as there):

1. exactly one ``DPoP`` header (the caller passes it), 2. a well-formed compact JWS,
3. the required claims ``jti``, ``htm``, ``htu``, ``iat`` and ``ath`` present,
4. ``typ`` is ``dpop+jwt``, 5. ``alg`` in the verifier's allow-list (asymmetric only, never from the
   header alone: the key type must fit it), 6. the signature verifies with the header ``jwk``,
7. the ``jwk`` has no private members, 8. ``htm`` equals the request method,
9. ``htu`` equals the request URI without query and fragment, 10. (server nonces: not issued),
11. ``iat`` within the window (``max_age`` back, ``leeway`` ahead; the time rule of
   docs/replay.md: valid on ``[iat - leeway, iat + max_age + leeway)``),
12. ``ath`` equals ``base64url(sha256(access token))`` and the key's thumbprint equals ``cnf.jkt``.

The proof ``jti`` is single use: :meth:`DPoPVerifier.check` returns the claim still to make, which the
middleware makes only after its policy allowed the call.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import asymmetric_allow_list
from mudrika.crypto.keys import PublicKey
from mudrika.errors import InvalidInput, MudrikaError, ReplayError, SignatureError
from mudrika.stores.replay import ReplayStore, aclaim_or_raise
from mudrika.trust.jsonrpc import InvalidSignature, InvalidToken

__all__ = [
    "DEFAULT_DPOP_ALGORITHMS",
    "DEFAULT_MAX_AGE",
    "DPOP_REPLAY_PREFIX",
    "DPoPVerifier",
    "PendingProof",
    "access_token_hash",
    "certificate_thumbprint",
    "check_certificate_binding",
]

DEFAULT_DPOP_ALGORITHMS: Final = frozenset({"ES256", "EdDSA", "PS256", "RS256"})
DEFAULT_MAX_AGE: Final = 60.0
DEFAULT_LEEWAY: Final = 5.0
DPOP_REPLAY_PREFIX: Final = "dpop:"
_MAX_PROOF_BYTES: Final = 8 * 1024
_MAX_JTI_CHARS: Final = 256
_SEGMENT: Final = re.compile(r"[A-Za-z0-9_-]+")


def access_token_hash(token: str) -> str:
    """RFC 9449 §4.2 ``ath``: base64url(SHA-256(ASCII of the access token)), no padding."""
    return b64url_encode(hashlib.sha256(token.encode("ascii", "surrogateescape")).digest())


def certificate_thumbprint(der: bytes) -> str:
    """RFC 8705 §3.1 ``x5t#S256``: base64url(SHA-256(DER of the certificate)), no padding."""
    return b64url_encode(hashlib.sha256(der).digest())


def _same(ours: str, theirs: str) -> bool:
    """Constant-time equality over UTF-8 bytes: ``compare_digest`` raises on non-ASCII ``str``.

    ``theirs`` comes from a token or proof, so a non-ASCII value must compare unequal, not crash.
    """
    return hmac.compare_digest(ours.encode(), theirs.encode("utf-8", "surrogatepass"))


def check_certificate_binding(claims: Mapping[str, Any], client_cert: bytes | None) -> None:
    """RFC 8705 §3: refuse a certificate-bound token unless ``client_cert`` is the bound certificate."""
    bound = _cnf(claims).get("x5t#S256")
    if not isinstance(bound, str) or not bound:
        raise InvalidToken("malformed confirmation claim", code="malformed_cnf")
    if client_cert is None:
        raise InvalidToken("certificate-bound token without a client certificate", code="mtls_required")
    if not _same(certificate_thumbprint(client_cert), bound):
        raise InvalidToken("token bound to another certificate", code="mtls_mismatch")


def _cnf(claims: Mapping[str, Any]) -> Mapping[str, Any]:
    cnf = claims.get("cnf")
    if not isinstance(cnf, Mapping):
        raise InvalidToken("malformed confirmation claim", code="malformed_cnf")
    return cnf


@dataclass(frozen=True, slots=True)
class PendingProof:
    """A DPoP proof that verified, whose ``jti`` is not yet claimed; :meth:`claim` records it once."""

    jkt: str
    jti: str
    claim_until: float
    store: ReplayStore

    @property
    def replay_key(self) -> str:
        digest = hashlib.sha256(f"{self.jkt}\x00{self.jti}".encode()).hexdigest()
        return f"{DPOP_REPLAY_PREFIX}{digest}"

    async def claim(self) -> None:
        try:
            await aclaim_or_raise(self.store, self.replay_key, self.claim_until)
        except ReplayError:
            raise InvalidToken("DPoP proof already used", code="dpop_replay") from None


class DPoPVerifier:
    """Verifies RFC 9449 proofs for access tokens bound with ``cnf.jkt``.

    Required: ``algorithms`` (asymmetric JWS names), ``replay_store`` (where proof ``jti`` s are
    claimed; shared by every replica) and ``public_origin`` (how clients address this server, e.g.
    ``"https://agent.example"``: ``htu`` is compared against it plus the request path, whatever a
    proxy did to scheme and ``Host``).  ``max_age`` bounds how old a proof may be, ``leeway`` how far
    ahead its ``iat`` may be.
    """

    def __init__(
        self,
        *,
        algorithms: Collection[str],
        replay_store: ReplayStore,
        public_origin: str,
        max_age: float = DEFAULT_MAX_AGE,
        leeway: float = DEFAULT_LEEWAY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        allowed = asymmetric_allow_list(
            algorithms, refusal="DPoP needs a non-empty list of asymmetric algorithms"
        )
        if not (math.isfinite(max_age) and max_age > 0 and math.isfinite(leeway) and 0 <= leeway <= 30):
            raise InvalidInput("max_age must be > 0 and leeway within 0..30 s", code="bad_config")
        if not isinstance(replay_store, ReplayStore):
            raise InvalidInput("replay_store must implement ReplayStore", code="bad_config")
        origin = public_origin.rstrip("/")
        if not re.fullmatch(r"https?://[^/?#\s]+", origin):
            raise InvalidInput("public_origin is scheme://host[:port] only", code="bad_config")
        self._algorithms = allowed
        self._store = replay_store
        self._origin = origin
        self._max_age = float(max_age)
        self._leeway = float(leeway)
        self._clock = clock

    def __repr__(self) -> str:
        return f"DPoPVerifier(origin={self._origin!r}, algorithms={sorted(self._algorithms)!r})"

    def htu_for(self, raw_path: str) -> str:
        """The ``htu`` a client addressing this server at ``raw_path`` must sign (no query/fragment)."""
        return self._origin + raw_path.split("?", 1)[0].split("#", 1)[0]

    def check(
        self,
        proof: str,
        *,
        method: str,
        htu: str,
        access_token: str,
        claims: Mapping[str, Any],
        now: float | None = None,
    ) -> PendingProof:
        """Verify ``proof`` for a request and the bound token's ``claims``; the jti claim is returned.

        Raises :class:`~mudrika.trust.jsonrpc.InvalidToken` (-32010) for a malformed, mismatched,
        stale or unbound proof and :class:`~mudrika.trust.jsonrpc.InvalidSignature` (-32012) when
        the signature does not verify.
        """
        jkt = _cnf(claims).get("jkt")
        if not isinstance(jkt, str) or not jkt:
            raise InvalidToken("malformed confirmation claim", code="malformed_cnf")
        # 2. A well-formed compact JWS.
        if not isinstance(proof, str) or len(proof) > _MAX_PROOF_BYTES:
            raise InvalidToken("malformed DPoP proof", code="dpop_malformed")
        parts = proof.split(".")
        if len(parts) != 3 or not all(_SEGMENT.fullmatch(part) for part in parts):
            raise InvalidToken("malformed DPoP proof", code="dpop_malformed")
        header = self._json(parts[0])
        payload = self._json(parts[1])
        # 4. typ; 5. alg in the allow-list.
        if header.get("typ") != "dpop+jwt":
            raise InvalidToken("not a DPoP proof", code="dpop_wrong_typ")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._algorithms:
            raise InvalidToken("DPoP algorithm not allowed", code="dpop_alg_not_allowed")
        if "crit" in header:
            raise InvalidToken("DPoP proof with critical extensions", code="dpop_malformed")
        # 7. The jwk is a public key (PublicKey.from_jwk refuses private members).
        jwk = header.get("jwk")
        if not isinstance(jwk, dict):
            raise InvalidToken("DPoP proof without a public key", code="dpop_no_key")
        try:
            key = PublicKey.from_jwk(jwk)
        except MudrikaError as exc:
            raise InvalidToken("unusable DPoP key", code=f"dpop_{exc.code}") from None
        # 12 (second half). The key is the one the token is bound to.
        if not _same(key.thumbprint(), jkt):
            raise InvalidToken("DPoP key is not the one the token is bound to", code="dpop_key_mismatch")
        # 6. The signature, with the algorithm bound to the key type.
        try:
            key.verify(b64url_decode(parts[2]), f"{parts[0]}.{parts[1]}".encode("ascii"), alg)
        except SignatureError:
            raise InvalidSignature("DPoP proof signature invalid", code="dpop_bad_signature") from None
        except MudrikaError:
            raise InvalidToken("malformed DPoP proof", code="dpop_malformed") from None
        # 3. Required claims.
        jti, htm, proof_htu, iat, ath = (payload.get(name) for name in ("jti", "htm", "htu", "iat", "ath"))
        if not (isinstance(jti, str) and 0 < len(jti) <= _MAX_JTI_CHARS):
            raise InvalidToken("DPoP proof without a usable jti", code="dpop_missing_claim")
        if not (isinstance(htm, str) and isinstance(proof_htu, str) and isinstance(ath, str)):
            raise InvalidToken("DPoP proof claims missing", code="dpop_missing_claim")
        if isinstance(iat, bool) or not isinstance(iat, int | float) or not math.isfinite(iat):
            raise InvalidToken("DPoP proof without iat", code="dpop_missing_claim")
        # 8. htm; 9. htu without query and fragment.
        if htm != method:
            raise InvalidToken("DPoP proof for another method", code="dpop_wrong_htm")
        if proof_htu.split("?", 1)[0].split("#", 1)[0] != proof_htu or proof_htu != htu:
            raise InvalidToken("DPoP proof for another URI", code="dpop_wrong_htu")
        # 11. iat within the window: valid on [iat - leeway, iat + max_age + leeway).
        current = self._clock() if now is None else now
        if current < iat - self._leeway:
            raise InvalidToken("DPoP proof issued in the future", code="dpop_not_yet_valid")
        if current >= iat + self._max_age + self._leeway:
            raise InvalidToken("DPoP proof too old", code="dpop_too_old")
        # 12 (first half). ath binds the proof to this access token.
        if not _same(ath, access_token_hash(access_token)):
            raise InvalidToken("DPoP proof for another access token", code="dpop_wrong_ath")
        return PendingProof(
            jkt=jkt, jti=jti, claim_until=float(iat) + self._max_age + self._leeway, store=self._store
        )

    @staticmethod
    def _json(segment: str) -> dict[str, Any]:
        try:
            value = loads_strict(b64url_decode(segment, max_len=_MAX_PROOF_BYTES), max_bytes=_MAX_PROOF_BYTES)
        except (MudrikaError, ValueError, json.JSONDecodeError):
            raise InvalidToken("malformed DPoP proof", code="dpop_malformed") from None
        if not isinstance(value, dict):
            raise InvalidToken("malformed DPoP proof", code="dpop_malformed")
        return value
