"""Single use on a real Redis Cluster: three ``redis-server`` nodes in cluster mode on loopback, built
by the test, and two uvicorn replicas of the A2A middleware using it as their replay store.

* the same DID-signed request presented to both replicas is accepted once;
* requests whose nonces hash to slots on all three nodes are each accepted once and refused as
  replays on the other replica;
* with one node down, nothing is accepted that the cluster cannot vouch for (fail closed: 503), and
  no replay is ever accepted;
* the store reads ``maxmemory-policy`` from every node and refuses a cluster that may evict claims.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.stores.replay import RedisReplayStore
from mudrika.trust.httpsig import REPLAY_KEY_PREFIX, HttpMessageSigner
from tests._support.httpsig import did_key, sign_request
from tests._support.net import free_port
from tests._support.redis_server import RedisServer, require_redis_executable
from tests.integration._apps.cluster_app import ENV_AGENT, ENV_NODES, PUBLIC_ORIGIN
from tests.integration._apps.replicas import serve_replicas

pytestmark = pytest.mark.integration

SLOTS = 16384
#: Client port -> cluster bus port of each node started here.
BUS_PORTS: dict[int, int] = {}


def _node(executable: str, root: Path) -> RedisServer:
    port = free_port()
    workdir = root / str(port)
    workdir.mkdir()
    # The cluster bus defaults to port + 10000, which may not exist (> 65535): name a free one.
    BUS_PORTS[port] = free_port()
    args = [
        *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
        *("--cluster-node-timeout", "1000", "--cluster-port", str(BUS_PORTS[port])),
    ]
    return RedisServer(executable, port, workdir, args)


def _form_cluster(nodes: list[RedisServer]) -> None:
    clients = [redis.Redis(host="127.0.0.1", port=node.port) for node in nodes]
    share = SLOTS // len(nodes)
    for i, client in enumerate(clients):
        last = SLOTS - 1 if i == len(clients) - 1 else (i + 1) * share - 1
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", i * share, last)  # type: ignore[no-untyped-call]
    for client in clients[1:]:
        first = nodes[0].port
        client.execute_command("CLUSTER", "MEET", "127.0.0.1", first, BUS_PORTS[first])  # type: ignore[no-untyped-call]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        infos = [client.execute_command("CLUSTER", "INFO") for client in clients]  # type: ignore[no-untyped-call]
        texts = [info.decode() if isinstance(info, bytes) else str(info) for info in infos]
        if all("cluster_state:ok" in text and "cluster_known_nodes:3" in text for text in texts):
            break
        time.sleep(0.1)
    else:
        raise TimeoutError("the test cluster did not reach cluster_state:ok")
    for client in clients:
        client.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[RedisServer]]:
    executable = require_redis_executable()
    root = tmp_path_factory.mktemp("cluster")
    nodes = [_node(executable, root) for _ in range(3)]
    try:
        for node in nodes:
            node.start()
        _form_cluster(nodes)
        yield nodes
    finally:
        for node in nodes:
            node.stop()


@pytest.fixture(scope="module")
def agent() -> KeyPair:
    return KeyPair.generate("ed25519")


@pytest.fixture(scope="module")
def replicas(
    cluster: list[RedisServer], agent: KeyPair, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[str]]:
    env = {
        ENV_NODES: ",".join(f"127.0.0.1:{node.port}" for node in cluster),
        ENV_AGENT: did_key(agent)[0],
    }
    with serve_replicas(
        "tests.integration._apps.cluster_app:create_app", env=env, logdir=tmp_path_factory.mktemp("logs")
    ) as bases:
        yield bases


def _request(agent: KeyPair) -> tuple[bytes, dict[str, str], str]:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "message/send", "params": {}}
    ).encode()
    headers = sign_request(HttpMessageSigner(agent, did_key(agent)[1]), "POST", PUBLIC_ORIGIN + "/", body)
    nonce = headers["Signature-Input"].split('nonce="', 1)[1].split('"', 1)[0]
    return body, headers, f"cluster-test:{REPLAY_KEY_PREFIX}{did_key(agent)[0]}:{nonce}"


def _client(cluster: list[RedisServer]) -> RedisCluster:
    nodes = [ClusterNode("127.0.0.1", node.port) for node in cluster]  # type: ignore[no-untyped-call]
    return RedisCluster(startup_nodes=nodes)


def test_the_same_request_is_accepted_once_across_replicas(replicas: list[str], agent: KeyPair) -> None:
    body, headers, _ = _request(agent)
    statuses = [httpx.post(base + "/", content=body, headers=headers).status_code for base in replicas * 3]
    assert statuses.count(200) == 1
    assert set(statuses) == {200, 401}


def test_single_use_holds_on_every_node_of_the_cluster(
    replicas: list[str], agent: KeyPair, cluster: list[RedisServer]
) -> None:
    client = _client(cluster)
    owners: set[str] = set()
    try:
        for _ in range(30):
            body, headers, key = _request(agent)
            first, second = replicas
            assert httpx.post(first + "/", content=body, headers=headers).status_code == 200
            assert httpx.post(second + "/", content=body, headers=headers).status_code == 401
            node = client.get_node_from_key(key)  # type: ignore[no-untyped-call]
            assert node is not None
            owners.add(node.name)
    finally:
        client.close()
    assert len(owners) == 3  # the claims landed in slots owned by all three nodes


def test_store_refuses_a_cluster_that_may_evict(cluster: list[RedisServer]) -> None:
    client = _client(cluster)
    try:
        RedisReplayStore(client=client)  # every node says noeviction
        target = redis.Redis(host="127.0.0.1", port=cluster[1].port)
        target.config_set("maxmemory-policy", "volatile-lru")
        try:
            with pytest.raises(InvalidInput) as info:
                RedisReplayStore(client=client)
            assert info.value.code == "redis_eviction_policy"
            assert info.value.fields["policy"] == "volatile-lru"
        finally:
            target.config_set("maxmemory-policy", "noeviction")
            target.close()
    finally:
        client.close()


def test_a_node_down_fails_closed(replicas: list[str], agent: KeyPair, cluster: list[RedisServer]) -> None:
    accepted = []
    for _ in range(20):
        body, headers, _ = _request(agent)
        assert httpx.post(replicas[0] + "/", content=body, headers=headers).status_code == 200
        accepted.append((body, headers))
    cluster[2].stop()
    try:
        statuses = [
            httpx.post(replicas[1] + "/", content=body, headers=headers, timeout=120).status_code
            for body, headers in accepted
        ]
        fresh_body, fresh_headers, _ = _request(agent)
        fresh = [
            httpx.post(base + "/", content=fresh_body, headers=fresh_headers, timeout=120).status_code
            for base in replicas
        ]
    finally:
        cluster[2].start()
    assert 200 not in statuses  # no replay accepted, whichever node its claim lived on
    assert 503 in statuses  # claims the cluster cannot check fail closed
    assert fresh.count(200) <= 1
