"""Past one machine: the batch's pure function on a real ``dask.distributed`` cluster.

A ``LocalCluster`` of two worker processes on 127.0.0.1 runs :func:`verify_bundle_bytes` over 200
bundles shipped as bytes (genuine ones, amounts raised after signing, cases with another nonce,
cases without a nonce), and the results must be identical to the local run, bundle by bundle.
"""

from __future__ import annotations

import pytest

from mudrika.payments.batch import BundleResult, verify_bundle_bytes
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
