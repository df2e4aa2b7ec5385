"""The one table of mudrika parsers that read attacker input, as fuzz targets over bytes.

Why one table: the Hypothesis test in CI (``tests/security/test_fuzz_parsers.py``) and the long
atheris runs (``fuzz/fuzz_<name>.py``) must fuzz the same entry points with the same contract, and a
parser added without a row must be noticed (the test over :data:`PARSER_MODULES`).

Contract of a row: :attr:`Target.call` takes any bytes and either returns or raises one of
:attr:`Target.accepted` (the toolkit's own errors that parser may raise for bad input); anything else
(``TypeError``, ``KeyError``, ``RecursionError``, a raw ``json.JSONDecodeError``...) is a bug.

Every target reads its bytes the same way: the first byte picks a *mode* (``data[0] % modes``) and
the rest is the input, split at ``0xFF`` bytes where a mode needs several pieces (``0xFF`` never
occurs in UTF-8 text, so JSON pieces stay intact).  Modes that matter: besides feeding the parser
raw bytes, several targets *sign* the fuzzed header and payload with a key the verifier trusts, so
the fuzzer reaches the code behind the signature check (claims, disclosures, key binding, canonical
forms) instead of stopping at "bad signature" on every input.

Imports: only mudrika and the standard library (no pytest, no Hypothesis, no atheris).
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from cryptography.hazmat.primitives.asymmetric import ed25519

from mudrika.crypto.jcs import canonical_sha256, canonicalize, loads_received, loads_strict
from mudrika.crypto.jose import TrustedKey, open_compact, parse_unverified_header, verify_compact, verify_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput, MudrikaError, UntrustedKeyError, VerificationError
from mudrika.trust.mcp.methods import operation_for_call
from mudrika.trust.middleware._gate import ids_for_echo, parse_json

__all__ = [
    "EXEMPT_MODULES",
    "FIXTURES",
    "PARSER_MODULES",
    "TARGETS",
    "Grammar",
    "Target",
    "by_name",
    "split_pieces",
]

FIXTURES: Final = Path(__file__).resolve().parent.parent / "fixtures"
NOW: Final = 1_800_000_000.0
ORIGIN: Final = "https://agent.example"
URL: Final = ORIGIN + "/a2a?x=1"
ISSUER: Final = "https://issuer.example"
AUDIENCE: Final = "https://verifier.example"
NONCE: Final = "n-0S6_WzA2Mj"
ACCESS_TOKEN: Final = "access-token-value"  # noqa: S105 (a fixed test token, bound by DPoP ath)
SEPARATOR: Final = b"\xff"

#: Which input strategy a row's inputs come from (the Hypothesis test maps each to a generator).
Grammar = Literal["json", "compact", "sd_jwt", "structured_field", "did", "http", "lines"]


@dataclass(frozen=True, slots=True)
class Target:
    """One parser under fuzzing (see the module docstring for the contract)."""

    name: str
    modules: tuple[str, ...]
    """The parser modules this row drives (the entry point's module first)."""
    call: Callable[[bytes], object]
    accepted: tuple[type[MudrikaError], ...]
    modes: int
    grammar: Grammar
    seeds: Callable[[], list[bytes]]
    """Valid (or nearly valid) inputs, mode byte included: what mutation starts from."""


# -- shared pieces -------------------------------------------------------------------------------------


def split_pieces(body: bytes, count: int) -> list[bytes]:
    """``body`` split at :data:`SEPARATOR` into exactly ``count`` pieces (the last keeps the rest)."""
    pieces = body.split(SEPARATOR, count - 1)
    return pieces + [b""] * (count - len(pieces))


def _mode(data: bytes, modes: int) -> tuple[int, bytes]:
    return (data[0] % modes, data[1:]) if data else (0, b"")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _text(data: bytes) -> str:
    """Any bytes as text, lone surrogates included for bytes that are not UTF-8."""
    return data.decode("utf-8", "surrogateescape")


def _json_object(data: bytes) -> dict[str, Any] | None:
    """The fuzzed piece as a JSON object when the lenient stdlib reader sees one (for fix-ups only)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def _signed(header: bytes, payload: bytes, key: KeyPair) -> str:
    """A compact JWS over exactly these header and payload bytes, with a valid signature by ``key``."""
    signing_input = f"{_b64(header)}.{_b64(payload)}"
    return f"{signing_input}.{_b64(key.sign(signing_input.encode('ascii'), 'EdDSA'))}"


def _fixed_key(seed: int) -> KeyPair:
    """A deterministic Ed25519 key, so fuzz runs and their corpora are reproducible."""
    return KeyPair(ed25519.Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


ISSUER_KEY: Final = _fixed_key(1)
HOLDER_KEY: Final = _fixed_key(2)
SIGNER_KEY: Final = _fixed_key(3)
TRUSTED_ISSUER: Final = TrustedKey.for_key(ISSUER_KEY.public_key)


def _did_key(key: KeyPair) -> tuple[str, str]:
    multikey = key.public_key.to_multikey()
    return f"did:key:{multikey}", f"did:key:{multikey}#{multikey}"


def _read(path: str) -> bytes:
    return (FIXTURES / path).read_bytes()


# -- strict JSON and RFC 8785 ----------------------------------------------------------------------------


def _jcs(data: bytes) -> object:
    mode, body = _mode(data, 4)
    raw: bytes | str = body
    if mode == 2:
        raw = body.decode("utf-8", "surrogatepass") if _is_surrogate_utf8(body) else _text(body)
    elif mode == 3:
        raw = _text(body)
    depth = 8 if mode == 1 else 64
    try:
        received = loads_received(raw, max_depth=depth)
    except InvalidInput as refused:
        # The plain path (orjson) of loads_strict must refuse what the hooked parser refuses, as it.
        try:
            loads_strict(raw, max_depth=depth)
        except InvalidInput as also:
            if also.code != refused.code:
                raise AssertionError(
                    f"loads_strict says {also.code}, the hooked parser {refused.code}"
                ) from None
            raise
        raise AssertionError("loads_strict accepted what the hooked parser refuses") from refused
    if repr(loads_strict(raw, max_depth=depth)) != repr(received.value):
        raise AssertionError("loads_strict and the hooked parser read different values")
    canonical = canonicalize(received.value)
    # The read-only copy may be encoder-ready (hashed with no pre-pass) or orjson-ready (its misprinted
    # floats patched per container): it, and every container in it, must give the same bytes.
    if canonicalize(received.frozen) != canonical:
        raise AssertionError("the encoder-ready copy canonicalises differently from the parsed value")
    _same_canonical_parts(received.frozen, received.value, 0)
    return canonical


def _same_canonical_parts(frozen: object, value: object, depth: int) -> None:
    """Every container of the read-only copy canonicalises like its counterpart in the parsed value."""
    if depth > 8:  # deeper parts are covered by their ancestors' bytes
        return
    if isinstance(frozen, dict) and isinstance(value, dict):
        pairs: list[tuple[object, object]] = [(frozen[key], value[key]) for key in frozen]
    elif isinstance(frozen, list) and isinstance(value, list):
        pairs = list(zip(frozen, value, strict=True))
    else:
        return
    for part, plain in pairs:
        if isinstance(part, dict | list):
            if canonical_sha256(part) != canonical_sha256(plain):
                raise AssertionError("a part of the read-only copy hashes differently from the parsed value")
            _same_canonical_parts(part, plain, depth + 1)


def _is_surrogate_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return False
    return True


def _jcs_seeds() -> list[bytes]:
    documents = [
        b'{"a":[1,2.5,-0,1e-7,"\\u00e9\\ud83d\\ude00"],"b":{"c":null,"d":true}}',
        b'[9007199254740991,-9007199254740991,1e308,"x"]',
        b'{"w":[1e-6,1.5e17,-4.0,"a.0,",{"k":9007199254740994.0,"m":[2e-300,1e21,0.5]}],"+":1e16}',
        _read("ap2/cart_contents.json"),
    ]
    return [bytes([mode]) + doc for doc in documents for mode in range(4)]


# -- JWS compact -------------------------------------------------------------------------------------------


def _jose(data: bytes) -> object:
    mode, body = _mode(data, 3)
    if mode == 0:
        return verify_compact(body, key=TRUSTED_ISSUER)
    if mode == 1:
        header, payload = split_pieces(body, 2)
        return verify_jwt(
            _signed(header, payload, ISSUER_KEY),
            key=TRUSTED_ISSUER,
            issuer=ISSUER,
            audience=AUDIENCE,
            now=NOW,
            leeway=30,
        )
    token = body.decode("latin-1")
    parse_unverified_header(token)
    return open_compact(token, expected_typ="JWT")


def _jose_seeds() -> list[bytes]:
    header = b'{"alg":"EdDSA","typ":"JWT"}'
    claims = _dumps({"iss": ISSUER, "aud": AUDIENCE, "iat": NOW - 10, "exp": NOW + 60, "sub": "x"})
    token = _signed(header, claims, ISSUER_KEY).encode()
    return [b"\x00" + token, b"\x01" + header + SEPARATOR + claims, b"\x02" + token]


# -- SD-JWT and KB-JWT ------------------------------------------------------------------------------------


@functools.cache
def _genuine_sd_jwt() -> tuple[str, bytes, list[bytes]]:
    """An issued SD-JWT bound to :data:`HOLDER_KEY`: (``<jwt>~<d>~...~``, issuer payload, disclosures)."""
    from mudrika.crypto import sdjwt

    issued = sdjwt.issue(
        {"iss": ISSUER, "iat": int(NOW) - 10, "exp": int(NOW) + 600, "given_name": "Ada", "n": [1, 2]},
        issuer_key=ISSUER_KEY,
        kid=None,
        disclosable=["/given_name", "/n/1"],
        holder_key=HOLDER_KEY.public_key,
    )
    presented = sdjwt.present(
        issued,
        disclose=["/given_name", "/n/1"],
        holder_key=None,
        aud=None,
        nonce=None,
        iat=None,
    )
    payload = base64.urlsafe_b64decode(issued.issuer_jwt.split(".")[1] + "==")
    disclosures = [base64.urlsafe_b64decode(d + "==") for d in presented.split("~")[1:-1]]
    return presented, payload, disclosures


def _sdjwt_verify(presentation: str | bytes) -> object:
    from mudrika.crypto import sdjwt

    return sdjwt.verify(
        presentation,
        issuer_key=TRUSTED_ISSUER,
        issuer=ISSUER,
        now=NOW,
        require_key_binding=True,
        expected_aud=AUDIENCE,
        expected_nonce=NONCE,
        kb_max_age=300,
        leeway=5,
    )


def _kb_header() -> bytes:
    return b'{"alg":"EdDSA","typ":"kb+jwt"}'


def _kb_claims(sd: str, extra: Mapping[str, Any] | None = None) -> bytes:
    from mudrika.crypto.sdjwt import digest_of

    claims = {"aud": AUDIENCE, "nonce": NONCE, "iat": int(NOW), "sd_hash": digest_of(sd), **(extra or {})}
    return _dumps(claims)


def _sdjwt(data: bytes) -> object:
    from mudrika.crypto.sdjwt import DEFAULT_TYP, digest_of

    mode, body = _mode(data, 3)
    if mode == 0:
        return _sdjwt_verify(body)
    payload, disclosures, kb_claims = split_pieces(body, 3)
    if mode == 2:
        # Fix-ups that get past the signature and key-binding gates, so the fuzzed claims and
        # Disclosures are what the verifier ends up processing.
        fixed = _json_object(payload)
        if fixed is not None:
            fixed["_sd_alg"] = "sha-256"
            fixed["cnf"] = {"jwk": HOLDER_KEY.public_key.to_jwk()}
            payload = _dumps(fixed)
    header = _dumps({"alg": "EdDSA", "typ": DEFAULT_TYP})
    sd = "~".join([_signed(header, payload, ISSUER_KEY), *(_b64(d) for d in disclosures.split(b"~"))]) + "~"
    if mode == 2:
        claims = _json_object(kb_claims)
        if claims is not None:
            claims["sd_hash"] = digest_of(sd)
            kb_claims = _dumps(claims)
    return _sdjwt_verify(sd + _signed(_kb_header(), kb_claims, HOLDER_KEY))


def _sdjwt_seeds() -> list[bytes]:
    presented, payload, disclosures = _genuine_sd_jwt()
    kb = _signed(_kb_header(), _kb_claims(presented), HOLDER_KEY)
    pieces = payload + SEPARATOR + b"~".join(disclosures) + SEPARATOR + _kb_claims(presented)
    return [b"\x00" + (presented + kb).encode(), b"\x01" + pieces, b"\x02" + pieces]


def _kb_jwt(data: bytes) -> object:
    from mudrika.crypto.sdjwt import digest_of

    mode, body = _mode(data, 3)
    presented = _genuine_sd_jwt()[0]
    if mode == 0:
        return _sdjwt_verify(presented + body.decode("latin-1"))
    header, claims = split_pieces(body, 2)
    if mode == 2:
        fixed = _json_object(claims)
        if fixed is not None:
            fixed["sd_hash"] = digest_of(presented)
            claims = _dumps(fixed)
    return _sdjwt_verify(presented + _signed(header, claims, HOLDER_KEY))


def _kb_jwt_seeds() -> list[bytes]:
    presented = _genuine_sd_jwt()[0]
    kb = _signed(_kb_header(), _kb_claims(presented), HOLDER_KEY)
    pieces = _kb_header() + SEPARATOR + _kb_claims(presented)
    return [b"\x00" + kb.encode(), b"\x01" + pieces, b"\x02" + pieces]


# -- RFC 8941 structured fields and RFC 9421 requests -----------------------------------------------------


def _structured_field(data: bytes) -> object:
    from mudrika.trust.httpsig._sf import parse_dictionary, serialize_dictionary

    mode, body = _mode(data, 2)
    field = ("signature-input", "signature")[mode]
    members = parse_dictionary(body.decode("latin-1"), field=field)
    # What we parsed we can write, and reading the writing gives the same members back.
    written = serialize_dictionary(members)
    again = parse_dictionary(written, field=field)
    if again != members:
        raise AssertionError("structured field does not survive serialize -> parse")
    return members


def _sf_seeds() -> list[bytes]:
    return [
        b'\x00sig1=("@method" "@target-uri" "content-digest");created=1800000000;keyid="did:key:z6Mk#z6Mk";'
        b'alg="ed25519";nonce="abc";expires=1800000300;tag="mudrika"',
        b"\x01sig1=:dGVzdA==:, sig2=:AAAA:;p=1.5;q=?0",
        b'\x00a=(1 2.25 -3 "s\\\\t" tok/en :YQ==: ?1);x, b=?0, c',
    ]


@functools.cache
def _httpsig_parts() -> tuple[Any, str, dict[str, str]]:
    from mudrika.trust.httpsig import HttpMessageSigner

    keyid = _did_key(SIGNER_KEY)[1]
    signer = HttpMessageSigner(SIGNER_KEY, keyid, clock=lambda: NOW)
    headers = {"Content-Type": "application/json"}
    signed = {**headers, **signer.sign("POST", URL, headers, b'{"id":1}').as_dict()}
    return signer, keyid, signed


def _httpsig(data: bytes) -> object:
    from mudrika.stores.replay import MemoryReplayStore
    from mudrika.trust.httpsig import REGISTERED_ALGORITHMS, HttpSignatureVerifier, StaticKeyLookup

    _, keyid, signed = _httpsig_parts()
    verifier = HttpSignatureVerifier(
        keys=StaticKeyLookup({keyid: SIGNER_KEY.public_key}),
        replay_store=MemoryReplayStore(clock=lambda: NOW),
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
        clock=lambda: NOW,
    )
    mode, body = _mode(data, 2)
    if mode == 0:
        signature_input, signature, digest, content = split_pieces(body, 4)
        headers = {
            "Content-Type": "application/json",
            "Signature-Input": signature_input.decode("latin-1"),
            "Signature": signature.decode("latin-1"),
            "Content-Digest": digest.decode("latin-1"),
        }
        return verifier.verify("POST", URL, headers, content)
    # A genuine signed request with one header replaced (or added) by the fuzzer.
    name, value, content = split_pieces(body, 3)
    headers = dict(signed)
    headers[name.decode("latin-1")] = value.decode("latin-1")
    return verifier.verify("POST", URL, headers, content or b'{"id":1}')


def _httpsig_seeds() -> list[bytes]:
    _, _, signed = _httpsig_parts()
    raw = SEPARATOR.join(
        [
            signed["Signature-Input"].encode(),
            signed["Signature"].encode(),
            signed["Content-Digest"].encode(),
            b'{"id":1}',
        ]
    )
    return [
        b"\x00" + raw,
        b"\x01Signature-Input" + SEPARATOR + signed["Signature-Input"].encode(),
        b"\x01X-Unsigned" + SEPARATOR + b"value" + SEPARATOR + b'{"id":1}',
    ]


# -- DIDs and DID documents ----------------------------------------------------------------------------------


def _did(data: bytes) -> object:
    from mudrika.identity import did as did_syntax
    from mudrika.identity.methods import bindu
    from mudrika.identity.methods import jwk as did_jwk
    from mudrika.identity.methods import key as did_key

    mode, body = _mode(data, 5)
    text = _text(body)
    if mode == 0:
        return did_syntax.parse_did_url(text)
    if mode == 1:
        return did_syntax.parse_did(text)
    if mode == 2:
        return did_key.document(text)
    if mode == 3:
        return did_jwk.document(text)
    return bindu.parse(text)


def _did_seeds() -> list[bytes]:
    from mudrika.identity.methods import bindu

    did, keyid = _did_key(SIGNER_KEY)
    jwk_did = "did:jwk:" + _b64(_dumps(SIGNER_KEY.public_key.to_jwk()))
    return [
        b"\x00" + keyid.encode(),
        b"\x00did:web:example.com%3A8443:user:alice/path?service=x&relativeRef=%2Fa#frag",
        b"\x01" + did.encode(),
        b"\x02" + did.encode(),
        b"\x03" + jwk_did.encode(),
        b"\x04" + bindu.create(SIGNER_KEY.public_key, author="ops@example.com", agent_name="agent").encode(),
    ]


def _did_document(data: bytes) -> object:
    from mudrika.identity.document import DIDDocument, Purpose

    mode, body = _mode(data, 3)
    document = DIDDocument.from_json(loads_strict(body))
    purposes: tuple[Purpose, ...] = ("authentication", "assertionMethod", "keyAgreement")
    for method in document.verification_methods or ():
        try:
            document.key_for(method.id, purposes[mode])
        except UntrustedKeyError:
            continue
    return document


def _did_document_seeds() -> list[bytes]:
    did, keyid = _did_key(SIGNER_KEY)
    document = {
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": did,
        "verificationMethod": [
            {"id": keyid, "type": "Multikey", "controller": did, "publicKeyMultibase": keyid.split("#")[1]},
            {
                "id": did + "#jwk",
                "type": "JsonWebKey2020",
                "controller": did,
                "publicKeyJwk": SIGNER_KEY.public_key.to_jwk(),
            },
        ],
        "authentication": [keyid],
        "assertionMethod": [keyid, did + "#jwk"],
        "service": [{"id": "#a2a", "type": "A2A", "serviceEndpoint": "https://agent.example/a2a"}],
    }
    return [bytes([mode]) + _dumps(document) for mode in range(3)]


# -- trust roots, evidence bundles, case files ---------------------------------------------------------------


def _trust_root(data: bytes) -> object:
    from mudrika.payments.trustroot import parse_trust_root

    mode, body = _mode(data, 2)
    return parse_trust_root(body if mode == 0 else _text(body))


def _trust_root_seeds() -> list[bytes]:
    return [b"\x00" + _read("evidence/trust-root.json"), b"\x01" + _read("ap2-v02/trust-root.json")]


def _bundle(data: bytes, trust_root: str) -> object:
    """Parse a bundle, verify it under the fixture trust root and render its report: the whole path
    ``mudrika dispute verify`` takes (through the function that raises, not the one that reports)."""
    from mudrika.payments.batch import Case, inspect_bundle_bytes
    from mudrika.payments.bundle import parse_bundle
    from mudrika.payments.chain import render_html, render_text
    from mudrika.payments.v02.bundle import parse_v02_bundle

    mode, body = _mode(data, 3)
    if mode == 0:
        return parse_bundle(body) if "evidence/" in trust_root else parse_v02_bundle(body)
    case = Case(name="fuzz", kb_nonce=NONCE) if "evidence/" in trust_root else Case(name="fuzz")
    inspected = inspect_bundle_bytes(body, trust_root=_read(trust_root), case=case)
    if mode == 1:
        json.dumps(inspected.report.to_dict(verbose=True))
        return render_text(inspected.report, title="fuzz", verbose=True)
    return render_html(inspected.report, title="fuzz", verbose=True)


def _bundle_v01(data: bytes) -> object:
    return _bundle(data, "evidence/trust-root.json")


def _bundle_v02(data: bytes) -> object:
    return _bundle(data, "ap2-v02/trust-root.json")


def _bundle_seeds(path: str) -> Callable[[], list[bytes]]:
    def seeds() -> list[bytes]:
        return [bytes([mode]) + _read(path) for mode in range(3)]

    return seeds


def _bundle_claims(data: bytes) -> object:
    """``mudrika dispute inspect``: a bundle of either format read for its claims (nothing verified),
    every token inside it decoded without a signature check, then the listing rendered as JSON."""
    from mudrika.payments.claims import bundle_claims

    return json.dumps(bundle_claims(data).to_dict())


def _bundle_claims_seeds() -> list[bytes]:
    return [_read("evidence/bundle.json"), _read("ap2-v02/bundle.json")]


def _cases(data: bytes) -> object:
    """The ``--cases`` reader's parsing: each JSON Lines line strictly parsed, then read as a case
    (``mudrika.cli.dispute`` reads the named bundle files after this; the fuzzer never opens files)."""
    from mudrika.payments.batch import parse_case

    cases = []
    for number, line in enumerate(data.splitlines(), 1):
        if line.strip():
            cases.append(parse_case(loads_strict(line), name=f"fuzz:{number}"))
    return cases


def _cases_seeds() -> list[bytes]:
    lines = [
        {"id": "a", "bundle": "b.json", "kb_nonce": NONCE, "merchant_audience": AUDIENCE},
        {
            "bundle": {"format": "mudrika.evidence/ap2-v0.2"},
            "checkout_hops": [{"aud": AUDIENCE, "nonce": NONCE}],
            "payment_hops": [{"aud": AUDIENCE, "nonce": NONCE}],
            "usage": {"occurrences": 1, "spent_minor": 1250, "currency": "EUR", "last_used_at": None},
        },
    ]
    return [b"\n".join(_dumps(line) for line in lines)]


# -- A2A: Agent Cards, mandates in DataParts, parts signatures ---------------------------------------------------


@functools.cache
def _card_verifier() -> Any:
    from mudrika.identity.resolver import DIDResolver
    from mudrika.trust.a2a.cards import AgentCardVerifier

    return AgentCardVerifier(
        resolver=DIDResolver.offline({}),
        trusted_dids=[_did_key(SIGNER_KEY)[0]],
        algorithms=["EdDSA"],
        accept_sdk_form=True,
    )


def _card(data: bytes) -> object:
    from mudrika.trust.a2a.cards import canonical_card, load_card, sign_card

    mode, body = _mode(data, 2)
    card = load_card(body)
    if mode == 1:
        # Sign the fuzzed card as received, then verify what a peer would receive: the canonical
        # forms of any card must round-trip through JSON and verify.
        canonical_card(card, form="a2a-sdk-1.3")
        signed = sign_card(card, SIGNER_KEY, kid=_did_key(SIGNER_KEY)[1])
        card = load_card(_dumps(signed))
    return _card_verifier().inspect(card)


def _card_seeds() -> list[bytes]:
    card = {
        "name": "Agent",
        "description": "d",
        "version": "1.0",
        "supportedInterfaces": [
            {"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": True, "extensions": [{"uri": "urn:x", "params": {"a": [1, ""]}}]},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": [],
        "skills": [{"id": "s", "name": "n", "description": "", "tags": ["t"]}],
    }
    from mudrika.trust.a2a.cards import sign_card

    signed = sign_card(card, SIGNER_KEY, kid=_did_key(SIGNER_KEY)[1])
    return [b"\x00" + _dumps(signed), b"\x01" + _dumps(card)]


def _a2a_mandates(data: bytes) -> object:
    from mudrika.payments.a2a import extract_mandates

    return extract_mandates(data)


def _a2a_mandates_seeds() -> list[bytes]:
    intent = json.loads(_read("ap2/intent_mandate.json"))
    message = {
        "messageId": "m",
        "role": "ROLE_USER",
        "parts": [
            {"data": {"ap2.mandates.IntentMandate": intent}, "mediaType": "application/json"},
            {"text": "hello"},
        ],
    }
    return [_dumps(message)]


def _parts(data: bytes) -> object:
    from mudrika.identity.resolver import DIDResolver
    from mudrika.trust.a2a.artifacts import PartsVerifier, sign_parts

    verifier = PartsVerifier(
        resolver=DIDResolver.offline({}),
        trusted_dids=[_did_key(SIGNER_KEY)[0]],
        algorithms=["EdDSA"],
        max_age=None,
        clock=lambda: NOW,
    )
    mode, body = _mode(data, 2)
    obj = loads_strict(body)
    if not isinstance(obj, dict):
        raise InvalidInput("not an object", code="fuzz_not_an_object")
    if mode == 1:
        obj = sign_parts(obj, SIGNER_KEY, kid=_did_key(SIGNER_KEY)[1], task_id="t", context_id="c", now=NOW)
    return verifier.verify(obj, task_id="t", context_id="c")


def _parts_seeds() -> list[bytes]:
    from mudrika.trust.a2a.artifacts import sign_parts

    artifact = {"artifactId": "a1", "parts": [{"text": "x"}, {"data": {"k": [1, 2]}}]}
    signed = sign_parts(
        artifact, SIGNER_KEY, kid=_did_key(SIGNER_KEY)[1], task_id="t", context_id="c", now=NOW
    )
    return [b"\x00" + _dumps(signed), b"\x01" + _dumps(artifact)]


# -- DPoP proofs ---------------------------------------------------------------------------------------------


def _dpop(data: bytes) -> object:
    from mudrika.stores.replay import MemoryReplayStore
    from mudrika.trust.keycloak.dpop import DPoPVerifier

    verifier = DPoPVerifier(
        algorithms={"EdDSA", "ES256"}, replay_store=MemoryReplayStore(16), public_origin=ORIGIN
    )
    mode, body = _mode(data, 3)
    if mode == 0:
        proof = body.decode("latin-1")
    else:
        header, payload = split_pieces(body, 2)
        if mode == 2:
            fixed = _json_object(header)
            if fixed is not None:
                fixed.update(typ="dpop+jwt", alg="EdDSA", jwk=HOLDER_KEY.public_key.to_jwk())
                header = _dumps(fixed)
        proof = _signed(header, payload, HOLDER_KEY)
    return verifier.check(
        proof,
        method="POST",
        htu=ORIGIN + "/tasks",
        access_token=ACCESS_TOKEN,
        claims={"cnf": {"jkt": HOLDER_KEY.public_key.thumbprint()}},
        now=NOW,
    )


def _dpop_seeds() -> list[bytes]:
    from mudrika.trust.keycloak.dpop import access_token_hash

    header = _dumps({"typ": "dpop+jwt", "alg": "EdDSA", "jwk": HOLDER_KEY.public_key.to_jwk()})
    payload = _dumps(
        {
            "jti": "j1",
            "htm": "POST",
            "htu": ORIGIN + "/tasks",
            "iat": int(NOW),
            "ath": access_token_hash(ACCESS_TOKEN),
        }
    )
    proof = _signed(header, payload, HOLDER_KEY)
    return [
        b"\x00" + proof.encode(),
        b"\x01" + header + SEPARATOR + payload,
        b"\x02" + header + SEPARATOR + payload,
    ]


# -- IETF Token Status List: the list and its token -------------------------------------------------------

STATUS_URI: Final = "https://issuer.example/statuslists/1"
#: The fuzzed lists are inflated to at most this many bytes (the cap itself is one of the rules).
_STATUS_MAX_BYTES: Final = 64 * 1024


def _exercise_list(status_list: Any) -> object:
    """Read what a verifier reads from a decoded list, and check it survives encode -> decode."""
    from mudrika.crypto.statuslist import StatusList

    counts = status_list.counts()
    last = status_list.get(status_list.size - 1)
    again = StatusList.decode(status_list.encode(), status_list.bits, max_bytes=_STATUS_MAX_BYTES)
    if again.to_bytes() != status_list.to_bytes():
        raise AssertionError("status list does not survive encode -> decode")
    return counts, last


def _status_list(data: bytes) -> object:
    import zlib

    from mudrika.crypto.statuslist import StatusList

    mode, body = _mode(data, 3)
    if mode == 0:
        # The JSON ``status_list`` object of a token, as received.
        return _exercise_list(StatusList.from_json(loads_strict(body), max_bytes=_STATUS_MAX_BYTES))
    bits = body[0] if body else 1
    if mode == 1:
        # ``lst`` text as received, with the width the first byte names.
        return _exercise_list(StatusList.decode(_text(body[1:]), bits, max_bytes=_STATUS_MAX_BYTES))
    # Any byte array, compressed here: the fuzzer reaches the width and size rules behind ZLIB.
    lst = _b64(zlib.compress(body[1:], 9))
    return _exercise_list(StatusList.decode(lst, bits, max_bytes=_STATUS_MAX_BYTES))


def _status_list_seeds() -> list[bytes]:
    from mudrika.crypto.statuslist import StatusList

    listed = StatusList(64, 2)
    listed.set(3, 1)
    listed.set(63, 2)
    draft = {"bits": 1, "lst": "eNrbuRgAAhcBXQ"}  # draft-ietf-oauth-status-list §4.2 example
    return [
        b"\x00" + _dumps(draft),
        b"\x00" + _dumps(listed.to_json()),
        b"\x01\x02" + listed.encode().encode(),
        b"\x02\x04" + bytes(range(16)),
    ]


def _status_token_header() -> bytes:
    from mudrika.crypto.statuslist import STATUS_LIST_TYP

    return _dumps({"alg": "EdDSA", "typ": STATUS_LIST_TYP})


def _verify_status_token(token: str | bytes) -> object:
    from mudrika.crypto.statuslist import verify_status_list_token

    verified = verify_status_list_token(
        token,
        key=TRUSTED_ISSUER,
        uri=STATUS_URI,
        issuer=ISSUER,
        now=NOW,
        max_age=3600,
        leeway=5,
        max_list_bytes=_STATUS_MAX_BYTES,
    )
    return verified.status_of(0), verified.status_of(verified.status_list.size - 1)


def _judge_recorded_status(body: bytes) -> object:
    """A dispute's judgement of the list recorded at the purchase and of a later list: the two
    tokens are attacker bytes (the bundle's author wrote one, anyone may hand the analyst the other)."""
    from mudrika.crypto.statuslist import status_claim
    from mudrika.identity.anchoring import KeyValidity
    from mudrika.payments.credential_status import (
        PinnedStatusKey,
        RecordedStatusList,
        judge_credential_status,
    )

    recorded, later = (piece.decode("utf-8", "replace") or "-" for piece in split_pieces(body, 2))
    # A bounded window, so every list that verifies is also judged by the key's pinned window.
    window = KeyValidity(valid_from=datetime.fromtimestamp(NOW - 30 * 86_400, UTC))
    judgement = judge_credential_status(
        {"iss": ISSUER, "status": status_claim(5, STATUS_URI)},
        [RecordedStatusList(uri=STATUS_URI, token=recorded, at="2027-01-15T08:00:00Z", via="fuzz")],
        key=lambda header: PinnedStatusKey(TRUSTED_ISSUER, window),
        issuer=ISSUER,
        purchase_time=NOW,
        max_age=3600,
        when_absent="failed",
        later=(later,),
    )
    return judgement.holds if judgement is not None else None


def _status_token(data: bytes) -> object:
    from mudrika.crypto.statuslist import read_status_reference

    mode, body = _mode(data, 5)
    if mode == 0:
        return _verify_status_token(body)
    if mode == 4:
        return _judge_recorded_status(body)
    if mode == 3:
        # A Referenced Token's claims: the ``status`` claim a verifier reads first (§8.3 step 1).
        claims = loads_strict(body)
        if not isinstance(claims, dict):
            raise InvalidInput("not an object", code="fuzz_not_an_object")
        return read_status_reference(claims)
    header, payload = split_pieces(body, 2)
    if mode == 2:
        # Fix-ups past the typ, sub and time gates, so the fuzzed status_list is what gets decoded.
        fixed = _json_object(payload)
        if fixed is not None:
            fixed.update(sub=STATUS_URI, iss=ISSUER, iat=int(NOW) - 10)
            payload = _dumps(fixed)
        header = _status_token_header()
    return _verify_status_token(_signed(header, payload, ISSUER_KEY))


def _status_token_seeds() -> list[bytes]:
    from mudrika.crypto.statuslist import StatusList, sign_status_list_token, status_claim

    listed = StatusList(32, 1)
    listed.set(5, 1)
    token = sign_status_list_token(
        listed, key=ISSUER_KEY, uri=STATUS_URI, iat=int(NOW) - 10, issuer=ISSUER, exp=int(NOW) + 600, ttl=300
    )
    payload = _dumps(
        {
            "sub": STATUS_URI,
            "iss": ISSUER,
            "iat": int(NOW) - 10,
            "exp": int(NOW) + 600,
            "status_list": listed.to_json(),
        }
    )
    referenced = _dumps({"iss": ISSUER, "status": status_claim(5, STATUS_URI)})
    return [
        b"\x00" + token.encode(),
        b"\x01" + _status_token_header() + SEPARATOR + payload,
        b"\x02" + _status_token_header() + SEPARATOR + payload,
        b"\x03" + referenced,
        b"\x04" + token.encode() + SEPARATOR + token.encode(),
    ]


# -- did:webvh logs ----------------------------------------------------------------------------------------------

WEBVH_DOMAIN: Final = "shop.example"
WEBVH_KEY: Final = _fixed_key(4)
WEBVH_NEXT_KEY: Final = _fixed_key(5)
WITNESS_KEY: Final = _fixed_key(6)


def _webvh_proof(entry: Mapping[str, Any], key: KeyPair, when: str) -> dict[str, Any]:
    from datetime import datetime

    from mudrika.crypto.dataintegrity import sign_eddsa_jcs_2022

    multikey = key.public_key.to_multikey()
    return sign_eddsa_jcs_2022(
        entry, key, verification_method=f"did:key:{multikey}#{multikey}", created=datetime.fromisoformat(when)
    )


def _webvh_chain(templates: list[Any], keys: list[KeyPair]) -> tuple[str, bytes]:
    """A log made from entry *templates* (``{SCID}`` placeholders, no ``versionId`` or ``proof``):
    the SCID derived from the first (§3.7.3), each ``versionId`` chained (§3.7.4), each entry signed
    by the key of its position.  Templates that are not objects go into the log as they are.
    Returns the SCID and the ``did.jsonl`` bytes."""
    from mudrika.crypto.jcs import canonicalize
    from mudrika.identity.methods.webvh import SCID_PLACEHOLDER, entry_hash
    from mudrika.identity.methods.webvh._log import _multihash_b58

    scid = SCID_PLACEHOLDER
    previous = ""
    lines: list[bytes] = []
    for number, template in enumerate(templates, start=1):
        if not isinstance(template, dict):
            lines.append(_dumps(template))
            continue
        entry = {name: value for name, value in template.items() if name != "proof"}
        if number == 1:
            entry["versionId"] = SCID_PLACEHOLDER
            scid = _multihash_b58(canonicalize(entry))
            previous = scid
        substituted = json.loads(
            _dumps(entry).decode("utf-8", "surrogatepass").replace(SCID_PLACEHOLDER, scid)
        )
        substituted["versionId"] = f"{number}-{entry_hash(substituted, previous)}"
        previous = substituted["versionId"]
        when = substituted.get("versionTime")
        moment = when if isinstance(when, str) and _iso_time(when) else "2025-03-01T12:00:00Z"
        substituted["proof"] = [_webvh_proof(substituted, keys[min(number, len(keys)) - 1], moment)]
        lines.append(_dumps(substituted))
    return scid, b"\n".join(lines) + b"\n"


def _iso_time(text: str) -> bool:
    from datetime import datetime

    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _webvh_templates(*, witnessed: bool) -> list[dict[str, Any]]:
    from mudrika.identity.methods.webvh import METHOD_VERSION, key_hash

    did = f"did:webvh:{{SCID}}:{WEBVH_DOMAIN}"
    current, following = WEBVH_KEY.public_key.to_multikey(), WEBVH_NEXT_KEY.public_key.to_multikey()

    def document(multikey: str) -> dict[str, Any]:
        return {
            "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
            "id": did,
            "verificationMethod": [
                {"id": f"{did}#key-1", "type": "Multikey", "controller": did, "publicKeyMultibase": multikey}
            ],
            "assertionMethod": [f"{did}#key-1"],
        }

    parameters: dict[str, Any] = {
        "method": METHOD_VERSION,
        "scid": "{SCID}",
        "updateKeys": [current],
        "nextKeyHashes": [key_hash(following)],
    }
    if witnessed:
        parameters["witness"] = {"threshold": 1, "witnesses": [{"id": _did_key(WITNESS_KEY)[0]}]}
    return [
        {"versionTime": "2025-03-01T12:00:00Z", "parameters": parameters, "state": document(current)},
        {
            "versionTime": "2025-03-31T12:00:00Z",
            "parameters": {"updateKeys": [following], "nextKeyHashes": []},
            "state": {**document(following), "alsoKnownAs": ["https://shop.example/"]},
        },
        {
            "versionTime": "2025-04-30T12:00:00Z",
            "parameters": {"deactivated": True},
            "state": document(following),
        },
    ]


_WEBVH_KEYS: Final = (WEBVH_KEY, WEBVH_NEXT_KEY, WEBVH_NEXT_KEY)


@functools.cache
def _genuine_webvh(witnessed: bool) -> tuple[str, bytes]:
    """(DID, did.jsonl) of a valid three-entry log with pre-rotation and a deactivation."""
    scid, log = _webvh_chain(_webvh_templates(witnessed=witnessed), list(_WEBVH_KEYS))
    return f"did:webvh:{scid}:{WEBVH_DOMAIN}", log


def _witness_file(log: bytes, version: int) -> bytes:
    version_id = json.loads(log.splitlines()[version - 1])["versionId"]
    proof = _webvh_proof({"versionId": version_id}, WITNESS_KEY, "2025-05-01T00:00:00Z")
    return _dumps([{"versionId": version_id, "proof": [proof]}])


def _webvh(data: bytes) -> object:
    from mudrika.identity.methods.webvh import parse_log, resolve_log, verify_log

    mode, body = _mode(data, 3)
    if mode == 0:
        # A did.jsonl as served, resolved for the genuine log's DID, then verified on its own.
        verify_log(parse_log(body))
        return resolve_log(_genuine_webvh(False)[0], body)
    if mode == 1:
        # Entry templates, one per line: chained and signed here, so every rule behind the entry
        # hash and the proofs sees the fuzzed parameters, times and states.
        templates = [_json_object(line) or _text(line) for line in body.splitlines() if line.strip()]
        scid, log = _webvh_chain(templates, list(_WEBVH_KEYS))
        return resolve_log(f"did:webvh:{scid}:{WEBVH_DOMAIN}", log)
    # A genuine witnessed log with a fuzzed did-witness.json.
    did, log = _genuine_webvh(True)
    return resolve_log(did, log, witness=body)


def _webvh_seeds() -> list[bytes]:
    log = _genuine_webvh(False)[1]
    witnessed = _genuine_webvh(True)[1]
    templates = b"\n".join(_dumps(template) for template in _webvh_templates(witnessed=False))
    return [b"\x00" + log, b"\x01" + templates, b"\x02" + _witness_file(witnessed, 3)]


# -- Web Bot Auth: Signature-Agent, profile rules, key directories -------------------------------------------

WEB_AGENT: Final = "https://crawler.example"
WEB_ORIGIN: Final = "https://merchant.example"
AGENT_KEY: Final = _fixed_key(7)


def _signature_agent_fields(body: bytes) -> tuple[str, str]:
    """A Signature-Input member (its first inner list is what the signature covers) and a
    Signature-Agent field value, the two pieces of the fuzzed input."""
    inputs, value = split_pieces(body, 2)
    return inputs.decode("latin-1"), value.decode("latin-1")


@functools.cache
def _web_signed() -> dict[str, str]:
    from mudrika.trust.httpsig import WebBotAuthSigner

    signer = WebBotAuthSigner(AGENT_KEY, signature_agent=WEB_AGENT, clock=lambda: NOW)
    return dict(signer.sign("GET", WEB_ORIGIN + "/products?page=2", {}).headers)


def _signature_agent(data: bytes) -> object:
    from mudrika.stores.replay import MemoryReplayStore
    from mudrika.trust.httpsig import (
        REGISTERED_ALGORITHMS,
        StaticDirectories,
        WebSignatureVerifier,
        agent_ref,
        parse_signature_agent,
    )
    from mudrika.trust.httpsig._sf import InnerList, parse_dictionary
    from mudrika.trust.httpsig._webprofile import (
        check_thumbprint_keyid,
        check_web_keyid,
        check_web_nonce,
        key_ref,
    )

    mode, body = _mode(data, 3)
    if mode == 0:
        # The member a signature covers, and the Signature-Agent field it names.
        inputs_text, value = _signature_agent_fields(body)
        inputs = parse_dictionary(inputs_text, field="signature-input")
        covered = next((member for member in inputs.values() if isinstance(member, InnerList)), None)
        if covered is None:
            raise InvalidInput("no inner list", code="fuzz_no_inner_list")
        return parse_signature_agent(value, covered)
    if mode == 1:
        # The profile rules on their own: an agent URL of a type, keyids and nonces.
        text, agent_type = split_pieces(body, 2)
        url = _text(text)
        results: list[object] = []
        for check in (check_thumbprint_keyid, check_web_keyid, check_web_nonce, key_ref):
            try:
                results.append(check(url))
            except InvalidInput:
                continue
        if agent_type or url.startswith("https:"):
            results.append(agent_ref(url, _text(agent_type) or "directory"))
        return results
    # A genuine Web Bot Auth request with one header replaced (or added) by the fuzzer.
    verifier = WebSignatureVerifier(
        agents=StaticDirectories({WEB_AGENT: {"keys": [AGENT_KEY.public_key.to_jwk()]}}),
        tap_registry=None,
        tap_keys=None,
        replay_store=MemoryReplayStore(clock=lambda: NOW),
        origins=[WEB_ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
        max_age=60,
        clock=lambda: NOW,
    )
    field_name, field_value = split_pieces(body, 2)
    headers = dict(_web_signed())
    headers[field_name.decode("latin-1")] = field_value.decode("latin-1")
    return verifier.verify("GET", WEB_ORIGIN + "/products?page=2", headers, b"")


def _signature_agent_seeds() -> list[bytes]:
    signed = _web_signed()
    return [
        b"\x00" + signed["Signature-Input"].encode() + SEPARATOR + signed["Signature-Agent"].encode(),
        b'\x00sig1=("@authority" "signature-agent");tag="web-bot-auth"' + SEPARATOR + b'"https://a.example"',
        b"\x01https://registry.example:8443/jwks?x=1" + SEPARATOR + b"jwks_uri",
        b"\x01" + AGENT_KEY.public_key.thumbprint().encode(),
        b"\x02Signature-Agent" + SEPARATOR + signed["Signature-Agent"].encode(),
        b"\x02Signature-Input" + SEPARATOR + signed["Signature-Input"].encode(),
    ]


_DIRECTORY_AUTHORITY: Final = "crawler.example"


def _verify_directory(headers: Mapping[str, str], body: bytes) -> object:
    from mudrika.trust.httpsig import REGISTERED_ALGORITHMS, agent_ref, verify_directory_response

    return verify_directory_response(
        agent_ref(WEB_AGENT),
        headers,
        body,
        algorithms=REGISTERED_ALGORITHMS,
        require_signatures=True,
        now=NOW,
    )


def _sign_directory(body: bytes) -> dict[str, str]:
    from mudrika.trust.httpsig import sign_directory_response

    return sign_directory_response(
        [AGENT_KEY], body, authority=_DIRECTORY_AUTHORITY, created=int(NOW) - 10, expires=int(NOW) + 300
    )


@functools.cache
def _genuine_directory() -> tuple[bytes, dict[str, str]]:
    from mudrika.trust.httpsig import directory_document

    body = directory_document([AGENT_KEY.public_key, SIGNER_KEY.public_key])
    return body, _sign_directory(body)


def _directory(data: bytes) -> object:
    mode, body = _mode(data, 4)
    if mode == 3:
        # The response's caching headers, one ``Name: value`` per line (RFC 9111 freshness).
        import httpx

        from mudrika.trust.httpsig._directory import cache_lifetime

        lines = [line.partition(b":") for line in body.split(b"\n")]
        cache_headers = httpx.Headers(
            [(name.strip(), value.strip()) for name, _, value in lines if name.strip()]
        )
        return cache_lifetime(cache_headers, now=NOW, default_ttl=300.0, max_cache_age=86400.0)
    if mode == 0:
        # A directory body as served, under the genuine response's headers.
        return _verify_directory(_genuine_directory()[1], body)
    if mode == 1:
        # A fuzzed JWK Set whose possession proof by the agent key is genuine: the key-set rules.
        return _verify_directory(_sign_directory(body), body)
    # The genuine body with fuzzed Signature-Input, Signature and Content-Digest fields.
    signature_input, signature, digest = split_pieces(body, 3)
    headers = {
        "Signature-Input": signature_input.decode("latin-1"),
        "Signature": signature.decode("latin-1"),
        "Content-Digest": digest.decode("latin-1"),
    }
    return _verify_directory(headers, _genuine_directory()[0])


def _directory_seeds() -> list[bytes]:
    body, headers = _genuine_directory()
    fields = SEPARATOR.join(
        headers[name].encode() for name in ("Signature-Input", "Signature", "Content-Digest")
    )
    caching = b"Cache-Control: public, max-age=600\nAge: 30\nDate: Thu, 01 Jan 2026 00:00:00 GMT"
    return [b"\x00" + body, b"\x01" + body, b"\x02" + fields, b"\x03" + caching]


# -- a JSON-RPC request body, as the middleware's protocols read it --------------------------------------


def _jsonrpc_body(data: bytes) -> object:
    """The gate's strict body parser, the ids a refusal would echo, and MCP's operation for each call
    (a tool or prompt by name, the method, its families): what every protected request's body meets."""
    _, body = _mode(data, 1)
    document = parse_json(body)
    ids_for_echo(body)
    calls = document if isinstance(document, list) else [document]
    operations = []
    for call in calls:
        if isinstance(call, dict) and isinstance(call.get("method"), str):
            operations.append(operation_for_call(call["method"], call.get("params")))
    return operations


def _jsonrpc_body_seeds() -> list[bytes]:
    return [
        b"\x00" + body
        for body in (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"refund","arguments":{"x":1}}}',
            b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}',
            b'[{"jsonrpc":"2.0","id":"a","method":"SendMessage","params":{"tenant":"acme"}},{"id":2}]',
            b'{"jsonrpc":"2.0","id":3,"result":{"content":[]}}',
        )
    ]


# -- the table ------------------------------------------------------------------------------------------------

_INPUT: Final = (InvalidInput,)
_CHECKED: Final = (InvalidInput, VerificationError)

TARGETS: Final[tuple[Target, ...]] = (
    Target(
        "jsonrpc_body",
        ("mudrika.trust.middleware._gate", "mudrika.trust.mcp.methods"),
        _jsonrpc_body,
        _INPUT,
        1,
        "json",
        _jsonrpc_body_seeds,
    ),
    Target(
        "jcs",
        ("mudrika.crypto.jcs._parse", "mudrika.crypto.jcs._serialize"),
        _jcs,
        _INPUT,
        4,
        "json",
        _jcs_seeds,
    ),
    Target("jws_compact", ("mudrika.crypto.jose",), _jose, _CHECKED, 3, "compact", _jose_seeds),
    Target(
        "sd_jwt",
        (
            "mudrika.crypto.sdjwt._presentation",
            "mudrika.crypto.sdjwt._disclosure",
            "mudrika.crypto.sdjwt._process",
        ),
        _sdjwt,
        _CHECKED,
        3,
        "sd_jwt",
        _sdjwt_seeds,
    ),
    Target("kb_jwt", ("mudrika.crypto.sdjwt._kb",), _kb_jwt, _CHECKED, 3, "compact", _kb_jwt_seeds),
    Target(
        "structured_field",
        ("mudrika.trust.httpsig._sf",),
        _structured_field,
        _INPUT,
        2,
        "structured_field",
        _sf_seeds,
    ),
    Target(
        "httpsig_request",
        (
            "mudrika.trust.httpsig._verify",
            "mudrika.trust.httpsig._components",
            "mudrika.trust.httpsig._digest",
            "mudrika.trust.httpsig._profile",
        ),
        _httpsig,
        _CHECKED,
        2,
        "http",
        _httpsig_seeds,
    ),
    Target(
        "did",
        (
            "mudrika.identity.did",
            "mudrika.identity.methods.key",
            "mudrika.identity.methods.jwk",
            "mudrika.identity.methods.bindu",
        ),
        _did,
        _INPUT,
        5,
        "did",
        _did_seeds,
    ),
    Target(
        "did_document",
        ("mudrika.identity.document",),
        _did_document,
        (InvalidInput, UntrustedKeyError),
        3,
        "json",
        _did_document_seeds,
    ),
    Target(
        "trust_root",
        ("mudrika.payments.trustroot._model",),
        _trust_root,
        _INPUT,
        2,
        "json",
        _trust_root_seeds,
    ),
    Target(
        "bundle_v01",
        (
            "mudrika.payments.bundle",
            "mudrika.payments.models",
            "mudrika.payments.chain._jws",
            "mudrika.payments.chain._payment",
            "mudrika.payments._time",
            "mudrika.payments._values",
        ),
        _bundle_v01,
        _INPUT,
        3,
        "json",
        _bundle_seeds("evidence/bundle.json"),
    ),
    Target(
        "bundle_v02",
        (
            "mudrika.payments.v02.bundle",
            "mudrika.payments.v02.models",
            "mudrika.payments.v02.wire",
            "mudrika.payments.v02.hops",
            "mudrika.payments.v02.bindings",
            "mudrika.payments.v02.receipts",
            "mudrika.payments.v02._x5c",
        ),
        _bundle_v02,
        _INPUT,
        3,
        "json",
        _bundle_seeds("ap2-v02/bundle.json"),
    ),
    Target(
        "bundle_claims", ("mudrika.payments.claims",), _bundle_claims, _INPUT, 1, "json", _bundle_claims_seeds
    ),
    Target("cases", ("mudrika.payments.batch",), _cases, _INPUT, 1, "lines", _cases_seeds),
    Target("agent_card", ("mudrika.trust.a2a.cards",), _card, _CHECKED, 2, "json", _card_seeds),
    Target("a2a_mandates", ("mudrika.payments.a2a",), _a2a_mandates, _INPUT, 1, "json", _a2a_mandates_seeds),
    Target("a2a_parts", ("mudrika.trust.a2a.artifacts",), _parts, _CHECKED, 2, "json", _parts_seeds),
    Target("dpop_proof", ("mudrika.trust.keycloak.dpop",), _dpop, _CHECKED, 3, "compact", _dpop_seeds),
    Target(
        "status_list",
        ("mudrika.crypto.statuslist._list",),
        _status_list,
        _INPUT,
        3,
        "json",
        _status_list_seeds,
    ),
    Target(
        "status_list_token",
        ("mudrika.crypto.statuslist._token", "mudrika.payments.credential_status"),
        _status_token,
        _CHECKED,
        5,
        "compact",
        _status_token_seeds,
    ),
    Target("webvh_log", ("mudrika.identity.methods.webvh._log",), _webvh, _CHECKED, 3, "lines", _webvh_seeds),
    Target(
        "signature_agent",
        ("mudrika.trust.httpsig._webprofile",),
        _signature_agent,
        _CHECKED,
        3,
        "structured_field",
        _signature_agent_seeds,
    ),
    Target(
        "key_directory",
        ("mudrika.trust.httpsig._directory",),
        _directory,
        _CHECKED,
        4,
        "json",
        _directory_seeds,
    ),
)

#: Every module that parses attacker input: each must be driven by a row of :data:`TARGETS`.
PARSER_MODULES: Final = frozenset(module for target in TARGETS for module in target.modules)

#: Modules that read structured input but are not attacker-facing parsers of their own, and why.
#: The test over the source tree fails on a module that reads input and is in neither set.
EXEMPT_MODULES: Final[Mapping[str, str]] = {
    "mudrika.cli.httpsig": "request files the operator names (loads_strict, row jcs); verifying delegates to rows httpsig_request and signature_agent",
    "mudrika.cli.status_list": "the operator's own list files; credentials and tokens go to rows status_list and status_list_token",
    "mudrika.identity.provision": "the operator's own provisioning directory (the identity.json it wrote)",
    "mudrika.crypto.jcs": "re-exports loads_strict (row jcs)",
    "mudrika.crypto.keystore": "the operator's own encrypted key files, read with their password",
    "mudrika.crypto.sdjwt._pointer": "RFC 6901 pointers the issuer names when issuing, never received",
    "mudrika.identity.methods.web": "did:web documents go through DIDDocument.from_json (row did_document)",
    "mudrika.identity.resolution": "resolution metadata built by our own drivers",
    "mudrika.identity.resolver._didkit": "didkit's answers, parsed with DIDDocument.from_json (row did_document)",
    "mudrika.net.limits": "size-capped reads only; the bytes go to the parsers in the table",
    "mudrika.trust.levels": "operator configuration (trust level names)",
    "mudrika.trust.policy._realm": "the operator's Keycloak realm export",
    "mudrika.trust.keycloak.adapters": "python-keycloak answers from the configured IdP, and its realm export",
    "mudrika.trust.middleware._http": "reads an ASGI body up to its cap; the body goes to loads_strict (row jcs)",
    "mudrika.trust.keycloak.jwks": "the configured IdP's JWKS over the egress policy (keys via PublicKey.from_jwk)",
    "mudrika.cli._common": "reads files the analyst names; their bytes go to the parsers in the table",
    "mudrika.cli._demo._v02": "the demo's own transaction",
    "mudrika.cli._keycheck": "DID document files, parsed with DIDDocument.from_json (row did_document)",
    "mudrika.cli._mandates": "mandate files, parsed by payments.models (row bundle_v01)",
    "mudrika.cli.dispute": "case files: the strict parser and parse_case (row cases); bundles (rows bundle_*)",
    "mudrika.cli.jcs": "mudrika jcs: loads_strict (row jcs)",
    "mudrika.cli.mandate": "mandate files, parsed by payments.models (row bundle_v01)",
    "mudrika.cli.mandate_v02": "v0.2 chains, parsed by payments.v02 (row bundle_v02)",
    "mudrika.cli.dev": "the issuer.json the development issuer wrote itself; its loopback token endpoint hands a capped form body to the standard library's parse_qs",
}


def by_name(name: str) -> Target:
    """The row called ``name`` (the atheris harnesses pick their target this way)."""
    for target in TARGETS:
        if target.name == name:
            return target
    raise KeyError(name)
