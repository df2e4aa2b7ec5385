"""``open_compact`` + ``verify_opened``: the two halves of ``verify_compact`` for verifiers that choose
the key themselves (the AP2 chain).  They must accept and refuse exactly what ``verify_compact`` does,
with the same error codes, and never show a token in a repr."""

from __future__ import annotations

import pytest

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jose import (
    TrustedKey,
    open_compact,
    sign_compact,
    sign_jwt,
    verify_compact,
    verify_opened,
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
