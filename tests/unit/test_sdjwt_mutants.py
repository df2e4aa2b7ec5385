"""SD-JWT (RFC 9901) rule by rule: each test pins one rule of the Disclosure, processing and key-binding
modules that the mutation check (scripts/mutation.py) found unpinned.

Why a file of its own: a user's AP2 payment authorisation is an SD-JWT+KB, and the attack tests
(tests/security/test_sdjwt_attacks.py) showed each attack refused without noticing, for instance,
that a digest repeated among array elements went through, that the key-binding JWT's age window
ignored the leeway on its old side, or that a repr could show a Disclosure's salt.  Boundaries are
tested on both sides.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest

from mudrika.crypto import sdjwt
from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.jose import TrustedKey, sign_jwt
from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.sdjwt._disclosure import (
    SALT_BYTES,
    DecodedDisclosure,
    decode_disclosure,
    digest_of,
    encode_disclosure,
    random_salt,
)
from mudrika.crypto.sdjwt._kb import KB_JWT_TYP, KB_RESERVED_CLAIMS, check_kb_jwt, make_kb_jwt
from mudrika.crypto.sdjwt._process import ProcessedPayload, process
from mudrika.crypto.statuslist import StatusReference
from mudrika.errors import ExpiredError, InvalidInput, VerificationError
from tests._support.sdjwt import verify_bound

NOW = 1_800_000_000
SD_JWT = "eyJhbGciOiJFUzI1NiJ9.e30.c2ln~"  # what the KB-JWT binds to; only its digest matters here
AUD = "https://verifier.example"
NONCE = "n-1"


@pytest.fixture(scope="module")
def holder() -> KeyPair:
    return KeyPair.generate(KeyType.P256)


def _kb(holder: KeyPair, claims: Any) -> str:
    """A KB-JWT with exactly ``claims`` as its payload (whatever it is), signed by ``holder``."""
    return sign_jwt(claims, holder, typ=KB_JWT_TYP)


def _check(holder: KeyPair, kb_jwt: str, *, leeway: float = 0.0, max_age: float = 300) -> Any:
    return check_kb_jwt(
        kb_jwt,
        sd_jwt=SD_JWT,
        holder_key=TrustedKey.for_key(holder.public_key),
        expected_aud=AUD,
        expected_nonce=NONCE,
        now=NOW,
        kb_max_age=max_age,
        leeway=leeway,
        max_bytes=65536,
    )


def _claims(**changes: Any) -> dict[str, Any]:
    return {"iat": NOW, "aud": AUD, "nonce": NONCE, "sd_hash": digest_of(SD_JWT), **changes}


def _disclosed(name: str | None, value: Any, salt: str = "salt") -> DecodedDisclosure:
    return decode_disclosure(encode_disclosure(salt, name, value), max_bytes=65536, max_depth=32)


# -- the key-binding JWT (§4.3, §7.3 step 5) -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KB_RESERVED_CLAIMS))
def test_extra_claims_may_not_override_a_key_binding_claim(holder: KeyPair, name: str) -> None:
    assert frozenset({"iat", "aud", "nonce", "sd_hash"}) == KB_RESERVED_CLAIMS
    with pytest.raises(InvalidInput) as info:
        make_kb_jwt(
            SD_JWT, holder_key=holder, aud=AUD, nonce=NONCE, iat=NOW, extra_claims={name: "x"}, alg=None
        )
    assert info.value.code == "reserved_kb_claim"
    assert info.value.fields["names"] == [name]


@pytest.mark.parametrize(
    ("aud", "nonce", "iat", "claim"),
    [
        ("", NONCE, NOW, "aud"),
        (None, NONCE, NOW, "aud"),
        (AUD, "", NOW, "nonce"),
        (AUD, 5, NOW, "nonce"),
        (AUD, NONCE, True, "iat"),
        (AUD, NONCE, float(NOW), "iat"),
        (AUD, NONCE, str(NOW), "iat"),
    ],
)
def test_a_key_binding_is_made_only_with_an_audience_a_nonce_and_an_integer_time(
    holder: KeyPair, aud: Any, nonce: Any, iat: Any, claim: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        make_kb_jwt(SD_JWT, holder_key=holder, aud=aud, nonce=nonce, iat=iat, extra_claims=None, alg=None)
    assert info.value.code == "missing_kb_claim"
    assert info.value.fields["claim"] == claim


def test_extra_key_binding_claims_must_be_exchangeable_json(holder: KeyPair) -> None:
    """An integer past 2^53 signs, but no verifier could hash it: refused when the binding is made."""
    with pytest.raises(InvalidInput) as info:
        make_kb_jwt(
            SD_JWT, holder_key=holder, aud=AUD, nonce=NONCE, iat=NOW, extra_claims={"n": 2**60}, alg=None
        )
    assert info.value.code == "integer_out_of_range"


def test_a_made_key_binding_verifies_and_hides_its_token_from_repr(holder: KeyPair) -> None:
    token = make_kb_jwt(
        SD_JWT, holder_key=holder, aud=AUD, nonce=NONCE, iat=NOW, extra_claims={"x": 1}, alg=None
    )
    binding = _check(holder, token)
    assert binding.claims["x"] == 1
    assert binding.kb_jwt == token
    assert token not in repr(binding)
    assert token.split(".")[2] not in repr(binding)


@pytest.mark.parametrize("payload", [[], "claims", 7])
def test_a_key_binding_payload_that_is_not_an_object_is_malformed(holder: KeyPair, payload: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        _check(holder, _kb(holder, payload))
    assert info.value.code == "kb_malformed_jwt"


def test_a_key_binding_payload_nests_at_most_32_levels(holder: KeyPair) -> None:
    def nested(depth: int) -> Any:
        value: Any = 1
        for _ in range(depth):
            value = [value]
        return value

    assert _check(holder, _kb(holder, _claims(deep=nested(31)))).claims["iat"] == NOW
    with pytest.raises(InvalidInput) as info:
        _check(holder, _kb(holder, _claims(deep=nested(32))))
    assert info.value.code == "kb_too_deep"


def test_the_key_binding_age_window_opens_by_the_leeway_on_its_old_side(holder: KeyPair) -> None:
    """``iat`` is accepted down to ``now - kb_max_age - leeway`` inclusive, and not a second before."""
    oldest = NOW - 300 - 20
    assert _check(holder, _kb(holder, _claims(iat=oldest)), leeway=20).claims["iat"] == oldest
    with pytest.raises(ExpiredError) as info:
        _check(holder, _kb(holder, _claims(iat=oldest - 1)), leeway=20)
    assert info.value.code == "kb_too_old"


# -- Disclosures (§4.2) --------------------------------------------------------------------------------


def test_a_random_salt_carries_128_bits() -> None:
    assert SALT_BYTES == 16
    assert len(b64url_decode(random_salt())) == 16


@pytest.mark.parametrize("salt", ["", None, 5, b"salt"])
def test_a_disclosure_needs_a_non_empty_text_salt(salt: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        encode_disclosure(salt, "name", "value")
    assert info.value.code == "bad_salt"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1, 2}, b"bytes"])
def test_a_disclosed_value_must_be_json(value: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        encode_disclosure("salt", "name", value)
    assert info.value.code == "unsupported_type"


def test_a_disclosure_is_written_as_utf_8() -> None:
    encoded = encode_disclosure("salt", "name", "Zoë")
    assert b64url_decode(encoded) == '["salt","name","Zoë"]'.encode()


# -- processing (§7.1) --------------------------------------------------------------------------------


def test_a_digest_repeated_among_array_elements_rejects_the_sd_jwt() -> None:
    element = _disclosed(None, "FR")
    payload = {"nationalities": [{"...": element.digest}, {"...": element.digest}]}
    with pytest.raises(VerificationError) as info:
        process(payload, [element], max_depth=16)
    assert info.value.code == "duplicate_digest"


def test_an_undisclosed_digest_repeated_in_two_arrays_rejects_the_sd_jwt() -> None:
    """Step 4 counts every digest, a decoy (one no Disclosure answers) included."""
    payload = {"a": [{"...": "decoy-digest"}], "b": ["x", {"...": "decoy-digest"}]}
    with pytest.raises(VerificationError) as info:
        process(payload, [], max_depth=16)
    assert info.value.code == "duplicate_digest"


def test_an_undisclosed_array_digest_may_appear_once_and_is_dropped() -> None:
    shown = _disclosed(None, "FR")
    processed = process(
        {"list": [{"...": "decoy-digest"}, {"...": shown.digest}, "GB"]}, [shown], max_depth=16
    )
    assert processed.payload == {"list": ["FR", "GB"]}


def test_a_read_only_issuer_payload_is_processed_like_a_dict() -> None:
    member = _disclosed("given_name", "Ada")
    processed = process(MappingProxyType({"_sd": [member.digest], "iss": "x"}), [member], max_depth=16)
    assert processed.payload == {"iss": "x", "given_name": "Ada"}
    assert processed.placed == {member.digest: ("/given_name", None)}


def test_unreferenced_disclosures_are_named_cut_to_8() -> None:
    referenced = _disclosed("given_name", "Ada")
    stray = [_disclosed(f"c{index}", index, salt=f"s{index}") for index in range(10)]
    with pytest.raises(VerificationError) as info:
        process({"_sd": [referenced.digest]}, [referenced, *stray], max_depth=16)
    assert info.value.code == "unreferenced_disclosure"
    assert info.value.fields["digests"] == [item.digest for item in stray][:8]


def test_a_processed_payload_shows_no_disclosure_in_its_repr_and_compares_by_content() -> None:
    """The decoded Disclosures hold salts and personal data: ``repr`` shows the processed payload only
    (whose claims the verifier was given to read), and the lazily built view is not part of equality."""
    member = _disclosed("given_name", "Ada", salt="secret-salt-value")
    one = process({"_sd": [member.digest]}, [member], max_depth=16)
    other = process({"_sd": [member.digest]}, [member], max_depth=16)
    shown = repr(one)
    assert "secret-salt-value" not in shown
    assert member.encoded not in shown
    assert member.digest not in shown
    assert one.disclosures[0].path == "/given_name"  # builds one's view, not other's
    assert member.digest not in repr(one)
    assert one == other
    with pytest.raises(TypeError):
        ProcessedPayload(payload={}, decoded=(), placed={}, _built=())  # type: ignore[call-arg]
    assert json.loads(json.dumps(one.payload)) == {"given_name": "Ada"}


# -- presentations (§4, §4.3, §7.2, §7.3) ------------------------------------------------------------

ISSUER = "https://issuer.example"
CLAIMS: dict[str, Any] = {"iss": ISSUER, "iat": NOW - 10, "exp": NOW + 3600, "given_name": "Ada"}


@pytest.fixture(scope="module")
def issuer_key() -> KeyPair:
    return KeyPair.generate(KeyType.P256)


@pytest.fixture(scope="module")
def issued(issuer_key: KeyPair, holder: KeyPair) -> sdjwt.SdJwt:
    return sdjwt.issue(
        CLAIMS, issuer_key=issuer_key, kid="i-1", disclosable=["/given_name"], holder_key=holder.public_key
    )


def _verify(presentation: str, issuer_key: KeyPair, **changes: Any) -> sdjwt.VerifiedSdJwt:
    return verify_bound(
        presentation, issuer_key.public_key, issuer=ISSUER, now=NOW, aud=AUD, nonce=NONCE, **changes
    )


def _bound(issued: sdjwt.SdJwt, holder: KeyPair) -> str:
    return sdjwt.present(issued, disclose=["/given_name"], holder_key=holder, aud=AUD, nonce=NONCE, iat=NOW)


def test_the_default_limits_are_the_documented_ones() -> None:
    assert (
        sdjwt.SdJwtLimits(
            max_bytes=64 * 1024, max_disclosures=128, max_disclosure_bytes=8 * 1024, max_depth=32
        )
        == sdjwt.DEFAULT_LIMITS
    )
    assert sdjwt.SdJwtLimits().max_disclosures == 128


def test_leeway_and_key_binding_age_have_their_documented_bounds(
    issued: sdjwt.SdJwt, holder: KeyPair, issuer_key: KeyPair
) -> None:
    presentation = _bound(issued, holder)
    assert _verify(presentation, issuer_key, leeway=300, kb_max_age=86400).key_bound
    for changes, code in (
        ({"leeway": 300.5}, "bad_leeway"),
        ({"kb_max_age": 86400.5}, "bad_kb_max_age"),
        ({"kb_max_age": 0}, "bad_kb_max_age"),
    ):
        with pytest.raises(InvalidInput) as info:
            _verify(presentation, issuer_key, **changes)
        assert info.value.code == code


def test_reprs_show_no_token_and_no_disclosed_value(
    issued: sdjwt.SdJwt, holder: KeyPair, issuer_key: KeyPair
) -> None:
    """A Disclosure's value is personal data and a token is a credential: neither may reach a log
    through a repr (the issuer JWT's signature stands for the whole token here)."""
    presentation = _bound(issued, holder)
    verified = _verify(presentation, issuer_key)
    signature = issued.issuer_jwt.split(".")[2]
    kb_signature = presentation.rsplit(".", 1)[1]
    for shown in (repr(issued), repr(sdjwt.parse(presentation)), repr(verified)):
        assert signature not in shown
        assert kb_signature not in shown
        assert "Ada" not in shown
    # Nor the issuer's signed payload (its digests) or the key-binding claims (the audience).
    assert issued.payload["_sd"][0] not in repr(verified)
    assert ISSUER not in repr(issued)  # the payload is not shown (its digests are, per Disclosure)
    assert AUD not in repr(verified)
    issuer_step = sdjwt.verify_issuer_jwt(
        sdjwt.parse(presentation),
        issuer_key=TrustedKey.for_key(issuer_key.public_key),
        expected_typ="dc+sd-jwt",
    )
    assert issued.payload["_sd"][0] not in repr(issuer_step)


def test_a_presentation_without_a_kb_jwt_has_no_key_binding(issued: sdjwt.SdJwt, holder: KeyPair) -> None:
    bare = sdjwt.present(issued, disclose=["/given_name"], holder_key=None, aud=None, nonce=None, iat=None)
    assert not sdjwt.parse(bare).has_key_binding
    assert sdjwt.parse(_bound(issued, holder)).has_key_binding


def test_an_issued_sd_jwt_is_read_back_only_with_an_object_payload_and_sha_256(
    issuer_key: KeyPair,
) -> None:
    cases: list[tuple[Any, str]] = [([1, 2], "malformed_jwt"), ({"_sd_alg": "sha-512"}, "unsupported_sd_alg")]
    for payload, code in cases:
        token = sign_jwt(payload, issuer_key, typ="dc+sd-jwt")
        with pytest.raises((InvalidInput, VerificationError)) as info:
            sdjwt.SdJwt.from_compact(token + "~")
        assert info.value.code == code


@pytest.mark.parametrize("typ", ["", None, 5])
def test_an_sd_jwt_is_issued_only_with_a_text_typ(issuer_key: KeyPair, typ: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        sdjwt.issue(CLAIMS, issuer_key=issuer_key, kid=None, disclosable=[], holder_key=None, typ=typ)
    assert info.value.code == "bad_typ"


def test_a_status_is_added_in_plain_view_and_never_over_one_the_claims_carry(issuer_key: KeyPair) -> None:
    status = StatusReference(idx=7, uri="https://issuer.example/status/1")
    issued = sdjwt.issue(
        CLAIMS, issuer_key=issuer_key, kid=None, disclosable=[], holder_key=None, status=status
    )
    assert issued.payload["status"] == status.to_claim()
    plain = sdjwt.issue(CLAIMS, issuer_key=issuer_key, kid=None, disclosable=[], holder_key=None)
    assert "status" not in plain.payload
    with pytest.raises(InvalidInput) as info:
        sdjwt.issue(
            {**CLAIMS, "status": {"x": 1}},
            issuer_key=issuer_key,
            kid=None,
            disclosable=[],
            holder_key=None,
            status=status,
        )
    assert info.value.code == "status_conflict"


def test_presenting_an_unknown_path_names_it_cut_to_64(issued: sdjwt.SdJwt) -> None:
    path = "/" + "p" * 100
    with pytest.raises(InvalidInput) as info:
        sdjwt.present(issued, disclose=[path], holder_key=None, aud=None, nonce=None, iat=None)
    assert info.value.code == "not_disclosable"
    assert info.value.fields["path"] == path[:64]


@pytest.mark.parametrize(
    ("aud", "nonce", "iat"), [(None, NONCE, NOW), (AUD, None, NOW), (AUD, NONCE, None), (None, None, None)]
)
def test_a_bound_presentation_needs_an_audience_a_nonce_and_a_time(
    issued: sdjwt.SdJwt, holder: KeyPair, aud: Any, nonce: Any, iat: Any
) -> None:
    with pytest.raises(InvalidInput) as info:
        sdjwt.present(issued, disclose=["/given_name"], holder_key=holder, aud=aud, nonce=nonce, iat=iat)
    assert info.value.code == "missing_kb_claim"


def test_presenting_a_nested_disclosure_brings_its_ancestors(issuer_key: KeyPair) -> None:
    claims = {**CLAIMS, "address": {"street": "1 Main St", "city": "London"}}
    issued = sdjwt.issue(
        claims, issuer_key=issuer_key, kid=None, disclosable=["/address", "/address/street"], holder_key=None
    )
    bare = sdjwt.present(
        issued, disclose=["/address/street"], holder_key=None, aud=None, nonce=None, iat=None
    )
    assert bare.count("~") == 3  # the issuer JWT, then both Disclosures
    only_top = sdjwt.present(issued, disclose=["/address"], holder_key=None, aud=None, nonce=None, iat=None)
    assert only_top.count("~") == 2


def _with_disclosures(issued: sdjwt.SdJwt, *disclosures: str) -> str:
    return "".join([issued.issuer_jwt, "~", *(item + "~" for item in disclosures)])


def test_a_dot_at_either_end_of_the_disclosures_is_malformed(issued: sdjwt.SdJwt) -> None:
    good = issued.disclosures[0].encoded
    for disclosures in ((".AAAA", good), (good, "AAAA."), ("AA.A",)):
        with pytest.raises(InvalidInput) as info:
            sdjwt.parse(_with_disclosures(issued, *disclosures))
        assert info.value.code == "malformed_sd_jwt"


@pytest.mark.parametrize("plain", [True, False])
def test_a_disclosure_as_long_as_the_limit_is_read_and_one_longer_is_not(
    issued: sdjwt.SdJwt, plain: bool
) -> None:
    """Both readings of the text (the one-pass check of a plain text, the loop over each Disclosure
    of any other) hold the same limit; a non-ASCII character elsewhere forces the loop."""
    limits = sdjwt.SdJwtLimits(max_disclosure_bytes=64)
    if plain:
        assert sdjwt.parse(_with_disclosures(issued, "A" * 64), limits=limits).disclosures == ("A" * 64,)
    else:
        # The Disclosure passes its size check; the non-ASCII "key-binding JWT" after it is what fails.
        with pytest.raises(InvalidInput) as passed:
            sdjwt.parse(_with_disclosures(issued, "A" * 64) + "é", limits=limits)
        assert passed.value.code == "malformed_sd_jwt"
    tail = "" if plain else "é"
    with pytest.raises(InvalidInput) as info:
        sdjwt.parse(_with_disclosures(issued, "A" * 65) + tail, limits=limits)
    assert info.value.code == "disclosure_too_large"


def _bare(issued: sdjwt.SdJwt) -> str:
    return sdjwt.present(issued, disclose=["/given_name"], holder_key=None, aud=None, nonce=None, iat=None)


@pytest.mark.parametrize("leeway", [300.5, -1, True, "5", float("nan")])
def test_leeway_is_checked_even_when_no_key_binding_is_required(
    issued: sdjwt.SdJwt, issuer_key: KeyPair, leeway: Any
) -> None:
    with pytest.raises(InvalidInput) as info:
        _verify(
            _bare(issued),
            issuer_key,
            require_key_binding=False,
            expected_aud=None,
            expected_nonce=None,
            leeway=leeway,
        )
    assert info.value.code == "bad_leeway"


def test_the_largest_leeway_and_a_sub_second_key_binding_age_are_accepted(
    issued: sdjwt.SdJwt, holder: KeyPair, issuer_key: KeyPair
) -> None:
    unbound = _verify(
        _bare(issued),
        issuer_key,
        require_key_binding=False,
        expected_aud=None,
        expected_nonce=None,
        leeway=300,
    )
    assert unbound.payload["given_name"] == "Ada"
    assert not unbound.key_bound
    assert _verify(_bound(issued, holder), issuer_key, kb_max_age=0.5).key_bound


def test_a_verified_binding_carries_its_header_claims_and_holder_key(
    issued: sdjwt.SdJwt, holder: KeyPair, issuer_key: KeyPair
) -> None:
    verified = _verify(_bound(issued, holder), issuer_key)
    assert verified.kb_header is not None
    assert verified.kb_header["typ"] == "kb+jwt"
    assert verified.kb_claims is not None
    assert verified.kb_claims["nonce"] == NONCE
    assert verified.holder_key == holder.public_key


def test_a_bare_presentation_verifies_unbound_even_with_an_audience_and_nonce_at_hand(
    issued: sdjwt.SdJwt, issuer_key: KeyPair
) -> None:
    verified = _verify(_bare(issued), issuer_key, require_key_binding=False)
    assert not verified.key_bound
    assert verified.kb_header is None
    assert verified.sd_hash == digest_of(_bare(issued))


@pytest.mark.parametrize(("aud", "nonce"), [(AUD, None), (None, NONCE), (None, None)])
def test_a_key_binding_nobody_can_check_is_refused_not_ignored(
    issued: sdjwt.SdJwt, holder: KeyPair, issuer_key: KeyPair, aud: Any, nonce: Any
) -> None:
    with pytest.raises(VerificationError) as info:
        _verify(
            _bound(issued, holder),
            issuer_key,
            require_key_binding=False,
            expected_aud=aud,
            expected_nonce=nonce,
        )
    assert info.value.code == "unexpected_key_binding"


def test_the_key_binding_step_refuses_a_bare_presentation_and_bad_expectations(
    issued: sdjwt.SdJwt, holder: KeyPair
) -> None:
    """The step function the AP2 chain calls on its own: the same refusals as :func:`sdjwt.verify`."""
    holder_key = TrustedKey.for_key(holder.public_key)
    arguments: dict[str, Any] = {
        "holder_key": holder_key,
        "expected_aud": AUD,
        "expected_nonce": NONCE,
        "now": NOW,
        "kb_max_age": 300,
    }
    with pytest.raises(VerificationError) as info:
        sdjwt.verify_key_binding(sdjwt.parse(_bare(issued)), **arguments)
    assert info.value.code == "kb_missing"
    bound = sdjwt.parse(_bound(issued, holder))
    for changes, code in (
        ({"expected_nonce": ""}, "kb_expectations_missing"),
        ({"kb_max_age": 0}, "bad_kb_max_age"),
        ({"leeway": 301}, "bad_leeway"),
    ):
        with pytest.raises(InvalidInput) as refused:
            sdjwt.verify_key_binding(bound, **{**arguments, **changes})
        assert refused.value.code == code
    # Without leeway, a binding one second older than the maximum age is too old.
    old = sdjwt.present(issued, disclose=[], holder_key=holder, aud=AUD, nonce=NONCE, iat=NOW - 301)
    with pytest.raises(ExpiredError):
        sdjwt.verify_key_binding(sdjwt.parse(old), **arguments)


def test_validity_has_no_leeway_unless_given() -> None:
    with pytest.raises(ExpiredError):
        sdjwt.check_validity({"iss": ISSUER, "iat": NOW - 10, "exp": NOW}, issuer=ISSUER, now=NOW)
    sdjwt.check_validity({"iss": ISSUER, "iat": NOW - 10, "exp": NOW}, issuer=ISSUER, now=NOW, leeway=1)


def test_an_unsupported_sd_alg_is_named_cut_to_32_characters(issuer_key: KeyPair) -> None:
    for sd_alg, named in (("x" * 40, "x" * 32), ("", None), (0, None)):
        token = sign_jwt({**CLAIMS, "_sd_alg": sd_alg}, issuer_key, typ="dc+sd-jwt")
        with pytest.raises(VerificationError) as info:
            sdjwt.verify_issuer_jwt(
                sdjwt.parse(token + "~"),
                issuer_key=TrustedKey.for_key(issuer_key.public_key),
                expected_typ=None,
            )
        assert info.value.code == "unsupported_sd_alg"
        assert info.value.fields["sd_alg"] == named


@pytest.mark.parametrize("payload", [[1], "claims"])
def test_a_verified_issuer_payload_must_be_an_object(issuer_key: KeyPair, payload: Any) -> None:
    token = sign_jwt(payload, issuer_key, typ="dc+sd-jwt")
    with pytest.raises(InvalidInput) as info:
        sdjwt.verify_issuer_jwt(
            sdjwt.parse(token + "~"), issuer_key=TrustedKey.for_key(issuer_key.public_key), expected_typ=None
        )
    assert info.value.code == "malformed_jwt"


def test_an_unverified_read_gives_the_holder_jwk_and_issuer_only_of_an_object(
    issued: sdjwt.SdJwt, holder: KeyPair, issuer_key: KeyPair
) -> None:
    read = sdjwt.read_issuer_payload(sdjwt.parse(_bound(issued, holder)))
    assert read.holder_jwk == holder.public_key.to_jwk()
    assert read.iss == ISSUER
    payloads: list[Any] = [[1], {"cnf": "x"}, {"cnf": {"jwk": "x"}}, {"cnf": [1]}]
    for payload in payloads:
        other = sdjwt.read_issuer_payload(sdjwt.parse(sign_jwt(payload, issuer_key) + "~"))
        assert other.holder_jwk is None


def test_disclosures_are_processed_without_a_signature_for_the_report(
    issued: sdjwt.SdJwt, holder: KeyPair
) -> None:
    parsed = sdjwt.parse(_bound(issued, holder))
    processed = sdjwt.process_unverified_disclosures(issued.payload, parsed)
    assert processed.payload["given_name"] == "Ada"


def test_the_holder_key_from_cnf_is_owned_by_the_holder(issued: sdjwt.SdJwt, holder: KeyPair) -> None:
    key = sdjwt.holder_key_from_cnf(issued.payload)
    assert key.owner == "holder"
    assert key.key == holder.public_key


def test_a_presentation_that_is_not_text_is_refused_by_name() -> None:
    for presentation, code in (
        (b"\xffabc~", "malformed_sd_jwt"),
        (5, "malformed_sd_jwt"),
        ("A" * 70000, "too_large"),
    ):
        with pytest.raises(InvalidInput) as info:
            sdjwt.parse(presentation)  # type: ignore[arg-type]
        assert info.value.code == code
        assert str(info.value).startswith("presentation ")
