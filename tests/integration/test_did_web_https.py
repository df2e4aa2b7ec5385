"""did:web against a real HTTPS server on 127.0.0.1 (``http.server`` in a thread, trustme certificates).

The DIDs are ``did:web:localhost%3A<port>``; the test trusts the trustme CA through the
``ssl.SSLContext`` it passes to :class:`WebDriver`, and opts in to loopback destinations with
``EgressPolicy(allow_private_networks=True)`` (the strict default refuses them: see
tests/security/test_ssrf_attacks.py).  Each route of the server is a small function so a
test can serve exactly the misbehaviour it needs (oversized bodies with and without a length,
redirects, wrong ids, malformed JSON, compression, slowness).
"""

from __future__ import annotations

import json
import ssl
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trustme

from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.errors import BindingError, DocumentError, InvalidInput, KeyStoreError, ResolutionError
from mudrika.identity.did import parse_did
from mudrika.identity.document import DIDDocument
from mudrika.identity.methods import web
from mudrika.identity.resolver import DIDResolver
from mudrika.net.egress import EgressPolicy
from tests._support.net import free_port, wait_listening

pytestmark = pytest.mark.integration

Route = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Server:
    port: int
    client_context: ssl.SSLContext
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    @property
    def did(self) -> str:
        return f"did:web:localhost%3A{self.port}"


def _send(
    handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
    handler.send_response(status)
    for name, value in {
        "Content-Type": "application/did+json",
        "Content-Length": str(len(body)),
        **(headers or {}),
    }.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def _json(document: dict[str, Any]) -> Route:
    body = json.dumps(document).encode()
    return lambda handler: _send(handler, 200, body)


def _chunked(total: int) -> Route:
    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        chunk = b"x" * 8192
        sent = 0
        try:
            while sent < total:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            handler.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # the client hung up once it had seen enough: that is the point

    return route


def _redirect(location: str, status: int = 302) -> Route:
    return lambda handler: _send(handler, status, b"", {"Location": location})


def _make_handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            server.requests.append(self.path)
            route = server.routes.get(self.path)
            if route is None:
                _send(self, 404, b"not found")
            else:
                route(self)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


class _QuietServer(ThreadingHTTPServer):
    """Clients that hang up mid-answer are expected here (that is what the caps do): no tracebacks."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


def _start(httpd: HTTPServer, port: int) -> threading.Thread:
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    wait_listening(port)
    return thread


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def server(ca: trustme.CA) -> Iterator[Server]:
    port = free_port()
    state = Server(port=port, client_context=ssl.create_default_context())
    ca.configure_trust(state.client_context)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(server_context)
    httpd = _QuietServer(("127.0.0.1", port), _make_handler(state))
    httpd.socket = server_context.wrap_socket(httpd.socket, server_side=True)
    thread = _start(httpd, port)
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


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


#: Development opt-in: these servers listen on 127.0.0.1.
LOCAL = EgressPolicy(allow_private_networks=True)


def _driver(server: Server, **kwargs: Any) -> web.WebDriver:
    return web.WebDriver(verify=server.client_context, egress=LOCAL, **kwargs)


# -- happy paths -------------------------------------------------------------------------------------
def test_resolves_well_known_and_path_documents(server: Server) -> None:
    public = KeyPair.generate("ed25519").public_key
    alice = f"{server.did}:user:alice"
    server.routes["/.well-known/did.json"] = _json(_document(server.did, public))
    server.routes["/user/alice/did.json"] = _json(_document(alice, public))
    resolver = DIDResolver([_driver(server)])
    assert resolver.resolve_key(f"{server.did}#key-1", "authentication") == public
    assert resolver.resolve_key(f"{alice}#key-1", "assertionMethod") == public
    assert resolver.resolve(server.did).resolution_metadata["driver"] == "web"
    assert server.requests == ["/.well-known/did.json", "/user/alice/did.json"]  # second lookups were cached


@pytest.mark.anyio
async def test_async_resolution(server: Server) -> None:
    public = KeyPair.generate("p256").public_key
    server.routes["/.well-known/did.json"] = _json(_document(server.did, public))
    resolver = DIDResolver([_driver(server)])
    assert await resolver.aresolve_key(f"{server.did}#key-1", "authentication") == public


def test_same_host_redirects_are_followed_up_to_the_limit(server: Server) -> None:
    public = KeyPair.generate("ed25519").public_key
    server.routes["/.well-known/did.json"] = _redirect("/moved/did.json", 301)
    server.routes["/moved/did.json"] = _redirect(f"https://localhost:{server.port}/final/did.json", 307)
    server.routes["/final/did.json"] = _json(_document(server.did, public))
    assert _driver(server).resolve(parse_did(server.did)).document.id == server.did
    server.routes["/loop/did.json"] = _redirect("/loop/did.json")
    with pytest.raises(DocumentError) as info:
        _driver(server).resolve(parse_did(f"{server.did}:loop"))
    assert info.value.fields["reason"] == "too_many_redirects"
    assert server.requests.count("/loop/did.json") == web.DEFAULT_MAX_REDIRECTS + 1


def test_write_document_produces_the_files_a_server_serves(server: Server, tmp_path: Path) -> None:
    public = KeyPair.generate("ed25519").public_key
    root = tmp_path / "site"
    for did in (server.did, f"{server.did}:agents:shopper"):
        document = DIDDocument.from_json(_document(did, public))
        written = web.write_document(did, document, root)
        assert written == root / web.document_path(did)
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
        assert stat.S_IMODE(written.parent.stat().st_mode) == 0o700
        server.routes["/" + str(web.document_path(did))] = _json(json.loads(written.read_text()))
        assert _driver(server).resolve(parse_did(did)).document.to_json() == document.to_json()
    assert (root / ".well-known" / "did.json").is_file()
    assert (root / "agents" / "shopper" / "did.json").is_file()
    assert stat.S_IMODE((root / "agents").stat().st_mode) == 0o700


# -- refusals ----------------------------------------------------------------------------------------
def test_untrusted_certificate_is_refused(server: Server) -> None:
    server.routes["/.well-known/did.json"] = _json(
        _document(server.did, KeyPair.generate("ed25519").public_key)
    )
    with pytest.raises(ResolutionError) as info:
        web.WebDriver(egress=LOCAL).resolve(parse_did(server.did))  # system trust store: trustme CA unknown
    assert info.value.code == "internalError"
    assert info.value.fields["reason"] == "transport"
    assert server.requests == []


def test_plain_http_is_never_used() -> None:
    port = free_port()
    requests: list[str] = []

    class Plain(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            _send(self, 200, b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = _QuietServer(("127.0.0.1", port), Plain)
    thread = _start(httpd, port)
    try:
        assert web.url_for(f"did:web:localhost%3A{port}").startswith("https://")
        with pytest.raises(ResolutionError) as info:
            web.WebDriver(timeout=2.0, egress=LOCAL).resolve(parse_did(f"did:web:localhost%3A{port}"))
        assert info.value.code == "internalError"
        assert requests == []  # the TLS handshake failed: no HTTP request was ever made
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_redirect_to_http_or_another_host_is_refused(server: Server) -> None:
    for location in (
        f"http://localhost:{server.port}/plain/did.json",
        f"https://127.0.0.1:{server.port}/other/did.json",
        "https://attacker.example/did.json",
        f"https://localhost:{server.port + 1}/did.json",
    ):
        server.routes["/.well-known/did.json"] = _redirect(location)
        with pytest.raises(DocumentError) as info:
            _driver(server).resolve(parse_did(server.did))
        assert info.value.fields["reason"] == "redirect_refused"
    server.routes["/.well-known/did.json"] = lambda handler: _send(handler, 302, b"")
    with pytest.raises(DocumentError) as info:
        _driver(server).resolve(parse_did(server.did))
    assert info.value.fields["reason"] == "bad_redirect"
    assert "/plain/did.json" not in server.requests
    assert "/other/did.json" not in server.requests


def test_oversized_bodies_are_refused_with_or_without_a_length(server: Server) -> None:
    big = {"id": server.did, "padding": "x" * (web.DEFAULT_MAX_BYTES + 10)}
    server.routes["/.well-known/did.json"] = _json(big)
    with pytest.raises(DocumentError) as info:
        _driver(server).resolve(parse_did(server.did))
    assert (info.value.code, info.value.fields["reason"]) == ("invalidDidDocument", "too_large")
    server.routes["/chunked/did.json"] = _chunked(10 * 1024 * 1024)
    started = time.monotonic()
    with pytest.raises(DocumentError) as info:
        _driver(server).resolve(parse_did(f"{server.did}:chunked"))
    assert (info.value.code, info.value.fields["reason"]) == ("invalidDidDocument", "too_large")
    assert time.monotonic() - started < 5  # stopped at the cap, not after 10 MiB

    def lying_length(handler: BaseHTTPRequestHandler) -> None:
        body = b"x" * (web.DEFAULT_MAX_BYTES + 1)
        handler.send_response(200)
        handler.send_header("Content-Length", "10")  # understated: only 10 bytes may be read
        handler.end_headers()
        handler.wfile.write(body)

    server.routes["/lying/did.json"] = lying_length
    with pytest.raises(DocumentError) as info:
        _driver(server).resolve(parse_did(f"{server.did}:lying"))
    assert (info.value.code, info.value.fields["reason"]) == ("invalidDidDocument", "malformed_json")


@pytest.mark.anyio
async def test_async_oversized_chunked_body_is_refused(server: Server) -> None:
    server.routes["/.well-known/did.json"] = _chunked(10 * 1024 * 1024)
    with pytest.raises(DocumentError) as info:
        await _driver(server).aresolve(parse_did(server.did))
    assert info.value.fields["reason"] == "too_large"


def test_mismatched_id_is_a_binding_error(server: Server) -> None:
    server.routes["/.well-known/did.json"] = _json(
        _document("did:web:attacker.example", KeyPair.generate("ed25519").public_key)
    )
    with pytest.raises(BindingError) as info:
        _driver(server).resolve(parse_did(server.did))
    assert info.value.code == "document_id_mismatch"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "malformed_json"),
        (b'{"id": "did:web:a", "id": "did:web:b"}', "duplicate_key"),
        (b"[1, 2, 3]", "bad_did_document"),
        (b'{"id": "did:web:x", "authentication": ["#nope"]}', "dangling_reference"),
        (b"\xff\xfe", "bad_encoding"),
    ],
)
def test_malformed_documents_are_invalid(server: Server, body: bytes, reason: str) -> None:
    server.routes["/.well-known/did.json"] = lambda handler: _send(handler, 200, body)
    with pytest.raises(DocumentError) as info:
        _driver(server).resolve(parse_did(server.did))
    assert info.value.code == "invalidDidDocument"
    assert info.value.fields["reason"] == reason


def test_status_codes(server: Server) -> None:
    with pytest.raises(DocumentError) as info:
        _driver(server).resolve(parse_did(server.did))  # no route: 404
    assert info.value.code == "notFound"
    server.routes["/gone/did.json"] = lambda handler: _send(handler, 410, b"")
    with pytest.raises(DocumentError) as info:
        _driver(server).resolve(parse_did(f"{server.did}:gone"))
    assert info.value.code == "notFound"
    server.routes["/.well-known/did.json"] = lambda handler: _send(handler, 500, b"oops")
    with pytest.raises(ResolutionError) as down:
        _driver(server).resolve(parse_did(server.did))
    assert (down.value.code, down.value.fields["status"]) == ("internalError", 500)


def test_compressed_answers_are_refused(server: Server) -> None:
    import gzip

    body = gzip.compress(json.dumps(_document(server.did, KeyPair.generate("ed25519").public_key)).encode())
    server.routes["/.well-known/did.json"] = lambda handler: _send(
        handler, 200, body, {"Content-Encoding": "gzip"}
    )
    with pytest.raises(DocumentError) as info:
        _driver(server).resolve(parse_did(server.did))
    assert info.value.fields["reason"] == "content_encoding"


def test_slow_server_times_out(server: Server) -> None:
    # The server answers only once the client has given up, so the client times out however slowly a
    # loaded machine runs it (a fixed sleep on the server could end first if the client is starved).
    gave_up = threading.Event()

    def slow(handler: BaseHTTPRequestHandler) -> None:
        gave_up.wait(timeout=600)  # a hang guard only: the test sets the event
        _send(handler, 200, b"{}")

    server.routes["/.well-known/did.json"] = slow
    try:
        with pytest.raises(ResolutionError) as info:
            _driver(server, timeout=0.5).resolve(parse_did(server.did))
    finally:
        gave_up.set()
    assert (info.value.code, info.value.fields["reason"]) == ("internalError", "timeout")


# -- DID ↔ URL mapping (spec "Create" and "Read" steps 1-5); no server needed ------------------------
@pytest.mark.parametrize(
    ("args", "did", "url"),
    [
        (("example.com",), "did:web:example.com", "https://example.com/.well-known/did.json"),
        (
            ("Example.COM", "user/alice"),
            "did:web:example.com:user:alice",
            "https://example.com/user/alice/did.json",
        ),
        (
            ("example.com", ["a", "b"], 8443),
            "did:web:example.com%3A8443:a:b",
            "https://example.com:8443/a/b/did.json",
        ),
        (
            ("localhost", None, 3000),
            "did:web:localhost%3A3000",
            "https://localhost:3000/.well-known/did.json",
        ),
    ],
)
def test_create_and_url_for(args: tuple[Any, ...], did: str, url: str) -> None:
    assert web.create(*args) == did
    assert web.url_for(did) == url


@pytest.mark.parametrize(
    ("did", "path"),
    [("did:web:example.com", ".well-known/did.json"), ("did:web:example.com:u:alice", "u/alice/did.json")],
)
def test_document_path(did: str, path: str) -> None:
    assert str(web.document_path(did)) == path


@pytest.mark.parametrize(
    "did",
    [
        "did:web:127.0.0.1",  # an IP address, not a domain name
        "did:web:0x7f000001",  # ... in any spelling the C library reads as one
        "did:web:0x7f.0x1",
        "did:web:0xa9fea9fe",
        "did:web:example.com%3A0",
        "did:web:example.com%3A70000",
        "did:web:example.com%3Ax",
        "did:web:example.com%2F",
        "did:web:example.com:..:etc",
        "did:web:example.com::x",
        "did:web:example.com:a%2Fb",
        "did:web:-bad-.example",
        "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
    ],
)
def test_invalid_did_web(did: str) -> None:
    with pytest.raises(InvalidInput) as info:
        web.url_for(did)
    assert info.value.code == "invalidDid"


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("exa mple.com",), {}),
        (("example.com", "a/../b"), {}),
        (("example.com",), {"port": 0}),
        (("example.com",), {"port": True}),
        (("example.com", "a b"), {}),
        (("10.0.0.1",), {}),
    ],
)
def test_create_refuses_bad_parts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        web.create(*args, **kwargs)


def test_write_document_refuses_a_mismatched_id_and_overwrites_only_when_forced(tmp_path: Path) -> None:
    public = KeyPair.generate("ed25519").public_key
    did = web.create("example.com")
    document = DIDDocument.from_json(_document(did, public))
    with pytest.raises(InvalidInput) as info:
        web.write_document("did:web:other.example", document, tmp_path)
    assert info.value.code == "document_id_mismatch"
    web.write_document(did, document, tmp_path)
    with pytest.raises(KeyStoreError) as exists:
        web.write_document(did, document, tmp_path)
    assert exists.value.code == "exists"
    assert web.write_document(did, document, tmp_path, force=True).is_file()
