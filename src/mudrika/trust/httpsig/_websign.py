"""Signing for the open-web profiles: Web Bot Auth and Visa TAP, with ``httpx`` auth classes.

Why the signers mirror the verifier's profile module: a mudrika agent browsing a Web Bot Auth site
or paying through TAP must never send what a strict verifier (ours or Cloudflare's) refuses.  Both
sign the exact bytes httpx is about to send (``requires_request_body``), add a ``Content-Digest``
whenever there is a body (neither profile covers a body otherwise), and replace any signature fields
already present (e.g. copied onto a redirect: keep ``follow_redirects=False`` on signing clients).

Web Bot Auth (draft-meunier-webbotauth-httpsig-protocol, editor's copy after -02): the dictionary
``Signature-Agent`` with one member keyed by the signature's label, covered as
``"signature-agent";key="<label>"``; ``@authority`` plus, by default, ``@method``, ``@path`` and
``@query`` (the draft's SHOULD: an ``@authority``-only signature is replayable against every path);
``keyid`` the key's thumbprint, ``tag="web-bot-auth"``, a 64-byte nonce.
TAP: ``("@authority" "@path")``, ``created``, ``expires`` (at most 480 s later), ``keyid`` (the
registry's id of the key), ``alg``, ``nonce``, ``tag`` = ``agent-browser-auth`` or
``agent-payer-auth``, label ``sig2`` as Visa's reference agent sends it — but serialised canonically
(``keyid``, no spaces), as RFC 8941 requires.
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass

import httpx

from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.trust.httpsig._algs import ALGORITHMS, DEFAULT_FOR_KEY_TYPE, HttpSigAlgorithm
from mudrika.trust.httpsig._components import HeaderInput, MessageView, signature_base
from mudrika.trust.httpsig._digest import content_digest
from mudrika.trust.httpsig._profile import Clock, check_label
from mudrika.trust.httpsig._sf import InnerList, Item, Token, serialize_dictionary, serialize_item
from mudrika.trust.httpsig._webprofile import (
    TAP_MAX_LIFETIME,
    TAP_TAGS,
    WEB_BOT_AUTH,
    agent_ref,
    check_web_keyid,
)

__all__ = ["TrustedAgentAuth", "TrustedAgentSigner", "WebBotAuth", "WebBotAuthSigner", "WebSignedHeaders"]

_OWNED = frozenset({"signature", "signature-input", "content-digest", "signature-agent"})
_WEB_NONCE_BYTES = 64


@dataclass(frozen=True, slots=True)
class WebSignedHeaders:
    """The fields one signed request carries (``signature_agent`` only for Web Bot Auth)."""

    headers: dict[str, str]
    label: str
    created: int
    expires: int
    nonce: str
    signature_base: bytes


def _algorithm(key: KeyPair, algorithm: str | None) -> HttpSigAlgorithm:
    name = algorithm or DEFAULT_FOR_KEY_TYPE[key.key_type]
    alg = ALGORITHMS.get(name)
    if alg is None or alg.key_type is not key.key_type or not alg.registered:
        raise InvalidInput(
            "signature algorithm not valid for this key", code="alg_key_mismatch", alg=str(name)[:32]
        )
    return alg


def _expiry(expires_in: int, cap: int) -> int:
    if isinstance(expires_in, bool) or not isinstance(expires_in, int) or not 1 <= expires_in <= cap:
        raise InvalidInput(f"expires_in must be 1..{cap} seconds", code="httpsig_config", limit=cap)
    return expires_in


class _Signer:
    _key: KeyPair
    _alg: HttpSigAlgorithm
    _label: str
    _expires_in: int
    _clock: Clock

    def _sign(
        self,
        method: str,
        url: str,
        headers: HeaderInput,
        body: bytes,
        *,
        covered: list[Item],
        extra: dict[str, str],
        keyid: str,
        tag: str,
        nonce: str,
    ) -> WebSignedHeaders:
        received = MessageView.request(method, url, headers)
        fields = {name: lines for name, lines in received.fields.items() if name not in _OWNED}
        for name, value in extra.items():
            fields[name.lower()] = [value]
        if body:
            fields["content-digest"] = [content_digest(body)]
            extra = {**extra, "Content-Digest": fields["content-digest"][0]}
            covered = [*covered, Item("content-digest")]
            if "content-type" in fields:
                covered.append(Item("content-type"))
        view = MessageView(fields, method=received.method, target=received.target)
        created = int(self._clock())
        expires = created + self._expires_in
        inner = InnerList(
            tuple(covered),
            (
                ("created", created),
                ("expires", expires),
                ("keyid", keyid),
                ("alg", self._alg.name),
                ("nonce", nonce),
                ("tag", tag),
            ),
        )
        base = signature_base(view, inner, component_parameters=True)
        signature = self._key.sign(base, self._alg.jws)
        out = {
            **extra,
            "Signature-Input": serialize_dictionary({self._label: inner}),
            "Signature": serialize_dictionary({self._label: Item(signature)}),
        }
        return WebSignedHeaders(out, self._label, created, expires, nonce, base)


class WebBotAuthSigner(_Signer):
    """Signs requests as a Web Bot Auth agent whose keys are published at ``signature_agent``.

    ``signature_agent`` is the agent's origin (``agent_type="directory"``, served by
    :func:`~mudrika.trust.httpsig.directory_app`) or a JWKS / CIMD URL.  ``components`` are the
    derived components covered besides the ``Signature-Agent`` member (``@authority`` or
    ``@target-uri`` must be among them).  ``legacy_signature_agent`` sends the pre-dictionary
    sf-string form, covered whole, for verifiers that do not read ``;key`` as RFC 9421 §2.1.2 says
    (npm ``web-bot-auth`` 0.1.3 signs and verifies the whole field instead of the member): the draft
    says signers MUST send the dictionary form, so use it only for such a peer.
    """

    def __init__(
        self,
        key: KeyPair,
        *,
        signature_agent: str,
        agent_type: str = "directory",
        label: str = "sig1",
        components: Iterable[str] = ("@method", "@authority", "@path", "@query"),
        expires_in: int = 60,
        algorithm: str | None = None,
        legacy_signature_agent: bool = False,
        clock: Clock = time.time,
    ) -> None:
        if not isinstance(key, KeyPair):
            raise InvalidInput("key must be a KeyPair", code="httpsig_config")
        ref = agent_ref(signature_agent, agent_type)
        if legacy_signature_agent and agent_type != "directory":
            raise InvalidInput("the legacy Signature-Agent form names a directory", code="httpsig_config")
        covered = tuple(components)
        if "@authority" not in covered and "@target-uri" not in covered:
            raise InvalidInput("cover @authority or @target-uri", code="httpsig_config")
        if not all(name.startswith("@") for name in covered) or len(set(covered)) != len(covered):
            raise InvalidInput("components are distinct derived components", code="httpsig_config")
        self._key = key
        self._alg = _algorithm(key, algorithm)
        self._label = check_label(label)
        self._expires_in = _expiry(expires_in, 86400)
        self._clock = clock
        self._keyid = key.public_key.thumbprint()
        self._components = covered
        member = Item(signature_agent, () if agent_type == "directory" else (("type", Token(agent_type)),))
        self._legacy = bool(legacy_signature_agent)
        self._agent_field = (
            serialize_item(Item(signature_agent))
            if self._legacy
            else serialize_dictionary({self._label: member})
        )
        self.ref = ref

    def __repr__(self) -> str:
        return f"WebBotAuthSigner(keyid={self._keyid!r}, agent={self.ref.identifier!r})"

    @property
    def keyid(self) -> str:
        return self._keyid

    def sign(self, method: str, url: str, headers: HeaderInput, body: bytes = b"") -> WebSignedHeaders:
        covered = [Item(name) for name in self._components]
        covered.append(Item("signature-agent", () if self._legacy else (("key", self._label),)))
        nonce = base64.b64encode(secrets.token_bytes(_WEB_NONCE_BYTES)).decode("ascii")
        return self._sign(
            method,
            url,
            headers,
            body,
            covered=covered,
            extra={"Signature-Agent": self._agent_field},
            keyid=self._keyid,
            tag=WEB_BOT_AUTH,
            nonce=nonce,
        )


class TrustedAgentSigner(_Signer):
    """Signs requests under Visa's Trusted Agent Protocol with the key the registry knows as ``keyid``.

    ``tag`` is ``agent-browser-auth`` (browsing, product pages) or ``agent-payer-auth`` (checkout).
    """

    def __init__(
        self,
        key: KeyPair,
        keyid: str,
        *,
        tag: str,
        label: str = "sig2",
        expires_in: int = 60,
        algorithm: str | None = None,
        clock: Clock = time.time,
    ) -> None:
        if not isinstance(key, KeyPair):
            raise InvalidInput("key must be a KeyPair", code="httpsig_config")
        if tag not in TAP_TAGS:
            raise InvalidInput("tag must be agent-browser-auth or agent-payer-auth", code="httpsig_config")
        self._key = key
        self._keyid = check_web_keyid(keyid)
        self._tag = tag
        self._alg = _algorithm(key, algorithm)
        self._label = check_label(label)
        self._expires_in = _expiry(expires_in, TAP_MAX_LIFETIME)
        self._clock = clock

    def __repr__(self) -> str:
        return f"TrustedAgentSigner(keyid={self._keyid!r}, tag={self._tag!r})"

    @property
    def tag(self) -> str:
        return self._tag

    def sign(self, method: str, url: str, headers: HeaderInput, body: bytes = b"") -> WebSignedHeaders:
        nonce = base64.b64encode(secrets.token_bytes(_WEB_NONCE_BYTES)).decode("ascii")
        return self._sign(
            method,
            url,
            headers,
            body,
            covered=[Item("@authority"), Item("@path")],
            extra={},
            keyid=self._keyid,
            tag=self._tag,
            nonce=nonce,
        )


class _SigningAuth(httpx.Auth):
    requires_request_body = True

    def __init__(self, signer: WebBotAuthSigner | TrustedAgentSigner) -> None:
        self._signer = signer

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        for name in _OWNED:
            if name in request.headers:
                del request.headers[name]
        signed = self._signer.sign(request.method, str(request.url), request.headers, request.content)
        for name, value in signed.headers.items():
            request.headers[name] = value
        yield request


class WebBotAuth(_SigningAuth):
    """``httpx`` auth: every request signed as a Web Bot Auth agent (sync and async clients)."""

    def __init__(self, signer: WebBotAuthSigner) -> None:
        super().__init__(signer)


class TrustedAgentAuth(_SigningAuth):
    """``httpx`` auth: every request signed under TAP; use one client (or auth) per tag — browsing with
    ``agent-browser-auth``, paying with ``agent-payer-auth``."""

    def __init__(self, signer: TrustedAgentSigner) -> None:
        super().__init__(signer)
