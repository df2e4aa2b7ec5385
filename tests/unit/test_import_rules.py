"""The import rules of docs/architecture.md, checked by walking every module's AST.

Why a test and not a convention: the offline dispute verifier must never pull in the middleware, and
a cycle between two wings is how a layered package silently turns into one ball.  The rules:

1. Imports point down only: ``cli`` → ``identity`` / ``trust`` / ``payments`` → ``crypto`` (+ ``errors``);
   ``trust`` and ``payments`` may use ``identity`` and ``stores``; ``identity`` uses neither ``trust``
   nor ``payments``; nothing imports ``cli``.
2. ``payments`` and ``trust`` never import each other.
3. No module imports another that (directly or through others) imports it back, and no module
   imports the ``__init__`` of the package it belongs to.
4. Private means private: a module whose name starts with ``_`` is imported only by modules of the
   package that holds it (sub-packages included), and a private name only within its package.

Every ``import`` statement counts, wherever it stands (module level, inside a function, under
``TYPE_CHECKING``): a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "mudrika"

#: What each wing may import (besides itself).  ``errors`` is the floor every wing stands on.
ALLOWED: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "crypto": frozenset({"errors"}),
    "net": frozenset({"errors"}),
    "stores": frozenset({"errors"}),
    "identity": frozenset({"errors", "crypto", "net"}),
    "trust": frozenset({"errors", "crypto", "identity", "stores", "net"}),
    "payments": frozenset({"errors", "crypto", "identity", "stores", "net"}),
    "cli": frozenset({"errors", "crypto", "identity", "trust", "payments", "stores", "net", ""}),
    # The package root re-exports the error tree (and, lazily, the A2A auth errors of trust).
    "": frozenset({"errors", "trust"}),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted((SRC / PACKAGE).rglob("*.py"))}


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve_from(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str) -> Iterator[str]:
    """Every mudrika module ``module`` imports (a submodule named in ``from pkg import sub`` included)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            target = _resolve_from(module, node)
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield sub if sub in MODULES else target


def _wing(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _with_parent_packages(module: str, targets: set[str]) -> set[str]:
    """Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first: those are edges too."""
    edges = set(targets)
    for target in targets:
        parts = target.split(".")
        for depth in range(2, len(parts)):
            parent = ".".join(parts[:depth])
            if not (module == parent or module.startswith(parent + ".")):
                edges.add(parent)
    return edges


GRAPH: dict[str, set[str]] = {name: _with_parent_packages(name, set(imports_of(name))) for name in MODULES}


def test_every_import_names_an_existing_module() -> None:
    missing = sorted((src, dst) for src, dsts in GRAPH.items() for dst in dsts if dst not in MODULES)
    assert missing == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    wing = _wing(module)
    upward = sorted(dst for dst in GRAPH[module] if _wing(dst) != wing and _wing(dst) not in ALLOWED[wing])
    assert upward == [], f"{module} ({wing or 'root'}) may import only {sorted(ALLOWED[wing])}"


def test_payments_and_trust_never_import_each_other() -> None:
    crossing = sorted(
        (src, dst)
        for src, dsts in GRAPH.items()
        for dst in dsts
        if {_wing(src), _wing(dst)} == {"payments", "trust"}
    )
    assert crossing == []


def test_no_module_imports_its_own_package_init() -> None:
    inward = sorted(
        (src, dst)
        for src, dsts in GRAPH.items()
        for dst in dsts
        if _is_package(dst)
        and src != dst
        and src.startswith(dst + ".")
        and not _is_package(src)
        and src.rsplit(".", 1)[0] == dst
    )
    assert inward == []


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph has a few hundred nodes)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
            elif child not in graph:
                continue
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def test_no_import_cycles() -> None:
    # A package's __init__ re-exporting its own submodules is the one expected back-edge: drop the
    # edges from an __init__ into its own subtree before looking for cycles.
    graph = {
        src: {dst for dst in dsts if not (_is_package(src) and dst.startswith(src + "."))}
        for src, dsts in GRAPH.items()
    }
    cycles = [component for component in _strongly_connected(graph) if len(component) > 1]
    assert cycles == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [c for c in _strongly_connected(graph) if len(c) > 1] == [["a", "b", "c"]]


def test_the_rules_see_a_planted_upward_import(tmp_path: Path) -> None:
    tree = ast.parse("from mudrika.trust.policy import Policy\n")
    node = tree.body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _wing(_resolve_from("mudrika.crypto.keys", node)) == "trust"
    assert "trust" not in ALLOWED["crypto"]


#: Key lookups a verdict could rest on: a DID document's ``key_for``, a resolver's ``resolve_key`` and
#: ``aresolve_key``.  Only the anchoring rule's home (and the pieces it is built from) may call them;
#: everything else asks :mod:`mudrika.identity.anchoring`.  The exceptions are named with why.
_KEY_LOOKUPS = frozenset({"key_for", "resolve_key", "aresolve_key"})
_MAY_LOOK_KEYS_UP = {
    "mudrika.identity.anchoring": "the anchoring rule itself",
    "mudrika.identity.resolver._resolver": "DIDResolver.resolve_key, the resolver's own API",
    "mudrika.identity.document": "DIDDocument.key_for, the relationship lookup the rule uses",
    "mudrika.cli._keycheck": "an operator checking their own signing key against their DID, not a verdict",
    "mudrika.trust.keycloak.tokens": "JwksCache.key_for: the configured issuer's JWKS, by kid (RFC 9068)",
    "mudrika.trust.keycloak.jwks": "JwksCache.key_for itself",
    "mudrika.trust.a2a.cards": "DidKeyTrust.key_for, which applies the anchoring rule",
    "mudrika.trust.a2a.push": "DidKeyTrust.akey_for, which applies the anchoring rule",
}


def _key_lookup_callers() -> set[str]:
    callers: set[str] = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _KEY_LOOKUPS
            ):
                callers.add(name)
    return callers


def test_only_the_anchoring_rule_looks_keys_up() -> None:
    assert _key_lookup_callers() <= set(_MAY_LOOK_KEYS_UP), _key_lookup_callers() - set(_MAY_LOOK_KEYS_UP)


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _owner_of_private(target: str) -> str | None:
    """The package a private module (or anything inside one) belongs to: ``a.b`` for ``a.b._c.d``;
    ``None`` when no part of ``target`` is private."""
    parts = target.split(".")
    for depth, part in enumerate(parts):
        if _is_private(part):
            return ".".join(parts[:depth])
    return None


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def private_import_sites(module: str, tree: ast.AST) -> Iterator[str]:
    """Each import in ``tree`` (the source of ``module``) that reaches into a private module of a
    package ``module`` is not part of, or takes a private name from a module of another package.

    Every statement counts (module level, in a function, under ``TYPE_CHECKING``); ``import a._b``,
    ``from a._b import c``, ``from a import _b`` and relative forms alike."""
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(module, node)
            targets = [base]
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES or _is_private(alias.name):
                    targets.append(sub)
        else:
            continue
        for target in targets:
            if target.split(".")[0] != PACKAGE:
                continue
            owner = _owner_of_private(target)
            if owner is None:
                continue
            if target not in MODULES and _owner_of_private(target.rsplit(".", 1)[0]) is None:
                # A private *name* of a public module: its package is the module's package.
                home = target.rsplit(".", 1)[0]
                owner = home if home in MODULES and _is_package(home) else home.rsplit(".", 1)[0]
            if not _inside(module, owner):
                yield f"{module}:{node.lineno} imports {target}"


def test_private_modules_stay_in_their_package() -> None:
    """A module (or name) whose name starts with ``_`` is used only inside the package that holds it
    (sub-packages included): what another package needs is made public, so a private module can
    change without breaking a caller it never knew about."""
    sites = [
        site
        for name, path in MODULES.items()
        for site in private_import_sites(name, ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert sites == []


@pytest.mark.parametrize(
    ("module", "source", "offends"),
    [
        ("mudrika.payments.v02.hops", "from mudrika.payments.chain._common import Recorder\n", True),
        ("mudrika.payments.v02.hops", "import mudrika.payments.chain._common\n", True),
        ("mudrika.payments.v02.hops", "from mudrika.payments.chain import _common\n", True),
        ("mudrika.payments.v02.hops", "from ..chain._common import Recorder\n", True),
        (
            "mudrika.payments.v02.hops",
            "def f():\n    from mudrika.payments.chain._keys import Anchors\n",
            True,
        ),
        ("mudrika.payments.v02.hops", "from mudrika.payments.chain._verifier import _Chain\n", True),
        ("mudrika.payments.v02.hops", "from mudrika.payments.v02.models import _Strict\n", False),
        ("mudrika.payments.v02.hops", "from mudrika.payments.v02._x5c import validated_x5c_key\n", False),
        ("mudrika.payments.chain._cart", "from mudrika.payments._time import iso\n", False),
        ("mudrika.payments.chain._cart", "from mudrika.payments.report import Recorder\n", False),
        ("mudrika.trust.keycloak.adapters", "from mudrika.trust.policy._realm import RealmRoles\n", True),
        ("mudrika.trust.keycloak.adapters", "from mudrika.payments.v02.models import _Strict\n", True),
    ],
)
def test_the_private_rule_sees_every_form_of_import(module: str, source: str, offends: bool) -> None:
    assert bool(list(private_import_sites(module, ast.parse(source)))) is offends
