"""Token Status Lists at their edges: the tests the mutation check of ``mudrika.crypto.statuslist``
showed missing.

A dispute asks a status list whether a credential was revoked on the purchase day, so every refusal
on the way is pinned by what it says (class, code, fields) and every limit on both sides of its edge:
the list's own caps (§4.1, §4.2 of draft-ietf-oauth-status-list-20; §11 on decompression), the
token's claims and time rule (§5.1, §8.3), the URI a Referenced Token names (§6.2, RFC 3986 §3.1)
and what the signer refuses to sign.
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

import pytest

from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import TrustedKey, sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.statuslist import (
    DEFAULT_MAX_LIST_BYTES,
    MEDIA_TYPE,
    STATUS_LIST_TYP,
    StatusList,
    StatusReference,
    StatusType,
    VerifiedStatusList,
    check_status,
    sign_status_list_token,
    status_claim,
    verify_status_list_token,
)
from mudrika.errors import BindingError, ExpiredError, InvalidInput, VerificationError

URI = "https://issuer.example/statuslists/1"
NOW = 1_767_225_600  # 2026-01-01T00:00:00Z
ISSUER = KeyPair.generate("p256")
TRUSTED = TrustedKey.for_key(ISSUER.public_key)
MIB = 1024 * 1024


def _lst(data: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(data, 9)).rstrip(b"=").decode()


def _signed(claims: dict[str, Any]) -> str:
    return sign_jwt(claims, ISSUER, typ=STATUS_LIST_TYP)


def _claims(**changes: Any) -> dict[str, Any]:
    claims: dict[str, Any] = {"sub": URI, "iat": NOW - 60, "status_list": StatusList(16, 1).to_json()}
    claims.update(changes)
    return {name: value for name, value in claims.items() if value is not _DROP}


_DROP = object()


def _verify(token: str | bytes, **overrides: Any) -> VerifiedStatusList:
    options: dict[str, Any] = {"key": TRUSTED, "uri": URI, "issuer": None, "now": NOW, "max_age": 3600}
    options.update(overrides)
    return verify_status_list_token(token, **options)


# -- the registered values ---------------------------------------------------------------------------


def test_the_registered_status_types_and_media_type() -> None:
    """§7.1's registry and §14.7's media type, as a Status Provider and its clients name them."""
    assert [(member.name, member.value) for member in StatusType] == [
        ("VALID", 0),
        ("INVALID", 1),
        ("SUSPENDED", 2),
        ("APPLICATION_SPECIFIC", 3),
    ]
    assert (MEDIA_TYPE, STATUS_LIST_TYP) == ("application/statuslist+jwt", "statuslist+jwt")


# -- the list: sizes and caps -----------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, -1, True, 1.5, "8"])
def test_a_list_holds_at_least_one_entry_counted_by_an_int(size: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        StatusList(size, 1)
    assert (caught.value.code, str(caught.value)) == ("bad_size", "a status list holds at least one entry")
    assert len(StatusList(1, 1)) == 1


def test_a_new_list_may_fill_its_cap_and_not_one_byte_more() -> None:
    assert StatusList(8 * 1024, 1, max_bytes=1024).to_bytes() == bytes(1024)
    with pytest.raises(InvalidInput) as caught:
        StatusList(8 * 1024 + 1, 1, max_bytes=1024)
    assert (caught.value.code, caught.value.fields) == ("too_large", {"limit": 1024})


def test_the_default_cap_is_4_mib_of_inflated_list() -> None:
    assert DEFAULT_MAX_LIST_BYTES == 4 * MIB
    assert len(StatusList.decode(_lst(bytes(4 * MIB)), 8)) == 4 * MIB
    with pytest.raises(InvalidInput) as caught:
        StatusList.decode(_lst(bytes(4 * MIB + 1)), 8)
    assert (caught.value.code, caught.value.fields) == ("too_large", {"limit": 4 * MIB})


def test_an_inflated_list_may_be_exactly_the_cap() -> None:
    assert len(StatusList.decode(_lst(bytes(100)), 8, max_bytes=100)) == 100
    with pytest.raises(InvalidInput) as caught:
        StatusList.decode(_lst(bytes(101)), 8, max_bytes=100)
    assert caught.value.code == "too_large"


def test_the_encoded_lst_is_capped_at_twice_the_list_plus_1024_characters() -> None:
    """A ZLIB stream longer than that cannot inflate to a list within the cap: refused unread."""
    longest = "A" * (2 * 16 + 1024)  # decodes (zero bytes), and is then no ZLIB stream
    with pytest.raises(InvalidInput) as read:
        StatusList.decode(longest, 1, max_bytes=16)
    assert read.value.code == "bad_lst"
    with pytest.raises(InvalidInput) as unread:
        StatusList.decode(longest + "A", 1, max_bytes=16)
    assert (unread.value.code, unread.value.fields) == ("too_large", {"limit": 2 * 16 + 1024})


@pytest.mark.parametrize(
    "lst", [None, 5, b"eNrbuRgAAhcBXQ", ["eNrbuRgAAhcBXQ"]], ids=["none", "int", "bytes", "list"]
)
def test_lst_must_be_a_string(lst: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        StatusList.decode(lst, 1)
    assert (caught.value.code, str(caught.value)) == (
        "bad_lst",
        "status list 'lst' must be a non-empty string",
    )


@pytest.mark.parametrize(
    ("data", "bits", "size", "accepted"),
    [
        (b"\x00\x00", 1, 16, True),
        (b"\x00\x00", 1, 9, True),  # the unused tail of the last byte
        (b"\x00\x00", 1, 8, False),  # a whole byte past the managed entries
        (b"\x00\x00", 1, 17, False),  # more entries than the bytes hold
        (b"\x00\x00", 2, 8, True),
        (b"\x00\x00", 2, 9, False),
        (b"\x00\x00", 1, 0, False),
    ],
)
def test_from_bytes_size_must_match_the_byte_array(data: bytes, bits: int, size: int, accepted: bool) -> None:
    if accepted:
        assert len(StatusList.from_bytes(data, bits, size=size)) == size
        return
    with pytest.raises(InvalidInput) as caught:
        StatusList.from_bytes(data, bits, size=size)
    assert caught.value.code == "bad_size"


def test_from_bytes_checks_its_width_and_a_size_of_the_wrong_type() -> None:
    with pytest.raises(InvalidInput) as width:
        StatusList.from_bytes(b"\x00", 3)
    assert width.value.code == "bad_bits"
    with pytest.raises(InvalidInput) as size:
        StatusList.from_bytes(b"\x00", 1, size=True)
    assert size.value.code == "bad_size"


@pytest.mark.parametrize(
    "value",
    [[1, "AAA"], "eNrbuRgAAhcBXQ", None, {"bits": 1}, {"lst": "eNrbuRgAAhcBXQ"}, {}],
    ids=["list", "string", "null", "no-lst", "no-bits", "empty"],
)
def test_the_status_list_object_needs_bits_and_lst(value: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        StatusList.from_json(value)
    assert caught.value.code == "bad_status_list"


# -- the signer ---------------------------------------------------------------------------------------


def _payload(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    claims = loads_strict(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert isinstance(claims, dict)
    return claims


def test_the_signer_writes_only_the_claims_it_was_given() -> None:
    bare = _payload(sign_status_list_token(StatusList(8, 1), key=ISSUER, uri=URI, iat=0))
    assert sorted(bare) == ["iat", "status_list", "sub"]
    assert bare["iat"] == 0
    full = _payload(
        sign_status_list_token(
            StatusList(8, 1), key=ISSUER, uri=URI, iat=10, exp=11, ttl=1, issuer="https://i"
        )
    )
    assert {name: full[name] for name in ("iss", "iat", "exp", "ttl")} == {
        "iss": "https://i",
        "iat": 10,
        "exp": 11,
        "ttl": 1,
    }


@pytest.mark.parametrize(
    ("changes", "claim", "message"),
    [
        ({"iat": -1}, "iat", "iat must be a non-negative integer"),
        ({"iat": True}, "iat", "iat must be a non-negative integer"),
        ({"exp": 1.5}, "exp", "exp must be a non-negative integer"),
        ({"ttl": "5"}, "ttl", "ttl must be a non-negative integer"),
        ({"ttl": 0}, "ttl", "ttl must be positive (§5.1)"),
        ({"exp": 100}, "exp", "exp must be after iat"),
        ({"exp": 99}, "exp", "exp must be after iat"),
    ],
)
def test_the_signer_refuses_claims_a_verifier_would(
    changes: dict[str, Any], claim: str, message: str
) -> None:
    options: dict[str, Any] = {"iat": 100, **changes}
    with pytest.raises(InvalidInput) as caught:
        sign_status_list_token(StatusList(8, 1), key=ISSUER, uri=URI, **options)
    assert (caught.value.code, caught.value.fields, str(caught.value)) == (
        "bad_claim",
        {"claim": claim},
        message,
    )


def test_the_signer_refuses_a_uri_no_reference_could_name() -> None:
    with pytest.raises(InvalidInput) as caught:
        sign_status_list_token(StatusList(8, 1), key=ISSUER, uri="not a uri", iat=0)
    assert caught.value.code == "bad_status_claim"


# -- the URI a Referenced Token names -----------------------------------------------------------------


@pytest.mark.parametrize(
    "uri",
    [
        "https://issuer.example/lists/1",
        "h2c://issuer.example/1",  # a digit after the first letter
        "coap+tcp://issuer.example/1",
        "a-b:rest",
        "a.b:rest",
        "urn:example:status!list",  # '!' (0x21), the first character above the controls
        "https://issuer.example/" + "a" * (2048 - len("https://issuer.example/")),
    ],
    ids=["https", "digit", "plus", "hyphen", "dot", "bang", "2048-chars"],
)
def test_absolute_uris_are_accepted(uri: str) -> None:
    assert StatusReference(0, uri).uri == uri


@pytest.mark.parametrize(
    "uri",
    [
        "1https://issuer.example/1",  # a scheme starts with a letter
        "https:",  # nothing after the scheme
        ":rest",
        "no-scheme-at-all",
        "a_b:rest",  # '_' is not a scheme character
        "a b:rest",
        "https://issuer.example/a b",
        "https://issuer.example/a\tb",
        "https://issuer.example/a\x7fb",
        "https://issuer.example/\u00e9",
        "https://issuer.example/" + "a" * (2049 - len("https://issuer.example/")),
    ],
    ids=[
        "digit-first",
        "empty-rest",
        "no-scheme",
        "no-colon",
        "underscore",
        "space-in-scheme",
        "space",
        "tab",
        "del",
        "non-ascii",
        "2049-chars",
    ],
)
def test_other_uris_are_refused(uri: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        StatusReference(0, uri)
    assert caught.value.code == "bad_status_claim"


# -- the verifier's arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ({"leeway": 0.0}, None),
        ({"leeway": 300.0}, None),
        ({"leeway": 300.5}, "bad_leeway"),
        ({"leeway": -0.5}, "bad_leeway"),
        ({"max_age": 0.5}, None),
        ({"max_age": None}, None),
        ({"max_age": 0}, "bad_config"),
        ({"max_age": -1}, "bad_config"),
        ({"max_age": float("inf")}, "bad_config"),
        ({"max_age": float("nan")}, "bad_config"),
    ],
)
def test_leeway_is_at_most_five_minutes_and_max_age_a_positive_finite_number(
    options: dict[str, Any], refusal: str | None
) -> None:
    token = _signed(_claims(iat=NOW))
    if refusal is None:
        assert _verify(token, **options).issued_at == NOW
        return
    with pytest.raises(InvalidInput) as caught:
        _verify(token, **options)
    assert caught.value.code == refusal


def test_the_token_is_capped_at_1_mib_by_default() -> None:
    with pytest.raises(InvalidInput) as parsed:
        _verify("a" * MIB)
    assert parsed.value.code == "malformed_jws"
    with pytest.raises(InvalidInput) as unread:
        _verify("a" * (MIB + 1))
    assert (unread.value.code, unread.value.fields) == ("too_large", {"limit": MIB})


# -- the token's claims -------------------------------------------------------------------------------


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_claims_nest_at_most_16_levels() -> None:
    assert _verify(_signed(_claims(extra=_nested(15)))).claims["extra"] == _nested(15)
    with pytest.raises(InvalidInput) as caught:
        _verify(_signed(_claims(extra=_nested(16))))
    assert (caught.value.code, caught.value.fields["limit"]) == ("too_deep", 16)


def test_a_payload_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        _verify(sign_jwt([URI, NOW], ISSUER, typ=STATUS_LIST_TYP))  # type: ignore[arg-type]
    assert caught.value.code == "malformed_jwt"


@pytest.mark.parametrize("claim", ["iat", "exp", "ttl"])
@pytest.mark.parametrize("value", ["1", True, [1], {"n": 1}], ids=["string", "bool", "list", "object"])
def test_time_claims_must_be_numbers(claim: str, value: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        _verify(_signed(_claims(**{claim: value})))
    assert (caught.value.code, caught.value.fields) == ("malformed_claim", {"claim": claim})


def test_a_null_iat_is_a_missing_iat() -> None:
    with pytest.raises(VerificationError) as caught:
        _verify(_signed(_claims(iat=None)))
    assert (caught.value.code, caught.value.fields) == ("missing_claim", {"claim": "iat"})


@pytest.mark.parametrize(("ttl", "accepted"), [(1, True), (0.5, True), (0, False), (-1, False)])
def test_ttl_must_be_positive(ttl: float, accepted: bool) -> None:
    token = _signed(_claims(ttl=ttl))
    if accepted:
        assert _verify(token).ttl == ttl
        return
    with pytest.raises(InvalidInput) as caught:
        _verify(token)
    assert (caught.value.code, caught.value.fields) == ("malformed_claim", {"claim": "ttl"})


def test_a_uri_mismatch_shows_both_uris_cut_at_200_characters() -> None:
    long_uri = "https://issuer.example/" + "a" * 300
    with pytest.raises(BindingError) as caught:
        _verify(_signed(_claims(sub=long_uri + "-other")), uri=long_uri)
    assert (caught.value.fields["expected"], caught.value.fields["got"]) == (long_uri[:200], long_uri[:200])


def test_a_bytes_token_is_kept_as_its_text() -> None:
    token = _signed(_claims())
    verified = _verify(token.encode("ascii"))
    assert verified.token == token
    assert token not in repr(verified)


def test_a_verified_list_built_by_hand_carries_no_token() -> None:
    built = VerifiedStatusList(URI, NOW, None, None, StatusList(8, 1), {}, {})
    assert built.token == ""


@pytest.mark.parametrize(("idx", "shown"), [(16, 16), (-1, -1), ("3", None), (True, True)])
def test_an_index_outside_the_list_names_itself_when_it_is_an_int(idx: Any, shown: Any) -> None:
    verified = _verify(_signed(_claims()))
    with pytest.raises(VerificationError) as caught:
        verified.status_of(idx)
    assert caught.value.fields == {"idx": shown, "size": 16}


def test_check_status_has_no_leeway_unless_asked() -> None:
    token = _signed(_claims(exp=NOW))
    referenced = {"status": status_claim(0, URI)}
    with pytest.raises(ExpiredError):
        check_status(referenced, token, key=TRUSTED, issuer=None, now=NOW, max_age=3600)
    assert check_status(referenced, token, key=TRUSTED, issuer=None, now=NOW, max_age=3600, leeway=1) == 0


# -- copies and equality ------------------------------------------------------------------------------


def test_a_copy_is_equal_and_independent() -> None:
    original = StatusList(9, 2)
    original.set(8, StatusType.SUSPENDED)
    copy = original.copy()
    assert copy == original
    copy.set(0, StatusType.INVALID)
    assert (copy.get(0), original.get(0)) == (StatusType.INVALID, StatusType.VALID)
    assert copy != original


def test_lists_differ_by_entries_width_and_size() -> None:
    base = StatusList.from_bytes(b"\x00\x00", 1)
    assert base == StatusList.from_bytes(b"\x00\x00", 1)
    for other in (
        StatusList.from_bytes(b"\x01\x00", 1),
        StatusList.from_bytes(b"\x00\x00", 2),
        StatusList.from_bytes(b"\x00\x00", 1, size=9),
    ):
        assert base != other
    assert base.__eq__(b"\x00\x00") is NotImplemented
    assert base != b"\x00\x00"


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
def test_clearing_an_entry_leaves_every_bit_of_its_neighbours(bits: int) -> None:
    """Every entry at its largest value, then each one cleared in turn: only that entry changes."""
    top = (1 << bits) - 1
    for cleared in range(16 // bits * 2):
        status_list = StatusList(16 // bits * 2, bits)
        for index in range(len(status_list)):
            status_list.set(index, top)
        status_list.set(cleared, 0)
        assert [status_list.get(index) for index in range(len(status_list))] == [
            0 if index == cleared else top for index in range(len(status_list))
        ]
