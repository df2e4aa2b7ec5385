"""Token Status Lists against npm ``@sd-jwt/jwt-status-list`` 0.19.0 (OpenWallet Foundation's
sd-jwt-js), both ways: its lists decode in mudrika, mudrika's in it, and signed tokens cross over
(it builds the header and payload, panva's ``jose`` signs; mudrika verifies — and it reads the list
out of mudrika's tokens and the ``status`` claim out of mudrika's credentials)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mudrika.crypto import sdjwt
from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.statuslist import (
    StatusList,
    StatusReference,
    check_status,
    sign_status_list_token,
    verify_status_list_token,
)
from mudrika.errors import SignatureError
from tests._support.node import run_node_peer

pytestmark = pytest.mark.interop

URI = "https://issuer.example/statuslists/7"
NOW = 1_767_225_600


def _cases() -> list[tuple[int, int, list[tuple[int, int]]]]:
    rng = random.Random(20260101)
    cases = []
    for bits in (1, 2, 4, 8):
        for size in (8 // bits, 1000, 1 << 16):
            entries = {rng.randrange(size): rng.randrange(1, 1 << bits) for _ in range(min(size, 40))}
            cases.append((bits, size, sorted(entries.items())))
    return cases


CASES = _cases()


def _peer(operations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = run_node_peer("status_list.mjs", operations)
    assert isinstance(result, list)
    return result


def test_their_lists_decode_in_mudrika_and_encode_the_same() -> None:
    answers = _peer([{"op": "encode", "bits": b, "size": n, "set": s} for b, n, s in CASES])
    for (bits, size, entries), answer in zip(CASES, answers, strict=True):
        decoded = StatusList.decode(answer["lst"], bits)
        assert all(decoded.get(index) == value for index, value in entries)
        assert sum(n for value, n in decoded.counts().items() if value) == len(entries)
        ours = StatusList(size, bits)
        for index, value in entries:
            ours.set(index, value)
        assert ours.encode() == answer["lst"]  # pako level 9 and zlib level 9 agree byte for byte


def test_our_lists_decode_in_theirs() -> None:
    operations: list[dict[str, Any]] = []
    for bits, size, entries in CASES:
        ours = StatusList(size, bits)
        for index, value in entries:
            ours.set(index, value)
        probe = sorted({index for index, _ in entries} | {0, size - 1})
        operations.append({"op": "decode", "bits": bits, "lst": ours.encode(), "indices": probe})
    answers = _peer(operations)
    for (bits, size, entries), operation, answer in zip(CASES, operations, answers, strict=True):
        expected = dict(entries)
        assert answer["size"] == -(-size * bits // 8) * 8 // bits
        assert answer["values"] == [expected.get(index, 0) for index in operation["indices"]]


def test_their_signed_token_verifies_in_mudrika() -> None:
    issuer = KeyPair.generate("p256")
    entries = [(3, 1), (9, 2), (500, 3)]
    (answer,) = _peer(
        [
            {
                "op": "sign",
                "private_jwk": issuer.private_jwk(),
                "alg": "ES256",
                "kid": "k1",
                "bits": 2,
                "size": 1024,
                "set": entries,
                "payload": {"sub": URI, "iat": NOW - 10, "exp": NOW + 600, "ttl": 300},
            }
        ]
    )
    trusted = TrustedKey.for_key(issuer.public_key)
    verified = verify_status_list_token(
        answer["token"], key=trusted, uri=URI, issuer=None, now=NOW, max_age=600
    )
    assert [verified.status_of(i) for i, _ in entries] == [v for _, v in entries]
    assert verified.status_of(4) == 0
    with pytest.raises(SignatureError):
        verify_status_list_token(
            answer["token"],
            key=TrustedKey.for_key(KeyPair.generate("p256").public_key),
            uri=URI,
            issuer=None,
            now=NOW,
            max_age=600,
        )


def test_our_token_and_credential_read_in_theirs() -> None:
    issuer = KeyPair.generate("p256")
    status_list = StatusList(2048, 4)
    status_list.set(17, 2)
    status_list.set(2047, 15)
    token = sign_status_list_token(status_list, key=issuer, uri=URI, iat=NOW, ttl=60)
    credential = sdjwt.issue(
        {"iss": "https://issuer.example", "vct": "urn:example:vc"},
        issuer_key=issuer,
        kid=None,
        disclosable=[],
        holder_key=None,
        status=StatusReference(17, URI),
    )
    read, reference = _peer(
        [
            {"op": "read_token", "token": token, "indices": [0, 17, 2047]},
            {"op": "reference", "jwt": credential.issuer_jwt},
        ]
    )
    assert (read["bits"], read["size"], read["values"]) == (4, 2048, [0, 2, 15])
    assert reference["reference"] == {"idx": 17, "uri": URI}
    claims = {"status": {"status_list": reference["reference"]}}
    trusted = TrustedKey.for_key(issuer.public_key)
    assert check_status(claims, token, key=trusted, issuer=None, now=NOW, max_age=60) == 2
