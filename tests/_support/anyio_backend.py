"""The event loop every ``@pytest.mark.anyio`` test runs on (registered in tests/conftest.py).

asyncio only: the code under test (uvicorn, httpx, redis.asyncio, a2a-sdk) is used on asyncio in
production, and running each async test a second time on trio would double the suite's time for a
backend nobody deploys.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
