"""An absent or invalid document is a deny, never an outage: every answer a did:web host (or a JWKS
endpoint) can give, through every entry point that sees it.

The red team's finding: a did:web document that was missing or broken answered 503 ("retry later"),
so a fact the caller controls — the DID it presents — read as an outage.  :data:`ANSWERS` says, for
each answer of the DID's host, which error the resolver raises (class, DID Resolution code,
``reason``), the HTTP status the A2A middleware and the push guard answer, and how
``mudrika did resolve`` exits.  Every entry-point test runs every row, so a new answer is one new
row.  The host is an ``httpx.MockTransport`` behind the did:web driver, or — for the rows about the
network itself (name resolution, refused connections, egress) — the real egress transport with a
name resolution the test supplies; nothing here leaves the machine.

A JWKS is the other way round (its URL is configuration, not input: every failure to get keys is
the verifier's own dependency failing, 503); :data:`JWKS_ANSWERS` pins that, and the one
caller-controlled case, a ``kid`` the fresh key set does not hold (401).
"""

from __future__ import annotations

import gzip
import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mudrika.crypto.jose import ASYMMETRIC_ALGORITHMS
from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.errors import (
    BindingError,
    DocumentError,
    EgressDenied,
    IdpUnavailable,
    MudrikaError,
    ResolutionError,
    UnavailableError,
    VerificationError,
)
from mudrika.identity.methods.web import DEFAULT_MAX_BYTES, WebDriver
from mudrika.identity.resolver import DIDResolver
from mudrika.net import egress as egress_module
from mudrika.net.egress import EgressPolicy, Resolve
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.a2a.push import PUSH_SIGNATURE_HEADER, PushNotificationGuard, PushSigner
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    HttpMessageSigner,
    HttpSignatureVerifier,
    ResolverKeyLookup,
)
from mudrika.trust.jsonrpc import InvalidToken
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import A2AAuthMiddleware, BearerAuthenticator, DidSignatureAuthenticator
from tests._support.cli import run_cli_json
from tests._support.httpsig import ORIGIN, sign_request
from tests._support.net import free_port
from tests._support.tokenfactory import Clock, LocalRealm, demo_policy

pytestmark = pytest.mark.security

Serve = Callable[[httpx.Request], httpx.Response]

#: A port nothing listens on: the "connection refused" row connects to it on 127.0.0.1.
CLOSED_PORT: Final = free_port()
#: The DID every signer presents (the mock hosts ignore the port; the real transport dials it).
DID: Final = f"did:web:agent.example%3A{CLOSED_PORT}"
KEYID: Final = f"{DID}#key-1"
WEBHOOK: Final = "https://client.example/hooks/a2a"
#: The A2A middleware's ErrorInfo reason for each status a refused signer can see.
MIDDLEWARE_REASON: Final = {401: "INVALID_SIGNED_REQUEST", 503: "AUTHENTICATION_UNAVAILABLE"}
#: The push guard's body for each status.
PUSH_BODY: Final = {401: {"error": "unauthorized"}, 503: {"error": "unavailable"}}
#: How the CLI labels each side of the tree on stderr (both exit 1).
CLI_LABEL: Final = {401: "verification failed:", 503: "error:"}


def _document(did: str, public: PublicKey) -> dict[str, Any]:
    return {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
        "id": did,
        "verificationMethod": [
            {
                "id": f"{did}#key-1",
                "type": "Multikey",
                "controller": did,
                "publicKeyMultibase": public.to_multikey(),
            }
        ],
        "authentication": [f"{did}#key-1"],
        "assertionMethod": [f"{did}#key-1"],
    }


def _status(status: int, headers: dict[str, str] | None = None) -> Serve:
    return lambda request: httpx.Response(status, headers=headers)


def _body(content: bytes, headers: dict[str, str] | None = None) -> Serve:
    # A stream, as a server's body is: the driver reads it raw, chunk by chunk, under its cap.
    return lambda request: httpx.Response(200, stream=httpx.ByteStream(content), headers=headers)


def _raise(error: type[httpx.TransportError]) -> Serve:
    def serve(request: httpx.Request) -> httpx.Response:
        raise error("simulated by the test", request=request)

    return serve


def _answers_with(addresses: list[str]) -> Resolve:
    return lambda host, port: addresses


def _no_such_name(host: str, port: int) -> list[str]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


class _Host(EgressPolicy):
    """The egress policy whose transport is the DID's host answering ``serve`` (sync and async)."""

    def __init__(self, serve: Serve) -> None:
        super().__init__()
        self._serve = serve

    def transport(self, **options: Any) -> httpx.BaseTransport:
        return httpx.MockTransport(self._serve)

    def async_transport(self, **options: Any) -> httpx.AsyncBaseTransport:
        return httpx.MockTransport(self._serve)


@dataclass(frozen=True)
class Answer:
    """One answer of the DID's host and what every entry point must make of it.

    Either ``serve`` (the host's HTTP answer) or ``resolve`` (the real egress transport, with this
    name resolution; ``private`` is the development opt-in for loopback).  ``http`` is the status the
    middleware and the push guard answer, ``exit`` the CLI's exit code.  ``reason`` None: the error
    carries no ``reason`` field worth pinning (the status is in ``fields["status"]`` instead).
    """

    name: str
    error: type[MudrikaError]
    code: str
    reason: str | None
    http: int
    exit: int
    serve: Serve | None = None
    resolve: Resolve | None = None
    private: bool = False

    def egress(self) -> EgressPolicy:
        if self.serve is not None:
            return _Host(self.serve)
        assert self.resolve is not None
        return EgressPolicy(
            allow_private_networks=self.private, resolve=self.resolve, timeout=2.0, deadline=2.0
        )

    def resolver(self) -> DIDResolver:
        return _resolver(self.egress())


def _resolver(egress: EgressPolicy) -> DIDResolver:
    """A resolver whose did:web driver fetches through ``egress`` (a fresh cache per call)."""
    return DIDResolver([WebDriver(egress=egress, timeout=2.0)])


_OTHER_DID: Final = "did:web:attacker.example"
_SOME_KEY: Final = KeyPair.generate("ed25519").public_key

ANSWERS: Final = [
    # The DID's controller chose these answers: a deny (401), whatever the caller retries.
    Answer("404", DocumentError, "notFound", None, 401, 1, serve=_status(404)),
    Answer("410 gone", DocumentError, "notFound", None, 401, 1, serve=_status(410)),
    Answer("403 forbidden", DocumentError, "notFound", "http_status", 401, 1, serve=_status(403)),
    Answer(
        "redirect to another host",
        DocumentError,
        "notFound",
        "redirect_refused",
        401,
        1,
        serve=_status(302, {"Location": "https://elsewhere.example/did.json"}),
    ),
    Answer(
        "not JSON", DocumentError, "invalidDidDocument", "malformed_json", 401, 1, serve=_body(b"{not json")
    ),
    Answer(
        "JSON, not a DID document",
        DocumentError,
        "invalidDidDocument",
        "bad_did_document",
        401,
        1,
        serve=_body(b"[1, 2, 3]"),
    ),
    Answer(
        "compressed",
        DocumentError,
        "invalidDidDocument",
        "content_encoding",
        401,
        1,
        serve=_body(
            gzip.compress(json.dumps(_document(DID, _SOME_KEY)).encode()), {"Content-Encoding": "gzip"}
        ),
    ),
    Answer(
        "too large",
        DocumentError,
        "invalidDidDocument",
        "too_large",
        401,
        1,
        serve=_body(b" " * (DEFAULT_MAX_BYTES + 1)),
    ),
    Answer(
        "another DID's document",
        BindingError,
        "document_id_mismatch",
        None,
        401,
        1,
        serve=_body(json.dumps(_document(_OTHER_DID, _SOME_KEY)).encode()),
    ),
    Answer(
        "name resolves to a private address",
        EgressDenied,
        "egress_denied",
        None,
        401,
        1,
        resolve=_answers_with(["10.0.0.1"]),
    ),
    # The host could not be reached or said "later": an outage, fail closed (503).
    Answer("500", ResolutionError, "internalError", "http_status", 503, 1, serve=_status(500)),
    Answer("503", ResolutionError, "internalError", "http_status", 503, 1, serve=_status(503)),
    Answer(
        "429 too many requests", ResolutionError, "internalError", "http_status", 503, 1, serve=_status(429)
    ),
    Answer(
        "read timeout", ResolutionError, "internalError", "timeout", 503, 1, serve=_raise(httpx.ReadTimeout)
    ),
    Answer(
        "connect timeout",
        ResolutionError,
        "internalError",
        "timeout",
        503,
        1,
        serve=_raise(httpx.ConnectTimeout),
    ),
    Answer(
        "connection refused",
        ResolutionError,
        "internalError",
        "transport",
        503,
        1,
        resolve=_answers_with(["127.0.0.1"]),
        private=True,
    ),
    Answer("DNS failure", ResolutionError, "internalError", "transport", 503, 1, resolve=_no_such_name),
]


def _check_error(error: MudrikaError, answer: Answer) -> None:
    assert type(error) is answer.error
    assert error.code == answer.code
    if answer.reason is not None:
        assert error.fields.get("reason") == answer.reason
    # The class decides the answer: a deny for the controller's facts, an outage only for "could not fetch".
    assert isinstance(error, VerificationError) is (answer.http == 401)
    assert isinstance(error, UnavailableError) is (answer.http == 503)


@pytest.fixture(params=ANSWERS, ids=[answer.name for answer in ANSWERS])
def answer(request: pytest.FixtureRequest) -> Answer:
    row: Answer = request.param
    return row


# -- the resolver API --------------------------------------------------------------------------------


def test_the_resolver_raises_the_class_and_code_of_the_answer(answer: Answer) -> None:
    with pytest.raises(MudrikaError) as info:
        answer.resolver().resolve(DID)
    _check_error(info.value, answer)
    with pytest.raises(MudrikaError) as key_info:
        answer.resolver().resolve_key(KEYID, "authentication")
    _check_error(key_info.value, answer)


@pytest.mark.anyio
async def test_the_async_resolver_raises_the_class_and_code_of_the_answer(answer: Answer) -> None:
    with pytest.raises(MudrikaError) as info:
        await answer.resolver().aresolve(DID)
    _check_error(info.value, answer)


def test_a_remembered_failure_keeps_its_class(answer: Answer) -> None:
    # The negative cache answers the second lookup without a fetch: it must not change the answer.
    resolver = answer.resolver()
    for _ in range(2):
        with pytest.raises(MudrikaError) as info:
            resolver.resolve(DID)
        _check_error(info.value, answer)
    assert info.value.fields.get("cached") is True


# -- the A2A middleware, a DID-signed request ----------------------------------------------------------


async def _agent(request: Request) -> Response:
    return JSONResponse({"jsonrpc": "2.0", "result": "ok", "id": 1})


@asynccontextmanager
async def _middleware(resolver: DIDResolver) -> AsyncIterator[httpx.AsyncClient]:
    verifier = HttpSignatureVerifier(
        keys=ResolverKeyLookup(resolver),
        replay_store=MemoryReplayStore(1000),
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
    )
    app = A2AAuthMiddleware(
        Starlette(routes=[Route("/", _agent, methods=["POST"])]),
        authenticators=[DidSignatureAuthenticator(verifier, public_origin=ORIGIN)],
        policy=demo_policy(),
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as client:
        yield client


_CALL: Final = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}).encode()


async def _signed_call(client: httpx.AsyncClient, key: KeyPair) -> httpx.Response:
    headers = sign_request(HttpMessageSigner(key, KEYID), "POST", ORIGIN + "/", _CALL)
    return await client.post("/", content=_CALL, headers={**headers, "A2A-Version": "1.0"})


@pytest.mark.anyio
async def test_the_middleware_answers_401_or_503_as_the_table_says(answer: Answer) -> None:
    async with _middleware(answer.resolver()) as client:
        response = await _signed_call(client, KeyPair.generate("ed25519"))
    assert response.status_code == answer.http
    assert response.json()["error"]["data"][0]["reason"] == MIDDLEWARE_REASON[answer.http]
    # Only an outage invites a retry; a deny must not.
    assert ("retry-after" in response.headers) is (answer.http == 503)


# -- the push-notification guard -----------------------------------------------------------------------


async def _webhook(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _push(resolver: DIDResolver, key: KeyPair) -> httpx.Response:
    guard = PushNotificationGuard(
        _webhook,
        path="/hooks/a2a",
        audience=WEBHOOK,
        trusted_agents=[DID],
        algorithms=ASYMMETRIC_ALGORITHMS,
        resolver=resolver,
        replay_store=MemoryReplayStore(),
        expected_token=None,
    )
    body = b'{"statusUpdate": {"taskId": "t-1"}}'
    signature = PushSigner(key, kid=KEYID).sign(WEBHOOK, body)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=guard), base_url="https://client.example"
    ) as http:
        return await http.post("/hooks/a2a", content=body, headers={PUSH_SIGNATURE_HEADER: signature})


@pytest.mark.anyio
async def test_the_push_guard_answers_401_or_503_as_the_table_says(answer: Answer) -> None:
    response = await _push(answer.resolver(), KeyPair.generate("ed25519"))
    assert response.status_code == answer.http
    assert response.json() == PUSH_BODY[answer.http]


# -- the CLI: mudrika did resolve ----------------------------------------------------------------------


def test_did_resolve_exits_and_reports_as_the_table_says(
    answer: Answer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command builds its own policy from its flags; the row's policy stands in for it.
    monkeypatch.setattr(egress_module, "EgressPolicy", lambda **options: answer.egress())
    code, document, err = run_cli_json(capsys, "did", "resolve", DID, "--json")
    assert code == answer.exit
    assert document["error"]["code"] == answer.code
    if answer.reason is not None:
        assert document["error"]["fields"]["reason"] == answer.reason
    assert err.startswith(CLI_LABEL[answer.http])


# -- the control: a usable document passes every entry point -------------------------------------------


@pytest.mark.anyio
async def test_a_usable_document_passes_every_entry_point(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without this, a harness that broke every request would pass the table's deny rows."""
    key = KeyPair.generate("ed25519")
    serve = _body(json.dumps(_document(DID, key.public_key)).encode())
    assert _resolver(_Host(serve)).resolve_key(KEYID, "authentication") == key.public_key
    async with _middleware(_resolver(_Host(serve))) as client:
        response = await _signed_call(client, key)
    assert response.status_code == 403  # authenticated; the demo policy gives a DID signer no role
    assert (await _push(_resolver(_Host(serve)), key)).status_code == 204
    monkeypatch.setattr(egress_module, "EgressPolicy", lambda **options: _Host(serve))
    code, document, _ = run_cli_json(capsys, "did", "resolve", DID, "--json")
    assert (code, document["didDocument"]["id"]) == (0, DID)


# -- JWKS: the configured issuer's keys -----------------------------------------------------------------


@dataclass(frozen=True)
class JwksAnswer:
    """One answer of the JWKS endpoint: every one is ``IdpUnavailable`` (``jwks_unavailable``, 503);
    ``reason`` tells the operator which failure it was."""

    name: str
    reason: str
    serve: Serve | None = None
    resolve: Resolve | None = None


JWKS_ANSWERS: Final = [
    JwksAnswer("404", "not_found", serve=_status(404)),
    JwksAnswer("410 gone", "not_found", serve=_status(410)),
    JwksAnswer("403 forbidden", "http_status", serve=_status(403)),
    JwksAnswer("500", "http_status", serve=_status(500)),
    JwksAnswer("not JSON", "invalid", serve=_body(b"<html>login</html>")),
    JwksAnswer("JSON, not a JWK Set", "invalid", serve=_body(b'{"issuer": "x"}')),
    JwksAnswer("too large", "invalid", serve=_body(b'{"keys": []}' + b" " * (300 * 1024))),
    JwksAnswer("connection refused", "unreachable", serve=_raise(httpx.ConnectError)),
    JwksAnswer("read timeout", "unreachable", serve=_raise(httpx.ReadTimeout)),
    JwksAnswer(
        "configured URL refused by the egress policy", "egress_denied", resolve=_answers_with(["10.0.0.1"])
    ),
]


@asynccontextmanager
async def _jwks(
    realm: LocalRealm, *, serve: Serve | None = None, resolve: Resolve | None = None
) -> AsyncIterator[JwksCache]:
    """The realm's JWKS cache, its endpoint answering ``serve``, or — with ``resolve`` — fetched
    through the real egress transport with that name resolution."""
    if serve is None:
        assert resolve is not None
        cache = JwksCache(
            jwks_uri=realm.jwks_uri,
            algorithms={"RS256"},
            clock=realm.clock,
            egress=EgressPolicy(resolve=resolve),
        )
        try:
            yield cache
        finally:
            await cache.aclose()
        return
    with httpx.Client(transport=httpx.MockTransport(serve)) as sync_client:
        async with httpx.AsyncClient(transport=httpx.MockTransport(serve)) as async_client:
            yield JwksCache(
                jwks_uri=realm.jwks_uri,
                algorithms={"RS256"},
                clock=realm.clock,
                http_client=sync_client,
                async_http_client=async_client,
            )


@pytest.fixture(params=JWKS_ANSWERS, ids=[answer.name for answer in JWKS_ANSWERS])
def jwks_answer(request: pytest.FixtureRequest) -> JwksAnswer:
    row: JwksAnswer = request.param
    return row


@pytest.mark.anyio
async def test_every_jwks_failure_is_the_idp_unavailable(realm: LocalRealm, jwks_answer: JwksAnswer) -> None:
    async with _jwks(realm, serve=jwks_answer.serve, resolve=jwks_answer.resolve) as cache:
        with pytest.raises(IdpUnavailable) as info:
            cache.key_for("k1")
        assert (info.value.code, info.value.fields["reason"]) == ("jwks_unavailable", jwks_answer.reason)
        with pytest.raises(IdpUnavailable) as refreshed:
            await cache.arefresh()
        assert refreshed.value.fields["reason"] == jwks_answer.reason


@pytest.mark.anyio
async def test_the_middleware_answers_503_for_every_jwks_failure(
    realm: LocalRealm, clock: Clock, jwks_answer: JwksAnswer
) -> None:
    async with _jwks(realm, serve=jwks_answer.serve, resolve=jwks_answer.resolve) as cache:
        response = await _bearer_call(realm, clock, cache, realm.token())
    assert response.status_code == 503
    assert response.json()["error"]["data"][0]["reason"] == "AUTHENTICATION_UNAVAILABLE"
    assert "retry-after" in response.headers


async def _bearer_call(realm: LocalRealm, clock: Clock, cache: JwksCache, token: str) -> httpx.Response:
    verifier = AccessTokenVerifier(
        issuer=realm.issuer, audience="agent-api", azp_allowlist=None, jwks=cache, clock=clock
    )
    app = A2AAuthMiddleware(
        Starlette(routes=[Route("/", _agent, methods=["POST"])]),
        authenticators=[BearerAuthenticator(verifier)],
        policy=demo_policy(),
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as client:
        return await client.post(
            "/", content=_CALL, headers={"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
        )


@pytest.mark.anyio
async def test_a_kid_missing_from_a_fresh_jwks_is_the_callers_fault(realm: LocalRealm, clock: Clock) -> None:
    async with _jwks(realm, serve=lambda request: httpx.Response(200, json=realm.jwks())) as cache:
        with pytest.raises(InvalidToken) as info:
            cache.key_for("not-published")
        assert info.value.code == "unknown_kid"
        unknown = realm.token(kid="not-published", key=realm.keys["k1"])
        response = await _bearer_call(realm, clock, cache, unknown)
        assert response.status_code == 401
        assert response.json()["error"]["data"][0]["reason"] == "INVALID_TOKEN"
        assert (await _bearer_call(realm, clock, cache, realm.token())).status_code == 200  # the control
