"""Attacks on SD-JWT presentations (RFC 9901 §9): one test per attack, each with its exact error code.

Tokens are crafted here with the low-level JOSE signer and hand-computed digests, independently of
the code under test, so an attack is not accidentally "fixed" by the same bug that creates it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from mudrika.crypto import sdjwt
from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    MudrikaError,
    SignatureError,
    VerificationError,
)
from tests._support.sdjwt import verify_bound

pytestmark = pytest.mark.security

ISSUER = "https://issuer.example"
AUD = "https://merchant.example"
NONCE = "nonce-8f2c"
NOW = 1_750_000_000

ISSUER_KEY = KeyPair.generate("p256")
HOLDER_KEY = KeyPair.generate("p256")
CLAIMS: dict[str, Any] = {
    "iss": ISSUER,
    "iat": NOW - 60,
    "exp": NOW + 3600,
    "given_name": "Ada",
    "family_name": "Lovelace",
    "address": {"locality": "London", "country": "GB"},
}


def _h(text: str) -> str:
    return b64url_encode(hashlib.sha256(text.encode("ascii")).digest())


def _disc(*content: Any) -> str:
    return b64url_encode(json.dumps(list(content)).encode())


def _issuer_jwt(payload: dict[str, Any], *, key: KeyPair = ISSUER_KEY, typ: str = "dc+sd-jwt") -> str:
    body = {"iss": ISSUER, "iat": NOW - 60, "exp": NOW + 3600, "_sd_alg": "sha-256", **payload}
    body.setdefault("cnf", {"jwk": HOLDER_KEY.public_key.to_jwk()})
    return sign_jwt(body, key, typ=typ)


def _kb(
    sd_part: str,
    *,
    key: KeyPair = HOLDER_KEY,
    typ: str | None = "kb+jwt",
    **claims: Any,
) -> str:
    body: dict[str, Any] = {"iat": NOW, "aud": AUD, "nonce": NONCE, "sd_hash": _h(sd_part)}
    body.update(claims)
    return sign_jwt(body, key, typ=typ)


def _bound(issuer_jwt: str, *disclosures: str, **kb_claims: Any) -> str:
    """A presentation the (malicious) Holder signs honestly over whatever Disclosures it chose."""
    sd_part = "".join([issuer_jwt, "~", *(d + "~" for d in disclosures)])
    return sd_part + _kb(sd_part, **kb_claims)


def _issued() -> sdjwt.SdJwt:
    return sdjwt.issue(
        CLAIMS,
        issuer_key=ISSUER_KEY,
        kid=None,
        disclosable=["/given_name", "/family_name", "/address", "/address/locality"],
        holder_key=HOLDER_KEY.public_key,
    )


def _present(issued: sdjwt.SdJwt, disclose: list[str]) -> str:
    return sdjwt.present(issued, disclose=disclose, holder_key=HOLDER_KEY, aud=AUD, nonce=NONCE, iat=NOW)


def _verify(presentation: str, **overrides: Any) -> sdjwt.VerifiedSdJwt:
    return verify_bound(
        presentation, ISSUER_KEY.public_key, issuer=ISSUER, now=NOW, aud=AUD, nonce=NONCE, **overrides
    )


def _code_of(presentation: str, **overrides: Any) -> tuple[type[MudrikaError], str]:
    with pytest.raises(MudrikaError) as info:
        _verify(presentation, **overrides)
    return type(info.value), info.value.code


def test_baseline_verifies() -> None:
    assert _verify(_present(_issued(), ["/given_name"])).payload["given_name"] == "Ada"


# -- Disclosures (§9.2, §7.1 steps 3-5) -----------------------------------------------------------


def test_unreferenced_disclosure_is_rejected() -> None:
    # The reference libraries drop an unreferenced Disclosure silently; §7.1 step 5 says reject.
    issuer_jwt = _issued().issuer_jwt
    extra = _disc("c2FsdHNhbHRzYWx0c2FsdA", "is_admin", True)
    assert _code_of(_bound(issuer_jwt, extra)) == (VerificationError, "unreferenced_disclosure")


def test_tampered_disclosure_is_rejected() -> None:
    issued = _issued()
    original = next(d for d in issued.disclosures if d.path == "/given_name")
    forged = _disc(original.salt, "given_name", "Mallory")
    assert _code_of(_bound(issued.issuer_jwt, forged)) == (VerificationError, "unreferenced_disclosure")


def test_child_disclosure_without_its_parent_is_rejected() -> None:
    # §4.2.6: a Disclosure must connect to the Issuer-signed JWT, here through the /address one.
    issued = _issued()
    child = next(d for d in issued.disclosures if d.path == "/address/locality")
    assert _code_of(_bound(issued.issuer_jwt, child.encoded)) == (
        VerificationError,
        "unreferenced_disclosure",
    )


def test_duplicate_disclosure_is_rejected() -> None:
    issued = _issued()
    given = next(d for d in issued.disclosures if d.path == "/given_name").encoded
    assert _code_of(_bound(issued.issuer_jwt, given, given)) == (VerificationError, "duplicate_disclosure")


def test_duplicate_digest_is_rejected() -> None:
    disclosure = _disc("c2FsdHNhbHRzYWx0c2FsdA", "given_name", "Ada")
    issuer_jwt = _issuer_jwt({"_sd": [_h(disclosure)], "nested": {"_sd": [_h(disclosure)]}})
    assert _code_of(_bound(issuer_jwt, disclosure)) == (VerificationError, "duplicate_digest")


def test_disclosure_claim_name_clash_is_rejected() -> None:
    disclosure = _disc("c2FsdHNhbHRzYWx0c2FsdA", "given_name", "Mallory")
    issuer_jwt = _issuer_jwt({"given_name": "Ada", "_sd": [_h(disclosure)]})
    assert _code_of(_bound(issuer_jwt, disclosure)) == (VerificationError, "claim_name_clash")


def test_disclosure_overriding_a_validity_claim_is_rejected() -> None:
    disclosure = _disc("c2FsdHNhbHRzYWx0c2FsdA", "exp", NOW + 10**8)
    issuer_jwt = _issuer_jwt({"_sd": [_h(disclosure)]})
    assert _code_of(_bound(issuer_jwt, disclosure)) == (VerificationError, "claim_name_clash")


@pytest.mark.parametrize("name", ["_sd", "...", "_sd_alg"])
def test_disclosure_with_reserved_claim_name_is_rejected(name: str) -> None:
    disclosure = _disc("c2FsdHNhbHRzYWx0c2FsdA", name, ["x"])
    issuer_jwt = _issuer_jwt({"_sd": [_h(disclosure)]})
    assert _code_of(_bound(issuer_jwt, disclosure)) == (VerificationError, "reserved_claim_name")


def test_object_disclosure_in_array_position_is_rejected() -> None:
    disclosure = _disc("c2FsdHNhbHRzYWx0c2FsdA", "role", "admin")
    issuer_jwt = _issuer_jwt({"roles": [{"...": _h(disclosure)}]})
    assert _code_of(_bound(issuer_jwt, disclosure)) == (VerificationError, "disclosure_shape_mismatch")


def test_array_disclosure_in_object_position_is_rejected() -> None:
    disclosure = _disc("c2FsdHNhbHRzYWx0c2FsdA", "admin")
    issuer_jwt = _issuer_jwt({"_sd": [_h(disclosure)]})
    assert _code_of(_bound(issuer_jwt, disclosure)) == (VerificationError, "disclosure_shape_mismatch")


def test_malformed_disclosure_is_rejected() -> None:
    disclosure = _disc("c2FsdHNhbHRzYWx0c2FsdA", "a", "b", "c")
    issuer_jwt = _issuer_jwt({"_sd": [_h(disclosure)]})
    assert _code_of(_bound(issuer_jwt, disclosure)) == (InvalidInput, "malformed_disclosure")


def test_nested_sd_alg_is_rejected() -> None:
    issuer_jwt = _issuer_jwt({"nested": {"_sd_alg": "sha-256"}})
    assert _code_of(_bound(issuer_jwt)) == (InvalidInput, "misplaced_sd_alg")


def test_unsupported_sd_alg_is_rejected() -> None:
    disclosure = _disc("c2FsdHNhbHRzYWx0c2FsdA", "given_name", "Ada")
    issuer_jwt = _issuer_jwt({"_sd_alg": "sha-256-32", "_sd": [_h(disclosure)]})
    assert _code_of(_bound(issuer_jwt, disclosure)) == (VerificationError, "unsupported_sd_alg")


# -- Issuer-signed JWT (§9.1, §9.11) --------------------------------------------------------------


def test_invalid_issuer_signature_is_rejected() -> None:
    issuer_jwt = _issued().issuer_jwt
    header, payload, signature = issuer_jwt.split(".")
    flipped = ("B" if signature[0] == "A" else "A") + signature[1:]
    assert _code_of(_bound(f"{header}.{payload}.{flipped}")) == (SignatureError, "bad_signature")


def test_issuer_jwt_signed_by_another_key_is_rejected() -> None:
    issuer_jwt = _issuer_jwt({"given_name": "Ada"}, key=KeyPair.generate("p256"))
    assert _code_of(_bound(issuer_jwt)) == (SignatureError, "bad_signature")


def _encode(value: dict[str, Any]) -> str:
    return b64url_encode(json.dumps(value).encode())


def _unsigned(header: dict[str, Any], payload: dict[str, Any], signature: str) -> str:
    return f"{_encode(header)}.{_encode(payload)}.{signature}"


def test_alg_none_issuer_jwt_is_rejected() -> None:
    token = _unsigned(
        {"alg": "none", "typ": "dc+sd-jwt"}, {"iss": ISSUER, "iat": NOW, "exp": NOW + 60}, "c2ln"
    )
    assert _code_of(_bound(token)) == (VerificationError, "alg_not_allowed")
    # The RFC 7519 unsecured form (empty signature) does not even parse as an SD-JWT.
    empty = _unsigned({"alg": "none", "typ": "dc+sd-jwt"}, {"iss": ISSUER}, "")
    assert _code_of(f"{empty}~") == (InvalidInput, "malformed_sd_jwt")


def test_wrong_issuer_typ_is_rejected() -> None:
    # A KB-JWT-typed or plain JWT must not pass as the Issuer-signed JWT (explicit typing, §9.11).
    issuer_jwt = _issuer_jwt({"given_name": "Ada"}, typ="kb+jwt")
    assert _code_of(_bound(issuer_jwt)) == (VerificationError, "wrong_typ")


# -- Key Binding (§9.5, §7.3 step 5) --------------------------------------------------------------


def test_missing_key_binding_is_rejected() -> None:
    presentation = _present(_issued(), ["/given_name"])
    stripped = presentation[: presentation.rindex("~") + 1]
    assert _code_of(stripped) == (VerificationError, "kb_missing")


def test_kb_signed_by_another_key_is_rejected() -> None:
    issuer_jwt = _issued().issuer_jwt
    assert _code_of(_bound(issuer_jwt, key=KeyPair.generate("p256"))) == (SignatureError, "kb_bad_signature")


def test_kb_carrying_its_own_jwk_is_rejected() -> None:
    # The attacker signs with its own key and names it in the header: never trusted (RFC 8725 §3.10).
    attacker = KeyPair.generate("p256")
    sd_part = _issued().issuer_jwt + "~"
    header = {"alg": "ES256", "typ": "kb+jwt", "jwk": attacker.public_key.to_jwk()}
    claims = {"iat": NOW, "aud": AUD, "nonce": NONCE, "sd_hash": _h(sd_part)}
    signing_input = _unsigned(header, claims, "")[:-1]
    kb = f"{signing_input}.{b64url_encode(attacker.sign(signing_input.encode()))}"
    assert _code_of(sd_part + kb) == (VerificationError, "kb_forbidden_header")


def test_kb_with_wrong_audience_is_rejected() -> None:
    assert _code_of(_bound(_issued().issuer_jwt, aud="https://evil.example")) == (
        VerificationError,
        "kb_wrong_aud",
    )


def test_kb_with_audience_list_is_rejected() -> None:
    # §4.3: aud MUST be a single string.
    assert _code_of(_bound(_issued().issuer_jwt, aud=[AUD])) == (VerificationError, "kb_wrong_aud")


def test_kb_with_wrong_nonce_is_rejected() -> None:
    assert _code_of(_bound(_issued().issuer_jwt, nonce="replayed")) == (VerificationError, "kb_wrong_nonce")


@pytest.mark.parametrize("typ", ["JWT", "application/kb+jwt", None])
def test_kb_with_wrong_typ_is_rejected(typ: str | None) -> None:
    assert _code_of(_bound(_issued().issuer_jwt, typ=typ)) == (VerificationError, "kb_wrong_typ")


def test_kb_too_old_is_rejected() -> None:
    assert _code_of(_bound(_issued().issuer_jwt, iat=NOW - 301)) == (ExpiredError, "kb_too_old")


def test_kb_from_the_future_is_rejected() -> None:
    assert _code_of(_bound(_issued().issuer_jwt, iat=NOW + 5)) == (VerificationError, "kb_iat_in_future")


def test_kb_missing_iat_is_rejected() -> None:
    issuer_jwt = _issued().issuer_jwt
    sd_part = issuer_jwt + "~"
    kb = sign_jwt({"aud": AUD, "nonce": NONCE, "sd_hash": _h(sd_part)}, HOLDER_KEY, typ="kb+jwt")
    assert _code_of(sd_part + kb) == (VerificationError, "kb_missing_claim")


def test_kb_expired_by_its_own_exp_is_rejected() -> None:
    assert _code_of(_bound(_issued().issuer_jwt, exp=NOW - 1)) == (ExpiredError, "kb_expired")


def test_kb_from_another_presentation_is_rejected() -> None:
    issued = _issued()
    first = _present(issued, ["/given_name"])
    second = _present(issued, ["/family_name"])
    spliced = second[: second.rindex("~") + 1] + first.split("~")[-1]
    assert _code_of(spliced) == (BindingError, "sd_hash_mismatch")


def test_disclosure_added_after_binding_is_rejected() -> None:
    issued = _issued()
    presentation = _present(issued, ["/given_name"])
    extra = next(d for d in issued.disclosures if d.path == "/family_name").encoded
    cut = presentation.rindex("~")
    assert _code_of(presentation[: cut + 1] + extra + presentation[cut:]) == (
        BindingError,
        "sd_hash_mismatch",
    )


def test_alg_none_kb_is_rejected() -> None:
    issuer_jwt = _issued().issuer_jwt
    sd_part = issuer_jwt + "~"
    kb = _unsigned(
        {"alg": "none", "typ": "kb+jwt"},
        {"iat": NOW, "aud": AUD, "nonce": NONCE, "sd_hash": _h(sd_part)},
        "c2ln",
    )
    assert _code_of(sd_part + kb) == (VerificationError, "kb_alg_not_allowed")


def test_kb_alg_must_fit_the_holder_key_type() -> None:
    issuer_jwt = _issued().issuer_jwt
    sd_part = issuer_jwt + "~"
    header_claims = {"iat": NOW, "aud": AUD, "nonce": NONCE, "sd_hash": _h(sd_part)}
    kb = _unsigned({"alg": "HS256", "typ": "kb+jwt"}, header_claims, "c2ln")
    assert _code_of(sd_part + kb) == (VerificationError, "kb_alg_not_allowed")


def test_key_binding_without_cnf_is_rejected() -> None:
    issuer_jwt = _issuer_jwt({"given_name": "Ada", "cnf": None})
    assert _code_of(_bound(issuer_jwt)) == (InvalidInput, "bad_cnf")
    no_cnf = sign_jwt({"iss": ISSUER, "iat": NOW, "exp": NOW + 60}, ISSUER_KEY, typ="dc+sd-jwt")
    assert _code_of(_bound(no_cnf)) == (VerificationError, "no_holder_key")


def test_tampered_kb_is_not_ignored_when_binding_is_optional() -> None:
    # The reference libraries skip the KB-JWT when the caller passes no nonce; we refuse instead.
    forged = _bound(_issued().issuer_jwt, key=KeyPair.generate("p256"))
    assert _code_of(forged, require_key_binding=False, expected_aud=None, expected_nonce=None) == (
        VerificationError,
        "unexpected_key_binding",
    )


# -- sizes ---------------------------------------------------------------------------------------


def test_oversized_presentation_is_rejected() -> None:
    presentation = _present(_issued(), ["/given_name"])
    padded = presentation.replace("~", "~" + "A" * 70_000 + "~", 1)
    assert _code_of(padded) == (InvalidInput, "too_large")


def test_too_many_disclosures_are_rejected() -> None:
    issuer_jwt = _issued().issuer_jwt
    flood = [_disc(f"salt{i:04d}", f"c{i}", i) for i in range(200)]
    assert _code_of(_bound(issuer_jwt, *flood)) == (InvalidInput, "too_many_disclosures")


def test_deeply_nested_disclosure_is_rejected() -> None:
    value: Any = "x"
    for _ in range(40):
        value = [value]
    disclosure = _disc("c2FsdHNhbHRzYWx0c2FsdA", "deep", value)
    issuer_jwt = _issuer_jwt({"_sd": [_h(disclosure)]})
    assert _code_of(_bound(issuer_jwt, disclosure)) == (InvalidInput, "too_deep")
