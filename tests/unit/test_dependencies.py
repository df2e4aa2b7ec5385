"""Every runtime dependency is imported by src for its role, and src imports nothing undeclared.

Why a test: a dependency nobody imports is attack surface and install weight for nothing (PyJWT sat in
the runtime list unused), and a module src imports without declaring it works on a developer's machine
and fails on a user's.  Both directions are read from pyproject.toml and the AST of every src module.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

#: Distributions whose import name is not their normalised distribution name.
IMPORT_NAMES: dict[str, str] = {"python-keycloak": "keycloak", "pyyaml": "yaml", "pyjwt": "jwt"}

#: Modules src imports that no runtime requirement names directly, with the declared distribution that
#: brings them and why src touches them.
PROVIDED_BY: dict[str, str] = {
    # Its PydanticCustomError is how a field validator reports a typed error.
    "pydantic_core": "pydantic",
    # python-keycloak's synchronous transport; trust/keycloak mounts an adapter on it to route it via httpx.
    "requests": "python-keycloak",
}

#: Imported only inside a function that runs under the caller's own framework (an a2a-sdk executor; an
#: MCP SDK server, with the Starlette it is built on; the Dask cluster an analyst names with
#: ``dispute verify --scheduler``): the caller installed it, mudrika never needs it otherwise.
CALLER_PROVIDED: frozenset[str] = frozenset({"a2a", "mcp", "starlette", "distributed"})

#: Imported only by ``mudrika demo`` (src/mudrika/cli/_demo/, loaded inside the command), from the
#: ``demo`` extra: module -> the distribution of that extra that brings it.  ``mudrika demo`` names the
#: extra when one is missing.
DEMO_EXTRA: dict[str, str] = {
    "a2a": "a2a-sdk",
    "google": "a2a-sdk",  # google.protobuf: a2a-sdk's message types
    "starlette": "starlette",
    "uvicorn": "uvicorn",
}
DEMO_PACKAGE = "src/mudrika/cli/_demo/"
#: Other commands that serve over uvicorn (loaded inside the command): `directory serve`.
SERVING_COMMANDS = ("src/mudrika/cli/directory.py",)


def _demo_only(module: str) -> bool:
    files = IMPORTED.get(module, set())
    return (
        module in DEMO_EXTRA
        and bool(files)
        and all(f.startswith(DEMO_PACKAGE) or f in SERVING_COMMANDS for f in files)
    )


def _runtime_requirements() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        requirements = tomllib.load(handle)["project"]["dependencies"]
    assert isinstance(requirements, list)
    return [str(item) for item in requirements]


def _distribution(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _import_name(distribution: str) -> str:
    return IMPORT_NAMES.get(distribution, distribution.replace("-", "_"))


def _imported_top_level_modules() -> dict[str, set[str]]:
    """Top-level module → the src files importing it (absolute imports, wherever they stand)."""
    found: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(relative)
    return found


IMPORTED = _imported_top_level_modules()
DECLARED = [_distribution(requirement) for requirement in _runtime_requirements()]


def test_the_requirements_were_read() -> None:
    assert {"cryptography", "pydantic", "click"} <= set(DECLARED)


def test_pyjwt_is_not_a_runtime_dependency() -> None:
    # Nothing in src imports jwt; the tests that talk to PyJWT-based peers declare it in [test].
    assert "pyjwt" not in DECLARED
    assert "jwt" not in IMPORTED


@pytest.mark.parametrize("distribution", DECLARED)
def test_every_runtime_dependency_is_imported_by_src(distribution: str) -> None:
    module = _import_name(distribution)
    assert module in IMPORTED, f"{distribution} is declared but src never imports {module}"


def test_src_imports_only_declared_distributions() -> None:
    declared_modules = {_import_name(distribution) for distribution in DECLARED}
    third_party = {
        module for module in IMPORTED if module not in sys.stdlib_module_names and module != "mudrika"
    }
    undeclared = sorted(
        module
        for module in third_party
        if module not in declared_modules
        and module not in PROVIDED_BY
        and module not in CALLER_PROVIDED
        and not _demo_only(module)
    )
    assert undeclared == [], f"src imports undeclared modules: {undeclared}"


@pytest.mark.parametrize(("module", "owner"), sorted(PROVIDED_BY.items()))
def test_a_transitive_module_comes_with_a_declared_owner(module: str, owner: str) -> None:
    assert owner in DECLARED
    requirements = importlib.metadata.requires(owner) or []
    assert any(_distribution(requirement) == _distribution(module) for requirement in requirements), (
        f"{owner} does not require {module}"
    )
    assert module in IMPORTED, f"{module} is listed as used but src no longer imports it"


def _module_level_imports(path: Path) -> set[str]:
    """Top-level modules imported by statements that run when ``path`` is imported."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("module", sorted(CALLER_PROVIDED))
def test_caller_provided_modules_are_imported_lazily(module: str) -> None:
    # mudrika must import without a module only the caller's framework brings.
    eager = sorted(
        relative
        for relative in IMPORTED.get(module, set())
        if module in _module_level_imports(ROOT / relative) and not relative.startswith(DEMO_PACKAGE)
    )
    assert eager == []


def test_demo_extra_modules_come_from_the_demo_extra() -> None:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        extra = tomllib.load(handle)["project"]["optional-dependencies"]["demo"]
    assert set(DEMO_EXTRA.values()) <= {_distribution(requirement) for requirement in extra}
    for module in DEMO_EXTRA:
        outside = sorted(
            f
            for f in IMPORTED.get(module, set())
            if not (f.startswith(DEMO_PACKAGE) or f in SERVING_COMMANDS)
        )
        assert module in CALLER_PROVIDED or outside == [], f"{module} is imported outside the demo: {outside}"
