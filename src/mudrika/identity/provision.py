"""Provision an agent: encrypted key, DID, DID document, CSR and the AgentIdentity JSON, in one directory.

Why it is careful about re-runs: an operator re-runs provisioning after changing an endpoint or a DNS
name, and a tool that regenerated the key then would silently change the agent's DID (the flaw of the
system we grew out of, whose DIDs came from names).  So an existing key is *always* reused — unlocked
with the same password — and only the artefacts derived from it (DID document, CSR, identity JSON) are
rewritten, atomically.  Replacing a key is a deliberate act: remove ``private.pem`` first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from mudrika.crypto.keys import KeyPair, KeyType, PublicKey
from mudrika.crypto.keystore import (
    ensure_private_dir,
    load_private_key,
    write_file_atomic,
    write_private_key,
)
from mudrika.errors import InvalidInput, KeyStoreError
from mudrika.identity.csr import create_csr, fingerprint_sha256, to_pem
from mudrika.identity.document import DIDDocument
from mudrika.identity.methods import bindu, jwk, key, web
from mudrika.identity.methods._single_key import single_key_document

__all__ = [
    "AgentIdentity",
    "DidMethod",
    "ProvisionResult",
    "agent_document",
    "create_did",
    "provision",
]

DidMethod = Literal["key", "jwk", "web", "bindu"]
PRIVATE_KEY_FILE: Final = "private.pem"
PUBLIC_KEY_FILE: Final = "public.pem"
DOCUMENT_FILE: Final = "did.json"
CSR_FILE: Final = "agent.csr"
IDENTITY_FILE: Final = "identity.json"
WEB_ROOT: Final = "web"
#: The service type under which an agent's A2A endpoint is listed in its DID document.
AGENT_SERVICE_TYPE: Final = "A2AAgentEndpoint"


class AgentIdentity(BaseModel):
    """What an agent publishes about itself (the AgentIdentity of the agent card), now actually filled."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    did: str
    did_document: dict[str, Any]
    public_key: str
    csr: str | None = None
    endpoint: str | None = None
    agentdns_url: str | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


@dataclass(frozen=True, slots=True)
class ProvisionResult:
    identity: AgentIdentity
    files: Mapping[str, Path]
    key_created: bool
    csr_fingerprint: str


def _services(did: str, endpoint: str | None) -> list[dict[str, Any]]:
    if endpoint is None:
        return []
    if not endpoint.startswith(("https://", "http://127.0.0.1", "http://localhost")):
        raise InvalidInput("the agent endpoint must be an https:// URL", code="bad_endpoint")
    return [{"id": f"{did}#a2a", "type": AGENT_SERVICE_TYPE, "serviceEndpoint": endpoint}]


def create_did(
    public_key: PublicKey,
    method: DidMethod,
    *,
    author: str | None = None,
    agent_name: str | None = None,
    web_host: str | None = None,
    web_path: str | None = None,
    web_port: int | None = None,
) -> str:
    """The agent's DID for ``public_key`` under ``method`` (did:web needs a host, did:bindu an author + name)."""
    if method == "key":
        return key.create(public_key)
    if method == "jwk":
        return jwk.create(public_key)
    if method == "web":
        if not web_host:
            raise InvalidInput(
                "did:web needs --host (the domain that will serve did.json)", code="missing_host"
            )
        return web.create(web_host, web_path, web_port)
    if method == "bindu":
        if not author or not agent_name:
            raise InvalidInput("did:bindu needs --author and the agent name", code="missing_author")
        return bindu.create(public_key, author=author, agent_name=agent_name)
    raise InvalidInput("unknown DID method", code="methodNotSupported", method=str(method)[:16])


def agent_document(did: str, public_key: PublicKey, *, endpoint: str | None = None) -> DIDDocument:
    """The DID document for an agent's DID and key, with its A2A endpoint as a service when given.

    did:key and did:jwk documents are *derived* from the DID (a service cannot be added to them: the
    resolver would never return it), so an endpoint is refused there.
    """
    method = did.split(":", 2)[1]
    if method in ("key", "jwk"):
        if endpoint is not None:
            raise InvalidInput(
                f"did:{method} documents are derived from the DID and cannot list an endpoint; "
                "use did:web or did:bindu to publish one",
                code="endpoint_not_supported",
            )
        return key.document(did) if method == "key" else jwk.document(did)
    if method == "bindu":
        parsed = bindu.parse(did)
        return bindu.document(
            public_key,
            author=parsed.author,
            agent_name=parsed.agent_name,
            services=_services(did, endpoint),
        )
    return single_key_document(did, public_key, services=_services(did, endpoint))


def _load_or_create_key(
    path: Path, password: bytes, key_type: KeyType, rsa_bits: int
) -> tuple[KeyPair, bool]:
    if path.exists():
        pair = load_private_key(path, password)
        if pair.key_type is not key_type:
            # Refusing to replace a key is a refused overwrite, like every other one (KeyStoreError).
            raise KeyStoreError(
                f"{path} holds a {pair.key_type.value} key but {key_type.value} was asked for; "
                "provisioning never replaces a key — move the old key away deliberately to rotate",
                code="key_type_mismatch",
            )
        return pair, False
    pair = KeyPair.generate(key_type, rsa_bits=rsa_bits)
    write_private_key(path, pair, password)
    return pair, True


def _json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def provision(
    *,
    name: str,
    out_dir: Path,
    password: bytes,
    key_type: KeyType = KeyType.ED25519,
    rsa_bits: int = 2048,
    method: DidMethod = "key",
    author: str | None = None,
    web_host: str | None = None,
    web_path: str | None = None,
    web_port: int | None = None,
    endpoint: str | None = None,
    agentdns_url: str | None = None,
    dns_names: Sequence[str] = (),
) -> ProvisionResult:
    """Create (or reuse) the agent's key and write its DID document, CSR and AgentIdentity JSON."""
    directory = ensure_private_dir(out_dir)
    if agentdns_url is not None and not agentdns_url.startswith("https://"):
        raise InvalidInput("agentdns_url must be an https:// URL", code="bad_agentdns_url")
    pair, created = _load_or_create_key(directory / PRIVATE_KEY_FILE, password, key_type, rsa_bits)
    public = pair.public_key
    did = create_did(
        public,
        method,
        author=author,
        agent_name=name,
        web_host=web_host,
        web_path=web_path,
        web_port=web_port,
    )
    document = agent_document(did, public, endpoint=endpoint)
    csr = create_csr(pair, agent_name=name, did=did, dns_names=dns_names)
    identity = AgentIdentity(
        did=did,
        did_document=document.to_json(),
        public_key=public.to_pem().decode("ascii"),
        csr=to_pem(csr).decode("ascii"),
        endpoint=endpoint,
        agentdns_url=agentdns_url,
    )
    files = {"private_key": directory / PRIVATE_KEY_FILE}
    # Derived artefacts are replaced atomically on every run: they follow from the (kept) key.
    files["public_key"] = write_file_atomic(directory / PUBLIC_KEY_FILE, public.to_pem(), force=True)
    files["did_document"] = write_file_atomic(
        directory / DOCUMENT_FILE, _json_bytes(document.to_json()), force=True
    )
    files["csr"] = write_file_atomic(directory / CSR_FILE, to_pem(csr), force=True)
    files["identity"] = write_file_atomic(
        directory / IDENTITY_FILE, _json_bytes(identity.to_json()), force=True
    )
    if method == "web":
        files["web_did_json"] = web.write_document(did, document, directory / WEB_ROOT, force=True)
    return ProvisionResult(
        identity=identity, files=files, key_created=created, csr_fingerprint=fingerprint_sha256(csr)
    )
