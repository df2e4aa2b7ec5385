"""Root conftest: fixture modules from tests/_support are registered here (one per line)."""

from __future__ import annotations

pytest_plugins: list[str] = [
    "tests._support.redis_server",
    "tests._support.idp",
    "tests._support.anyio_backend",
    "tests._support.local_realm",
    "tests._support.offline",
]
