"""``open_compact`` + ``verify_opened``: the two halves of ``verify_compact`` for verifiers that choose
the key themselves (the AP2 chain).  They must accept and refuse exactly what ``verify_compact`` does,
with the same error codes, and never show a token in a repr."""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jose import (
    TrustedKey,
    open_compact,
    sign_compact,
    sign_jwt,
    verify_compact,
    verify_jwt,
    verify_opened,
    verify_opened_jwt,
)
from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import MudrikaError


@pytest.fixture(scope="module")
def pair() -> KeyPair:
    return KeyPair.generate(KeyType.P256)


def _outcome_of_two_halves(token: str, key: TrustedKey, expected_typ: str | None) -> bytes | str:
    try:
        opened = open_compact(token, expected_typ=expected_typ)
        return verify_opened(opened, key=key)
    except MudrikaError as exc:
        return exc.code


def _outcome_of_verify_compact(token: str, key: TrustedKey, expected_typ: str | None) -> bytes | str:
    try:
        return verify_compact(token, key=key, expected_typ=expected_typ).payload
    except MudrikaError as exc:
        return exc.code


def _tokens(pair: KeyPair) -> list[str]:
    good = sign_jwt({"sub": "a"}, pair, kid="k1")
    header, payload, signature = good.split(".")
    forged = sign_jwt({"sub": "a"}, KeyPair.generate(KeyType.P256), kid="k1")
    alg_none = b64url_encode(b'{"alg":"none"}')
    with_jku = b64url_encode(b'{"alg":"ES256","jku":"https://x"}')
    not_an_object = b64url_encode(b"[1]")
    return [
        good,
        sign_jwt({"sub": "a"}, pair, kid="k1", typ="other+jwt"),
        sign_jwt({"sub": "a"}, pair, kid="other"),
        sign_compact(b"not json", pair, kid="k1"),
        f"{header}.{payload}.{forged.split('.')[2]}",
        f"{header}.{payload}",
        f"{header}.{payload}.{signature}.x",
        f"{alg_none}.{payload}.",
        f"{with_jku}.{payload}.{signature}",
        f"{not_an_object}.{payload}.{signature}",
        f"{header}.{payload}!.{signature}",
        "x" * 70_000,
    ]


@pytest.mark.parametrize("expected_typ", [None, "JWT"])
def test_the_two_halves_accept_and_refuse_what_verify_compact_does(
    pair: KeyPair, expected_typ: str | None
) -> None:
    key = TrustedKey.for_key(pair.public_key, kid="k1")
    outcomes = []
    for token in _tokens(pair):
        ours = _outcome_of_two_halves(token, key, expected_typ)
        assert ours == _outcome_of_verify_compact(token, key, expected_typ), token[:80]
        outcomes.append(ours)
    assert outcomes[0] == b'{"sub":"a"}'
    assert {"bad_signature", "kid_mismatch", "malformed_jws", "forbidden_header"} <= set(outcomes)
    assert ("wrong_typ" in outcomes) is (expected_typ is not None)


def test_an_algorithm_the_key_does_not_allow_is_refused_after_opening(pair: KeyPair) -> None:
    token = sign_jwt({"sub": "a"}, pair)
    opened = open_compact(token)
    assert opened.alg == "ES256"
    assert opened.header["alg"] == "ES256"
    ed25519_key = TrustedKey.for_key(KeyPair.generate(KeyType.ED25519).public_key)
    with pytest.raises(MudrikaError) as refused:
        verify_opened(opened, key=ed25519_key)
    assert refused.value.code == "alg_not_allowed"


def test_an_opened_jws_shows_no_token_text(pair: KeyPair) -> None:
    token = sign_jwt({"secret": "s3cr3t-value"}, pair, kid="kid-1")
    text = repr(open_compact(token))
    assert text == "OpenedJWS(alg='ES256')"
    assert token.split(".")[1] not in text


_CHECKS: dict[str, Any] = {
    "issuer": "https://idp.example",
    "audience": None,
    "now": 1_700_000_000,
    "leeway": 30,
}


def _whole(token: str, key: TrustedKey) -> dict[str, Any] | str:
    try:
        return verify_jwt(token, key=key, **_CHECKS)
    except MudrikaError as exc:
        return exc.code


def _halves(token: str, key: TrustedKey) -> dict[str, Any] | str:
    try:
        return verify_opened_jwt(open_compact(token), key=key, **_CHECKS)
    except MudrikaError as exc:
        return exc.code


def test_verify_opened_jwt_accepts_and_refuses_what_verify_jwt_does(pair: KeyPair) -> None:
    """The second half of verify_jwt on an opened token: the same claims or the same refusal, for
    signatures, keys and every claim rule (a verifier that opens a token once relies on it)."""
    now = _CHECKS["now"]
    good = {"iss": "https://idp.example", "aud": "api", "sub": "a", "exp": now + 60, "iat": now}
    variants: list[dict[str, Any]] = [
        good,
        {**good, "exp": now - 31},
        {**good, "exp": now - 29},
        {**good, "nbf": now + 31},
        {**good, "iat": now + 31},
        {**good, "iss": "https://elsewhere.example"},
        {key: value for key, value in good.items() if key != "iat"},
        {**good, "exp": "tomorrow"},
    ]
    key = TrustedKey.for_key(pair.public_key, kid="k1")
    tokens = [sign_jwt(claims, pair, kid="k1") for claims in variants] + _tokens(pair)
    outcomes = []
    for token in tokens:
        halves = _halves(token, key)
        assert halves == _whole(token, key), token[:80]
        outcomes.append(halves)
    assert outcomes[0] == good
    assert outcomes[2] == variants[2]  # expired 29 s ago: within the leeway
    refusals = {outcome for outcome in outcomes if isinstance(outcome, str)}
    assert {
        "expired",
        "not_yet_valid",
        "iat_in_future",
        "wrong_iss",
        "missing_claim",
        "malformed_claim",
    } <= refusals


def test_verify_opened_jwt_keeps_the_size_cap_the_token_was_opened_with(pair: KeyPair) -> None:
    token = sign_jwt({"sub": "a", "pad": "x" * 600, "exp": 2_000_000_000, "iat": 1}, pair, kid="k1")
    key = TrustedKey.for_key(pair.public_key, kid="k1")
    opened = open_compact(token, max_bytes=len(token))
    assert verify_opened_jwt(opened, key=key, issuer=None, audience=None, now=2)["sub"] == "a"
    with pytest.raises(MudrikaError) as refused:
        open_compact(token, max_bytes=len(token) - 1)
    assert refused.value.code == "too_large"
