"""What the middleware keeps per credential, and when the body read arms its deadline.

The Bearer authenticator keeps a token's ``Authenticated`` when the token comes again and the
verifier keeps its result (``AccessTokenVerifier.holds``; the verifier keeps results from a token's
second verification on): a token met once, or one the verifier does not keep, leaves only its
12-hex-digit label behind.  The body
read runs until it first waits; only then is a deadline armed around the rest
(:func:`~mudrika.trust.middleware._http.run_until_suspended`), and the rest behaves exactly as an
``await`` of the whole read would.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import anyio
import pytest

from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import AuthRequest, BearerAuthenticator
from mudrika.trust.middleware._bearer import _MEMO_LIMIT
from mudrika.trust.middleware._http import run_until_suspended
from tests._support.tokenfactory import Clock, LocalRealm


def _bearer(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> BearerAuthenticator:
    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience=realm.audience, azp_allowlist=None, jwks=jwks, clock=clock
    )
    return BearerAuthenticator(verifier)


def _request(token: str) -> AuthRequest:
    return AuthRequest(
        method="POST",
        path="/",
        query_string=b"",
        headers=[(b"authorization", f"Bearer {token}".encode())],
        body=b"",
    )


# --- the Bearer authenticator's memo ---------------------------------------------------------------


@pytest.mark.anyio
async def test_a_token_met_once_leaves_only_its_label(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    bearer = _bearer(realm, jwks, clock)
    for n in range(5):
        auth = await bearer.authenticate(_request(realm.token(jti=f"once-{n}")))
        assert auth is not None
        assert auth.principal.subject
    assert bearer._memo == {}
    assert len(bearer._seen) == 5
    assert all(isinstance(label, str) and len(label) == 12 for label in bearer._seen)


@pytest.mark.anyio
async def test_a_token_that_comes_again_is_served_one_authenticated(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    bearer = _bearer(realm, jwks, clock)
    token = realm.token()
    first = await bearer.authenticate(_request(token))
    assert bearer._memo == {}
    second = await bearer.authenticate(_request(token))  # the verifier keeps its result now: so do we
    assert first is not None
    assert second is not None
    assert second is not first
    assert list(bearer._memo) == [second.credential_id]
    assert not bearer._seen  # the label's record goes once the Authenticated is kept
    assert await bearer.authenticate(_request(token)) is second
    assert await bearer.authenticate(_request(token)) is second


@pytest.mark.anyio
async def test_a_token_the_verifier_does_not_keep_is_not_kept_either(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience=realm.audience, azp_allowlist=None, jwks=jwks, clock=clock, cache_size=0
    )
    bearer = BearerAuthenticator(verifier)
    token = realm.token()
    for _ in range(4):
        assert await bearer.authenticate(_request(token)) is not None
    assert bearer._memo == {}
    assert len(bearer._seen) == 1


@pytest.mark.anyio
async def test_a_label_in_the_memo_serves_only_its_own_verified_token(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    """When the verifier hands back a new result for a token (its cache entry expired), the memo's
    older Authenticated is not served for it."""
    bearer = _bearer(realm, jwks, clock)
    token = realm.token()
    for _ in range(2):
        kept = await bearer.authenticate(_request(token))
    assert len(bearer._memo) == 1
    bearer._verifier.clear_cache()
    fresh = await bearer.authenticate(_request(token))
    assert fresh is not None
    assert kept is not None
    assert fresh is not kept
    assert fresh.principal == kept.principal


@pytest.mark.anyio
async def test_the_record_of_labels_stays_within_its_bound(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mudrika.trust.middleware._bearer._MEMO_LIMIT", 3)
    bearer = _bearer(realm, jwks, clock)
    tokens = [realm.token(jti=f"b{n}") for n in range(5)]
    for token in tokens:
        await bearer.authenticate(_request(token))
        assert len(bearer._seen) <= 3
    assert _MEMO_LIMIT == 4096
    await bearer.authenticate(_request(tokens[3]))  # still recorded, and the verifier keeps it now
    assert len(bearer._memo) == 1


# --- run_until_suspended -----------------------------------------------------------------------------


async def _immediate(value: str) -> str:
    return value


class _Gate:
    """An event for the suspending coroutines below, and a record of what they saw."""

    def __init__(self) -> None:
        self.opened = anyio.Event()
        self.cleaned_up = False


async def _waits_then_answers(gate: _Gate) -> str:
    try:
        await gate.opened.wait()
        await anyio.sleep(0)
        return "after the wait"
    finally:
        gate.cleaned_up = True


def test_a_coroutine_that_never_waits_is_finished_at_once() -> None:
    result, rest = run_until_suspended(_immediate("body"))
    assert (result, rest) == ("body", None)


def test_a_coroutine_that_fails_before_waiting_raises_at_once() -> None:
    async def fails() -> str:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        run_until_suspended(fails())


@pytest.mark.anyio
async def test_the_rest_of_a_waiting_coroutine_finishes_it() -> None:
    gate = _Gate()
    result, rest = run_until_suspended(_waits_then_answers(gate))
    assert result is None
    assert rest is not None

    async def open_soon() -> None:
        await anyio.sleep(0)
        gate.opened.set()

    async with anyio.create_task_group() as group:
        group.start_soon(open_soon)
        assert await rest == "after the wait"
    assert gate.cleaned_up


@pytest.mark.anyio
async def test_a_deadline_around_the_rest_cancels_the_coroutine_itself() -> None:
    gate = _Gate()
    _, rest = run_until_suspended(_waits_then_answers(gate))
    assert rest is not None
    with anyio.move_on_after(0.01) as deadline:
        await rest
    assert deadline.cancelled_caught
    assert gate.cleaned_up  # the cancellation reached the coroutine: its finally ran


def test_a_rest_never_awaited_is_closed_with_its_coroutine() -> None:
    gate = _Gate()
    coroutine: Coroutine[Any, Any, str] = _waits_then_answers(gate)

    async def drive() -> None:
        _, rest = run_until_suspended(coroutine)
        assert rest is not None
        awaiting = rest.__await__()
        next(awaiting)  # hand the loop what the coroutine waits for, as an await would
        awaiting.close()  # the awaiting side goes away: the coroutine is closed with it

    anyio.run(drive)
    assert gate.cleaned_up
