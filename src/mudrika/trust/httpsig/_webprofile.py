"""The open-web profiles of RFC 9421: Web Bot Auth and Visa's Trusted Agent Protocol (TAP).

Why one module: signer, verifier, directory fetcher and CLI must agree on each profile's tag,
required components and parameters, its keyid and nonce shapes and its lifetime cap, exactly as
``_profile`` does for the DID profile.  The profile of a signature is chosen by its ``tag``:

``web-bot-auth`` (draft-meunier-webbotauth-httpsig-protocol, editor's copy after -02, the document the
IETF webbotauth WG adopted as draft-ietf-webbotauth-httpsig-protocol)
    covers ``@authority`` or ``@target-uri`` and the ``Signature-Agent`` member of its own label
    (§"Generating HTTP Message Signature", §"Signature-Agent"); ``created``, ``expires``, ``keyid``
    (the base64url RFC 7638 SHA-256 JWK thumbprint), ``tag``; the key comes from the directory the
    ``Signature-Agent`` member names, looked up on the (URL, key) pair (§"Validating Message
    Signature").
``agent-browser-auth`` / ``agent-payer-auth`` (Visa Trusted Agent Protocol, merchant specification and
the reference agent at github.com/visa/trusted-agent-protocol@16d59bd)
    covers ``@authority`` and ``@path``; ``created``, ``expires`` (at most 8 minutes after ``created``),
    ``nonce``, ``keyid`` (the key's id in the agent key registry's JWKS), ``tag``.

``mudrika-did`` is the DID profile of :mod:`._profile` (any other tag, or none).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal
from urllib.parse import urlsplit

from mudrika.errors import InvalidInput
from mudrika.trust.httpsig._sf import InnerList, Item, Token, parse_dictionary, parse_item

__all__ = [
    "AGENT_TYPES",
    "DIRECTORY_MEDIA_TYPE",
    "DIRECTORY_TAG",
    "DIRECTORY_WELL_KNOWN",
    "MUDRIKA_DID",
    "PROFILES",
    "TAP_MAX_LIFETIME",
    "TAP_TAGS",
    "THUMBPRINT_URN_PREFIX",
    "WEB_BOT_AUTH",
    "WEB_PROFILES",
    "AgentRef",
    "AgentType",
    "ProfileName",
    "SignatureAgent",
    "agent_ref",
    "check_thumbprint_keyid",
    "check_web_keyid",
    "check_web_nonce",
    "key_ref",
    "parse_signature_agent",
    "profile_for_tag",
]

ProfileName = Literal["mudrika-did", "web-bot-auth", "agent-browser-auth", "agent-payer-auth"]
MUDRIKA_DID: Final = "mudrika-did"
WEB_BOT_AUTH: Final = "web-bot-auth"
TAP_BROWSER: Final = "agent-browser-auth"
TAP_PAYER: Final = "agent-payer-auth"
TAP_TAGS: Final = frozenset({TAP_BROWSER, TAP_PAYER})
WEB_PROFILES: Final = frozenset({WEB_BOT_AUTH, *TAP_TAGS})
PROFILES: Final = frozenset({MUDRIKA_DID, *WEB_PROFILES})

TAP_MAX_LIFETIME: Final = 480
"""Visa TAP: a signature is valid for at most 8 minutes (``expires - created``)."""

DIRECTORY_WELL_KNOWN: Final = "/.well-known/http-message-signatures-directory"
DIRECTORY_MEDIA_TYPE: Final = "application/http-message-signatures-directory+json"
DIRECTORY_TAG: Final = "http-message-signatures-directory"
THUMBPRINT_URN_PREFIX: Final = "urn:ietf:params:oauth:jwk-thumbprint:sha-256:"
"""RFC 9278: how a principal that is only a key is named (no URL vouches for it)."""

AgentType = Literal["directory", "jwks_uri", "cimd", "key"]
AGENT_TYPES: Final = frozenset({"directory", "jwks_uri", "cimd"})

_THUMBPRINT_RE: Final = re.compile(r"[A-Za-z0-9_-]{43}")
_OPAQUE_KEYID_RE: Final = re.compile(r"[\x21-\x7e]{1,256}")
# 16..192 random bytes in base64 or base64url, padded or not: the draft vectors and Cloudflare's
# signer send 64 bytes of padded standard base64 (88 characters); mudrika's DID profile sends 22.
_WEB_NONCE_RE: Final = re.compile(r"[A-Za-z0-9+/_-]{22,256}={0,2}")
_MAX_AGENT_URL: Final = 2048
_DEFAULT_TYPE: Final = Token("directory")


def profile_for_tag(tag: str | None) -> ProfileName:
    """The profile a signature's ``tag`` selects; anything else is the DID profile."""
    if tag == WEB_BOT_AUTH:
        return "web-bot-auth"
    if tag == TAP_BROWSER:
        return "agent-browser-auth"
    if tag == TAP_PAYER:
        return "agent-payer-auth"
    return "mudrika-did"


def check_thumbprint_keyid(keyid: str) -> str:
    """Web Bot Auth ``keyid``: a base64url SHA-256 JWK thumbprint (RFC 7638 §3.2; RFC 8037 A.3)."""
    if _THUMBPRINT_RE.fullmatch(keyid) is None:
        raise InvalidInput("keyid must be a base64url JWK SHA-256 thumbprint", code="bad_keyid")
    return keyid


def check_web_keyid(keyid: str) -> str:
    """TAP ``keyid``: the registry's key id, 1..256 visible ASCII characters."""
    if _OPAQUE_KEYID_RE.fullmatch(keyid) is None:
        raise InvalidInput("keyid must be 1..256 visible ASCII characters", code="bad_keyid")
    return keyid


def check_web_nonce(nonce: str) -> str:
    if _WEB_NONCE_RE.fullmatch(nonce) is None:
        raise InvalidInput("nonce must be 22..256 base64 or base64url characters", code="bad_nonce")
    return nonce


@dataclass(frozen=True, slots=True)
class AgentRef:
    """Where a verifier resolves an agent's keys, and the identifier it attributes requests to.

    ``url`` is what is fetched: the well-known directory URI for ``directory``, the member value for
    ``jwks_uri`` and ``cimd``.  ``identifier`` is the draft's identifier (§"Key Distribution and
    Discovery"): the URL resolved, query and fragment dropped, scheme and host lower-cased, default
    port elided.  ``origin`` is its origin, the name policy files use for ``directory`` agents.
    """

    type: AgentType
    url: str
    identifier: str
    origin: str

    @property
    def agent(self) -> str:
        """What the policy matches: the directory origin, or the JWKS/CIMD identifier."""
        return self.origin if self.type == "directory" else self.identifier


def key_ref(thumbprint: str) -> AgentRef:
    """The reference of a signature without ``Signature-Agent`` (draft "When No URL Is Available"): the
    identifier is the key thumbprint (RFC 9278 URN), and only a verifier already holding the key
    (:class:`~mudrika.trust.httpsig.StaticDirectories` ``pinned=``) can verify it."""
    urn = THUMBPRINT_URN_PREFIX + check_thumbprint_keyid(thumbprint)
    return AgentRef("key", urn, urn, urn)


@dataclass(frozen=True, slots=True)
class SignatureAgent:
    """The ``Signature-Agent`` member a signature covers (``key`` is None for the legacy string form)."""

    key: str | None
    ref: AgentRef


def agent_ref(url: str, agent_type: str = "directory") -> AgentRef:
    """Validate a ``Signature-Agent`` URL of ``agent_type`` and say where its keys are resolved.

    https only; no user info; for ``directory`` an origin (an empty path or ``/``, no query or
    fragment).  Raises :class:`InvalidInput` (``bad_signature_agent``).
    """
    if agent_type not in AGENT_TYPES:
        raise InvalidInput(
            "unsupported Signature-Agent type", code="unsupported_agent_type", type=agent_type[:32]
        )
    if not isinstance(url, str) or len(url) > _MAX_AGENT_URL or not url.isascii():
        raise InvalidInput("Signature-Agent URL missing or too long", code="bad_signature_agent")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InvalidInput("Signature-Agent is not a URL", code="bad_signature_agent") from None
    if parts.scheme.lower() != "https" or not parts.hostname or "@" in parts.netloc:
        raise InvalidInput("Signature-Agent must be an https URL", code="bad_signature_agent")
    if any(char in url for char in " \t\r\n\\"):
        raise InvalidInput("Signature-Agent URL has forbidden characters", code="bad_signature_agent")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    origin = "https://" + (host if port in (None, 443) else f"{host}:{port}")
    if agent_type == "directory":
        if parts.path not in ("", "/") or parts.query or parts.fragment or url.endswith(("?", "#")):
            raise InvalidInput("a directory Signature-Agent must be an origin", code="bad_signature_agent")
        fetched = origin + DIRECTORY_WELL_KNOWN
        return AgentRef("directory", fetched, fetched, origin)
    if parts.fragment:
        raise InvalidInput("Signature-Agent URL has a fragment", code="bad_signature_agent")
    identifier = origin + (parts.path or "/")
    fetched = identifier + (f"?{parts.query}" if parts.query else "")
    return AgentRef("jwks_uri" if agent_type == "jwks_uri" else "cimd", fetched, identifier, origin)


@lru_cache(maxsize=256)
def _cached_agent_ref(url: str, agent_type: str) -> AgentRef:
    """:func:`agent_ref` for the verifier's hot path: one agent sends the same URL on every request,
    and the reference is a pure function of it.  Only successes are cached (a refusal raises), and
    both arguments are ``str`` here (checked by the caller), so the cache key is exactly the input."""
    return agent_ref(url, agent_type)


# One agent sends the same ``Signature-Agent`` field on every request: the member a covered key names
# is a pure function of the field text and that key, and only a member that passed every check is
# kept.  Emptied when full (an attacker who fills it costs only the reads it would have saved).
_AGENTS_READ_SIZE: Final = 1024
_agents_read: dict[tuple[str, str], SignatureAgent] = {}


def parse_signature_agent(
    value: str, covered: InnerList, *, members: Mapping[str, Item | InnerList] | None = None
) -> SignatureAgent:
    """The ``Signature-Agent`` member the signature ``covered`` signs (§"Signature-Agent").

    The dictionary form: the signature must cover exactly one ``"signature-agent";key="<k>"``, and the
    member ``<k>`` is used (never one the signature does not cover).  The legacy sf-string form (a
    value starting with ``"``): the signature must cover the bare ``"signature-agent"``; it is a
    ``directory`` reference.  ``type`` (a Token) defaults to ``directory``; another type is refused.
    """
    covering = [item for item in covered.items if item.value == "signature-agent"]
    if len(covering) != 1:
        raise InvalidInput(
            "signature must cover exactly one Signature-Agent member",
            code="missing_component",
            component="signature-agent",
        )
    params = dict(covering[0].params)
    if value.lstrip(" ").startswith('"'):
        # Legacy: an sf-string, covered without parameters.
        if params:
            raise InvalidInput("legacy Signature-Agent is covered whole", code="bad_signature_agent")
        item = parse_item(value, field="signature-agent")
        if type(item.value) is not str or item.params:
            raise InvalidInput("Signature-Agent must be a string", code="bad_signature_agent")
        return SignatureAgent(None, _cached_agent_ref(item.value, "directory"))
    key = params.get("key")
    if set(params) != {"key"} or type(key) is not str:
        raise InvalidInput(
            'a dictionary Signature-Agent is covered as "signature-agent";key="<member>"',
            code="bad_signature_agent",
        )
    known = _agents_read.get((value, key))
    if known is not None:
        return known
    if members is None:
        members = parse_dictionary(value, field="signature-agent")
    member = members.get(key)
    if not isinstance(member, Item) or type(member.value) is not str:
        raise InvalidInput(
            "covered Signature-Agent member missing or not a string", code="bad_signature_agent"
        )
    agent_type = _member_type(member.params)
    agent = SignatureAgent(key, _cached_agent_ref(member.value, agent_type))
    if len(_agents_read) >= _AGENTS_READ_SIZE:
        _agents_read.clear()
    _agents_read[(value, key)] = agent
    return agent


def _member_type(params: tuple[tuple[str, object], ...]) -> str:
    if not params:
        return "directory"
    found: Mapping[str, object] = dict(params)
    value = found.get("type", _DEFAULT_TYPE)
    if not isinstance(value, Token):
        raise InvalidInput("Signature-Agent type must be a token", code="bad_signature_agent")
    return str(value)
