"""An in-process Keycloak stand-in: a Starlette app answering in Keycloak's REST shapes.

THIS IS THE PROJECT'S ONLY STAND-IN.  No Keycloak server can run in this environment (no JVM, no
network), so the python-keycloak adapters are exercised against this ASGI app instead.  It serves one
realm from a realm-export dict with the endpoints and JSON shapes Keycloak 24+ uses:

* OpenID: ``/realms/{realm}/.well-known/openid-configuration``, ``.../protocol/openid-connect/certs``,
  ``.../token`` (``client_credentials`` and the UMA ``uma-ticket`` grant with ``response_mode=permissions``),
  ``.../token/introspect``;
* admin (bearer token from the token endpoint required): ``/admin/realms/{realm}/roles``
  (``briefRepresentation``, ``first``/``max``), ``/roles/{name}/composites``, ``/clients``
  (``clientId=``), ``/clients/{id}/roles``, ``/clients/{id}/roles/{name}/composites``, ``/groups``
  (brief, with ``subGroupCount`` as Keycloak 23+ answers), ``/groups/{id}/children``,
  ``/groups/{id}/role-mappings/realm`` and ``/groups/{id}/role-mappings/clients/{client-uuid}``.

It is deliberately small: what it proves is that python-keycloak's own request code, our transport
bridge and our snapshot assembly agree with these shapes — not that a real Keycloak behaves so in every
corner.  Tokens are opaque random strings (nothing here is a JWT).  ``fail_with`` makes every request
answer with that HTTP status; ``seen`` records (path, Authorization header present?) per request.
"""

from __future__ import annotations

import base64
import hmac
import secrets
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import anyio
import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["KeycloakStandIn", "SyncASGITransport", "sync_asgi_client"]

_TOKEN_LIFETIME = 300


class SyncASGITransport(httpx.BaseTransport):
    """A synchronous httpx transport that hands each request to ``httpx.ASGITransport``.

    Why: python-keycloak's synchronous calls go through a blocking client, while httpx only ships an
    async ASGI transport (Starlette's TestClient would do, but now warns unless ``httpx2`` is
    installed).  A blocking portal runs one event loop in a worker thread and every request is
    awaited there, so both the sync and the async adapter paths reach the app via ``ASGITransport``.
    """

    def __init__(self, app: Any, portal: BlockingPortal) -> None:
        self._inner = httpx.ASGITransport(app=app)
        self._portal = portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()

        async def call() -> httpx.Response:
            forwarded = httpx.Request(request.method, request.url, headers=request.headers, content=body)
            reply = await self._inner.handle_async_request(forwarded)
            content = await reply.aread()
            return httpx.Response(reply.status_code, headers=reply.headers, content=content)

        return self._portal.call(call)


@contextmanager
def sync_asgi_client(app: Any) -> Iterator[httpx.Client]:
    """A blocking ``httpx.Client`` whose requests are served by ``app`` in-process."""
    with start_blocking_portal() as portal, httpx.Client(transport=SyncASGITransport(app, portal)) as client:
        yield client


def _b64url(value: int) -> str:
    return base64.urlsafe_b64encode(value.to_bytes(32, "big")).rstrip(b"=").decode()


async def _form(request: Request) -> dict[str, str]:
    """Parse an urlencoded body (Starlette's own form parser needs python-multipart)."""
    pairs = parse_qsl((await request.body()).decode(), keep_blank_values=True)
    return dict(pairs)


def _flag(request: Request, name: str, default: bool) -> bool:
    raw = request.query_params.get(name)
    return default if raw is None else raw.lower() == "true"


def _page(request: Request, items: list[Any]) -> list[Any]:
    first = int(request.query_params.get("first", "0"))
    size = request.query_params.get("max")
    return items[first:] if size is None else items[first : first + int(size)]


@dataclass
class _Group:
    id: str
    name: str
    path: str
    realm_roles: list[str]
    client_roles: dict[str, list[str]]
    children: list[_Group] = field(default_factory=list)


class KeycloakStandIn:
    """Serve ``export`` (a realm-export dict) for ``client_id``/``client_secret``.

    ``uma_grants`` maps a user bearer token to the UMA permissions the token endpoint returns for it.
    """

    def __init__(
        self,
        export: Mapping[str, Any],
        *,
        client_id: str,
        client_secret: str,
        uma_grants: Mapping[str, list[dict[str, Any]]] | None = None,
        uma_delay: float = 0.0,
    ) -> None:
        self.realm: str = export["realm"]
        self.client_id = client_id
        self._secret = client_secret.encode()
        self.uma_grants = dict(uma_grants or {})
        self.uma_delay = uma_delay
        self.fail_with: int | None = None
        self.seen: list[tuple[str, bool]] = []
        self._tokens: dict[str, float] = {}
        self._key = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
        self._kid = secrets.token_hex(8)

        self._clients: list[dict[str, Any]] = [
            {"id": c["id"], "clientId": c["clientId"], "enabled": c.get("enabled", True)}
            for c in export.get("clients", [])
        ]
        self._client_uuid = {c["clientId"]: c["id"] for c in self._clients}
        self._realm_roles: list[dict[str, Any]] = [self._role(r, None) for r in export["roles"]["realm"]]
        self._client_roles: dict[str, list[dict[str, Any]]] = {
            self._client_uuid[client]: [self._role(r, client) for r in roles]
            for client, roles in export["roles"].get("client", {}).items()
        }
        self._groups = [self._group(g, "") for g in export.get("groups", [])]
        self._group_index: dict[str, _Group] = {}
        stack = list(self._groups)
        while stack:
            group = stack.pop()
            self._group_index[group.id] = group
            stack.extend(group.children)

        base = "/realms/{realm}"
        admin = "/admin/realms/{realm}"
        self.app = Starlette(
            routes=[
                Route(base + "/.well-known/openid-configuration", self.well_known),
                Route(base + "/protocol/openid-connect/certs", self.certs),
                Route(base + "/protocol/openid-connect/token", self.token, methods=["POST"]),
                Route(base + "/protocol/openid-connect/token/introspect", self.introspect, methods=["POST"]),
                Route(admin + "/roles", self.realm_roles),
                Route(admin + "/roles/{name}/composites", self.realm_role_composites),
                Route(admin + "/clients", self.clients),
                Route(admin + "/clients/{id}/roles", self.client_roles),
                Route(admin + "/clients/{id}/roles/{name}/composites", self.client_role_composites),
                Route(admin + "/groups", self.groups),
                Route(admin + "/groups/{id}/children", self.group_children),
                Route(admin + "/groups/{id}/role-mappings/realm", self.group_realm_roles),
                Route(admin + "/groups/{id}/role-mappings/clients/{client}", self.group_client_roles),
            ]
        )

    # -- model -------------------------------------------------------------------------------------

    def _role(self, raw: Mapping[str, Any], client: str | None) -> dict[str, Any]:
        composites = raw.get("composites") or {}
        return {
            "id": raw.get("id") or str(uuid.uuid4()),
            "name": raw["name"],
            "description": raw.get("description", ""),
            "composite": bool(composites),
            "clientRole": client is not None,
            "containerId": self._client_uuid[client] if client is not None else self.realm,
            "attributes": raw.get("attributes") or {},
            "_composites": composites,
        }

    def _group(self, raw: Mapping[str, Any], parent: str) -> _Group:
        path = f"{parent}/{raw['name']}"
        return _Group(
            id=raw.get("id") or str(uuid.uuid5(uuid.NAMESPACE_URL, path)),
            name=raw["name"],
            path=path,
            realm_roles=list(raw.get("realmRoles") or []),
            client_roles={k: list(v) for k, v in (raw.get("clientRoles") or {}).items()},
            children=[self._group(sub, path) for sub in raw.get("subGroups") or []],
        )

    @staticmethod
    def _public(role: Mapping[str, Any], brief: bool) -> dict[str, Any]:
        out = {k: v for k, v in role.items() if not k.startswith("_")}
        if brief:
            out.pop("attributes")
        return out

    def _find_realm_role(self, name: str) -> dict[str, Any] | None:
        return next((r for r in self._realm_roles if r["name"] == name), None)

    def _find_client_role(self, client_uuid: str, name: str) -> dict[str, Any] | None:
        return next((r for r in self._client_roles.get(client_uuid, []) if r["name"] == name), None)

    def _expand_composites(self, role: Mapping[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        composites = role["_composites"]
        for name in composites.get("realm", []):
            found = self._find_realm_role(name)
            if found is not None:
                out.append(self._public(found, brief=True))
        for client, names in composites.get("client", {}).items():
            for name in names:
                found = self._find_client_role(self._client_uuid[client], name)
                if found is not None:
                    out.append(self._public(found, brief=True))
        return out

    def _brief_group(self, group: _Group) -> dict[str, Any]:
        return {
            "id": group.id,
            "name": group.name,
            "path": group.path,
            "subGroupCount": len(group.children),
            "subGroups": [],
            "attributes": {},
        }

    # -- plumbing ------------------------------------------------------------------------------------

    def _gate(self, request: Request, *, admin: bool) -> Response | None:
        self.seen.append((request.url.path, "authorization" in request.headers))
        if self.fail_with is not None:
            return JSONResponse({"error": "unavailable"}, status_code=self.fail_with)
        if request.path_params.get("realm") != self.realm:
            return JSONResponse({"error": "Realm not found."}, status_code=404)
        if admin:
            header = request.headers.get("authorization", "")
            token = header.removeprefix("Bearer ")
            expires = self._tokens.get(token)
            if not header.startswith("Bearer ") or expires is None or expires < time.time():
                return JSONResponse({"error": "HTTP 401 Unauthorized"}, status_code=401)
        return None

    def _client_ok(self, form: Mapping[str, str]) -> bool:
        secret = str(form.get("client_secret", "")).encode()
        return form.get("client_id") == self.client_id and hmac.compare_digest(secret, self._secret)

    # -- OpenID endpoints --------------------------------------------------------------------------

    async def well_known(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=False)) is not None:
            return denied
        issuer = str(request.base_url).rstrip("/") + f"/realms/{self.realm}"
        oidc = issuer + "/protocol/openid-connect"
        return JSONResponse(
            {
                "issuer": issuer,
                "token_endpoint": oidc + "/token",
                "introspection_endpoint": oidc + "/token/introspect",
                "jwks_uri": oidc + "/certs",
                "grant_types_supported": [
                    "client_credentials",
                    "urn:ietf:params:oauth:grant-type:uma-ticket",
                ],
                "id_token_signing_alg_values_supported": ["ES256"],
            }
        )

    async def certs(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=False)) is not None:
            return denied
        jwk = {
            "kid": self._kid,
            "kty": "EC",
            "alg": "ES256",
            "use": "sig",
            "crv": "P-256",
            "x": _b64url(self._key.x),
            "y": _b64url(self._key.y),
        }
        return JSONResponse({"keys": [jwk]})

    async def token(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=False)) is not None:
            return denied
        form = await _form(request)
        grant = form.get("grant_type")
        if grant == "urn:ietf:params:oauth:grant-type:uma-ticket":
            bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
            grants = self.uma_grants.get(bearer)
            if grants is None:
                return JSONResponse({"error": "invalid_grant"}, status_code=401)
            await anyio.sleep(self.uma_delay)
            return JSONResponse(grants)
        if not self._client_ok(form):
            return JSONResponse(
                {"error": "unauthorized_client", "error_description": "Invalid client credentials"},
                status_code=401,
            )
        if grant != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        access = secrets.token_urlsafe(32)
        self._tokens[access] = time.time() + _TOKEN_LIFETIME
        return JSONResponse(
            {
                "access_token": access,
                "expires_in": _TOKEN_LIFETIME,
                "refresh_expires_in": 0,
                "token_type": "Bearer",
                "not-before-policy": 0,
                "scope": str(form.get("scope", "")),
            }
        )

    async def introspect(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=False)) is not None:
            return denied
        form = await _form(request)
        if not self._client_ok(form):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        expires = self._tokens.get(str(form.get("token", "")))
        if expires is None or expires < time.time():
            return JSONResponse({"active": False})
        return JSONResponse(
            {"active": True, "client_id": self.client_id, "token_type": "Bearer", "exp": int(expires)}
        )

    # -- admin endpoints ---------------------------------------------------------------------------

    async def realm_roles(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=True)) is not None:
            return denied
        brief = _flag(request, "briefRepresentation", True)
        return JSONResponse(_page(request, [self._public(r, brief) for r in self._realm_roles]))

    async def realm_role_composites(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=True)) is not None:
            return denied
        role = self._find_realm_role(request.path_params["name"])
        if role is None:
            return JSONResponse({"error": "Could not find role"}, status_code=404)
        return JSONResponse(self._expand_composites(role))

    async def clients(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=True)) is not None:
            return denied
        wanted = request.query_params.get("clientId")
        found = [c for c in self._clients if wanted is None or c["clientId"] == wanted]
        return JSONResponse(_page(request, found))

    async def client_roles(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=True)) is not None:
            return denied
        client = request.path_params["id"]
        if client not in self._client_uuid.values():
            return JSONResponse({"error": "Could not find client"}, status_code=404)
        brief = _flag(request, "briefRepresentation", True)
        return JSONResponse([self._public(r, brief) for r in self._client_roles.get(client, [])])

    async def client_role_composites(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=True)) is not None:
            return denied
        role = self._find_client_role(request.path_params["id"], request.path_params["name"])
        if role is None:
            return JSONResponse({"error": "Could not find role"}, status_code=404)
        return JSONResponse(self._expand_composites(role))

    async def groups(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=True)) is not None:
            return denied
        return JSONResponse(_page(request, [self._brief_group(g) for g in self._groups]))

    async def group_children(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=True)) is not None:
            return denied
        group = self._group_index.get(request.path_params["id"])
        if group is None:
            return JSONResponse({"error": "Could not find group by id"}, status_code=404)
        return JSONResponse(_page(request, [self._brief_group(g) for g in group.children]))

    async def group_realm_roles(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=True)) is not None:
            return denied
        group = self._group_index.get(request.path_params["id"])
        if group is None:
            return JSONResponse({"error": "Could not find group by id"}, status_code=404)
        roles = [self._find_realm_role(name) for name in group.realm_roles]
        return JSONResponse([self._public(r, brief=True) for r in roles if r is not None])

    async def group_client_roles(self, request: Request) -> Response:
        if (denied := self._gate(request, admin=True)) is not None:
            return denied
        group = self._group_index.get(request.path_params["id"])
        client_uuid = request.path_params["client"]
        if group is None or client_uuid not in self._client_uuid.values():
            return JSONResponse({"error": "not found"}, status_code=404)
        client = next(c["clientId"] for c in self._clients if c["id"] == client_uuid)
        roles = [self._find_client_role(client_uuid, name) for name in group.client_roles.get(client, [])]
        return JSONResponse([self._public(r, brief=True) for r in roles if r is not None])
