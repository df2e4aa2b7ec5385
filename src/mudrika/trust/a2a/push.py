"""Authenticated push notifications (A2A 1.0 §4.3, §13.2): the agent signs, the receiver checks.

Why more than the configured token: A2A lets a client hand the agent a ``token`` (sent back as
``X-A2A-Notification-Token``) and ``authentication`` credentials.  Both are shared secrets that say
"someone who knows the secret sent this"; neither says *which agent* sent it, nor binds the body, nor
stops a captured call from being replayed.  So the agent also signs every webhook call with its DID
key, in :data:`PUSH_SIGNATURE_HEADER`, a JWT (``typ`` :data:`PUSH_JWT_TYP`) with the claims

``iss`` the agent's DID · ``aud`` the webhook URL exactly as configured · ``iat`` · ``exp`` at most
:data:`MAX_LIFETIME` seconds after ``iat`` · ``jti`` single use · ``bodySha256`` base64url SHA-256 of
the exact request body.

Agent side: :class:`PushSigner` signs; its :meth:`PushSigner.httpx_hook` plugs into the
``httpx.AsyncClient`` that a2a-sdk's ``BasePushNotificationSender`` posts with, so every call it makes
is signed without changing a2a-sdk.  Webhook URLs go through the one egress policy
(:class:`~mudrika.net.egress.EgressPolicy`, §13.2: no private, loopback, link-local or metadata
targets): :func:`check_webhook_url` screens the URL as written, :func:`webhook_url_validator` (a2a-sdk's
``push_url_validator``) also resolves the name and checks every address, and the POST itself must use
``egress.async_transport()``, which checks the address it connects to (DNS rebinding).

Receiver side: :class:`PushNotificationGuard` is pure ASGI middleware for the webhook path.  In order,
cheapest first (nothing is read or stored for a caller that fails an earlier step): method and
declared size; the configured token, compared in constant time; the JWT — signature by a key of a DID
the receiver trusts, ``aud`` equal to the receiver's own URL, lifetime and times; then the body (capped)
against ``bodySha256``; only then is the ``jti`` claimed in a :class:`~mudrika.stores.replay.ReplayStore`
(a store that is down answers 503, never lets the call through).

Which answer when the sender's keys cannot be had: the JWT names its key by a DID URL, so what the
agent's DID document says is the sender's own fact.  A DID with no document (404/410), a document
that is not JSON or not a DID Core document, one whose ``id`` is another DID, a method the resolver
does not support, a key the document does not list: **401** (a
:class:`~mudrika.errors.VerificationError`; the sender's retries cannot help until it publishes a
usable document).  Only a document that cannot be *fetched* now (DNS failure, refused connection,
timeout, a 5xx answer) is **503** (:class:`~mudrika.errors.ResolutionError`, fail closed: the sender
may retry later).  On the agent side, :func:`webhook_url_validator` can only accept or refuse a push
target; it refuses one that is invalid or refused by the egress policy and one whose name does not
resolve now alike, and its log line says which (``refused`` or ``unreachable``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, Final

import httpcore
import httpx

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jose import parse_unverified_header, sign_jwt, verify_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput, MudrikaError, UnavailableError, VerificationError
from mudrika.identity.resolver import DIDResolver
from mudrika.net.egress import EgressPolicy
from mudrika.stores.replay import ReplayStore
from mudrika.trust._asgi import BodyTooLarge, collect_body, declared_too_large, replay
from mudrika.trust.a2a._didkeys import ASYMMETRIC_ALGORITHMS, DidKeyTrust, check_kid

if TYPE_CHECKING:
    from mudrika.trust._asgi import ASGIApp, Receive, Scope, Send

__all__ = [
    "MAX_LIFETIME",
    "NOTIFICATION_TOKEN_HEADER",
    "PUSH_JWT_TYP",
    "PUSH_SCOPE_KEY",
    "PUSH_SIGNATURE_HEADER",
    "PushNotificationGuard",
    "PushSigner",
    "body_digest",
    "check_webhook_url",
    "webhook_url_validator",
]

PUSH_SIGNATURE_HEADER: Final = "A2A-Notification-Signature"
#: The header a2a-sdk (and A2A §4.3.1 ``token``) uses for the client's configured token.
NOTIFICATION_TOKEN_HEADER: Final = "X-A2A-Notification-Token"  # noqa: S105 - a header name
PUSH_JWT_TYP: Final = "a2a-push+jwt"
#: Longest accepted ``exp - iat``: five minutes.
MAX_LIFETIME: Final = 300
#: Where the guard puts the verified claims summary for the application (``scope[PUSH_SCOPE_KEY]``).
PUSH_SCOPE_KEY: Final = "mudrika.push"
_MAX_SIGNATURE_BYTES: Final = 8192
# The header names as ASGI presents them (lower-case bytes), derived once rather than per request.
_TOKEN_FIELD: Final = NOTIFICATION_TOKEN_HEADER.lower().encode("ascii")
_SIGNATURE_FIELD: Final = PUSH_SIGNATURE_HEADER.lower().encode("ascii")
_MAX_URL: Final = 2048

_log = logging.getLogger(__name__)


def body_digest(body: bytes) -> str:
    """base64url(SHA-256(body)): the ``bodySha256`` claim."""
    return b64url_encode(hashlib.sha256(body).digest())


# --- webhook URLs (§13.2) -------------------------------------------------------------------------


def check_webhook_url(url: str, *, egress: EgressPolicy) -> str:
    """Refuse a webhook URL the egress policy would not let the agent call; return it unchanged.

    Checked here, without the network: the scheme (``egress.schemes``, ``https`` by default), no user
    information, a host, and the host's spelling — an IP literal must be a public unicast address and
    IPv4 must be spelt canonically (``2130706433``, ``0x7f.1``, ``127.1`` refused), as
    :meth:`EgressPolicy.check_url` decides.  Names are resolved, and every address checked, by
    :func:`webhook_url_validator` at registration and by the egress transport when the call is made.
    Raises ``InvalidInput`` (``bad_webhook_url``) or ``EgressDenied`` (``egress_denied``).
    """
    if not isinstance(url, str) or len(url) > _MAX_URL:
        raise InvalidInput("webhook URL missing or too long", code="bad_webhook_url")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError):
        raise InvalidInput("webhook URL is not a URL", code="bad_webhook_url") from None
    if parsed.userinfo:
        raise InvalidInput("webhook URL must not carry user information", code="bad_webhook_url")
    if not parsed.host:
        raise InvalidInput("webhook URL has no host", code="bad_webhook_url")
    egress.check_url(parsed)
    return url


def webhook_url_validator(*, egress: EgressPolicy) -> Callable[[str], Awaitable[bool]]:
    """a2a-sdk's ``push_url_validator``: :func:`check_webhook_url`, then resolve the name once and
    check every address it resolves to (True = accepted; any failure refuses, fail closed)."""

    async def validate(url: str) -> bool:
        try:
            check_webhook_url(url, egress=egress)
            parsed = httpx.URL(url)
            port = parsed.port or (443 if parsed.scheme == "https" else 80)
            await egress.aresolve(parsed.host, port, None)
        except MudrikaError as exc:
            _log.warning("push webhook URL refused (refused: %s)", exc.code)
            return False
        except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
            _log.warning("push webhook URL refused (unreachable: %s)", type(exc).__name__)
            return False
        return True

    return validate


# --- agent side -----------------------------------------------------------------------------------


class PushSigner:
    """Signs webhook calls with the agent's DID key (``kid`` is a DID URL of that key)."""

    __slots__ = ("_alg", "_clock", "_did", "_key", "_kid", "_lifetime")

    def __init__(
        self,
        key: KeyPair,
        *,
        kid: str,
        alg: str | None = None,
        lifetime: int = 60,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._did = check_kid(kid)
        self._kid = kid
        self._alg = key.signing_algorithm(alg)
        if self._alg not in ASYMMETRIC_ALGORITHMS:
            raise InvalidInput("push signatures need an asymmetric algorithm", code="bad_alg")
        if not 0 < lifetime <= MAX_LIFETIME:
            raise InvalidInput("lifetime must be 1..300 seconds", code="bad_config", lifetime=lifetime)
        self._key = key
        self._lifetime = lifetime
        self._clock = clock

    def __repr__(self) -> str:
        return f"PushSigner(kid={self._kid!r}, alg={self._alg!r})"

    def sign(self, url: str, body: bytes) -> str:
        """The JWT for one POST of ``body`` to ``url`` (a fresh ``jti`` every call)."""
        now = int(self._clock())
        claims = {
            "iss": self._did,
            "aud": url,
            "iat": now,
            "exp": now + self._lifetime,
            "jti": uuid.uuid4().hex,
            "bodySha256": body_digest(body),
        }
        return sign_jwt(claims, self._key, alg=self._alg, kid=self._kid, typ=PUSH_JWT_TYP)

    async def httpx_hook(self, request: Any) -> None:
        """``httpx`` request event hook: add :data:`PUSH_SIGNATURE_HEADER` to every outgoing POST.

        Install with ``httpx.AsyncClient(event_hooks={"request": [signer.httpx_hook]})`` and hand that
        client to a2a-sdk's ``BasePushNotificationSender``.
        """
        if request.method == "POST":
            request.headers[PUSH_SIGNATURE_HEADER] = self.sign(str(request.url), bytes(request.read()))


# --- receiver side --------------------------------------------------------------------------------


async def _answer(send: Send, status: int, error: str) -> None:
    body = json.dumps({"error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'A2A-Push realm="webhook"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> bytes | None:
    found = [value for key, value in scope.get("headers", ()) if key.lower() == name]
    return found[0] if len(found) == 1 else None  # absent or repeated: None (a repeat is refused)


class PushNotificationGuard:
    """ASGI middleware that admits a webhook POST on ``path`` only with a valid agent signature.

    Trust is the receiver's configuration: ``audience`` (the webhook URL it registered, compared
    exactly), ``trusted_agents`` (DIDs), ``algorithms``, ``resolver``; ``replay_store`` holds claimed
    ``jti`` values; ``expected_token`` is the token configured with the agent, if any.  Other paths
    and non-HTTP scopes pass through untouched.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str,
        audience: str,
        trusted_agents: Collection[str],
        algorithms: Collection[str],
        resolver: DIDResolver,
        replay_store: ReplayStore,
        expected_token: str | None,
        max_body_bytes: int = 1024 * 1024,
        leeway: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not audience or not path.startswith("/"):
            raise InvalidInput("path must start with '/' and audience must be set", code="bad_config")
        self._app = app
        self._path = path
        self._audience = audience
        self._trust = DidKeyTrust(resolver=resolver, trusted_dids=trusted_agents, algorithms=algorithms)
        self._store = replay_store
        self._token = None if expected_token is None else expected_token.encode()
        self._max_body = max_body_bytes
        self._leeway = leeway
        self._clock = clock

    def __repr__(self) -> str:
        return f"PushNotificationGuard(path={self._path!r}, audience={self._audience!r})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self._path:
            await self._app(scope, receive, send)
            return
        # 1. Method and declared size: no body is read for a call that is refused here.
        if scope.get("method") != "POST":
            await _answer(send, 405, "method_not_allowed")
            return
        if declared_too_large(scope, self._max_body):
            await _answer(send, 413, "too_large")
            return
        # 2. The configured token, in constant time.
        if self._token is not None:
            presented = _header(scope, _TOKEN_FIELD)
            if presented is None or not hmac.compare_digest(presented, self._token):
                await self._refuse(send, "bad_token")
                return
        # 3. The agent's signature over the call.
        raw = _header(scope, _SIGNATURE_FIELD)
        if raw is None or len(raw) > _MAX_SIGNATURE_BYTES:
            await self._refuse(send, "missing_signature")
            return
        try:
            claims = await self._verify(raw.decode("ascii"))
        except UnavailableError as exc:
            _log.warning("push signature check unavailable (%s)", exc.code)
            await _answer(send, 503, "unavailable")
            return
        except (MudrikaError, UnicodeDecodeError) as exc:
            await self._refuse(send, getattr(exc, "code", "bad_signature"))
            return
        # 4. The body, capped, against the signed digest.
        try:
            body = await collect_body(receive, self._max_body)
        except BodyTooLarge:
            await _answer(send, 413, "too_large")
            return
        if body is None:  # the client left: nobody to answer, nothing to deliver
            return
        if not hmac.compare_digest(body_digest(body).encode(), str(claims.get("bodySha256")).encode()):
            await self._refuse(send, "body_mismatch")
            return
        # 5. Only now consume shared capacity: claim the jti.
        # The key is a digest: a long DID (an RSA did:key) must not push it past the store's key limit.
        key = "push:" + body_digest(f"{claims['iss']}\n{claims['jti']}".encode())
        try:
            # Held until the last instant _verify would still accept the token (exp + leeway).
            first = await self._store.aclaim(key, float(claims["exp"]) + self._leeway)
        except UnavailableError as exc:
            _log.warning("push replay store unavailable (%s)", exc.code)
            await _answer(send, 503, "unavailable")
            return
        if not first:
            await self._refuse(send, "replay")
            return
        scope[PUSH_SCOPE_KEY] = {"iss": claims["iss"], "jti": claims["jti"], "iat": claims["iat"]}
        await self._app(scope, replay(body, receive), send)

    async def _verify(self, token: str) -> dict[str, Any]:
        header = parse_unverified_header(token, max_bytes=_MAX_SIGNATURE_BYTES)
        trusted = await self._trust.akey_for(header)
        claims = verify_jwt(
            token,
            key=trusted,
            issuer=trusted.owner,
            audience=self._audience,
            now=self._clock(),
            leeway=self._leeway,
            required=("iss", "aud", "iat", "exp", "jti", "bodySha256"),
            max_lifetime=MAX_LIFETIME,
            expected_typ=PUSH_JWT_TYP,
            max_bytes=_MAX_SIGNATURE_BYTES,
        )
        jti = claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= 128 or not isinstance(claims.get("exp"), int):
            raise VerificationError("jti or exp malformed", code="malformed_claim")
        return claims

    async def _refuse(self, send: Send, code: str) -> None:
        _log.info("push notification refused (%s)", json.dumps(code[:64]))
        await _answer(send, 401, "unauthorized")
