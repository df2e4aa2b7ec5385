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
from pathlib import Path
from typing import Any, Final, Literal

from cryptography import x509
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import ALL_ALGORITHMS
from mudrika.errors import InvalidInput, MudrikaError, UntrustedKeyError
from mudrika.identity.anchoring import AnchoredKey, OwnerPins, PinnedKey, anchor_key, kid_of_owner
from mudrika.identity.did import DIDURL, parse_did, parse_did_url
from mudrika.identity.document import SigningPurpose
from mudrika.identity.resolver import DIDResolver
from mudrika.net.limits import read_capped
from mudrika.payments._load import validate_document

TRUST_ROOT_FORMAT: Final = "mudrika.trust-root/v1"
MAX_TRUST_ROOT_BYTES: Final = 4 * 1024 * 1024
_MAX_ENTRIES: Final = 256
_MAX_KEYS: Final = 64
_MAX_TEXT: Final = 2048
_SELF_CERTIFYING: Final = frozenset({"key", "jwk"})
_log = logging.getLogger("mudrika.payments.trustroot")

#: The two kinds of party a trust root pins.
Section = Literal["issuer", "merchant"]


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

    _pins: dict[tuple[Section, str], OwnerPins] = PrivateAttr(default_factory=dict)
    _fingerprint: str = PrivateAttr(default="")

    def model_post_init(self, context: Any, /) -> None:
        """Load every pinned key once; collect every problem instead of stopping at the first."""
        problems: list[dict[str, str]] = []
        for section, entries in self._sections():
            for owner, entry in entries.items():
                try:
                    self._pins[(section, owner)] = _entry_pins(owner, entry, section=section)
                except MudrikaError as exc:
                    problems.append({"loc": f"{section}s.{owner[:200]}", "msg": exc.message})
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

    def anchor(
        self,
        section: Section,
        owner: str,
        kid: object,
        *,
        algorithms: frozenset[str],
        relationship: SigningPurpose = "assertionMethod",
    ) -> AnchoredKey:
        """The key ``kid`` of the pinned ``section`` party ``owner``, by the one anchoring rule
        (:func:`mudrika.identity.anchoring.anchor_key`), allowed ``algorithms`` narrowed by the pin.

        ``UntrustedKeyError`` ``not_in_trust_root`` when the root pins no such party, or the rule's
        own codes (``kid_not_owned``, ``kid_not_did_url``, ``not_authorised_for_purpose`` …).
        """
        pins = self._pins.get((section, owner))
        if pins is None:
            raise UntrustedKeyError(
                f"the trust root pins no {section} with this identifier",
                code="not_in_trust_root",
                owner=owner[:200],
            )
        return anchor_key(pins, kid, relationship=relationship, algorithms=algorithms)

    def _sections(self) -> tuple[tuple[Section, Mapping[str, TrustedIssuer | PinnedMerchant]], ...]:
        return (("issuer", self.issuers), ("merchant", self.merchants))

    def pinned_keys(self) -> list[tuple[str, str, str, str]]:
        """Every key this root pins, as ``(section, owner, kid, RFC 7638 thumbprint)`` rows.

        A DID-document entry (a snapshot, or the document a did:key / did:jwk identifier computes
        to) contributes each method it authorises for ``assertionMethod``.
        """
        rows: list[tuple[str, str, str, str]] = []
        for section, entries in self._sections():
            for owner in entries:
                pins = self._pins[(section, owner)]
                kids = (
                    list(pins.keys)
                    if pins.document is None
                    else list(pins.document.authorised("assertionMethod"))
                )
                for kid in kids:
                    key = anchor_key(pins, kid, relationship="assertionMethod", algorithms=ALL_ALGORITHMS)
                    rows.append((section, owner, key.kid, key.key.thumbprint()))
        return rows

    # -- writing -------------------------------------------------------------------------------------
    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), indent=indent, ensure_ascii=False)


def _absolute_kid(owner: str, kid: str) -> str:
    """A pinned JWK's kid in the form a signature must name it: the analyst may write a DID owner's
    kids relative (``#frag``) in the root file; a signature always names the absolute DID URL."""
    if owner.startswith("did:") and kid[:1] in "#?/":
        return str(DIDURL.absolute(kid, parse_did_url(owner).did))
    return kid


def _entry_pins(owner: str, entry: TrustedIssuer | PinnedMerchant, *, section: Section) -> OwnerPins:
    """Load one entry's pins: a JWK Set, a DID-document snapshot, or a self-certifying DID's document."""
    is_did = owner.startswith("did:")
    if section == "merchant" and not is_did:
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
        document = DIDResolver.offline({owner: entry.did_document}).resolve(owner).document
        return OwnerPins(owner=owner, document=document, source=entry.source)
    if entry.jwks is None:
        if is_did and parse_did(owner).method in _SELF_CERTIFYING:
            # Pinned by its identifier: the document is computed from it, offline.
            document = DIDResolver.offline({}).resolve(owner).document
            return OwnerPins(owner=owner, document=document, source=entry.source)
        if isinstance(entry, TrustedIssuer) and entry.x509_roots:
            _check_x509_roots(entry.x509_roots)
            # Keys arrive in x5c headers and are admitted by path validation (payments.v02); no kid
            # is pinned, so the anchoring rule refuses every kid of this issuer.
            return OwnerPins(owner=owner, source=entry.source)
        raise InvalidInput(
            "give jwks or did_document (or a did:key / did:jwk identifier)", code="bad_trust_root"
        )
    keys: dict[str, PinnedKey] = {}
    for jwk in entry.jwks.keys:
        kid = jwk.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidInput("every pinned key needs a string 'kid'", code="bad_trust_root")
        absolute = _absolute_kid(owner, kid)
        if is_did:
            try:
                kid_of_owner(absolute, owner)
            except UntrustedKeyError:
                raise InvalidInput(
                    "a pinned key's kid must be a DID URL of its owner", code="bad_trust_root"
                ) from None
        elif absolute.startswith("did:"):
            raise InvalidInput("an https issuer's pinned kid cannot be a DID URL", code="bad_trust_root")
        if absolute in keys:
            raise InvalidInput("duplicate kid", code="bad_trust_root", kid=kid[:200])
        trusted = TrustedKey.from_jwk(jwk, algorithms=ALL_ALGORITHMS)
        keys[absolute] = PinnedKey(key=trusted.key, algorithms=trusted.algorithms if "alg" in jwk else None)
    return OwnerPins(owner=owner, keys=keys, source=entry.source)


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
