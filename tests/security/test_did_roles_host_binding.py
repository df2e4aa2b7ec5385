"""A did:web pattern with a path wildcard keeps its host exact.

Found by the mutation check (``bash scripts/mutation.sh --module _did_roles.py``): with the host
comparison of a non-wildcard host removed, no existing test failed, yet ``did:web:example.com:*``
would then grant its roles to ``did:web:evil.example:…`` — any host at all.
"""

from __future__ import annotations

from mudrika.trust.policy._did_roles import DidRoleTable


def test_a_path_wildcard_pattern_grants_nothing_to_another_host() -> None:
    """``did:web:agents.example.com:*`` matches paths below that host only, never another host's."""
    table = DidRoleTable({"did:web:agents.example.com:*": (["reader"], ["acme"])})
    grant = table.grant_for("did:web:agents.example.com:billing")
    assert grant is not None
    assert grant.roles == frozenset({"reader"})
    assert table.grant_for("did:web:evil.example:billing") is None
    assert table.grant_for("did:web:agents.example.com.evil.example:billing") is None
