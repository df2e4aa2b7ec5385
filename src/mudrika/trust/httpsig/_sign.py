"""Signing half of the mudrika RFC 9421 profile: :class:`HttpMessageSigner` and the ``httpx`` auth.

Why the signer owns ``Content-Digest``: the digest must be over the exact bytes that leave the client
(RFC 9530 §2), so it is computed from the body ``httpx`` is about to send, never from a caller's
object, and it replaces any digest or signature already present (e.g. copied onto a redirect).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Generator
from dataclasses import dataclass

import httpx

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.trust.httpsig._algs import ALGORITHMS, DEFAULT_FOR_KEY_TYPE
from mudrika.trust.httpsig._components import HeaderInput, MessageView, signature_base
from mudrika.trust.httpsig._digest import content_digest
from mudrika.trust.httpsig._profile import (
    DEFAULT_EXPIRES_IN,
    DEFAULT_LABEL,
    DEFAULT_MAX_LIFETIME,
    DEFAULT_TAG,
    NONCE_BYTES,
    SIGNATURE_FIELDS,
    TARGET_COMPONENTS,
    Clock,
    TargetMode,
    check_keyid,
    check_label,
    check_tag,
)
from mudrika.trust.httpsig._sf import InnerList, Item, serialize_dictionary

__all__ = ["DidSignatureAuth", "HttpMessageSigner", "SignedHeaders"]


@dataclass(frozen=True, slots=True)
class SignedHeaders:
    """The three header fields a signed request carries, plus what went into them (for logs/tests)."""

    content_digest: str
    signature_input: str
    signature: str
    label: str
    created: int
    expires: int
    nonce: str
    signature_base: bytes

    def as_dict(self) -> dict[str, str]:
        return {
            "Content-Digest": self.content_digest,
            "Signature-Input": self.signature_input,
            "Signature": self.signature,
        }


class HttpMessageSigner:
    """Signs requests with a DID key under this profile (see the module docstring).

    ``keyid`` is the DID URL of ``key``'s verification method; ``algorithm`` defaults to the key type's
    (``ed25519``, ``ecdsa-p256-sha256``, ``rsa-pss-sha512``, private ``ecdsa-secp256k1-sha256``).
    ``target_mode`` chooses ``"@method" "@target-uri"`` or ``"@method" "@authority" "@path" "@query"``.
    """

    def __init__(
        self,
        key: KeyPair,
        keyid: str,
        *,
        label: str = DEFAULT_LABEL,
        tag: str | None = DEFAULT_TAG,
        expires_in: int = DEFAULT_EXPIRES_IN,
        target_mode: TargetMode = "target-uri",
        algorithm: str | None = None,
        clock: Clock = time.time,
    ) -> None:
        if not isinstance(key, KeyPair):
            raise InvalidInput("key must be a KeyPair", code="httpsig_config")
        check_keyid(keyid)
        alg_name = algorithm or DEFAULT_FOR_KEY_TYPE[key.key_type]
        alg = ALGORITHMS.get(alg_name)
        if alg is None or alg.key_type is not key.key_type:
            raise InvalidInput(
                "signature algorithm not valid for this key type",
                code="alg_key_mismatch",
                alg=str(alg_name)[:32],
                key_type=key.key_type.value,
            )
        if (
            isinstance(expires_in, bool)
            or not isinstance(expires_in, int)
            or not 1 <= expires_in <= DEFAULT_MAX_LIFETIME
        ):
            raise InvalidInput(
                "expires_in must be an integer of 1..300 seconds",
                code="httpsig_config",
                limit=DEFAULT_MAX_LIFETIME,
            )
        if target_mode not in TARGET_COMPONENTS:
            raise InvalidInput("unknown target_mode", code="httpsig_config")
        self._key = key
        self._keyid = keyid
        self._alg = alg
        self._label = check_label(label)
        self._tag = check_tag(tag)
        self._expires_in = expires_in
        self._target = TARGET_COMPONENTS[target_mode]
        self._clock = clock

    def __repr__(self) -> str:
        return f"HttpMessageSigner(keyid={self._keyid!r}, alg={self._alg.name!r}, label={self._label!r})"

    @property
    def keyid(self) -> str:
        return self._keyid

    @property
    def algorithm(self) -> str:
        return self._alg.name

    def sign(self, method: str, url: str, headers: HeaderInput, body: bytes) -> SignedHeaders:
        """Compute ``Content-Digest``, ``Signature-Input`` and ``Signature`` for one request.

        Any ``Content-Digest``/``Signature``/``Signature-Input`` already in ``headers`` is ignored: the
        returned values replace them (this profile owns those three fields).
        """
        digest = content_digest(body)
        # The received view's field lines, minus the three fields this profile owns, plus our digest.
        received = MessageView.request(method, url, headers)
        fields = {name: lines for name, lines in received.fields.items() if name not in SIGNATURE_FIELDS}
        fields["content-digest"] = [digest]
        view = MessageView(fields, method=received.method, target=received.target)
        covered = [*self._target, "content-digest"]
        if "content-type" in fields:
            covered.append("content-type")
        created = int(self._clock())
        expires = created + self._expires_in
        nonce = b64url_encode(secrets.token_bytes(NONCE_BYTES))
        params: list[tuple[str, int | str]] = [
            ("created", created),
            ("expires", expires),
            ("nonce", nonce),
            ("keyid", self._keyid),
            ("alg", self._alg.name),
        ]
        if self._tag is not None:
            params.append(("tag", self._tag))
        inner = InnerList(tuple(Item(name) for name in covered), tuple(params))
        base = signature_base(view, inner)
        signature = self._key.sign(base, self._alg.jws)
        return SignedHeaders(
            content_digest=digest,
            signature_input=serialize_dictionary({self._label: inner}),
            signature=serialize_dictionary({self._label: Item(signature)}),
            label=self._label,
            created=created,
            expires=expires,
            nonce=nonce,
            signature_base=base,
        )


class DidSignatureAuth(httpx.Auth):
    """``httpx`` authentication that signs every request (sync and async clients alike).

    ``requires_request_body`` makes httpx read the body before ``auth_flow`` so the digest is over the
    exact bytes sent.  httpx follows redirects *inside* one auth flow, so a redirected request would
    carry the first URL's signature (refused by the next hop, and shown to whoever the redirect points
    at): keep ``follow_redirects=False`` (httpx's default) on signing clients.
    """

    requires_request_body = True

    def __init__(self, signer: HttpMessageSigner) -> None:
        self._signer = signer

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        signed = self._signer.sign(request.method, str(request.url), request.headers, request.content)
        for name, value in signed.as_dict().items():
            request.headers[name] = value  # replaces any earlier line (e.g. copied onto a redirect)
        yield request
