"""The fixed choices the CLI offers, spelt out so that ``--help`` needs no heavy import.

Why a copy: the authoritative lists live next to the code that implements them (``KeyType`` with
the key classes and cryptography, ``IdentityProvider`` with the pydantic trust models, ``DidMethod``
with provisioning), and importing those modules costs more than the whole start-up budget of
``mudrika <group> --help``.  tests/unit/test_cli_startup.py holds each tuple equal to its source.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["DID_METHODS", "IDENTITY_PROVIDERS", "KEY_TYPES", "did_method_option", "key_type_options"]

_F = TypeVar("_F", bound=Callable[..., Any])

#: ``mudrika.crypto.keys.KeyType`` values, in declaration order.
KEY_TYPES: tuple[str, ...] = ("ed25519", "p256", "secp256k1", "rsa")

#: ``mudrika.identity.provision.DidMethod``: the methods mudrika can create.
DID_METHODS: tuple[str, ...] = ("key", "jwk", "web", "bindu")

#: ``mudrika.trust.models.IdentityProvider``: where a caller's groups can come from.
IDENTITY_PROVIDERS: tuple[str, ...] = ("keycloak", "azure_ad", "okta", "auth0", "custom")


def did_method_option(help_text: str | None = None) -> Callable[[_F], _F]:
    """``--method``: which DID method a key-creating command derives the agent's DID with (default did:key)."""
    return click.option(
        "--method", type=click.Choice(DID_METHODS), default="key", show_default=True, help=help_text
    )


def key_type_options(type_help: str) -> Callable[[_F], _F]:
    """``--type`` (with ``type_help``) and ``--rsa-bits``: the key choice every key-creating command offers."""

    def decorate(func: _F) -> _F:
        func = click.option(
            "--rsa-bits", type=click.Choice(["2048", "3072", "4096"]), default="2048", show_default=True
        )(func)
        return click.option(
            "--type",
            "key_type",
            type=click.Choice(KEY_TYPES),
            default="ed25519",
            show_default=True,
            help=type_help,
        )(func)

    return decorate
