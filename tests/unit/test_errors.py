"""The error tree: each class owns one stable code, named in its header, and no two share one."""

from __future__ import annotations

import types

import pytest

from mudrika import errors
from mudrika.trust import jsonrpc


def _every_subclass(root: type[errors.MudrikaError]) -> list[type[errors.MudrikaError]]:
    found: list[type[errors.MudrikaError]] = []
    pending = [root]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub not in found:
                found.append(sub)
                pending.append(sub)
    return found


def test_every_public_error_class_has_its_own_code() -> None:
    public = [getattr(errors, name) for name in errors.__all__] + [
        jsonrpc.AuthenticationRequired,
        jsonrpc.InvalidToken,
        jsonrpc.TokenExpired,
        jsonrpc.InvalidSignature,
        jsonrpc.InsufficientPermissions,
    ]
    codes = [cls.default_code for cls in public]
    assert len(set(codes)) == len(codes)
    assert errors.ReplayError("again").code == "replay"
    assert errors.NotYetValidError("later").code == "not_yet_valid"
    assert jsonrpc.TokenExpired("old").code == "token_expired"


def test_no_two_classes_in_the_tree_share_a_code() -> None:
    coded = [cls for cls in _every_subclass(errors.MudrikaError) if "default_code" in vars(cls)]
    codes = [cls.default_code for cls in coded]
    assert len(coded) >= 19
    assert len(set(codes)) == len(codes)


def test_a_second_class_cannot_claim_a_taken_code() -> None:
    with pytest.raises(TypeError, match="'replay' already belongs to ReplayError"):

        class AnotherReplay(errors.VerificationError, code="replay"):
            """Would make ``code == "replay"`` ambiguous for every caller matching on it."""


def test_a_module_reloaded_in_place_may_define_its_classes_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(errors.MudrikaError._code_owners, "replay", errors.ReplayError)
    reloaded = types.new_class(
        "ReplayError",
        (errors.VerificationError,),
        {"code": "replay"},
        lambda namespace: namespace.update(__module__="mudrika.errors"),
    )
    assert reloaded is not errors.ReplayError
    assert reloaded("again").code == "replay"


def test_a_subclass_without_a_code_inherits_its_parents() -> None:
    class NarrowerReplay(errors.ReplayError):
        """Narrows the type for one caller but keeps the family's code."""

    assert NarrowerReplay("x").code == "replay"
    assert NarrowerReplay("x", code="jti_reused").code == "jti_reused"


def test_the_http_status_of_an_auth_error_comes_from_the_status_table() -> None:
    for cls in (jsonrpc.TokenExpired, jsonrpc.InsufficientPermissions):
        assert cls.http_status == jsonrpc.http_status_for(cls.jsonrpc_code)
