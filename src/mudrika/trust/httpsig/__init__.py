"""DID-signed agent requests: RFC 9421 HTTP Message Signatures with an RFC 9530 ``Content-Digest``.

Why: agents call each other without an identity provider, so the caller proves who it is by signing
the request with a key of its DID.  The scheme mudrika replaces signed neither the method, the path
nor the audience and kept nothing single-use, so a captured request could be replayed for minutes,
even to another path.  This profile closes each of those holes:

* the signature covers ``@method`` and the target (``@target-uri``, or ``@authority`` + ``@path`` +
  ``@query``), ``content-digest`` (over the exact body bytes, empty body included) and
  ``content-type`` when present;
* it carries ``created``, a short ``expires`` (60 s by default, 300 s at most), a 128-bit random
  ``nonce``, ``keyid`` (a DID URL such as ``did:key:z6Mk...#z6Mk...``), ``alg`` and, from mudrika's
  signer, ``tag`` (the verifier requires a ``tag`` only when configured with one, so a standard
  RFC 9421 signer that sends none is accepted);
* the verifier requires all of that, checks the request's origin against its own (the audience),
  takes the key from the DID's ``authentication`` relationship, binds ``alg`` to the key type, checks
  the streamed, size-capped body against the signed digest, and only then claims the nonce in a
  :class:`~mudrika.stores.replay.ReplayStore` shared by every replica, so a request is accepted once.

Use :class:`DidSignatureAuth` on an ``httpx`` client to sign, :class:`HttpSignatureVerifier` to verify
(the middleware scheme is :class:`mudrika.trust.middleware.DidSignatureAuthenticator`).  The spec
primitives (:func:`signature_base`, :class:`MessageView`, :func:`content_digest`) are exported for
tests and tools.  docs/replay.md ("DID-signed requests (RFC 9421)") documents the profile.

The open-web profiles, chosen by a signature's ``tag`` (docs/webbotauth.md): Web Bot Auth
(``web-bot-auth``: keys from the agent's HTTP Message Signatures directory) and Visa's Trusted Agent
Protocol (``agent-browser-auth``, ``agent-payer-auth``: keys from the agent registry's JWKS), verified
by :class:`WebSignatureVerifier` with keys from :class:`DirectoryCache` (fetched through the egress
policy, cached by HTTP caching rules) or :class:`StaticDirectories`; signed by
:class:`WebBotAuth` / :class:`TrustedAgentAuth` on an ``httpx`` client; an agent publishes its own
keys with :func:`directory_app`.
"""

from __future__ import annotations

from mudrika.trust.httpsig._algs import (
    ALGORITHMS,
    DEFAULT_FOR_KEY_TYPE,
    PRIVATE_ALGORITHMS,
    REGISTERED_ALGORITHMS,
    HttpSigAlgorithm,
)
from mudrika.trust.httpsig._components import MessageView, TargetURI, parse_target_uri, signature_base
from mudrika.trust.httpsig._digest import DEFAULT_MAX_BODY, content_digest, parse_content_digest
from mudrika.trust.httpsig._directory import (
    ANY_DIRECTORY,
    DEFAULT_MAX_CACHE_AGE,
    DEFAULT_MAX_DIRECTORY_BYTES,
    AgentKeys,
    DirectoryCache,
    KeyDirectory,
    StaticDirectories,
    cache_lifetime,
    directory_app,
    directory_document,
    sign_directory_response,
    verify_directory_response,
)
from mudrika.trust.httpsig._keys import (
    DIDKeyResolver,
    DocumentKeyLookup,
    KeyLookup,
    ResolverKeyLookup,
    StaticKeyLookup,
)
from mudrika.trust.httpsig._profile import (
    DEFAULT_EXPIRES_IN,
    DEFAULT_LABEL,
    DEFAULT_LEEWAY,
    DEFAULT_MAX_AGE,
    DEFAULT_MAX_LIFETIME,
    DEFAULT_TAG,
    TargetMode,
)
from mudrika.trust.httpsig._sign import DidSignatureAuth, HttpMessageSigner, SignedHeaders
from mudrika.trust.httpsig._verify import (
    REPLAY_KEY_PREFIX,
    HttpSignatureVerifier,
    PendingRequest,
    PreChecked,
    VerifiedRequest,
)
from mudrika.trust.httpsig._web import (
    DEFAULT_WEB_MAX_LIFETIME,
    LENIENCIES,
    LENIENT_KEYID_CASE,
    WEB_REPLAY_KEY_PREFIX,
    PendingAgentRequest,
    VerifiedAgentRequest,
    WebPreChecked,
    WebSignatureVerifier,
    web_profile_of,
)
from mudrika.trust.httpsig._webprofile import (
    DIRECTORY_MEDIA_TYPE,
    DIRECTORY_TAG,
    DIRECTORY_WELL_KNOWN,
    MUDRIKA_DID,
    PROFILES,
    TAP_MAX_LIFETIME,
    TAP_TAGS,
    WEB_BOT_AUTH,
    WEB_PROFILES,
    AgentRef,
    ProfileName,
    SignatureAgent,
    agent_ref,
    parse_signature_agent,
    profile_for_tag,
)
from mudrika.trust.httpsig._websign import (
    TrustedAgentAuth,
    TrustedAgentSigner,
    WebBotAuth,
    WebBotAuthSigner,
    WebSignedHeaders,
)

__all__ = [
    "ALGORITHMS",
    "ANY_DIRECTORY",
    "DEFAULT_EXPIRES_IN",
    "DEFAULT_FOR_KEY_TYPE",
    "DEFAULT_LABEL",
    "DEFAULT_LEEWAY",
    "DEFAULT_MAX_AGE",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_CACHE_AGE",
    "DEFAULT_MAX_DIRECTORY_BYTES",
    "DEFAULT_MAX_LIFETIME",
    "DEFAULT_TAG",
    "DEFAULT_WEB_MAX_LIFETIME",
    "DIRECTORY_MEDIA_TYPE",
    "DIRECTORY_TAG",
    "DIRECTORY_WELL_KNOWN",
    "LENIENCIES",
    "LENIENT_KEYID_CASE",
    "MUDRIKA_DID",
    "PRIVATE_ALGORITHMS",
    "PROFILES",
    "REGISTERED_ALGORITHMS",
    "REPLAY_KEY_PREFIX",
    "TAP_MAX_LIFETIME",
    "TAP_TAGS",
    "WEB_BOT_AUTH",
    "WEB_PROFILES",
    "WEB_REPLAY_KEY_PREFIX",
    "AgentKeys",
    "AgentRef",
    "DIDKeyResolver",
    "DidSignatureAuth",
    "DirectoryCache",
    "DocumentKeyLookup",
    "HttpMessageSigner",
    "HttpSigAlgorithm",
    "HttpSignatureVerifier",
    "KeyDirectory",
    "KeyLookup",
    "MessageView",
    "PendingAgentRequest",
    "PendingRequest",
    "PreChecked",
    "ProfileName",
    "ResolverKeyLookup",
    "SignatureAgent",
    "SignedHeaders",
    "StaticDirectories",
    "StaticKeyLookup",
    "TargetMode",
    "TargetURI",
    "TrustedAgentAuth",
    "TrustedAgentSigner",
    "VerifiedAgentRequest",
    "VerifiedRequest",
    "WebBotAuth",
    "WebBotAuthSigner",
    "WebPreChecked",
    "WebSignatureVerifier",
    "WebSignedHeaders",
    "agent_ref",
    "cache_lifetime",
    "content_digest",
    "directory_app",
    "directory_document",
    "parse_content_digest",
    "parse_signature_agent",
    "parse_target_uri",
    "profile_for_tag",
    "sign_directory_response",
    "signature_base",
    "verify_directory_response",
    "web_profile_of",
]
