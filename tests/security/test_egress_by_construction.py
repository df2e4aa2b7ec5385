"""Every outbound connection mudrika opens goes through the one egress policy: checked on every module.

Why a walk over the source and not only behaviour tests: :class:`mudrika.net.egress.EgressPolicy`
refuses private, loopback, link-local and metadata addresses at the moment a connection is made
(so DNS rebinding and every redirect hop are covered), but only for a client built on its
transport.  The behaviour tests (tests/unit/test_egress.py, tests/security/test_ssrf_attacks.py)
prove that of the fetchers that exist; a *new* fetcher built on a bare ``httpx.Client`` would
bypass the policy and fail none of them.  So the rule is checked where a new consumer would break
it, on every module under ``src/mudrika``:

1. every ``httpx.Client`` / ``httpx.AsyncClient`` takes ``transport=`` from an egress policy (a call
   of ``.transport(...)`` or ``.async_transport(...)``, written in the call or bound to a local
   name in the same function), says ``trust_env=False`` (in the call, or in the options dictionary
   it unpacks, so nothing from the environment -- proxies, ``.netrc`` credentials, CA bundles,
   whichever of them an httpx version reads -- shapes a fetch), and passes no ``mounts=`` /
   ``proxy=`` / ``proxies=`` (a mount takes a request before the transport sees it);
2. those names are reached only as ``httpx.Client`` / ``httpx.AsyncClient`` and nothing that
   opens a connection is imported by its bare name (``from httpx import Client``,
   ``from urllib.request import urlopen``), so the walk sees every use;
3. nothing opens a connection another way: httpx's module-level ``get``/``post``/``stream``
   (each builds its own client), raw transports and connection pools, ``urllib.request``,
   ``http.client``, ``requests``, ``socket`` and asyncio/anyio connections.

The exceptions are listed with their reasons (:data:`EXEMPT`), and the checker is shown to catch a
planted offender of each kind, so a checker that silently stopped looking would fail too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: The httpx client classes whose construction rule 1 checks.
CLIENTS = frozenset({"httpx.Client", "httpx.AsyncClient"})
#: The egress policy's methods that hand out its checking transports.
EGRESS_TRANSPORTS = frozenset({"transport", "async_transport"})
#: Keywords that route requests around the transport.
AROUND_THE_TRANSPORT = frozenset({"mounts", "proxy", "proxies"})

#: Calls that open a connection (or build something that does) without the egress policy: rule 3.
CONNECTING_CALLS = frozenset(
    {
        *(f"httpx.{verb}" for verb in ("get", "post", "put", "patch", "delete", "head", "options")),
        "httpx.request",
        "httpx.stream",
        "httpx.HTTPTransport",
        "httpx.AsyncHTTPTransport",
        "httpcore.ConnectionPool",
        "httpcore.AsyncConnectionPool",
        "httpcore.HTTPConnection",
        "httpcore.AsyncHTTPConnection",
        "urllib.request.urlopen",
        "urllib.request.build_opener",
        "urllib.request.Request",
        "http.client.HTTPConnection",
        "http.client.HTTPSConnection",
        *(f"requests.{verb}" for verb in ("get", "post", "put", "patch", "delete", "head", "options")),
        "requests.request",
        "requests.Session",
        "socket.socket",
        "socket.create_connection",
        "asyncio.open_connection",
        "anyio.connect_tcp",
    }
)
#: Modules whose connection-opening names must be used dotted (rule 2).
CONNECTING_MODULES = frozenset(name.rsplit(".", 1)[0] for name in CONNECTING_CALLS | CLIENTS)

#: module (relative to src) -> the rules it is exempt from, and why.
EXEMPT: dict[str, tuple[frozenset[str], str]] = {
    "mudrika/net/egress.py": (
        frozenset({"connecting-call"}),
        "the policy itself: it resolves names and opens the sockets it has checked",
    ),
    "mudrika/cli/_demo/_run.py": (
        frozenset({"connecting-call"}),
        "binds a listening socket to find a free port for the demo's own servers (nothing outbound)",
    ),
    "mudrika/cli/_demo/_shopper.py": (
        frozenset({"client"}),
        "the demo's shopping agent calls the demo's own servers on 127.0.0.1, which the egress policy "
        "refuses by design; it never fetches a URL an outside party supplies",
    ),
}


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attribute reads on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def _enclosing(
    node: ast.AST, parents: dict[ast.AST, ast.AST], kinds: tuple[type[ast.AST], ...]
) -> ast.AST | None:
    current = parents.get(node)
    while current is not None and not isinstance(current, kinds):
        current = parents.get(current)
    return current


def _bound_values(scope: ast.AST | None, name: str) -> list[ast.expr]:
    """Every value assigned to local ``name`` in the function ``scope``."""
    if scope is None:
        return []
    values: list[ast.expr] = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            if any(isinstance(target, ast.Name) and target.id == name for target in node.targets):
                values.append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            values += [] if node.value is None else [node.value]
    return values


def _is_egress_transport(value: ast.expr, function: ast.AST | None) -> bool:
    if isinstance(value, ast.Name):
        bound = _bound_values(function, value.id)
        return bool(bound) and all(_is_egress_transport(item, None) for item in bound)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in EGRESS_TRANSPORTS
    )


def _says_no_env(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is False


def _dict_says_no_env(value: ast.expr) -> bool:
    return isinstance(value, ast.Dict) and any(
        isinstance(key, ast.Constant) and key.value == "trust_env" and _says_no_env(item)
        for key, item in zip(value.keys, value.values, strict=True)
    )


def _unpacked_says_no_env(value: ast.expr, function: ast.AST | None, owner: ast.AST | None) -> bool:
    """``**value`` holds ``trust_env: False``: a dict literal, a local bound to one, or a method of
    the same class whose every ``return`` is one."""
    if _dict_says_no_env(value):
        return True
    if isinstance(value, ast.Name):
        bound = _bound_values(function, value.id)
        return bool(bound) and all(_dict_says_no_env(item) for item in bound)
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == "self"
        and isinstance(owner, ast.ClassDef)
    ):
        for method in owner.body:
            if isinstance(method, ast.FunctionDef) and method.name == value.func.attr:
                returns = [node.value for node in ast.walk(method) if isinstance(node, ast.Return)]
                return bool(returns) and all(item is not None and _dict_says_no_env(item) for item in returns)
    return False


def client_problems(call: ast.Call, parents: dict[ast.AST, ast.AST]) -> list[str]:
    """What rule 1 finds wrong with one ``httpx.Client(...)`` / ``httpx.AsyncClient(...)``."""
    function = _enclosing(call, parents, (ast.FunctionDef, ast.AsyncFunctionDef))
    owner = _enclosing(call, parents, (ast.ClassDef,))
    keywords = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg is not None}
    unpacked = [keyword.value for keyword in call.keywords if keyword.arg is None]
    problems = []
    transport = keywords.get("transport")
    if transport is None or not _is_egress_transport(transport, function):
        problems.append("transport= is not an egress policy's transport")
    no_env = "trust_env" in keywords and _says_no_env(keywords["trust_env"])
    if not no_env and not any(_unpacked_says_no_env(value, function, owner) for value in unpacked):
        problems.append("trust_env=False is not said")
    problems += [
        f"{name}= routes around the transport" for name in sorted(AROUND_THE_TRANSPORT & set(keywords))
    ]
    return problems


def findings(relative: str, source: str) -> Iterator[tuple[str, str]]:
    """``(rule, what)`` for every offence in one module's source (exemptions not applied)."""
    tree = ast.parse(source)
    parents = _parents(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in CONNECTING_MODULES:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in CONNECTING_CALLS | CLIENTS:
                    yield "bare-name", f"{relative}:{node.lineno} imports {node.module}.{alias.name} by name"
        elif isinstance(node, ast.Call):
            name = dotted(node.func)
            if name in CLIENTS:
                for problem in client_problems(node, parents):
                    yield "client", f"{relative}:{node.lineno} {name}: {problem}"
            elif name in CONNECTING_CALLS:
                yield "connecting-call", f"{relative}:{node.lineno} calls {name}"


def _source_files() -> list[Path]:
    return sorted((SRC / "mudrika").rglob("*.py"))


def test_every_outbound_connection_goes_through_the_egress_policy() -> None:
    offences = []
    for path in _source_files():
        relative = path.relative_to(SRC).as_posix()
        exempt = EXEMPT.get(relative, (frozenset(), ""))[0]
        offences += [what for rule, what in findings(relative, path.read_text()) if rule not in exempt]
    assert offences == []


def test_the_walk_sees_the_fetchers_that_exist() -> None:
    """The rule is not vacuous: the walk meets the project's real fetchers (JWKS, did:web, did:webvh,
    status lists, Web Bot Auth directories, the Keycloak adapter) and finds each compliant."""
    seen = set()
    for path in _source_files():
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.Call) and dotted(node.func) in CLIENTS for node in ast.walk(tree)):
            seen.add(path.relative_to(SRC).as_posix())
    assert {
        "mudrika/trust/keycloak/jwks.py",
        "mudrika/trust/keycloak/adapters.py",
        "mudrika/identity/methods/web.py",
        "mudrika/identity/methods/webvh/__init__.py",
        "mudrika/identity/statuslist.py",
        "mudrika/trust/httpsig/_directory.py",
    } <= seen


def test_every_exemption_is_still_needed() -> None:
    """An exemption whose module no longer does what it excuses is removed, not left to excuse the
    next change."""
    for relative, (rules, reason) in EXEMPT.items():
        path = SRC / relative
        assert path.is_file(), relative
        assert reason
        found = {rule for rule, _ in findings(relative, path.read_text())}
        assert rules <= found, (relative, rules - found)


_COMPLIANT = """
import httpx

class Fetcher:
    def _options(self):
        return {"timeout": 5, "trust_env": False}

    def fetch(self, url):
        with httpx.Client(transport=self._egress.transport(), **self._options()) as client:
            return client.get(url)

    async def afetch(self, url):
        transport = self._egress.async_transport(verify=True)
        options = {"trust_env": False}
        async with httpx.AsyncClient(transport=transport, **options) as client:
            return await client.get(url)

    def fetch_plain(self, url):
        return httpx.Client(transport=self._egress.transport(), trust_env=False)
"""


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("import httpx\nhttpx.Client(trust_env=False)\n", "client"),
        (
            "import httpx\nhttpx.AsyncClient(transport=httpx.AsyncHTTPTransport(), trust_env=False)\n",
            "client",
        ),
        ("import httpx\ndef f(p):\n    httpx.Client(transport=p.transport())\n", "client"),
        ("import httpx\ndef f(p):\n    httpx.Client(transport=p.transport(), trust_env=True)\n", "client"),
        (
            "import httpx\ndef f(p):\n    t = make()\n    httpx.Client(transport=t, trust_env=False)\n",
            "client",
        ),
        (
            "import httpx\ndef f(p):\n    o = {'trust_env': True}\n    httpx.Client(transport=p.transport(), **o)\n",
            "client",
        ),
        (
            "import httpx\ndef f(p, m):\n    httpx.Client(transport=p.transport(), trust_env=False, mounts=m)\n",
            "client",
        ),
        (
            "import httpx\ndef f(p):\n    httpx.Client(transport=p.transport(), trust_env=False, proxy='http://x')\n",
            "client",
        ),
        ("from httpx import Client\n", "bare-name"),
        ("from urllib.request import urlopen\n", "bare-name"),
        ("import httpx\nhttpx.get('https://example.com')\n", "connecting-call"),
        ("import urllib.request\nurllib.request.urlopen('https://example.com')\n", "connecting-call"),
        ("import socket\nsocket.create_connection(('example.com', 443))\n", "connecting-call"),
        ("import requests\nrequests.Session()\n", "connecting-call"),
        ("import asyncio\nasyncio.open_connection('example.com', 443)\n", "connecting-call"),
    ],
)
def test_the_checker_catches_a_planted_offender(source: str, rule: str) -> None:
    assert rule in {found for found, _ in findings("planted.py", source)}


def test_the_checker_accepts_each_compliant_form() -> None:
    assert list(findings("planted.py", _COMPLIANT)) == []
