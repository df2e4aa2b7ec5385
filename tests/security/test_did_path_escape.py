"""A did:web path that a web server decodes differently from the way a policy compares it.

The red team's attack: the policy grants roles to ``did:web:<host>:agents:*``; mallory, who can put a
file under ``/users/mallory/`` on the same host, presents ``did:web:<host>:agents:%2E%2E:users:mallory``.
Compared as opaque text it is "below agents"; fetched, Starlette's ``StaticFiles`` decodes ``%2E%2E``
to ``..`` and serves ``/users/mallory/did.json``.  The rule (``identity.did.path_segment_refusal``):
every DID path segment has one spelling, checked before any policy match or fetch.

The attack space is generated: every consumer that matches, fetches or maps DID paths (``CONSUMERS``)
× every spelling of a dot, slash or backslash (``ESCAPES``), each refused *for the segment rule's
reason*, while a real HTTPS ``StaticFiles`` host records that ``/users/mallory/did.json`` was never
asked for.  A module that starts using the rule without a row in ``CONSUMERS`` fails
``test_every_consumer_of_the_segment_rule_is_attacked``.
"""

from __future__ import annotations

import json
import re
import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import trustme
from starlette.staticfiles import StaticFiles

from mudrika.crypto.keys import KeyPair
from mudrika.errors import MudrikaError
from mudrika.identity.did import parse_did, path_segment_refusal
from mudrika.identity.document import DIDDocument
from mudrika.identity.methods import web
from mudrika.identity.resolver import DIDResolver
from mudrika.net.egress import EgressPolicy
from mudrika.trust.policy import NO_ROLE, Policy
from tests._support.net import free_port
from tests._support.paths import REPO_ROOT
from tests._support.served import serve_asgi

pytestmark = pytest.mark.integration

HOST = "agents.example.com"  # resolved to 127.0.0.1 by the test's egress policy

#: Spellings of "go up one directory" (and of the separators that would let a segment hold a path),
#: each with the reason the segment rule gives for it.
ESCAPES: dict[str, str] = {
    "%2E%2E": "encoded_unreserved",
    "%2e%2e": "encoded_unreserved",
    "%2e%2E": "encoded_unreserved",
    "%2E.": "encoded_unreserved",
    ".%2e": "encoded_unreserved",
    "%252E%252E": "double_encoding",
    "%252e%252e": "double_encoding",
    "..%2Fusers": "encoded_separator",
    "..%2fusers": "encoded_separator",
    "..%5Cusers": "encoded_separator",
    "..%5cusers": "encoded_separator",
    "%2F": "encoded_separator",
    "%00": "encoded_control",
    "..": "dot_segment",
    ".": "dot_segment",
}


def _escaped_did(port: int, escape: str) -> str:
    return f"did:web:{HOST}%3A{port}:agents:{escape}:users:mallory"


@dataclass
class Host:
    port: int
    context: Any
    requests: list[str]
    root: Path

    def driver(self) -> web.WebDriver:
        policy = EgressPolicy(allow_private_networks=True, resolve=lambda host, port: ["127.0.0.1"])
        return web.WebDriver(verify=self.context, egress=policy)


def _document(did: str) -> dict[str, Any]:
    public = KeyPair.generate("ed25519").public_key
    return {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
        "id": did,
        "verificationMethod": [
            {
                "id": f"{did}#k",
                "type": "Multikey",
                "controller": did,
                "publicKeyMultibase": public.to_multikey(),
            }
        ],
        "authentication": [f"{did}#k"],
    }


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """A real HTTPS static host: ``/agents/alice/did.json`` and mallory's ``/users/mallory/did.json``,
    whose id is every escaped DID mallory tries (the last one written wins; each test that needs it
    writes its own)."""
    root = tmp_path_factory.mktemp("webroot")
    ca = trustme.CA()
    cert = ca.issue_cert(HOST)
    key_file, cert_file = root.parent / "key.pem", root.parent / "cert.pem"
    cert.private_key_pem.write_to_path(str(key_file))
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    requests: list[str] = []
    static = StaticFiles(directory=root)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            requests.append(scope["path"])
        await static(scope, receive, send)

    context = ssl.create_default_context()
    ca.configure_trust(context)
    port = free_port()
    with serve_asgi(app, port=port, ssl_keyfile=str(key_file), ssl_certfile=str(cert_file)):
        yield Host(port=port, context=context, requests=requests, root=root)


def _publish(host: Host, relative: str, did: str) -> None:
    target = host.root / relative / "did.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(_document(did)))


def test_the_static_host_really_serves_mallory_for_the_escaped_path(host: Host) -> None:
    # Without this the test below would prove nothing: the host does decode %2E%2E and climb out.
    did = _escaped_did(host.port, "%2E%2E")
    _publish(host, "users/mallory", did)
    url = f"https://127.0.0.1:{host.port}/agents/%2E%2E/users/mallory/did.json"
    with httpx.Client(verify=host.context, headers={"Host": f"{HOST}:{host.port}"}) as client:
        # SNI and certificate are for HOST; connect by address with the name in the Host header.
        response = client.get(url, extensions={"sni_hostname": HOST})
    assert response.status_code == 200
    assert response.json()["id"] == did
    assert host.requests[-1] == "/agents/../users/mallory/did.json"


# --- consumers: each takes (host, escaped DID) and must raise; the test checks why -----------------


def _policy_document(**extra: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "roles": [{"role_id": "r1", "role_name": "agent", "trust_level": "operator", "realm_name": "m"}],
        "operations": {"message/send": {"min_level": "operator"}},
        **extra,
    }


def _policy_for(host: Host) -> Policy:
    pattern = f"did:web:{HOST}%3A{host.port}:agents:*"
    return Policy.from_document(
        _policy_document(did_roles={pattern: {"roles": ["agent"], "tenants": ["acme"]}})
    )


def _policy_grant(host: Host, did: str) -> None:
    policy = _policy_for(host)
    assert policy.did_grant(f"did:web:{HOST}%3A{host.port}:agents:alice") is not None  # the pattern works
    assert policy.did_grant(did) is None
    principal = policy.principal_for_did(did)
    assert principal.roles == frozenset()
    assert policy.decide(principal, "message/send").reason == NO_ROLE
    # Why it got nothing: the table holds the DID to the driver's segment rule, which names the reason
    # when the same DID is written into a policy.
    document = _policy_document(did_roles={did: {"roles": ["agent"]}})
    Policy.from_document(document)  # raises: the consumer under test refuses the DID


def _driver_resolve(host: Host, did: str) -> None:
    host.driver().resolve(parse_did(did))


def _driver_aresolve(host: Host, did: str) -> None:
    async def run() -> None:
        await host.driver().aresolve(parse_did(did))

    anyio.run(run)


def _resolver(host: Host, did: str) -> None:
    DIDResolver([host.driver()]).resolve(did)


def _url_for(host: Host, did: str) -> None:
    web.url_for(did)


def _write_document(host: Host, did: str) -> None:
    web.write_document(did, DIDDocument.from_json(_document(did)), host.root / "out", force=True)


def _create(host: Host, did: str) -> None:
    segments = did.split(":")[4:]
    web.create(HOST, segments, port=host.port)


@dataclass(frozen=True)
class Consumer:
    module: str  # the module under src/mudrika whose code reaches the segment rule
    attack: Callable[[Host, str], None]


CONSUMERS: dict[str, Consumer] = {
    "did_roles grant": Consumer("mudrika/trust/policy/_did_roles.py", _policy_grant),
    "WebDriver.resolve": Consumer("mudrika/identity/methods/web.py", _driver_resolve),
    "WebDriver.aresolve": Consumer("mudrika/identity/methods/web.py", _driver_aresolve),
    "DIDResolver.resolve": Consumer("mudrika/identity/methods/web.py", _resolver),
    "url_for": Consumer("mudrika/identity/methods/web.py", _url_for),
    "write_document": Consumer("mudrika/identity/methods/web.py", _write_document),
    "create": Consumer("mudrika/identity/methods/web.py", _create),
}


def _reason(error: BaseException) -> str | None:
    assert isinstance(error, MudrikaError)
    return error.fields.get("reason")


@pytest.mark.parametrize("escape", sorted(ESCAPES))
@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
def test_no_consumer_matches_or_fetches_an_escaped_path(host: Host, consumer: str, escape: str) -> None:
    did = _escaped_did(host.port, escape)
    _publish(host, "users/mallory", did)
    before = len(host.requests)
    with pytest.raises(MudrikaError) as info:
        CONSUMERS[consumer].attack(host, did)
    if consumer == "create":
        # create() takes plain segments only (A-Z a-z 0-9 . - _); its refusal names the segment.
        assert info.value.code == "invalidDid"
    else:
        assert info.value.code in ("invalidDid", "invalid_policy"), info.value.code
        assert _reason(info.value) == ESCAPES[escape]
    assert path_segment_refusal(escape) == ESCAPES[escape]
    assert host.requests[before:] == []  # nothing was fetched, mallory's document least of all


def test_the_honest_agent_still_resolves_and_is_granted(host: Host) -> None:
    did = f"did:web:{HOST}%3A{host.port}:agents:alice"
    _publish(host, "agents/alice", did)
    assert DIDResolver([host.driver()]).resolve(did).document.id == did
    grant = _policy_for(host).did_grant(did)
    assert grant is not None
    assert grant.roles == frozenset({"agent"})


def test_every_consumer_of_the_segment_rule_is_attacked() -> None:
    # A module that calls the rule (or builds did:web paths) without a row above fails here.
    users = {
        str(path.relative_to(REPO_ROOT / "src"))
        for path in (REPO_ROOT / "src" / "mudrika").rglob("*.py")
        if re.search(r"\bpath_segment_refusal\b|\b_check_segment\b", path.read_text())
        and path.name != "did.py"
    }
    assert users == {consumer.module for consumer in CONSUMERS.values()}
