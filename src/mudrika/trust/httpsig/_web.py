"""Verifying the open-web profiles: :class:`WebSignatureVerifier` (Web Bot Auth and Visa TAP).

Why a second verifier beside :class:`~mudrika.trust.httpsig.HttpSignatureVerifier`: the DID profile's
rules (a DID URL keyid, ``@method`` covered, no component parameters) are exactly what an open-web
agent does not send, and loosening them would loosen the DID profile too.  This verifier follows the
same RFC 9421 §3.2 order and the same time rule, with the profile's requirements in step 4
(``_webprofile`` says what each profile requires):

1-3. parse ``Signature-Input``/``Signature``; choose the one signature whose ``tag`` is an enabled
     profile (a configured ``label``, else exactly one such signature);
4.   parameters, covered components, ``Signature-Agent`` (Web Bot Auth: the member the signature
     covers), time window and lifetime cap, audience (``@authority`` must be one of ours), nonce
     shape, ``alg`` in the allow-list — all before any I/O;
5.   the key: Web Bot Auth on the (agent URL, thumbprint) pair from the agent's directory; TAP by
     ``kid`` from the registry JWKS; then ``alg`` is bound to the key type (absent: the key's default);
6-8. the signature over the rebuilt base; the body against a signed ``Content-Digest`` (a body
     nothing signed is refused); and only then — after the caller's authorisation when it uses
     :meth:`WebSignatureVerifier.aprepare` — the nonce is claimed.

Time rule (docs/replay.md): valid on ``[created - leeway, min(expires, created + max_age) + leeway)``.
Web Bot Auth signatures may legitimately carry a long ``expires`` (the draft recommends at most 24 h),
so ``max_age`` bounds how long this verifier accepts one and the nonce is held until that same
instant: there is no moment at which a replay is inside the window and forgotten by the store.

Leniency: :data:`LENIENT_KEYID_CASE` accepts Visa's reference agent, which writes ``keyId=`` (RFC 8941
§3.1.2 keys are lower case, so a strict parser refuses the member).  It applies to TAP-tagged
signatures only, accepts exactly the spelling ``keyId``, and — because such a member has no
canonical serialisation and the reference signs the text it sends — builds ``@signature-params`` from
the member's text as received.  Off by default; docs/webbotauth.md documents it.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import AsyncIterable, Iterable
from dataclasses import dataclass
from typing import Final, NamedTuple

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
from mudrika.trust.httpsig._algs import ALGORITHMS, DEFAULT_FOR_KEY_TYPE, HttpSigAlgorithm
from mudrika.trust.httpsig._components import (
    HeaderInput,
    MessageView,
    _field_lines,
    parse_target_uri,
    signature_base,
)
from mudrika.trust.httpsig._digest import DEFAULT_MAX_BODY, aread_body, parse_content_digest, read_body
from mudrika.trust.httpsig._directory import AgentKeys, KeyDirectory, _configured_ref
from mudrika.trust.httpsig._profile import DEFAULT_LEEWAY, MAX_LEEWAY, Clock, check_label
from mudrika.trust.httpsig._sf import InnerList, Item, parse_dictionary, parse_dictionary_members
from mudrika.trust.httpsig._webprofile import (
    TAP_MAX_LIFETIME,
    TAP_TAGS,
    THUMBPRINT_URN_PREFIX,
    WEB_BOT_AUTH,
    WEB_PROFILES,
    AgentRef,
    SignatureAgent,
    check_thumbprint_keyid,
    check_web_keyid,
    check_web_nonce,
    key_ref,
    parse_signature_agent,
)
from mudrika.trust.jsonrpc import AuthenticationRequired

__all__ = [
    "DEFAULT_WEB_MAX_LIFETIME",
    "LENIENCIES",
    "LENIENT_KEYID_CASE",
    "WEB_REPLAY_KEY_PREFIX",
    "PendingAgentRequest",
    "VerifiedAgentRequest",
    "WebPreChecked",
    "WebSignatureVerifier",
    "web_profile_of",
]

LENIENT_KEYID_CASE: Final = "keyid-mixed-case"
LENIENCIES: Final = frozenset({LENIENT_KEYID_CASE})
DEFAULT_WEB_MAX_LIFETIME: Final = 86400
"""Web Bot Auth: the draft recommends signatures expire within 24 hours."""
WEB_REPLAY_KEY_PREFIX: Final = "webagent:"
_MAX_REPLAY_ID: Final = 200
_STRING_PARAMS: Final = frozenset({"nonce", "keyid", "alg", "tag"})
_INTEGER_PARAMS: Final = frozenset({"created", "expires"})
#: Each known signature parameter: True for a non-negative integer, False for a string.
_INTEGER_PARAMETER: Final = {**dict.fromkeys(_INTEGER_PARAMS, True), **dict.fromkeys(_STRING_PARAMS, False)}


def web_profile_of(headers: HeaderInput) -> str | None:
    """The open-web profile of a request's signatures (a tag in ``WEB_PROFILES``), or None.

    Cheap dispatch for authenticators that sit in front of the DID profile: a request whose
    ``Signature-Input`` carries no open-web tag belongs to the DID profile.  Malformed input is None
    here; the verifier that then reads it refuses it with the precise error.
    """
    view = MessageView(_field_lines(headers))
    text = view.field("signature-input")
    if text is None:
        return None
    try:
        members = parse_dictionary_members(
            text, field="signature-input", lenient_param_keys=frozenset({"keyId"})
        )[0]
    except InvalidInput:
        return None
    for member in members.values():
        tag = member.param("tag") if isinstance(member, InnerList) else None
        if isinstance(tag, str) and tag in WEB_PROFILES:
            return tag
    return None


class VerifiedAgentRequest(NamedTuple):
    """A request an open-web agent signed, every check passed.

    ``profile`` is the tag's profile; ``agent`` what a policy matches (the directory origin for a
    ``directory`` Signature-Agent, the JWKS/CIMD URL otherwise, ``<registry>#<keyid>`` for TAP);
    ``identifier`` the draft's identifier (the URL the keys were resolved from); ``thumbprint`` the
    signing key's RFC 7638 thumbprint (``key_urn`` its RFC 9278 URN).  A thumbprint names a key, not
    a legal person: see docs/webbotauth.md.  Immutable like every verified result; a named tuple
    because one is built per request on the hot path, where a frozen dataclass's per-field
    ``object.__setattr__`` costs more than the profile checks.  The nonce and body stay out of the
    repr.
    """

    profile: str
    agent: str
    identifier: str
    agent_key: str | None
    keyid: str
    thumbprint: str
    label: str
    algorithm: str
    components: tuple[str, ...]
    created: int
    expires: int
    nonce: str | None
    tag: str
    method: str
    target_uri: str
    body: bytes

    @property
    def key_urn(self) -> str:
        return THUMBPRINT_URN_PREFIX + self.thumbprint

    def __repr__(self) -> str:
        return (
            f"VerifiedAgentRequest(profile={self.profile!r}, agent={self.agent!r}, "
            f"thumbprint={self.thumbprint!r}, tag={self.tag!r}, target_uri={self.target_uri[:200]!r})"
        )


@dataclass(frozen=True, slots=True)
class PendingAgentRequest:
    """Verified but not yet claimed: nothing may act on it until :meth:`claim` returned."""

    unclaimed: VerifiedAgentRequest
    replay_key: str | None
    claim_until: float
    store: ReplayStore

    async def claim(self) -> VerifiedAgentRequest:
        if self.replay_key is not None:
            await aclaim_or_raise(self.store, self.replay_key, self.claim_until)
        return self.unclaimed


#: The covered components of a signer's ``Signature-Input``, by its parsed items: the fast parser
#: hands the same items object for the same text (``_sf``), so one signer's list is read once.  The
#: items are kept in the entry so that an ``id`` is never reused while remembered; emptied when full.
_COVERED: dict[int, tuple[tuple[Item, ...], tuple[str, ...], frozenset[str]]] = {}
_COVERED_SIZE: Final = 128


def _covered(items: tuple[Item, ...]) -> tuple[tuple[str, ...], frozenset[str]]:
    entry = _COVERED.get(id(items))
    if entry is not None and entry[0] is items:
        return entry[1], entry[2]
    components = tuple(str(item.value) for item in items)
    if len(_COVERED) >= _COVERED_SIZE:
        _COVERED.clear()
    _COVERED[id(items)] = (items, components, frozenset(components))
    return components, frozenset(components)


class _Checked(NamedTuple):
    """What steps 1-4 decided, handed to steps 5-8 (a named tuple: built once per request on the hot
    path, where a frozen dataclass's per-field ``object.__setattr__`` is measurable)."""

    profile: str
    method: str
    target_uri: str
    label: str
    components: tuple[str, ...]
    base: bytes
    signature: bytes
    alg: HttpSigAlgorithm | None
    keyid: str
    ref: AgentRef
    agent_key: str | None
    created: int
    expires: int
    nonce: str | None
    tag: str
    digests: dict[str, bytes] | None


@dataclass(frozen=True, slots=True)
class WebPreChecked:
    """What :meth:`WebSignatureVerifier.precheck` decided from the headers, for :meth:`aprepare`."""

    method: str
    url: str
    headers_id: int
    checked: _Checked


class WebSignatureVerifier:
    """Verifies Web Bot Auth and TAP signed requests; the profile is chosen by the signature's ``tag``.

    Required trust (keyword-only, no defaults): ``agents`` — where Web Bot Auth keys come from (a
    :class:`~mudrika.trust.httpsig.DirectoryCache` with its allow-list, or
    :class:`~mudrika.trust.httpsig.StaticDirectories`), or None to refuse Web Bot Auth; ``tap_registry``
    and ``tap_keys`` — the agent key registry's JWKS URL and where its keys come from, or None to
    refuse TAP; ``replay_store``; ``origins`` (this server's public origins: the audience);
    ``algorithms`` (allow-list); ``max_age`` (how long after ``created`` a signature is accepted).

    ``max_lifetime`` caps ``expires - created`` for Web Bot Auth (TAP is capped at 480 s whatever it
    says); ``require_nonce`` (default True) refuses signatures without a nonce, since without one
    nothing stops a replay inside the window; ``leniency`` names documented leniencies
    (:data:`LENIENCIES`).
    """

    def __init__(
        self,
        *,
        agents: AgentKeys | None,
        tap_registry: str | None,
        tap_keys: AgentKeys | None,
        replay_store: ReplayStore,
        origins: Iterable[str],
        algorithms: Iterable[str],
        max_age: float,
        max_lifetime: int = DEFAULT_WEB_MAX_LIFETIME,
        label: str | None = None,
        require_nonce: bool = True,
        leeway: float = DEFAULT_LEEWAY,
        max_body: int = DEFAULT_MAX_BODY,
        leniency: Iterable[str] = (),
        clock: Clock = time.time,
    ) -> None:
        if agents is not None and not isinstance(agents, AgentKeys):
            raise InvalidInput("agents must be a DirectoryCache or StaticDirectories", code="httpsig_config")
        if (tap_registry is None) != (tap_keys is None):
            raise InvalidInput("tap_registry and tap_keys go together", code="httpsig_config")
        if agents is None and tap_keys is None:
            raise InvalidInput("enable Web Bot Auth (agents) and/or TAP (tap_keys)", code="httpsig_config")
        if not isinstance(replay_store, ReplayStore):
            raise InvalidInput("replay_store must implement ReplayStore", code="httpsig_config")
        allowed = frozenset(algorithms)
        if not allowed or not allowed <= ALGORITHMS.keys():
            raise InvalidInput("algorithms must be known HTTP signature algorithms", code="httpsig_config")
        own = set()
        for origin in origins:
            target = parse_target_uri(origin)
            if target.path != "/" or target.query is not None:
                raise InvalidInput("an origin has no path or query", code="httpsig_config")
            own.add(target.origin)
        if not own:
            raise InvalidInput("at least one origin (the audience) is required", code="httpsig_config")
        if not (math.isfinite(max_age) and max_age > 0):
            raise InvalidInput("max_age must be a positive number of seconds", code="httpsig_config")
        if isinstance(max_lifetime, bool) or not isinstance(max_lifetime, int) or max_lifetime < 1:
            raise InvalidInput("max_lifetime must be a positive integer", code="httpsig_config")
        if not (math.isfinite(leeway) and 0 <= leeway <= MAX_LEEWAY):
            raise InvalidInput("leeway must be within 0..30 seconds", code="httpsig_config")
        lenient = frozenset(leniency)
        if not lenient <= LENIENCIES:
            raise InvalidInput(
                "unknown leniency", code="httpsig_config", unknown=sorted(lenient - LENIENCIES)[:4]
            )
        self._agents = agents
        self._tap_ref: AgentRef | None = None
        if tap_registry is not None:
            self._tap_ref = _configured_ref(tap_registry)
        self._tap_keys = tap_keys
        self._store = replay_store
        self._origins = frozenset(own)
        self._algorithms = allowed
        self._max_age = float(max_age)
        self._max_lifetime = max_lifetime
        self._label = None if label is None else check_label(label)
        self._require_nonce = bool(require_nonce)
        self._leeway = float(leeway)
        self._max_body = int(max_body)
        self._lenient = lenient
        self._lenient_keys = frozenset({"keyId"}) if LENIENT_KEYID_CASE in lenient else frozenset()
        self._clock = clock
        enabled: set[str] = set()
        if agents is not None:
            enabled.add(WEB_BOT_AUTH)
        if tap_keys is not None:
            enabled.update(TAP_TAGS)
        self._profiles = frozenset(enabled)

    def __repr__(self) -> str:
        return (
            f"WebSignatureVerifier(web_bot_auth={self._agents is not None}, tap={self._tap_ref is not None}, "
            f"origins={sorted(self._origins)!r}, algorithms={sorted(self._algorithms)!r})"
        )

    @property
    def profiles(self) -> frozenset[str]:
        """The profiles this verifier accepts (the others' tags are refused as ``wrong_tag``)."""
        return self._profiles

    # -- public API ----------------------------------------------------------------------------------
    def verify(
        self,
        method: str,
        url: str,
        headers: HeaderInput,
        body: bytes | Iterable[bytes],
        *,
        now: float | None = None,
    ) -> VerifiedAgentRequest:
        """Verify and claim one request (sync), or raise the typed error of the first failed check."""
        checked = self._check_headers(method, url, headers, self._clock() if now is None else now)
        directory = self._keys(checked).keys_for(checked.ref)
        alg, _key, thumbprint = self._check_signature(checked, directory)
        data = self._check_body(checked, read_body(body, checked.digests or {}, max_body=self._max_body))
        replay_key, until = self._replay(checked, thumbprint)
        if replay_key is not None:
            claim_or_raise(self._store, replay_key, until)
        return self._result(checked, alg, thumbprint, data)

    async def averify(
        self,
        method: str,
        url: str,
        headers: HeaderInput,
        body: bytes | AsyncIterable[bytes],
        *,
        now: float | None = None,
    ) -> VerifiedAgentRequest:
        pending = await self.aprepare(method, url, headers, body, now=now)
        return await pending.claim()

    def precheck(
        self, method: str, url: str, headers: HeaderInput, *, now: float | None = None
    ) -> WebPreChecked:
        """Steps 1-4 from the request line and headers alone (no I/O, no body)."""
        checked = self._check_headers(method, url, headers, self._clock() if now is None else now)
        return WebPreChecked(method, url, id(headers), checked)

    async def aprepare(
        self,
        method: str,
        url: str,
        headers: HeaderInput,
        body: bytes | AsyncIterable[bytes],
        *,
        now: float | None = None,
        prechecked: WebPreChecked | None = None,
    ) -> PendingAgentRequest:
        """Every check except the nonce claim (made by :meth:`PendingAgentRequest.claim`)."""
        current = self._clock() if now is None else now
        if (
            prechecked is not None
            and prechecked.method == method
            and prechecked.url == url
            and prechecked.headers_id == id(headers)
        ):
            checked = prechecked.checked
            self._check_time(checked, current)
        else:
            checked = self._check_headers(method, url, headers, current)
        directory = await self._keys(checked).akeys_for(checked.ref)
        alg, _key, thumbprint = self._check_signature(checked, directory)
        data = self._check_body(
            checked, await aread_body(body, checked.digests or {}, max_body=self._max_body)
        )
        replay_key, until = self._replay(checked, thumbprint)
        return PendingAgentRequest(
            self._result(checked, alg, thumbprint, data), replay_key, until, self._store
        )

    # -- steps ---------------------------------------------------------------------------------------
    def _select(self, view: MessageView) -> tuple[str, InnerList, str, bool, bytes]:
        """§3.2 steps 1-3: parse both fields, pick the open-web signature, its input and its value.

        Also the member's text as received and whether it is canonical (then the signature base takes
        it as the ``@signature-params`` value instead of serialising the parsed member again)."""
        input_value = view.field("signature-input")
        signature_value = view.field("signature")
        if input_value is None and signature_value is None:
            raise AuthenticationRequired("no HTTP message signature", code="no_signature")
        if input_value is None or signature_value is None:
            raise InvalidInput(
                "Signature and Signature-Input must both be present", code="incomplete_signature"
            )
        inputs, texts, canonical = parse_dictionary_members(
            input_value, field="signature-input", lenient_param_keys=self._lenient_keys
        )
        signatures = parse_dictionary(signature_value, field="signature")
        if self._label is not None:
            label = self._label
        else:
            tagged = [
                name
                for name, member in inputs.items()
                if isinstance(member, InnerList) and member.param("tag") in WEB_PROFILES
            ]
            if len(tagged) != 1:
                if not tagged:
                    raise InvalidInput("signature tag not accepted here", code="wrong_tag")
                raise InvalidInput("expected exactly one open-web signature", code="ambiguous_signature")
            label = tagged[0]
        params = inputs.get(label)
        value = signatures.get(label)
        if params is None or value is None:
            raise InvalidInput("signature label not found", code="signature_label_mismatch", label=label)
        if not isinstance(params, InnerList):
            raise InvalidInput("Signature-Input member must be an inner list", code="bad_signature_input")
        if not isinstance(value, Item) or not isinstance(value.value, bytes) or value.params:
            raise InvalidInput("Signature member must be a byte sequence", code="bad_signature_value")
        return label, params, texts[label], canonical, value.value

    def _parameters(self, inner: InnerList, profile_tap: bool) -> dict[str, str | int]:
        found: dict[str, str | int] = {}
        for name, value in inner.params:
            # One table lookup per parameter on the usual path: known, and an integer or a string.
            canonical, integer = name, _INTEGER_PARAMETER.get(name)
            if integer is None:
                if name != "keyId" or not profile_tap:
                    raise InvalidInput(
                        "unknown signature parameter", code="unknown_parameter", parameter=name[:32]
                    )
                canonical, integer = "keyid", False  # TAP's spelling, kept as text signed as received
            if canonical in found:
                raise InvalidInput("signature parameter repeated", code="bad_parameter", parameter=canonical)
            if integer:
                if type(value) is not int or value < 0:
                    raise InvalidInput(
                        "signature parameter must be a non-negative integer",
                        code="bad_parameter",
                        parameter=canonical,
                    )
                found[canonical] = value
            elif type(value) is str:
                found[canonical] = value
            else:
                raise InvalidInput(
                    "signature parameter must be a string", code="bad_parameter", parameter=canonical
                )
        return found

    def _check_headers(self, method: str, url: str, headers: HeaderInput, now: float) -> _Checked:
        view = MessageView.request(method, url, headers)
        label, inner, text, canonical, signature = self._select(view)
        tag = inner.param("tag")
        if not isinstance(tag, str) or tag not in self._profiles:
            raise InvalidInput("signature tag not accepted here", code="wrong_tag")
        tap = tag in TAP_TAGS
        # _parameters refuses ``keyId`` outside TAP; in TAP it marks text signed as received.
        params = self._parameters(inner, tap)
        raw = tap and any(name == "keyId" for name, _ in inner.params)
        required = (
            ("created", "expires", "keyid", "nonce")
            if (tap or self._require_nonce)
            else ("created", "expires", "keyid")
        )
        for name in required:
            if name not in params:
                raise InvalidInput(
                    "required signature parameter missing", code="missing_parameter", parameter=name
                )
        created, expires = int(params["created"]), int(params["expires"])
        keyid = str(params["keyid"])
        nonce = params.get("nonce")
        components, covered = _covered(inner.items)
        agent: SignatureAgent | None = None
        if tap:
            # TAP: @authority and @path (the merchant and the page or checkout step).
            for name in ("@authority", "@path"):
                if name not in covered:
                    raise InvalidInput(
                        "signature must cover " + name, code="missing_component", component=name
                    )
            check_web_keyid(keyid)
            assert self._tap_ref is not None  # tag accepted means TAP is configured
            ref = self._tap_ref
        else:
            # Web Bot Auth: @authority or @target-uri, and the Signature-Agent member it names.
            if "@authority" not in covered and "@target-uri" not in covered:
                raise InvalidInput(
                    "signature must cover @authority or @target-uri",
                    code="missing_component",
                    component="@authority",
                )
            check_thumbprint_keyid(keyid)
            agent_field = view.field("signature-agent")
            if agent_field is not None:
                members = (
                    None if agent_field.startswith('"') else view.dictionary("signature-agent", agent_field)
                )
                agent = parse_signature_agent(agent_field, inner, members=members)
                ref = agent.ref
            elif "signature-agent" in covered:
                raise InvalidInput(
                    "covered field is missing", code="missing_component", component="signature-agent"
                )
            else:
                # No URL: only a key this verifier already holds can verify it, and the identifier is
                # the thumbprint (draft "When No URL Is Available").
                ref = key_ref(keyid)
        if nonce is not None:
            check_web_nonce(str(nonce))
        lifetime_cap = min(self._max_lifetime, TAP_MAX_LIFETIME) if tap else self._max_lifetime
        if expires < created:
            raise InvalidInput("expires is before created", code="bad_time_window")
        if expires - created > lifetime_cap:
            raise InvalidInput("signature lifetime too long", code="lifetime_too_long", limit=lifetime_cap)
        self._check_time_values(created, expires, now)
        assert view.target is not None
        if view.target.origin not in self._origins:
            raise BindingError("request addressed to another origin", code="wrong_audience")
        alg: HttpSigAlgorithm | None = None
        alg_name = params.get("alg")
        if alg_name is not None:
            alg = ALGORITHMS.get(str(alg_name))
            if alg is None or alg.name not in self._algorithms:
                raise InvalidInput(
                    "signature algorithm not allowed", code="alg_not_allowed", alg=str(alg_name)[:32]
                )
        digests = None
        if "content-digest" in covered:
            digest_field = view.field("content-digest")
            if digest_field is None:
                raise InvalidInput(
                    "covered field is missing", code="missing_component", component="content-digest"
                )
            digests = parse_content_digest(digest_field)
        # The member text: what a TAP reference agent signed (``keyId``, no serialisation exists), or
        # the canonical serialisation itself.
        signed_text = text if raw or canonical else None
        base = signature_base(view, inner, component_parameters=True, params_text=signed_text)
        return _Checked(
            profile=tag,
            method=method,
            target_uri=view.target.target_uri,
            label=label,
            components=components,
            base=base,
            signature=signature,
            alg=alg,
            keyid=keyid,
            ref=ref,
            agent_key=agent.key if agent is not None else None,
            created=created,
            expires=expires,
            nonce=None if nonce is None else str(nonce),
            tag=tag,
            digests=digests,
        )

    def _check_time(self, checked: _Checked, now: float) -> None:
        self._check_time_values(checked.created, checked.expires, now)

    def _check_time_values(self, created: int, expires: int, now: float) -> None:
        if now < created - self._leeway:
            raise NotYetValidError("signature created in the future", code="created_in_future")
        if now >= expires + self._leeway:
            raise ExpiredError("signature expired", code="signature_expired")
        if now - created >= self._max_age + self._leeway:
            raise ExpiredError("signature too old", code="signature_too_old", limit=self._max_age)

    def _keys(self, checked: _Checked) -> AgentKeys:
        source = self._tap_keys if checked.tag in TAP_TAGS else self._agents
        assert source is not None  # the tag was accepted, so its profile is configured
        return source

    def _check_signature(
        self, checked: _Checked, directory: KeyDirectory
    ) -> tuple[HttpSigAlgorithm, PublicKey, str]:
        # 5. The key the keyid names in the directory of this very agent URL (never another's).
        found = directory.lookup(checked.keyid, by_kid=checked.tag in TAP_TAGS)
        if found is None:
            raise UntrustedKeyError(
                "signing key not in the agent's directory", code="unknown_key", kid=checked.keyid[:256]
            )
        key, thumbprint = found
        # 6. alg bound to the key type; absent, the key type's default, which must be allowed too.
        alg = checked.alg or ALGORITHMS[DEFAULT_FOR_KEY_TYPE[key.key_type]]
        if alg.name not in self._algorithms:
            raise InvalidInput("signature algorithm not allowed", code="alg_not_allowed", alg=alg.name)
        if alg.key_type is not key.key_type:
            raise SignatureError(
                "signature algorithm does not match the key type",
                code="alg_key_mismatch",
                alg=alg.name,
                key_type=key.key_type.value,
            )
        # 8. HTTP_VERIFY over the rebuilt base.
        key.verify(checked.signature, checked.base, alg.jws)
        return alg, key, thumbprint

    @staticmethod
    def _check_body(checked: _Checked, body: bytes) -> bytes:
        if checked.digests is None and body:
            raise InvalidInput("request body is not covered by the signature", code="body_not_signed")
        return body

    def _replay(self, checked: _Checked, thumbprint: str) -> tuple[str | None, float]:
        # Held until the instant the verifier stops accepting the signature (module docstring).
        until = min(float(checked.expires), checked.created + self._max_age) + self._leeway
        if checked.nonce is None:
            return None, until
        scope = f"{checked.ref.identifier}#{thumbprint}"
        if len(scope) > _MAX_REPLAY_ID:
            scope = "sha256:" + hashlib.sha256(scope.encode("utf-8")).hexdigest()
        nonce = checked.nonce
        if len(nonce) > 100:
            nonce = "sha256:" + hashlib.sha256(nonce.encode("ascii")).hexdigest()
        return f"{WEB_REPLAY_KEY_PREFIX}{scope}:{nonce}", until

    @staticmethod
    def _result(
        checked: _Checked, alg: HttpSigAlgorithm, thumbprint: str, body: bytes
    ) -> VerifiedAgentRequest:
        tap = checked.tag in TAP_TAGS
        agent = f"{checked.ref.identifier}#{checked.keyid}" if tap else checked.ref.agent
        return VerifiedAgentRequest(
            profile=checked.profile,
            agent=agent,
            identifier=checked.ref.identifier,
            agent_key=checked.agent_key,
            keyid=checked.keyid,
            thumbprint=thumbprint,
            label=checked.label,
            algorithm=alg.name,
            components=checked.components,
            created=checked.created,
            expires=checked.expires,
            nonce=checked.nonce,
            tag=checked.tag,
            method=checked.method,
            target_uri=checked.target_uri,
            body=body,
        )
