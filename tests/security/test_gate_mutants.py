"""The protocol-neutral gate's rules that the mutation check (scripts/mutation.py) found no test for.

Each test states one behaviour an app, a client or a deployer relies on: the documented scope keys
the app reads, the refusal of a body that is not JSON, the request ids a refusal echoes, and the
configuration mistakes refused at start-up.  The gate is an :class:`A2AAuthMiddleware` in front of a
recording ASGI app, with an authenticator standing in for a scheme that needs the request body
(RFC 9421), so each test watches the gate alone.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest

from mudrika.errors import IdpUnavailable, InvalidInput, ReplayError, SignatureError
from mudrika.trust.middleware import A2AAuthMiddleware, AuthRequest, ClaimQuota, Limits, ResourceServer
from mudrika.trust.middleware._auth import Authenticated
from mudrika.trust.middleware._gate import _MEMO_LIMIT, parse_json, route_path
from mudrika.trust.policy import Policy, Principal

ORIGIN = "http://127.0.0.1:8000"
JSON = {"content-type": "application/json", "a2a-version": "1.0"}
POLICY_DOCUMENT: dict[str, Any] = {
    "version": 1,
    "roles": [{"role_id": "r1", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"}],
    "operations": {"message/send": {"min_level": "operator"}},
}
POLICY = Policy.from_document(POLICY_DOCUMENT)
SEND = {"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {}}}


class _Agent:
    """The A2A server behind the gate: records the scope of every call that reaches it."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})


@dataclass
class _Signer:
    """An authenticator of a scheme that reads the body (as RFC 9421 does): it decides after the
    body is read, so its refusals may echo the request's ids."""

    failure: Exception | None = None
    scheme: str = "http-message-signature"
    credential_headers: tuple[str, ...] | None = None
    needs_body: bool = True
    roles: frozenset[str] = frozenset({"agent"})
    tenants: frozenset[str] = frozenset()
    did: str | None = None
    calls: int = 0
    claim: Callable[[], Awaitable[None]] | None = None
    absent: bool = False

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        self.calls += 1
        if self.absent:
            return None
        if self.failure is not None:
            raise self.failure
        principal = Principal("agent-7", roles=self.roles, tenants=self.tenants, did=self.did)
        return Authenticated(principal, self.scheme, "label-7", pending_claim=self.claim)


def _gate(agent: _Agent, signer: _Signer, **options: Any) -> A2AAuthMiddleware:
    return A2AAuthMiddleware(agent, authenticators=[signer], policy=POLICY, **options)


async def _post(app: Any, body: bytes | dict[str, Any] | list[Any]) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http:
        return await http.post("/", content=content, headers=JSON)


def _config_error(build: Callable[[], object]) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        build()
    return caught.value


# --- what the app reads -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_app_finds_the_caller_under_the_documented_state_keys() -> None:
    agent = _Agent()
    answer = await _post(_gate(agent, _Signer()), SEND)
    assert answer.status_code == 200
    (scope,) = agent.scopes
    state = scope["state"]
    # The names docs/trust.md gives the app: part of the contract, so spelled out here.
    assert state["mudrika.principal"].subject == "agent-7"
    assert state["mudrika.auth"].credential_id == "label-7"
    assert [decision.operation for decision in state["mudrika.decisions"]] == ["message/send"]
    assert state["mudrika.tenants"] == (None,)
    assert state["mudrika.extensions"] == frozenset()


# --- bodies that are not JSON ----------------------------------------------------------------------


@pytest.mark.parametrize("body", [b"{", b'{"a": NaN}', b"\xff{}", b"[" * 100_000])
def test_a_body_that_is_not_strict_json_is_refused_as_bad_json(body: bytes) -> None:
    refused = _config_error(lambda: parse_json(body))
    assert refused.code == "bad_json"


# --- the ids a refusal echoes -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_signature_refusal_echoes_the_id_of_the_call_it_refuses() -> None:
    agent = _Agent()
    answer = await _post(_gate(agent, _Signer(SignatureError("forged"))), SEND)
    assert answer.status_code == 401
    assert answer.json()["id"] == 7
    assert agent.scopes == []


@pytest.mark.anyio
@pytest.mark.parametrize("body", [b"5", b'"SendMessage"', b"[]", b"null"])
async def test_a_refused_body_that_is_no_call_is_answered_with_a_null_id(body: bytes) -> None:
    agent = _Agent()
    answer = await _post(_gate(agent, _Signer(SignatureError("forged"))), body)
    assert answer.status_code == 401
    assert answer.json()["id"] is None
    assert agent.scopes == []


# --- configuration a deployer gets wrong ----------------------------------------------------------


def test_a_gate_without_authenticators_or_with_loose_limits_is_refused() -> None:
    agent = _Agent()
    nobody = _config_error(lambda: A2AAuthMiddleware(agent, authenticators=[], policy=POLICY))
    assert nobody.code == "bad_config"
    loose = _config_error(
        lambda: A2AAuthMiddleware(
            agent,
            authenticators=[_Signer()],
            policy=POLICY,
            limits={"max_body_bytes": 10},  # type: ignore[arg-type]
        )
    )
    assert (loose.code, loose.fields.get("option")) == ("bad_config", "limits")


# --- the RFC 9728 metadata -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_head_of_the_metadata_sends_its_length_and_no_body() -> None:
    resource = ResourceServer.of(ORIGIN + "/", ["https://kc.example/realms/mudrika"])
    gate = _gate(_Agent(), _Signer(), resource=resource)
    sent: list[dict[str, Any]] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    for method in ("HEAD", "GET"):
        scope: dict[str, Any] = {
            "type": "http",
            "method": method,
            "path": resource.metadata_path,
            "headers": [],
            "state": {},
        }
        await gate(scope, receive, send)
    head_start, head_body, get_start, get_body = sent
    length = str(len(resource.document_bytes)).encode()
    assert dict(head_start["headers"])[b"content-length"] == length
    assert head_body["body"] == b""
    assert dict(get_start["headers"])[b"content-length"] == length
    assert get_body["body"] == resource.document_bytes


# --- refusals before the body ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_no_credentials_at_all_is_refused_closing_the_connection_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = _Agent()
    gate = _gate(agent, _Signer(credential_headers=("Signature", "Signature-Input")))
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _post(gate, SEND)
    assert answer.status_code == 401
    # The unread body stays the client's: the connection is not kept for another request.
    assert answer.headers["connection"] == "close"
    assert any(": no_credentials (" in record.getMessage() for record in caplog.records)
    assert agent.scopes == []


@pytest.mark.anyio
async def test_a_credential_decided_from_its_headers_is_verified_once() -> None:
    # A token scheme is decided before the body is read; verifying it again after the body would
    # double the cost of every call (and count every attempt twice for a scheme that counts them).
    agent = _Agent()
    bearer = _Signer(scheme="Bearer", credential_headers=("Authorization",), needs_body=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=_gate(agent, bearer)), base_url=ORIGIN
    ) as http:
        answer = await http.post("/", content=json.dumps(SEND), headers={**JSON, "authorization": "Bearer t"})
    assert answer.status_code == 200
    assert bearer.calls == 1
    assert len(agent.scopes) == 1


@pytest.mark.anyio
async def test_a_body_that_stalls_is_cut_off_with_408_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    agent = _Agent()
    gate = _gate(agent, _Signer(), limits=Limits(body_timeout=0.05))
    sent: list[dict[str, Any]] = []
    chunks = [{"type": "http.request", "body": b"{", "more_body": True}]

    async def receive() -> Any:
        if chunks:
            return chunks.pop()
        await anyio.sleep_forever()

    async def send(message: Any) -> None:
        sent.append(message)

    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/stalled", "headers": [], "state": {}}
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        await gate(scope, receive, send)
    assert sent[0]["status"] == 408
    assert any(
        "deadline" in record.getMessage() and "/stalled" in record.getMessage() for record in caplog.records
    )
    assert agent.scopes == []


@pytest.mark.anyio
async def test_a_body_that_arrives_in_pieces_within_the_deadline_is_read_whole() -> None:
    """A body whose later pieces are waited for is read under the deadline and forwarded whole
    (only a body already there is read without one)."""
    bodies: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        bodies.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    gate = A2AAuthMiddleware(app, authenticators=[_Signer()], policy=POLICY, limits=Limits(body_timeout=60.0))
    whole = json.dumps(SEND).encode()
    pieces = [whole[:5], whole[5:9], whole[9:]]
    sent: list[dict[str, Any]] = []

    async def receive() -> Any:
        await anyio.sleep(0)  # every piece is waited for: the read suspends
        piece = pieces.pop(0)
        return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

    async def send(message: Any) -> None:
        sent.append(message)

    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/", "headers": [], "state": {}}
    await gate(scope, receive, send)
    assert sent[0]["status"] == 200
    assert bodies == [whole]


# --- policy denials -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_policy_denial_is_logged_with_the_operation_and_the_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = _Agent()
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _post(_gate(agent, _Signer(roles=frozenset({"guest"}))), SEND)
    assert answer.status_code == 403
    assert any(
        "denied message/send for agent-7" in record.getMessage() and "label-7" in record.getMessage()
        for record in caplog.records
    )
    assert agent.scopes == []


# --- single-use values and the claim quota ------------------------------------------------------


async def _claimed() -> None:
    return None


@pytest.mark.anyio
async def test_a_caller_over_its_claim_quota_never_reaches_the_agent_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = _Agent()
    gate = _gate(agent, _Signer(claim=_claimed), limits=Limits(claim_quota=ClaimQuota(limit=1, window=3600)))
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        first = await _post(gate, SEND)
        second = await _post(gate, SEND)
    assert (first.status_code, second.status_code) == (200, 429)
    assert "retry-after" in second.headers
    assert len(agent.scopes) == 1
    assert any("claim quota exceeded by agent-7" in record.getMessage() for record in caplog.records)


@pytest.mark.anyio
async def test_a_replayed_single_use_value_is_refused_and_logged_with_its_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def replayed() -> None:
        raise ReplayError("this nonce was already used")

    agent = _Agent()
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _post(_gate(agent, _Signer(claim=replayed)), SEND)
    assert answer.status_code == 401
    assert answer.json()["id"] == 7
    assert any("refused POST /: replay" in record.getMessage() for record in caplog.records)
    assert agent.scopes == []


# --- challenges -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_failed_signature_is_challenged_as_a_signature_and_a_token_offered_beside_it() -> None:
    resource = ResourceServer.of(ORIGIN + "/", ["https://kc.example/realms/mudrika"])
    signer = _Signer(SignatureError("forged"))
    gate = A2AAuthMiddleware(
        _Agent(), authenticators=[signer, _Signer(scheme="Bearer")], policy=POLICY, resource=resource
    )
    answer = await _post(gate, SEND)
    assert answer.status_code == 401
    # The RFC 9728 parameters belong to the token challenge, the one a client answers with a token.
    assert answer.headers.get_list("www-authenticate") == [
        'Signature realm="a2a", error="invalid_signature"',
        f'Bearer realm="a2a", resource_metadata="{resource.metadata_url}"',
    ]


@pytest.mark.anyio
async def test_a_policy_denial_keeps_the_connection_open() -> None:
    # Only a refusal before the body is read closes the connection; a caller the policy refuses has
    # sent its whole request and may send the next one on the same connection.
    answer = await _post(_gate(_Agent(), _Signer(roles=frozenset({"guest"}))), SEND)
    assert answer.status_code == 403
    assert "connection" not in answer.headers


# --- how refusals after the body are answered and logged ----------------------------------------


@pytest.mark.anyio
async def test_a_refusal_after_the_whole_body_keeps_the_connection_open() -> None:
    answer = await _post(_gate(_Agent(), _Signer(SignatureError("forged"))), SEND)
    assert answer.status_code == 401
    assert "connection" not in answer.headers


@pytest.mark.anyio
async def test_an_unreachable_identity_provider_is_503_and_logged_as_unavailable_not_as_a_bug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = _Agent()
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _post(_gate(agent, _Signer(IdpUnavailable("JWKS unreachable"))), SEND)
    assert answer.status_code == 503
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "auth unavailable for POST /: idp_unavailable"
    assert agent.scopes == []


@pytest.mark.anyio
async def test_an_authenticator_that_breaks_denies_and_is_logged_as_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = _Agent()
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _post(_gate(agent, _Signer(RuntimeError("bug"))), SEND)
    assert answer.status_code == 401
    (record,) = caplog.records
    assert (record.levelno, record.getMessage()) == (logging.ERROR, "authenticator raised RuntimeError")
    assert agent.scopes == []


# --- the policy's grants ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_tenants_the_credential_names_are_kept_when_the_policy_reads_no_tenant_claim() -> None:
    agent = _Agent()
    gate = _gate(agent, _Signer(scheme="Bearer", tenants=frozenset({"acme"})))
    in_own = await _post(gate, {**SEND, "params": {"tenant": "acme", "message": {}}})
    in_other = await _post(gate, {**SEND, "params": {"tenant": "globex", "message": {}}})
    assert (in_own.status_code, in_other.status_code) == (200, 403)
    assert [scope["state"]["mudrika.tenants"] for scope in agent.scopes] == [("acme",)]


@pytest.mark.anyio
async def test_tenants_the_credential_names_are_not_replaced_by_the_policy_tenant_claim() -> None:
    # The tenant claim fills in tenants for a caller that has none; it never overrides tenants the
    # authenticator already established.
    policy = Policy.from_document(
        {
            "version": 1,
            "roles": [
                {"role_id": "r1", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"}
            ],
            "operations": {"message/send": {"min_level": "operator"}},
            "tenant_claim": "organization",
        }
    )
    agent = _Agent()
    signer = _Signer(scheme="Bearer", tenants=frozenset({"acme"}))
    gate = A2AAuthMiddleware(agent, authenticators=[signer], policy=policy)
    answer = await _post(gate, {**SEND, "params": {"tenant": "acme", "message": {}}})
    assert answer.status_code == 200
    assert [scope["state"]["mudrika.tenants"] for scope in agent.scopes] == [("acme",)]


@pytest.mark.anyio
async def test_a_did_signer_holds_the_roles_the_policy_grants_its_did() -> None:
    did = "did:web:agents.example:buyer"
    policy = Policy.from_document(
        {
            "version": 1,
            "roles": [
                {"role_id": "r1", "role_name": "agent", "realm_name": "mudrika", "trust_level": "operator"}
            ],
            "operations": {"message/send": {"min_level": "operator"}},
            "did_roles": {did: {"roles": ["agent"]}},
        }
    )
    agent = _Agent()
    signer = _Signer(roles=frozenset(), did=did)
    answer = await _post(A2AAuthMiddleware(agent, authenticators=[signer], policy=policy), SEND)
    assert answer.status_code == 200
    assert agent.scopes[0]["state"]["mudrika.principal"].roles == frozenset({"agent"})


def test_the_grants_memo_stays_within_its_bound_however_many_credentials_are_seen() -> None:
    # One entry per cached credential: a caller minting credentials must not grow it without end.
    gate = _gate(_Agent(), _Signer())
    seen = [
        Authenticated(
            Principal(f"agent-{index}", did=f"did:web:a{index}.example"), "Signature", f"label-{index}"
        )
        for index in range(_MEMO_LIMIT + 3)
    ]
    for auth in seen:
        gate._with_policy_grants(auth)
        assert 0 < len(gate._grants_memo) <= _MEMO_LIMIT
    assert gate._with_policy_grants(seen[-1]) is seen[-1]


def test_a_caller_the_policy_can_grant_nothing_leaves_no_memo_entry() -> None:
    """A token caller under a policy without ``tenant_claim`` (or whose token names its tenants) gets
    nothing from the policy file: it is passed on as it is, and nothing is remembered for it (a
    store per distinct credential would cost on every request and never pay)."""
    gate = _gate(_Agent(), _Signer())
    plain = Authenticated(Principal("agent-1"), "Bearer", "label-1")
    signer = Authenticated(Principal("agent-2", did="did:web:b.example"), "Bearer", "label-2")
    assert gate._with_policy_grants(plain) is plain
    assert gate._with_policy_grants(signer) is signer  # a DID under a token scheme: no did_roles
    assert gate._grants_memo == {}
    claimed = A2AAuthMiddleware(
        _Agent(),
        authenticators=[_Signer()],
        policy=Policy.from_document({**POLICY_DOCUMENT, "tenant_claim": "tenant"}),
    )
    named = Authenticated(Principal("agent-3", tenants=frozenset({"acme"})), "Bearer", "label-3")
    assert claimed._with_policy_grants(named) is named
    assert claimed._grants_memo == {}
    unnamed = Authenticated(Principal("agent-4"), "Bearer", "label-4", claims={"tenant": "acme"})
    enriched = claimed._with_policy_grants(unnamed)
    assert enriched.principal.tenants == frozenset({"acme"})
    assert claimed._with_policy_grants(unnamed) is enriched
    assert list(claimed._grants_memo) == [id(unnamed)]


@pytest.mark.anyio
async def test_a_request_no_authenticator_recognises_is_refused_as_no_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = _Agent()
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
        answer = await _post(_gate(agent, _Signer(absent=True)), SEND)
    assert answer.status_code == 401
    assert any(": no_credentials (" in record.getMessage() for record in caplog.records)
    assert agent.scopes == []


# --- where the app is mounted, and what it already keeps in its scope ----------------------------


async def _call(gate: Any, scope: dict[str, Any], body: bytes) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    await gate(scope, receive, send)
    return sent


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/agents/", "/agents"])
async def test_a_gate_mounted_below_a_root_path_routes_below_it(path: str) -> None:
    agent = _Agent()
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "root_path": "/agents",
        "headers": [],
        "state": {},
    }
    sent = await _call(_gate(agent, _Signer()), scope, json.dumps(SEND).encode())
    assert sent[0]["status"] == 200
    assert [decision.operation for decision in agent.scopes[0]["state"]["mudrika.decisions"]] == [
        "message/send"
    ]


def test_a_path_outside_the_root_path_is_routed_as_it_is() -> None:
    assert route_path({"path": "/tasks/t-1", "root_path": "/agents"}) == "/tasks/t-1"
    assert route_path({"path": "/agents/tasks/t-1", "root_path": "/agents"}) == "/tasks/t-1"
    assert route_path({"path": "/tasks/t-1"}) == "/tasks/t-1"


@pytest.mark.anyio
async def test_the_app_keeps_the_state_its_server_put_in_the_scope() -> None:
    agent = _Agent()
    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "state": {"db": "pool-1"}}
    sent = await _call(_gate(agent, _Signer()), scope, json.dumps(SEND).encode())
    assert sent[0]["status"] == 200
    state = agent.scopes[0]["state"]
    assert (state["db"], state["mudrika.principal"].subject) == ("pool-1", "agent-7")


@pytest.mark.anyio
async def test_bodies_past_the_read_limit_are_shed_with_503_closing_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = _Agent()
    gate = _gate(agent, _Signer(), limits=Limits(max_concurrent_reads=1, read_slot_wait=0))
    release = anyio.Event()
    first: list[dict[str, Any]] = []

    async def slow_receive() -> Any:
        await release.wait()
        return {"type": "http.request", "body": json.dumps(SEND).encode(), "more_body": False}

    async def first_send(message: Any) -> None:
        first.append(message)

    def scope() -> dict[str, Any]:
        return {"type": "http", "method": "POST", "path": "/", "headers": [], "state": {}}

    async with anyio.create_task_group() as group:
        group.start_soon(gate, scope(), slow_receive, first_send)
        await anyio.wait_all_tasks_blocked()  # the first request holds the only read slot
        with caplog.at_level(logging.WARNING, logger="mudrika.trust.middleware"):
            shed = await _call(gate, scope(), json.dumps(SEND).encode())
        release.set()
    assert shed[0]["status"] == 503
    assert (b"connection", b"close") in shed[0]["headers"]
    assert any("pre-auth read limit (1) reached" in record.getMessage() for record in caplog.records)
    assert first[0]["status"] == 200
    assert len(agent.scopes) == 1


@pytest.mark.anyio
async def test_public_paths_the_deployer_gives_replace_the_defaults() -> None:
    """A deployer's own list is the whole list: its paths are public, and a default it left out
    (the agent card) is no longer answered without credentials."""
    agent = _Agent()
    gate = _gate(agent, _Signer(absent=True), public_paths=["/health"])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url=ORIGIN) as http:
        health = await http.get("/health")
        card = await http.get("/.well-known/agent-card.json")
    assert health.status_code == 200
    assert card.status_code == 401
    assert [scope["path"] for scope in agent.scopes] == ["/health"]


@dataclass
class _PrecheckingSigner(_Signer):
    """A body-reading scheme with a header precheck that records every request it is shown."""

    prechecked: int = 0

    async def precheck(self, request: AuthRequest) -> None:
        self.prechecked += 1


@pytest.mark.anyio
async def test_a_scheme_whose_headers_are_absent_never_prechecks_the_request() -> None:
    """The headers decide which scheme speaks first: a request carrying only the second scheme's
    header is never shown to the first scheme's precheck (which could refuse it before its body)."""
    agent = _Agent()
    first = _PrecheckingSigner(credential_headers=("Signature", "Signature-Input"), absent=True)
    second = _PrecheckingSigner(credential_headers=("X-Other-Credential",))
    gate = A2AAuthMiddleware(agent, authenticators=[first, second], policy=POLICY)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url=ORIGIN) as http:
        answer = await http.post(
            "/", content=json.dumps(SEND).encode(), headers={**JSON, "X-Other-Credential": "7"}
        )
    assert answer.status_code == 200
    assert (first.prechecked, second.prechecked) == (0, 1)


# --- a header-only scheme that found no credentials of its own ----------------------------------


@dataclass
class _HeaderOnly:
    """A scheme decided from the headers (as Bearer is) that finds no credentials of its own in the
    header it declares (an ``Authorization: Basic`` request): it answers None before the body."""

    scheme: str = "Bearer"
    credential_headers: tuple[str, ...] = ("Authorization",)
    needs_body: bool = False
    calls: int = 0

    async def authenticate(self, request: AuthRequest) -> Authenticated | None:
        self.calls += 1
        return None


async def _post_with(app: Any, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http:
        return await http.post("/", content=json.dumps(SEND).encode(), headers={**JSON, **headers})


_BASIC = {"Authorization": "Basic dXNlcjpwYXNz"}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("declared_after", "sent", "body_read"),
    [
        # Nobody after it: nobody could authenticate the request, its body is never read.
        (None, _BASIC, False),
        # A body scheme after it whose headers came too: it decides, with the body.
        (("Signature",), {**_BASIC, "Signature": "sig=:AAAA:"}, True),
        # A body scheme after it whose headers did not come: nobody could decide.
        (("Signature",), _BASIC, False),
        # A scheme after it that declares no headers: only it can tell, with the body.
        ("undeclared", _BASIC, True),
    ],
)
async def test_after_a_header_scheme_finds_nothing_the_body_is_read_only_for_a_scheme_that_could_decide(
    declared_after: tuple[str, ...] | str | None, sent: dict[str, str], body_read: bool
) -> None:
    agent = _Agent()
    header_only = _HeaderOnly()
    authenticators: list[Any] = [header_only]
    signer = _Signer(credential_headers=None if declared_after == "undeclared" else declared_after)  # type: ignore[arg-type]
    if declared_after is not None:
        authenticators.append(signer)
    gate = A2AAuthMiddleware(agent, authenticators=authenticators, policy=POLICY)
    answer = await _post_with(gate, sent)
    if body_read:
        # With the body, every scheme is asked in order: the header scheme again (still nothing).
        assert (answer.status_code, header_only.calls, signer.calls, len(agent.scopes)) == (200, 2, 1, 1)
    else:
        assert (answer.status_code, header_only.calls, signer.calls, agent.scopes) == (401, 1, 0, [])
        assert answer.headers["connection"] == "close"
