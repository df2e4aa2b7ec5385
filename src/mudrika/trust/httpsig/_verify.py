"""Verifying half of the mudrika RFC 9421 profile: :class:`HttpSignatureVerifier`.

Why this order of checks (RFC 9421 §3.2, steps numbered as there, with the profile's §3.2.1
requirements in step 4): everything that can be decided from the headers alone is decided first and
costs no I/O; then the key is looked up (maybe a DID resolution); then the signature is verified;
only a request whose headers are authentic has its body read (streamed, capped, hashed against the
signed ``Content-Digest``); and only a request that passed every check claims its nonce, so a forged
or broken request can never burn an honest caller's nonce, and a replay store outage refuses
everything (the claim raises, nothing is accepted).

A server that authorises before it lets a caller consume replay-store capacity (the A2A middleware)
uses :meth:`HttpSignatureVerifier.aprepare`, which stops before the claim and hands back a
:class:`PendingRequest`; it claims with :meth:`PendingRequest.claim` once the policy said yes.

Time rule (one for every verifier and store in mudrika): a signature is valid from ``created -
leeway`` (inclusive) until ``expires + leeway`` (exclusive); at the exact instant ``expires +
leeway`` it is expired, and the nonce is held by the store until that same instant, so there is no
moment at which a replay is both inside the window and forgotten by the store.  A ``created`` still
ahead is "not yet valid" (:class:`~mudrika.errors.NotYetValidError`), never "expired".
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import AsyncIterable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from mudrika.crypto.keys import PublicKey
from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    NotYetValidError,
    SignatureError,
    UntrustedKeyError,
)
from mudrika.stores.replay import ReplayStore, aclaim_or_raise, claim_or_raise
from mudrika.trust.httpsig._algs import ALGORITHMS, HttpSigAlgorithm
from mudrika.trust.httpsig._components import HeaderInput, MessageView, parse_target_uri, signature_base
from mudrika.trust.httpsig._digest import DEFAULT_MAX_BODY, aread_body, parse_content_digest, read_body
from mudrika.trust.httpsig._keys import KeyLookup
from mudrika.trust.httpsig._profile import (
    DEFAULT_LEEWAY,
    DEFAULT_MAX_AGE,
    DEFAULT_MAX_LIFETIME,
    MAX_LEEWAY,
    Clock,
    SignatureParameters,
    check_keyid,
    check_label,
    check_nonce,
    check_tag,
    require_components,
)
from mudrika.trust.httpsig._sf import InnerList, Item, parse_dictionary
from mudrika.trust.jsonrpc import AuthenticationRequired

__all__ = ["REPLAY_KEY_PREFIX", "HttpSignatureVerifier", "PendingRequest", "PreChecked", "VerifiedRequest"]

REPLAY_KEY_PREFIX: Final = "httpsig:"
_MAX_REPLAY_DID: Final = 256


@dataclass(frozen=True, slots=True)
class VerifiedRequest:
    """A request whose signature, digest, time window and single use all checked out.

    ``did`` is the signer (the keyid's DID) — the principal to hand to the policy.  ``body`` is the
    body that was read and checked; pass it on instead of reading the stream again.
    """

    did: str
    keyid: str
    label: str
    algorithm: str
    components: tuple[str, ...]
    created: int
    expires: int
    nonce: str
    tag: str | None
    method: str
    target_uri: str
    body: bytes


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request whose signature, digest and time window checked out but whose nonce is NOT claimed.

    ``unclaimed`` may be shown to a policy (who signed, what); nothing may act on the request until
    :meth:`claim` returned, which records the nonce (raises ``ReplayError`` for a replay and
    ``UnavailableError`` when the store cannot answer).
    """

    unclaimed: VerifiedRequest
    replay_key: str
    claim_until: float
    store: ReplayStore

    async def claim(self) -> VerifiedRequest:
        await aclaim_or_raise(self.store, self.replay_key, self.claim_until)
        return self.unclaimed


@dataclass(frozen=True, slots=True)
class PreChecked:
    """What :meth:`HttpSignatureVerifier.precheck` decided from one request's headers, handed back to
    :meth:`HttpSignatureVerifier.aprepare` so the work is not done twice (the time window is checked
    again then).  Bound to the request it came from: another method, URL or header object ignores it."""

    method: str
    url: str
    headers_id: int
    checked: _Checked


@dataclass(frozen=True, slots=True)
class _Checked:
    """Everything decided from the headers alone, waiting for the key, the body and the claim."""

    method: str
    target_uri: str
    label: str
    components: tuple[str, ...]
    base: bytes
    signature: bytes
    alg: HttpSigAlgorithm
    keyid: str
    did: str
    created: int
    expires: int
    nonce: str
    tag: str | None
    digests: Mapping[str, bytes] | None

    def replay_key(self) -> str:
        # Namespaced by the signer's DID so one agent's nonces can never block another's; a very long
        # DID (RSA did:key) is hashed to keep the key under the store's 512-byte limit.
        did = self.did
        if len(did) > _MAX_REPLAY_DID:
            did = "sha256:" + hashlib.sha256(did.encode("utf-8")).hexdigest()
        return f"{REPLAY_KEY_PREFIX}{did}:{self.nonce}"


class HttpSignatureVerifier:
    """Verifies DID-signed requests under this profile and claims each nonce once.

    Required: ``keys`` (a :class:`KeyLookup`), ``replay_store`` (shared by every replica — Redis in a
    deployment), ``origins`` (this server's own public origins such as ``"https://agent.example"``:
    the audience; a request signed for another origin is refused) and ``algorithms`` (an allow-list of
    names from :data:`ALGORITHMS`, e.g. :data:`REGISTERED_ALGORITHMS`).

    ``label`` selects one signature by label (else exactly one must be present); ``tag``, when given,
    must equal the signed ``tag``.  It defaults to ``None`` (no requirement) so a standard RFC 9421
    signer, which sends no ``tag``, is accepted as configured in the docs; an operator who wants
    signatures made for this application only (RFC 9421 §2.3 ``tag``) sets e.g.
    ``tag=DEFAULT_TAG`` (the tag mudrika's own signer sends).  ``leeway`` (0..30 s) absorbs clock skew; ``max_age``
    bounds ``now - created``; ``max_lifetime`` bounds ``expires - created``; ``max_body`` caps the body.
    """

    def __init__(
        self,
        *,
        keys: KeyLookup,
        replay_store: ReplayStore,
        origins: Iterable[str],
        algorithms: Iterable[str],
        label: str | None = None,
        tag: str | None = None,
        leeway: float = DEFAULT_LEEWAY,
        max_age: float = DEFAULT_MAX_AGE,
        max_lifetime: int = DEFAULT_MAX_LIFETIME,
        max_body: int = DEFAULT_MAX_BODY,
        clock: Clock = time.time,
    ) -> None:
        if not isinstance(keys, KeyLookup):
            raise InvalidInput("keys must implement KeyLookup", code="httpsig_config")
        if not isinstance(replay_store, ReplayStore):
            raise InvalidInput("replay_store must implement ReplayStore", code="httpsig_config")
        allowed = frozenset(algorithms)
        if not allowed or not allowed <= ALGORITHMS.keys():
            raise InvalidInput(
                "algorithms must be a non-empty subset of the known HTTP signature algorithms",
                code="httpsig_config",
                unknown=sorted(allowed - ALGORITHMS.keys())[:8],
            )
        own: set[str] = set()
        for origin in origins:
            target = parse_target_uri(origin)
            if target.path != "/" or target.query is not None:
                raise InvalidInput("an origin has no path or query", code="httpsig_config")
            own.add(target.origin)
        if not own:
            raise InvalidInput("at least one origin (the audience) is required", code="httpsig_config")
        if not (math.isfinite(leeway) and 0 <= leeway <= MAX_LEEWAY):
            raise InvalidInput("leeway must be within 0..30 seconds", code="httpsig_config")
        if not (math.isfinite(max_age) and max_age > 0):
            raise InvalidInput("max_age must be a positive number of seconds", code="httpsig_config")
        if isinstance(max_lifetime, bool) or not isinstance(max_lifetime, int) or max_lifetime < 1:
            raise InvalidInput("max_lifetime must be a positive integer", code="httpsig_config")
        if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 0:
            raise InvalidInput("max_body must be a non-negative integer", code="httpsig_config")
        self._keys = keys
        self._store = replay_store
        self._origins = frozenset(own)
        self._algorithms = allowed
        self._label = None if label is None else check_label(label)
        self._tag = check_tag(tag)
        self._leeway = float(leeway)
        self._max_age = float(max_age)
        self._max_lifetime = max_lifetime
        self._max_body = max_body
        self._clock = clock

    def __repr__(self) -> str:
        return (
            f"HttpSignatureVerifier(origins={sorted(self._origins)!r}, algorithms={sorted(self._algorithms)!r}, "
            f"label={self._label!r}, tag={self._tag!r})"
        )

    # -- public API ----------------------------------------------------------------------------------
    def verify(
        self,
        method: str,
        url: str,
        headers: HeaderInput,
        body: bytes | Iterable[bytes],
        *,
        now: float | None = None,
    ) -> VerifiedRequest:
        """Verify one request or raise (see the error table in docs/replay.md).

        ``url`` is the absolute URL as this server is addressed publicly (scheme, Host, raw path and
        query); ``body`` is the bytes or an iterable of chunks, read only after the signature verified.
        """
        checked = self._check_headers(method, url, headers, self._clock() if now is None else now)
        key = self._keys.lookup(checked.keyid)
        self._check_signature(checked, key)
        data = self._check_body(checked, read_body(body, checked.digests or {}, max_body=self._max_body))
        claim_or_raise(self._store, checked.replay_key(), checked.expires + self._leeway)
        return self._result(checked, data)

    async def averify(
        self,
        method: str,
        url: str,
        headers: HeaderInput,
        body: bytes | AsyncIterable[bytes],
        *,
        now: float | None = None,
    ) -> VerifiedRequest:
        """Async form of :meth:`verify` (async key lookup, streamed body, async replay claim)."""
        pending = await self.aprepare(method, url, headers, body, now=now)
        return await pending.claim()

    def precheck(
        self, method: str, url: str, headers: HeaderInput, *, now: float | None = None
    ) -> PreChecked:
        """Everything decidable from the request line and headers alone (steps 1-4 and 6.1: fields,
        parameters, time window, audience, algorithm), so a server can refuse before reading a body.
        Pass the result to :meth:`aprepare` as ``prechecked``."""
        checked = self._check_headers(method, url, headers, self._clock() if now is None else now)
        return PreChecked(method, url, id(headers), checked)

    async def aprepare(
        self,
        method: str,
        url: str,
        headers: HeaderInput,
        body: bytes | AsyncIterable[bytes],
        *,
        now: float | None = None,
        prechecked: PreChecked | None = None,
    ) -> PendingRequest:
        """Every check of :meth:`averify` except the nonce claim, which the caller makes later with
        :meth:`PendingRequest.claim` (after its authorisation decision).  ``prechecked`` (from
        :meth:`precheck` on this very request) saves re-parsing the headers."""
        current = self._clock() if now is None else now
        if (
            prechecked is not None
            and prechecked.method == method
            and prechecked.url == url
            and prechecked.headers_id == id(headers)
        ):
            checked = prechecked.checked
            self._check_time(checked.created, checked.expires, current)  # time has passed since
        else:
            checked = self._check_headers(method, url, headers, current)
        key = await self._keys.alookup(checked.keyid)
        self._check_signature(checked, key)
        data = self._check_body(
            checked, await aread_body(body, checked.digests or {}, max_body=self._max_body)
        )
        return PendingRequest(
            unclaimed=self._result(checked, data),
            replay_key=checked.replay_key(),
            claim_until=checked.expires + self._leeway,
            store=self._store,
        )

    # -- steps ---------------------------------------------------------------------------------------
    def _select(self, view: MessageView) -> tuple[str, InnerList, bytes]:
        """RFC 9421 §3.2 steps 1-3: parse both fields, choose one signature, extract its input and value."""
        input_value = view.field("signature-input")
        signature_value = view.field("signature")
        if input_value is None and signature_value is None:
            raise AuthenticationRequired("no HTTP message signature", code="no_signature")
        if input_value is None or signature_value is None:
            raise InvalidInput(
                "Signature and Signature-Input must both be present", code="incomplete_signature"
            )
        # 1. Parse the Signature and Signature-Input fields (RFC 8941 dictionaries, §4.1 and §4.2).
        inputs = parse_dictionary(input_value, field="signature-input")
        signatures = parse_dictionary(signature_value, field="signature")
        # 1.1 Choose the signature: the configured label, else the only one present.
        if self._label is not None:
            label = self._label
        elif len(inputs) == 1 and len(signatures) == 1:
            label = next(iter(inputs))
        else:
            raise InvalidInput(
                "expected exactly one signature", code="ambiguous_signature", count=len(inputs)
            )
        # 1.2 The chosen Signature must have a Signature-Input of the same label.
        if label not in inputs or label not in signatures:
            raise InvalidInput("signature label not found", code="signature_label_mismatch", label=label)
        # 2. The Signature-Input member is an inner list of component identifiers with parameters.
        params = inputs[label]
        if not isinstance(params, InnerList):
            raise InvalidInput("Signature-Input member must be an inner list", code="bad_signature_input")
        # 3. The Signature member is a byte sequence.
        value = signatures[label]
        if not isinstance(value, Item) or not isinstance(value.value, bytes) or value.params:
            raise InvalidInput("Signature member must be a byte sequence", code="bad_signature_value")
        return label, params, value.value

    def _check_headers(self, method: str, url: str, headers: HeaderInput, now: float) -> _Checked:
        view = MessageView.request(method, url, headers)
        label, signature_input, signature = self._select(view)
        # 4. Application requirements (§3.2.1): parameters, covered components, time window, audience.
        params = SignatureParameters.parse(signature_input)
        created, expires, nonce = params.created, params.expires, params.nonce
        keyid, alg_name = params.keyid, params.alg
        if created is None or expires is None or nonce is None or keyid is None or alg_name is None:
            missing = [
                name
                for name, value in (
                    ("created", created),
                    ("expires", expires),
                    ("nonce", nonce),
                    ("keyid", keyid),
                    ("alg", alg_name),
                )
                if value is None
            ]
            raise InvalidInput(
                "required signature parameter missing", code="missing_parameter", parameter=missing[0]
            )
        components = tuple(str(item.value) for item in signature_input.items)
        require_components(components, content_type=view.field("content-type") is not None)
        if self._tag is not None and params.tag != self._tag:
            raise InvalidInput("signature tag not accepted here", code="wrong_tag")
        check_nonce(nonce)
        did = check_keyid(keyid)
        self._check_time(created, expires, now)
        assert view.target is not None  # MessageView.request always sets it
        if view.target.origin not in self._origins:
            raise BindingError("request addressed to another origin", code="wrong_audience")
        # 6.1 The algorithm must be in this verifier's allow-list (6.5: the key type is checked in step 8).
        alg = ALGORITHMS.get(alg_name)
        if alg is None or alg_name not in self._algorithms:
            raise InvalidInput("signature algorithm not allowed", code="alg_not_allowed", alg=alg_name[:32])
        digests = None
        if "content-digest" in components:
            digest_field = view.field("content-digest")
            if digest_field is None:
                raise InvalidInput(
                    "covered field is missing", code="missing_component", component="content-digest"
                )
            digests = parse_content_digest(digest_field)
        # 7. Re-create the signature base from the received message and the parsed parameters (§2.5).
        base = signature_base(view, signature_input)
        return _Checked(
            method=method,
            target_uri=view.target.target_uri,
            label=label,
            components=components,
            base=base,
            signature=signature,
            alg=alg,
            keyid=keyid,
            did=did,
            created=created,
            expires=expires,
            nonce=nonce,
            tag=params.tag,
            digests=digests,
        )

    def _check_time(self, created: int, expires: int, now: float) -> None:
        if expires < created:
            raise InvalidInput("expires is before created", code="bad_time_window")
        if expires - created > self._max_lifetime:
            raise InvalidInput(
                "signature lifetime too long", code="lifetime_too_long", limit=self._max_lifetime
            )
        # The time rule (module docstring): valid on [created - leeway, expires + leeway).
        if now < created - self._leeway:
            raise NotYetValidError("signature created in the future", code="created_in_future")
        if now >= expires + self._leeway:
            raise ExpiredError("signature expired", code="signature_expired")
        if now - created >= self._max_age + self._leeway:
            raise ExpiredError("signature too old", code="signature_too_old", limit=self._max_age)

    @staticmethod
    def _check_signature(checked: _Checked, key: PublicKey) -> None:
        # 5. The key came from the lookup (authorised for authentication); it must be a PublicKey.
        if not isinstance(key, PublicKey):
            raise UntrustedKeyError("key lookup returned no public key", code="unknown_key")
        # 6. The algorithm is bound to the key type: alg names it, the key must be of that type.
        if checked.alg.key_type is not key.key_type:
            raise SignatureError(
                "signature algorithm does not match the key type",
                code="alg_key_mismatch",
                alg=checked.alg.name,
                key_type=key.key_type.value,
            )
        # 8. HTTP_VERIFY over the re-created base (raises SignatureError).
        key.verify(checked.signature, checked.base, checked.alg.jws)

    @staticmethod
    def _check_body(checked: _Checked, body: bytes) -> bytes:
        # With content-digest covered the digest was checked while reading; without it the body must be
        # empty, because nothing signed would vouch for a single byte of it.
        if checked.digests is None and body:
            raise InvalidInput("request body is not covered by the signature", code="body_not_signed")
        return body

    @staticmethod
    def _result(checked: _Checked, body: bytes) -> VerifiedRequest:
        return VerifiedRequest(
            did=checked.did,
            keyid=checked.keyid,
            label=checked.label,
            algorithm=checked.alg.name,
            components=checked.components,
            created=checked.created,
            expires=checked.expires,
            nonce=checked.nonce,
            tag=checked.tag,
            method=checked.method,
            target_uri=checked.target_uri,
            body=body,
        )
