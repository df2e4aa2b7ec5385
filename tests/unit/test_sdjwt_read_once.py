"""The Issuer-signed JWT's payload parsed once (``read_issuer_payload`` handed to ``verify_issuer_jwt``)
and the one-pass character check of ``parse``: the same verdicts, values and error codes as before."""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.crypto import sdjwt
from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.sdjwt import _presentation
from mudrika.errors import InvalidInput, MudrikaError

ISSUER = "https://issuer.example"
CLAIMS: dict[str, Any] = {"iss": ISSUER, "iat": 1_700_000_000, "exp": 1_800_000_000, "name": "Ada", "n": 7}


@pytest.fixture(scope="module")
def issuer_key() -> KeyPair:
    return KeyPair.generate("p256")


@pytest.fixture(scope="module")
def issued(issuer_key: KeyPair) -> sdjwt.SdJwt:
    holder = KeyPair.generate("p256")
    return sdjwt.issue(
        CLAIMS, issuer_key=issuer_key, kid="issuer-1", disclosable=("/name",), holder_key=holder.public_key
    )


def test_the_unverified_payload_names_the_issuer_and_nothing_else(issued: sdjwt.SdJwt) -> None:
    unverified = sdjwt.read_issuer_payload(sdjwt.parse(issued.compact()))
    assert unverified.iss == ISSUER
    assert repr(unverified) == "UnverifiedIssuerPayload(...)"


@pytest.mark.parametrize(
    ("payload", "iss"),
    [(b'{"iss": 1}', None), (b"[1, 2]", None), (b'{"x": "y"}', None), (b'{"iss": "a"}', "a")],
)
def test_an_iss_that_is_not_a_string_is_none(payload: bytes, iss: str | None) -> None:
    token = f"eyJhbGciOiJFUzI1NiJ9.{b64url_encode(payload)}.c2ln~"
    assert sdjwt.read_issuer_payload(sdjwt.parse(token)).iss == iss


def test_a_payload_that_does_not_parse_raises_the_parsers_code() -> None:
    duplicated = b64url_encode(b'{"iss": 1, "iss": 2}')
    token = f"eyJhbGciOiJFUzI1NiJ9.{duplicated}.c2ln~"
    with pytest.raises(InvalidInput) as refused:
        sdjwt.read_issuer_payload(sdjwt.parse(token))
    assert refused.value.code == "duplicate_key"


def test_the_verified_payload_is_the_same_with_or_without_the_read(
    issued: sdjwt.SdJwt, issuer_key: KeyPair
) -> None:
    parsed = sdjwt.parse(issued.compact())
    key = TrustedKey.for_key(issuer_key.public_key)
    plain = sdjwt.verify_issuer_jwt(parsed, issuer_key=key, expected_typ=sdjwt.DEFAULT_TYP)
    reused = sdjwt.verify_issuer_jwt(
        parsed, issuer_key=key, expected_typ=sdjwt.DEFAULT_TYP, unverified=sdjwt.read_issuer_payload(parsed)
    )
    assert reused == plain
    assert reused.payload["iss"] == ISSUER


def test_a_read_of_another_token_is_ignored(issued: sdjwt.SdJwt, issuer_key: KeyPair) -> None:
    other = sdjwt.issue(
        {**CLAIMS, "iss": "https://attacker.example"},
        issuer_key=KeyPair.generate("p256"),
        kid="issuer-1",
        disclosable=("/name",),
        holder_key=None,
    )
    parsed = sdjwt.parse(issued.compact())
    foreign = sdjwt.read_issuer_payload(sdjwt.parse(other.compact()))
    verified = sdjwt.verify_issuer_jwt(
        parsed,
        issuer_key=TrustedKey.for_key(issuer_key.public_key),
        expected_typ=sdjwt.DEFAULT_TYP,
        unverified=foreign,
    )
    assert verified.payload["iss"] == ISSUER


def test_a_read_with_other_limits_is_not_reused(issued: sdjwt.SdJwt, issuer_key: KeyPair) -> None:
    parsed = sdjwt.parse(issued.compact())
    shallow = sdjwt.SdJwtLimits(max_depth=1)
    with pytest.raises(InvalidInput) as refused:
        sdjwt.verify_issuer_jwt(
            parsed,
            issuer_key=TrustedKey.for_key(issuer_key.public_key),
            expected_typ=sdjwt.DEFAULT_TYP,
            limits=shallow,
            unverified=sdjwt.read_issuer_payload(parsed),
        )
    assert refused.value.code == "too_deep"


def test_the_signature_is_still_checked_when_the_payload_was_read(issued: sdjwt.SdJwt) -> None:
    parsed = sdjwt.parse(issued.compact())
    with pytest.raises(MudrikaError) as refused:
        sdjwt.verify_issuer_jwt(
            parsed,
            issuer_key=TrustedKey.for_key(KeyPair.generate("p256").public_key),
            expected_typ=sdjwt.DEFAULT_TYP,
            unverified=sdjwt.read_issuer_payload(parsed),
        )
    assert refused.value.code == "bad_signature"


JWT = "eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.c2ln"


@pytest.mark.parametrize(
    "text",
    [
        f"{JWT}~WyJzIiwiYSIsMV0~",
        f"{JWT}~WyJzIiwiYSIsMV0~{JWT}",
        f"{JWT}~~",
        f"{JWT}~a.b~",
        f"{JWT}~a=b~",
        f"{JWT}~é~",
        f"{JWT}~a\nb~",
        f"{JWT}~abc~{JWT}.x",
        f"{JWT}~abc~..",
        f"{JWT}x.~abc~",
        "a..b~abc~",
        "a.b~abc~",
        "a.b.c.d~",
        f"{JWT}~abc~a.b.c~é",
        "é.b.c~abc~",
        "~",
        "a.b.c",
        f"{JWT}~a.b~{'A' * 9000}~",
        f"{JWT}~{'A' * 9000}~a.b~",
    ],
)
def test_the_one_pass_check_gives_the_regular_expressions_verdicts_in_the_same_order(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def outcome() -> tuple[str, ...] | str:
        try:
            parsed = sdjwt.parse(text)
        except InvalidInput as exc:
            return f"{exc.code}: {exc.message}"
        return (parsed.issuer_jwt, *parsed.disclosures, str(parsed.kb_jwt), parsed.sd_jwt)

    fast = outcome()
    # Without the one-pass check every segment goes through the regular expression.
    monkeypatch.setattr(_presentation, "_COMPACT_ALPHABET", b"")
    assert outcome() == fast
