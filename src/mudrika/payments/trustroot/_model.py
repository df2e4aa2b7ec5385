"""The analyst's trust root (``mudrika.trust-root/v1``): which keys a chain verdict may rest on.

Why a separate, owned file: an evidence bundle is written by a party to the dispute, so every key
and expectation it carries is *evidence*.  What is *trusted* — the credential issuers and their
keys, the merchants whose keys were pinned, the algorithms, credential types, leeway and maximum
ages — is decided by whoever verifies, once, in this file, and handed to the chain verifier like
sigstore-python hands a ``TrustedRoot`` to its ``Verifier``.  The format is documented in
``docs/payments.md`` ("Trust root") and described by ``trust-root.schema.json`` next to this module
(a test holds that file equal to :meth:`TrustRoot.model_json_schema`).

Loading is strict: unknown members are refused, every violation is listed (``errors``), and every
key is loaded once when the file is read, so a broken snapshot fails before any verification.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from cryptography import x509
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from mudrika.crypto._b64 import b64url_encode
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import ALGORITHMS_BY_KEY_TYPE, PublicKey
from mudrika.errors import InvalidInput, MudrikaError, UntrustedKeyError
from mudrika.identity.did import DIDURL, parse_did, parse_did_url
from mudrika.identity.resolver import DIDResolver
from mudrika.net.limits import read_capped
from mudrika.payments._load import validate_document

TRUST_ROOT_FORMAT: Final = "mudrika.trust-root/v1"
MAX_TRUST_ROOT_BYTES: Final = 4 * 1024 * 1024
_MAX_ENTRIES: Final = 256
_MAX_KEYS: Final = 64
_MAX_TEXT: Final = 2048
_ALL_ALGORITHMS: Final = frozenset().union(*ALGORITHMS_BY_KEY_TYPE.values())
_SELF_CERTIFYING: Final = frozenset({"key", "jwk"})
_log = logging.getLogger("mudrika.payments.trustroot")


_Algorithm = Literal[
    "ES256", "ES256K", "EdDSA", "Ed25519", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"
]


def _profile_algorithms() -> list[_Algorithm]:
    """The AP2 v0.1 profile's set: ES256 by default, EdDSA and ES256K allowed."""
    return ["ES256", "ES256K", "EdDSA", "Ed25519"]


class _Owned(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, hide_input_in_errors=True)


class KeySet(_Owned):
    """A JWK Set (RFC 7517 §5) as pinned by the analyst: every key needs a unique ``kid``."""

    keys: list[dict[str, Any]] = Field(min_length=1, max_length=_MAX_KEYS)


class TrustedIssuer(_Owned):
    """A credential issuer whose SD-JWT VCs are accepted, with the keys the analyst pinned for it.

    Exactly one of ``jwks`` or ``did_document`` — or neither when the issuer identifier is a
    self-certifying ``did:key``/``did:jwk`` (its key *is* the identifier).
    """

    jwks: KeySet | None = None
    did_document: dict[str, Any] | None = None
    vct: list[str] | None = Field(default=None, min_length=1, max_length=_MAX_ENTRIES)
    """Credential types accepted from this issuer; ``None``: the root's ``accepted_vct``."""
    source: str | None = Field(default=None, max_length=_MAX_TEXT)
    """Where and when the analyst obtained these keys (free text, shown in reports)."""
    x509_roots: list[str] | None = Field(default=None, min_length=1, max_length=_MAX_KEYS)
    """AP2 v0.2 only: base64 DER CA certificates to which an ``x5c`` chain in a root mandate's header
    must path-validate (RFC 5280) for its key to count as this issuer's; absent: ``x5c`` is refused."""


class PinnedMerchant(_Owned):
    """A merchant (by DID) whose cart-signing keys the analyst pinned (a snapshot taken earlier)."""

    jwks: KeySet | None = None
    did_document: dict[str, Any] | None = None
    source: str | None = Field(default=None, max_length=_MAX_TEXT)


class MaxAges(_Owned):
    """Oldest acceptable ``iat`` (seconds before the evaluation time) per signed object."""

    key_binding: float = Field(default=300.0, gt=0.0, le=86400.0)
    intent: float | None = Field(default=None, gt=0.0, le=366 * 86400.0)
    """``None``: an intent is valid until its ``intent_expiry`` whatever its age."""


class VerifierIdentity(_Owned):
    """Who the analyst verifies *as*: the audiences the merchant's and the user's JWTs must name."""

    merchant_audience: str | None = Field(default=None, min_length=1, max_length=_MAX_TEXT)
    kb_audience: str | None = Field(default=None, min_length=1, max_length=_MAX_TEXT)


@dataclass(frozen=True, slots=True)
class AnchorKey:
    """A key the trust root pins: the key, its absolute kid, its owner and any ``alg`` narrowing."""

    key: PublicKey
    kid: str
    owner: str
    algorithms: frozenset[str] | None = None
    source: str | None = None

    def trusted(self, allowed: frozenset[str], *, owner: str, whose: str) -> TrustedKey:
        """This key as a verifier trusts it: the algorithms ``allowed`` (the trust root's and the
        profile's) narrowed by the pin's own ``alg``.  ``UntrustedKeyError`` ``alg_not_allowed`` when
        none of them fits the key; ``whose`` names the key in that message."""
        if self.algorithms is not None:
            allowed &= self.algorithms
        if not allowed & self.key.algorithms:
            raise UntrustedKeyError(f"no allowed algorithm fits {whose}", code="alg_not_allowed")
        return TrustedKey(key=self.key, algorithms=allowed, kid=None, owner=owner)


class TrustRoot(_Owned):
    """A parsed ``mudrika.trust-root/v1`` file; hand it to the chain verifier as ``trust_root=``."""

    format: Literal["mudrika.trust-root/v1"]
    description: str | None = Field(default=None, max_length=_MAX_TEXT)
    issuers: dict[str, TrustedIssuer] = Field(default_factory=dict, max_length=_MAX_ENTRIES)
    merchants: dict[str, PinnedMerchant] = Field(default_factory=dict, max_length=_MAX_ENTRIES)
    accepted_vct: list[str] = Field(default_factory=list, max_length=_MAX_ENTRIES)
    algorithms: list[_Algorithm] = Field(default_factory=_profile_algorithms, min_length=1, max_length=16)
    leeway_seconds: float = Field(default=0.0, ge=0.0, le=30.0)
    max_age_seconds: MaxAges = Field(default_factory=MaxAges)
    verifier: VerifierIdentity = Field(default_factory=VerifierIdentity)
    accept_legacy_unbound_intent: bool = False
    """Accept v0.1 chains whose key-binding JWT does not cover H(IntentMandate) (reported in words)."""

    _issuer_keys: dict[str, dict[str, AnchorKey]] = PrivateAttr(default_factory=dict)
    _merchant_keys: dict[str, dict[str, AnchorKey]] = PrivateAttr(default_factory=dict)
    _resolver: DIDResolver | None = PrivateAttr(default=None)
    _fingerprint: str = PrivateAttr(default="")

    def model_post_init(self, context: Any, /) -> None:
        """Load every pinned key once; collect every problem instead of stopping at the first."""
        problems: list[dict[str, str]] = []
        documents: dict[str, Any] = {}
        for section, entries, table in (
            ("issuers", self.issuers, self._issuer_keys),
            ("merchants", self.merchants, self._merchant_keys),
        ):
            for owner, entry in entries.items():
                where = f"{section}.{owner[:200]}"
                try:
                    table[owner] = _entry_keys(owner, entry, section=section)
                except MudrikaError as exc:
                    problems.append({"loc": where, "msg": exc.message})
                    continue
                if entry.did_document is not None:
                    documents[owner] = entry.did_document
        if not self.accepted_vct and any(entry.vct is None for entry in self.issuers.values()):
            problems.append(
                {"loc": "accepted_vct", "msg": "an issuer without its own vct list needs accepted_vct"}
            )
        if problems:
            raise InvalidInput(
                f"malformed trust root: {problems[0]['loc']}: {problems[0]['msg']}",
                code="bad_trust_root",
                errors=problems,
            )
        self._resolver = DIDResolver.offline(documents)
        # Computed once: every report quotes it, and canonicalising the root costs more than a check.
        document = self.model_dump(mode="json", exclude_none=True)
        self._fingerprint = "sha256:" + b64url_encode(hashlib.sha256(canonicalize(document)).digest())

    # -- what the verifier asks ----------------------------------------------------------------------
    @property
    def algorithm_set(self) -> frozenset[str]:
        return frozenset(self.algorithms)

    @property
    def fingerprint(self) -> str:
        """``sha256:`` + base64url(SHA-256(RFC 8785 of this trust root)): which root a report used."""
        return self._fingerprint

    def trusts_issuer(self, iss: str) -> bool:
        return iss in self.issuers

    def pins_merchant(self, did: str) -> bool:
        return did in self.merchants

    def accepted_vct_of(self, iss: str) -> frozenset[str]:
        """The credential types accepted from ``iss`` (its own list, else the root's)."""
        entry = self.issuers.get(iss)
        if entry is None:
            return frozenset()
        return frozenset(entry.vct if entry.vct is not None else self.accepted_vct)

    def issuer_key(self, iss: str, kid: str) -> AnchorKey:
        """The pinned key ``kid`` of issuer ``iss``, or ``UntrustedKeyError``."""
        return self._key(self._issuer_keys, iss, kid, section="issuer")

    def merchant_key(self, did: str, kid: str) -> AnchorKey:
        """The pinned key ``kid`` of merchant ``did``, or ``UntrustedKeyError``."""
        return self._key(self._merchant_keys, did, kid, section="merchant")

    def _key(
        self, table: dict[str, dict[str, AnchorKey]], owner: str, kid: str, *, section: str
    ) -> AnchorKey:
        keys = table.get(owner)
        if keys is None:
            raise UntrustedKeyError(
                f"the trust root pins no {section} with this identifier",
                code="not_in_trust_root",
                owner=owner[:200],
            )
        absolute = _absolute_kid(owner, kid)
        found = keys.get(absolute)
        if found is not None:
            return found
        if not keys and owner.startswith("did:") and self._resolver is not None:
            # A pinned DID-document snapshot, or a self-certifying did:key / did:jwk pinned by its
            # identifier: the offline resolver answers (assertionMethod only) and never dials out.
            key = self._resolver.resolve_key(absolute, "assertionMethod")
            return AnchorKey(key=key, kid=absolute, owner=owner, source=self._source(owner, section))
        raise UntrustedKeyError(
            f"the trust root pins no key with this kid for this {section}",
            code="key_not_in_trust_root",
            kid=kid[:200],
            owner=owner[:200],
        )

    def _source(self, owner: str, section: str) -> str | None:
        entry = self.issuers.get(owner) if section == "issuer" else self.merchants.get(owner)
        return entry.source if entry is not None else None

    def pinned_keys(self) -> list[tuple[str, str, str, str]]:
        """Every key this root pins, as ``(section, owner, kid, RFC 7638 thumbprint)`` rows.

        A DID-document entry contributes each method it authorises for ``assertionMethod``; a
        self-certifying DID pinned by identifier is shown as ``(computed from the DID)``.
        """
        rows: list[tuple[str, str, str, str]] = []
        for section, entries, table in (
            ("issuer", self.issuers, self._issuer_keys),
            ("merchant", self.merchants, self._merchant_keys),
        ):
            for owner, entry in entries.items():
                if table.get(owner):
                    rows.extend(
                        (section, owner, kid, key.key.thumbprint()) for kid, key in table[owner].items()
                    )
                elif entry.did_document is not None:
                    for kid in _assertion_kids(owner, entry.did_document):
                        key = self._key(table, owner, kid, section=section)
                        rows.append((section, owner, key.kid, key.key.thumbprint()))
                else:
                    rows.append((section, owner, "(computed from the DID)", "(self-certifying)"))
        return rows

    # -- writing -------------------------------------------------------------------------------------
    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), indent=indent, ensure_ascii=False)


def _absolute_kid(owner: str, kid: str) -> str:
    """A DID-URL kid (absolute, or ``#frag`` relative to a DID owner) in absolute form."""
    if owner.startswith("did:") and (kid.startswith("did:") or kid[:1] in "#?/"):
        return str(DIDURL.absolute(kid, parse_did_url(owner).did))
    return kid


def _assertion_kids(owner: str, document: Mapping[str, Any]) -> list[str]:
    """The absolute ids of the methods a DID document authorises for ``assertionMethod``."""
    kids: list[str] = []
    for item in document.get("assertionMethod") or ():
        ref = item.get("id") if isinstance(item, Mapping) else item
        if isinstance(ref, str):
            kids.append(_absolute_kid(owner, ref))
    return kids


def _entry_keys(owner: str, entry: TrustedIssuer | PinnedMerchant, *, section: str) -> dict[str, AnchorKey]:
    """Load the keys of one entry: a JWK Set, a DID document (resolved lazily), or a self-certifying DID."""
    is_did = owner.startswith("did:")
    if section == "merchants" and not is_did:
        raise InvalidInput("a merchant is identified by its DID", code="bad_trust_root")
    if is_did:
        parse_did(owner)
    elif not owner.startswith("https://"):
        raise InvalidInput("an issuer is a DID or an https identifier", code="bad_trust_root")
    if entry.jwks is not None and entry.did_document is not None:
        raise InvalidInput("give jwks or did_document, not both", code="bad_trust_root")
    if entry.did_document is not None:
        if not is_did:
            raise InvalidInput("a DID document needs a DID identifier", code="bad_trust_root")
        if entry.did_document.get("id") != owner:
            raise InvalidInput("the DID document's id is not this identifier", code="bad_trust_root")
        DIDResolver.offline({owner: entry.did_document}).resolve(owner)
        return {}
    if entry.jwks is None:
        if is_did and parse_did(owner).method in _SELF_CERTIFYING:
            return {}
        if isinstance(entry, TrustedIssuer) and entry.x509_roots:
            _check_x509_roots(entry.x509_roots)
            return {}  # keys arrive in x5c headers and are admitted by path validation (payments.v02)
        raise InvalidInput(
            "give jwks or did_document (or a did:key / did:jwk identifier)", code="bad_trust_root"
        )
    keys: dict[str, AnchorKey] = {}
    for jwk in entry.jwks.keys:
        kid = jwk.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidInput("every pinned key needs a string 'kid'", code="bad_trust_root")
        absolute = _absolute_kid(owner, kid)
        if is_did and absolute.split("#")[0] != owner:
            raise InvalidInput("a pinned key's kid must be a DID URL of its owner", code="bad_trust_root")
        if absolute in keys:
            raise InvalidInput("duplicate kid", code="bad_trust_root", kid=kid[:200])
        trusted = TrustedKey.from_jwk(jwk, algorithms=_ALL_ALGORITHMS)
        keys[absolute] = AnchorKey(
            key=trusted.key,
            kid=absolute,
            owner=owner,
            algorithms=trusted.algorithms if "alg" in jwk else None,
            source=entry.source,
        )
    return keys


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``mudrika.trust-root/v1``, generated from the models.

    ``trust-root.schema.json`` is this document written out; a test holds the two equal.
    """
    schema = TrustRoot.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:mudrika:trust-root:v1",
        **schema,
    }


def _check_x509_roots(roots: list[str]) -> None:
    """Every ``x509_roots`` entry is a base64 DER certificate (so a broken root fails at load)."""
    for text in roots:
        try:
            x509.load_der_x509_certificate(base64.b64decode(text, validate=True))
        except (binascii.Error, ValueError):
            raise InvalidInput("x509_roots holds base64 DER certificates", code="bad_trust_root") from None


def parse_trust_root(
    raw: bytes | str | Mapping[str, Any], *, max_bytes: int = MAX_TRUST_ROOT_BYTES
) -> TrustRoot:
    """Strictly parse a trust root; every problem is :class:`~mudrika.errors.InvalidInput`.

    Codes: those of :func:`~mudrika.crypto.jcs.loads_strict`, ``not_a_trust_root`` (not an object
    or another ``format``) and ``bad_trust_root`` (``errors`` lists the location and message of
    every violation, never the values).
    """
    value = raw if isinstance(raw, Mapping) else loads_strict(raw, max_bytes=max_bytes, max_depth=64)
    if not isinstance(value, Mapping) or value.get("format") != TRUST_ROOT_FORMAT:
        raise InvalidInput(f"not a {TRUST_ROOT_FORMAT} trust root", code="not_a_trust_root")
    return validate_document(TrustRoot, dict(value), document="trust root", code="bad_trust_root")


def load_trust_root(path: str | Path, *, max_bytes: int = MAX_TRUST_ROOT_BYTES) -> TrustRoot:
    """Read and parse a trust-root file (at most ``max_bytes`` are read)."""
    data = read_capped(path, max_bytes=max_bytes, name="trust root")
    return parse_trust_root(data, max_bytes=max_bytes)


class UnsafeNoTrustRoot:
    """No trust root: take the evidence's word for which credential issuers are trusted.

    Exists so that a chain can still be checked, every check reported, when the analyst has no trust
    root yet (``mudrika dispute verify`` without ``--trust-root``).  The verifier then takes every
    key from the evidence and the verdict is **UNANCHORED**, never OK: whoever wrote the evidence
    chose these issuers and keys.  Constructing one logs a warning.
    """

    __slots__ = ("asserted_issuers",)

    def __init__(self, asserted_issuers: Collection[str]) -> None:
        if isinstance(asserted_issuers, str):
            raise InvalidInput("asserted_issuers must be a collection of issuers", code="bad_policy")
        self.asserted_issuers = frozenset(asserted_issuers)
        _log.warning("verifying without a trust root: the verdict can only be UNANCHORED")

    def __repr__(self) -> str:
        return f"UnsafeNoTrustRoot(asserted_issuers={sorted(self.asserted_issuers)!r})"
