"""Boundaries of the ``did_roles`` table that the mutation check found unpinned.

Why: each test here fails if one small change to ``trust/policy/_did_roles.py`` is made — a limit
moved by one, a refusal dropped, a comparison loosened — that no other test noticed
(``bash scripts/mutation.sh --module trust/policy/_did_roles.py``).  They pin what a policy author
and an attacker can observe: which patterns load, what is granted to which DID, the refusal's code
and the fields it carries.
"""

from __future__ import annotations

import pytest

from mudrika.errors import InvalidInput
from mudrika.identity.did import MAX_DID_URL_LENGTH
from mudrika.trust.policy._did_roles import DidRoleTable

READER = (["reader"], ["acme"])
KEY_DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
#: The number of entries a policy file may hold, and of DIDs the per-table memo remembers (the
#: documented limits, written out so that moving either is a visible change).
MAX_ENTRIES = 10_000
MEMO_LIMIT = 4096
_LONG = "a" * 250


def _refusal(entries: dict[str, tuple[list[str], list[str]]]) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        DidRoleTable(entries)
    assert caught.value.code == "invalid_policy"
    return caught.value


# --- how many entries ------------------------------------------------------------------------------


def test_a_table_of_exactly_the_maximum_entries_loads() -> None:
    entries = {f"did:web:agent{i}.example.com": READER for i in range(MAX_ENTRIES)}
    table = DidRoleTable(entries)
    assert len(table) == MAX_ENTRIES
    assert table.grant_for(f"did:web:agent{MAX_ENTRIES - 1}.example.com") is not None


def test_one_entry_over_the_maximum_is_refused_with_the_limit() -> None:
    entries = {f"did:web:agent{i}.example.com": READER for i in range(MAX_ENTRIES + 1)}
    refusal = _refusal(entries)
    assert refusal.fields["limit"] == MAX_ENTRIES


def test_the_table_counts_exact_entries_and_patterns() -> None:
    table = DidRoleTable({KEY_DID: READER, "did:web:a.example.com": READER, "did:web:*.example.com": READER})
    assert len(table) == 3


# --- what a refusal carries ---------------------------------------------------------------------------

# Every refusal at load names the offending entry, cut to its first 200 characters: enough to find
# it in the file, never a log line the size of the policy.
_LONG_REFUSALS = [
    pytest.param("did:web:*." + _LONG, id="host-not-a-dns-name"),
    pytest.param("did:web:*.example.com:" + _LONG + ":a*b", id="star-inside-a-segment"),
    pytest.param("did:web:*.example.com%3A" + "9" * 250, id="port-not-digits"),
    pytest.param("did:web:*.example.com:" + _LONG + ":%2E%2E", id="encoded-dot-segment"),
    pytest.param("not-a-did:" + _LONG + "*", id="pattern-not-a-did"),
    pytest.param("did:key:z6Mk" + _LONG + "*", id="star-in-did-key"),
    pytest.param("no-did-at-all-" + _LONG, id="exact-key-not-a-did"),
    pytest.param("did:web:example.com:" + _LONG + ":%2E%2E", id="exact-key-encoded-dot-segment"),
]


@pytest.mark.parametrize("pattern", _LONG_REFUSALS)
def test_a_refused_entry_is_named_by_its_first_200_characters(pattern: str) -> None:
    assert len(pattern) > 201
    refusal = _refusal({pattern: READER})
    assert refusal.fields["pattern"] == pattern[:200]


def test_a_star_in_a_did_key_is_refused_as_matched_only_exactly() -> None:
    """The refusal tells the author why: did:key is self-certifying, so never a pattern."""
    with pytest.raises(InvalidInput, match="only did:web DIDs may use"):
        DidRoleTable({"did:key:z6Mk*": READER})


def test_a_star_in_something_that_is_no_did_is_refused_as_not_a_did() -> None:
    with pytest.raises(InvalidInput, match="is not a DID") as caught:
        DidRoleTable({"agents*": READER})
    assert caught.value.code == "invalid_policy"


# --- ports --------------------------------------------------------------------------------------------


def test_a_host_wildcard_with_a_port_grants_that_port_only() -> None:
    table = DidRoleTable({"did:web:*.example.com%3A8443": READER})
    grant = table.grant_for("did:web:agent.example.com%3A8443")
    assert grant is not None
    assert grant.roles == frozenset({"reader"})
    assert table.grant_for("did:web:agent.example.com") is None
    assert table.grant_for("did:web:agent.example.com%3A8444") is None


# --- hosts and paths ------------------------------------------------------------------------------------


def test_a_host_wildcard_never_grants_to_a_host_that_is_only_the_dot_suffix() -> None:
    """``did:web:.example.com`` parses as a DID; ``*.example.com`` needs at least one label before."""
    table = DidRoleTable({"did:web:*.example.com": READER})
    assert table.grant_for("did:web:.example.com") is None
    assert table.grant_for("did:web:a.example.com") is not None


def test_a_host_wildcard_with_a_fixed_path_grants_that_path_exactly() -> None:
    table = DidRoleTable({"did:web:*.example.com:agents": READER})
    assert table.grant_for("did:web:a.example.com:agents") is not None
    assert table.grant_for("did:web:a.example.com") is None
    assert table.grant_for("did:web:a.example.com:agents:more") is None


def test_a_pattern_loads_when_a_did_it_matches_fits_the_did_length_limit() -> None:
    """The pattern is checked as the DID it matches with the wildcard read as one label,
    ``wildcard``: a pattern whose matching DID ``did:web:wildcard.…`` is exactly the longest DID
    loads and grants to that DID."""
    prefix, suffix = "did:web:", ".example.com:"
    filler = "a" * (MAX_DID_URL_LENGTH - len(prefix + "wildcard" + suffix))
    table = DidRoleTable({prefix + "*" + suffix + filler: READER})
    longest = prefix + "wildcard" + suffix + filler
    assert len(longest) == MAX_DID_URL_LENGTH
    assert table.grant_for(longest) is not None


def test_a_path_wildcard_grants_nothing_to_an_encoded_dot_segment() -> None:
    """``%2E%2E`` is ``..`` to a web server: it never matches ``agents:*``."""
    table = DidRoleTable({"did:web:example.com:agents:*": READER})
    assert table.grant_for("did:web:example.com:agents:%2E%2E") is None
    assert table.grant_for("did:web:example.com:agents:%2e%2e:users") is None
    assert table.grant_for("did:web:example.com:agents:billing") is not None


# --- exact entries --------------------------------------------------------------------------------------


def test_did_key_entries_match_case_sensitively() -> None:
    """A did:key is key material: a DID differing in one letter's case is another key, and never
    the did:web whose host happens to spell the same letters."""
    table = DidRoleTable({KEY_DID: READER})
    assert table.grant_for(KEY_DID) is not None
    assert table.grant_for(KEY_DID.replace("z6Mk", "z6mk")) is None
    assert table.grant_for("did:web:" + KEY_DID.removeprefix("did:key:").lower()) is None


def test_did_web_hosts_match_case_insensitively_and_paths_exactly() -> None:
    table = DidRoleTable({"did:web:Agents.Example.com:Team": READER})
    assert table.grant_for("did:web:agents.example.COM:Team") is not None
    assert table.grant_for("did:web:agents.example.com:team") is None


# --- the per-DID memo --------------------------------------------------------------------------------


def test_the_memo_of_answered_dids_stays_bounded() -> None:
    """Any caller can mint did:key identities, so the answers remembered are capped at 4096 DIDs:
    the table's memory must not grow with the number of distinct callers.  Below the cap every
    answer is kept (the memo's purpose: a DID is parsed and matched once).  The memo is private, and
    its size is the behaviour under test: no public answer differs when it is cleared."""
    table = DidRoleTable({"did:web:*.example.com": READER})
    first = table.grant_for("did:web:a.example.com")
    assert table.grant_for("did:web:a.example.com") is first  # answered from the memo
    table.grant_for("did:web:b.example.com")
    assert len(table._memo) == 2
    for i in range(MEMO_LIMIT + 10):
        table.grant_for(f"did:web:agent{i}.example.com")
        assert len(table._memo) <= MEMO_LIMIT
    assert table.grant_for("did:web:a.example.com") is not None
