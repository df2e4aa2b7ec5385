"""Token Status List (draft-ietf-oauth-status-list-20): the draft's test vectors byte for byte, the
token's checks one refusal at a time, and a round-trip property.

The vectors are transcribed in ``fixtures/statuslist/draft-ietf-oauth-status-list-20.json`` from the
draft's "Test vectors for Status List encoding" appendix (1-, 2-, 4- and 8-bit lists of 2^20 entries)
and its §4.1/§4.2 examples; see that folder's README.
"""

from __future__ import annotations

import base64
import json
import random
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.crypto import sdjwt
from mudrika.crypto.jose import TrustedKey, sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.statuslist import (
    StatusList,
    StatusReference,
    StatusType,
    check_status,
    read_status_reference,
    sign_status_list_token,
    status_claim,
    verify_status_list_token,
)
from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    NotYetValidError,
    SignatureError,
    VerificationError,
)
from tests._support.paths import FIXTURES

VECTORS = json.loads((FIXTURES / "statuslist" / "draft-ietf-oauth-status-list-20.json").read_text())
URI = "https://issuer.example/statuslists/1"
NOW = 1_767_225_600  # 2026-01-01T00:00:00Z
ISSUER = KeyPair.generate("p256")
OTHER = KeyPair.generate("p256")
TRUSTED = TrustedKey.for_key(ISSUER.public_key)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# -- the draft's vectors ----------------------------------------------------------------------------


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: f"{v['bits']}-bit")
def test_draft_vector_encodes_byte_for_byte(vector: dict[str, Any]) -> None:
    status_list = StatusList(vector["size"], vector["bits"])
    for index, value in vector["statuses"].items():
        status_list.set(int(index), value)
    assert status_list.encode() == vector["lst"]


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: f"{v['bits']}-bit")
def test_draft_vector_decodes(vector: dict[str, Any]) -> None:
    status_list = StatusList.decode(vector["lst"], vector["bits"])
    assert status_list.size == vector["size"]
    expected = {int(index): value for index, value in vector["statuses"].items()}
    for index, value in expected.items():
        assert status_list.get(index) == value
    # every entry the draft does not mention is VALID: the counts add up exactly
    nonzero = {value: n for value, n in status_list.counts().items() if value != 0}
    listed = [value for value in expected.values() if value != 0]
    assert sum(nonzero.values()) == len(listed)
    assert status_list.counts()[0] == vector["size"] - len(listed)


@pytest.mark.parametrize("example", VECTORS["byte_examples"], ids=lambda e: f"{e['bits']}-bit")
def test_draft_byte_array_examples(example: dict[str, Any]) -> None:
    """§4.1's byte arrays ([0xb9, 0xa3] at 1 bit, [0xc9, 0x44, 0xf9] at 2 bits) and their §4.2 lst."""
    status_list = StatusList.from_bytes(bytes(example["bytes"]), example["bits"])
    assert status_list.encode() == example["lst"]
    assert StatusList.decode(example["lst"], example["bits"]).to_bytes() == bytes(example["bytes"])


def test_draft_section_4_1_bit_order() -> None:
    """§4.1: status[0]=1, status[1]=0, status[2]=0, status[3]=1 … packed from the least significant bit."""
    one_bit = StatusList.from_bytes(bytes([0xB9, 0xA3]), 1)
    assert list(one_bit) == [1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1]
    two_bit = StatusList.from_bytes(bytes([0xC9, 0x44, 0xF9]), 2)
    assert list(two_bit) == [1, 2, 0, 3, 0, 1, 0, 1, 1, 2, 3, 3]


def test_draft_status_list_token_example_claims() -> None:
    """The draft's example token (§5.1) decodes to the §4.2 one-bit list; its key is not published,
    so only the payload is read here (the signature path is covered by the tests below)."""
    payload = json.loads(base64.urlsafe_b64decode(VECTORS["status_list_jwt_example"].split(".")[1] + "=="))
    assert payload["sub"] == "https://example.com/statuslists/1"
    status_list = StatusList.from_json(payload["status_list"])
    assert status_list.get(0) == StatusType.INVALID
    assert status_list.get(1) == StatusType.VALID


# -- the list ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
def test_set_get_every_value_each_width(bits: int) -> None:
    status_list = StatusList(37, bits)
    for index in range(37):
        status_list.set(index, index % (1 << bits))
    assert list(status_list) == [index % (1 << bits) for index in range(37)]
    again = StatusList.decode(status_list.encode(), bits, size=37)
    assert again == status_list


def test_setting_one_entry_leaves_its_neighbours() -> None:
    status_list = StatusList(8, 2)
    status_list.set(1, 3)
    status_list.set(2, 2)
    status_list.set(1, 0)
    assert list(status_list) == [0, 0, 2, 0, 0, 0, 0, 0]


@pytest.mark.parametrize(("bits", "value"), [(1, 2), (2, 4), (4, 16), (8, 256), (1, -1), (2, True)])
def test_value_must_fit_the_bits(bits: int, value: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        StatusList(4, bits).set(0, value)
    assert caught.value.code == "bad_status_value"


@pytest.mark.parametrize("index", [-1, 16, 10**9, True, "0"])
def test_index_outside_the_list(index: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        StatusList(16, 1).get(index)
    assert caught.value.code in {"index_out_of_range", "bad_index"}


@pytest.mark.parametrize("bits", [0, 3, 5, 16, True, "1", None])
def test_only_1_2_4_8_bits(bits: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        StatusList(8, bits)
    assert caught.value.code == "bad_bits"
    with pytest.raises(InvalidInput) as decoded:
        StatusList.decode("eNrbuRgAAhcBXQ", bits)
    assert decoded.value.code == "bad_bits"


@pytest.mark.parametrize(
    ("lst", "code"),
    [
        (_b64(b"not zlib at all"), "bad_lst"),
        (_b64(zlib.compress(b"\x01\x02")[:-3]), "bad_lst"),  # truncated stream
        (_b64(zlib.compress(b"\x01\x02") + b"extra"), "bad_lst"),  # trailing bytes
        (_b64(zlib.compress(b"\x01\x02", wbits=-15)), "bad_lst"),  # raw DEFLATE, no ZLIB header
        (_b64(zlib.compress(b"\x01\x02", wbits=31)), "bad_lst"),  # gzip
        (_b64(zlib.compress(b"")), "bad_lst"),  # an empty list
        ("eNrbuRgAAhcBXQ==", "bad_base64url"),  # padded
        ("", "bad_lst"),
    ],
    ids=["garbage", "truncated", "trailing", "raw-deflate", "gzip", "empty", "padded", "blank"],
)
def test_bad_lst_refused(lst: str, code: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        StatusList.decode(lst, 1)
    assert caught.value.code == code


def test_decompression_bomb_refused_at_the_cap() -> None:
    bomb = _b64(zlib.compress(bytes(64 * 1024 * 1024), 9))  # 64 MiB of zeros in ~64 KiB
    assert len(bomb) < 100_000
    with pytest.raises(InvalidInput) as caught:
        StatusList.decode(bomb, 1)
    assert caught.value.code == "too_large"
    with pytest.raises(InvalidInput):
        StatusList.decode(_b64(zlib.compress(bytes(1025))), 1, max_bytes=1024)


@settings(max_examples=60, deadline=None)
@given(
    bits=st.sampled_from([1, 2, 4, 8]),
    data=st.data(),
)
def test_round_trip_property(bits: int, data: st.DataObject) -> None:
    size = data.draw(st.integers(min_value=1, max_value=3000))
    entries = data.draw(
        st.dictionaries(st.integers(0, size - 1), st.integers(0, (1 << bits) - 1), max_size=64)
    )
    status_list = StatusList(size, bits)
    for index, value in entries.items():
        status_list.set(index, value)
    decoded = StatusList.decode(status_list.encode(), bits, size=size)
    assert decoded == status_list
    assert all(decoded.get(index) == value for index, value in entries.items())
    assert sum(decoded.counts().values()) == size
    # the JSON form through a real JSON round trip decodes the same
    assert (
        StatusList.from_json(json.loads(json.dumps(status_list.to_json()))).to_bytes()
        == status_list.to_bytes()
    )


# -- the status claim -------------------------------------------------------------------------------


def test_status_claim_shape() -> None:
    assert status_claim(7, URI) == {"status_list": {"idx": 7, "uri": URI}}
    assert read_status_reference({"status": status_claim(7, URI)}) == StatusReference(7, URI)


@pytest.mark.parametrize(
    ("claims", "error", "code"),
    [
        ({}, VerificationError, "no_status_claim"),
        ({"status": {}}, VerificationError, "no_status_claim"),
        ({"status": []}, InvalidInput, "bad_status_claim"),
        ({"status": {"status_list": {"idx": 1}}}, InvalidInput, "bad_status_claim"),
        ({"status": {"status_list": {"idx": -1, "uri": URI}}}, InvalidInput, "bad_status_claim"),
        ({"status": {"status_list": {"idx": 1.0, "uri": URI}}}, InvalidInput, "bad_status_claim"),
        ({"status": {"status_list": {"idx": 1, "uri": "not a uri"}}}, InvalidInput, "bad_status_claim"),
    ],
)
def test_status_claim_refusals(claims: dict[str, Any], error: type[Exception], code: str) -> None:
    with pytest.raises(error) as caught:
        read_status_reference(claims)
    assert getattr(caught.value, "code", None) == code


# -- the token --------------------------------------------------------------------------------------


def _list(bits: int = 2, size: int = 1000) -> StatusList:
    status_list = StatusList(size, bits)
    status_list.set(3, StatusType.INVALID)
    status_list.set(4, StatusType.SUSPENDED)
    return status_list


def _token(status_list: StatusList | None = None, *, key: KeyPair = ISSUER, **claims: Any) -> str:
    options: dict[str, Any] = {"uri": URI, "iat": NOW - 60, "exp": NOW + 3600, "ttl": 600}
    options.update(claims)
    return sign_status_list_token(status_list or _list(), key=key, kid="issuer-key-1", **options)


def _verify(token: str | bytes, **overrides: Any) -> Any:
    options: dict[str, Any] = {
        "key": TRUSTED,
        "uri": URI,
        "issuer": None,
        "now": NOW,
        "max_age": 3600,
    }
    options.update(overrides)
    return verify_status_list_token(token, **options)


def test_token_round_trip() -> None:
    verified = _verify(_token(issuer="https://issuer.example"), issuer="https://issuer.example")
    assert verified.header["typ"] == "statuslist+jwt"
    assert verified.claims["sub"] == URI
    assert (verified.issued_at, verified.expires_at, verified.ttl) == (NOW - 60, NOW + 3600, 600)
    assert [verified.status_of(i) for i in (2, 3, 4)] == [0, 1, 2]


def test_check_status_for_a_referenced_token() -> None:
    token = _token()
    for idx, expected in ((0, StatusType.VALID), (3, StatusType.INVALID), (4, StatusType.SUSPENDED)):
        claims = {"iss": "https://issuer.example", "status": status_claim(idx, URI)}
        assert check_status(claims, token, key=TRUSTED, issuer=None, now=NOW, max_age=3600) == expected


def test_list_signed_by_another_issuer_refused() -> None:
    with pytest.raises(SignatureError):
        _verify(_token(key=OTHER))


def test_list_for_another_uri_refused() -> None:
    """§8.3 step 4a: a genuine list of the same issuer, but not the one the credential names."""
    other = sign_status_list_token(_list(), key=ISSUER, uri=URI + "-other", iat=NOW - 60)
    with pytest.raises(BindingError) as caught:
        _verify(other)
    assert caught.value.code == "status_list_uri_mismatch"


def test_index_out_of_range_refused() -> None:
    verified = _verify(_token(_list(size=16)))
    with pytest.raises(VerificationError) as caught:
        verified.status_of(16)
    assert caught.value.code == "status_index_out_of_range"
    claims = {"status": status_claim(100_000, URI)}
    with pytest.raises(VerificationError):
        check_status(claims, _token(), key=TRUSTED, issuer=None, now=NOW, max_age=3600)


def _signed_claims(claims: dict[str, Any], typ: str = "statuslist+jwt") -> str:
    return sign_jwt(claims, ISSUER, typ=typ)


@pytest.mark.parametrize("bits", [3, 0, 16, "1"])
def test_wrong_bits_in_a_signed_token_refused(bits: Any) -> None:
    token = _signed_claims({"sub": URI, "iat": NOW, "status_list": {"bits": bits, "lst": "eNrbuRgAAhcBXQ"}})
    with pytest.raises(InvalidInput) as caught:
        _verify(token)
    assert caught.value.code == "bad_bits"


def test_bad_zlib_in_a_signed_token_refused() -> None:
    token = _signed_claims({"sub": URI, "iat": NOW, "status_list": {"bits": 1, "lst": _b64(b"nope")}})
    with pytest.raises(InvalidInput) as caught:
        _verify(token)
    assert caught.value.code == "bad_lst"


def test_expired_token_refused() -> None:
    with pytest.raises(ExpiredError):
        _verify(_token(iat=NOW - 7200, exp=NOW - 1), max_age=None)


def test_too_old_token_refused() -> None:
    token = _token(iat=NOW - 7201, exp=NOW + 3600)
    with pytest.raises(VerificationError) as caught:
        _verify(token, max_age=7200)
    assert caught.value.code == "status_list_too_old"
    assert _verify(token, max_age=7300).issued_at == NOW - 7201


def test_token_from_the_future_refused() -> None:
    with pytest.raises(NotYetValidError):
        _verify(_token(iat=NOW + 120, exp=NOW + 3600))


def test_dispute_time_judges_the_list_current_then() -> None:
    """Judged as of the purchase (``now`` = purchase time): the list must have been current then."""
    token = _token(iat=NOW - 60, exp=NOW + 3600)
    assert _verify(token, now=NOW + 100, max_age=None).status_of(3) == StatusType.INVALID
    with pytest.raises(NotYetValidError):
        _verify(token, now=NOW - 3600, max_age=None)  # a list issued after the purchase
    with pytest.raises(ExpiredError):
        _verify(token, now=NOW + 7200, max_age=None)  # a list that had already lapsed


def test_oversized_token_refused() -> None:
    big = StatusList(1 << 16, 8)
    for index in range(0, 1 << 16):
        big.set(index, (index * 7919) % 251)  # incompressible enough
    token = _token(big)
    with pytest.raises(InvalidInput) as caught:
        _verify(token, max_bytes=len(token) - 1)
    assert caught.value.code == "too_large"
    with pytest.raises(InvalidInput) as inflated:
        _verify(token, max_list_bytes=(1 << 16) - 1)
    assert inflated.value.code == "too_large"


@pytest.mark.parametrize("typ", ["JWT", "dc+sd-jwt", "statuslist+cwt"])
def test_wrong_typ_refused(typ: str) -> None:
    token = _signed_claims({"sub": URI, "iat": NOW, "status_list": _list().to_json()}, typ=typ)
    with pytest.raises(VerificationError) as caught:
        _verify(token)
    assert caught.value.code == "wrong_typ"


def test_application_typ_prefix_accepted() -> None:
    token = _signed_claims(
        {"sub": URI, "iat": NOW, "status_list": _list().to_json()}, typ="application/statuslist+jwt"
    )
    assert _verify(token).status_of(3) == 1


@pytest.mark.parametrize("missing", ["sub", "iat", "status_list"])
def test_required_claims(missing: str) -> None:
    claims = {"sub": URI, "iat": NOW, "status_list": _list().to_json()}
    del claims[missing]
    with pytest.raises(VerificationError) as caught:
        _verify(_signed_claims(claims))
    assert caught.value.code in {"missing_claim", "status_list_uri_mismatch"}


def test_iss_must_match_when_present() -> None:
    with pytest.raises(VerificationError) as caught:
        _verify(_token(issuer="https://someone-else.example"), issuer="https://issuer.example")
    assert caught.value.code == "wrong_iss"


@pytest.mark.parametrize("ttl", [0, -5])
def test_signer_refuses_non_positive_ttl(ttl: int) -> None:
    with pytest.raises(InvalidInput):
        _token(ttl=ttl)


def test_verifier_refuses_non_positive_ttl() -> None:
    token = _signed_claims({"sub": URI, "iat": NOW, "ttl": 0, "status_list": _list().to_json()})
    with pytest.raises(InvalidInput) as caught:
        _verify(token)
    assert caught.value.code == "malformed_claim"


# -- SD-JWT VC issuance with a status claim ---------------------------------------------------------


def test_sdjwt_issue_adds_the_status_claim_in_plain_view() -> None:
    holder = KeyPair.generate("p256")
    issued = sdjwt.issue(
        {"iss": "https://issuer.example", "vct": "urn:example:vc", "given_name": "A"},
        issuer_key=ISSUER,
        kid="issuer-key-1",
        disclosable=["/given_name"],
        holder_key=holder.public_key,
        status=StatusReference(4, URI),
    )
    assert issued.payload["status"] == {"status_list": {"idx": 4, "uri": URI}}
    parsed = sdjwt.parse(issued.compact())
    claims = dict(sdjwt.verify_issuer_jwt(parsed, issuer_key=TRUSTED, expected_typ=sdjwt.DEFAULT_TYP).payload)
    assert check_status(claims, _token(), key=TRUSTED, issuer=None, now=NOW, max_age=3600) == 2


def test_sdjwt_issue_refuses_two_status_claims() -> None:
    with pytest.raises(InvalidInput) as caught:
        sdjwt.issue(
            {"iss": "https://issuer.example", "status": {}},
            issuer_key=ISSUER,
            kid=None,
            disclosable=[],
            holder_key=None,
            status=StatusReference(0, URI),
        )
    assert caught.value.code == "status_conflict"


class _Index(int):
    """An int subclass: not the exact ``int`` the inline read takes, so it goes the checked way."""


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
def test_every_index_reads_alike_on_the_inline_and_the_checked_path(bits: int) -> None:
    data = bytes(random.Random(bits).randrange(256) for _ in range(64))
    status_list = StatusList.from_bytes(data, bits)
    verified = _verify(_token(status_list))
    for index in range(len(status_list)):
        position = index * bits
        expected = (data[position // 8] >> (position % 8)) & ((1 << bits) - 1)
        assert status_list.get(index) == expected
        assert status_list.get(_Index(index)) == expected
        assert verified.status_of(index) == expected
        assert verified.status_of(_Index(index)) == expected
    with pytest.raises(VerificationError):
        verified.status_of(True)
