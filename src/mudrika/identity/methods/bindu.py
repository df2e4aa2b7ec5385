"""did:bindu, made self-certifying: ``did:bindu:<author>:<agent_name>:<agent_id>``.

Why: Bindu agents already present DIDs of this shape, but there ``agent_id`` is a random UUID
(``uuid4().hex``), so nothing ties the DID to a key and whoever serves "the document" decides the
key.  Here ``agent_id`` is *derived from the public key*, so any document claiming to be this DID's
can be checked by hashing its key — no registry, no trusted server.  A recreated key is a different
DID, as it must be.

Compatibility with Bindu's format: ``author`` and ``agent_name`` are sanitised the way Bindu does it
(lower-case; ``" "`` → ``_``, ``"@"`` → ``_at_``, ``"."`` → ``_``), and ``agent_id`` keeps the shape of
``uuid4().hex`` — 32 lower-case hex digits that ``uuid.UUID(hex=...)`` parses — so Bindu's parsers,
storage schemas and logs accept it unchanged.  We are stricter in one place: after sanitising, the
components may only contain ``a-z 0-9 _ -`` (1-64 characters), because anything else is not valid
in a DID or would need percent-encoding that Bindu does not do.

Derivation (see docs/identity.md for a worked example)::

    digest   = SHA-256( varint(multicodec) || raw public key )   # the bytes inside a did:key
    b        = digest[0:16]
    b[6]     = (b[6] & 0x0f) | 0x80                              # UUID version 8 (RFC 9562 §5.8)
    b[8]     = (b[8] & 0x3f) | 0x80                              # RFC 9562 variant (10xx)
    agent_id = hex(b)                                            # 32 lower-case hex digits

Version 8 is RFC 9562's "custom" UUID, so a self-certifying id is recognisable at a glance next to
Bindu's random version-4 ids.  122 bits of the hash remain: finding a second key for an existing
agent id is a 2^122 second-preimage search.

did:bindu has no registry.  Resolution takes a *candidate* document — from an offline snapshot or a
``source`` callback given to :class:`BinduDriver` — and accepts it only if (1) its id is the DID,
(2) every verification method in it carries the key that hashes to ``agent_id`` (or that key's X25519
form), and (3) at least one does.  Anything else is :class:`~mudrika.errors.VerificationError`
``not_self_certifying``: a document that adds a second key would let its server slip in a key the
agent never held.  Services in a candidate document are *not* covered by this check.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from mudrika.crypto.keys import KeyType, PublicKey
from mudrika.crypto.multibase import PUBLIC_KEY_CODECS, varint_encode
from mudrika.errors import DocumentError, InvalidInput, VerificationError
from mudrika.identity._x25519 import X25519PublicKey, ed25519_to_x25519
from mudrika.identity.did import DID, parse_did
from mudrika.identity.document import DIDDocument
from mudrika.identity.methods.single_key import single_key_document
from mudrika.identity.resolution import LocalDriver, ResolutionResult, check_document_id, result

__all__ = [
    "BinduDID",
    "BinduDriver",
    "DocumentSource",
    "agent_id_for",
    "create",
    "document",
    "parse",
    "sanitize",
    "verify_document",
]

#: A source of candidate documents: DID string → parsed JSON document (or a DIDDocument), or None.
DocumentSource = Callable[[str], Mapping[str, Any] | DIDDocument | None]

_COMPONENT: Final = re.compile(r"[a-z0-9_-]{1,64}")
_AGENT_ID: Final = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class BinduDID:
    """The three parts of a did:bindu."""

    author: str
    agent_name: str
    agent_id: str

    def __str__(self) -> str:
        return f"did:bindu:{self.author}:{self.agent_name}:{self.agent_id}"


def sanitize(value: str) -> str:
    """Bindu's sanitisation (lower-case; space → ``_``, ``@`` → ``_at_``, ``.`` → ``_``), then strict."""
    if not isinstance(value, str):
        raise InvalidInput("did:bindu component must be a string", code="invalidDid")
    text = value.lower().replace(" ", "_").replace("@", "_at_").replace(".", "_")
    if not _COMPONENT.fullmatch(text):
        raise InvalidInput(
            "did:bindu author and agent name may use only a-z 0-9 _ - (1-64 characters) after sanitising",
            code="invalidDid",
            value=value[:64],
        )
    return text


def agent_id_for(public_key: PublicKey) -> str:
    """The self-certifying agent id of ``public_key`` (a version-8 UUID in ``hex`` form)."""
    # 1. The multicodec-prefixed key: exactly the bytes a did:key / Multikey value base58-encodes.
    multicodec_bytes = varint_encode(PUBLIC_KEY_CODECS[public_key.key_type]) + public_key.raw
    # 2. SHA-256, keep 16 bytes.  3-4. Set the UUID version (8) and variant (10xx) bits.
    b = bytearray(hashlib.sha256(multicodec_bytes).digest()[:16])
    b[6] = (b[6] & 0x0F) | 0x80
    b[8] = (b[8] & 0x3F) | 0x80
    return b.hex()


def create(public_key: PublicKey, *, author: str, agent_name: str) -> str:
    """``did:bindu:<sanitised author>:<sanitised agent name>:<agent_id_for(public_key)>``."""
    return str(BinduDID(sanitize(author), sanitize(agent_name), agent_id_for(public_key)))


def parse(did: DID | str) -> BinduDID:
    """Split a did:bindu into its parts; the syntax is checked, the key binding is not (see verify)."""
    parsed = did if isinstance(did, DID) else parse_did(did)
    if parsed.method != "bindu":
        raise InvalidInput("not a did:bindu", code="invalidDid", did=str(parsed)[:128])
    parts = parsed.method_specific_id.split(":")
    if len(parts) != 3:
        raise InvalidInput(
            "did:bindu must be did:bindu:<author>:<agent_name>:<agent_id>",
            code="invalidDid",
            did=str(parsed)[:128],
        )
    author, agent_name, agent_id = parts
    if not _COMPONENT.fullmatch(author) or not _COMPONENT.fullmatch(agent_name):
        raise InvalidInput(
            "did:bindu author/agent name not in canonical sanitised form",
            code="invalidDid",
            did=str(parsed)[:128],
        )
    if not _AGENT_ID.fullmatch(agent_id):
        raise InvalidInput(
            "did:bindu agent id must be 32 lower-case hex digits", code="invalidDid", did=str(parsed)[:128]
        )
    return BinduDID(author, agent_name, agent_id)


def document(
    public_key: PublicKey,
    *,
    author: str,
    agent_name: str,
    services: Sequence[Mapping[str, Any]] = (),
) -> DIDDocument:
    """The DID document of a new did:bindu: one Multikey method ``#key-1`` for the four signing purposes."""
    did = create(public_key, author=author, agent_name=agent_name)
    return single_key_document(did, public_key, services=services)


def _not_self_certifying(message: str, reason: str, **fields: Any) -> VerificationError:
    return VerificationError(message, code="not_self_certifying", reason=reason, **fields)


def verify_document(did: DID | str, candidate: Mapping[str, Any] | DIDDocument) -> DIDDocument:
    """Accept ``candidate`` as the document of ``did`` only if it is self-certified (module docstring).

    1. Parse the DID (``InvalidInput`` for a malformed did:bindu).
    2. Validate the candidate as a DID Core document; its ``id`` must be the DID (``BindingError``);
       it must name no other controller.
    3. Decode every verification method's key; each signing key must hash to ``agent_id``, each X25519
       key must be the X25519 form of such a key; there must be at least one signing key.
    """
    parts = parse(did)  # 1
    did_text = str(parts)
    doc = candidate if isinstance(candidate, DIDDocument) else DIDDocument.from_json(candidate)  # 2
    check_document_id(doc, did_text, message="DID document id does not match the DID")
    controllers = (doc.controller,) if isinstance(doc.controller, str) else (doc.controller or ())
    if any(controller != did_text for controller in controllers):
        raise _not_self_certifying("did:bindu document names another controller", "foreign_controller")
    identity: list[PublicKey] = []  # 3
    agreement: list[X25519PublicKey] = []
    for method in doc.all_methods.values():
        try:
            key = method.public_key()
        except VerificationError:
            raise _not_self_certifying(
                "did:bindu document has a method whose key cannot be checked",
                "unverifiable_method",
                id=method.id[:200],
            ) from None
        if isinstance(key, X25519PublicKey):
            agreement.append(key)
        elif hmac.compare_digest(agent_id_for(key), parts.agent_id):
            identity.append(key)
        else:
            raise _not_self_certifying(
                "a key in the did:bindu document does not hash to the agent id",
                "foreign_key",
                id=method.id[:200],
            )
    if not identity:
        raise _not_self_certifying(
            "no key in the did:bindu document hashes to the agent id", "no_identity_key"
        )
    derived = {ed25519_to_x25519(key) for key in identity if key.key_type is KeyType.ED25519}
    if any(key not in derived for key in agreement):
        raise _not_self_certifying(
            "an X25519 key in the did:bindu document is not derived from the identity key", "foreign_key"
        )
    return doc


class BinduDriver(LocalDriver):
    """Resolver driver for did:bindu: candidate documents come from ``source`` and are self-certified.

    ``source`` is typically an offline snapshot lookup or a cache of documents agents presented
    (for example in their agent card); it is never trusted, only checked.
    """

    methods: ClassVar[frozenset[str]] = frozenset({"bindu"})

    def __init__(self, source: DocumentSource) -> None:
        self._source = source

    def resolve(self, did: DID) -> ResolutionResult:
        parse(did)
        candidate = self._source(str(did))
        if candidate is None:
            raise DocumentError("no candidate document for this did:bindu", code="notFound")
        return result(verify_document(did, candidate), driver="bindu")
