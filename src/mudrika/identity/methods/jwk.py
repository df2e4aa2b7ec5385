"""did:jwk (the did:jwk Method Specification, github.com/quartzjer/did-jwk, spec.md).

Why did:jwk next to did:key: peers that speak JOSE natively (OpenID, SD-JWT wallets) exchange JWKs,
and did:jwk carries one verbatim — including ``use`` — so no codec table is needed to read it.

Format::

    did-jwk-format  := did:jwk:<base64url-value>     base64url( UTF-8 JSON of the public JWK )

The document has exactly one verification method, ``#0``, of type ``JsonWebKey2020`` whose
``publicKeyJwk`` is the decoded JWK as given.  Purposes: all five relationships, except that
``use: "sig"`` drops ``keyAgreement`` and ``use: "enc"`` keeps *only* ``keyAgreement`` (spec,
"To create the DID Document").  An X25519 key can only agree keys, so it gets ``keyAgreement`` only
whatever ``use`` says, and an Ed25519 key can only sign.  Private keys are refused (spec, "Security").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.keys import KeyType, PublicKey
from mudrika.errors import InvalidInput
from mudrika.identity._x25519 import X25519PublicKey
from mudrika.identity.did import DID, parse_did
from mudrika.identity.document import PURPOSES, SIGNING_PURPOSES, AgreementKey, DIDDocument, Purpose
from mudrika.identity.methods.key import CONTEXT_DID, CONTEXT_JWS_2020
from mudrika.identity.resolution import LocalDriver, ResolutionResult, result

__all__ = ["JwkDriver", "create", "create_from_jwk", "decode", "document"]

_MAX_JWK_JSON: Final = 1536
_PRIVATE: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})


def create(public_key: PublicKey | X25519PublicKey, *, use: Literal["sig", "enc"] | None = None) -> str:
    """``did:jwk:`` + base64url of the key's JWK, serialised canonically (RFC 8785: sorted, compact).

    Canonical serialisation is what the spec suggests for DIDs that are not stored verbatim, and what
    didkit produces, so one key gives one DID here.
    """
    jwk: dict[str, str] = dict(public_key.to_jwk())
    if use is not None:
        jwk["use"] = use
    return create_from_jwk(dict(sorted(jwk.items())))


def create_from_jwk(jwk: Mapping[str, Any]) -> str:
    """``did:jwk:`` + base64url of ``jwk`` serialised compactly *in the given member order*.

    For reproducing a DID made by someone else from their JWK.  The JWK is checked first (public,
    valid, consistent ``use``) so a DID that cannot be resolved is never produced.
    """
    _key_and_purposes(jwk)
    text = json.dumps(dict(jwk), separators=(",", ":"), ensure_ascii=False)
    return "did:jwk:" + b64url_encode(text.encode("utf-8"))


def _key_and_purposes(jwk: Mapping[str, Any]) -> tuple[AgreementKey, tuple[Purpose, ...]]:
    if not isinstance(jwk, Mapping):
        raise InvalidInput("did:jwk value is not a JSON object", code="invalidDid")
    leaked = _PRIVATE.intersection(jwk)
    if leaked:
        raise InvalidInput(
            "did:jwk must carry a public JWK, not a private one", code="private_jwk", members=sorted(leaked)
        )
    use = jwk.get("use")
    if use not in (None, "sig", "enc"):
        raise InvalidInput("JWK 'use' must be 'sig' or 'enc'", code="bad_jwk", member="use")
    key: AgreementKey
    if jwk.get("kty") == "OKP" and jwk.get("crv") == "X25519":
        key = X25519PublicKey.from_jwk(jwk)
        if use == "sig":
            raise InvalidInput("an X25519 key cannot have use 'sig'", code="bad_jwk", member="use")
        return key, ("keyAgreement",)
    key = PublicKey.from_jwk(jwk)
    alg = jwk.get("alg")
    if alg is not None and alg not in key.algorithms:
        raise InvalidInput(
            "JWK 'alg' does not fit the key type", code="bad_jwk", member="alg", alg=str(alg)[:16]
        )
    if use == "enc":
        if key.key_type is KeyType.ED25519:
            raise InvalidInput("an Ed25519 key cannot have use 'enc'", code="bad_jwk", member="use")
        return key, ("keyAgreement",)
    if use == "sig" or key.key_type is KeyType.ED25519:
        return key, SIGNING_PURPOSES
    return key, PURPOSES


def decode(did: DID | str) -> tuple[dict[str, Any], AgreementKey, tuple[Purpose, ...]]:
    """Spec "Read" steps 1-4: the JWK (as given), its key, and the purposes it is good for."""
    parsed = did if isinstance(did, DID) else parse_did(did)
    if parsed.method != "jwk":
        raise InvalidInput("not a did:jwk", code="invalidDid", did=str(parsed)[:128])
    # 1. Remove the prefix.  2. base64url-decode (strict: no padding, canonical).
    try:
        raw = b64url_decode(parsed.method_specific_id, max_len=2048)
    except InvalidInput:
        raise InvalidInput("did:jwk value is not base64url", code="invalidDid") from None
    # 3. Parse as UTF-8 JSON (strictly: no duplicate members).
    try:
        jwk = loads_strict(raw, max_bytes=_MAX_JWK_JSON, max_depth=4)
    except InvalidInput as exc:
        raise InvalidInput("did:jwk value is not a JSON object", code="invalidDid", reason=exc.code) from None
    if not isinstance(jwk, dict):
        raise InvalidInput("did:jwk value is not a JSON object", code="invalidDid")
    # 4. Validate the JWK properties.
    key, purposes = _key_and_purposes(jwk)
    return jwk, key, purposes


def document(did: DID | str) -> DIDDocument:
    """Spec "Read" step 5: the DID document with the single ``#0`` JsonWebKey2020 method."""
    parsed = did if isinstance(did, DID) else parse_did(did)
    jwk, key, purposes = decode(parsed)
    did_text = str(parsed)
    method: dict[str, Any] = {
        "id": f"{did_text}#0",
        "type": "JsonWebKey2020",
        "controller": did_text,
        "publicKeyJwk": jwk,
    }
    return DIDDocument._assemble(
        parsed,
        (CONTEXT_DID, CONTEXT_JWS_2020),
        [(method, key)],
        dict.fromkeys(purposes, (method["id"],)),
    )


class JwkDriver(LocalDriver):
    """Resolver driver for did:jwk: pure computation, never touches the network."""

    methods: ClassVar[frozenset[str]] = frozenset({"jwk"})

    def resolve(self, did: DID) -> ResolutionResult:
        return result(document(did), driver="jwk")
