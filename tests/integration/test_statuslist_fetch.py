"""The online Status List client against real servers on 127.0.0.1: mudrika's own
:class:`StatusListApp` under uvicorn for the happy path and the cache, and small ASGI apps for each
misbehaviour (redirect, wrong media type, oversized body, server error).  Loopback is reachable only
because each test opts in with ``EgressPolicy(allow_private_networks=True, schemes=("http",))``; the
strict default refuses it, which is tested too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.statuslist import StatusList, sign_status_list_token, status_claim
from mudrika.errors import EgressDenied, InvalidInput, SignatureError, UnavailableError
from mudrika.identity.statuslist import StatusListApp, StatusListClient
from mudrika.net.egress import EgressPolicy
from tests._support.served import serve_asgi

pytestmark = pytest.mark.integration

NOW = 1_767_225_600
ISSUER = KeyPair.generate("ed25519")
TRUSTED = TrustedKey.for_key(ISSUER.public_key)
LOCAL = EgressPolicy(allow_private_networks=True, schemes=("http",))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _token(uri: str, *, ttl: int | None = 60, revoked: int = 3) -> str:
    status_list = StatusList(64, 1)
    status_list.set(revoked, 1)
    return sign_status_list_token(status_list, key=ISSUER, uri=uri, iat=NOW - 5, exp=NOW + 600, ttl=ttl)


def test_fetch_verify_and_cache_by_ttl() -> None:
    app = StatusListApp()
    clock = Clock()
    with serve_asgi(app) as base:
        uri = base + "/statuslists/1"
        app.publish("/statuslists/1", _token(uri, revoked=3))
        client = StatusListClient(egress=LOCAL, clock=clock)
        check: dict[str, Any] = {"key": TRUSTED, "issuer": None, "now": NOW, "max_age": 600}
        assert client.check({"status": status_claim(3, uri)}, **check) == 1
        assert client.check({"status": status_claim(4, uri)}, **check) == 0
        assert client.fetches == 1  # the second answer came from the cache
        app.publish("/statuslists/1", _token(uri, revoked=4))  # the issuer revokes 4, un-revokes 3
        clock.now += 59
        assert client.check({"status": status_claim(4, uri)}, **check) == 0  # still cached (ttl 60)
        clock.now += 2
        assert client.check({"status": status_claim(4, uri)}, **check) == 1  # ttl passed: refetched
        assert client.fetches == 2
        # async path, fresh client
        aclient = StatusListClient(egress=LOCAL, clock=clock)
        assert anyio.run(lambda: aclient.acheck({"status": status_claim(4, uri)}, **check)) == 1


def test_cache_capped_by_the_verifier_not_the_issuer() -> None:
    app = StatusListApp()
    clock = Clock()
    with serve_asgi(app) as base:
        uri = base + "/l"
        app.publish("/l", _token(uri, ttl=10**9))
        client = StatusListClient(egress=LOCAL, clock=clock, max_cache_seconds=30)
        client.status_list(uri, key=TRUSTED, issuer=None, now=NOW, max_age=600)
        clock.now += 31
        client.status_list(uri, key=TRUSTED, issuer=None, now=NOW, max_age=600)
        assert client.fetches == 2


def test_cache_hit_is_verified_with_the_callers_key() -> None:
    app = StatusListApp()
    with serve_asgi(app) as base:
        uri = base + "/l"
        app.publish("/l", _token(uri))
        client = StatusListClient(egress=LOCAL, clock=Clock())
        client.status_list(uri, key=TRUSTED, issuer=None, now=NOW, max_age=600)
        stranger = TrustedKey.for_key(KeyPair.generate("ed25519").public_key)
        with pytest.raises(SignatureError):
            client.status_list(uri, key=stranger, issuer=None, now=NOW, max_age=600)


def _raw_app(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> Callable[..., Any]:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


@pytest.mark.parametrize(
    ("status", "headers", "body", "reason"),
    [
        (302, [(b"location", b"http://127.0.0.1:9/elsewhere")], b"", "redirect_refused"),
        (200, [(b"content-type", b"application/jwt")], b"x.y.z", "content_type"),
        (500, [(b"content-type", b"text/plain")], b"oops", "http_status"),
        (
            200,
            [(b"content-type", b"application/statuslist+jwt"), (b"content-encoding", b"gzip")],
            b"",
            "content_encoding",
        ),
    ],
    ids=["redirect", "media-type", "server-error", "compressed"],
)
def test_misbehaving_servers_refused(
    status: int, headers: list[tuple[bytes, bytes]], body: bytes, reason: str
) -> None:
    with serve_asgi(_raw_app(status, headers, body)) as base, pytest.raises(UnavailableError) as caught:
        StatusListClient(egress=LOCAL).fetch(base + "/l")
    assert caught.value.fields.get("reason") == reason


def test_oversized_body_refused() -> None:
    body = b"a" * 5000
    headers = [(b"content-type", b"application/statuslist+jwt")]
    with serve_asgi(_raw_app(200, headers, body)) as base, pytest.raises(InvalidInput) as caught:
        StatusListClient(egress=LOCAL, max_bytes=4096).fetch(base + "/l")
    assert caught.value.code == "too_large"


def test_strict_default_egress_refuses_loopback() -> None:
    app = StatusListApp()
    with serve_asgi(app) as base:
        https_uri = base.replace("http://", "https://") + "/l"
        with pytest.raises(EgressDenied):
            StatusListClient().fetch(https_uri)
        with pytest.raises(EgressDenied):
            StatusListClient().fetch(base + "/l")  # http is not even an allowed scheme


def test_app_answers() -> None:
    app = StatusListApp({"/a": "t.o.k"})
    with serve_asgi(app) as base:
        ok = httpx.get(base + "/a")
        assert (ok.status_code, ok.headers["content-type"], ok.text) == (
            200,
            "application/statuslist+jwt",
            "t.o.k",
        )
        assert httpx.get(base + "/b").status_code == 404
        assert httpx.post(base + "/a").status_code == 405
