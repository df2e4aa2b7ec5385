"""One async naming style across the package, checked on every module's AST.

Why a test: a sync function and its async twin must be findable from each other.  The house style is
the standard library's and httpx's (``close``/``aclose``, ``read``/``aread``): the async twin is the
sync name with an ``a`` prefix and nothing else (``verify``/``averify``, ``key_for``/``akey_for``).
Two other spellings had crept in (``a_verify``, ``_get_async``); this keeps them out.  A coroutine with
no sync twin (an ASGI ``send``, a middleware step) keeps its plain name.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "mudrika"


def _is_banned_spelling(name: str) -> bool:
    bare = name.lstrip("_")
    return bare.startswith(("a_", "async_")) or bare.endswith("_async")


def _offences(source: str, where: str) -> list[str]:
    tree = ast.parse(source, filename=where)
    return [
        f"{where}:{node.lineno} async def {node.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.AsyncFunctionDef) and _is_banned_spelling(node.name)
    ]


def test_async_twins_are_named_with_a_bare_a_prefix() -> None:
    offences = [
        offence
        for path in sorted(SRC.rglob("*.py"))
        for offence in _offences(path.read_text(encoding="utf-8"), str(path.relative_to(SRC.parent)))
    ]
    assert offences == []


def test_the_rule_sees_every_banned_spelling() -> None:
    """The walk itself is checked: each spelling it must refuse is found, the house one is not."""
    source = (
        "class C:\n"
        "    async def a_verify(self): ...\n"
        "    async def _get_async(self): ...\n"
        "    async def async_fetch(self): ...\n"
        "    async def averify(self): ...\n"
        "async def _arefresh(): ...\n"
    )
    assert [line.split()[-1] for line in _offences(source, "m.py")] == [
        "a_verify",
        "_get_async",
        "async_fetch",
    ]
