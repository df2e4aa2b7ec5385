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

__all__ = [
    "ALGORITHMS",
    "DEFAULT_EXPIRES_IN",
    "DEFAULT_FOR_KEY_TYPE",
    "DEFAULT_LABEL",
    "DEFAULT_LEEWAY",
    "DEFAULT_MAX_AGE",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_LIFETIME",
    "DEFAULT_TAG",
    "PRIVATE_ALGORITHMS",
    "REGISTERED_ALGORITHMS",
    "REPLAY_KEY_PREFIX",
    "DIDKeyResolver",
    "DidSignatureAuth",
    "DocumentKeyLookup",
    "HttpMessageSigner",
    "HttpSigAlgorithm",
    "HttpSignatureVerifier",
    "KeyLookup",
    "MessageView",
    "PendingRequest",
    "PreChecked",
    "ResolverKeyLookup",
    "SignedHeaders",
    "StaticKeyLookup",
    "TargetMode",
    "TargetURI",
    "VerifiedRequest",
    "content_digest",
    "parse_content_digest",
    "parse_target_uri",
    "signature_base",
]
