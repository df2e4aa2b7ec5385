"""The fixed choices the CLI offers, spelt out so that ``--help`` needs no heavy import.

Why a copy: the authoritative lists live next to the code that implements them (``KeyType`` with
the key classes and cryptography, ``IdentityProvider`` with the pydantic trust models, ``DidMethod``
with provisioning), and importing those modules costs more than the whole start-up budget of
``mudrika <group> --help``.  tests/unit/test_cli_startup.py holds each tuple equal to its source.
"""

from __future__ import annotations

__all__ = ["DID_METHODS", "IDENTITY_PROVIDERS", "KEY_TYPES"]

#: ``mudrika.crypto.keys.KeyType`` values, in declaration order.
KEY_TYPES: tuple[str, ...] = ("ed25519", "p256", "secp256k1", "rsa")

#: ``mudrika.identity.provision.DidMethod``: the methods mudrika can create.
DID_METHODS: tuple[str, ...] = ("key", "jwk", "web", "bindu")

#: ``mudrika.trust.models.IdentityProvider``: where a caller's groups can come from.
IDENTITY_PROVIDERS: tuple[str, ...] = ("keycloak", "azure_ad", "okta", "auth0", "custom")
