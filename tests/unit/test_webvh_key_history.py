"""A did:webvh log read as key windows: the tests the mutation check of
``identity/methods/webvh/_history.py`` showed missing.

A dispute judges a merchant's signature as of the day it was made with these windows, so each is
pinned exactly: from the ``versionTime`` of the version that listed a key under ``assertionMethod``
until that of the first version that no longer did (or deactivated the DID).  The logs are built
here as verified entries (the log's own rules are ``test_webvh_mutants.py``'s); only what the
history reads of them is set.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mudrika.errors import InvalidInput
from mudrika.identity.methods.webvh import LogEntry, VerifiedLog, assertion_key_history

DID = "did:webvh:QmScid:shop.example"
MOVED = "did:webvh:QmScid:moved.example"
T1 = datetime(2025, 3, 1, tzinfo=UTC)


def _method(fragment: str, multibase: str, *, did: str = DID, relative: bool = True) -> dict[str, Any]:
    return {
        "id": f"#{fragment}" if relative else f"{did}#{fragment}",
        "type": "Multikey",
        "controller": did,
        "publicKeyMultibase": multibase,
    }


def _state(*methods: dict[str, Any], did: str = DID, assertion: list[Any] | None = None) -> dict[str, Any]:
    return {
        "id": did,
        "verificationMethod": list(methods),
        "assertionMethod": assertion if assertion is not None else [method["id"] for method in methods],
    }


def _log(*states: dict[str, Any], deactivated_at: int | None = None) -> VerifiedLog:
    entries = tuple(
        LogEntry(
            version_id=f"{number}-Qm{number}",
            version_number=number,
            version_time=T1 + timedelta(days=30 * (number - 1)),
            version_time_text="",
            parameters={"deactivated": True} if number == deactivated_at else {},
            changes={},
            state=state,
            proofs=(),
        )
        for number, state in enumerate(states, start=1)
    )
    return VerifiedLog(scid="QmScid", entries=entries)


def _day(number: int) -> datetime:
    return T1 + timedelta(days=30 * (number - 1))


def _refusal(log: VerifiedLog, did: str = DID) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        assertion_key_history(did, log)
    assert caught.value.code == "webvh_history_unusable"
    return caught.value


def test_each_key_has_the_window_in_which_the_log_listed_it() -> None:
    one, two = _method("key-1", "z6MkOne"), _method("key-2", "z6MkTwo", relative=False)
    history = assertion_key_history(DID, _log(_state(one), _state(one), _state(two)))
    assert dict(history.windows) == {DID + "#key-1": (_day(1), _day(3)), DID + "#key-2": (_day(3), None)}
    assert history.document == {
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": DID,
        "verificationMethod": [{**one, "id": DID + "#key-1"}, {**two, "id": DID + "#key-2"}],
        "assertionMethod": [DID + "#key-1", DID + "#key-2"],
    }


def test_deactivation_ends_every_window() -> None:
    one = _method("key-1", "z6MkOne")
    history = assertion_key_history(DID, _log(_state(one), _state(one), deactivated_at=2))
    assert dict(history.windows) == {DID + "#key-1": (_day(1), _day(2))}


def test_an_embedded_assertion_method_counts_and_other_items_are_not_keys() -> None:
    one, embedded = _method("key-1", "z6MkOne"), _method("key-9", "z6MkNine")
    state = _state(
        one,
        "#not-a-method-object",  # type: ignore[arg-type]
        {"id": 5},
        assertion=["#key-1", embedded, 7, {"id": 7}, {"type": "Multikey"}],
    )
    history = assertion_key_history(DID, _log(state))
    assert sorted(history.windows) == [DID + "#key-1", DID + "#key-9"]


def test_an_assertion_reference_its_document_does_not_define_is_refused() -> None:
    refused = _refusal(_log(_state(_method("key-1", "z6MkOne"), assertion=["#key-2"])))
    assert str(refused) == "version 1 lists an assertion key its document does not define"


def test_a_key_that_leaves_and_comes_back_is_refused() -> None:
    one, two = _method("key-1", "z6MkOne"), _method("key-2", "z6MkTwo")
    refused = _refusal(_log(_state(one), _state(two), _state(one)))
    assert str(refused) == f"the key {DID}#key-1 left the DID document and came back: pin it with key_windows"


@pytest.mark.parametrize(
    "change",
    [{"publicKeyMultibase": "z6MkOther"}, {"type": "JsonWebKey"}, {"publicKeyJwk": {"kty": "OKP"}}],
    ids=["multibase", "type", "jwk"],
)
def test_a_key_id_that_names_other_material_later_is_refused(change: dict[str, Any]) -> None:
    one = _method("key-1", "z6MkOne")
    refused = _refusal(_log(_state(one), _state({**one, **change})))
    assert str(refused) == f"the key id {DID}#key-1 names other key material in a later version"


def test_the_same_material_listed_again_is_one_key() -> None:
    one = _method("key-1", "z6MkOne")
    again = {**one, "controller": DID + "?versionId=2"}  # not key material
    history = assertion_key_history(DID, _log(_state(one), _state(again)))
    assert dict(history.windows) == {DID + "#key-1": (_day(1), None)}


def test_only_the_versions_whose_document_is_this_did_count() -> None:
    one, moved = _method("key-1", "z6MkOne"), _method("key-1", "z6MkMoved", did=MOVED)
    log = _log(_state(one), _state(moved, did=MOVED))
    assert dict(assertion_key_history(DID, log).windows) == {DID + "#key-1": (_day(1), None)}
    assert dict(assertion_key_history(MOVED, log).windows) == {MOVED + "#key-1": (_day(2), None)}
    refused = _refusal(log, "did:webvh:QmScid:elsewhere.example")
    assert str(refused) == "no version of the log is this DID's document"
