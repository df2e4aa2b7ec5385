"""Signatures over the parts of an A2A artifact or message, bound to the task they belong to.

Why: an artifact is the result an agent delivers; it may be stored, forwarded by intermediaries and
read long after the connection that carried it is gone.  Transport security says nothing then.  A
signature by the producing agent's DID key over *all* parts — text, file and data, in order — lets
any later reader check who produced them, and binding the task id, context id, artifact or message
id and the ``kid`` into the signed payload stops a valid signature being lifted onto another task or
another artifact.

What is signed (a compact JWS, ``typ`` :data:`PARTS_SIGNATURE_TYP`, stored in the object's
``metadata`` under :data:`SIGNATURE_KEY`), the payload being the JSON object

``{"iss": <DID>, "kid": <DID URL>, "kind": "artifact"|"message", "id": <artifactId|messageId>,
"taskId": ..., "contextId": ..., "iat": ..., "partsSha256": base64url(SHA-256(RFC 8785(parts)))}``

``parts`` is the received array itself (A2A 1.0 ``{"text"|"raw"|"url"|"data", ...}`` or 0.3
``{"kind": ...}`` parts), with one normalisation: the implicit-presence members ``filename``,
``mediaType`` and ``metadata`` of a 1.0 part are dropped when they hold their default (``""`` or
``{}``), because a protobuf round trip (a2a-sdk) drops them.  Reordering, removing, adding or
altering any part changes the hash; so does moving a part to another artifact.  Not covered: the
artifact's ``name``, ``description``, ``extensions`` and ``metadata`` (which holds the signature).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jose import sign_jwt, verify_compact
from mudrika.crypto.keys import KeyPair
from mudrika.errors import BindingError, InvalidInput, VerificationError
from mudrika.identity.resolver import DIDResolver
from mudrika.trust.a2a._didkeys import ASYMMETRIC_ALGORITHMS, DidKeyTrust, check_kid

__all__ = [
    "MAX_PARTS",
    "PARTS_SIGNATURE_TYP",
    "SIGNATURE_KEY",
    "PartsVerifier",
    "VerifiedParts",
    "parts_digest",
    "sign_parts",
]

#: ``metadata`` key of the artifact or message that holds the compact JWS.
SIGNATURE_KEY: Final = "mudrika/partsSignature"
#: ``typ`` of the JWS protected header.
PARTS_SIGNATURE_TYP: Final = "a2a-parts+jws"
#: More parts than this in one artifact or message is refused.
MAX_PARTS: Final = 256
#: How far ahead of the verifier's clock a signature's iat may be (clock skew between agents).
_FUTURE_LEEWAY: Final = 30
_IMPLICIT_PART_MEMBERS: Final = {"filename": "", "mediaType": "", "metadata": {}}

Kind = Literal["artifact", "message"]


def _kind_and_id(obj: Mapping[str, Any]) -> tuple[Kind, str]:
    artifact_id, message_id = obj.get("artifactId"), obj.get("messageId")
    if isinstance(artifact_id, str) and artifact_id and message_id is None:
        return "artifact", artifact_id
    if isinstance(message_id, str) and message_id and artifact_id is None:
        return "message", message_id
    raise InvalidInput("expected an artifact (artifactId) or a message (messageId)", code="invalid_parts")


def _normalised_parts(obj: Mapping[str, Any]) -> list[Any]:
    parts = obj.get("parts")
    if not isinstance(parts, list) or not parts:
        raise InvalidInput("'parts' must be a non-empty array", code="invalid_parts")
    if len(parts) > MAX_PARTS:
        raise InvalidInput("too many parts", code="too_many_parts", limit=MAX_PARTS)
    out: list[Any] = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            raise InvalidInput("every part must be an object", code="invalid_parts", index=index)
        if "kind" in part:  # A2A 0.3 shape: kept verbatim
            out.append(part)
            continue
        out.append(
            {
                name: value
                for name, value in part.items()
                if not (name in _IMPLICIT_PART_MEMBERS and value == _IMPLICIT_PART_MEMBERS[name])
            }
        )
    return out


def parts_digest(obj: Mapping[str, Any]) -> str:
    """base64url(SHA-256(RFC 8785 of the normalised ``parts`` array)) of an artifact or message."""
    return b64url_encode(hashlib.sha256(canonicalize(_normalised_parts(obj))).digest())


def sign_parts(
    obj: Mapping[str, Any],
    key: KeyPair,
    *,
    kid: str,
    task_id: str,
    context_id: str,
    alg: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Return a copy of the artifact or message with its parts signature in ``metadata``."""
    did = check_kid(kid)
    algorithm = key.signing_algorithm(alg)
    if algorithm not in ASYMMETRIC_ALGORITHMS:
        raise InvalidInput("parts signatures need an asymmetric algorithm", code="bad_alg", alg=algorithm)
    if not task_id or not context_id:
        raise InvalidInput("task_id and context_id must be non-empty", code="invalid_parts")
    kind, object_id = _kind_and_id(obj)
    claims = {
        "iss": did,
        "kid": kid,
        "kind": kind,
        "id": object_id,
        "taskId": task_id,
        "contextId": context_id,
        "iat": int(time.time() if now is None else now),
        "partsSha256": parts_digest(obj),
    }
    token = sign_jwt(claims, key, alg=algorithm, kid=kid, typ=PARTS_SIGNATURE_TYP)
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidInput("'metadata' must be an object", code="invalid_parts")
    signed = dict(obj)
    signed["metadata"] = {**metadata, SIGNATURE_KEY: token}
    return signed


@dataclass(frozen=True, slots=True)
class VerifiedParts:
    """Who signed the parts, for which task and object, and when they say they did."""

    signer: str
    kid: str
    kind: Kind
    object_id: str
    task_id: str
    context_id: str
    issued_at: int


class PartsVerifier:
    """Verify parts signatures against the verifier's trusted DIDs and algorithms.

    ``max_age`` (seconds) bounds how old a signature may be at ``now`` (valid strictly before
    ``iat + max_age``); ``None`` accepts any age (archived artifacts).  A signature up to
    :data:`_FUTURE_LEEWAY` seconds ahead of this clock is accepted (the signer's clock may run fast).  The task and context a verifier expects are per call and required.
    """

    __slots__ = ("_clock", "_max_age", "_trust")

    def __init__(
        self,
        *,
        resolver: DIDResolver,
        trusted_dids: Collection[str],
        algorithms: Collection[str],
        max_age: float | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._trust = DidKeyTrust(resolver=resolver, trusted_dids=trusted_dids, algorithms=algorithms)
        self._max_age = max_age
        self._clock = clock

    def verify(self, obj: Mapping[str, Any], *, task_id: str, context_id: str) -> VerifiedParts:
        """Return who signed ``obj``'s parts, or raise (``BindingError`` for a moved or altered part)."""
        kind, object_id = _kind_and_id(obj)
        metadata = obj.get("metadata")
        token = metadata.get(SIGNATURE_KEY) if isinstance(metadata, dict) else None
        if not isinstance(token, str):
            raise VerificationError("the parts are not signed", code="no_signature")
        verified = verify_compact(token, key=self._trust.key_for, expected_typ=PARTS_SIGNATURE_TYP)
        claims = loads_strict(verified.payload, max_bytes=8192, max_depth=4)
        if not isinstance(claims, dict):
            raise InvalidInput("signature payload is not a JSON object", code="malformed_jws")
        # 1. The signed kid and issuer are the key that verified (no lifting onto another key).
        if claims.get("kid") != verified.key.kid or claims.get("iss") != verified.key.owner:
            raise BindingError("signed kid or issuer differs from the verifying key", code="kid_mismatch")
        # 2. The object, task and context the signature was made for are the ones we hold.
        expected = {"kind": kind, "id": object_id, "taskId": task_id, "contextId": context_id}
        for name, value in expected.items():
            if claims.get(name) != value:
                raise BindingError("signature is bound to another object", code="wrong_binding", claim=name)
        for name in ("taskId", "contextId"):
            own = obj.get(name)
            if own is not None and own != expected[name]:
                raise BindingError("object names another task or context", code="wrong_binding", claim=name)
        # 3. Age.
        issued_at = claims.get("iat")
        if not isinstance(issued_at, int) or isinstance(issued_at, bool):
            raise InvalidInput("signature has no integer iat", code="malformed_claim")
        now = self._clock()
        if issued_at > now + _FUTURE_LEEWAY:
            raise VerificationError("signature issued in the future", code="iat_in_future")
        # Half-open, as every time rule in mudrika: valid strictly before iat + max_age.
        if self._max_age is not None and now >= issued_at + self._max_age:
            raise VerificationError("signature too old", code="expired")
        # 4. The parts: every one, in order.
        signed_digest = claims.get("partsSha256")
        if not isinstance(signed_digest, str) or not hmac.compare_digest(
            signed_digest.encode(), parts_digest(obj).encode()
        ):
            raise BindingError("the parts differ from the signed parts", code="parts_mismatch")
        return VerifiedParts(
            signer=str(verified.key.owner),
            kid=str(verified.key.kid),
            kind=kind,
            object_id=object_id,
            task_id=task_id,
            context_id=context_id,
            issued_at=issued_at,
        )
