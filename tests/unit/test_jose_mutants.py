"""crypto/jose.py, rule by rule: each test pins one limit or refusal the mutation check found unpinned.

Why a file of its own: every signed thing mudrika reads (access tokens, mandates, SD-JWTs, cards,
status lists) goes through this module, and its first mutation run (scripts/mutation.py) scored
69 %: the attack tests (tests/unit/test_jose.py) showed that each attack is refused, but nothing
noticed a limit moved by one, a refusal that raised another code, the header memo remembering a
header whose outcome depends on the caller, or an audience list that matched anything.  Each test
below names the rule it holds; boundaries are tested on both sides.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from mudrika.crypto import jose
from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jose import (
    ASYMMETRIC_ALGORITHMS,
    DEFAULT_MAX_TOKEN_BYTES,
    TrustedKey,
    asymmetric_allow_list,
    check_jwt_claims,
    decode_protected_header,
    open_compact,
    parse_unverified_header,
    sign_compact,
    sign_jwt,
    verify_compact,
    verify_jwt,
    verify_opened_jwt,
)
from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import ExpiredError, InvalidInput, UntrustedKeyError, VerificationError

NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def pair() -> KeyPair:
    return KeyPair.generate(KeyType.P256)


@pytest.fixture(scope="module")
def trusted(pair: KeyPair) -> TrustedKey:
    return TrustedKey.for_key(pair.public_key)


@pytest.fixture
def empty_header_memo() -> Iterator[None]:
    """The header memo emptied before and after: these tests count or depend on its entries."""
    jose._CHECKED_HEADERS.clear()
    yield
    jose._CHECKED_HEADERS.clear()


def _signed(pair: KeyPair, header: Mapping[str, Any], payload: bytes = b"{}") -> str:
    """A compact JWS over ``payload`` with exactly ``header`` (whatever it holds), signed by ``pair``."""
    encoded = f"{b64url_encode(json.dumps(header).encode())}.{b64url_encode(payload)}"
    return f"{encoded}.{b64url_encode(pair.sign(encoded.encode()))}"


def _header_segment(size: int) -> str:
    """A base64url header segment of exactly ``size`` characters (``size`` a multiple of 4) that
    decodes to a JSON object with an ``alg``."""
    skeleton = b'{"alg":"ES256","pad":""}'
    raw = size // 4 * 3
    encoded = b64url_encode(skeleton[:-2] + b"a" * (raw - len(skeleton)) + b'"}')
    assert len(encoded) == size
    return encoded


def _nested(depth: int) -> Any:
    """A JSON value ``depth`` arrays deep."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# -- limits ----------------------------------------------------------------------------------------


def test_the_default_token_cap_is_64_kib_exactly() -> None:
    header = _header_segment(40)
    filler = "A" * (DEFAULT_MAX_TOKEN_BYTES - len(header) - 2)
    assert DEFAULT_MAX_TOKEN_BYTES == 64 * 1024
    assert parse_unverified_header(f"{header}.{filler}.")["alg"] == "ES256"
    with pytest.raises(InvalidInput) as info:
        parse_unverified_header(f"{header}.{filler}A.")
    assert info.value.code == "too_large"
    assert info.value.fields["limit"] == DEFAULT_MAX_TOKEN_BYTES


def test_a_header_segment_over_4096_characters_is_refused_before_decoding() -> None:
    """Decoded, a 4,100-character segment is only 3,075 bytes: the cap is on the text received."""
    assert decode_protected_header(_header_segment(4096))["alg"] == "ES256"
    with pytest.raises(InvalidInput) as info:
        decode_protected_header(_header_segment(4100))
    assert info.value.code == "too_large"
    assert info.value.fields["limit"] == 4096


def test_a_header_nests_at_most_8_levels() -> None:
    # The header object is level 1: seven arrays inside it make 8.
    header = decode_protected_header(b64url_encode(json.dumps({"alg": "ES256", "n": _nested(7)}).encode()))
    assert header["n"] == _nested(7)
    with pytest.raises(InvalidInput) as info:
        decode_protected_header(b64url_encode(json.dumps({"alg": "ES256", "n": _nested(8)}).encode()))
    assert info.value.code == "too_deep"


@pytest.mark.parametrize("header", [[], "ES256", 1, None])
def test_a_header_that_is_not_an_object_is_malformed(header: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        decode_protected_header(b64url_encode(json.dumps(header).encode()))
    assert info.value.code == "malformed_jws"


def test_jwt_claims_nest_at_most_32_levels(pair: KeyPair, trusted: TrustedKey) -> None:
    def token(depth: int) -> str:
        claims = {"exp": NOW + 60, "iat": NOW, "n": _nested(depth)}
        return sign_jwt(claims, pair)

    claims = verify_jwt(token(31), key=trusted, issuer=None, audience=None, now=NOW)
    assert claims["iat"] == NOW
    with pytest.raises(InvalidInput) as info:
        verify_jwt(token(32), key=trusted, issuer=None, audience=None, now=NOW)
    assert info.value.code == "too_deep"


def test_leeway_is_at_most_300_seconds() -> None:
    claims = {"exp": NOW, "iat": NOW - 10}
    check_jwt_claims(claims, issuer=None, audience=None, now=NOW + 299, leeway=300)
    for leeway in (300.5, -0.5):
        with pytest.raises(InvalidInput) as info:
            check_jwt_claims(claims, issuer=None, audience=None, now=NOW, leeway=leeway)
        assert info.value.code == "bad_leeway"


def test_the_header_memo_is_bounded_at_1024_entries(pair: KeyPair, empty_header_memo: None) -> None:
    """Every distinct header text an attacker sends could otherwise stay in memory for good."""
    for serial in range(1024):
        open_compact(_signed(pair, {"alg": "ES256", "kid": f"k{serial}"}))
    assert len(jose._CHECKED_HEADERS) == 1024
    open_compact(_signed(pair, {"alg": "ES256", "kid": "one more"}))
    assert len(jose._CHECKED_HEADERS) == 1


# -- algorithms ------------------------------------------------------------------------------------


def test_the_asymmetric_algorithms_are_exactly_the_jws_signature_algorithms() -> None:
    """RFC 7518 §3.1 (ES*, RS*, PS*), RFC 8812 (ES256K), RFC 8037 / RFC 9864 (EdDSA, Ed25519)."""
    assert (
        frozenset(
            {
                "ES256",
                "ES384",
                "ES256K",
                "EdDSA",
                "Ed25519",
                "RS256",
                "RS384",
                "RS512",
                "PS256",
                "PS384",
                "PS512",
            }
        )
        == ASYMMETRIC_ALGORITHMS
    )
    assert asymmetric_allow_list(sorted(ASYMMETRIC_ALGORITHMS), refusal="x") == ASYMMETRIC_ALGORITHMS


@pytest.mark.parametrize("algorithms", [["HS256"], ["none"], ["ES256", "HS512"], []])
def test_a_shared_secret_or_empty_allow_list_is_refused(algorithms: list[str]) -> None:
    with pytest.raises(InvalidInput) as info:
        asymmetric_allow_list(algorithms, refusal="asymmetric only")
    assert info.value.code == "bad_config"
    assert str(info.value) == "asymmetric only"


def test_an_allow_list_refusal_names_at_most_8_algorithms() -> None:
    bad = [f"HS{size}" for size in range(100, 110)]
    with pytest.raises(InvalidInput) as info:
        asymmetric_allow_list(["ES256", *bad], refusal="asymmetric only")
    assert info.value.fields["refused"] == sorted(bad)[:8]


def test_an_algorithm_refused_for_a_key_is_named_cut_to_16_characters(pair: KeyPair) -> None:
    token = _signed(pair, {"alg": "ES256" + "X" * 40})
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=TrustedKey.for_key(pair.public_key))
    assert info.value.code == "alg_not_allowed"
    assert info.value.fields["alg"] == ("ES256" + "X" * 40)[:16]


# -- the header rules (RFC 7515 §4.1, §5.2 step 5) -----------------------------------------------------


def test_a_header_without_alg_is_malformed(pair: KeyPair, trusted: TrustedKey) -> None:
    with pytest.raises(InvalidInput) as info:
        verify_compact(_signed(pair, {"kid": "k"}), key=trusted)
    assert info.value.code == "malformed_jws"


@pytest.mark.parametrize("kid", [5, None, ["k"], {"k": 1}])
def test_a_kid_that_is_not_a_string_is_malformed(pair: KeyPair, trusted: TrustedKey, kid: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        verify_compact(_signed(pair, {"alg": "ES256", "kid": kid}), key=trusted)
    assert info.value.code == "malformed_jws"


@pytest.mark.parametrize("crit", [[], "b64", [1], None, {"b64": True}])
def test_a_malformed_crit_is_malformed(pair: KeyPair, trusted: TrustedKey, crit: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        verify_compact(_signed(pair, {"alg": "ES256", "crit": crit}), key=trusted, understood_crit=("b64",))
    assert info.value.code == "malformed_jws"


@pytest.mark.parametrize(
    "name", ["alg", "jku", "jwk", "kid", "x5u", "x5c", "x5t", "x5t#S256", "typ", "cty", "crit", "enc", "zip"]
)
def test_crit_may_not_list_a_registered_parameter_even_one_the_caller_understands(
    pair: KeyPair, trusted: TrustedKey, name: str
) -> None:
    """RFC 7515 §4.1.11: a registered name in ``crit`` is an error, whatever the verifier claims to
    understand (the key-selecting names are listed but not carried, so the rule itself decides)."""
    header: dict[str, Any] = {"alg": "ES256", "crit": [name]}
    if name not in jose.FORBIDDEN_HEADERS and name not in header:
        header[name] = "v"
    with pytest.raises(InvalidInput) as info:
        verify_compact(_signed(pair, header), key=trusted, understood_crit=(name,))
    assert info.value.code == "malformed_jws"


def test_an_understood_extension_in_crit_is_accepted(pair: KeyPair, trusted: TrustedKey) -> None:
    token = _signed(pair, {"alg": "ES256", "crit": ["exp-ext"], "exp-ext": 1})
    assert verify_compact(token, key=trusted, understood_crit=("exp-ext",)).header["exp-ext"] == 1


def test_unknown_crit_names_are_reported_cut_to_8(pair: KeyPair, trusted: TrustedKey) -> None:
    names = [f"ext{index}" for index in range(10)]
    header: dict[str, Any] = {"alg": "ES256", "crit": names, **dict.fromkeys(names, 1)}
    with pytest.raises(VerificationError) as info:
        verify_compact(_signed(pair, header), key=trusted)
    assert info.value.code == "unknown_crit"
    assert info.value.fields["names"] == names[:8]


@pytest.mark.parametrize("typ", [7, None, ["JWT"], True])
def test_a_typ_that_is_not_a_string_never_matches(pair: KeyPair, trusted: TrustedKey, typ: Any) -> None:
    with pytest.raises(VerificationError) as info:
        verify_compact(_signed(pair, {"alg": "ES256", "typ": typ}), key=trusted, expected_typ="JWT")
    assert info.value.code == "wrong_typ"


@pytest.mark.parametrize("headers", [{"jwk"}, {"jku"}, {"x5c", "x5u"}, {"kid"}])
def test_only_x5c_can_be_validated_by_the_caller(
    pair: KeyPair, trusted: TrustedKey, headers: set[str]
) -> None:
    with pytest.raises(InvalidInput) as info:
        verify_compact(_signed(pair, {"alg": "ES256"}), key=trusted, validated_key_headers=headers)
    assert info.value.code == "bad_policy"


def test_an_x5c_the_caller_validated_is_let_through(
    pair: KeyPair, trusted: TrustedKey, empty_header_memo: None
) -> None:
    token = _signed(pair, {"alg": "ES256", "x5c": ["MIIB"]})
    assert verify_compact(token, key=trusted, validated_key_headers={"x5c"}).header["x5c"] == ["MIIB"]
    # ... and only for that call: the same header is refused to a caller that validated nothing.
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=trusted)
    assert info.value.code == "forbidden_header"


def test_a_header_with_crit_is_judged_again_for_every_caller(
    pair: KeyPair, trusted: TrustedKey, empty_header_memo: None
) -> None:
    """Whether ``crit`` passes depends on what the caller understands, so the memo never keeps it."""
    token = _signed(pair, {"alg": "ES256", "crit": ["ext"], "ext": True})
    assert verify_compact(token, key=trusted, understood_crit=("ext",)).payload == b"{}"
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=trusted)
    assert info.value.code == "unknown_crit"


# -- splitting ---------------------------------------------------------------------------------------


def test_a_token_in_bytes_must_be_ascii(pair: KeyPair, trusted: TrustedKey) -> None:
    token = _signed(pair, {"alg": "ES256"})
    assert verify_compact(token.encode(), key=trusted).payload == b"{}"
    with pytest.raises(InvalidInput) as info:
        verify_compact(token.encode() + "é".encode(), key=trusted)
    assert info.value.code == "malformed_jws"
    assert "ASCII" in str(info.value)


@pytest.mark.parametrize("token", [5, None, ["a.b.c"]])
def test_a_token_must_be_text(trusted: TrustedKey, token: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        verify_compact(token, key=trusted)
    assert info.value.code == "malformed_jws"


@pytest.mark.parametrize("token", ["a.b", "a.b.c.d", "abc"])
def test_a_compact_jws_has_three_parts(trusted: TrustedKey, token: str) -> None:
    with pytest.raises(InvalidInput) as info:
        verify_compact(token, key=trusted)
    assert info.value.code == "malformed_jws"
    assert info.value.fields["parts"] == token.count(".") + 1


# -- trusted keys from JWKs ----------------------------------------------------------------------------


def test_a_trusted_key_is_the_key_its_algorithms_and_kid_not_who_is_said_to_own_it(pair: KeyPair) -> None:
    """``owner`` records whom the verifier believes holds the key; it verifies nothing, so two trusted
    keys that verify exactly the same signatures are equal whatever owner each names."""
    one = TrustedKey(key=pair.public_key, algorithms=frozenset({"ES256"}), kid="k", owner="did:example:a")
    other = TrustedKey(key=pair.public_key, algorithms=frozenset({"ES256"}), kid="k", owner="did:example:b")
    assert one == other
    assert hash(one) == hash(other)


def test_a_key_whose_type_fits_no_allowed_algorithm_is_refused_at_construction(pair: KeyPair) -> None:
    with pytest.raises(InvalidInput) as info:
        TrustedKey(key=pair.public_key, algorithms=frozenset({"RS256"}))
    assert info.value.code == "alg_key_mismatch"


@pytest.mark.parametrize("usage", [{"use": "enc"}, {"key_ops": ["encrypt"]}, {"key_ops": "verify"}])
def test_a_jwk_not_published_for_verification_is_untrusted(pair: KeyPair, usage: dict[str, Any]) -> None:
    with pytest.raises(UntrustedKeyError) as info:
        TrustedKey.from_jwk({**pair.public_key.to_jwk(), **usage}, algorithms={"ES256"})
    assert info.value.code == "wrong_key_use"


@pytest.mark.parametrize("alg", [256, ["ES256"], None])
def test_a_jwk_alg_must_be_a_string(pair: KeyPair, alg: Any) -> None:
    jwk = {**pair.public_key.to_jwk(), "alg": alg}
    if alg is None:
        assert TrustedKey.from_jwk(jwk, algorithms={"ES256"}).algorithms == {"ES256"}
        return
    with pytest.raises(InvalidInput) as info:
        TrustedKey.from_jwk(jwk, algorithms={"ES256"})
    assert info.value.code == "bad_jwk"


def test_a_jwk_kid_counts_only_when_it_is_text(pair: KeyPair) -> None:
    base = pair.public_key.to_jwk()
    assert TrustedKey.from_jwk({**base, "kid": "k-1"}, algorithms={"ES256"}).kid == "k-1"
    assert TrustedKey.from_jwk({**base, "kid": 7}, algorithms={"ES256"}).kid is None


def test_a_jwk_with_usage_members_is_read_as_its_key(pair: KeyPair) -> None:
    jwk = {**pair.public_key.to_jwk(), "use": "sig", "key_ops": ["verify"], "alg": "ES256", "x5t": "AAAA"}
    assert TrustedKey.from_jwk(jwk, algorithms={"ES256", "ES384"}).key == pair.public_key


# -- signing -----------------------------------------------------------------------------------------


def test_extra_headers_may_not_set_alg(pair: KeyPair) -> None:
    with pytest.raises(InvalidInput) as info:
        sign_compact(b"x", pair, extra_header={"alg": "none", "cty": "x"})
    assert info.value.code == "forbidden_header"
    assert info.value.fields["names"] == ["alg"]


def test_extra_headers_are_signed_into_the_header(pair: KeyPair, trusted: TrustedKey) -> None:
    token = sign_compact(b"x", pair, extra_header={"cty": "example"})
    assert verify_compact(token, key=trusted).header["cty"] == "example"


def test_a_header_the_signing_library_refuses_is_sign_failed(pair: KeyPair) -> None:
    with pytest.raises(InvalidInput) as info:
        sign_compact(b"x", pair, extra_header={"crit": ["never-understood"]})
    assert info.value.code == "sign_failed"


def test_jwt_claims_are_written_as_utf_8_and_only_as_json(pair: KeyPair, trusted: TrustedKey) -> None:
    token = sign_jwt({"exp": NOW + 60, "iat": NOW, "name": "Zoë"}, pair)
    assert "Zoë".encode() in verify_compact(token, key=trusted).payload
    for value in (float("nan"), float("inf"), {1, 2}, "\ud800"):
        with pytest.raises(InvalidInput) as info:
            sign_jwt({"exp": NOW + 60, "iat": NOW, "value": value}, pair)
        assert info.value.code == "malformed_claim"


# -- claims (RFC 7519 §4.1) ------------------------------------------------------------------------


def test_required_claims_present_pass_and_missing_ones_are_named() -> None:
    check_jwt_claims({"exp": NOW + 1, "iat": NOW, "jti": "j"}, issuer=None, audience=None, now=NOW)
    with pytest.raises(VerificationError) as info:
        check_jwt_claims({"exp": NOW + 1}, issuer=None, audience=None, now=NOW)
    assert info.value.code == "missing_claim"
    assert info.value.fields["claims"] == ["iat"]
    with pytest.raises(VerificationError) as info:
        check_jwt_claims({"iat": NOW}, issuer=None, audience=None, now=NOW)
    assert info.value.fields["claims"] == ["exp"]


def test_without_leeway_a_token_expires_at_exp_exactly(pair: KeyPair, trusted: TrustedKey) -> None:
    claims = {"exp": NOW, "iat": NOW - 60}
    with pytest.raises(ExpiredError):
        check_jwt_claims(claims, issuer=None, audience=None, now=NOW)
    token = sign_jwt(claims, pair)
    with pytest.raises(ExpiredError):
        verify_jwt(token, key=trusted, issuer=None, audience=None, now=NOW)
    with pytest.raises(ExpiredError):
        verify_opened_jwt(open_compact(token), key=trusted, issuer=None, audience=None, now=NOW)
    assert verify_jwt(token, key=trusted, issuer=None, audience=None, now=NOW - 0.5)["exp"] == NOW


@pytest.mark.parametrize(
    ("audience", "aud", "accepted"),
    [
        (("api", "other"), "other", True),
        (["api"], ["x", "api"], True),
        ("api", ["x", "y"], False),
        (("api",), ["x"], False),
        ("api", [], False),
        ("api", ["api", 3], False),
    ],
)
def test_an_audience_list_matches_only_when_it_names_ours(audience: Any, aud: Any, accepted: bool) -> None:
    claims = {"exp": NOW + 1, "iat": NOW, "aud": aud}
    if accepted:
        check_jwt_claims(claims, issuer=None, audience=audience, now=NOW)
        return
    with pytest.raises(VerificationError) as info:
        check_jwt_claims(claims, issuer=None, audience=audience, now=NOW)
    assert info.value.code == "wrong_aud"


def test_the_lifetime_limit_is_inclusive_and_needs_both_times() -> None:
    check_jwt_claims({"iat": NOW, "exp": NOW + 900}, issuer=None, audience=None, now=NOW, max_lifetime=900)
    with pytest.raises(VerificationError) as info:
        check_jwt_claims(
            {"iat": NOW, "exp": NOW + 900.5}, issuer=None, audience=None, now=NOW, max_lifetime=900
        )
    assert info.value.code == "lifetime_too_long"
    for claims in ({"exp": NOW + 10}, {"iat": NOW}):
        with pytest.raises(VerificationError) as info:
            check_jwt_claims(claims, issuer=None, audience=None, now=NOW, required=(), max_lifetime=900)
        assert info.value.code == "missing_claim"


@pytest.mark.parametrize("payload", [b"[]", b'"claims"', b"1"])
def test_a_jwt_payload_that_is_not_an_object_is_malformed(
    pair: KeyPair, trusted: TrustedKey, payload: bytes
) -> None:
    with pytest.raises(InvalidInput) as info:
        verify_jwt(_signed(pair, {"alg": "ES256"}, payload), key=trusted, issuer=None, audience=None, now=NOW)
    assert info.value.code == "malformed_jwt"
