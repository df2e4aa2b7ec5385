"""Agent Card signatures (A2A 1.0 §8.4): the canonical form, signing, and verification.

Why this module exists: an Agent Card tells a client where an agent lives, which security schemes it
accepts and which skills it offers.  A card fetched over the network is only as trustworthy as the
channel unless it carries a signature that a key *the client already trusts* verifies.  A2A §8.4
defines that signature as a JWS (RFC 7515) over the RFC 8785 form of the card without its
``signatures`` member, after applying the Protocol Buffer field-presence rules of §5.7.

The steps, numbered as §8.4.2 ("Signature Generation Process") and §8.4.3 ("Signature Verification")
number them:

* :func:`canonical_card` — §8.4.1 / §8.4.2 step 1: drop ``signatures``; drop a field that holds its
  default value unless it is ``REQUIRED`` or declared ``optional``; canonicalise with RFC 8785.
  Members this schema does not know are kept, so the signature covers them too (a verifier must never
  accept a member no signature covers).
* :func:`sign_card` — §8.4.2 steps 2-4: protected header ``{"alg", "typ": "JOSE", "kid"}`` where
  ``kid`` is a DID URL; the JWS payload is detached (the card itself).  Several signatures may sit
  side by side for key rotation; a new one is appended.
* :class:`AgentCardVerifier` — §8.4.3: for each signature, the ``kid`` must be a DID URL of a DID the
  *verifier* trusts, resolved for ``assertionMethod``; the algorithm must be in the verifier's
  allow-list; ``jku``/``x5u``/``jwk``/``x5c`` are never followed (a signature carrying one is refused,
  even ``"jku": null``); at least one signature must verify.

a2a-sdk 1.3 (``a2a.utils.signing``) canonicalises differently (A2A issues #2122, #2249): it hashes
``MessageToDict(card)`` after *recursively removing every empty string, list and object* — including
``REQUIRED`` fields such as an empty ``description`` or ``skills`` and values inside extension
``params`` — and drops members its protobuf schema does not know.  Its signer also defaults to HS256.
``form="a2a-sdk-1.3"`` reproduces its canonical form so cards interoperate both ways; the verifier uses
it only when ``accept_sdk_form=True``, and then refuses cards with members the SDK form would not cover.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jose import (
    FORBIDDEN_HEADERS,
    TrustedKey,
    decode_protected_header,
    sign_compact,
    verify_compact,
)
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput, MudrikaError, VerificationError
from mudrika.identity.resolver import DIDResolver
from mudrika.trust.a2a._didkeys import ASYMMETRIC_ALGORITHMS, DidKeyTrust, check_kid

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "CARD_SIGNATURE_TYP",
    "MAX_CARD_BYTES",
    "MAX_SIGNATURES",
    "AgentCardVerifier",
    "CanonicalForm",
    "CardReport",
    "SignatureCheck",
    "canonical_card",
    "load_card",
    "sign_card",
]

CanonicalForm = Literal["a2a", "a2a-sdk-1.3"]

#: ``typ`` of the protected header (§8.4.2: "SHOULD be set to JOSE").
CARD_SIGNATURE_TYP: Final = "JOSE"
#: A card larger than this is refused before parsing; real cards are a few kilobytes.
MAX_CARD_BYTES: Final = 256 * 1024
#: More signatures than this on one card is refused: rotation needs two or three, not hundreds.
MAX_SIGNATURES: Final = 8
_MAX_DEPTH: Final = 32
#: Members of an unprotected header that could steer verification; a signature carrying one is refused.
_STEERING: Final = frozenset({"alg", "kid", "typ", "crit", "b64"}) | FORBIDDEN_HEADERS

# --- the card schema: field presence as a2a.proto declares it (§5.7) ------------------------------
# Each message maps a JSON member name to (kind, presence, nested message or None).
#   kind:     "str" | "bool" | "list" (repeated) | "map" | "msg" | "struct" (google.protobuf.Struct)
#   presence: "required" (always kept), "optional" (kept when present), "implicit" (dropped at default)
# Message-typed fields and oneof members track presence in proto3, so they are "optional" here.

_Field = tuple[str, str, str | None]
_SCHEMA: Final[dict[str, dict[str, _Field]]] = {
    "AgentCard": {
        "name": ("str", "required", None),
        "description": ("str", "required", None),
        "supportedInterfaces": ("list", "required", "AgentInterface"),
        "provider": ("msg", "optional", "AgentProvider"),
        "version": ("str", "required", None),
        "documentationUrl": ("str", "optional", None),
        "capabilities": ("msg", "required", "AgentCapabilities"),
        "securitySchemes": ("map", "implicit", "SecurityScheme"),
        "securityRequirements": ("list", "implicit", "SecurityRequirement"),
        "defaultInputModes": ("list", "required", "str"),
        "defaultOutputModes": ("list", "required", "str"),
        "skills": ("list", "required", "AgentSkill"),
        "iconUrl": ("str", "optional", None),
    },
    "AgentInterface": {
        "url": ("str", "required", None),
        "protocolBinding": ("str", "required", None),
        "tenant": ("str", "implicit", None),
        "protocolVersion": ("str", "required", None),
    },
    "AgentProvider": {
        "url": ("str", "required", None),
        "organization": ("str", "required", None),
    },
    "AgentCapabilities": {
        "streaming": ("bool", "optional", None),
        "pushNotifications": ("bool", "optional", None),
        "extensions": ("list", "implicit", "AgentExtension"),
        "extendedAgentCard": ("bool", "optional", None),
    },
    "AgentExtension": {
        "uri": ("str", "implicit", None),
        "description": ("str", "implicit", None),
        "required": ("bool", "implicit", None),
        "params": ("struct", "implicit", None),
    },
    "AgentSkill": {
        "id": ("str", "required", None),
        "name": ("str", "required", None),
        "description": ("str", "required", None),
        "tags": ("list", "required", "str"),
        "examples": ("list", "implicit", "str"),
        "inputModes": ("list", "implicit", "str"),
        "outputModes": ("list", "implicit", "str"),
        "securityRequirements": ("list", "implicit", "SecurityRequirement"),
    },
    "SecurityRequirement": {"schemes": ("map", "implicit", "StringList")},
    "StringList": {"list": ("list", "implicit", "str")},
    "SecurityScheme": {
        "apiKeySecurityScheme": ("msg", "optional", "APIKeySecurityScheme"),
        "httpAuthSecurityScheme": ("msg", "optional", "HTTPAuthSecurityScheme"),
        "oauth2SecurityScheme": ("msg", "optional", "OAuth2SecurityScheme"),
        "openIdConnectSecurityScheme": ("msg", "optional", "OpenIdConnectSecurityScheme"),
        "mtlsSecurityScheme": ("msg", "optional", "MutualTlsSecurityScheme"),
    },
    "APIKeySecurityScheme": {
        "description": ("str", "implicit", None),
        "location": ("str", "required", None),
        "name": ("str", "required", None),
    },
    "HTTPAuthSecurityScheme": {
        "description": ("str", "implicit", None),
        "scheme": ("str", "required", None),
        "bearerFormat": ("str", "implicit", None),
    },
    "OAuth2SecurityScheme": {
        "description": ("str", "implicit", None),
        "flows": ("msg", "required", "OAuthFlows"),
        "oauth2MetadataUrl": ("str", "implicit", None),
    },
    "OpenIdConnectSecurityScheme": {
        "description": ("str", "implicit", None),
        "openIdConnectUrl": ("str", "required", None),
    },
    "MutualTlsSecurityScheme": {"description": ("str", "implicit", None)},
    "OAuthFlows": {
        "authorizationCode": ("msg", "optional", "AuthorizationCodeOAuthFlow"),
        "clientCredentials": ("msg", "optional", "ClientCredentialsOAuthFlow"),
        "implicit": ("msg", "optional", "ImplicitOAuthFlow"),
        "password": ("msg", "optional", "PasswordOAuthFlow"),
        "deviceCode": ("msg", "optional", "DeviceCodeOAuthFlow"),
    },
    "AuthorizationCodeOAuthFlow": {
        "authorizationUrl": ("str", "required", None),
        "tokenUrl": ("str", "required", None),
        "refreshUrl": ("str", "implicit", None),
        "scopes": ("map", "required", "str"),
        "pkceRequired": ("bool", "implicit", None),
    },
    "ClientCredentialsOAuthFlow": {
        "tokenUrl": ("str", "required", None),
        "refreshUrl": ("str", "implicit", None),
        "scopes": ("map", "required", "str"),
    },
    "ImplicitOAuthFlow": {
        "authorizationUrl": ("str", "implicit", None),
        "refreshUrl": ("str", "implicit", None),
        "scopes": ("map", "implicit", "str"),
    },
    "PasswordOAuthFlow": {
        "tokenUrl": ("str", "implicit", None),
        "refreshUrl": ("str", "implicit", None),
        "scopes": ("map", "implicit", "str"),
    },
    "DeviceCodeOAuthFlow": {
        "deviceAuthorizationUrl": ("str", "required", None),
        "tokenUrl": ("str", "required", None),
        "refreshUrl": ("str", "implicit", None),
        "scopes": ("map", "required", "str"),
    },
}

_DEFAULTS: Final[dict[str, Any]] = {"str": "", "bool": False}


def _bad(path: str, what: str) -> InvalidInput:
    return InvalidInput(f"agent card member {path} {what}", code="invalid_card", member=path[:200])


def _check_scalar(kind: str, value: Any, path: str) -> Any:
    if kind == "str" and not isinstance(value, str):
        raise _bad(path, "must be a string")
    if kind == "bool" and not isinstance(value, bool):
        raise _bad(path, "must be a boolean")
    return value


def _element(element_type: str | None, value: Any, path: str, unknown: list[str], keep: bool) -> Any:
    if element_type is None or element_type == "str":
        return _check_scalar("str", value, path)
    return _message(element_type, value, path, unknown, keep)


def _message(name: str, value: Any, path: str, unknown: list[str], keep: bool) -> dict[str, Any]:
    """Apply §5.7 presence rules to one message; ``unknown`` collects members the schema lacks.

    ``keep`` keeps unknown members verbatim (the specification's form: the signature covers them);
    a2a-sdk parses the card into its protobuf schema first, which drops them.
    """
    if not isinstance(value, dict):
        raise _bad(path, f"must be an object ({name})")
    schema = _SCHEMA[name]
    out: dict[str, Any] = {}
    for member, member_value in value.items():
        member_path = f"{path}.{member}"
        spec = schema.get(member)
        if spec is None:
            unknown.append(member_path)
            if keep:
                out[member] = member_value  # kept verbatim: the signature must cover it
            continue
        kind, presence, nested = spec
        if member_value is None:
            raise _bad(member_path, "must not be null")
        if kind in _DEFAULTS:
            _check_scalar(kind, member_value, member_path)
            if presence == "implicit" and member_value == _DEFAULTS[kind]:
                continue
            out[member] = member_value
        elif kind == "list":
            if not isinstance(member_value, list):
                raise _bad(member_path, "must be an array")
            if presence == "implicit" and not member_value:
                continue
            out[member] = [
                _element(nested, item, f"{member_path}[{index}]", unknown, keep)
                for index, item in enumerate(member_value)
            ]
        elif kind == "map":
            if not isinstance(member_value, dict):
                raise _bad(member_path, "must be an object (map)")
            if presence == "implicit" and not member_value:
                continue
            out[member] = {
                key: _element(nested, item, f"{member_path}.{key}", unknown, keep)
                for key, item in member_value.items()
            }
        elif kind == "struct":
            if not isinstance(member_value, dict):
                raise _bad(member_path, "must be an object (Struct)")
            if presence == "implicit" and not member_value:
                continue
            out[member] = member_value
        else:  # "msg": proto3 message fields track presence; kept when present
            out[member] = _message(nested or "", member_value, member_path, unknown, keep)
    return out


def _clean_empty(value: Any, depth: int = 1) -> Any:
    """a2a-sdk 1.3's rule: remove empty strings, arrays and objects, recursively (None = removed)."""
    if isinstance(value, dict | list) and depth > _MAX_DEPTH:
        raise InvalidInput("agent card nested too deeply", code="too_deep", limit=_MAX_DEPTH)
    if isinstance(value, dict):
        cleaned = {
            key: item for key, raw in value.items() if (item := _clean_empty(raw, depth + 1)) is not None
        }
        return cleaned or None
    if isinstance(value, list):
        items = [item for raw in value if (item := _clean_empty(raw, depth + 1)) is not None]
        return items or None
    if isinstance(value, str) and not value:
        return None
    return value


def _signable(card: Mapping[str, Any], form: CanonicalForm) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(card, Mapping):
        raise InvalidInput("an agent card must be a JSON object", code="invalid_card")
    # §8.4.1 rule 3 / §8.4.2 step 1: the signatures member is not part of the signed content.
    unsigned = {key: value for key, value in card.items() if key != "signatures"}
    if form not in ("a2a", "a2a-sdk-1.3"):
        raise InvalidInput("unknown canonical form", code="bad_form", form=str(form)[:32])
    unknown: list[str] = []
    # §8.4.1 rule 1: field presence and default values (§5.7).
    shaped = _message("AgentCard", unsigned, "$", unknown, form == "a2a")
    if form == "a2a-sdk-1.3":
        shaped = _clean_empty(shaped) or {}
    return shaped, unknown


def canonical_card(card: Mapping[str, Any], *, form: CanonicalForm = "a2a") -> bytes:
    """The bytes an Agent Card signature covers: §8.4.1 presence rules, then RFC 8785.

    ``form="a2a"`` follows the specification; ``form="a2a-sdk-1.3"`` reproduces a2a-sdk 1.3's
    canonicalisation (every empty string, array and object removed, recursively).
    """
    shaped, _ = _signable(card, form)
    return canonicalize(shaped)


def load_card(raw: bytes | str, *, max_bytes: int = MAX_CARD_BYTES) -> dict[str, Any]:
    """Parse a received card strictly (duplicate members, lone surrogates, huge numbers refused)."""
    card = loads_strict(raw, max_bytes=max_bytes, max_depth=_MAX_DEPTH)
    if not isinstance(card, dict):
        raise InvalidInput("an agent card must be a JSON object", code="invalid_card")
    return card


def sign_card(
    card: Mapping[str, Any],
    key: KeyPair,
    *,
    kid: str,
    alg: str | None = None,
    form: CanonicalForm = "a2a",
) -> dict[str, Any]:
    """Return a copy of ``card`` with one more signature appended to ``signatures`` (§8.4.2).

    ``kid`` is the DID URL of the verification method (in the signer's DID document, under
    ``assertionMethod``) that holds ``key``'s public half.  Existing signatures are kept, so a card can
    carry the outgoing and the incoming key during a rotation.
    """
    check_kid(kid)
    algorithm = key.signing_algorithm(alg)
    if algorithm not in ASYMMETRIC_ALGORITHMS:
        raise InvalidInput("card signatures need an asymmetric algorithm", code="bad_alg", alg=algorithm)
    existing = card.get("signatures", [])
    if not isinstance(existing, list):
        raise InvalidInput("'signatures' must be an array", code="invalid_card")
    if len(existing) >= MAX_SIGNATURES:
        raise InvalidInput("card already carries the maximum number of signatures", code="too_many")
    # Step 1: the payload.
    shaped, unknown = _signable(card, form)
    if unknown and form == "a2a-sdk-1.3":
        raise InvalidInput(
            "the a2a-sdk form would leave members unsigned", code="uncovered_member", members=unknown[:8]
        )
    payload = canonicalize(shaped)
    # Steps 2-3: protected header and signature (compact JWS with the payload then detached).
    token = sign_compact(payload, key, alg=algorithm, kid=kid, typ=CARD_SIGNATURE_TYP)
    protected, _, signature = token.split(".")
    # Step 4: assemble the AgentCardSignature.
    signed = dict(card)
    signed["signatures"] = [*existing, {"protected": protected, "signature": signature}]
    return signed


# --- verification ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SignatureCheck:
    """The outcome for one entry of ``signatures``: which key it named and why it failed, if it did."""

    index: int
    passed: bool
    kid: str | None
    alg: str | None
    form: CanonicalForm | None
    code: str | None = None


@dataclass(frozen=True, slots=True)
class CardReport:
    """Every signature of a card checked; ``verified`` when at least one passed."""

    checks: tuple[SignatureCheck, ...]
    unknown_members: tuple[str, ...] = field(default=())

    @property
    def verified(self) -> bool:
        return any(check.passed for check in self.checks)

    @property
    def signer(self) -> str | None:
        """The ``kid`` of the first signature that verified."""
        return next((check.kid for check in self.checks if check.passed), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verified": self.verified,
            "signer": self.signer,
            "unknown_members": list(self.unknown_members),
            "signatures": [
                {
                    "index": check.index,
                    "passed": check.passed,
                    "kid": check.kid,
                    "alg": check.alg,
                    "form": check.form,
                    "code": check.code,
                }
                for check in self.checks
            ],
        }


class AgentCardVerifier:
    """Verify Agent Card signatures against keys the verifier trusts (A2A §8.4.3).

    Trust is configuration, never taken from the card: ``trusted_dids`` names the DIDs whose
    ``assertionMethod`` keys may sign cards, ``algorithms`` the accepted JWS algorithms (asymmetric
    only), ``resolver`` how those DIDs are resolved (use :meth:`DIDResolver.offline` with a snapshot to
    avoid any network).  ``accept_sdk_form`` additionally accepts a2a-sdk 1.3's canonical form.
    """

    __slots__ = ("_accept_sdk", "_trust")

    def __init__(
        self,
        *,
        resolver: DIDResolver,
        trusted_dids: Collection[str],
        algorithms: Collection[str],
        accept_sdk_form: bool = False,
    ) -> None:
        self._trust = DidKeyTrust(resolver=resolver, trusted_dids=trusted_dids, algorithms=algorithms)
        self._accept_sdk = bool(accept_sdk_form)

    def inspect(self, card: Mapping[str, Any]) -> CardReport:
        """Check every signature; never raises for a failed check (malformed cards still raise)."""
        entries, forms, unknown = self._begin(card)
        checks = [
            entry if isinstance(entry, SignatureCheck) else _check_signature(entry, self._key(entry), forms)
            for entry in entries
        ]
        return CardReport(checks=tuple(checks), unknown_members=tuple(unknown))

    async def ainspect(self, card: Mapping[str, Any]) -> CardReport:
        """:meth:`inspect` resolving the signers' DIDs without blocking the event loop (did:web)."""
        entries, forms, unknown = self._begin(card)
        checks = [
            entry
            if isinstance(entry, SignatureCheck)
            else _check_signature(entry, await self._akey(entry), forms)
            for entry in entries
        ]
        return CardReport(checks=tuple(checks), unknown_members=tuple(unknown))

    def verify(self, card: Mapping[str, Any]) -> CardReport:
        """Return the report when at least one signature verifies; raise otherwise.

        ``VerificationError`` codes: ``no_signature`` (nothing to verify), ``no_valid_signature``
        (every signature failed; ``checks`` lists why).
        """
        return _verdict(self.inspect(card))

    async def averify(self, card: Mapping[str, Any]) -> CardReport:
        """:meth:`verify` with asynchronous DID resolution."""
        return _verdict(await self.ainspect(card))

    def _key(self, entry: _Entry) -> TrustedKey | MudrikaError:
        """The trusted key the entry names, or why there is none (a failed check, not a raise)."""
        try:
            return self._trust.key_for(_screened(entry.header))
        except MudrikaError as exc:
            return exc

    async def _akey(self, entry: _Entry) -> TrustedKey | MudrikaError:
        """:meth:`_key` with asynchronous DID resolution."""
        try:
            return await self._trust.akey_for(_screened(entry.header))
        except MudrikaError as exc:
            return exc

    def _begin(self, card: Mapping[str, Any]) -> tuple[list[_Entry | SignatureCheck], list[_Form], list[str]]:
        """The non-I/O part both :meth:`inspect` and :meth:`ainspect` start with: entries parsed, forms built."""
        signatures = card.get("signatures") if isinstance(card, Mapping) else None
        if signatures is None:
            signatures = []
        if not isinstance(signatures, list):
            raise InvalidInput("'signatures' must be an array", code="invalid_card")
        if len(signatures) > MAX_SIGNATURES:
            raise InvalidInput("too many signatures", code="too_many", limit=MAX_SIGNATURES)
        # §8.4.3 steps 3-5: the received card, defaults removed, signatures excluded, RFC 8785.
        shaped, unknown = _signable(card, "a2a")
        forms: list[_Form] = [("a2a", canonicalize(shaped), unknown)]
        if self._accept_sdk:
            sdk_shaped, _ = _signable(card, "a2a-sdk-1.3")
            forms.append(("a2a-sdk-1.3", canonicalize(sdk_shaped), unknown))
        return [_parse_entry(index, entry) for index, entry in enumerate(signatures)], forms, unknown


_Form = tuple[CanonicalForm, bytes, list[str]]


@dataclass(frozen=True, slots=True)
class _Entry:
    """One well-formed ``signatures`` entry, its protected header decoded (not yet trusted)."""

    index: int
    protected: str
    signature: str
    header: Mapping[str, Any]
    kid: str | None
    alg: str | None

    def failed(self, exc: MudrikaError) -> SignatureCheck:
        return SignatureCheck(self.index, False, self.kid, self.alg, None, exc.code)


def _parse_entry(index: int, entry: Any) -> _Entry | SignatureCheck:
    """§8.4.3 step 1: one entry of ``signatures``, or the failed check it already is."""
    try:
        if not isinstance(entry, dict) or set(entry) - {"protected", "signature", "header"}:
            raise InvalidInput("malformed signature entry", code="malformed_signature")
        protected, signature = entry.get("protected"), entry.get("signature")
        if not isinstance(protected, str) or not isinstance(signature, str):
            raise InvalidInput("protected and signature must be strings", code="malformed_signature")
        unprotected = entry.get("header")
        if unprotected is not None and (
            not isinstance(unprotected, dict) or _STEERING.intersection(unprotected)
        ):
            raise VerificationError("unprotected header tries to steer verification", code="bad_header")
        header = decode_protected_header(protected)
    except MudrikaError as exc:
        return SignatureCheck(index, False, None, None, None, exc.code)
    kid, alg = header.get("kid"), header.get("alg")
    return _Entry(
        index=index,
        protected=protected,
        signature=signature,
        header=header,
        kid=kid[:256] if isinstance(kid, str) else None,
        alg=alg[:16] if isinstance(alg, str) else None,
    )


def _screened(header: Mapping[str, Any]) -> Mapping[str, Any]:
    # §8.4.3 step 2: the key comes from the verifier's trusted DIDs (DidKeyTrust), never from jku
    # (refused along with x5u, x5c and an embedded jwk); typ, when present, must be JOSE.
    typ = header.get("typ")
    if typ is not None and typ != CARD_SIGNATURE_TYP:
        raise VerificationError("unexpected signature typ", code="wrong_typ")
    return header


def _check_signature(
    entry: _Entry, trusted: TrustedKey | MudrikaError, forms: Sequence[_Form]
) -> SignatureCheck:
    """§8.4.3 step 6: the signature over each acceptable canonical form, first match wins.

    ``trusted`` is the error instead when no trusted key could be found: the entry then fails with it.
    """
    if isinstance(trusted, MudrikaError):
        return entry.failed(trusted)
    last: MudrikaError = VerificationError("no canonical form to check", code="no_form")
    for form, payload, unknown in forms:
        if form == "a2a-sdk-1.3" and unknown:
            # The SDK form drops unknown members, so a signature in it would not cover them.
            last = VerificationError("members not covered by the SDK form", code="uncovered_member")
            continue
        token = f"{entry.protected}.{b64url_encode(payload)}.{entry.signature}"
        try:
            verify_compact(token, key=trusted, max_bytes=2 * MAX_CARD_BYTES)
        except MudrikaError as exc:
            last = exc
            continue
        return SignatureCheck(entry.index, True, entry.kid, entry.alg, form)
    return entry.failed(last)


def _verdict(report: CardReport) -> CardReport:
    if not report.checks:
        raise VerificationError("the agent card is not signed", code="no_signature")
    if not report.verified:
        raise VerificationError(
            "no signature on the agent card verifies with a trusted key",
            code="no_valid_signature",
            checks=[check.code for check in report.checks],
        )
    return report
