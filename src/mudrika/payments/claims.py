"""What an evidence bundle *claims*: its audiences, nonces, keys and parties, read and never trusted.

Why it exists: a verdict is anchored only by the analyst's own trust root and records (the merchant's
keys, the issuer's keys, the audiences and the nonce of *this* payment), and an analyst starting a
case needs to know which values to go and confirm.  Those values sit inside the bundle's mandates and
tokens (the cart JWT's ``aud``, the key-binding JWT's ``nonce``, a DID document's keys), where a
person cannot read them.  :func:`bundle_claims` lists them, each with where in the bundle it was
found, so the analyst can decide what to pin after confirming it out of band.

Nothing here verifies a signature, resolves a DID or consults a trust root: every value is what the
bundle asserts, and is labelled as such.  The bundle goes through the same strict parsers
``mudrika dispute verify`` uses (``loads_strict``, the bundle models, the SD-JWT and chain splitters);
a token that cannot be read becomes a listed problem, never a crash, so one damaged token does not
hide the rest of the evidence.  Fuzzed by the ``bundle_claims`` row of ``fuzz/targets.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import DEFAULT_MAX_TOKEN_BYTES, parse_unverified_header
from mudrika.crypto.keys import PublicKey
from mudrika.crypto.sdjwt import ParsedSdJwt, parse
from mudrika.errors import InvalidInput, MudrikaError
from mudrika.payments.bundle import BUNDLE_FORMAT, MAX_BUNDLE_BYTES, EvidenceBundle, bundle_from_value
from mudrika.payments.v02.bundle import BUNDLE_FORMAT_V02, V02Bundle, v02_bundle_from_value
from mudrika.payments.v02.wire import parse_chain

__all__ = ["CLAIMS_NOTE", "BundleClaims", "Claim", "KeyClaim", "bundle_claims"]

#: Said beside every listing, text and JSON alike.
CLAIMS_NOTE: Final = (
    "claims: what the bundle asserts, unverified. Nothing here is checked or trusted; confirm a value "
    "out of band before you pin it in your trust root or give it as your own record."
)


@dataclass(frozen=True, slots=True)
class Claim:
    """One asserted value: what it is (``role``) and where in the bundle it was found."""

    role: str
    value: str
    where: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "value": self.value, "where": self.where}


@dataclass(frozen=True, slots=True)
class KeyClaim:
    """A key the bundle carries or a token names: its owner (a DID or issuer), ``kid``, RFC 7638
    thumbprint (``None`` when the key is only named, or unreadable), where, and the bundle's own
    record of when and how it was fetched (v0.1 ``keys.fetched``)."""

    owner: str | None
    kid: str | None
    thumbprint: str | None
    where: str
    fetched: Mapping[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "owner": self.owner,
            "kid": self.kid,
            "thumbprint": self.thumbprint,
            "where": self.where,
        }
        if self.fetched is not None:
            document["fetched"] = dict(self.fetched)
        return document


@dataclass(slots=True)
class BundleClaims:
    """Everything :func:`bundle_claims` found; ``problems`` lists tokens or keys it could not read."""

    format: str
    evidence_time: str
    description: str | None
    parties: list[Claim] = field(default_factory=list)
    audiences: list[Claim] = field(default_factory=list)
    nonces: list[Claim] = field(default_factory=list)
    keys: list[KeyClaim] = field(default_factory=list)
    problems: list[Claim] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "note": CLAIMS_NOTE,
            "verified": False,
            "format": self.format,
            "evidence_time": self.evidence_time,
            "description": self.description,
            "parties": [claim.to_dict() for claim in self.parties],
            "audiences": [claim.to_dict() for claim in self.audiences],
            "nonces": [claim.to_dict() for claim in self.nonces],
            "keys": [key.to_dict() for key in self.keys],
            "problems": [claim.to_dict() for claim in self.problems],
        }


def bundle_claims(data: bytes | str) -> BundleClaims:
    """The claims of one bundle (either evidence format); ``InvalidInput`` for a malformed bundle, with
    the codes ``dispute verify`` gives it (``not_a_bundle``, ``bad_bundle``, the parser's)."""
    document = loads_strict(data, max_bytes=MAX_BUNDLE_BYTES, max_depth=64)
    form = document.get("format") if isinstance(document, dict) else None
    if form == BUNDLE_FORMAT:
        return _v01(bundle_from_value(document))
    if form == BUNDLE_FORMAT_V02:
        return _v02(v02_bundle_from_value(document))
    raise InvalidInput(f"not a {BUNDLE_FORMAT} or {BUNDLE_FORMAT_V02} evidence bundle", code="not_a_bundle")


# -- reading tokens without trusting them -----------------------------------------------------------------


class _Reader:
    """Collects claims; a token that cannot be read is recorded as a problem and skipped."""

    def __init__(self, claims: BundleClaims) -> None:
        self.claims = claims

    def problem(self, where: str, exc: MudrikaError) -> None:
        self.claims.problems.append(Claim(exc.code, exc.message, where))

    def jwt(self, token: object, where: str) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
        """A compact JWS's protected header and payload, decoded strictly, signature unchecked."""
        if not isinstance(token, str):
            if token is not None:
                self.claims.problems.append(Claim("not_a_token", "not a compact JWS string", where))
            return None
        try:
            header = parse_unverified_header(token)
            return header, _payload(token.split(".")[1])
        except MudrikaError as exc:
            self.problem(where, exc)
            return None

    def sd_jwt(self, token: object, where: str) -> ParsedSdJwt | None:
        if not isinstance(token, str):
            if token is not None:
                self.claims.problems.append(Claim("not_a_token", "not an SD-JWT string", where))
            return None
        try:
            return parse(token)
        except MudrikaError as exc:
            self.problem(where, exc)
            return None

    def text(self, values: Mapping[str, Any], name: str, role: str, where: str, into: list[Claim]) -> None:
        value = values.get(name)
        if isinstance(value, str) and value:
            into.append(Claim(role, value, f"{where} {name}"))
        elif isinstance(value, list):  # an 'aud' may be a list of audiences
            for item in value:
                if isinstance(item, str) and item:
                    into.append(Claim(role, item, f"{where} {name}"))

    def named_key(self, header: Mapping[str, Any], owner: object, where: str) -> None:
        """The key a token's header names (``kid``; thumbprint unknown: the key is not in the token)."""
        kid = header.get("kid")
        self.claims.keys.append(
            KeyClaim(
                owner if isinstance(owner, str) else None,
                kid if isinstance(kid, str) else None,
                None,
                f"{where} header kid",
            )
        )

    def cnf(self, payload: Mapping[str, Any], owner: str, where: str) -> None:
        """The holder key a token binds (``cnf.jwk``), with its thumbprint."""
        cnf = payload.get("cnf")
        jwk = cnf.get("jwk") if isinstance(cnf, dict) else None
        if isinstance(jwk, dict):
            kid = jwk.get("kid")
            self.key(jwk, owner, kid if isinstance(kid, str) else None, f"{where} cnf.jwk")

    def key(self, jwk: object, owner: str | None, kid: str | None, where: str, fetched: Any = None) -> None:
        thumbprint = None
        try:
            if not isinstance(jwk, dict):
                raise InvalidInput("a key is a JWK object", code="bad_jwk")
            thumbprint = PublicKey.from_jwk(jwk).thumbprint()
        except MudrikaError as exc:
            self.problem(where, exc)
        self.claims.keys.append(KeyClaim(owner, kid, thumbprint, where, fetched))

    def method_key(self, method: Mapping[str, Any], owner: str, where: str, fetched: Any = None) -> None:
        """A DID document's verification method: ``publicKeyJwk``, or the Multikey
        ``publicKeyMultibase`` that mudrika's own DID documents carry, so its thumbprint can be
        compared out of band like any other key's."""
        kid = method.get("id")
        kid = kid if isinstance(kid, str) else None
        multibase = method.get("publicKeyMultibase")
        if "publicKeyJwk" in method or not isinstance(multibase, str):
            self.key(method.get("publicKeyJwk"), owner, kid, where, fetched)
            return
        thumbprint = None
        try:
            thumbprint = PublicKey.from_multikey(multibase).thumbprint()
        except MudrikaError as exc:
            self.problem(where, exc)
        self.claims.keys.append(KeyClaim(owner, kid, thumbprint, where, fetched))


def _payload(encoded: str) -> Mapping[str, Any]:
    value = loads_strict(
        b64url_decode(encoded, max_len=DEFAULT_MAX_TOKEN_BYTES),
        max_bytes=DEFAULT_MAX_TOKEN_BYTES,
        max_depth=64,
    )
    if not isinstance(value, dict):
        raise InvalidInput("token payload is not a JSON object", code="malformed_jwt")
    return value


def _verification_methods(document: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    methods = document.get("verificationMethod")
    for method in methods if isinstance(methods, list) else ():
        if isinstance(method, dict):
            yield method


# -- v0.1 (mudrika.evidence/v1) ---------------------------------------------------------------------------


def _v01(bundle: EvidenceBundle) -> BundleClaims:
    claims = BundleClaims(BUNDLE_FORMAT, _time(bundle.evidence_time), bundle.description)
    read = _Reader(claims)
    expected = bundle.expectations
    claims.audiences += [
        Claim(
            "merchant cart JWT aud (recorded)", expected.merchant_audience, "expectations.merchant_audience"
        ),
        Claim("user key-binding JWT aud (recorded)", expected.kb_audience, "expectations.kb_audience"),
    ]
    claims.nonces.append(
        Claim("user key-binding JWT nonce (recorded)", expected.kb_nonce, "expectations.kb_nonce")
    )
    claims.parties += [
        Claim("credential issuer (trusted by the assembler)", issuer, "expectations.trusted_issuers")
        for issuer in expected.trusted_issuers
    ]
    mandates = bundle.mandates
    contents = mandates.cart.get("contents")
    if isinstance(contents, dict):
        read.text(contents, "merchant_name", "merchant (name)", "mandates.cart.contents", claims.parties)
    cart = read.jwt(mandates.cart.get("merchant_authorization"), "mandates.cart.merchant_authorization")
    if cart is not None:
        header, payload = cart
        where = "mandates.cart.merchant_authorization"
        read.text(payload, "iss", "merchant (cart signer)", where, claims.parties)
        read.text(payload, "aud", "merchant cart JWT aud (signed)", where, claims.audiences)
        read.named_key(header, payload.get("iss"), where)
    intent = read.jwt(mandates.intent.get("user_authorization"), "mandates.intent.user_authorization")
    if intent is not None:
        read.named_key(intent[0], intent[1].get("iss"), "mandates.intent.user_authorization")
    where = "mandates.payment.user_authorization"
    parsed = read.sd_jwt(mandates.payment.get("user_authorization"), where)
    if parsed is not None:
        issued = read.jwt(parsed.issuer_jwt, f"{where} (issuer JWT)")
        if issued is not None:
            header, payload = issued
            read.text(payload, "iss", "credential issuer", f"{where} (issuer JWT)", claims.parties)
            read.named_key(header, payload.get("iss"), f"{where} (issuer JWT)")
            read.cnf(payload, "user (credential holder)", f"{where} (issuer JWT)")
        binding = read.jwt(parsed.kb_jwt, f"{where} (key-binding JWT)")
        if binding is not None:
            read.text(
                binding[1],
                "aud",
                "user key-binding JWT aud (signed)",
                f"{where} (key-binding JWT)",
                claims.audiences,
            )
            read.text(
                binding[1],
                "nonce",
                "user key-binding JWT nonce (signed)",
                f"{where} (key-binding JWT)",
                claims.nonces,
            )
    keys = bundle.keys
    fetched = {owner: record.model_dump(mode="json") for owner, record in keys.fetched.items()}
    for did, document in keys.did_documents.items():
        for method in _verification_methods(document):
            read.method_key(method, did, f"keys.did_documents[{did}]", fetched.get(did))
    for owner, jwks in keys.jwks.items():
        listed = jwks.get("keys")
        for jwk in listed if isinstance(listed, list) else ():
            kid = jwk.get("kid") if isinstance(jwk, dict) else None
            read.key(
                jwk, owner, kid if isinstance(kid, str) else None, f"keys.jwks[{owner}]", fetched.get(owner)
            )
    for kid, entry in keys.pinned.items():
        pinned_owner = entry.get("owner")
        read.key(
            entry.get("jwk"),
            pinned_owner if isinstance(pinned_owner, str) else None,
            kid,
            f"keys.pinned[{kid}]",
        )
    return claims


# -- v0.2 (mudrika.evidence/ap2-v0.2) ---------------------------------------------------------------------


def _v02(bundle: V02Bundle) -> BundleClaims:
    claims = BundleClaims(BUNDLE_FORMAT_V02, _time(bundle.evidence_time), bundle.description)
    read = _Reader(claims)
    for name, hops in (
        ("checkout", bundle.expectations.checkout_hops),
        ("payment", bundle.expectations.payment_hops),
    ):
        for index, hop in enumerate(hops, 1):
            where = f"expectations.{name}_hops[{index - 1}]"
            claims.audiences.append(Claim(f"{name} hop {index} aud (recorded)", hop.aud, where))
            claims.nonces.append(Claim(f"{name} hop {index} nonce (recorded)", hop.nonce, where))
    for name, chain in (("checkout", bundle.checkout_chain), ("payment", bundle.payment_chain)):
        if chain is None:
            continue
        try:
            tokens = parse_chain(chain).tokens
        except MudrikaError as exc:
            read.problem(f"{name}_chain", exc)
            continue
        for index, token in enumerate(tokens):
            where = f"{name}_chain {'root' if index == 0 else f'hop {index}'}"
            opened = read.jwt(token.issuer_jwt, where)
            if opened is None:
                continue
            header, payload = opened
            if index == 0:
                read.text(payload, "iss", f"{name} mandate issuer", where, claims.parties)
                read.named_key(header, payload.get("iss"), where)
                if "x5c" in header:
                    claims.keys.append(KeyClaim(None, None, None, f"{where} header x5c (certificate chain)"))
            else:
                read.text(payload, "aud", f"{name} hop {index} aud (signed)", where, claims.audiences)
                read.text(payload, "nonce", f"{name} hop {index} nonce (signed)", where, claims.nonces)
                read.text(payload, "aud", f"{name} hop {index} audience", where, claims.parties)
            read.cnf(payload, f"{name} delegate {index + 1}", where)
    for name, receipt in (("checkout", bundle.checkout_receipt), ("payment", bundle.payment_receipt)):
        opened = read.jwt(receipt, f"{name}_receipt")
        if opened is not None:
            read.text(opened[1], "iss", f"{name} receipt signer", f"{name}_receipt", claims.parties)
            read.named_key(opened[0], opened[1].get("iss"), f"{name}_receipt")
    for record in bundle.status_lists or ():
        claims.parties.append(Claim("status list (fetched by the assembler)", record.uri, "status_lists"))
    return claims


def _time(value: object) -> str:
    """The bundle's evidence time as written (an aware timestamp model or text)."""
    isoformat = getattr(value, "isoformat", None)
    text = isoformat() if callable(isoformat) else str(value)
    return str(text).replace("+00:00", "Z")
