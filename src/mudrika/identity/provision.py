"""Provision an agent: encrypted key, DID, DID document, CSR and the AgentIdentity JSON, in one directory.

Why it is careful about re-runs: an operator re-runs provisioning after changing an endpoint or a DNS
name, and a tool that then regenerated the key — or derived the DID under another method, host, path
or name — would silently change the agent's DID (the flaw of the system we grew out of, whose DIDs
came from names).  So one run goes in three phases, and only the last one touches the disk:

1. **check** every option (:func:`check_request`): a usage error (an endpoint for did:key, did:bindu
   without an author, a bad did:web path, a malformed DNS name …) is raised before a password is read,
   a key file is written or the directory is even created;
2. **compare** what the directory already holds — the key in ``private.pem`` and the identity recorded
   in ``identity.json`` — with what the options ask for.  Anything that would change the identity (key
   type, the key itself, DID method, did:web host, port or path, did:bindu author or agent name, or —
   as a last guard — the DID string) is refused with :class:`~mudrika.errors.KeyStoreError` naming the
   existing and the requested value, unless ``force``;
3. **write** what was derived in memory, each file atomically with the keystore's
   :func:`~mudrika.crypto.keystore.write_file_atomic` (temporary file, fsync, rename; 0600 in a 0700
   directory).  ``identity.json`` — the record phase 2 compares against — is written last, so a run
   interrupted half-way is compared against the old record next time and refused, never silently
   completed.  With ``force`` the old identity's files that the new one does not overwrite (a did:web
   document at the old host/path) are removed, so no stale identity is left for a web server to serve.

An existing key of the requested type is always reused (unlocked with the same password); replacing
it is a deliberate act: ``force``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict

from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.keys import KeyPair, KeyType, PublicKey
from mudrika.crypto.keystore import (
    ensure_private_dir,
    load_private_key,
    write_file_atomic,
    write_private_key,
)
from mudrika.errors import InvalidInput, KeyStoreError
from mudrika.identity.csr import create_csr, fingerprint_sha256, to_pem
from mudrika.identity.did import parse_did
from mudrika.identity.document import DIDDocument
from mudrika.identity.methods import bindu, jwk, key, web
from mudrika.identity.methods.single_key import single_key_document
from mudrika.net.limits import read_capped

if TYPE_CHECKING:
    from cryptography import x509

__all__ = [
    "AgentIdentity",
    "AgentRequest",
    "DidMethod",
    "Difference",
    "ProvisionResult",
    "Replacement",
    "agent_document",
    "check_request",
    "create_did",
    "provision",
    "provision_agent",
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
#: identity.json is a few KiB (an RSA-4096 CSR is the largest part); anything far larger is not ours.
_MAX_RECORD_BYTES: Final = 1024 * 1024
#: The did:web method-specific id's first segment: host, then an optional ``%3A`` port.
_WEB_AUTHORITY: Final = re.compile(r"(?P<host>[^%]+)(?:%3[Aa](?P<port>[0-9]+))?")
#: How an absent part (no port, no path) is shown beside a present one.
_NONE: Final = "(none)"


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
class AgentRequest:
    """Every option of one provisioning run, already checked by :func:`check_request`.

    Why a value of its own: the CLI checks the options before it reads a password (a usage error must
    not cost a prompt, let alone a file), then hands the checked request to :func:`provision_agent`.
    """

    name: str
    key_type: KeyType
    rsa_bits: int
    method: DidMethod
    author: str | None
    web_host: str | None
    web_path: str | None
    web_port: int | None
    endpoint: str | None
    agentdns_url: str | None
    dns_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Difference:
    """One way the requested identity differs from the one the directory holds.

    ``what`` is ``key_type``, ``key``, ``method``, ``host``, ``port``, ``path``, ``author``,
    ``agent_name``, ``did`` or ``identity_record`` (an ``identity.json`` that could not be read).
    """

    what: str
    existing: str
    requested: str

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "existing": self.existing, "requested": self.requested}

    def __str__(self) -> str:
        return f"{self.what}: {self.existing} → {self.requested}"


@dataclass(frozen=True, slots=True)
class Replacement:
    """What a forced run replaced: the old DID (when one was recorded), why, and its files.

    ``files`` are the old identity's files this run overwrote, ``removed`` those it deleted because
    the new identity has no file at that place (a did:web document at the old path).
    """

    did: str | None
    differences: tuple[Difference, ...]
    files: tuple[Path, ...]
    removed: tuple[Path, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "did": self.did,
            "differences": [difference.to_json() for difference in self.differences],
            "files": [str(path) for path in self.files],
            "removed": [str(path) for path in self.removed],
        }


@dataclass(frozen=True, slots=True)
class ProvisionResult:
    """The agent's identity and what this run did to the directory.

    ``files`` names every file of the agent (the key included, even when it was reused); ``written``
    is what this run wrote, in order; ``replaced`` is set only when ``force`` replaced an identity.
    """

    identity: AgentIdentity
    files: Mapping[str, Path]
    key_created: bool
    key_type: KeyType
    csr_fingerprint: str
    written: tuple[Path, ...] = ()
    replaced: Replacement | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``mudrika provision --json`` document: the AgentIdentity's members, then what the run did.

        Why flat: scripts written against earlier versions read ``did`` and ``did_document`` from this
        document; the run's account (``key``, ``key_type``, ``files``, ``written``, ``replaced``,
        ``csr_fingerprint``) is added beside them under names the AgentIdentity does not use.
        """
        return {
            **self.identity.to_json(),
            "key": "created" if self.key_created else "reused",
            "key_type": self.key_type.value,
            "files": {label: str(path) for label, path in self.files.items()},
            "written": [str(path) for path in self.written],
            "replaced": None if self.replaced is None else self.replaced.to_json(),
            "csr_fingerprint": self.csr_fingerprint,
        }


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


def check_request(
    *,
    name: str,
    key_type: KeyType | str = KeyType.ED25519,
    rsa_bits: int = 2048,
    method: str = "key",
    author: str | None = None,
    web_host: str | None = None,
    web_path: str | None = None,
    web_port: int | None = None,
    endpoint: str | None = None,
    agentdns_url: str | None = None,
    dns_names: Sequence[str] = (),
) -> AgentRequest:
    """Check every provisioning option together; raise :class:`InvalidInput` on the first bad one.

    Why a dry run: the DID, the document and the CSR are derived once, in memory, with a throwaway
    Ed25519 key, by the very functions the real run uses — so every rule they enforce (did:web host
    and path syntax, the did:bindu sanitising, endpoint schemes, the CSR's name and DNS names) is
    checked here without a second copy of it that could drift.  Options the chosen method would
    silently ignore (``--host`` for did:key, ``--author`` for did:web …) are refused: an operator who
    typed them meant another method.  Nothing is read or written.
    """
    if method not in get_args(DidMethod):
        raise InvalidInput("unknown DID method", code="methodNotSupported", method=str(method)[:16])
    try:
        kind = KeyType(key_type)
    except ValueError:
        raise InvalidInput("unknown key type", code="bad_key_type", key_type=str(key_type)[:16]) from None
    given = {"--author": author, "--host": web_host, "--path": web_path, "--port": web_port}
    allowed = {"bindu": {"--author"}, "web": {"--host", "--path", "--port"}}.get(method, set())
    for option, value in given.items():
        if value is not None and option not in allowed:
            raise InvalidInput(
                f"{option} does not apply to did:{method}", code="option_not_applicable", option=option
            )
    if agentdns_url is not None and not agentdns_url.startswith("https://"):
        raise InvalidInput("agentdns_url must be an https:// URL", code="bad_agentdns_url")
    request = AgentRequest(
        name=name,
        key_type=kind,
        rsa_bits=rsa_bits,
        method=cast(DidMethod, method),  # checked against DidMethod above
        author=author,
        web_host=web_host,
        web_path=web_path,
        web_port=web_port,
        endpoint=endpoint,
        agentdns_url=agentdns_url,
        dns_names=tuple(dns_names),
    )
    _derive(request, KeyPair.generate(KeyType.ED25519))
    return request


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
    force: bool = False,
) -> ProvisionResult:
    """Create (or reuse) the agent's key and write its DID document, CSR and AgentIdentity JSON.

    :func:`check_request` then :func:`provision_agent`; see the module docstring for the three phases.
    """
    request = check_request(
        name=name,
        key_type=key_type,
        rsa_bits=rsa_bits,
        method=method,
        author=author,
        web_host=web_host,
        web_path=web_path,
        web_port=web_port,
        endpoint=endpoint,
        agentdns_url=agentdns_url,
        dns_names=dns_names,
    )
    return provision_agent(request, out_dir=out_dir, password=password, force=force)


def provision_agent(
    request: AgentRequest, *, out_dir: Path, password: bytes, force: bool = False
) -> ProvisionResult:
    """Provision ``request`` into ``out_dir``: compare with what is there, then write (module docstring).

    Raises :class:`KeyStoreError` ``key_type_mismatch`` (the key type differs, among possibly other
    things) or ``identity_mismatch`` (anything else) when the directory holds another identity and
    ``force`` is false; nothing is written then.
    """
    directory = Path(out_dir)
    if os.path.lexists(directory):
        ensure_private_dir(directory)  # an existing directory is only audited (0700, a real directory)
    existing = _read_existing(directory, password, force=force)
    differences = _differences(existing, request)
    if differences and not force:
        raise _refusal(directory, existing, differences)
    if existing.pair is not None and existing.pair.key_type is request.key_type:
        pair, created = existing.pair, False
    else:
        pair, created = KeyPair.generate(request.key_type, rsa_bits=request.rsa_bits), True
    did, document, csr, identity = _derive(request, pair)
    if existing.did is not None and did != existing.did and not differences:
        # Last guard: no named part differs, yet the DID would (e.g. a hand-edited identity.json).
        differences = [Difference("did", existing.did, did)]
        if not force:
            raise _refusal(directory, existing, differences)
    public = pair.public_key
    planned: list[tuple[str, Path, bytes]] = [
        ("public_key", directory / PUBLIC_KEY_FILE, public.to_pem()),
        ("did_document", directory / DOCUMENT_FILE, _json_bytes(document.to_json())),
        ("csr", directory / CSR_FILE, to_pem(csr)),
    ]
    web_document = directory / WEB_ROOT / web.document_path(did) if request.method == "web" else None
    stale = _stale_web_document(directory, existing.did, web_document)
    identity_path = directory / IDENTITY_FILE
    before = {
        path
        for path in [directory / PRIVATE_KEY_FILE, identity_path, *(p for _, p, _ in planned), web_document]
        if path is not None and os.path.lexists(path)
    }

    ensure_private_dir(directory)
    files: dict[str, Path] = {"private_key": directory / PRIVATE_KEY_FILE}
    written: list[Path] = []
    if created:
        # A key is replaced only under force (phase 2 refused otherwise); a new one never clobbers.
        written.append(
            write_private_key(files["private_key"], pair, password, force=existing.pair is not None)
        )
    for label, path, data in planned:
        files[label] = write_file_atomic(path, data, force=True)
        written.append(path)
    if web_document is not None:
        files["web_did_json"] = web.write_document(did, document, directory / WEB_ROOT, force=True)
        written.append(files["web_did_json"])
    removed = _remove_web_document(directory, stale) if stale is not None else ()
    files["identity"] = write_file_atomic(identity_path, _json_bytes(identity.to_json()), force=True)
    written.append(identity_path)

    replaced = None
    if differences:
        replaced = Replacement(
            did=existing.did,
            differences=tuple(differences),
            files=tuple(path for path in written if path in before),
            removed=removed,
        )
    return ProvisionResult(
        identity=identity,
        files=files,
        key_created=created,
        key_type=pair.key_type,
        csr_fingerprint=fingerprint_sha256(csr),
        written=tuple(written),
        replaced=replaced,
    )


# -- phase 1: derivation (pure) ----------------------------------------------------------------------------


def _derive(
    request: AgentRequest, pair: KeyPair
) -> tuple[str, DIDDocument, x509.CertificateSigningRequest, AgentIdentity]:
    """The DID, document, CSR and AgentIdentity ``request`` gives ``pair``: all in memory."""
    public = pair.public_key
    did = create_did(
        public,
        request.method,
        author=request.author,
        agent_name=request.name,
        web_host=request.web_host,
        web_path=request.web_path,
        web_port=request.web_port,
    )
    document = agent_document(did, public, endpoint=request.endpoint)
    csr = create_csr(pair, agent_name=request.name, did=did, dns_names=request.dns_names)
    identity = AgentIdentity(
        did=did,
        did_document=document.to_json(),
        public_key=public.to_pem().decode("ascii"),
        csr=to_pem(csr).decode("ascii"),
        endpoint=request.endpoint,
        agentdns_url=request.agentdns_url,
    )
    return did, document, csr, identity


def _json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# -- phase 2: what the directory holds, and how the request differs ----------------------------------------


@dataclass(frozen=True, slots=True)
class _Existing:
    """The identity a directory holds: its key (when there is one) and its record (identity.json)."""

    pair: KeyPair | None
    did: str | None
    public_key: PublicKey | None
    record_error: str | None = None  # identity.json exists but could not be read (its error code)


def _read_existing(directory: Path, password: bytes, *, force: bool) -> _Existing:
    """Unlock the existing key and read the existing record; write nothing.

    A wrong password or an unreadable key is raised as it is (the key cannot be reused, and must not
    be replaced because of a typo).  An ``identity.json`` that cannot be read is reported as a
    difference, so that only ``force`` overwrites it.
    """
    key_path = directory / PRIVATE_KEY_FILE
    pair = load_private_key(key_path, password) if os.path.lexists(key_path) else None
    record_path = directory / IDENTITY_FILE
    if not os.path.lexists(record_path):
        return _Existing(pair, None, None)
    try:
        record = loads_strict(read_capped(record_path, max_bytes=_MAX_RECORD_BYTES, name="identity file"))
        if not isinstance(record, Mapping):
            raise InvalidInput("identity.json is not a JSON object", code="not_an_object")
        did, public_pem = record.get("did"), record.get("public_key")
        if not isinstance(did, str) or not isinstance(public_pem, str):
            raise InvalidInput("identity.json lacks did or public_key", code="incomplete_record")
        if parse_did(did).method == "web":
            web.document_path(did)  # a did:web we could not place is no record to replace by path
        public = PublicKey.from_pem(public_pem)
    except InvalidInput as exc:
        return _Existing(pair, None, None, record_error=exc.code)
    return _Existing(pair, did, public)


def _differences(existing: _Existing, request: AgentRequest) -> list[Difference]:
    """Every way ``request`` would change the identity ``existing`` describes (empty: same identity)."""
    found: list[Difference] = []
    if existing.record_error is not None:
        found.append(
            Difference(
                "identity_record", f"{IDENTITY_FILE} unreadable ({existing.record_error})", "rewritten"
            )
        )
    present = existing.pair.public_key if existing.pair is not None else existing.public_key
    if present is not None and present.key_type is not request.key_type:
        found.append(Difference("key_type", present.key_type.value, request.key_type.value))
    if existing.public_key is not None:
        recorded = f"thumbprint {existing.public_key.thumbprint()}"
        if existing.pair is None:
            found.append(Difference("key", recorded, f"a new key ({PRIVATE_KEY_FILE} is missing)"))
        elif existing.pair.public_key != existing.public_key:
            found.append(Difference("key", recorded, f"thumbprint {existing.pair.public_key.thumbprint()}"))
    if existing.did is not None:
        old, new = _did_parts(existing.did), _requested_parts(request)
        if old["method"] != new["method"]:
            found.append(Difference("method", old["method"], new["method"]))
        else:
            found.extend(
                Difference(part, old.get(part, _NONE), value)
                for part, value in new.items()
                if old.get(part, _NONE) != value
            )
    return found


def _did_parts(did: str) -> dict[str, str]:
    """The parts of ``did`` that options choose (not the key-derived ones): method, host, path …"""
    parsed = parse_did(did)
    if parsed.method == "web":
        authority, *segments = parsed.method_specific_id.split(":")
        match = _WEB_AUTHORITY.fullmatch(authority)
        host, port = (match["host"], match["port"]) if match else (authority, None)
        return {"method": "web", "host": host, "port": port or _NONE, "path": "/".join(segments) or _NONE}
    if parsed.method == "bindu":
        try:
            parts = bindu.parse(parsed)
        except InvalidInput:
            return {"method": "bindu"}
        return {"method": "bindu", "author": parts.author, "agent_name": parts.agent_name}
    return {"method": parsed.method}


def _requested_parts(request: AgentRequest) -> dict[str, str]:
    if request.method == "web":
        return _did_parts(web.create(request.web_host or "", request.web_path, request.web_port))
    if request.method == "bindu":
        author = bindu.sanitize(request.author or "")
        return {"method": "bindu", "author": author, "agent_name": bindu.sanitize(request.name)}
    return {"method": request.method}


def _refusal(directory: Path, existing: _Existing, differences: Sequence[Difference]) -> KeyStoreError:
    """The refused overwrite of an identity: what the directory holds, what was asked, how to replace."""
    holds = existing.did or (
        f"a {existing.pair.key_type.value} key" if existing.pair is not None else "an agent"
    )
    what = "; ".join(str(difference) for difference in differences)
    code = "key_type_mismatch" if any(d.what == "key_type" for d in differences) else "identity_mismatch"
    return KeyStoreError(
        f"{directory} already holds {holds}, and these options would change it ({what}); "
        "provisioning never changes an identity silently — pass --force to replace it",
        code=code,
        did=existing.did,
        differs=[difference.what for difference in differences],
        existing={difference.what: difference.existing for difference in differences},
        requested={difference.what: difference.requested for difference in differences},
    )


# -- phase 3: files of the old identity ---------------------------------------------------------------------


def _stale_web_document(directory: Path, old_did: str | None, new_document: Path | None) -> Path | None:
    """The old identity's did:web document when the new identity does not overwrite it."""
    if old_did is None or parse_did(old_did).method != "web":
        return None
    old_document = directory / WEB_ROOT / web.document_path(old_did)
    return old_document if old_document != new_document else None


def _remove_web_document(directory: Path, document: Path) -> tuple[Path, ...]:
    """Delete a stale did:web document, then the directories it leaves empty (up to and with ``web/``).

    Why: a did:web document left in the tree would be copied to the web server with the rest and keep
    serving the old identity.  ``web.document_path`` refuses ``..``, so nothing outside ``web/`` goes.
    """
    removed: list[Path] = []
    if os.path.lexists(document):
        document.unlink()
        removed.append(document)
    root = directory / WEB_ROOT
    parent = document.parent
    while parent == root or root in parent.parents:
        if not parent.is_dir() or any(parent.iterdir()):
            break
        parent.rmdir()
        removed.append(parent)
        parent = parent.parent
    return tuple(removed)
