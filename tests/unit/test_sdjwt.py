"""Unit tests for mudrika.crypto.sdjwt: issuance (§4, §5), presentation (§4.3, §7.2), verification (§7)."""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
from collections.abc import Iterator
from typing import Any

import pytest

from mudrika.crypto import sdjwt
from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.jose import TrustedKey, parse_unverified_header, sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.sdjwt._pointer import format_pointer, parse_pointer
from mudrika.errors import InvalidInput, VerificationError
from tests._support.sdjwt import UNBOUND

ISSUER = "https://issuer.example"
NOW = 1_700_000_000
CLAIMS: dict[str, Any] = {
    "iss": ISSUER,
    "iat": NOW - 100,
    "exp": NOW + 3600,
    "sub": "user_42",
    "given_name": "Ada",
    "family_name": "Lovelace",
    "address": {"street_address": "1 Main St", "locality": "London", "country": "GB"},
    "nationalities": ["GB", "FR", "DE"],
}
DISCLOSABLE = (
    "/given_name",
    "/family_name",
    "/address",
    "/address/street_address",
    "/nationalities/1",
    "/nationalities/2",
)


@pytest.fixture(scope="module")
def issuer_key() -> KeyPair:
    return KeyPair.generate("p256")


@pytest.fixture(scope="module")
def holder_key() -> KeyPair:
    return KeyPair.generate("p256")


@pytest.fixture(scope="module")
def issued(issuer_key: KeyPair, holder_key: KeyPair) -> sdjwt.SdJwt:
    return sdjwt.issue(
        CLAIMS,
        issuer_key=issuer_key,
        kid="issuer-1",
        disclosable=DISCLOSABLE,
        holder_key=holder_key.public_key,
    )


def _trusted(key: KeyPair) -> TrustedKey:
    return TrustedKey.for_key(key.public_key)


def _verify(presentation: str, issuer: KeyPair, /, **overrides: Any) -> sdjwt.VerifiedSdJwt:
    kwargs: dict[str, Any] = {
        "issuer_key": _trusted(issuer),
        "issuer": ISSUER,
        "now": NOW,
        "require_key_binding": True,
        "expected_aud": "https://verifier.example",
        "expected_nonce": "n-123",
        "kb_max_age": 300,
    }
    kwargs.update(overrides)
    return sdjwt.verify(presentation, **kwargs)


def _present(issued: sdjwt.SdJwt, holder: KeyPair, disclose: tuple[str, ...], /, **overrides: Any) -> str:
    kwargs: dict[str, Any] = {
        "disclose": disclose,
        "holder_key": holder,
        "aud": "https://verifier.example",
        "nonce": "n-123",
        "iat": NOW,
    }
    kwargs.update(overrides)
    return sdjwt.present(issued, **kwargs)


def _payload(token: str) -> dict[str, Any]:
    decoded = json.loads(b64url_decode(token.split(".")[1]))
    assert isinstance(decoded, dict)
    return decoded


# -- RFC 9901 transcribed examples ----------------------------------------------------------------


def test_disclosure_digest_matches_rfc_section_4_2_3() -> None:
    # §4.2.1 / §4.2.3: the family_name Disclosure and its SHA-256 digest as printed in the RFC.
    disclosure = "WyJfMjZiYzRMVC1hYzZxMktJNmNCVzVlcyIsICJmYW1pbHlfbmFtZSIsICJNw7ZiaXVzIl0"
    assert json.loads(b64url_decode(disclosure)) == ["_26bc4LT-ac6q2KI6cBW5es", "family_name", "Möbius"]
    expected = b64url_encode(hashlib.sha256(disclosure.encode("ascii")).digest())
    assert expected == "X9yH0Ajrdm1Oij4tWso9UzzKJvPoDxwmuEcO3XAdRC0"


def test_array_disclosure_digest_matches_rfc_section_4_2_4_2() -> None:
    # §4.2.2 / §4.2.4.2: the "FR" array-element Disclosure and its digest.
    disclosure = "WyJsa2x4RjVqTVlsR1RQVW92TU5JdkNBIiwgIkZSIl0"
    digest = b64url_encode(hashlib.sha256(disclosure.encode("ascii")).digest())
    assert digest == "w0I8EKcdCtUPkGCNUrfwVp2xEgNjtoIDlOxc9-PlOhs"


# -- issuance -------------------------------------------------------------------------------------


def test_issued_payload_shape(issued: sdjwt.SdJwt, holder_key: KeyPair) -> None:
    header = parse_unverified_header(issued.issuer_jwt)
    assert header == {"alg": "ES256", "kid": "issuer-1", "typ": "dc+sd-jwt"}
    payload = _payload(issued.issuer_jwt)
    assert payload == issued.payload
    assert payload["_sd_alg"] == "sha-256"
    assert payload["cnf"] == {"jwk": holder_key.public_key.to_jwk()}
    # Plain claims stay; disclosable ones are replaced by digests in a sorted _sd array (§4.2.4.1).
    assert {"iss", "iat", "exp", "sub", "nationalities", "_sd", "_sd_alg", "cnf"} == set(payload)
    assert payload["_sd"] == sorted(payload["_sd"])
    assert len(payload["_sd"]) == 3
    nationalities = payload["nationalities"]
    assert nationalities[0] == "GB"
    assert set(nationalities[1]) == {"..."}
    assert set(nationalities[2]) == {"..."}
    assert issued.compact().endswith("~")
    assert issued.compact().count("~") == 1 + len(DISCLOSABLE)


def test_disclosures_are_well_formed(issued: sdjwt.SdJwt) -> None:
    by_path = {d.path: d for d in issued.disclosures}
    assert set(by_path) == set(DISCLOSABLE)
    for disclosure in issued.disclosures:
        content = json.loads(b64url_decode(disclosure.encoded))
        assert content[0] == disclosure.salt
        # §9.3: at least 128 bits of salt.
        assert len(b64url_decode(disclosure.salt)) >= 16
        assert disclosure.digest == b64url_encode(hashlib.sha256(disclosure.encoded.encode()).digest())
        if disclosure.name is None:
            assert len(content) == 2
        else:
            assert content[1] == disclosure.name
            assert len(content) == 3
    salts = [d.salt for d in issued.disclosures]
    assert len(set(salts)) == len(salts)
    # Recursive disclosure (§4.2.6): street_address lives inside the address Disclosure.
    assert by_path["/address/street_address"].parent == by_path["/address"].digest
    assert by_path["/address"].parent is None
    address_value = by_path["/address"].value
    assert "street_address" not in address_value
    assert by_path["/address/street_address"].digest in address_value["_sd"]


def test_injected_salt_source_is_used(issuer_key: KeyPair) -> None:
    salts = iter(["salt-a", "salt-b"])
    issued = sdjwt.issue(
        {"iat": NOW, "exp": NOW + 1, "a": 1, "b": [True]},
        issuer_key=issuer_key,
        kid=None,
        disclosable=["/a", "/b/0"],
        holder_key=None,
        salt=lambda: next(salts),
    )
    contents = [json.loads(b64url_decode(d.encoded)) for d in issued.disclosures]
    assert contents == [["salt-a", "a", 1], ["salt-b", True]]
    assert "cnf" not in issued.payload
    assert "kid" not in parse_unverified_header(issued.issuer_jwt)


def test_decoys_are_added_to_every_sd_array(issuer_key: KeyPair) -> None:
    issued = sdjwt.issue(
        {"iat": NOW, "exp": NOW + 1, "plain": {"x": 1}, "obj": {"y": 2}},
        issuer_key=issuer_key,
        kid=None,
        disclosable=["/obj/y"],
        holder_key=None,
        decoys=3,
    )
    assert len(issued.payload["_sd"]) == 3  # top level: decoys only
    assert len(issued.payload["obj"]["_sd"]) == 4  # one real digest + three decoys
    assert "_sd" not in issued.payload["plain"]  # nothing disclosable there: no decoys either
    assert len(issued.disclosures) == 1


def test_custom_typ_and_rsa_issuer() -> None:
    rsa = KeyPair.generate("rsa")
    issued = sdjwt.issue(
        {"iat": NOW, "exp": NOW + 1},
        issuer_key=rsa,
        kid="r",
        disclosable=(),
        holder_key=None,
        typ="example+sd-jwt",
    )
    assert parse_unverified_header(issued.issuer_jwt)["typ"] == "example+sd-jwt"
    verified = sdjwt.verify(
        issued.compact(),
        issuer_key=TrustedKey.for_key(rsa.public_key),
        now=NOW,
        kb_max_age=60,
        expected_typ="example+sd-jwt",
        **UNBOUND,
    )
    assert verified.payload == {"iat": NOW, "exp": NOW + 1}


@pytest.mark.parametrize(
    ("claims", "disclosable", "code"),
    [
        ({"a": 1}, ["/b"], "unknown_path"),
        ({"a": [1]}, ["/a/1"], "unknown_path"),
        ({"a": [1]}, ["/a/01"], "unknown_path"),
        ({"a": 1}, ["a"], "bad_path"),
        ({"a": 1}, [""], "bad_path"),
        ({"a": 1}, ["/a~2"], "bad_path"),
        ({"a": 1, "exp": 5}, ["/exp"], "not_disclosable"),
        ({"a": 1, "cnf": {}}, ["/cnf"], "not_disclosable"),
        ({"iss": "x"}, ["/iss"], "not_disclosable"),
        ({"_sd": []}, [], "reserved_claim_name"),
        ({"a": {"...": "x"}}, [], "reserved_claim_name"),
        ({"a": [{"_sd_alg": "x"}]}, [], "reserved_claim_name"),
        ({"a": float("nan")}, [], "non_finite_number"),
        ({"a": 2**60}, [], "integer_out_of_range"),
    ],
)
def test_issue_rejects_bad_input(
    issuer_key: KeyPair, claims: dict[str, Any], disclosable: list[str], code: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        sdjwt.issue(claims, issuer_key=issuer_key, kid=None, disclosable=disclosable, holder_key=None)
    assert info.value.code == code


def test_issue_rejects_bad_options(issuer_key: KeyPair, holder_key: KeyPair) -> None:
    with pytest.raises(InvalidInput) as info:
        sdjwt.issue(
            {"a": 1}, issuer_key=issuer_key, kid=None, disclosable=[], holder_key=None, sd_alg="sha-512"
        )
    assert info.value.code == "unsupported_sd_alg"
    with pytest.raises(InvalidInput) as info:
        sdjwt.issue(
            {"cnf": {}}, issuer_key=issuer_key, kid=None, disclosable=[], holder_key=holder_key.public_key
        )
    assert info.value.code == "cnf_conflict"
    with pytest.raises(InvalidInput) as info:
        sdjwt.issue({"a": 1}, issuer_key=issuer_key, kid=None, disclosable="/a", holder_key=None)
    assert info.value.code == "bad_path"
    with pytest.raises(InvalidInput) as info:
        sdjwt.issue({"a": 1}, issuer_key=issuer_key, kid=None, disclosable=[], holder_key=None, decoys=-1)
    assert info.value.code == "bad_decoys"
    with pytest.raises(InvalidInput) as info:
        sdjwt.issue(
            {"a": "x" * 9000},
            issuer_key=issuer_key,
            kid=None,
            disclosable=["/a"],
            holder_key=None,
        )
    assert info.value.code == "disclosure_too_large"


def test_pointer_round_trip() -> None:
    assert parse_pointer("/a~1b/c~0d/0") == ("a/b", "c~d", "0")
    assert format_pointer(("a/b", "c~d", 0)) == "/a~1b/c~0d/0"
    assert parse_pointer("/") == ("",)


# -- presentation --------------------------------------------------------------------------------


def test_present_includes_ancestors_and_binds(
    issued: sdjwt.SdJwt, issuer_key: KeyPair, holder_key: KeyPair
) -> None:
    presentation = _present(issued, holder_key, ("/address/street_address", "/nationalities/2"))
    parts = presentation.split("~")
    by_path = {d.path: d.encoded for d in issued.disclosures}
    assert set(parts[1:-1]) == {
        by_path["/address"],
        by_path["/address/street_address"],
        by_path["/nationalities/2"],
    }
    kb_header = parse_unverified_header(parts[-1])
    assert kb_header == {"alg": "ES256", "typ": "kb+jwt"}
    kb = _payload(parts[-1])
    sd_part = presentation[: presentation.rindex("~") + 1]
    expected_hash = base64.urlsafe_b64encode(hashlib.sha256(sd_part.encode()).digest()).rstrip(b"=").decode()
    assert kb == {"iat": NOW, "aud": "https://verifier.example", "nonce": "n-123", "sd_hash": expected_hash}

    verified = _verify(presentation, issuer_key)
    assert verified.payload == {
        "iss": ISSUER,
        "iat": NOW - 100,
        "exp": NOW + 3600,
        "sub": "user_42",
        "nationalities": ["GB", "DE"],
        "cnf": {"jwk": holder_key.public_key.to_jwk()},
        "address": {"locality": "London", "country": "GB", "street_address": "1 Main St"},
    }
    assert verified.key_bound
    assert verified.holder_key == holder_key.public_key
    assert verified.sd_hash == expected_hash
    assert verified.kb_claims is not None
    assert verified.kb_claims["sd_hash"] == expected_hash
    assert verified.issuer_header["kid"] == "issuer-1"
    assert "_sd" in verified.issuer_payload
    assert {d.path for d in verified.disclosures} == {
        "/address",
        "/address/street_address",
        "/nationalities/1",
    }


def test_present_extra_kb_claims(issued: sdjwt.SdJwt, issuer_key: KeyPair, holder_key: KeyPair) -> None:
    presentation = _present(issued, holder_key, (), extra_kb_claims={"transaction_data": ["h1", "h2"]})
    verified = _verify(presentation, issuer_key)
    assert verified.kb_claims is not None
    assert verified.kb_claims["transaction_data"] == ["h1", "h2"]
    assert verified.disclosures == ()
    with pytest.raises(InvalidInput) as info:
        _present(issued, holder_key, (), extra_kb_claims={"nonce": "other"})
    assert info.value.code == "reserved_kb_claim"


def test_present_without_key_binding(issued: sdjwt.SdJwt, issuer_key: KeyPair) -> None:
    presentation = sdjwt.present(
        issued, disclose=["/given_name"], holder_key=None, aud=None, nonce=None, iat=None
    )
    assert presentation.endswith("~")
    verified = _verify(
        presentation, issuer_key, require_key_binding=False, expected_aud=None, expected_nonce=None
    )
    assert verified.payload["given_name"] == "Ada"
    assert not verified.key_bound
    assert verified.holder_key is None
    assert verified.kb_claims is None


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"disclose": ["/sub"]}, "not_disclosable"),
        ({"disclose": "/given_name"}, "bad_path"),
        ({"aud": None}, "missing_kb_claim"),
        ({"nonce": ""}, "missing_kb_claim"),
        ({"holder_key": None}, "kb_claims_without_key"),
    ],
)
def test_present_rejects_bad_input(
    issued: sdjwt.SdJwt, holder_key: KeyPair, overrides: dict[str, Any], code: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        _present(issued, holder_key, (), **overrides)
    assert info.value.code == code


def test_present_rejects_foreign_holder_key(issued: sdjwt.SdJwt, issuer_key: KeyPair) -> None:
    with pytest.raises(InvalidInput) as info:
        _present(issued, KeyPair.generate("p256"), ())
    assert info.value.code == "holder_key_mismatch"
    unbound = sdjwt.issue({"iat": 1}, issuer_key=issuer_key, kid=None, disclosable=[], holder_key=None)
    with pytest.raises(InvalidInput) as info:
        _present(unbound, issuer_key, ())
    assert info.value.code == "no_holder_key"


def test_ed25519_holder(issuer_key: KeyPair) -> None:
    holder = KeyPair.generate("ed25519")
    issued = sdjwt.issue(
        CLAIMS, issuer_key=issuer_key, kid=None, disclosable=["/given_name"], holder_key=holder.public_key
    )
    presentation = _present(issued, holder, ("/given_name",))
    assert parse_unverified_header(presentation.split("~")[-1])["alg"] == "EdDSA"
    assert _verify(presentation, issuer_key).payload["given_name"] == "Ada"


# -- holder side ----------------------------------------------------------------------------------


def test_from_compact_recovers_paths(issued: sdjwt.SdJwt) -> None:
    again = sdjwt.SdJwt.from_compact(issued.compact())
    assert again.disclosable_paths == issued.disclosable_paths
    assert again.payload == issued.payload
    assert [d.encoded for d in again.disclosures] == [d.encoded for d in issued.disclosures]


def test_from_compact_rejects_sd_jwt_with_kb(issued: sdjwt.SdJwt, holder_key: KeyPair) -> None:
    with pytest.raises(InvalidInput) as info:
        sdjwt.SdJwt.from_compact(_present(issued, holder_key, ()))
    assert info.value.code == "unexpected_key_binding"


# -- verification policy --------------------------------------------------------------------------


def test_verify_expectations_are_required() -> None:
    params = inspect.signature(sdjwt.verify).parameters
    required = {name for name, p in params.items() if p.default is inspect.Parameter.empty}
    assert required == {
        "presentation",
        "issuer_key",
        "issuer",
        "now",
        "require_key_binding",
        "expected_aud",
        "expected_nonce",
        "kb_max_age",
    }
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in required - {"presentation"})


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"expected_aud": None}, "kb_expectations_missing"),
        ({"expected_nonce": None}, "kb_expectations_missing"),
        ({"expected_nonce": ""}, "kb_expectations_missing"),
        ({"kb_max_age": 0}, "bad_kb_max_age"),
        ({"kb_max_age": float("inf")}, "bad_kb_max_age"),
        ({"leeway": 301}, "bad_leeway"),
        ({"leeway": -1}, "bad_leeway"),
        ({"require_key_binding": 1}, "bad_policy"),
    ],
)
def test_verify_rejects_unsafe_configuration(
    issued: sdjwt.SdJwt, issuer_key: KeyPair, holder_key: KeyPair, overrides: dict[str, Any], code: str
) -> None:
    presentation = _present(issued, holder_key, ())
    with pytest.raises(InvalidInput) as info:
        _verify(presentation, issuer_key, **overrides)
    assert info.value.code == code


def test_unchecked_key_binding_is_never_ignored(
    issued: sdjwt.SdJwt, issuer_key: KeyPair, holder_key: KeyPair
) -> None:
    presentation = _present(issued, holder_key, ())
    with pytest.raises(VerificationError) as info:
        _verify(presentation, issuer_key, require_key_binding=False, expected_aud=None, expected_nonce=None)
    assert info.value.code == "unexpected_key_binding"
    # Not required but checkable: it is checked, and a wrong nonce still fails.
    verified = _verify(presentation, issuer_key, require_key_binding=False)
    assert verified.key_bound
    with pytest.raises(VerificationError) as info:
        _verify(presentation, issuer_key, require_key_binding=False, expected_nonce="other")
    assert info.value.code == "kb_wrong_nonce"


def test_validity_claims_are_checked(issued: sdjwt.SdJwt, issuer_key: KeyPair, holder_key: KeyPair) -> None:
    presentation = _present(issued, holder_key, (), iat=NOW + 7200)
    with pytest.raises(VerificationError) as info:
        _verify(presentation, issuer_key, now=NOW + 7200)
    assert info.value.code == "expired"
    with pytest.raises(VerificationError) as info:
        _verify(_present(issued, holder_key, ()), issuer_key, issuer="https://other.example")
    assert info.value.code == "wrong_iss"


def test_leeway_admits_small_skew(issued: sdjwt.SdJwt, issuer_key: KeyPair, holder_key: KeyPair) -> None:
    presentation = _present(issued, holder_key, (), iat=NOW + 10)
    with pytest.raises(VerificationError):
        _verify(presentation, issuer_key)
    assert _verify(presentation, issuer_key, leeway=10).key_bound


def test_resolver_picks_issuer_key_by_kid(
    issued: sdjwt.SdJwt, issuer_key: KeyPair, holder_key: KeyPair
) -> None:
    seen: list[str] = []

    def resolve(header: Any) -> TrustedKey:
        seen.append(header["kid"])
        return _trusted(issuer_key)

    _verify(_present(issued, holder_key, ()), issuer_key, issuer_key=resolve)
    assert seen == ["issuer-1"]


def test_step_functions_compose(issued: sdjwt.SdJwt, issuer_key: KeyPair, holder_key: KeyPair) -> None:
    presentation = _present(issued, holder_key, ("/given_name",))
    parsed = sdjwt.parse(presentation)
    assert parsed.disclosure_count == 1
    assert parsed.has_key_binding
    assert presentation.startswith(parsed.sd_jwt)
    issuer_jwt = sdjwt.verify_issuer_jwt(parsed, issuer_key=_trusted(issuer_key), expected_typ="dc+sd-jwt")
    assert issuer_jwt.sd_alg == "sha-256"
    processed = sdjwt.process_disclosures(issuer_jwt, parsed)
    assert processed.payload["given_name"] == "Ada"
    sdjwt.check_validity(processed.payload, issuer=ISSUER, now=NOW)
    holder = sdjwt.holder_key_from_cnf(processed.payload)
    assert holder.key == holder_key.public_key
    binding = sdjwt.verify_key_binding(
        parsed,
        holder_key=holder,
        expected_aud="https://verifier.example",
        expected_nonce="n-123",
        now=NOW,
        kb_max_age=60,
    )
    assert binding.claims["nonce"] == "n-123"
    assert (
        binding.sd_hash
        == sdjwt.verify(
            presentation,
            issuer_key=_trusted(issuer_key),
            issuer=ISSUER,
            now=NOW,
            require_key_binding=True,
            expected_aud="https://verifier.example",
            expected_nonce="n-123",
            kb_max_age=60,
        ).sd_hash
    )


def test_holder_key_from_cnf_errors() -> None:
    with pytest.raises(VerificationError) as missing:
        sdjwt.holder_key_from_cnf({})
    assert missing.value.code == "no_holder_key"
    for cnf in ({"kid": "x"}, None, {"jwk": {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}}):
        with pytest.raises(InvalidInput) as info:
            sdjwt.holder_key_from_cnf({"cnf": cnf})
        assert info.value.code == "bad_cnf"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("abc", "malformed_sd_jwt"),
        ("a.b~", "malformed_sd_jwt"),
        ("a.b.c~~", "malformed_sd_jwt"),
        ("a.b.c~d!~", "malformed_sd_jwt"),
        ("a.b.c~d~e.f", "malformed_sd_jwt"),
        (b"a.b.c~\xff~", "malformed_sd_jwt"),
    ],
)
def test_parse_rejects_malformed(text: str | bytes, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        sdjwt.parse(text)
    assert info.value.code == code


def test_parse_caps() -> None:
    limits = sdjwt.SdJwtLimits(max_bytes=100, max_disclosures=2, max_disclosure_bytes=4)
    with pytest.raises(InvalidInput) as info:
        sdjwt.parse("a.b.c~" + "d~" * 60, limits=limits)
    assert info.value.code == "too_large"
    with pytest.raises(InvalidInput) as info:
        sdjwt.parse("a.b.c~d~d~d~", limits=limits)
    assert info.value.code == "too_many_disclosures"
    with pytest.raises(InvalidInput) as info:
        sdjwt.parse("a.b.c~ddddd~", limits=limits)
    assert info.value.code == "disclosure_too_large"
    with pytest.raises(InvalidInput) as info:
        sdjwt.SdJwtLimits(max_depth=0)
    assert info.value.code == "bad_limits"


def test_disclosure_without_sd_alg_defaults_to_sha256(issuer_key: KeyPair) -> None:
    # §4.1.1: no _sd_alg means sha-256.
    encoded = b64url_encode(json.dumps(["salt-salt-salt-salt", "n", 1]).encode())
    digest = b64url_encode(hashlib.sha256(encoded.encode()).digest())
    token = sign_jwt({"iat": NOW, "exp": NOW + 5, "_sd": [digest]}, issuer_key, typ="dc+sd-jwt")
    verified = _verify(
        f"{token}~{encoded}~",
        issuer_key,
        **UNBOUND,
    )
    assert verified.payload == {"iat": NOW, "exp": NOW + 5, "n": 1}


def test_reprs_hide_tokens_salts_and_values(
    issued: sdjwt.SdJwt, issuer_key: KeyPair, holder_key: KeyPair
) -> None:
    presentation = _present(issued, holder_key, DISCLOSABLE)
    verified = _verify(presentation, issuer_key)
    texts = [
        repr(issued),
        repr(verified),
        repr(sdjwt.parse(presentation)),
        *(repr(d) for d in issued.disclosures),
    ]
    secrets_: Iterator[str] = (value for d in issued.disclosures for value in (d.salt, d.encoded))
    forbidden = [
        *secrets_,
        issued.issuer_jwt.split(".")[2],
        presentation.split("~")[-1],
        "Lovelace",
        "1 Main St",
    ]
    for text in texts:
        for secret in forbidden:
            assert secret not in text


@pytest.mark.parametrize(
    ("payload", "disclosure", "code"),
    [
        ({"_sd": "not-a-list"}, None, "malformed_sd"),
        ({"_sd": [1]}, None, "malformed_sd"),
        ({"x": {"...": "abc"}}, None, "misplaced_ellipsis"),
        ({"x": [{"...": "abc", "y": 1}]}, None, "misplaced_ellipsis"),
        ({"x": [{"...": 5}]}, None, "misplaced_ellipsis"),
        ({"_sd": ["@"]}, [1, "name", "v"], "malformed_disclosure"),
        ({"_sd": ["@"]}, ["salt", 2, "v"], "malformed_disclosure"),
        ({"_sd": ["@"]}, {"salt": "s"}, "malformed_disclosure"),
    ],
)
def test_malformed_issuer_payloads_are_rejected(
    issuer_key: KeyPair, payload: dict[str, Any], disclosure: Any, code: str
) -> None:
    parts: list[str] = []
    if disclosure is not None:
        encoded = b64url_encode(json.dumps(disclosure).encode())
        payload = {**payload, "_sd": [b64url_encode(hashlib.sha256(encoded.encode()).digest())]}
        parts.append(encoded)
    token = sign_jwt({"iat": NOW, "exp": NOW + 5, **payload}, issuer_key, typ="dc+sd-jwt")
    presentation = "~".join([token, *parts, ""])
    with pytest.raises(InvalidInput) as info:
        _verify(
            presentation,
            issuer_key,
            **UNBOUND,
        )
    assert info.value.code == code
