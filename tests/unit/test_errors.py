"""The error tree: each class owns one stable code, named in its header, and no two share one."""

from __future__ import annotations

import ast
import types

import pytest

from mudrika import errors
from mudrika.trust import jsonrpc
from tests._support.paths import REPO_ROOT


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


#: DID Resolution error codes that state a fact about the DID (its document is absent or unusable),
#: and the one that says the resolver could not finish.
_DOCUMENT_CODES = frozenset(
    {"notFound", "invalidDidDocument", "methodNotSupported", "representationNotSupported"}
)
_FETCH_CODES = frozenset({"internalError"})


def _raised_codes(class_name: str) -> list[tuple[str, int, str]]:
    """Every ``<class_name>(..., code="...")`` in src/: (file, line, code)."""
    found: list[tuple[str, int, str]] = []
    for path in sorted((REPO_ROOT / "src" / "mudrika").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == class_name
            ):
                continue
            for keyword in node.keywords:
                if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                    found.append((path.name, node.lineno, str(keyword.value.value)))
    return found


def test_an_absent_document_is_a_deny_and_only_could_not_fetch_is_an_outage() -> None:
    """The red team's finding: notFound raised as an UnavailableError read as 503 "retry later".
    Every raise site in src/ must put each DID Resolution code on its side of the tree."""
    assert issubclass(errors.DocumentError, errors.VerificationError)
    assert not issubclass(errors.DocumentError, errors.UnavailableError)
    assert issubclass(errors.ResolutionError, errors.UnavailableError)
    assert not issubclass(errors.ResolutionError, errors.VerificationError)
    document = _raised_codes("DocumentError")
    fetch = _raised_codes("ResolutionError")
    assert {code for _, _, code in document} == _DOCUMENT_CODES  # every document code is raised somewhere
    assert [site for site in fetch if site[2] not in _FETCH_CODES] == []
    assert [site for site in document if site[2] not in _DOCUMENT_CODES] == []
