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

An entry may give its keys validity windows (``key_windows``: when a key became valid, when it was
superseded or reported compromised); they travel with the anchored key and are judged by
:func:`mudrika.identity.anchoring.judge_signing_time` (``docs/disputes-over-time.md``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
from collections.abc import Collection, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, cast

from cryptography import x509
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import ALL_ALGORITHMS
from mudrika.errors import InvalidInput, MudrikaError, UntrustedKeyError
from mudrika.identity.anchoring import (
    AnchoredKey,
    KeyValidity,
    OwnerPins,
    PinnedKey,
    RevocationReason,
    anchor_key,
    kid_of_owner,
)
from mudrika.identity.did import DIDURL, parse_did, parse_did_url
from mudrika.identity.document import SigningPurpose
from mudrika.identity.methods.webvh import assertion_key_history, resolve_log
from mudrika.identity.resolution import check_document_id, parse_document
from mudrika.identity.resolver import DIDResolver
from mudrika.net.limits import read_capped
from mudrika.payments._load import validate_document
from mudrika.payments.credential_status import DEFAULT_STATUS_MAX_AGE, WhenAbsent

TRUST_ROOT_FORMAT: Final = "mudrika.trust-root/v1"
MAX_TRUST_ROOT_BYTES: Final = 4 * 1024 * 1024
_MAX_ENTRIES: Final = 256
_MAX_KEYS: Final = 64
_MAX_WEBVH_LOG: Final = 2 * 1024 * 1024
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


#: RFC 3339 in UTC with ``Z``, seconds required, at most microseconds: one spelling per instant, so
#: a window compares the same in every reader (a JSON Schema consumer included).
_UTC_TIME_PATTERN: Final = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$"
_UTC_TIME: Final = re.compile(_UTC_TIME_PATTERN)


def parse_utc_time(text: str) -> datetime:
    """An RFC 3339 UTC time as the trust root writes it (``2026-10-01T00:00:00Z``) → aware datetime.

    ``InvalidInput`` ``bad_time`` for anything else: an offset other than ``Z``, no seconds, a naive
    time, or a date that does not exist.
    """
    if not isinstance(text, str) or not _UTC_TIME.fullmatch(text):
        raise InvalidInput("not an RFC 3339 UTC time such as 2026-10-01T00:00:00Z", code="bad_time")
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput("not an existing date and time", code="bad_time") from None


def format_utc_time(moment: datetime) -> str:
    """An aware datetime as the trust root writes times (UTC, ``Z``; microseconds only when set)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInput("time must be timezone-aware", code="naive_time")
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _time_field(description: str) -> Any:
    return Field(
        default=None,
        pattern=_UTC_TIME_PATTERN,
        max_length=40,
        description=description,
        json_schema_extra={"format": "date-time"},
    )


class KeyWindow(_Owned):
    """When one pinned key may have signed, as the analyst recorded it (all times UTC, ``Z``).

    Valid on ``[valid_from, end)``, ``end`` the earlier of ``valid_until`` and ``revoked_at``.
    ``reason`` is required exactly when ``revoked_at`` is: a ``superseded`` key's holder is still
    believed about when it signed, a ``compromised`` key's is not (the rules are in
    :func:`mudrika.identity.anchoring.judge_signing_time`).
    """

    valid_from: str | None = _time_field("First instant the key may sign (inclusive).")
    valid_until: str | None = _time_field("First instant the key may no longer sign (exclusive).")
    revoked_at: str | None = _time_field("When the key was revoked (exclusive end); needs reason.")
    reason: RevocationReason | None = None
    note: str | None = Field(default=None, max_length=_MAX_TEXT)
    """The analyst's note: who reported the revocation, where, when."""

    def validity(self) -> KeyValidity:
        """The window as the identity layer takes it; ``InvalidInput`` naming the first problem."""
        problems = self.problems()
        if problems:
            raise InvalidInput(problems[0], code="bad_trust_root")
        return KeyValidity(
            valid_from=_maybe_time(self.valid_from),
            valid_until=_maybe_time(self.valid_until),
            revoked_at=_maybe_time(self.revoked_at),
            reason=self.reason,
        )

    def problems(self) -> list[str]:
        """Every reason this window cannot load (empty when it can)."""
        found: list[str] = []
        times: dict[str, datetime] = {}
        for name in ("valid_from", "valid_until", "revoked_at"):
            text = getattr(self, name)
            if text is None:
                continue
            try:
                times[name] = parse_utc_time(text)
            except InvalidInput as exc:
                found.append(f"{name}: {exc.message}")
        if (self.revoked_at is None) != (self.reason is None):
            found.append("revoked_at and reason (superseded or compromised) go together")
        start, until = times.get("valid_from"), times.get("valid_until")
        if start is not None and until is not None and start >= until:
            found.append("valid_from must be before valid_until")
        return found


def _maybe_time(text: str | None) -> datetime | None:
    return None if text is None else parse_utc_time(text)


#: ``key_windows``: the windows of an entry's keys, by kid as a signature names it.
_KEY_WINDOWS_DESCRIPTION: Final = (
    "Validity windows by kid: the absolute DID URL for a DID owner, the plain kid for a JWK Set owner."
)


class _PinnedParty(_Owned):
    """What the analyst pinned for one party: its keys in one form, where they came from, and the
    windows in which each key may have signed.

    Exactly one of ``jwks``, ``did_document`` or ``did_webvh_log`` — or none when the identifier is a
    self-certifying ``did:key``/``did:jwk`` (its key *is* the identifier).
    """

    jwks: KeySet | None = None
    did_document: dict[str, Any] | None = None
    did_webvh_log: str | None = Field(default=None, min_length=1, max_length=_MAX_WEBVH_LOG, repr=False)
    """A did:webvh owner's log (``did.jsonl``) as the analyst saved it: every version is verified when
    the root loads, and each key the log ever listed under ``assertionMethod`` is pinned with the
    window the log listed it in, so a signature is judged by the document *of its day*."""
    did_webvh_witness: str | None = Field(default=None, min_length=1, max_length=_MAX_WEBVH_LOG, repr=False)
    """The log's ``did-witness.json``, when its witness rule needs one."""
    source: str | None = Field(default=None, max_length=_MAX_TEXT)
    """Where and when the analyst obtained these keys (free text, shown in reports)."""
    key_windows: dict[str, KeyWindow] | None = Field(
        default=None, max_length=_MAX_KEYS, description=_KEY_WINDOWS_DESCRIPTION
    )


class TrustedIssuer(_PinnedParty):
    """A credential issuer whose SD-JWT VCs are accepted, with the keys the analyst pinned for it."""

    vct: list[str] | None = Field(default=None, min_length=1, max_length=_MAX_ENTRIES)
    """Credential types accepted from this issuer; ``None``: the root's ``accepted_vct``."""
    x509_roots: list[str] | None = Field(default=None, min_length=1, max_length=_MAX_KEYS)
    """AP2 v0.2 only: base64 DER CA certificates to which an ``x5c`` chain in a root mandate's header
    must path-validate (RFC 5280) for its key to count as this issuer's; absent: ``x5c`` is refused."""


class PinnedMerchant(_PinnedParty):
    """A merchant (by DID) whose cart-signing keys the analyst pinned (a snapshot taken earlier)."""


class MaxAges(_Owned):
    """Oldest acceptable ``iat`` (seconds before the evaluation time) per signed object."""

    key_binding: float = Field(default=300.0, gt=0.0, le=86400.0)
    intent: float | None = Field(default=None, gt=0.0, le=366 * 86400.0)
    """``None``: an intent is valid until its ``intent_expiry`` whatever its age."""


class StatusRules(_Owned):
    """How a credential's Token Status List is judged as of the purchase (``docs/disputes-over-time.md``).

    ``max_age_seconds``: how old the list the merchant recorded may have been at the purchase.
    ``when_absent``: what a credential that names a status list is worth when no list was recorded:
    ``failed`` (the default: the credential could have been revoked) or ``unanchored`` (the verdict
    can then be no better than UNANCHORED).
    """

    max_age_seconds: float = Field(default=DEFAULT_STATUS_MAX_AGE, gt=0.0, le=366 * 86400.0)
    when_absent: WhenAbsent = "failed"


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
    status: StatusRules | None = None
    """Credential status rules; absent: :class:`StatusRules`' defaults (one day; absent list fails)."""
    verifier: VerifierIdentity = Field(default_factory=VerifierIdentity)
    accept_legacy_unbound_intent: bool = False
    """Accept v0.1 chains whose key-binding JWT does not cover H(IntentMandate) (reported in words)."""

    _pins: dict[tuple[Section, str], OwnerPins] = PrivateAttr(default_factory=dict)
    _fingerprint: str = PrivateAttr(default="")
    _algorithm_set: frozenset[str] = PrivateAttr(default=frozenset())
    _status_rules: StatusRules = PrivateAttr(default_factory=StatusRules)
    #: (section, owner, kid exactly as a signature names it) -> the key :meth:`anchor` gives for it
    #: under this root's own algorithms for ``assertionMethod``, for every pinned kid that anchors.
    _signature_keys: dict[tuple[Section, str, str], AnchoredKey] = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: Any, /) -> None:
        """Load every pinned key once; collect every problem instead of stopping at the first."""
        problems: list[dict[str, str]] = []
        for section, entries in self._sections():
            for owner, entry in entries.items():
                try:
                    pins = _entry_pins(owner, entry, section=section)
                except MudrikaError as exc:
                    problems.append({"loc": f"{section}s.{owner[:200]}", "msg": exc.message})
                    continue
                validity, window_problems = _entry_validity(pins, entry)
                problems.extend(
                    {"loc": f"{section}s.{owner[:200]}.key_windows.{kid[:200]}", "msg": message}
                    for kid, message in window_problems
                )
                self._pins[(section, owner)] = replace(pins, validity=validity)
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
        self._algorithm_set = frozenset(self.algorithms)
        self._status_rules = self.status if self.status is not None else StatusRules()
        # Every signing key the root pins, anchored now by the same rule anchor() applies: a root is
        # immutable, so a verification that names one of these kids exactly finds its answer here
        # instead of parsing the DID URL and walking the document again.
        for (section, owner), pins in self._pins.items():
            for kid in pins.kids:
                try:
                    self._signature_keys[(section, owner, kid)] = anchor_key(
                        pins, kid, relationship="assertionMethod", algorithms=self._algorithm_set
                    )
                except MudrikaError:
                    continue  # anchor() refuses it the same way when a signature names it
        # Computed once: every report quotes it, and canonicalising the root costs more than a check.
        document = self.model_dump(mode="json", exclude_none=True)
        self._fingerprint = "sha256:" + b64url_encode(hashlib.sha256(canonicalize(document)).digest())

    # -- what the verifier asks ----------------------------------------------------------------------
    @property
    def status_rules(self) -> StatusRules:
        """The credential-status rules in force (the file's, else the defaults)."""
        rules: StatusRules = _private(self)["_status_rules"]  # set once, when the root loads
        return rules

    @property
    def algorithm_set(self) -> frozenset[str]:
        algorithms: frozenset[str] = _private(self)["_algorithm_set"]
        return algorithms

    def pins_signature_kid(self, section: Section, owner: str, kid: str) -> bool:
        """True when ``kid``, exactly as given, names a key this root pins for ``owner`` and that
        key anchors for ``assertionMethod`` under the root's algorithms (a DID URL that passed the
        anchoring rule when the root was loaded: no need to parse it again)."""
        return (section, owner, kid) in _private(self)["_signature_keys"]

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
        private = _private(self)
        if relationship == "assertionMethod" and type(kid) is str:
            loaded: frozenset[str] = private["_algorithm_set"]
            if algorithms is loaded or algorithms == loaded:
                anchored: AnchoredKey | None = private["_signature_keys"].get((section, owner, kid))
                if anchored is not None:  # anchor_key's answer for these very arguments, from loading
                    return anchored
        pins: OwnerPins | None = private["_pins"].get((section, owner))
        if pins is None:
            raise UntrustedKeyError(
                f"the trust root pins no {section} with this identifier",
                code="not_in_trust_root",
                owner=owner[:200],
            )
        return anchor_key(pins, kid, relationship=relationship, algorithms=algorithms)

    def kids_of(self, section: Section, owner: str) -> tuple[str, ...]:
        """Every kid the ``section`` party ``owner`` pins, as a signature names it (empty: not pinned)."""
        pins = self._pins.get((section, owner))
        return pins.kids if pins is not None else ()

    def validity_of(self, section: Section, owner: str, kid: str) -> KeyValidity | None:
        """The validity window pinned for ``owner``'s key ``kid`` (absolute for a DID owner), if any."""
        pins = self._pins.get((section, owner))
        return pins.validity.get(kid) if pins is not None else None

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


def _private(model: BaseModel) -> dict[str, Any]:
    """The model's private attributes, read directly: what pydantic's ``__getattr__`` returns for a
    private name, without its fallback machinery (a few microseconds a read, on every verification)."""
    return cast(dict[str, Any], model.__pydantic_private__)


def _absolute_kid(owner: str, kid: str) -> str:
    """A pinned JWK's kid in the form a signature must name it: the analyst may write a DID owner's
    kids relative (``#frag``) in the root file; a signature always names the absolute DID URL."""
    if owner.startswith("did:") and kid.startswith("#"):
        return str(DIDURL.absolute(kid, parse_did_url(owner).did))
    return kid  # any other relative form (a path, a query) is refused by the anchoring rule


def _entry_validity(
    pins: OwnerPins, entry: TrustedIssuer | PinnedMerchant
) -> tuple[dict[str, KeyValidity], list[tuple[str, str]]]:
    """An entry's windows by kid, and every (kid, problem) that keeps one from loading.

    A window must name a key the entry pins, exactly as a signature names it: a window under a
    mistyped or relative kid would be silently inert, and a compromised key would stay trusted.
    """
    windows: dict[str, KeyValidity] = dict(pins.validity)  # a did:webvh log's own windows, if any
    problems: list[tuple[str, str]] = []
    pinned = set(pins.kids)
    for kid, window in (entry.key_windows or {}).items():
        found = window.problems()
        if kid not in pinned:
            hint = " (name it by its absolute DID URL)" if kid.startswith("#") else ""
            found.insert(0, f"this entry pins no key with this kid{hint}")
        if found:
            problems.extend((kid, message) for message in found)
            continue
        try:
            windows[kid] = _narrowed(windows.get(kid), window.validity())
        except InvalidInput as exc:
            problems.append((kid, exc.message))
    return windows, problems


def _narrowed(logged: KeyValidity | None, recorded: KeyValidity) -> KeyValidity:
    """The analyst's window over the one a did:webvh log gives: each bound the analyst wrote wins
    (a compromise the log cannot know of), the log's bounds stand where the analyst wrote none."""
    if logged is None:
        return recorded
    # KeyValidity refuses a combination whose start is not before its end (bad_window).
    return KeyValidity(
        valid_from=recorded.valid_from or logged.valid_from,
        valid_until=recorded.valid_until or logged.valid_until,
        revoked_at=recorded.revoked_at,
        reason=recorded.reason,
    )


def _webvh_pins(owner: str, log: str, witness: str | None, *, source: str | None) -> OwnerPins:
    """A did:webvh owner pinned by its log: every version verified now, every assertion key it ever
    listed pinned, each with the window the log listed it in (see ``_entry_validity``)."""
    if parse_did(owner).method != "webvh":
        raise InvalidInput("did_webvh_log pins a did:webvh identifier", code="bad_trust_root")
    resolution = resolve_log(owner, log, witness=witness)
    history = assertion_key_history(owner, resolution.log)
    document = check_document_id(
        parse_document(history.document, message="the log's keys do not form a DID document"),
        owner,
        message="the log is for another DID",
    )
    validity = {
        kid: KeyValidity(valid_from=start, valid_until=end) for kid, (start, end) in history.windows.items()
    }
    return OwnerPins(owner=owner, document=document, source=source, validity=validity)


def _entry_pins(owner: str, entry: TrustedIssuer | PinnedMerchant, *, section: Section) -> OwnerPins:
    """Load one entry's pins: a JWK Set, a DID-document snapshot, or a self-certifying DID's document."""
    is_did = owner.startswith("did:")
    if section == "merchant" and not is_did:
        raise InvalidInput("a merchant is identified by its DID", code="bad_trust_root")
    if is_did:
        parse_did(owner)
    elif not owner.startswith("https://"):
        raise InvalidInput("an issuer is a DID or an https identifier", code="bad_trust_root")
    given = [name for name in ("jwks", "did_document", "did_webvh_log") if getattr(entry, name) is not None]
    if len(given) > 1:
        raise InvalidInput(
            f"give one of jwks, did_document, did_webvh_log, not {' and '.join(given)}", code="bad_trust_root"
        )
    if entry.did_webvh_witness is not None and entry.did_webvh_log is None:
        raise InvalidInput("did_webvh_witness goes with did_webvh_log", code="bad_trust_root")
    if entry.did_webvh_log is not None:
        return _webvh_pins(owner, entry.did_webvh_log, entry.did_webvh_witness, source=entry.source)
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
