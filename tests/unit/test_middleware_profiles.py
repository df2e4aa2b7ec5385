"""Error profiles (``bindu`` / ``a2a``), scheme-naming refusals, tenants and :func:`protect`.

Through httpx.ASGITransport in front of a Starlette echo app, with tokens of a local realm.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mudrika.errors import (
    BindingError,
    ExpiredError,
    IdpUnavailable,
    InvalidInput,
    NotYetValidError,
    ReplayError,
    SignatureError,
)
from mudrika.trust.a2a.extensions import AP2_V01_EXTENSION_URI, AP2_V02_EXTENSION_URI, ap2_versions
from mudrika.trust.a2a.methods import route_for, tenant_for_route
from mudrika.trust.jsonrpc import (
    A2A_CODES,
    ERROR_INFO_TYPE,
    AuthenticationRequired,
    ErrorProfile,
    InvalidToken,
    Reason,
    TokenExpired,
    profile_for_version,
    refusal_for,
    refusal_for_denial,
)
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.levels import TrustLevel
from mudrika.trust.middleware import (
    EXTENSIONS_KEY,
    KEYCLOAK_JWKS_PATH,
    TENANTS_KEY,
    A2AAuthMiddleware,
    A2ARoutes,
    Authenticated,
    AuthRequest,
    BearerAuthenticator,
    Credentials,
    ProtectedApp,
    protect,
)
from mudrika.trust.models import KeycloakRole
from mudrika.trust.policy import DidRoleRule, OperationRule, Policy, Principal
from tests._support.tokenfactory import Clock, LocalRealm

SIG = "http-message-signature"


# --- the profile-independent refusal ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "profile"),
    [
        (None, ErrorProfile.BINDU),
        ("", ErrorProfile.BINDU),
        ("0.3", ErrorProfile.BINDU),
        (" 0.2 ", ErrorProfile.BINDU),
        ("1.0", ErrorProfile.A2A),
        ("1.1", ErrorProfile.A2A),
        ("2", ErrorProfile.A2A),
        ("garbage", ErrorProfile.A2A),
        ("0" * 50, ErrorProfile.A2A),
    ],
)
def test_profile_for_version(version: str | None, profile: ErrorProfile) -> None:
    assert profile_for_version(version) is profile


def test_a2a_codes_collide_with_nothing_reserved() -> None:
    assert A2A_CODES.isdisjoint(JSON_RPC_ERROR_CODE_MAP.values())
    assert all(not -32768 <= code <= -32000 for code in A2A_CODES)


@pytest.mark.parametrize(
    ("exc", "scheme", "status", "seed", "reason"),
    [
        (AuthenticationRequired("none"), None, 401, -32009, Reason.AUTHENTICATION_REQUIRED),
        (InvalidToken("bad"), "Bearer", 401, -32010, Reason.INVALID_TOKEN),
        (TokenExpired("old"), "Bearer", 401, -32011, Reason.TOKEN_EXPIRED),
        (ExpiredError("old", code="signature_expired"), SIG, 401, -32011, Reason.SIGNATURE_EXPIRED),
        (ReplayError("again"), SIG, 401, -32010, Reason.REPLAYED_REQUEST),
        (ReplayError("again"), "DPoP", 401, -32010, Reason.REPLAYED_REQUEST),
        (BindingError("elsewhere", code="wrong_audience"), SIG, 401, -32010, Reason.WRONG_AUDIENCE),
        (SignatureError("forged"), SIG, 401, -32012, Reason.INVALID_SIGNATURE),
        (NotYetValidError("future"), SIG, 401, -32010, Reason.INVALID_SIGNED_REQUEST),
        (InvalidInput("junk"), SIG, 401, -32010, Reason.INVALID_SIGNED_REQUEST),
        (RuntimeError("bug"), "Bearer", 401, -32010, Reason.INVALID_TOKEN),
        (IdpUnavailable("down"), "Bearer", 503, -32010, Reason.AUTHENTICATION_UNAVAILABLE),
    ],
)
def test_refusal_names_what_failed_in_which_scheme(
    exc: Exception, scheme: str | None, status: int, seed: int, reason: Reason
) -> None:
    refusal = refusal_for(exc, scheme=scheme)
    assert (refusal.status, int(refusal.seed_code), refusal.reason) == (status, seed, reason)
    if scheme == SIG:
        assert "token" not in refusal.message.lower()  # no token was sent
    bindu = refusal.error_object(ErrorProfile.BINDU)
    assert bindu == {"code": seed, "message": refusal.message}
    a2a = refusal.error_object(ErrorProfile.A2A)
    assert a2a["code"] in A2A_CODES
    assert a2a["data"] == [
        {
            "@type": ERROR_INFO_TYPE,
            "reason": str(reason),
            "domain": "mudrika.trust",
            "metadata": {} if scheme is None else {"scheme": scheme},
        }
    ]


def test_denial_refusals() -> None:
    assert refusal_for_denial("no_role").reason is Reason.PERMISSION_DENIED
    tenant = refusal_for_denial("wrong_tenant", scheme="Bearer")
    assert (tenant.status, tenant.reason) == (403, Reason.WRONG_TENANT)
    assert tenant.challenge(ErrorProfile.A2A, realm="r") == 'Bearer realm="r", error="insufficient_scope"'
    assert tenant.rest_body()["error"]["status"] == "PERMISSION_DENIED"


def test_challenges_per_profile_and_scheme() -> None:
    replay = refusal_for(ReplayError("again"), scheme=SIG)
    assert replay.challenge(ErrorProfile.BINDU, realm="r") == 'Bearer realm="r", error="invalid_token"'
    assert replay.challenge(ErrorProfile.A2A, realm="r") == 'Signature realm="r", error="invalid_signature"'
    dpop = refusal_for(InvalidToken("bad"), scheme="DPoP")
    assert dpop.challenge(ErrorProfile.A2A, realm='a"b') == 'DPoP realm="a\\"b", error="invalid_token"'
    assert refusal_for(IdpUnavailable("down")).challenge(ErrorProfile.A2A, realm="r") is None


# --- the middleware ------------------------------------------------------------------------------


class Echo:
    """Records what reaches the app: the principal, the tenants the middleware decided on."""

    def __init__(self) -> None:
        self.seen: list[tuple[Principal, Any]] = []
        routes = [
            Route("/", self.record, methods=["POST"]),
            Route("/{tenant}/tasks/{id}", self.record, methods=["GET"]),
            Route("/tasks/{id}", self.record, methods=["GET"]),
        ]
        self.app = Starlette(routes=routes)

    async def record(self, request: Request) -> Response:
        assert isinstance(request.auth, Credentials)
        assert request.auth.scopes == sorted(request.auth.permissions)
        self.seen.append((request.auth, request.scope["state"][TENANTS_KEY]))
        return JSONResponse({"jsonrpc": "2.0", "result": "ok", "id": 1})


def _policy() -> Policy:
    roles = [KeycloakRole(role_id="r1", role_name="agent", trust_level=TrustLevel.OPERATOR, realm_name="m")]
    operations = {
        "message/send": OperationRule(min_level=TrustLevel.OPERATOR),
        "tasks/get": OperationRule(min_level=TrustLevel.VIEWER),
        "tasks/cancel": OperationRule(min_level=TrustLevel.ADMIN),
    }
    did_roles = {"did:key:z6MkSigner": DidRoleRule(roles=["agent"], tenants=["acme"])}
    return Policy(roles=roles, operations=operations, did_roles=did_roles, tenant_claim="organization")


class FixedDid:
    """A stand-in signature scheme whose signer is always the same DID (no roles of its own)."""

    scheme = SIG
    credential_headers = frozenset({"signature"})

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        principal = Principal(
            subject="did:key:z6MkSigner", did="did:key:z6MkSigner", identity_provider="custom"
        )
        return Authenticated(principal=principal, scheme=SIG, credential_id="sig")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def echo() -> Echo:
    return Echo()


def _app(
    local: LocalRealm,
    jwks: JwksCache,
    clock: Clock,
    echo: Echo,
    *,
    realm: str = "a2a",
    error_profile: str = "auto",
) -> A2AAuthMiddleware:
    verifier = AccessTokenVerifier(
        issuer=local.issuer, audience="agent-api", azp_allowlist=None, jwks=jwks, clock=clock
    )
    return A2AAuthMiddleware(
        echo.app,
        authenticators=[BearerAuthenticator(verifier), FixedDid()],
        policy=_policy(),
        routes=A2ARoutes(error_profile=error_profile),
        realm=realm,
    )


@pytest.fixture
async def client(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, echo: Echo
) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=_app(realm, jwks, clock, echo, realm="m"))
    async with httpx.AsyncClient(transport=transport, base_url="http://agent.test") as http:
        yield http


def _call(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": 9}


def _bearer(realm: LocalRealm, **claims: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {realm.token(**claims)}"}


V1 = {"A2A-Version": "1.0"}


@pytest.mark.anyio
async def test_profile_follows_the_a2a_version_header_and_query(client: httpx.AsyncClient) -> None:
    seed = await client.post("/", json=_call("SendMessage"))
    assert seed.json()["error"] == {"code": -32009, "message": "Authentication required"}
    spec = await client.post("/", json=_call("SendMessage"), headers=V1)
    assert spec.status_code == 401
    assert spec.json()["error"]["code"] == -31401
    assert spec.json()["error"]["data"][0]["reason"] == "AUTHENTICATION_REQUIRED"
    query = await client.post("/?A2A-Version=1.0", json=_call("SendMessage"))
    assert query.json()["error"]["code"] == -31401


@pytest.mark.anyio
async def test_fixed_profile_ignores_the_header(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, echo: Echo
) -> None:
    for fixed, code in (("bindu", -32009), ("a2a", -31401)):
        app = _app(realm, jwks, clock, echo, error_profile=fixed)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://a.test"
        ) as http:
            for headers in ({}, V1, {"A2A-Version": "0.3"}):
                answer = await http.post("/", json=_call("SendMessage"), headers=headers)
                assert answer.json()["error"]["code"] == code
    with pytest.raises(InvalidInput):
        _app(realm, jwks, clock, echo, error_profile="grpc")


@pytest.mark.anyio
async def test_a2a_rest_refusal_is_a_google_rpc_status(client: httpx.AsyncClient, realm: LocalRealm) -> None:
    bad = await client.get("/tasks/1", headers={**V1, "Authorization": "Bearer not.a.token"})
    assert bad.status_code == 401
    # The failing scheme's challenge, then the other scheme this server accepts (RFC 9110 §11.6.1).
    assert bad.headers.get_list("www-authenticate") == [
        'Bearer realm="m", error="invalid_token"',
        'Signature realm="m"',
    ]
    error = bad.json()["error"]
    assert (error["code"], error["status"], error["message"]) == (401, "UNAUTHENTICATED", "Invalid token")
    assert error["details"][0]["reason"] == "INVALID_TOKEN"
    assert error["details"][0]["metadata"] == {"scheme": "Bearer"}


@pytest.mark.anyio
async def test_expired_dpop_scheme_is_named(
    client: httpx.AsyncClient, realm: LocalRealm, clock: Clock
) -> None:
    token = realm.token(exp=int(clock()) - 600)
    answer = await client.post(
        "/", json=_call("SendMessage"), headers={**V1, "Authorization": f"DPoP {token}"}
    )
    assert answer.status_code == 401
    (info,) = answer.json()["error"]["data"]
    assert info["metadata"] == {"scheme": "DPoP"}


@pytest.mark.anyio
async def test_did_signer_gets_roles_and_tenants_from_did_roles(
    client: httpx.AsyncClient, echo: Echo
) -> None:
    answer = await client.post("/", json=_call("SendMessage", tenant="acme"), headers={"Signature": "x"})
    assert answer.status_code == 200
    principal, tenants = echo.seen[-1]
    assert principal.roles == frozenset({"agent"})
    assert principal.tenants == frozenset({"acme"})
    assert tenants == ("acme",)
    other = await client.post(
        "/", json=_call("SendMessage", tenant="globex"), headers={**V1, "Signature": "x"}
    )
    assert other.status_code == 403
    assert other.json()["error"]["data"][0]["reason"] == "WRONG_TENANT"
    assert other.json()["id"] == 9
    assert len(echo.seen) == 1


@pytest.mark.anyio
async def test_token_tenants_from_the_claim_on_both_bindings(
    client: httpx.AsyncClient, realm: LocalRealm, echo: Echo
) -> None:
    headers = _bearer(realm, organization=["acme"])
    assert (
        await client.post("/", json=_call("SendMessage", tenant="acme"), headers=headers)
    ).status_code == 200
    assert (await client.get("/acme/tasks/7", headers=headers)).status_code == 200
    assert echo.seen[-1][1] == ("acme",)
    assert (await client.get("/tasks/7", headers=headers)).status_code == 200  # no tenant named
    assert echo.seen[-1][1] == (None,)
    denied_rest = await client.get("/globex/tasks/7", headers={**headers, **V1})
    assert denied_rest.status_code == 403
    assert denied_rest.json()["error"]["details"][0]["reason"] == "WRONG_TENANT"
    denied_rpc = await client.post("/", json=_call("SendMessage", tenant="globex"), headers=headers)
    assert denied_rpc.json()["error"] == {"code": -32013, "message": "Forbidden for this tenant"}
    untenanted = _bearer(realm)
    assert (await client.get("/acme/tasks/7", headers=untenanted)).status_code == 403
    assert len(echo.seen) == 3


@pytest.mark.anyio
async def test_tenant_of_the_wrong_type_is_an_invalid_request(
    client: httpx.AsyncClient, realm: LocalRealm
) -> None:
    answer = await client.post("/", json=_call("SendMessage", tenant=["acme"]), headers=_bearer(realm))
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == -32600


@pytest.mark.anyio
async def test_batch_denials_use_the_request_profile(client: httpx.AsyncClient, realm: LocalRealm) -> None:
    batch = [
        {"jsonrpc": "2.0", "method": "CancelTask", "params": {"id": "x"}, "id": 1},
        {"jsonrpc": "2.0", "method": "SendMessage", "params": {"tenant": "globex"}, "id": 2},
    ]
    answer = await client.post("/", json=batch, headers={**_bearer(realm), **V1})
    assert answer.status_code == 403
    reasons = {item["id"]: item["error"]["data"][0]["reason"] for item in answer.json()}
    assert reasons == {1: "PERMISSION_DENIED", 2: "WRONG_TENANT"}


# --- protect -------------------------------------------------------------------------------------


def _policy_file(tmp_path: Any) -> Any:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "version: 1\nroles:\n  - {role_id: r-1, role_name: agent, realm_name: agents, trust_level: operator}\n"
        "operations:\n  message/send: {min_level: operator}\n"
    )
    return path


def test_protect_builds_the_keycloak_case_without_contacting_it(tmp_path: Any) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("never reached")

    protected = protect(
        app, realm="https://kc.example/realms/agents", audience="agent-api", policy=_policy_file(tmp_path)
    )
    assert isinstance(protected, ProtectedApp)
    middleware = protected.middleware
    assert isinstance(middleware, A2AAuthMiddleware)
    assert middleware.realm == "agents"
    assert middleware.error_profile == "auto"
    (bearer,) = middleware.authenticators
    assert isinstance(bearer, BearerAuthenticator)
    assert repr(protected).startswith("ProtectedApp(")
    assert KEYCLOAK_JWKS_PATH == "/protocol/openid-connect/certs"


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"realm": "https://kc.example/realms/agents"},  # neither audience nor azp_allowlist
        {"audience": "agent-api", "public_origin": "https://agent.example"},  # audience without realm
        {"public_origin": "https://agent.example"},  # signatures without a replay store
        {"realm": "https://kc.example/", "audience": "agent-api"},  # not a realm URL
        {"realm": "http://kc.example/realms/agents", "audience": "agent-api"},  # plain http off loopback
    ],
)
def test_protect_refuses_incomplete_or_insecure_configuration(tmp_path: Any, options: dict[str, Any]) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("never reached")

    with pytest.raises(InvalidInput):
        protect(app, policy=_policy_file(tmp_path), **options)


# --- A2A-Extensions ------------------------------------------------------------------------------


class ExtensionsSeen:
    def __init__(self) -> None:
        self.seen: list[frozenset[str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.seen.append(scope["state"][EXTENSIONS_KEY])
        response = JSONResponse({"jsonrpc": "2.0", "result": "ok", "id": 1})
        await response(scope, receive, send)


@pytest.mark.anyio
async def test_extensions_header_is_recorded_and_required_ones_enforced() -> None:
    app = ExtensionsSeen()
    gate = A2AAuthMiddleware(
        app,
        authenticators=[FixedDid()],
        policy=_policy(),
        routes=A2ARoutes(required_extensions=[AP2_V02_EXTENSION_URI]),
    )
    signed = {"Signature": "x"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://a.test") as http:
        missing = await http.post("/", json=_call("SendMessage"), headers={**signed, **V1})
        assert missing.status_code == 400
        error = missing.json()["error"]
        assert error["code"] == -32008  # A2A's ExtensionSupportRequiredError
        assert error["data"][0]["reason"] == "EXTENSION_SUPPORT_REQUIRED"
        assert error["data"][0]["metadata"] == {"extensions": AP2_V02_EXTENSION_URI}
        rest = await http.get("/tasks/1", headers={**signed, **V1})
        assert rest.json()["error"]["status"] == "FAILED_PRECONDITION"
        both = f"{AP2_V01_EXTENSION_URI}, {AP2_V02_EXTENSION_URI}"
        ok = await http.post("/", json=_call("SendMessage"), headers={**signed, "A2A-Extensions": both})
        assert ok.status_code == 200
        assert app.seen == [frozenset({AP2_V01_EXTENSION_URI, AP2_V02_EXTENSION_URI})]
        assert ap2_versions(app.seen[0]) == {"0.1", "0.2"}
        # The 0.3 header activates extensions for A2A 0.3 calls only (a2a-sdk reads it for nothing else).
        legacy = await http.post(
            "/", json=_call("message/send"), headers={**signed, "X-A2A-Extensions": AP2_V02_EXTENSION_URI}
        )
        assert legacy.status_code == 200
        legacy_on_v10 = await http.post(
            "/", json=_call("SendMessage"), headers={**signed, "X-A2A-Extensions": AP2_V02_EXTENSION_URI}
        )
        assert (legacy_on_v10.status_code, legacy_on_v10.json()["error"]["code"]) == (400, -32008)
        flood = ",".join(f"https://e.example/{n}" for n in range(64))
        refused = await http.post("/", json=_call("SendMessage"), headers={**signed, "A2A-Extensions": flood})
        assert refused.status_code == 400
        assert len(app.seen) == 2


@pytest.mark.parametrize("v03", [False, True])
def test_tenant_is_read_from_the_route_starlette_would_match(v03: bool) -> None:
    assert route_for("POST", "/acme/message:send", v03_compat=v03) == ("message/send", "acme")
    assert route_for("HEAD", "/tasks/7", v03_compat=v03) == ("tasks/get", None)
    assert route_for("GET", "/acme/unknown", v03_compat=v03) is None
    assert tenant_for_route("POST", "/acme/message:send", v03_compat=v03) == "acme"
    assert tenant_for_route("GET", "/acme/tasks/7", v03_compat=v03) == "acme"
    assert tenant_for_route("POST", "/message:send", v03_compat=v03) is None
    # "/v1/tasks/7" is the 0.3 route when the server registers it (before the tenant mount); without
    # it, Starlette's tenant mount takes the path and "v1" is the tenant.
    assert tenant_for_route("GET", "/v1/tasks/7", v03_compat=v03) == (None if v03 else "v1")
    assert tenant_for_route("GET", "/acme/unknown", v03_compat=v03) is None
    # the prefix is below the tenant
    assert tenant_for_route("GET", "/api/acme/tasks/7", prefix="/api", v03_compat=v03) is None
    assert tenant_for_route("GET", "/acme/api/tasks/7", prefix="/api", v03_compat=v03) == "acme"
