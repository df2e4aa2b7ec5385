"""Shared pieces of the AP2 mandate and evidence-bundle tests: the fixture chain builder, the fixture
bundle, and a guard that makes any network use fail the test."""

from __future__ import annotations

import importlib.util
import socket
import sys
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests._support.paths import FIXTURES

__all__ = ["BUNDLE", "evidence_builder", "forbid_network"]

BUNDLE = FIXTURES / "evidence" / "bundle.json"
"""The checked-in evidence bundle (its chain verifies at its evidence time)."""

_BUILDER_MODULE = "mudrika_evidence_builder"


def evidence_builder() -> ModuleType:
    """``fixtures/evidence/make_bundle.py`` loaded once per process (it is a script, not a package):
    it builds signed intent/cart/payment chains and the merchant's DID document."""
    if _BUILDER_MODULE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _BUILDER_MODULE, FIXTURES / "evidence" / "make_bundle.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_BUILDER_MODULE] = module
        spec.loader.exec_module(module)
    return sys.modules[_BUILDER_MODULE]


def forbid_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any attempt to open a connection (sockets, DNS, httpx) fail the test loudly: dispute
    verification must work offline."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("dispute verification tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(httpx.Client, "send", refuse)
    monkeypatch.setattr(httpx.AsyncClient, "send", refuse)
