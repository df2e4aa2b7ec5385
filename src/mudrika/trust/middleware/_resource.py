"""The protected server as an OAuth 2.1 resource server: RFC 9728 metadata and its challenges.

Why: a client that meets a 401 must be able to find, from the answer alone, which authorization
server issues tokens for this resource and which scopes to ask for.  RFC 9728 puts that in a public
metadata document at a well-known path derived from the resource URL, and in a ``resource_metadata``
parameter of the ``WWW-Authenticate`` challenge; MCP's authorization rules require both, and an A2A
server gains the same discovery.  The resource URL is also the audience tokens must name (RFC 8707),
so one value configures the metadata, the challenge and the audience check.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Final

from mudrika.errors import InvalidInput
from mudrika.trust.httpsig import parse_target_uri

__all__ = ["METADATA_WELL_KNOWN", "ResourceServer"]

#: RFC 9728 §3: the well-known URI suffix of protected resource metadata.
METADATA_WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def _quoted(value: str) -> str:
    # RFC 9110 §5.6.4 quoted-string: backslash and double quote escaped.
    return value.replace("\\", "\\\\").replace('"', '\\"')


@dataclass(frozen=True, slots=True)
class ResourceServer:
    """What this server tells clients about itself as a protected resource (RFC 9728).

    ``resource`` is the URL clients call (for MCP the endpoint, e.g. ``https://tools.example/mcp``):
    https, or http on a loopback host for development; no query or fragment.  ``authorization_servers``
    are the issuers whose tokens it accepts (the Keycloak realm URL).  ``scopes_supported`` are the
    scopes a client may request; ``name`` a human-readable ``resource_name``; ``token_algorithms`` the
    JWS algorithms its token verifier accepts (published as ``mudrika_token_signing_alg_values``, an
    extension member: RFC 9728 registers no member for the algorithms of incoming tokens).  Whether
    signatures are accepted is the gate's to say (its challenges follow its authenticators).
    """

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] = ()
    name: str | None = None
    token_algorithms: tuple[str, ...] = ("RS256",)
    metadata_path: str = field(init=False)
    metadata_url: str = field(init=False)
    _document: bytes = field(init=False, repr=False)

    def __post_init__(self) -> None:
        target = parse_target_uri(self.resource)
        if target.query is not None:  # (a fragment is refused by the URL parser itself)
            raise InvalidInput(
                "resource must have no query or fragment", code="bad_config", option="resource"
            )
        if target.scheme != "https" and not _loopback(target.host):
            raise InvalidInput(
                "resource must be https (http only on loopback)", code="bad_config", option="resource"
            )
        if not self.authorization_servers:
            raise InvalidInput("name at least one authorization server", code="bad_config")
        for value in (*self.authorization_servers, *self.scopes_supported, *self.token_algorithms):
            if not isinstance(value, str) or not value or any(ord(c) < 0x21 or c == '"' for c in value):
                raise InvalidInput("metadata values must be non-empty text without spaces", code="bad_config")
        # RFC 9728 §3.1: the well-known suffix goes between the host and the resource's path.
        path = "" if target.path == "/" else target.path.rstrip("/")
        object.__setattr__(self, "metadata_path", METADATA_WELL_KNOWN + path)
        object.__setattr__(self, "metadata_url", target.origin + METADATA_WELL_KNOWN + path)
        object.__setattr__(
            self, "_document", json.dumps(self.document(), separators=(",", ":"), sort_keys=True).encode()
        )

    @classmethod
    def of(
        cls,
        resource: str,
        authorization_servers: Collection[str],
        *,
        scopes_supported: Collection[str] = (),
        name: str | None = None,
        token_algorithms: Collection[str] = ("RS256",),
    ) -> ResourceServer:
        return cls(
            resource,
            tuple(authorization_servers),
            tuple(scopes_supported),
            name,
            tuple(sorted(token_algorithms)),
        )

    def document(self) -> dict[str, Any]:
        """The RFC 9728 §2 metadata document."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
            "mudrika_token_signing_alg_values": list(self.token_algorithms),
        }
        if self.scopes_supported:
            document["scopes_supported"] = list(self.scopes_supported)
        if self.name is not None:
            document["resource_name"] = self.name
        return document

    @property
    def document_bytes(self) -> bytes:
        """The document as served (computed once)."""
        return self._document

    def serves(self, path: str) -> bool:
        """Whether ``path`` is where this metadata is published (the path-specific well-known URL,
        and, for a resource below the root, the root one clients try when the first is absent)."""
        return path in (self.metadata_path, METADATA_WELL_KNOWN)

    def parameters(self, status: int, scopes: Collection[str] = ()) -> str:
        """Challenge parameters this resource adds to a Bearer/DPoP challenge (RFC 9728 §5.1): where
        its metadata is, and on a 403 (or when it names scopes) the ``scope`` to ask for."""
        text = f', resource_metadata="{_quoted(self.metadata_url)}"'
        wanted = list(scopes) or (list(self.scopes_supported) if status == 401 else [])
        if wanted:
            text += f', scope="{_quoted(" ".join(wanted))}"'
        return text
