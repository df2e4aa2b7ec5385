"""Bearer and DPoP access tokens (RFC 6750, RFC 9449) as an :class:`~._auth.Authenticator`.

Why its own module: the token scheme is the one every protocol the middleware guards offers first
(A2A and MCP alike), and it is decided from the headers alone, before a byte of the body is read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from mudrika.trust.jsonrpc import InvalidToken
from mudrika.trust.keycloak.dpop import DPoPVerifier, check_certificate_binding
from mudrika.trust.keycloak.tokens import AccessTokenVerifier, VerifiedToken
from mudrika.trust.middleware._auth import Authenticated, AuthRequest
from mudrika.trust.middleware._http import header_values

__all__ = ["TOKEN_SCHEMES", "BearerAuthenticator"]

#: Schemes whose credential is a token; a signed request is any other scheme.
TOKEN_SCHEMES: Final = frozenset({"Bearer", "DPoP"})
# Bound on the per-token memo of results (cleared when full).
_MEMO_LIMIT: Final = 4096


class BearerAuthenticator:
    """RFC 6750 §2.1 ``Authorization: Bearer <token>`` and RFC 9449 ``Authorization: DPoP <token>``,
    verified by an :class:`AccessTokenVerifier`.

    The scheme name is case-insensitive (``bearer`` works); more than one ``Authorization`` header is
    refused (-32010) rather than guessing which one counts; §2.3 query-string tokens are not read.

    Sender-constrained tokens (:mod:`mudrika.trust.keycloak.dpop`): a token with ``cnf.jkt`` is
    accepted only under the ``DPoP`` scheme with exactly one valid ``DPoP`` proof header (``dpop``, a
    :class:`~mudrika.trust.keycloak.DPoPVerifier`, must be configured; the proof ``jti`` is claimed
    after authorisation); a token with ``cnf.x5t#S256`` only over a TLS connection whose client
    certificate it names.  A bound token under ``Bearer``, an unbound token under ``DPoP`` and any
    other ``cnf`` are refused (-32010).
    """

    scheme = "Bearer"
    credential_headers: Final = frozenset({"authorization"})
    #: The token is in a header: the middleware authenticates before it reads the body.
    needs_body: Final = False

    def __init__(self, verifier: AccessTokenVerifier, *, dpop: DPoPVerifier | None = None) -> None:
        self._verifier = verifier
        self._dpop = dpop
        # The verifier's cache hands back the same VerifiedToken for the same token; reuse the
        # Authenticated built for it (keyed by the token's label, served only for that very object).
        self._memo: dict[str, tuple[VerifiedToken, Authenticated]] = {}
        # Labels of tokens met before: for those the verifier is asked whether it keeps the result
        # (AccessTokenVerifier.holds), and the Authenticated is kept with it.  A token met once
        # leaves only its label: a store per distinct token costs and never pays.
        self._seen: set[str] = set()

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        values = header_values(request.headers, b"authorization")
        if not values:
            return None
        if len(values) > 1:
            raise InvalidToken("more than one Authorization header", code="multiple_authorization")
        scheme, _, credential = values[0].strip().partition(" ")
        kind = scheme.lower()
        if kind not in ("bearer", "dpop"):
            return None
        credential = credential.strip()
        if not credential:
            raise InvalidToken("empty bearer credential", code="malformed_token")
        verified = await self._verifier.averify(credential)
        if "cnf" in verified.claims:
            pending = await self._sender_constraint(kind, credential, verified, request)
            return Authenticated(
                principal=verified.principal,
                scheme="DPoP" if kind == "dpop" else self.scheme,
                credential_id=verified.token_id,
                claims=verified.claims,
                pending_claim=pending,
            )
        if kind == "dpop":
            raise InvalidToken("DPoP scheme with a token that is not DPoP-bound", code="dpop_unbound")
        label = verified.token_id
        memo = self._memo.get(label)
        if memo is not None and memo[0] is verified:
            return memo[1]
        result = Authenticated(
            principal=verified.principal,
            scheme=self.scheme,
            credential_id=label,
            claims=verified.claims,
        )
        seen = self._seen
        if label not in seen:
            if len(seen) >= _MEMO_LIMIT:
                seen.clear()
            seen.add(label)
        elif self._verifier.holds(credential, verified):
            # The verifier keeps this result, so it will hand the same object back: keep ours too.
            seen.discard(label)
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[label] = (verified, result)
        return result

    async def _sender_constraint(
        self, kind: str, token: str, verified: VerifiedToken, request: AuthRequest
    ) -> Callable[[], Awaitable[None]] | None:
        cnf = verified.claims["cnf"]
        if not isinstance(cnf, Mapping) or len(cnf) != 1:
            raise InvalidToken("unsupported confirmation claim", code="unsupported_cnf")
        if "x5t#S256" in cnf:
            if kind != "bearer":
                raise InvalidToken("certificate-bound token under the DPoP scheme", code="wrong_scheme")
            check_certificate_binding(verified.claims, request.client_cert)
            return None
        if "jkt" not in cnf:
            raise InvalidToken("unsupported confirmation claim", code="unsupported_cnf")
        if kind != "dpop":
            raise InvalidToken("DPoP-bound token presented as a bearer token", code="bound_token_as_bearer")
        if self._dpop is None:
            raise InvalidToken("DPoP-bound token and no DPoP verifier configured", code="dpop_unsupported")
        proofs = header_values(request.headers, b"dpop")
        if len(proofs) != 1:  # RFC 9449 §4.3 step 1: exactly one DPoP header
            raise InvalidToken("exactly one DPoP proof required", code="dpop_proof_count")
        path = request.raw_path.decode("latin-1") if request.raw_path else request.path
        proof = self._dpop.check(
            proofs[0].strip(),
            method=request.method,
            htu=self._dpop.htu_for(path),
            access_token=token,
            claims=verified.claims,
        )
        if request.defer_claims:
            return proof.claim
        await proof.claim()
        return None
