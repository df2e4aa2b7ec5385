"""did:webvh resolved online by ``WebvhDriver`` from a real HTTPS server on 127.0.0.1 (trustme TLS).

The log is made and signed by the reference implementation (PyPI ``did-webvh``) for a DID on
``localhost:<port>``, served at the DID's ``did.jsonl`` URL by uvicorn; the driver fetches it through
the egress policy's development allowance (loopback opted in) and verifies it in full.  Then the
refusals of the same path: a redirect (never followed), a wrong status, an oversize log, and a log
whose entry was tampered with after signing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mudrika.errors import BindingError, DocumentError, EgressDenied, ResolutionError, SignatureError
from mudrika.identity.methods.webvh import WebvhDriver, log_url
from mudrika.net.egress import EgressPolicy
from tests._support.net import free_port
from tests._support.served import LocalTLS, local_tls, serve_asgi
from tests._support.webvh import oracle

pytestmark = pytest.mark.integration

LOCAL = EgressPolicy(allow_private_networks=True)
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


@dataclass
class Served:
    """What the server answers at the log's path (tests set it before resolving)."""

    status: int = 200
    body: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def _app(state: Served) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        state.requests.append(scope["path"])
        headers = [(b"content-type", b"application/jsonl"), *state.headers]
        await send({"type": "http.response.start", "status": state.status, "headers": headers})
        await send({"type": "http.response.body", "body": state.body})

    return app


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> LocalTLS:
    return local_tls(tmp_path_factory.mktemp("tls"))


@dataclass
class Hosted:
    did: str
    log: bytes
    state: Served
    driver: WebvhDriver


def _log(port: int) -> tuple[str, bytes]:
    """A three-entry log for ``did:webvh:<scid>:localhost%3A<port>``, made by did-webvh alone."""
    oracle()
    from did_webvh.askar import AskarSigningKey
    from did_webvh.core.state import DocumentState

    key = AskarSigningKey.generate("ed25519")

    def document(did: str, version: int) -> dict[str, Any]:
        return {
            "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
            "id": did,
            "verificationMethod": [
                {
                    "id": f"{did}#key-1",
                    "type": "Multikey",
                    "controller": did,
                    "publicKeyMultibase": key.multikey,
                }
            ],
            "assertionMethod": [f"{did}#key-1"],
            "alsoKnownAs": [f"https://shop.example/v{version}"],
        }

    state = DocumentState.initial(
        params={"updateKeys": [key.multikey]},
        document=document(f"did:webvh:{{SCID}}:localhost%3A{port}", 1),
        timestamp=T0,
    )
    state.proofs.append(state.create_proof(key, timestamp=state.timestamp))
    states = [state]
    for version in (2, 3):
        state = states[-1].create_next(
            document=document(states[0].document_id, version), timestamp=T0 + timedelta(days=version)
        )
        state.proofs.append(state.create_proof(key, timestamp=state.timestamp))
        states.append(state)
    text = "".join(json.dumps(s.history_line()) + "\n" for s in states)
    return str(states[-1].document_id), text.encode()


@pytest.fixture
def hosted(tls: LocalTLS) -> Iterator[Hosted]:
    port = free_port()
    did, log = _log(port)
    state = Served(body=log)
    with serve_asgi(_app(state), port=port, **tls.server):
        yield Hosted(did, log, state, WebvhDriver(egress=LOCAL, verify=tls.client, timeout=5))


def test_log_served_over_https_resolves(hosted: Hosted) -> None:
    assert log_url(hosted.did).startswith("https://localhost:")
    result = hosted.driver.resolve_at(hosted.did)
    assert result.document is not None
    assert result.document.id == hosted.did
    assert result.document.also_known_as == ("https://shop.example/v3",)
    # An earlier version is answered from the same verified log.
    first = hosted.driver.resolve_at(hosted.did, version_number=1)
    assert first.document is not None
    assert first.document.also_known_as == ("https://shop.example/v1",)
    assert hosted.state.requests == ["/.well-known/did.jsonl"] * 2


def test_strict_egress_refuses_loopback(hosted: Hosted, tls: LocalTLS) -> None:
    with pytest.raises(EgressDenied):
        WebvhDriver(verify=tls.client, timeout=5).resolve_at(hosted.did)
    assert hosted.state.requests == []


def test_redirect_is_refused_not_followed(hosted: Hosted) -> None:
    hosted.state.status = 302
    hosted.state.headers = [(b"location", log_url(hosted.did).encode())]
    with pytest.raises(ResolutionError) as caught:
        hosted.driver.resolve_at(hosted.did)
    assert caught.value.fields["status"] == 302
    assert hosted.state.requests == ["/.well-known/did.jsonl"]


@pytest.mark.parametrize(
    ("status", "error"), [(404, DocumentError), (500, ResolutionError), (403, ResolutionError)]
)
def test_wrong_status_is_refused(hosted: Hosted, status: int, error: type[Exception]) -> None:
    hosted.state.status = status
    with pytest.raises(error):
        hosted.driver.resolve_at(hosted.did)


def test_oversize_log_is_refused(hosted: Hosted, tls: LocalTLS) -> None:
    driver = WebvhDriver(egress=LOCAL, verify=tls.client, timeout=5, max_bytes=len(hosted.log) - 1)
    with pytest.raises(DocumentError) as caught:
        driver.resolve_at(hosted.did)
    assert caught.value.fields["reason"] == "too_large"


@pytest.mark.parametrize(
    ("line", "code"),
    [(0, "webvh_scid_mismatch"), (1, "webvh_entry_hash_mismatch"), (2, "webvh_entry_hash_mismatch")],
)
def test_tampered_log_is_refused(hosted: Hosted, line: int, code: str) -> None:
    # The served log differs from the signed one in one document: the genesis entry no longer derives
    # its SCID, a later one no longer matches its versionId hash — whatever the proof says.
    lines = hosted.log.decode().splitlines()
    entry = json.loads(lines[line])
    entry["state"]["alsoKnownAs"] = ["https://attacker.example/"]
    lines[line] = json.dumps(entry)
    hosted.state.body = ("\n".join(lines) + "\n").encode()
    with pytest.raises(BindingError) as caught:
        hosted.driver.resolve_at(hosted.did)
    assert caught.value.code == code


def test_log_with_a_forged_proof_is_refused(hosted: Hosted) -> None:
    lines = hosted.log.decode().splitlines()
    entry = json.loads(lines[2])
    value = entry["proof"][0]["proofValue"]
    entry["proof"][0]["proofValue"] = value[:-2] + ("22" if value[-2:] != "22" else "33")
    lines[2] = json.dumps(entry)
    hosted.state.body = ("\n".join(lines) + "\n").encode()
    with pytest.raises(SignatureError) as caught:
        hosted.driver.resolve_at(hosted.did)
    assert caught.value.code == "webvh_bad_proof"
