"""Running the official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned in
``tests/node/package.json``) against a server, and what a protected server needs to face it.

Three pieces:

* :func:`run_conformance` runs ``conformance server --url URL -o DIR`` with the Node 22 binary the
  npm package ``node`` installs into ``tests/node/node_modules`` (the suite needs Node >= 22:
  ``fs.globSync``; the system node may be older) and reads every ``checks.json`` it leaves in DIR
  into one :class:`ScenarioResult` per scenario.
* :func:`with_bearer` puts ``Authorization: Bearer <token>`` on every HTTP request reaching an ASGI
  app.  The suite's runner connects with no headers and has no option to add one, so an app that
  requires a token (``protect(..., protocol="mcp")``) can face the suite only with this in front.
* :func:`launch_mcp_realm` starts the Keycloak-shaped OpenID provider (``tests/_support/idp.py``)
  with a confidential client whose access tokens are issued for the MCP server's URL (``aud`` =
  the resource, as Keycloak's audience mapper does), which is what an MCP resource server must
  insist on (RFC 8707 audience).

Missing Node 22 or a missing package skips the test (fails it when ``CI`` is set: there a missing
peer is a broken set-up), as the other node-based helpers do.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import pytest

from tests._support.idp import IdpClient, KeycloakIdp, default_clients, launch_keycloak_idp
from tests._support.mcp_everything import MCP_PATH
from tests._support.net import free_port
from tests._support.paths import NODE_DIR

__all__ = [
    "CONFORMANCE_CLI",
    "MCP_CLIENT_ID",
    "NODE22",
    "ASGIApp",
    "McpRealm",
    "Message",
    "Receive",
    "ScenarioResult",
    "Scope",
    "Send",
    "conformance_command",
    "launch_mcp_realm",
    "mcp_client",
    "parse_results",
    "run_conformance",
    "server_scenarios",
    "with_bearer",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The Node binary of the npm package ``node`` (pinned to a 22.x release in tests/node/package.json).
NODE22: Final = NODE_DIR / "node_modules" / ".bin" / "node"
CONFORMANCE_CLI: Final = (
    NODE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
)
_MIN_NODE_MAJOR = 22
#: A hang guard for one whole suite run (it takes a few seconds); the run returns as soon as it ends.
SUITE_TIMEOUT = 300.0
# The runner names each result folder ``server-<scenario>-<ISO time with : and . as ->``.
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_LISTED_SCENARIO = re.compile(r"^\s+- (?P<scenario>\S+)(?: \[[^\]]*\])?$")


def _unavailable(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set, so this is a broken set-up)")
    pytest.skip(f"{message}; run scripts/setup.sh --with-node")


@cache
def _node_major(node: Path) -> int | None:
    try:
        result = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return None
    match = re.fullmatch(r"v(\d+)\.\d+\.\d+\s*", result.stdout)
    return int(match.group(1)) if result.returncode == 0 and match else None


def conformance_command() -> list[str]:
    """``[node22, .../conformance/dist/index.js]``, or skip when either is missing or Node is < 22."""
    if not NODE22.exists():
        _unavailable(f"{NODE22} is missing (the npm package 'node', Node 22, in tests/node)")
    major = _node_major(NODE22)
    if major is None or major < _MIN_NODE_MAJOR:
        _unavailable(f"{NODE22} is not Node >= {_MIN_NODE_MAJOR} (found major {major})")
    if not CONFORMANCE_CLI.is_file():
        _unavailable(f"{CONFORMANCE_CLI} is missing (@modelcontextprotocol/conformance in tests/node)")
    return [str(NODE22), str(CONFORMANCE_CLI)]


# --- results ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScenarioResult:
    """One scenario's checks as the suite recorded them.

    ``failures`` and ``warnings`` are ``"<check id>: <message>"`` for the checks with status
    FAILURE and WARNING.  ``passed`` is the suite's own baseline rule (``--expected-failures``): a
    scenario passes only with neither; its printed summary ticks a scenario that merely has no
    FAILURE, which would let a server that skips a SHOULD (a priming event, a session id) through.
    """

    name: str
    checks: int
    failures: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.failures and not self.warnings


def _describe(check: dict[str, Any]) -> str:
    message = check.get("errorMessage") or check.get("description") or ""
    return f"{check.get('id', '?')}: {message}"


def parse_results(output_dir: Path) -> dict[str, ScenarioResult]:
    """Every ``<output_dir>/server-<scenario>-<time>/checks.json``, by scenario name."""
    results: dict[str, ScenarioResult] = {}
    for checks_file in sorted(output_dir.glob("*/checks.json")):
        match = _RESULT_DIR.match(checks_file.parent.name)
        if match is None:
            raise ValueError(f"unexpected result folder name: {checks_file.parent.name}")
        name = match["scenario"]
        if name in results:
            raise ValueError(f"scenario {name} has two result folders in {output_dir}")
        checks: list[dict[str, Any]] = json.loads(checks_file.read_text(encoding="utf-8"))
        results[name] = ScenarioResult(
            name=name,
            checks=len(checks),
            failures=tuple(_describe(c) for c in checks if c.get("status") == "FAILURE"),
            warnings=tuple(_describe(c) for c in checks if c.get("status") == "WARNING"),
        )
    return results


def server_scenarios() -> list[str]:
    """The server scenarios this version of the suite has (``conformance list --server``)."""
    result = subprocess.run(
        [*conformance_command(), "list", "--server"],
        capture_output=True,
        text=True,
        timeout=SUITE_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return [m["scenario"] for line in result.stdout.splitlines() if (m := _LISTED_SCENARIO.match(line))]


def run_conformance(
    url: str,
    output_dir: Path,
    *,
    suite: str = "all",
    scenario: str | None = None,
    timeout: float = SUITE_TIMEOUT,
) -> dict[str, ScenarioResult]:
    """Run the server suite (``suite``: all, active or pending; or one ``scenario``) against the MCP
    endpoint ``url`` and return its results by scenario.

    The runner exits 1 when any check failed; that is a result, not an error.  A run that crashed,
    or timed out, fails the test with the end of its output.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    argv = [*conformance_command(), "server", "--url", url, "-o", str(output_dir)]
    argv += ["--scenario", scenario] if scenario is not None else ["--suite", suite]
    try:
        completed = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, cwd=NODE_DIR
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the conformance suite did not finish within {timeout}s: {argv}") from exc
    if completed.returncode not in (0, 1) or "Server test error" in completed.stderr:
        raise AssertionError(
            f"the conformance runner crashed (exit {completed.returncode}):\n"
            f"{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}"
        )
    return parse_results(output_dir)


# --- a token on every request ---------------------------------------------------------------------


def with_bearer(app: ASGIApp, token: str) -> ASGIApp:
    """``app`` with ``Authorization: Bearer <token>`` on every HTTP request.

    Any ``Authorization`` the request already had is replaced, so exactly one reaches ``app`` (a
    resource server must refuse two).  Lifespan and websocket scopes pass through untouched, so the
    MCP app's lifespan still starts its session manager.
    """
    if not token or any(ch.isspace() for ch in token):
        raise ValueError("the bearer token must be one non-empty word")
    header = (b"authorization", b"Bearer " + token.encode("ascii"))

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope.get("headers", ()) if k.lower() != b"authorization"]
        await app({**scope, "headers": [*headers, header]}, receive, send)

    return wrapped


# --- the OpenID provider an MCP resource server trusts ------------------------------------------------

#: The confidential client whose tokens are issued for the MCP server (aud = its resource URL).
MCP_CLIENT_ID: Final = "mcp-agent"


@dataclass(frozen=True)
class McpRealm:
    """A running Keycloak-shaped IdP and the MCP server URL its ``mcp-agent`` tokens are for.

    The port is chosen before the IdP starts because the audience is part of the client's
    configuration (Keycloak's audience mapper); serve the MCP app on ``port``."""

    idp: KeycloakIdp
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def resource(self) -> str:
        """The MCP server's canonical URL: the token audience (RFC 8707 resource indicator)."""
        return self.base_url + MCP_PATH

    @property
    def issuer(self) -> str:
        return self.idp.issuer

    def token(self, client_id: str = MCP_CLIENT_ID) -> str:
        """A fresh client-credentials access token of ``client_id`` from the token endpoint."""
        return self.idp.client_credentials_token(client_id)


def mcp_client(
    resource: str,
    *,
    client_id: str = MCP_CLIENT_ID,
    realm_roles: Sequence[str] = ("agent",),
    client_roles: Sequence[str] = (),
    realm: str = "mudrika",
) -> IdpClient:
    """A confidential client whose access tokens carry ``aud = resource`` and the given roles
    (``client_roles`` are roles of the resource, ``resource_access[resource].roles``)."""
    return IdpClient(
        client_id=client_id,
        secret=secrets.token_urlsafe(24),
        auth_method="client_secret_basic",
        audience=(resource,),
        realm_roles=(*realm_roles, f"default-roles-{realm}"),
        client_roles={resource: tuple(client_roles)} if client_roles else {},
    )


@contextmanager
def launch_mcp_realm(
    workdir: Path,
    *,
    port: int | None = None,
    realm_roles: Sequence[str] = ("agent",),
    client_roles: Sequence[str] = (),
    realm: str = "mudrika",
) -> Iterator[McpRealm]:
    """Start the IdP with the default clients plus ``mcp-agent`` (tokens for
    ``http://127.0.0.1:<port>/mcp``); stop it on exit.  ``port`` defaults to a free one."""
    port = free_port() if port is None else port
    resource = f"http://127.0.0.1:{port}{MCP_PATH}"
    client = mcp_client(resource, realm_roles=realm_roles, client_roles=client_roles, realm=realm)
    with launch_keycloak_idp(workdir, realm=realm, clients=(*default_clients(realm), client)) as idp:
        yield McpRealm(idp=idp, port=port)
