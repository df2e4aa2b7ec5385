"""A Keycloak-shaped OpenID provider for the integration tests (``tests/node/keycloak_idp.mjs``).

Why a node peer: no Keycloak server can run where the suite runs, so the tests talk to panva's
``oidc-provider`` laid out on Keycloak's URL paths and token shapes.  This module starts it, waits for
it, and wraps its endpoints (and its test-only ``/__test__/`` admin endpoints) in a small typed API.

Two fixtures:

* ``keycloak_idp`` (session scope) is shared by every test.  It refuses ``rotate``, ``retire``,
  ``stop`` and ``start``: a test that changed the shared keys or took the IdP down would change what
  the next test sees.
* ``fresh_keycloak_idp`` (function scope) is a private instance for tests that rotate or retire keys,
  or stop and restart the IdP to simulate an outage.

When node or ``tests/node/node_modules`` is missing the fixtures skip, except when ``CI`` is set: there
a missing peer is a broken set-up and the tests fail.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from tests._support.net import free_port
from tests._support.paths import NODE_DIR

__all__ = [
    "ADMIN_HEADER",
    "AuthMethod",
    "IdpClient",
    "KeycloakIdp",
    "default_clients",
    "fresh_keycloak_idp",
    "keycloak_idp",
    "launch_keycloak_idp",
]

SCRIPT = NODE_DIR / "keycloak_idp.mjs"
ADMIN_HEADER = "X-Test-Admin-Secret"
_READY_TIMEOUT = 120.0  # a hang guard: the wait polls and returns as soon as the IdP answers
_STOP_TIMEOUT = 5.0
_HTTP_TIMEOUT = 60.0  # per request to a local IdP; generous so a loaded machine never reaches it

AuthMethod = Literal["client_secret_basic", "client_secret_post"]


@dataclass(frozen=True)
class IdpClient:
    """A confidential client of the realm with its service account, as the peer is configured."""

    client_id: str
    secret: str = field(repr=False)
    auth_method: AuthMethod
    audience: tuple[str, ...]
    realm_roles: tuple[str, ...]
    client_roles: Mapping[str, tuple[str, ...]]
    access_token_format: Literal["jwt", "opaque"] = "jwt"
    default_scopes: tuple[str, ...] = ("profile", "email")
    service_account_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def username(self) -> str:
        """Keycloak's name for the client's service-account user (``preferred_username``)."""
        return f"service-account-{self.client_id.lower()}"

    def to_config(self) -> dict[str, Any]:
        """The client entry of the peer's JSON config file."""
        return {
            "clientId": self.client_id,
            "secret": self.secret,
            "authMethod": self.auth_method,
            "accessTokenFormat": self.access_token_format,
            "audience": list(self.audience),
            "realmRoles": list(self.realm_roles),
            "clientRoles": {name: list(roles) for name, roles in self.client_roles.items()},
            "defaultScopes": list(self.default_scopes),
            "serviceAccountId": self.service_account_id,
        }


def default_clients(realm: str = "mudrika") -> tuple[IdpClient, ...]:
    """Three clients with fresh random secrets.

    * ``agent-gateway``: client_secret_post (what python-keycloak sends), JWT tokens for
      ``["agent-api", "account"]``, realm roles ``agent`` + Keycloak's defaults.
    * ``payments-agent``: client_secret_basic, JWT tokens for ``payments-api``, realm roles
      ``agent`` and ``payments``.
    * ``legacy-opaque``: client_secret_post, opaque access tokens (introspection only).
    """
    defaults = (f"default-roles-{realm}", "offline_access", "uma_authorization")
    return (
        IdpClient(
            client_id="agent-gateway",
            secret=secrets.token_urlsafe(24),
            auth_method="client_secret_post",
            audience=("agent-api", "account"),
            realm_roles=("agent", *defaults),
            client_roles={
                "agent-api": ("invoke", "read"),
                "account": ("manage-account", "view-profile"),
            },
        ),
        IdpClient(
            client_id="payments-agent",
            secret=secrets.token_urlsafe(24),
            auth_method="client_secret_basic",
            audience=("payments-api",),
            realm_roles=("agent", "payments", *defaults),
            client_roles={"payments-api": ("pay", "refund")},
        ),
        IdpClient(
            client_id="legacy-opaque",
            secret=secrets.token_urlsafe(24),
            auth_method="client_secret_post",
            audience=("agent-api",),
            realm_roles=("agent", *defaults),
            client_roles={"agent-api": ("read",)},
            access_token_format="opaque",
        ),
    )


class KeycloakIdp:
    """A running (or stopped) ``keycloak_idp.mjs`` and the URLs a Keycloak client would use.

    ``server_url`` is python-keycloak's ``server_url`` (``http://127.0.0.1:PORT/``); ``issuer`` is
    ``server_url + "realms/" + realm``, exactly as Keycloak forms it.
    """

    def __init__(
        self,
        *,
        node: str,
        workdir: Path,
        realm: str,
        clients: Sequence[IdpClient],
        token_lifetime: int,
        shared: bool,
    ) -> None:
        self.realm = realm
        self.token_lifetime = token_lifetime
        self.clients: dict[str, IdpClient] = {c.client_id: c for c in clients}
        self.port = free_port()
        self.server_url = f"http://127.0.0.1:{self.port}/"
        self.issuer = f"{self.server_url}realms/{realm}"
        oidc = f"{self.issuer}/protocol/openid-connect"
        self.discovery_url = f"{self.issuer}/.well-known/openid-configuration"
        self.token_endpoint = f"{oidc}/token"
        self.jwks_uri = f"{oidc}/certs"
        self.introspection_endpoint = f"{oidc}/token/introspect"
        self.userinfo_endpoint = f"{oidc}/userinfo"
        self._node = node
        self._workdir = workdir
        self._shared = shared
        self._admin_secret = secrets.token_urlsafe(32)
        self._config = workdir / "config.json"
        self._state = workdir / "state.json"
        self._stdout = workdir / "stdout.log"
        self._stderr = workdir / "stderr.log"
        self._process: subprocess.Popen[bytes] | None = None
        config = {
            "realm": realm,
            "tokenLifetime": token_lifetime,
            "clients": [c.to_config() for c in clients],
        }
        self._config.write_text(json.dumps(config), encoding="utf-8")
        self._config.chmod(0o600)

    def __repr__(self) -> str:
        return f"KeycloakIdp(issuer={self.issuer!r}, running={self.is_running()})"

    # --- process -------------------------------------------------------------------------------

    def is_running(self) -> bool:
        """Whether the node process is alive (a method, so mypy does not narrow it across calls)."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the peer on this instance's port; keys persist across restarts (state file)."""
        self._refuse_if_shared("start")
        self._start()

    def stop(self) -> None:
        """Stop the peer (SIGTERM, then SIGKILL): the IdP is down until :meth:`start`."""
        self._refuse_if_shared("stop")
        self._stop()

    def _start(self) -> None:
        if self.is_running():
            return
        env = {**os.environ, "KEYCLOAK_IDP_ADMIN_SECRET": self._admin_secret}
        argv = [
            self._node,
            str(SCRIPT),
            "--port",
            str(self.port),
            "--config",
            str(self._config),
            "--state",
            str(self._state),
        ]
        with self._stdout.open("wb") as out, self._stderr.open("ab") as err:
            self._process = subprocess.Popen(
                argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=NODE_DIR
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        process = self._process
        assert process is not None
        deadline = time.monotonic() + _READY_TIMEOUT
        expected = f"READY {self.port}"
        while time.monotonic() < deadline:
            lines = self._stdout.read_text(encoding="utf-8", errors="replace").splitlines()
            if expected in lines:
                return
            if process.poll() is not None:
                break
            time.sleep(0.02)
        self._stop()
        tail = self._stderr.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise RuntimeError(f"keycloak_idp.mjs did not become ready on port {self.port}:\n{tail}")

    def _stop(self) -> None:
        process = self._process
        if process is None:
            return
        self._process = None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=_STOP_TIMEOUT)

    def _refuse_if_shared(self, action: str) -> None:
        if self._shared:
            raise RuntimeError(
                f"{action}() would change the session-wide keycloak_idp; use fresh_keycloak_idp"
            )

    # --- Keycloak endpoints (plain HTTP, what any client would send) ----------------------------

    def client(self, client_id: str) -> IdpClient:
        return self.clients[client_id]

    def opaque_client(self) -> IdpClient:
        """The first client configured for opaque access tokens."""
        for client in self.clients.values():
            if client.access_token_format == "opaque":
                return client
        raise LookupError("no client of this IdP issues opaque access tokens")

    def token_response(self, client_id: str, *, scope: str | None = None) -> dict[str, Any]:
        """POST a client_credentials grant with the client's own auth method; the JSON response."""
        client = self.clients[client_id]
        data = {"grant_type": "client_credentials"}
        if scope is not None:
            data["scope"] = scope
        auth: tuple[str, str] | None = None
        if client.auth_method == "client_secret_basic":
            auth = (client.client_id, client.secret)
        else:
            data |= {"client_id": client.client_id, "client_secret": client.secret}
        response = httpx.post(self.token_endpoint, data=data, auth=auth, timeout=_HTTP_TIMEOUT)
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    def client_credentials_token(self, client_id: str, *, scope: str | None = None) -> str:
        """A fresh access token for ``client_id`` (a JWT, or opaque for an opaque client)."""
        token: str = self.token_response(client_id, scope=scope)["access_token"]
        return token

    def opaque_token(self, client_id: str | None = None) -> str:
        """An opaque access token (only introspection can tell what it means)."""
        client = self.opaque_client() if client_id is None else self.clients[client_id]
        if client.access_token_format != "opaque":
            raise ValueError(f"client {client.client_id} issues JWT access tokens, not opaque ones")
        return self.client_credentials_token(client.client_id)

    def introspect(self, token: str, *, client_id: str | None = None) -> dict[str, Any]:
        """RFC 7662 introspection, authenticated as ``client_id`` (default: the first client)."""
        client = next(iter(self.clients.values())) if client_id is None else self.clients[client_id]
        response = httpx.post(
            self.introspection_endpoint,
            data={"token": token},
            auth=(client.client_id, client.secret),
            timeout=_HTTP_TIMEOUT,
        )
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    def jwks(self) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(self.jwks_uri, timeout=_HTTP_TIMEOUT).json()
        return body

    # --- test-only admin endpoints --------------------------------------------------------------

    def _admin(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        response = httpx.request(
            method,
            f"{self.server_url}__test__/{path}",
            headers={ADMIN_HEADER: self._admin_secret},
            json=body,
            timeout=_HTTP_TIMEOUT,
        )
        if response.status_code != 200:
            raise RuntimeError(f"/__test__/{path} -> {response.status_code}: {response.text}")
        return response.json()

    def health(self) -> dict[str, Any]:
        """``{"status", "realm", "issuer", "signing_kid", "kids", "enc_kid"}``."""
        body: dict[str, Any] = self._admin("GET", "health")
        return body

    @property
    def signing_kid(self) -> str:
        kid: str = self.health()["signing_kid"]
        return kid

    def rotate(self) -> str:
        """Make a new RS256 key the signing key, keep the old ones published; the new kid."""
        self._refuse_if_shared("rotate")
        kid: str = self._admin("POST", "rotate")["kid"]
        return kid

    def retire(self, kid: str) -> None:
        """Remove a (non-signing) key from the JWKS."""
        self._refuse_if_shared("retire")
        self._admin("POST", "retire", {"kid": kid})

    def mint(
        self,
        typ: str = "Bearer",
        *,
        client_id: str | None = None,
        ttl: int | None = None,
        alg: str = "RS256",
        kid: str | None = None,
        header: Mapping[str, Any] | None = None,
        claims: Mapping[str, Any] | None = None,
        **more_claims: Any,
    ) -> str:
        """Sign an arbitrary Keycloak-shaped JWT with a published key of the realm.

        ``typ`` picks the base shape: ``"Bearer"`` (an access token like the token endpoint's),
        ``"ID"`` or ``"Refresh"``; any other value is the access-token shape with that ``typ``.
        ``claims`` and keyword claims override the base; a claim set to ``None`` is removed.  ``ttl``
        is seconds from now to ``exp`` (negative for an expired token; default the realm's token
        lifetime).  ``alg`` is any RSA JWS algorithm (RS256/384/512, PS256/384/512); ``kid`` picks a
        published key (default the signing key); ``header`` entries override the protected header
        (``None`` removes one; ``alg`` cannot be overridden there).
        """
        body: dict[str, Any] = {
            "typ": typ,
            "alg": alg,
            "claims": {**(claims or {}), **more_claims},
            "header": dict(header or {}),
        }
        if client_id is not None:
            body["client_id"] = client_id
        if ttl is not None:
            body["ttl"] = ttl
        if kid is not None:
            body["kid"] = kid
        token: str = self._admin("POST", "mint", body)["token"]
        return token


def _require_node() -> str:
    node = shutil.which("node")
    problem: str | None = None
    if node is None:
        problem = "node is not installed"
    elif not (NODE_DIR / "node_modules" / "oidc-provider").is_dir():
        problem = "tests/node/node_modules/oidc-provider is missing"
    if problem is not None or node is None:
        message = f"{problem}: the Keycloak-shaped IdP peer cannot run"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI is set, so this is a broken set-up)")
        pytest.skip(f"{message}; run scripts/setup.sh --with-node")
    return node


@contextmanager
def launch_keycloak_idp(
    workdir: Path,
    *,
    realm: str = "mudrika",
    clients: Sequence[IdpClient] | None = None,
    token_lifetime: int = 300,
    shared: bool = False,
) -> Iterator[KeycloakIdp]:
    """Start a peer with its config and key state in ``workdir``; stop it on exit."""
    node = _require_node()
    idp = KeycloakIdp(
        node=node,
        workdir=workdir,
        realm=realm,
        clients=default_clients(realm) if clients is None else clients,
        token_lifetime=token_lifetime,
        shared=shared,
    )
    try:
        idp._start()
        yield idp
    finally:
        idp._stop()


@pytest.fixture(scope="session")
def keycloak_idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeycloakIdp]:
    """The session-wide IdP (default clients, realm ``mudrika``); read-only for tests."""
    with launch_keycloak_idp(tmp_path_factory.mktemp("keycloak-idp"), shared=True) as idp:
        yield idp


@pytest.fixture
def fresh_keycloak_idp(tmp_path: Path) -> Iterator[KeycloakIdp]:
    """A private IdP for one test: rotate, retire, stop and start freely."""
    with launch_keycloak_idp(tmp_path) as idp:
        yield idp
