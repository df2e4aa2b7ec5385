"""did:key (W3C CCG did:key Method v0.7) with Multikey (default) or JsonWebKey2020 documents.

Why did:key: the DID *is* the public key (multibase base58btc of multicodec-prefixed key bytes), so
resolving it needs no network and no trust in anyone's server.  The cost is that it can never rotate.

Format (spec §"Format")::

    did:key:<mb-value>      mb-value := 'z' base58btc( varint(multicodec) || raw-public-key )

Supported multicodecs: ed25519-pub 0xed (32 bytes), secp256k1-pub 0xe7 (33, compressed),
p256-pub 0x1200 (33, compressed), rsa-pub 0x1205 (PKCS#1 DER), x25519-pub 0xec (32, key agreement
only).  P-384/P-521/BLS12-381 keys are refused (``unsupportedPublicKeyType``): mudrika does not sign
with them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

from mudrika.crypto.keys import KeyType, PublicKey
from mudrika.crypto.multibase import PUBLIC_KEY_CODECS, base58btc_decode, varint_decode, varint_encode
from mudrika.errors import InvalidInput
from mudrika.identity._x25519 import X25519_MULTICODEC, X25519PublicKey, edwards_y, x25519_from_edwards_y
from mudrika.identity.did import DID, parse_did
from mudrika.identity.document import SIGNING_PURPOSES, AgreementKey, DeferredMethod, DIDDocument, Purpose
from mudrika.identity.resolution import LocalDriver, ResolutionResult, result

__all__ = [
    "CONTEXT_DID",
    "CONTEXT_JWS_2020",
    "CONTEXT_MULTIKEY",
    "KeyDriver",
    "Representation",
    "check_agreement_form",
    "create",
    "decode",
    "document",
]

CONTEXT_DID: Final = "https://www.w3.org/ns/did/v1"
CONTEXT_MULTIKEY: Final = "https://w3id.org/security/multikey/v1"
CONTEXT_JWS_2020: Final = "https://w3id.org/security/suites/jws-2020/v1"

#: ``multikey``: type ``Multikey`` + ``publicKeyMultibase`` (the spec's recommended default);
#: ``jwk``: type ``JsonWebKey2020`` + ``publicKeyJwk`` (what older verifiers expect).
Representation = Literal["multikey", "jwk"]

# Expected raw key length per multicodec ("Signature Method Creation Algorithm", step 2); None = DER.
_TYPES: Final[dict[int, KeyType]] = {code: KeyType(name) for name, code in PUBLIC_KEY_CODECS.items()}
_LENGTHS: Final[dict[int, int | None]] = {
    PUBLIC_KEY_CODECS[KeyType.ED25519]: 32,
    PUBLIC_KEY_CODECS[KeyType.SECP256K1]: 33,
    PUBLIC_KEY_CODECS[KeyType.P256]: 33,
    PUBLIC_KEY_CODECS[KeyType.RSA]: None,
    X25519_MULTICODEC: 32,
}
#: Read once: on Python 3.11 ``KeyType.ED25519`` goes through the enum class's attribute machinery.
_ED25519: Final = KeyType.ED25519
_MAX_MULTIBASE: Final = 1600  # an RSA-8192 key; the DID parser caps the whole DID at 2048 anyway
#: The varint prefix of every supported codec (all between 128 and 16383: two bytes each) -> the codec.
#: A value that starts with one of these is the codec read by ``varint_decode`` (a minimal two-byte
#: varint); anything else still goes through ``varint_decode``, which gives the same refusals as before.
_PREFIXES: Final[dict[bytes, int]] = {varint_encode(code): code for code in _LENGTHS}


def check_agreement_form(key: PublicKey) -> None:
    """Raise ``InvalidInput`` (``bad_key``) when an Ed25519 ``key`` has no X25519 form.

    Why public: the did:key document of an Ed25519 key carries a ``keyAgreement`` key derived from it,
    so resolution refuses a key without one; a caller that recognises a did:key's own key without
    building the document (the chain verifier's anchors) must refuse exactly the same keys.  Other key
    types pass.
    """
    if key.key_type is KeyType.ED25519:
        edwards_y(key)


def create(public_key: PublicKey | X25519PublicKey) -> str:
    """``did:key:`` + the key's Multikey encoding."""
    return "did:key:" + public_key.to_multikey()


def decode(did: DID | str) -> AgreementKey:
    """Decode the public key a did:key carries (spec: "Decode Public Key" + length/validity checks)."""
    parsed = did if isinstance(did, DID) else parse_did(did)
    # Document Creation steps 1-2: scheme "did", method "key", a single 'z'-prefixed multibase value.
    if parsed.method != "key":
        raise InvalidInput("not a did:key", code="invalidDid", did=str(parsed)[:128])
    value = parsed.method_specific_id
    if ":" in value or not value.startswith("z") or len(value) > _MAX_MULTIBASE:
        raise InvalidInput(
            "did:key value must be one base58btc multibase string", code="invalidDid", did=str(parsed)[:128]
        )
    try:
        data = base58btc_decode(value[1:])
        codec = _PREFIXES.get(data[:2])
        if codec is not None:
            raw = data[2:]
        else:
            codec, used = varint_decode(data)
            raw = data[used:]
    except InvalidInput:
        raise InvalidInput(
            "did:key value is not valid base58btc multicodec", code="invalidDid", did=str(parsed)[:128]
        ) from None
    if codec not in _LENGTHS:
        raise InvalidInput(
            "did:key public key type not supported", code="unsupportedPublicKeyType", codec=hex(codec)
        )
    # Signature Method Creation steps 2-3: the length, then that the bytes are a valid key.
    length = _LENGTHS[codec]
    if length is not None and len(raw) != length:
        raise InvalidInput(
            "did:key public key has the wrong length",
            code="invalidPublicKeyLength",
            codec=hex(codec),
            expected=length,
            got=len(raw),
        )
    if codec == X25519_MULTICODEC:
        return X25519PublicKey(raw)
    try:
        key = PublicKey.from_raw(_TYPES[codec], raw)
    except InvalidInput as exc:
        raise InvalidInput(
            "did:key public key is not valid", code="invalidPublicKey", reason=exc.code
        ) from None
    if key.raw != raw:  # e.g. BER where DER is required: one key, one DID
        raise InvalidInput("did:key public key is not canonically encoded", code="invalidPublicKey")
    return key


def _method(did: str, key: AgreementKey, multibase: str, representation: Representation) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": f"{did}#{multibase}", "controller": did}
    if representation == "jwk":
        entry["type"] = "JsonWebKey2020"
        entry["publicKeyJwk"] = key.to_jwk()
    else:
        entry["type"] = "Multikey"
        entry["publicKeyMultibase"] = multibase
    return entry


def document(
    did: DID | str,
    *,
    representation: Representation = "multikey",
    derive_key_agreement: bool = True,
) -> DIDDocument:
    """Expand a did:key into its DID document (spec: "Document Creation Algorithm").

    1-2. parse and check the identifier (:func:`decode`);
    3.   the signature verification method ``<did>#<mb-value>``;
    4.   document id = the DID;
    5.   ``verificationMethod`` = [that method];
    6.   ``authentication``, ``assertionMethod``, ``capabilityInvocation``, ``capabilityDelegation``
         reference it;
    7.   with ``derive_key_agreement`` (the spec's ``enableEncryptionKeyDerivation``) an Ed25519 key
         also gets its X25519 form as a second method, referenced from ``keyAgreement``.  The key is
         checked to have that form here (a key without one is refused now, as before), but the form
         itself -- a modular inverse and a base58 encoding, the costly part of resolving --
         is computed only when the document's ``keyAgreement`` or its method list is first read;
    8.   ``@context`` = DID v1 + the context of the representation.

    An X25519 did:key has no signature method: its one method is referenced from ``keyAgreement`` only.
    """
    parsed = did if isinstance(did, DID) else parse_did(did)
    key = decode(parsed)  # 1-2
    did_text = str(parsed)
    first = _method(did_text, key, parsed.method_specific_id, representation)  # 3
    methods: list[tuple[dict[str, Any], AgreementKey]] = [(first, key)]  # 5
    purposes: dict[Purpose, tuple[str, ...]] = {}
    deferred: DeferredMethod | None = None
    if isinstance(key, X25519PublicKey):
        purposes["keyAgreement"] = (first["id"],)
    else:
        purposes = dict.fromkeys(SIGNING_PURPOSES, (first["id"],))  # 6
        if derive_key_agreement and key.key_type is _ED25519:  # 7
            deferred = _agreement_method(did_text, edwards_y(key), representation)
    context = (CONTEXT_DID, CONTEXT_JWS_2020 if representation == "jwk" else CONTEXT_MULTIKEY)  # 8
    return DIDDocument._assemble(  # 4: the id is the DID
        parsed, context, methods, purposes, deferred_key_agreement=deferred
    )


def _agreement_method(did: str, y: int, representation: Representation) -> DeferredMethod:
    """Step 7, deferred: the X25519 method of the Ed25519 key whose Edwards y is ``y``."""

    def build() -> tuple[dict[str, Any], AgreementKey]:
        agreement = x25519_from_edwards_y(y)
        return _method(did, agreement, agreement.to_multikey(), representation), agreement

    return build


class KeyDriver(LocalDriver):
    """Resolver driver for did:key: pure computation, never touches the network."""

    methods: ClassVar[frozenset[str]] = frozenset({"key"})

    def __init__(
        self, *, representation: Representation = "multikey", derive_key_agreement: bool = True
    ) -> None:
        self._representation: Representation = representation
        self._derive = derive_key_agreement

    def resolve(self, did: DID) -> ResolutionResult:
        doc = document(did, representation=self._representation, derive_key_agreement=self._derive)
        return result(doc, driver="key")
