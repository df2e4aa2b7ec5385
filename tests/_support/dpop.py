"""DPoP proofs made with joserfc (an implementation independent of mudrika's verifier) for tests."""

from __future__ import annotations

import json
import uuid
from typing import Any

from joserfc import jws
from joserfc.jwk import ECKey

from mudrika.trust.keycloak.dpop import access_token_hash

__all__ = ["DPoPClient"]


class DPoPClient:
    """A client's DPoP key (P-256) and proofs for it; ``jkt`` is joserfc's RFC 7638 thumbprint."""

    def __init__(self) -> None:
        self.key = ECKey.generate_key("P-256")
        self.jkt: str = self.key.thumbprint()

    def proof(
        self,
        method: str,
        url: str,
        access_token: str,
        *,
        iat: float,
        jti: str | None = None,
        header: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        protected = {
            "typ": "dpop+jwt",
            "alg": "ES256",
            "jwk": self.key.as_dict(private=False),
            **(header or {}),
        }
        payload = {
            "jti": jti or uuid.uuid4().hex,
            "htm": method,
            "htu": url,
            "iat": int(iat),
            "ath": access_token_hash(access_token),
            **claims,
        }
        payload = {name: value for name, value in payload.items() if value is not None}
        return jws.serialize_compact(protected, json.dumps(payload).encode(), self.key, algorithms=["ES256"])
