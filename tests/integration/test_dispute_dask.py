"""Past one machine: the batch's pure function on a real ``dask.distributed`` cluster.

A ``LocalCluster`` of two worker processes on 127.0.0.1 runs :func:`verify_bundle_bytes` over 200
bundles shipped as bytes (genuine ones, amounts raised after signing, cases with another nonce,
cases without a nonce), and the results must be identical to the local run, bundle by bundle.
:func:`verify_batch` on a ``distributed.Client`` and ``dispute verify --scheduler`` must give the
serial run's results in its order, and the command the same stdout, stderr and exit code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.payments.batch import BundleResult, verify_batch, verify_bundle_bytes
from tests._support.cli import run_cli
from tests._support.dispute_batch import batch_of
from tests._support.evidence import TRUST_ROOT

distributed = pytest.importorskip(
    "distributed", reason="PyPI 'distributed' (the test extra) is not installed"
)

BUNDLES = 200


def test_200_bundles_on_a_local_dask_cluster_match_the_local_run() -> None:
    trust_root = TRUST_ROOT.read_bytes()
    jobs = batch_of(BUNDLES)
    local = [verify_bundle_bytes(data, trust_root=trust_root, case=case) for data, case in jobs]
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        futures = [
            client.submit(
                verify_bundle_bytes, data, trust_root=trust_root, case=case, key=f"bundle-{case.name}"
            )
            for data, case in jobs
        ]
        remote: list[BundleResult] = client.gather(futures)
        workers = set(client.who_has(futures).values())
    assert len(remote) == BUNDLES
    assert remote == local
    outcomes = {result.outcome for result in remote}
    assert outcomes == {"OK", "FAILED", "UNANCHORED"}
    # The work really was spread over the cluster's worker processes.
    assert len({address for addresses in workers for address in addresses}) == 2


def _in_process_cluster() -> Any:
    """Two workers as threads of this process on 127.0.0.1 (fast to start; stopped by the test)."""
    return distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    )


def test_verify_batch_on_a_dask_client_is_the_serial_run() -> None:
    trust_root = TRUST_ROOT.read_bytes()
    jobs = batch_of(9)
    serial = list(verify_batch(jobs, trust_root=trust_root))
    with _in_process_cluster() as cluster, distributed.Client(cluster) as client:
        remote = list(verify_batch(jobs, trust_root=trust_root, executor=client, max_chunk=2))
    assert remote == serial
    assert [result.name for result in remote] == [case.name for _, case in jobs]


def test_dispute_verify_scheduler_prints_what_jobs_1_prints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = []
    for index, (data, case) in enumerate(batch_of(7)):
        (tmp_path / f"{index}.json").write_bytes(data)
        lines.append(
            json.dumps(
                {"id": case.name, "bundle": f"{index}.json"}
                | ({"kb_nonce": case.kb_nonce} if case.kb_nonce else {})
            )
        )
    lines.insert(2, '{"id": "no-such-file", "bundle": "missing.json"}')
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(lines) + "\n")
    argv = ("dispute", "verify", "--cases", str(cases), "--trust-root", str(TRUST_ROOT), "--json")
    serial = run_cli(capsys, *argv)
    with _in_process_cluster() as cluster:
        on_dask = run_cli(capsys, *argv, "--scheduler", cluster.scheduler_address)
    assert on_dask == serial
    code, out, _ = serial
    assert code == 2  # the missing bundle
    verdicts = [row["verdict"] for row in json.loads(out)["results"]]
    assert verdicts == ["OK", "FAILED", "ERROR", "FAILED", "OK", "UNANCHORED", "OK", "FAILED"]
