"""The Agent Card's ``securitySchemes`` and ``securityRequirements``, read off the gate's configuration.

Why generated: a card declares how to authenticate (A2A 1.0 §4.5), and a client SDK acts on it (the
a2a-sdk's ``AuthInterceptor`` attaches a bearer token only for a scheme the card names).  Written by
hand, the card drifts from what the gate accepts: it names an IdP the server no longer trusts, or
omits the signatures the server takes.  :func:`protect` knows both, so the card entries come from it.

The entries, in the card's JSON form (A2A 1.0 ``AgentCard``, as a2a-sdk parses it):

* ``oidc``: an ``openIdConnectSecurityScheme`` naming the realm's OpenID discovery document
  (``<realm>/.well-known/openid-configuration``), when bearer tokens are accepted; its requirement
  lists the scopes the server was given (``scopes_supported``).
* ``httpSignature``: an ``httpAuthSecurityScheme`` with scheme ``Signature`` (the challenge the gate's
  401 carries), when RFC 9421 signatures by DID keys (and open-web agents) are accepted.

Each scheme is its own requirement: the requirements are alternatives, and either one admits a
caller.  Token first, so a client with both uses the token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["OIDC_SCHEME", "SIGNATURE_SCHEME", "CardSecurity"]

#: The card's name for the bearer-token scheme (the key a client's credential service is asked for).
OIDC_SCHEME: Final = "oidc"
#: The card's name for the RFC 9421 signature scheme.
SIGNATURE_SCHEME: Final = "httpSignature"
_DISCOVERY_PATH: Final = "/.well-known/openid-configuration"


@dataclass(frozen=True, slots=True)
class CardSecurity:
    """What the gate accepts, as far as a card can say it: the token issuer (None: no tokens), the
    scopes it names, and whether DID-signed requests and open-web agents are accepted."""

    issuer: str | None
    scopes: tuple[str, ...] = ()
    signatures: bool = False
    web_agents: bool = False

    def card_fields(self) -> dict[str, Any]:
        """``{"securitySchemes": {...}, "securityRequirements": [...]}`` for an A2A 1.0 Agent Card."""
        schemes: dict[str, Any] = {}
        requirements: list[dict[str, Any]] = []
        if self.issuer is not None:
            schemes[OIDC_SCHEME] = {
                "openIdConnectSecurityScheme": {
                    "openIdConnectUrl": self.issuer + _DISCOVERY_PATH,
                    "description": "OAuth 2.0 bearer access tokens from this OpenID provider (Keycloak realm).",
                }
            }
            requirements.append({"schemes": {OIDC_SCHEME: {"list": list(self.scopes)}}})
        if self.signatures:
            signers = "a DID's key (did:key, did:web)"
            if self.web_agents:
                signers += " or a Web Bot Auth / Visa TAP agent key"
            schemes[SIGNATURE_SCHEME] = {
                "httpAuthSecurityScheme": {
                    "scheme": "Signature",
                    "description": f"RFC 9421 HTTP Message Signatures by {signers}, over this server's origin.",
                }
            }
            requirements.append({"schemes": {SIGNATURE_SCHEME: {"list": []}}})
        return {"securitySchemes": schemes, "securityRequirements": requirements}
