"""did:webvh log verification at its edges: the tests the mutation check of
``identity/methods/webvh/_log.py`` showed missing.

A dispute judges a merchant's key "as of" the purchase day from this log, so every rule of
did:webvh v1.0 §3.6.2 and §3.7 is pinned by what its refusal says (class, code, message, fields)
and every limit on both sides of its edge.  Two kinds of log are used: one made by the PyPI
reference implementation (``did-webvh``, the oracle) and then edited as an attacker would — the
edited entry's ``versionId`` recomputed so that the rule under test, not the hash chain, is what
refuses it — and, for the first entry's parameters (checked before anything is hashed), entries
written here by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from mudrika.crypto.jcs import canonicalize
from mudrika.errors import (
    BindingError,
    InvalidInput,
    MudrikaError,
    SignatureError,
    UntrustedKeyError,
    VerificationError,
)
from mudrika.identity.methods.webvh import VerifiedLog, entry_hash, parse_log, verify_log
from mudrika.identity.methods.webvh._log import (
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_LOG_BYTES,
    witness_json,
)
from tests._support.webvh import make_plain_log, make_prerotation_log, oracle

oracle()

WITNESS = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
OTHER_WITNESS = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"


def _refused(entries: list[dict[str, Any]], **options: Any) -> MudrikaError:
    with pytest.raises(MudrikaError) as caught:
        verify_log(entries, **options)
    return caught.value


def _malformed(entries: list[dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
    refused = _refused(entries)
    assert isinstance(refused, InvalidInput)
    return refused.code, str(refused), refused.fields


# -- parse_log: the file ---------------------------------------------------------------------------


def test_the_default_caps() -> None:
    assert (DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_ENTRIES) == (4 * 1024 * 1024, 10_000)


def test_text_and_bytes_read_alike_and_the_last_newline_is_optional() -> None:
    assert parse_log('{"a":1}\n{"b":2}\n') == parse_log(b'{"a":1}\n{"b":2}') == [{"a": 1}, {"b": 2}]
    assert parse_log(b'{"a":1}\r\n') == [{"a": 1}]


def test_an_empty_log_is_refused_and_a_lone_newline_is_one_blank_line() -> None:
    for text in ("", b""):
        with pytest.raises(InvalidInput) as caught:
            parse_log(text)
        assert (caught.value.code, str(caught.value)) == ("webvh_malformed_log", "the DID log is empty")
    with pytest.raises(InvalidInput) as blank:
        parse_log("\n\n")
    assert blank.value.fields == {"line": 1, "reason": "malformed_json"}


def test_a_blank_line_inside_the_log_is_a_malformed_line() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_log('{"a":1}\n\n{"b":2}\n')
    assert (caught.value.code, caught.value.fields["line"]) == ("webvh_malformed_log", 2)


def test_the_byte_cap_at_its_edge() -> None:
    text = '{"a":1}\n'
    assert parse_log(text, max_bytes=len(text)) == [{"a": 1}]
    with pytest.raises(InvalidInput) as caught:
        parse_log(text, max_bytes=len(text) - 1)
    assert (caught.value.code, caught.value.fields) == ("too_large", {"limit": len(text) - 1})


def test_the_entry_cap_at_its_edge() -> None:
    text = '{"a":1}\n' * 3
    assert len(parse_log(text, max_entries=3)) == 3
    with pytest.raises(InvalidInput) as caught:
        parse_log(text, max_entries=2)
    assert (caught.value.code, caught.value.fields) == ("too_large", {"limit": 2})


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ('{"a":1}\n[1,2]\n', 2, None),
        ('"text"\n', 1, None),
        ('{"a":1}\n{"a":\n', 2, "malformed_json"),
        ('{"a":' + "[" * 64 + "]" * 64 + "}\n", 1, "too_deep"),
    ],
    ids=["array", "string", "broken", "too-deep"],
)
def test_each_line_is_one_json_object(text: str, line: int, reason: str | None) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_log(text)
    expected: dict[str, Any] = {"line": line} if reason is None else {"line": line, "reason": reason}
    assert (caught.value.code, caught.value.fields) == ("webvh_malformed_log", expected)


def test_a_line_may_nest_64_levels_and_hold_256_kib() -> None:
    deep = '{"a":' + "[" * 62 + "]" * 62 + "}"
    assert parse_log(deep + "\n") == [json.loads(deep)]
    padding = 256 * 1024 - len('{"a":""}')
    assert parse_log('{"a":"' + "x" * padding + '"}\n')[0]["a"] == "x" * padding
    with pytest.raises(InvalidInput) as caught:
        parse_log('{"a":"' + "x" * (padding + 1) + '"}\n')
    assert caught.value.fields == {"line": 1, "reason": "too_large"}


# -- the first entry's parameters (checked before any hash) ------------------------------------------


def _first(parameters: Any) -> list[dict[str, Any]]:
    return [
        {
            "versionId": "1-QmFirst",
            "versionTime": "2025-03-01T12:00:00Z",
            "parameters": parameters,
            "state": {"id": "did:webvh:QmScid:shop.example"},
            "proof": [],
        }
    ]


_REQUIRED: dict[str, Any] = {"method": "did:webvh:1.0", "scid": "QmScid", "updateKeys": ["z6Mk"]}


def _with(**changes: Any) -> dict[str, Any]:
    return {**_REQUIRED, **changes}


def _passes_parameters(parameters: dict[str, Any]) -> None:
    """Parameters that pass: the next rule, the SCID's derivation, is what refuses the hand-made entry."""
    refused = _refused(_first(parameters))
    assert (type(refused), refused.code, refused.fields) == (
        BindingError,
        "webvh_scid_mismatch",
        {"version": 1},
    )


@pytest.mark.parametrize(
    ("parameters", "message", "fields"),
    [
        ([], "parameters must be a JSON object", {}),
        (_with(extra=1, another=2), "unknown parameter", {"parameters": ["another", "extra"]}),
        (
            _with(**{f"x{index}": 1 for index in range(9)}),
            "unknown parameter",
            {"parameters": [f"x{index}" for index in range(8)]},
        ),
        (_with(method="did:webvh:0.5"), "method must be did:webvh:1.0", {}),
        (_with(scid=""), "scid must be a string", {}),
        (_with(scid=7), "scid must be a string", {}),
        (
            _with(updateKeys="z6Mk"),
            "parameter 'updateKeys' must be a list of strings",
            {"parameter": "updateKeys"},
        ),
        (
            _with(updateKeys=[""]),
            "parameter 'updateKeys' must be a list of strings",
            {"parameter": "updateKeys"},
        ),
        (
            _with(nextKeyHashes=[1]),
            "parameter 'nextKeyHashes' must be a list of strings",
            {"parameter": "nextKeyHashes"},
        ),
        (
            _with(watchers={"w": 1}),
            "parameter 'watchers' must be a list of strings",
            {"parameter": "watchers"},
        ),
        (_with(portable="yes"), "parameter 'portable' must be a boolean", {}),
        (_with(deactivated=1), "parameter 'deactivated' must be a boolean", {}),
        (_with(ttl=-1), "ttl must be a non-negative integer", {}),
        (_with(ttl=True), "ttl must be a non-negative integer", {}),
        (_with(ttl=1.5), "ttl must be a non-negative integer", {}),
        (
            {"scid": "QmScid", "updateKeys": ["z6Mk"]},
            "the first entry must set 'method'",
            {"parameter": "method"},
        ),
        (
            {"method": "did:webvh:1.0", "updateKeys": ["z6Mk"]},
            "the first entry must set 'scid'",
            {"parameter": "scid"},
        ),
        (
            {"method": "did:webvh:1.0", "scid": "QmScid"},
            "the first entry must set 'updateKeys'",
            {"parameter": "updateKeys"},
        ),
    ],
    ids=[
        "not-object",
        "unknown",
        "unknown-cut-at-8",
        "method",
        "scid-empty",
        "scid-number",
        "update-keys-string",
        "update-keys-empty-item",
        "next-key-hashes",
        "watchers",
        "portable",
        "deactivated",
        "ttl-negative",
        "ttl-bool",
        "ttl-decimal",
        "no-method",
        "no-scid",
        "no-update-keys",
    ],
)
def test_first_entry_parameter_refusals(parameters: Any, message: str, fields: dict[str, Any]) -> None:
    assert _malformed(_first(parameters)) == ("webvh_malformed_log", message, {"version": 1, **fields})


@pytest.mark.parametrize(
    "changes",
    [
        {"ttl": 0},
        {"portable": True},
        {"deactivated": False},
        {"watchers": None},
        {"nextKeyHashes": ["QmHash"]},
        {"witness": {}},
        {"witness": None},
        {"witness": {"threshold": 0, "witnesses": []}},
        {"witness": {"threshold": 1, "witnesses": [{"id": WITNESS}]}},
        {"witness": {"threshold": "2", "witnesses": [{"id": WITNESS}, {"id": OTHER_WITNESS}]}},
    ],
    ids=[
        "ttl-0",
        "portable",
        "not-deactivated",
        "no-watchers",
        "next-key-hashes",
        "witness-empty",
        "witness-null",
        "witness-none",
        "witness-one",
        "threshold-text",
    ],
)
def test_first_entry_parameters_accepted(changes: dict[str, Any]) -> None:
    _passes_parameters(_with(**changes))


@pytest.mark.parametrize(
    ("witness", "message"),
    [
        ("w", "parameter 'witness' must be {threshold, witnesses}"),
        ({"threshold": 1, "witnesses": [], "extra": 1}, "parameter 'witness' must be {threshold, witnesses}"),
        (
            {"threshold": "²", "witnesses": [{"id": WITNESS}]},
            "parameter 'witness' must be {threshold, witnesses}",
        ),
        (
            {"threshold": True, "witnesses": [{"id": WITNESS}]},
            "parameter 'witness' must be {threshold, witnesses}",
        ),
        (
            {"threshold": 1, "witnesses": {"id": WITNESS}},
            "parameter 'witness' must be {threshold, witnesses}",
        ),
        ({"threshold": 1, "witnesses": [WITNESS]}, "each witness is {id: did:key}"),
        ({"threshold": 1, "witnesses": [{"id": WITNESS, "weight": 1}]}, "each witness is {id: did:key}"),
        ({"threshold": 1, "witnesses": [{"id": 7}]}, "each witness is {id: did:key}"),
        ({"threshold": 1, "witnesses": [{"id": "did:web:witness.example"}]}, "witnesses are did:key DIDs"),
        (
            {"threshold": 1, "witnesses": [{"id": WITNESS}, {"id": WITNESS}]},
            "witness threshold must be 1..number of witnesses",
        ),
        (
            {"threshold": 2, "witnesses": [{"id": WITNESS}]},
            "witness threshold must be 1..number of witnesses",
        ),
        ({"threshold": -1, "witnesses": []}, "witness threshold must be 1..number of witnesses"),
        (
            {"threshold": 0, "witnesses": [{"id": WITNESS}]},
            "witness threshold must be 1..number of witnesses",
        ),
    ],
    ids=[
        "not-object",
        "extra",
        "superscript",
        "bool",
        "witnesses-object",
        "bare-id",
        "extra-member",
        "id-number",
        "not-did-key",
        "repeated",
        "over",
        "negative",
        "zero-with-witnesses",
    ],
)
def test_witness_rule_refusals(witness: Any, message: str) -> None:
    assert _malformed(_first(_with(witness=witness))) == ("webvh_malformed_log", message, {"version": 1})


# -- later entries: the oracle's log, edited --------------------------------------------------------


def _log_with_second(edit: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """The oracle's first two entries, the second edited and its versionId recomputed (its proof,
    made over the original, is checked last: a refusal before it is the rule under test)."""
    first, second = make_plain_log().lines()[:2]
    edit(second)
    second["versionId"] = "2-" + entry_hash(second, first["versionId"])
    return [first, second]


def _set(**values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(entry: dict[str, Any]) -> None:
        entry.update(values)

    return edit


def _set_in(member: str, **values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(entry: dict[str, Any]) -> None:
        entry[member].update(values)

    return edit


def _reaches_the_proof(entries: list[dict[str, Any]]) -> None:
    refused = _refused(entries)
    assert (type(refused), refused.code) == (SignatureError, "webvh_bad_proof")


def test_scid_may_only_be_set_in_the_first_entry() -> None:
    entries = _log_with_second(_set_in("parameters", scid="QmOther"))
    assert _malformed(entries) == (
        "webvh_malformed_log",
        "scid may only be set in the first entry",
        {"version": 2},
    )


def test_portable_may_only_be_switched_on_in_the_first_entry() -> None:
    entries = _log_with_second(_set_in("parameters", portable=True))
    assert _malformed(entries) == (
        "webvh_malformed_log",
        "portable may only be switched on in the first entry",
        {"version": 2},
    )
    _reaches_the_proof(_log_with_second(_set_in("parameters", portable=False)))


@pytest.mark.parametrize(
    "time",
    [
        1_740_830_400,
        "2025-03-02T12:00:00+01:00",
        "2025-03-02 12:00:00Z",
        "2025-03-02T12:00Z",
        "2025-13-02T12:00:00Z",
        "2025-02-30T12:00:00Z",
        "2025-03-02T12:00:00.1234567890Z",
        "２025-03-02T12:00:00Z",
    ],
    ids=["number", "offset", "space", "no-seconds", "month-13", "feb-30", "ten-digits", "fullwidth-digit"],
)
def test_version_time_is_an_iso_8601_utc_date_time(time: Any) -> None:
    entries = _log_with_second(_set(versionTime=time))
    assert _malformed(entries) == (
        "webvh_malformed_log",
        "versionTime must be an ISO 8601 UTC date-time",
        {"version": 2},
    )


@pytest.mark.parametrize(
    "time",
    [
        "2025-03-02T13:00:00Z",
        "2025-03-02T12:00:00+00:00",
        "2025-03-02T12:00:00-00:00",
        "2025-03-01T12:00:00.000001Z",
    ],
    ids=["z", "plus-zero", "minus-zero", "microsecond-later"],
)
def test_version_time_spellings_accepted(time: str) -> None:
    _reaches_the_proof(_log_with_second(_set(versionTime=time)))


def test_version_time_strictly_increases() -> None:
    entries = _log_with_second(_set(versionTime="2025-03-01T12:00:00Z"))
    refused = _refused(entries)
    assert (type(refused), refused.code, refused.fields) == (
        VerificationError,
        "webvh_version_time",
        {"version": 2},
    )


def test_the_state_is_a_did_document_of_this_did() -> None:
    not_object = _log_with_second(_set(state=["did"]))
    assert _malformed(not_object) == ("webvh_malformed_log", "state must be a DID document", {"version": 2})
    for did in ("did:web:shop.example", 7):
        other = _log_with_second(_set_in("state", id=did))
        assert _malformed(other) == ("webvh_malformed_log", "state.id must be a did:webvh", {"version": 2})
    moved = _log_with_second(_set_in("state", id="did:webvh:QmOther:shop.example"))
    refused = _refused(moved)
    assert (type(refused), refused.code) == (BindingError, "webvh_scid_mismatch")


def test_proofs_must_be_a_non_empty_list_of_objects() -> None:
    for proof in ([], "proof", [1]):
        entries = _log_with_second(_set(proof=proof))
        assert _malformed(entries) == (
            "webvh_malformed_log",
            "proof must be a non-empty list of Data Integrity proofs",
            {"version": 2},
        )


def test_a_single_proof_object_is_read_as_a_list_of_one() -> None:
    first, second = make_plain_log().lines()[:2]
    proof = second["proof"][0]
    verified = verify_log([first, {**second, "proof": proof}])
    assert verified.entries[1].proofs == (proof,)


# -- the entries' shape and sequence -----------------------------------------------------------------


def test_an_empty_list_of_entries_is_refused() -> None:
    refused = _refused([])
    assert (type(refused), refused.code, str(refused)) == (
        InvalidInput,
        "webvh_malformed_log",
        "the DID log is empty",
    )


@pytest.mark.parametrize(
    "change",
    [{"extra": 1}, {"proof": None}],
    ids=["extra-member", "missing-member"],
)
def test_an_entry_has_exactly_the_five_members(change: dict[str, Any]) -> None:
    entry = {**_first(_REQUIRED)[0], **change}
    if change.get("proof", 0) is None:
        del entry["proof"]
    assert _malformed([entry]) == (
        "webvh_malformed_log",
        "a log entry has exactly versionId, versionTime, parameters, state, proof",
        {"version": 1},
    )


@pytest.mark.parametrize(
    "version_id",
    [
        1,
        "1",
        "1-",
        "0-QmFirst",
        "01-QmFirst",
        "1234567890-QmFirst",
        "1-Qm0OIl",
        "1-" + "a" * 81,
        "1-Qm First",
    ],
    ids=[
        "number",
        "no-hash",
        "empty-hash",
        "zero",
        "leading-zero",
        "ten-digits",
        "not-base58",
        "hash-81",
        "space",
    ],
)
def test_version_ids_are_a_number_and_a_base58_hash(version_id: Any) -> None:
    entry = {**_first(_REQUIRED)[0], "versionId": version_id}
    assert _malformed([entry]) == (
        "webvh_malformed_log",
        "versionId must be <number>-<entryHash>",
        {"version": 1},
    )


def test_the_longest_version_id_parts_are_read() -> None:
    entry = {**_first(_REQUIRED)[0], "versionId": "1-" + "a" * 80}
    refused = _refused([entry])
    assert refused.code == "webvh_scid_mismatch"  # read, then refused by the rule after it


def test_a_version_number_out_of_sequence_is_named() -> None:
    entry = {**_first(_REQUIRED)[0], "versionId": "2-QmFirst"}
    refused = _refused([entry])
    assert (type(refused), refused.code, refused.fields) == (
        BindingError,
        "webvh_chain_broken",
        {"version": 1, "found": 2},
    )


def test_the_did_may_change_only_while_portable() -> None:
    def move(entry: dict[str, Any]) -> None:
        scid = entry["state"]["id"].split(":")[2]
        entry["state"]["id"] = f"did:webvh:{scid}:elsewhere.example"

    refused = _refused(_log_with_second(move))
    assert (type(refused), refused.code, refused.fields) == (
        BindingError,
        "webvh_not_portable",
        {"version": 2},
    )


# -- witness approvals ---------------------------------------------------------------------------------


def test_witness_files_of_the_wrong_shape_are_refused() -> None:
    from tests._support.webvh import witness_entry

    log = make_plain_log(witnesses=1, threshold=1)
    approval = witness_entry(log, 2, "w0")
    assert verify_log(log.lines(), witness_proofs=[approval]).witness_approvals == {
        approval["proof"][0]["verificationMethod"].split("#")[0]: 2
    }
    for proofs, message in (
        ({"versionId": approval["versionId"]}, "did-witness.json must be a JSON array"),
        ([approval["versionId"]], "witness entry needs versionId and proof"),
        ([{"proof": approval["proof"]}], "witness entry needs versionId and proof"),
        ([{**approval, "proof": "signed"}], "witness entry needs versionId and proof"),
        ([{**approval, "proof": [7]}], "a witness proof is a JSON object"),
    ):
        refused = _refused(log.lines(), witness_proofs=proofs)
        assert (type(refused), refused.code, str(refused)) == (
            InvalidInput,
            "webvh_malformed_witness",
            message,
        )


def test_a_single_witness_proof_object_counts_and_an_approval_outside_the_log_does_not() -> None:
    from tests._support.webvh import witness_entry

    log = make_plain_log(witnesses=1, threshold=1)
    approval = witness_entry(log, 2, "w0")
    single = {**approval, "proof": approval["proof"][0]}
    assert verify_log(log.lines(), witness_proofs=[single]).witnessed
    refused = _refused(log.lines()[:1], witness_proofs=[approval])  # approves a version this log lacks
    assert (type(refused), refused.code, refused.fields) == (
        VerificationError,
        "webvh_witness_threshold",
        {"version": 1, "approvals": 0, "threshold": 1},
    )


# -- pre-rotation -------------------------------------------------------------------------------------


@pytest.mark.parametrize("keys", [None, []], ids=["absent", "empty"])
def test_an_entry_after_a_commitment_must_rotate_its_update_keys(keys: Any) -> None:
    first, second = make_prerotation_log().lines()[:2]

    def rotate(entry: dict[str, Any]) -> None:
        if keys is None:
            del entry["parameters"]["updateKeys"]
        else:
            entry["parameters"]["updateKeys"] = keys

    rotate(second)
    second["versionId"] = "2-" + entry_hash(second, first["versionId"])
    refused = _refused([first, second])
    assert (type(refused), refused.code, refused.fields) == (
        UntrustedKeyError,
        "webvh_prerotation_violation",
        {"version": 2},
    )
    assert str(refused) == "pre-rotation is active but the entry does not rotate its update keys"


def test_a_portable_did_may_move() -> None:
    log = make_plain_log(portable=True, second_did="did:webvh:{SCID}:moved.example:dids:alice")
    assert verify_log(log.lines()).entries[1].state["id"].split(":")[3] == "moved.example"


def test_the_witness_rule_in_force_for_an_entry_is_the_previous_entrys() -> None:
    """§3.7.9: entry 2 that drops the witness rule still needs the approval entry 1's rule asks for."""
    from tests._support.webvh import witness_entry

    log = make_plain_log(witnesses=1, threshold=1, second_params={"witness": {}})
    refused = _refused(log.lines(), witness_proofs=[witness_entry(log, 1, "w0")])
    assert (type(refused), refused.code, refused.fields) == (
        VerificationError,
        "webvh_witness_threshold",
        {"version": 2, "approvals": 0, "threshold": 1},
    )
    assert verify_log(log.lines(), witness_proofs=[witness_entry(log, 2, "w0")]).witnessed


def test_no_approval_at_all_is_no_approval() -> None:
    log = make_plain_log(witnesses=1, threshold=1)
    refused = _refused(log.lines(), witness_proofs=[])
    assert refused.fields == {"version": 1, "approvals": 0, "threshold": 1}


def test_the_witness_file_is_read_from_text_or_bytes_strictly() -> None:
    text = '[{"versionId": "1-Qm", "proof": []}]'
    assert witness_json(text) == witness_json(text.encode()) == [{"versionId": "1-Qm", "proof": []}]
    with pytest.raises(InvalidInput) as caught:
        witness_json('[{"a": 1, "a": 2}]')
    assert caught.value.code == "duplicate_key"


def test_a_log_built_by_hand_is_not_witnessed_unless_said() -> None:
    assert (VerifiedLog("QmScid", ()).witnessed, VerifiedLog("QmScid", ()).witness_approvals) == (False, {})


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_the_first_entry_read_for_its_scid_nests_64_levels_at_most() -> None:
    """Entries handed to verify_log directly (not read by parse_log) meet the same depth cap."""
    deep = _first(_REQUIRED)[0]
    deep["state"]["x"] = _nested(62)  # the entry, the state and 62 lists: 64 levels
    assert _refused([deep]).code == "webvh_scid_mismatch"
    deep["state"]["x"] = _nested(63)
    refused = _refused([deep])
    assert (refused.code, refused.fields["limit"]) == ("too_deep", 64)


def test_the_first_entry_read_for_its_scid_is_at_most_512_kib() -> None:
    entry = _first(_REQUIRED)[0]
    entry["state"]["x"] = ""
    unsigned = {name: value for name, value in entry.items() if name != "proof"}
    unsigned["versionId"] = "QmScid"
    size = len(canonicalize(unsigned))  # "{SCID}" has as many characters as the SCID "QmScid"
    entry["state"]["x"] = "x" * (512 * 1024 - size)
    assert _refused([entry]).code == "webvh_scid_mismatch"
    entry["state"]["x"] += "x"
    refused = _refused([entry])
    assert (refused.code, refused.fields) == ("too_large", {"limit": 512 * 1024})


def test_a_witness_rule_of_threshold_zero_asks_for_nothing() -> None:
    log = make_plain_log(first_params={"witness": {"threshold": 0, "witnesses": []}})
    verified = verify_log(log.lines())
    assert (verified.witnessed, verified.witness_approvals) == (False, {})


def test_a_portable_log_may_say_so_again() -> None:
    log = make_plain_log(portable=True, second_params={"portable": True})
    assert verify_log(log.lines()).entries[1].parameters["portable"] is True


def test_the_witness_file_nests_32_levels_at_most() -> None:
    assert witness_json(json.dumps(_nested(32))) == _nested(32)  # 32 arrays, one inside the other
    with pytest.raises(InvalidInput) as caught:
        witness_json(json.dumps(_nested(33)))
    assert (caught.value.code, caught.value.fields["limit"]) == ("too_deep", 32)
