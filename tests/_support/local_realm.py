"""Fixtures the offline tests share (tokens, middleware, replay stores, nonces; unit and security
alike): a settable clock at ``T0``, a local identity provider that signs with it, and a JWKS cache
that fetches that provider's keys in-process.  Registered as a plugin by the root conftest.

A test file that needs another clock (the wall clock, say) defines its own ``clock`` fixture;
pytest's override applies to ``realm`` and ``jwks`` as well.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mudrika.trust.keycloak.jwks import JwksCache
from tests._support.tokenfactory import T0, Clock, LocalRealm, realm_jwks


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def realm(clock: Clock) -> LocalRealm:
    return LocalRealm(clock)


@pytest.fixture
def jwks(realm: LocalRealm) -> Iterator[JwksCache]:
    with realm_jwks(realm) as cache:
        yield cache
