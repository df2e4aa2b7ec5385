"""Two OS processes (uvicorn replicas) share one Redis: a jti presented 1,000 times concurrently across
both is accepted exactly once."""

from __future__ import annotations

import collections
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests._support.redis_server import RedisServer
from tests._support.replay import post_concurrently
from tests.integration._apps.replay_app import ENV_NAMESPACE, ENV_REDIS_URL
from tests.integration._apps.replicas import serve_replicas

pytestmark = pytest.mark.integration

PRESENTATIONS = 1000
CONCURRENCY = 100


@pytest.fixture(scope="module")
def replicas(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    env = {ENV_REDIS_URL: redis_server.url, ENV_NAMESPACE: f"race:{uuid.uuid4().hex}:"}
    with serve_replicas(
        "tests.integration._apps.replay_app:create_app",
        env=env,
        logdir=tmp_path_factory.mktemp("replicas"),
    ) as urls:
        yield urls


async def _race(urls: list[str], jti: str) -> collections.Counter[int]:
    responses = await post_concurrently(
        urls,
        PRESENTATIONS,
        lambda client, url, _: client.post(f"{url}/present", json={"jti": jti}),
        concurrency=CONCURRENCY,
        deadline=120,
    )
    statuses = collections.Counter(response.status_code for response in responses)
    accepted_by = [response.json()["pid"] for response in responses if response.status_code == 200]
    assert len(accepted_by) == statuses[200]
    return statuses


@pytest.mark.anyio
async def test_replicas_are_separate_processes(replicas: list[str]) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        pids = {(await client.get(f"{url}/health")).text for url in replicas}
    assert len(pids) == 2


@pytest.mark.anyio
async def test_same_jti_across_two_processes_accepted_once(replicas: list[str]) -> None:
    statuses = await _race(replicas, f"jti-{uuid.uuid4().hex}")
    assert statuses == {200: 1, 409: PRESENTATIONS - 1}


@pytest.mark.anyio
async def test_race_is_per_key(replicas: list[str]) -> None:
    """A key already used does not affect a second key's race, and stays used on every replica."""
    used, fresh = f"used-{uuid.uuid4().hex}", f"fresh-{uuid.uuid4().hex}"
    async with httpx.AsyncClient(timeout=60) as client:
        first = await client.post(f"{replicas[0]}/present", json={"jti": used})
        assert first.status_code == 200
        statuses = await _race(replicas, fresh)
        assert statuses == {200: 1, 409: PRESENTATIONS - 1}
        for url in replicas:
            again = await client.post(f"{url}/present", json={"jti": used})
            assert again.status_code == 409
            assert again.json() == {"error": "replay"}
