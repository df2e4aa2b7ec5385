"""Two uvicorn processes share one real Redis: the SAME DID-signed request presented 1,000 times
concurrently across both is accepted exactly once; with Redis stopped, nothing is accepted."""

from __future__ import annotations

import collections
import json
import uuid
from collections.abc import Iterator

import httpx
import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.trust.httpsig import HttpMessageSigner
from tests._support.httpsig import did_key, sign_request
from tests._support.redis_server import RedisServer
from tests._support.replay import post_concurrently
from tests.integration._apps.httpsig_app import (
    ENV_JWK,
    ENV_KEYID,
    ENV_NAMESPACE,
    ENV_REDIS_URL,
    PUBLIC_ORIGIN,
)
from tests.integration._apps.replicas import serve_replicas

pytestmark = pytest.mark.integration

PRESENTATIONS = 1000
CONCURRENCY = 100
OUTAGE_PRESENTATIONS = 200
BODY = b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[]}}}'


@pytest.fixture(scope="module")
def signer_key() -> KeyPair:
    return KeyPair.generate(KeyType.ED25519)


@pytest.fixture(scope="module")
def keyid(signer_key: KeyPair) -> str:
    return did_key(signer_key)[1]


@pytest.fixture(scope="module")
def replicas(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory, signer_key: KeyPair, keyid: str
) -> Iterator[list[str]]:
    env = {
        ENV_REDIS_URL: redis_server.url,
        ENV_NAMESPACE: f"httpsig-race:{uuid.uuid4().hex}:",
        ENV_KEYID: keyid,
        ENV_JWK: json.dumps(signer_key.public_key.to_jwk()),
    }
    with serve_replicas(
        "tests.integration._apps.httpsig_app:create_app",
        env=env,
        logdir=tmp_path_factory.mktemp("httpsig-replicas"),
    ) as urls:
        yield urls


def signed(signer_key: KeyPair, keyid: str) -> dict[str, str]:
    """One request signed for the replicas' public origin (they sit behind one load balancer)."""
    signer = HttpMessageSigner(signer_key, keyid, expires_in=300)
    return sign_request(signer, "POST", f"{PUBLIC_ORIGIN}/a2a", BODY)


async def present_all(urls: list[str], requests: list[dict[str, str]]) -> list[tuple[int, dict[str, object]]]:
    """POST every header set (with BODY) concurrently, spread round-robin across the replicas."""
    responses = await post_concurrently(
        urls,
        len(requests),
        lambda client, url, i: client.post(f"{url}/a2a", content=BODY, headers=requests[i]),
        concurrency=CONCURRENCY,
        deadline=180,
    )
    return [(response.status_code, response.json()) for response in responses]


@pytest.mark.anyio
async def test_replicas_are_separate_processes(replicas: list[str]) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        pids = {(await client.get(f"{url}/health")).text for url in replicas}
    assert len(pids) == 2


@pytest.mark.anyio
async def test_same_signed_request_accepted_once_across_two_processes(
    replicas: list[str], signer_key: KeyPair, keyid: str
) -> None:
    headers = signed(signer_key, keyid)
    answers = await present_all(replicas, [headers] * PRESENTATIONS)
    statuses = collections.Counter(status for status, _ in answers)
    assert statuses == {200: 1, 401: PRESENTATIONS - 1}
    refused = collections.Counter(
        (body["error"], body["jsonrpc"]) for status, body in answers if status == 401
    )
    assert refused == {("replay", -32010): PRESENTATIONS - 1}
    accepted = [body for status, body in answers if status == 200]
    assert accepted[0]["did"] == keyid.split("#", maxsplit=1)[0]


@pytest.mark.anyio
async def test_redis_stopped_every_verification_refused(
    replicas: list[str], redis_server: RedisServer, signer_key: KeyPair, keyid: str
) -> None:
    # Redis up: a fresh request is accepted (the replicas work).
    before = await present_all(replicas[:1], [signed(signer_key, keyid)])
    assert before[0][0] == 200
    fresh = [signed(signer_key, keyid) for _ in range(OUTAGE_PRESENTATIONS)]
    redis_server.stop()
    try:
        answers = await present_all(replicas, fresh)
    finally:
        redis_server.start()
    statuses = collections.Counter(status for status, _ in answers)
    assert statuses == {503: OUTAGE_PRESENTATIONS}
    assert {body["error"] for _, body in answers} == {"replay_store_unavailable"}
    # Redis back: a request refused during the outage was never claimed, so it is accepted now, once.
    after = await present_all(replicas, [fresh[0], fresh[0]])
    assert sorted(status for status, _ in after) == [200, 401]
