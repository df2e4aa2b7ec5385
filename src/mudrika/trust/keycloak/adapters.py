"""Keycloak: realm-export import and python-keycloak adapters (discovery, tokens, introspection, admin reads).

Two halves, one concept ("what Keycloak says"):

* **Realm-export import** (:func:`import_realm_export`, :func:`load_realm_export`, :class:`RealmRoles`):
  roles, composite roles (expanded transitively, cycles tolerated), client roles, groups and subgroups,
  users, and the ``trust_level`` role attribute, compiled into lookups a :class:`~mudrika.trust.policy.
  Policy` is built from (:func:`policy_from_realm`).
* **Live adapters** (:class:`KeycloakAdapter`) over python-keycloak 7: OpenID discovery, JWKS,
  client-credentials tokens, token introspection, UMA permissions — each sync and async (the async twin named with an ``a`` prefix) — and
  admin reads (realm roles, role composites, client roles, groups with their role mappings) through
  ``KeycloakAdmin``, assembled into the realm-export shape so the same importer handles both sources.

What we deliberately do not use: python-keycloak's ``decode_token`` — it fetches the JWKS again on
every call and checks neither ``aud`` nor ``iss``.  Access tokens are verified by
``mudrika.trust.keycloak.tokens`` against a cached JWKS with an explicit issuer, audience and algorithm list.

Errors: every python-keycloak, requests and httpx exception is wrapped where it enters:
network trouble and 5xx answers become :class:`~mudrika.errors.IdpUnavailable` (callers fail closed);
a rejected request (4xx, wrong client secret) or a malformed answer becomes
:class:`~mudrika.errors.InvalidInput`.  Messages carry the operation and HTTP status, never a token,
secret or response body.
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import httpx
import requests
from keycloak import KeycloakAdmin, KeycloakOpenID, KeycloakOpenIDConnection
from keycloak.exceptions import (
    KeycloakAuthenticationError,
    KeycloakConnectionError,
    KeycloakError,
)

from mudrika.errors import IdpUnavailable, InvalidInput, MudrikaError
from mudrika.net.egress import EgressPolicy
from mudrika.trust.keycloak._http_bridge import install_transports
from mudrika.trust.keycloak.jwks import egress_for_configured_url
from mudrika.trust.models import AgentTrust
from mudrika.trust.policy import (
    MAX_EXPORT_BYTES,
    TRUST_ATTRIBUTE,
    OperationRule,
    Policy,
    RealmRoles,
    import_realm_export,
    load_realm_export,
)

__all__ = [
    "MAX_EXPORT_BYTES",
    "TRUST_ATTRIBUTE",
    "KeycloakAdapter",
    "RealmRoles",
    "import_realm_export",
    "load_realm_export",
    "policy_from_realm",
]

_log = logging.getLogger("mudrika.trust.keycloak.adapters")
_LOOPBACK_NAMES = frozenset({"localhost"})


def policy_from_realm(
    realm: RealmRoles,
    *,
    operations: Mapping[str, OperationRule],
    agent_trust: AgentTrust | None = None,
    allow_anonymous: bool = False,
) -> Policy:
    """Build a :class:`Policy` from imported realm roles (e.g. :meth:`KeycloakAdapter.load_realm`);
    the same policy :meth:`Policy.from_realm_export` builds from the export itself."""
    return Policy.from_realm_export(
        realm, operations=operations, agent_trust=agent_trust, allow_anonymous=allow_anonymous
    )


@contextmanager
def _wrapped(operation: str) -> Iterator[None]:
    """Translate third-party failures into the mudrika hierarchy, without bodies or secrets."""
    try:
        yield
    except MudrikaError:
        raise
    except (KeycloakConnectionError, httpx.TransportError, requests.exceptions.RequestException) as exc:
        _log.warning("keycloak %s: unreachable (%s)", operation, type(exc).__name__)
        raise IdpUnavailable(
            f"identity provider unreachable during {operation}", code="idp_unreachable", operation=operation
        ) from None
    except KeycloakError as exc:
        status = exc.response_code
        _log.warning("keycloak %s: HTTP %s", operation, status)
        if status is None or status >= 500:
            raise IdpUnavailable(
                f"identity provider failed during {operation} (HTTP {status})",
                code="idp_error",
                operation=operation,
                status=status,
            ) from None
        code = "idp_rejected_credentials" if isinstance(exc, KeycloakAuthenticationError) else "idp_rejected"
        raise InvalidInput(
            f"identity provider rejected {operation} (HTTP {status})",
            code=code,
            operation=operation,
            status=status,
        ) from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        # python-keycloak raises TypeError on an unexpected JSON shape; our assembly may hit KeyError.
        _log.warning("keycloak %s: unexpected answer (%s)", operation, type(exc).__name__)
        raise InvalidInput(
            f"identity provider sent an unexpected answer to {operation}",
            code="idp_bad_response",
            operation=operation,
        ) from None


def _dict(value: Any, operation: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"{operation}: expected a JSON object", code="idp_bad_response")
    return value


def _list_of_dicts(value: Any, operation: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise InvalidInput(f"{operation}: expected an array of objects", code="idp_bad_response")
    return value


def _check_server_url(server_url: str, allow_http: bool) -> str:
    parts = urlsplit(server_url)
    if parts.scheme not in {"https", "http"} or not parts.hostname:
        raise InvalidInput("Keycloak server_url must be an absolute http(s) URL", code="invalid_server_url")
    if parts.scheme == "http" and not allow_http:
        host = parts.hostname
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host in _LOOPBACK_NAMES
        if not loopback:
            raise InvalidInput(
                "Keycloak server_url must use https (plain http only for loopback or with allow_http=True)",
                code="insecure_server_url",
            )
    # python-keycloak joins paths with urljoin: without the trailing slash a context path is dropped.
    return server_url if server_url.endswith("/") else server_url + "/"


class KeycloakAdapter:
    """python-keycloak 7 behind mudrika's errors, timeouts and transports.

    ``http_client`` / ``async_http_client``: the httpx clients every request goes through (the sync
    ``requests`` traffic of python-keycloak is bridged onto ``http_client``).  When omitted the adapter
    creates and owns clients with ``timeout`` and ``verify`` whose connections go through ``egress``
    (default: :func:`~mudrika.trust.keycloak.jwks.egress_for_configured_url` of ``server_url``, the
    same rule as the JWKS fetch), so discovery, tokens and introspection obey the one egress policy
    (address checks, no second resolution, byte and time caps); close them with :meth:`close` /
    :meth:`aclose` or use the adapter as a (async) context manager.  Passing your own clients is how
    tests reach an in-process ASGI stand-in and how deployments set proxies or client certificates.

    Shared state and concurrency: one ``KeycloakOpenID`` is shared for discovery, JWKS, client-
    credentials tokens and introspection, none of which put a caller's token in the connection's
    headers.  UMA calls are different: python-keycloak stores the caller's bearer token in the
    *shared* connection headers for the duration of the call and restores the previous value
    afterwards — with two concurrent calls the second can "restore" the first caller's token, which
    then rides along on later unrelated requests (and on an exception it is never restored at all).
    :meth:`uma_permissions` / :meth:`auma_permissions` therefore build a fresh ``KeycloakOpenID`` per
    call.  Admin reads build a fresh ``KeycloakAdmin`` per snapshot for the same reason (its connection
    carries the admin token).
    """

    def __init__(
        self,
        *,
        server_url: str,
        realm: str,
        client_id: str,
        client_secret: str,
        timeout: float = 10.0,
        verify: ssl.SSLContext | bool = True,
        allow_http: bool = False,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        egress: EgressPolicy | None = None,
    ) -> None:
        if not realm or not client_id or not client_secret:
            raise InvalidInput("realm, client_id and client_secret are required", code="missing_config")
        self.server_url = _check_server_url(server_url, allow_http)
        self.realm = realm
        self.client_id = client_id
        self._secret = client_secret
        self._owns_sync = http_client is None
        self._owns_async = async_http_client is None
        policy = egress or egress_for_configured_url(self.server_url)
        self._http = http_client or httpx.Client(
            transport=policy.transport(verify=verify),
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
        )
        self._ahttp = async_http_client or httpx.AsyncClient(
            transport=policy.async_transport(verify=verify),
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
        )
        self._timeout = timeout
        self._oidc = self._new_openid()

    def __repr__(self) -> str:
        return f"KeycloakAdapter(server_url={self.server_url!r}, realm={self.realm!r}, client_id={self.client_id!r})"

    # -- plumbing ---------------------------------------------------------------------------------

    def _new_openid(self) -> KeycloakOpenID:
        oidc = KeycloakOpenID(
            server_url=self.server_url,
            realm_name=self.realm,
            client_id=self.client_id,
            client_secret_key=self._secret,
            timeout=int(self._timeout),
        )
        install_transports(oidc.connection, self._http, self._ahttp)
        return oidc

    def _new_admin(self) -> KeycloakAdmin:
        connection = KeycloakOpenIDConnection(
            server_url=self.server_url,
            realm_name=self.realm,
            client_id=self.client_id,
            client_secret_key=self._secret,
            grant_type="client_credentials",
            timeout=int(self._timeout),
        )
        install_transports(connection, self._http, self._ahttp)
        install_transports(connection.keycloak_openid.connection, self._http, self._ahttp)
        return KeycloakAdmin(connection=connection)

    def close(self) -> None:
        if self._owns_sync:
            self._http.close()

    async def aclose(self) -> None:
        self.close()
        if self._owns_async:
            await self._ahttp.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- OpenID: discovery, keys, tokens, introspection -------------------------------------------

    def well_known(self) -> dict[str, Any]:
        """The realm's OpenID Provider metadata (``/.well-known/openid-configuration``)."""
        with _wrapped("discovery"):
            return _dict(self._oidc.well_known(), "discovery")

    async def awell_known(self) -> dict[str, Any]:
        with _wrapped("discovery"):
            return _dict(await self._oidc.a_well_known(), "discovery")

    def certs(self) -> dict[str, Any]:
        """The realm's JWKS.  Cache it (``mudrika.trust.keycloak.tokens`` does); never fetch per token."""
        with _wrapped("certs"):
            return _dict(self._oidc.certs(), "certs")

    async def acerts(self) -> dict[str, Any]:
        with _wrapped("certs"):
            return _dict(await self._oidc.a_certs(), "certs")

    def client_credentials_token(self, *, scope: str = "openid") -> dict[str, Any]:
        """A token response for this client's service account (contains secrets: never log it)."""
        with _wrapped("client_credentials"):
            return _dict(self._oidc.token(grant_type="client_credentials", scope=scope), "client_credentials")

    async def aclient_credentials_token(self, *, scope: str = "openid") -> dict[str, Any]:
        with _wrapped("client_credentials"):
            reply = await self._oidc.a_token(grant_type="client_credentials", scope=scope)
            return _dict(reply, "client_credentials")

    def introspect(self, token: str) -> dict[str, Any]:
        """RFC 7662 introspection by this (confidential) client; ``{"active": false}`` for dead tokens."""
        with _wrapped("introspection"):
            return _dict(self._oidc.introspect(token), "introspection")

    async def aintrospect(self, token: str) -> dict[str, Any]:
        with _wrapped("introspection"):
            return _dict(await self._oidc.a_introspect(token), "introspection")

    def uma_permissions(self, token: str, permissions: list[str]) -> list[dict[str, Any]]:
        """UMA permissions granted to the holder of ``token`` (``resource#scope`` strings).

        A fresh ``KeycloakOpenID`` per call: python-keycloak parks ``token`` in the connection headers
        while the call runs (see the class docstring), so a shared instance could leak it to others.
        """
        with _wrapped("uma_permissions"):
            return _list_of_dicts(self._new_openid().uma_permissions(token, permissions), "uma_permissions")

    async def auma_permissions(self, token: str, permissions: list[str]) -> list[dict[str, Any]]:
        """Async :meth:`uma_permissions`; a fresh ``KeycloakOpenID`` per call for the same reason."""
        with _wrapped("uma_permissions"):
            reply = await self._new_openid().a_uma_permissions(token, permissions)
            return _list_of_dicts(reply, "uma_permissions")

    # -- admin reads --------------------------------------------------------------------------------

    def realm_roles(self) -> list[dict[str, Any]]:
        """Realm roles with their attributes (full representation)."""
        with _wrapped("admin_realm_roles"):
            return _list_of_dicts(self._new_admin().get_realm_roles(brief_representation=False), "roles")

    async def arealm_roles(self) -> list[dict[str, Any]]:
        with _wrapped("admin_realm_roles"):
            reply = await self._new_admin().a_get_realm_roles(brief_representation=False)
            return _list_of_dicts(reply, "roles")

    def fetch_realm_export(self) -> dict[str, Any]:
        """Read roles, composites, client roles and groups through the admin API, shaped like a realm
        export (``roles.realm``, ``roles.client``, ``groups`` with ``subGroups``) so
        :func:`import_realm_export` compiles it exactly as it would a file."""
        with _wrapped("admin_snapshot"):
            admin = self._new_admin()
            clients = _list_of_dicts(admin.get_clients(), "clients")
            client_ids = {c["id"]: c["clientId"] for c in clients}
            realm_roles = _list_of_dicts(admin.get_realm_roles(brief_representation=False), "roles")
            for role in realm_roles:
                if role.get("composite"):
                    composites = admin.get_composite_realm_roles_of_role(role["name"])
                    role["composites"] = _composites(composites, client_ids)
            client_roles: dict[str, list[dict[str, Any]]] = {}
            for uuid, client_id in client_ids.items():
                roles = _list_of_dicts(admin.get_client_roles(uuid, brief_representation=False), "roles")
                for role in roles:
                    if role.get("composite"):
                        composites = admin.get_composite_client_roles_of_role(uuid, role["name"])
                        role["composites"] = _composites(composites, client_ids)
                if roles:
                    client_roles[client_id] = roles
            groups = _list_of_dicts(admin.get_groups(full_hierarchy=True), "groups")
            for group in _walk(groups):
                group["realmRoles"] = [r["name"] for r in admin.get_group_realm_roles(group["id"])]
                mapped: dict[str, list[str]] = {}
                for uuid, client_id in client_ids.items():
                    if client_id in client_roles:
                        names = [r["name"] for r in admin.get_group_client_roles(group["id"], uuid)]
                        if names:
                            mapped[client_id] = names
                group["clientRoles"] = mapped
            return _export(self.realm, realm_roles, client_roles, groups)

    async def afetch_realm_export(self) -> dict[str, Any]:
        """Async :meth:`fetch_realm_export`."""
        with _wrapped("admin_snapshot"):
            admin = self._new_admin()
            clients = _list_of_dicts(await admin.a_get_clients(), "clients")
            client_ids = {c["id"]: c["clientId"] for c in clients}
            reply = await admin.a_get_realm_roles(brief_representation=False)
            realm_roles = _list_of_dicts(reply, "roles")
            for role in realm_roles:
                if role.get("composite"):
                    composites = await admin.a_get_composite_realm_roles_of_role(role["name"])
                    role["composites"] = _composites(composites, client_ids)
            client_roles: dict[str, list[dict[str, Any]]] = {}
            for uuid, client_id in client_ids.items():
                reply = await admin.a_get_client_roles(uuid, brief_representation=False)
                roles = _list_of_dicts(reply, "roles")
                for role in roles:
                    if role.get("composite"):
                        composites = await admin.a_get_composite_client_roles_of_role(uuid, role["name"])
                        role["composites"] = _composites(composites, client_ids)
                if roles:
                    client_roles[client_id] = roles
            groups = _list_of_dicts(await admin.a_get_groups(full_hierarchy=True), "groups")
            for group in _walk(groups):
                realm_mapped = await admin.a_get_group_realm_roles(group["id"])
                group["realmRoles"] = [r["name"] for r in realm_mapped]
                mapped: dict[str, list[str]] = {}
                for uuid, client_id in client_ids.items():
                    if client_id in client_roles:
                        client_mapped = await admin.a_get_group_client_roles(group["id"], uuid)
                        names = [r["name"] for r in client_mapped]
                        if names:
                            mapped[client_id] = names
                group["clientRoles"] = mapped
            return _export(self.realm, realm_roles, client_roles, groups)

    def load_realm(self) -> RealmRoles:
        """Admin snapshot compiled into :class:`RealmRoles`."""
        return import_realm_export(self.fetch_realm_export())

    async def aload_realm(self) -> RealmRoles:
        return import_realm_export(await self.afetch_realm_export())


def _composites(reply: Any, client_ids: Mapping[str, str]) -> dict[str, Any]:
    """Admin ``/composites`` answers (RoleRepresentations) -> the export's ``{"realm", "client"}`` form."""
    realm: list[str] = []
    client: dict[str, list[str]] = {}
    for role in _list_of_dicts(reply, "composites"):
        if role.get("clientRole"):
            owner = client_ids.get(role.get("containerId", ""))
            if owner is None:
                raise InvalidInput("composite refers to an unknown client", code="idp_bad_response")
            client.setdefault(owner, []).append(role["name"])
        else:
            realm.append(role["name"])
    return {"realm": realm, "client": client}


def _walk(groups: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    stack = list(groups)
    while stack:
        group = stack.pop()
        yield group
        stack.extend(_list_of_dicts(group.get("subGroups") or [], "subGroups"))


def _export(
    realm: str,
    realm_roles: list[dict[str, Any]],
    client_roles: dict[str, list[dict[str, Any]]],
    groups: list[dict[str, Any]],
) -> dict[str, Any]:
    def clean_group(group: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": group["id"],
            "name": group["name"],
            "path": group.get("path"),
            "realmRoles": group.get("realmRoles", []),
            "clientRoles": group.get("clientRoles", {}),
            "subGroups": [clean_group(sub) for sub in group.get("subGroups") or []],
        }

    return {
        "realm": realm,
        "roles": {"realm": realm_roles, "client": client_roles},
        "groups": [clean_group(group) for group in groups],
    }
