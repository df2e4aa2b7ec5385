"""The per-principal claim quota: fixed windows, bounded memory, and a full table that refuses
(fails closed) rather than forgets a count."""

from __future__ import annotations

import pytest

from mudrika.errors import InvalidInput
from mudrika.trust.middleware._quota import ClaimQuota
from tests._support.tokenfactory import Clock


def test_each_principal_has_its_own_window() -> None:
    clock = Clock(0.0)
    quota = ClaimQuota(limit=3, window=10, clock=clock)
    assert [quota.allow("did:key:a") for _ in range(4)] == [True, True, True, False]
    assert quota.allow("did:key:b")  # another principal is not affected
    clock.now = 9.999
    assert not quota.allow("did:key:a")
    clock.now = 10.0  # the window is [start, start + window)
    assert quota.allow("did:key:a")


def test_a_full_table_refuses_new_principals_until_windows_expire() -> None:
    clock = Clock(0.0)
    quota = ClaimQuota(limit=5, window=10, max_principals=2, clock=clock)
    assert quota.allow("p1")
    assert quota.allow("p2")
    assert not quota.allow("p3")  # table full of live windows: refuse, never forget p1's count
    assert quota.allow("p1")
    clock.now = 10.0
    assert quota.allow("p3")


@pytest.mark.parametrize(
    "kwargs", [{"limit": 0}, {"window": 0}, {"window": float("inf")}, {"max_principals": 0}]
)
def test_bad_configuration(kwargs: dict[str, float]) -> None:
    with pytest.raises(InvalidInput):
        ClaimQuota(**kwargs)  # type: ignore[arg-type]
