"""The one time rule, at the exact boundary instant, for every verifier and store it governs.

Rule: validity is the half-open interval ``[not_before - leeway, expires + leeway)``.  At the exact
instant ``expires + leeway`` a signature, token or proof is expired; single-use claims are held
until exactly that instant (a store may forget a claim when ``now == deadline``), so no instant
exists at which a replay is inside the window and forgotten by the store.  Not yet valid is never
reported as expired.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mudrika.crypto.keys import KeyPair
from mudrika.errors import ExpiredError, NotYetValidError, ReplayError
from mudrika.stores.replay import MemoryReplayStore, ReplayStore, SqliteReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    HttpMessageSigner,
    HttpSignatureVerifier,
    StaticKeyLookup,
)
from mudrika.trust.jsonrpc import InvalidToken, JsonRpcAuthCode, TokenExpired, code_for
from mudrika.trust.keycloak.tokens import AccessTokenVerifier, VerifiedToken
from tests._support.httpsig import NOW, ORIGIN, did_key, sign_request
from tests._support.tokenfactory import T0, Clock, LocalRealm, realm_jwks

URL = ORIGIN + "/"
BODY = b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}'
LEEWAY = 5.0
EXPIRES_IN = 60


def _signed(key: KeyPair, at: float) -> dict[str, str]:
    signer = HttpMessageSigner(key, did_key(key)[1], clock=lambda: at, expires_in=EXPIRES_IN)
    return sign_request(signer, "POST", URL, BODY)


def _verifier(key: KeyPair, store: ReplayStore, clock: Clock) -> HttpSignatureVerifier:
    return HttpSignatureVerifier(
        keys=StaticKeyLookup({did_key(key)[1]: key.public_key}),
        replay_store=store,
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
        leeway=LEEWAY,
        max_age=EXPIRES_IN,
        clock=clock,
    )


def test_signature_expiry_boundary_and_the_replay_at_that_instant() -> None:
    key = KeyPair.generate("ed25519")
    clock = Clock(NOW)
    store = MemoryReplayStore(100, clock=clock, min_retention=0)
    verifier = _verifier(key, store, clock)
    headers = _signed(key, NOW)
    end = NOW + EXPIRES_IN + LEEWAY
    clock.now = end - 0.001
    accepted = verifier.verify("POST", URL, headers, BODY)  # last accepted instant (just before the end)
    assert accepted.keyid == did_key(key)[1]
    with pytest.raises(ReplayError):
        verifier.verify("POST", URL, headers, BODY)
    clock.now = end  # the store may forget the claim now, and the verifier refuses: expired
    assert store.purge() == 1
    with pytest.raises(ExpiredError) as info:
        verifier.verify("POST", URL, headers, BODY)
    assert code_for(info.value) is JsonRpcAuthCode.TOKEN_EXPIRED


def test_signature_not_yet_valid_boundary_is_not_expired() -> None:
    key = KeyPair.generate("ed25519")
    clock = Clock(NOW - LEEWAY)
    verifier = _verifier(key, MemoryReplayStore(100, clock=clock), clock)
    accepted = verifier.verify("POST", URL, _signed(key, NOW), BODY)  # created - leeway: inclusive
    assert accepted.created == int(NOW)
    clock.now = NOW - LEEWAY - 0.001
    with pytest.raises(NotYetValidError) as info:
        verifier.verify("POST", URL, _signed(key, NOW), BODY)
    assert code_for(info.value) is JsonRpcAuthCode.INVALID_TOKEN


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_store_holds_a_claim_until_exactly_its_deadline(kind: str, tmp_path: Path) -> None:
    clock = Clock(1000.0)
    store: MemoryReplayStore | SqliteReplayStore = (
        MemoryReplayStore(10, clock=clock, min_retention=0)
        if kind == "memory"
        else SqliteReplayStore(tmp_path / "replay.db", clock=clock, min_retention=0)
    )
    try:
        assert store.claim("k", 1060.0) is True
        clock.now = 1059.999
        assert store.claim("k", 1060.0) is False
        clock.now = 1060.0  # deadline reached: a verifier on the same rule refuses from here on
        assert store.claim("k", 1120.0) is True
    finally:
        store.close()


def test_token_expiry_and_not_before_boundaries() -> None:
    clock = Clock(T0)
    realm = LocalRealm(clock)
    with realm_jwks(realm) as jwks:
        verifier = AccessTokenVerifier(
            issuer=realm.issuer,
            audience="agent-api",
            azp_allowlist=None,
            jwks=jwks,
            clock=clock,
            leeway=LEEWAY,
            cache_size=0,
        )
        token = realm.token(exp=int(T0) + 300, nbf=int(T0) + 100)
        clock.now = T0 + 100 - LEEWAY
        assert verifier.verify(token).claims["nbf"] == int(T0) + 100  # nbf - leeway: inclusive
        clock.now = T0 + 100 - LEEWAY - 0.001
        with pytest.raises(InvalidToken) as early:
            verifier.verify(token)
        assert (early.value.code, int(code_for(early.value))) == ("not_yet_valid", -32010)
        clock.now = T0 + 300 + LEEWAY - 0.001
        assert verifier.verify(token).claims["exp"] == int(T0) + 300
        clock.now = T0 + 300 + LEEWAY  # exp + leeway: exclusive
        with pytest.raises(TokenExpired):
            verifier.verify(token)


class _Introspector:
    """RFC 7662 answers for an opaque token whose claims the test sets."""

    def __init__(self, claims: dict[str, Any]) -> None:
        self.claims = claims

    def introspect(self, token: str) -> dict[str, Any]:
        return {"active": True, "token_type": "Bearer", **self.claims}

    async def aintrospect(self, token: str) -> dict[str, Any]:
        return self.introspect(token)


def _jwt_path(realm: LocalRealm, claims: dict[str, Any]) -> tuple[str, _Introspector | None]:
    return realm.token(**claims), None


def _introspection_path(realm: LocalRealm, claims: dict[str, Any]) -> tuple[str, _Introspector | None]:
    return "opaque-token-under-test", _Introspector(realm.claims(**claims))


#: Every way AccessTokenVerifier reaches a verdict on a token's times; each must apply the one rule.
TOKEN_PATHS = {"jwt": _jwt_path, "introspection": _introspection_path}


async def _call_async(verifier: AccessTokenVerifier, token: str) -> VerifiedToken:
    return await verifier.averify(token)


def _verify(verifier: AccessTokenVerifier, token: str, entry: str) -> VerifiedToken:
    if entry == "verify":
        return verifier.verify(token)
    return anyio.run(_call_async, verifier, token)


@pytest.mark.parametrize("entry", ["verify", "averify"])
@pytest.mark.parametrize("path", sorted(TOKEN_PATHS))
def test_every_token_path_is_valid_on_the_half_open_interval(path: str, entry: str) -> None:
    clock = Clock(T0)
    realm = LocalRealm(clock)
    exp, nbf = int(T0) + 300, int(T0) + 100
    token, introspector = TOKEN_PATHS[path](realm, {"exp": exp, "nbf": nbf})
    with realm_jwks(realm) as jwks:
        verifier = AccessTokenVerifier(
            issuer=realm.issuer,
            audience="agent-api",
            azp_allowlist=None,
            jwks=jwks,
            clock=clock,
            leeway=LEEWAY,
            cache_size=0,
            introspector=introspector,
        )
        clock.now = nbf - LEEWAY  # inclusive
        assert _verify(verifier, token, entry).source == path
        clock.now = nbf - LEEWAY - 0.001
        with pytest.raises(InvalidToken) as early:
            _verify(verifier, token, entry)
        assert early.value.code == "not_yet_valid"
        clock.now = exp + LEEWAY - 0.001  # the last accepted instant
        assert _verify(verifier, token, entry).expires_at == exp
        clock.now = exp + LEEWAY  # exclusive
        with pytest.raises(TokenExpired) as late:
            _verify(verifier, token, entry)
        assert (late.value.code, code_for(late.value)) == ("expired", JsonRpcAuthCode.TOKEN_EXPIRED)
