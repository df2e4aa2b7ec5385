"""Offline means offline: a fixture (and the function behind it) that makes every way out fail.

Dispute verification, offline resolution and the CLI's evidence commands promise to work with no
network at all.  A test proves it by refusing sockets, DNS and httpx (sync and async) for its
duration; a path that tries one fails loudly instead of quietly reaching the internet.  Registered
as a plugin by the root conftest, so any test can ask for ``no_network``.
"""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest

__all__ = ["forbid_network", "no_network"]


def forbid_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any attempt to open a connection (sockets, DNS, httpx) fail the test loudly."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an offline path tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(httpx.Client, "send", refuse)
    monkeypatch.setattr(httpx.AsyncClient, "send", refuse)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_network(monkeypatch)
