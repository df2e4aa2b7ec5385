"""One way to turn a JWS ``kid`` into a trusted key for the A2A signatures (cards, parts, push).

Why shared: Agent Card signatures, artifact/message signatures and push-notification JWTs all name
their key the same way — ``kid`` is a DID URL — and must all refuse the same things: a DID the
verifier did not list, a key its DID document does not authorise for ``assertionMethod``, an algorithm
outside the verifier's allow-list, and any header that points at a key elsewhere (``jku``, ``x5u``,
``x5c``, ``jwk``), which is never followed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from mudrika.crypto.jose import ASYMMETRIC_ALGORITHMS, FORBIDDEN_HEADERS, TrustedKey, asymmetric_allow_list
from mudrika.errors import InvalidInput, VerificationError
from mudrika.identity.anchoring import AnchoredKey, aresolve_anchored, resolve_anchored
from mudrika.identity.did import parse_did_url
from mudrika.identity.resolver import DIDResolver

__all__ = ["ASYMMETRIC_ALGORITHMS", "DidKeyTrust", "check_kid"]


def check_kid(kid: str) -> str:
    """``kid`` must be a DID URL naming one verification method (it has a fragment); returns its DID."""
    try:
        url = parse_did_url(kid)
    except InvalidInput as exc:
        raise InvalidInput("kid must be a DID URL", code="bad_kid", reason=exc.code) from None
    if not url.fragment:
        raise InvalidInput("kid must name a verification method (DID URL with a fragment)", code="bad_kid")
    return url.did_str


class DidKeyTrust:
    """The verifier's trust for DID-signed objects: which DIDs, which algorithms, which resolver."""

    __slots__ = ("_algorithms", "_resolver", "_trusted")

    def __init__(
        self, *, resolver: DIDResolver, trusted_dids: Collection[str], algorithms: Collection[str]
    ) -> None:
        if isinstance(trusted_dids, str) or isinstance(algorithms, str):
            raise InvalidInput("trusted_dids and algorithms are collections, not strings", code="bad_config")
        if not trusted_dids:
            raise InvalidInput("an empty trusted_dids would verify nothing", code="bad_config")
        allowed = asymmetric_allow_list(
            algorithms, refusal="algorithms must be a non-empty set of asymmetric JWS algorithms"
        )
        self._resolver = resolver
        self._trusted = frozenset(trusted_dids)
        self._algorithms = allowed

    @property
    def trusted_dids(self) -> frozenset[str]:
        return self._trusted

    def _screen(self, header: Mapping[str, Any]) -> str:
        forbidden = FORBIDDEN_HEADERS.intersection(header)
        if forbidden:
            raise VerificationError(
                "signature names a key location that is never followed",
                code="forbidden_header",
                names=sorted(forbidden),
            )
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise VerificationError("signature has no kid", code="missing_kid")
        check_kid(kid)
        return kid

    @staticmethod
    def _trusted_key(anchored: AnchoredKey) -> TrustedKey:
        return TrustedKey(
            key=anchored.key, algorithms=anchored.algorithms, kid=anchored.kid, owner=anchored.owner
        )

    def key_for(self, header: Mapping[str, Any]) -> TrustedKey:
        """The trusted key for a protected header (resolving the DID synchronously), by the one
        anchoring rule (:func:`mudrika.identity.anchoring.resolve_anchored`)."""
        kid = self._screen(header)
        anchored = resolve_anchored(
            self._resolver,
            kid,
            trusted_owners=self._trusted,
            relationship="assertionMethod",
            algorithms=self._algorithms,
        )
        return self._trusted_key(anchored)

    async def akey_for(self, header: Mapping[str, Any]) -> TrustedKey:
        """:meth:`key_for` without blocking the event loop (did:web is fetched asynchronously)."""
        kid = self._screen(header)
        anchored = await aresolve_anchored(
            self._resolver,
            kid,
            trusted_owners=self._trusted,
            relationship="assertionMethod",
            algorithms=self._algorithms,
        )
        return self._trusted_key(anchored)
