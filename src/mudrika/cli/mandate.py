"""``mudrika mandate``: sign AP2 v0.1 intent, cart and payment mandates, and verify a chain.

Why in the CLI: merchants and wallet developers need to produce and check mandates from scripts
(and a support engineer needs to see *which* binding of a chain failed) without writing code.
Every command reads JSON strictly (the same parser as the verifier), prints one JSON document on
stdout, and reads private keys only through ``--key`` plus ``--password-env``/``--password-file``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mudrika.cli._common import (
    at_option,
    audience_options,
    did_documents_option,
    emit_document,
    json_option,
    kb_nonce_option,
    load_signing_key,
    now_option,
    output_file_options,
    password_options,
    report_verbose_option,
    split_pairs,
    trust_root_option,
)
from mudrika.cli._keycheck import algorithm_for, check_key_matches, did_documents
from mudrika.cli._mandates import (
    finish_report,
    read_source,
    replay_db_option,
    replay_store,
    report_options,
    signer_key_option,
    signing_time,
)
from mudrika.cli.dispute import parse_time_option
from mudrika.cli.mandate_v02 import v02_group
from mudrika.crypto.jcs import loads_strict
from mudrika.errors import InvalidInput
from mudrika.payments.profile import MERCHANT_ALGORITHMS

if TYPE_CHECKING:
    from mudrika.crypto.keys import KeyPair

# Signing and verification (pydantic models, cryptography, the resolver) are imported inside the
# commands, so that `mudrika mandate --help` starts without them.

__all__ = ["mandate_group"]

_F = TypeVar("_F", bound=Callable[..., Any])
_MAX_TOKEN_FILE = 64 * 1024


def _json_file(source: str) -> Any:
    return loads_strict(read_source(source))


def _contents(source: str, what: str) -> dict[str, Any]:
    """The contents object a signer signs (``what`` names it in the refusal): a JSON object, nothing else."""
    contents = _json_file(source)
    if not isinstance(contents, dict):
        raise InvalidInput(f"{what} must be a JSON object", code="not_an_object")
    return contents


#: --json on a command whose result is a JSON document anyway: accepted so every command takes it,
#: and it switches failures to a JSON error document too.
_JSON_ALREADY = "The result is one JSON document already; --json also reports failures as JSON."


def _signing_options(func: _F) -> _F:
    func = output_file_options("the signed mandate")(func)
    func = json_option(help_text=_JSON_ALREADY)(func)
    func = password_options(func)
    func = now_option("Signing time (ISO 8601 with offset). Default: the current time.")(func)
    func = signer_key_option(func)
    return click.argument("source", metavar="FILE|-", default="-")(func)


#: ``--did-document`` of the sign commands: the signer's own document, read to check --key before signing.
_signer_did_document_option = did_documents_option(
    "The signer's DID document, to check --key against --kid offline (needed for DIDs other "
    "than did:key / did:jwk); repeatable."
)


def _documents(files: tuple[str, ...]) -> dict[str, Any]:
    return did_documents(files, _json_file)


def _credential_holder_matches(credential: str, pair: KeyPair) -> None:
    """Refuse a --key that is not the credential's cnf key (read, not verified: this is our own input)."""
    from mudrika.crypto.b64url import b64url_decode
    from mudrika.crypto.sdjwt import holder_key_from_cnf, parse
    from mudrika.errors import MudrikaError

    parsed = parse(credential)  # three base64url segments, or refused
    try:
        payload = loads_strict(b64url_decode(parsed.issuer_jwt.split(".")[1]))
        if not isinstance(payload, dict):
            raise InvalidInput("the credential's payload is not an object", code="bad_cnf")
        holder = holder_key_from_cnf(payload).key
    except MudrikaError:
        raise InvalidInput("the credential names no usable holder key (cnf.jwk)", code="bad_cnf") from None
    if holder != pair.public_key:
        raise InvalidInput(
            "the key given with --key is not the credential's holder key (cnf.jwk): sign with the "
            "private key the credential was issued to",
            code="key_mismatch",
            expected_thumbprint=holder.thumbprint(),
            got_thumbprint=pair.public_key.thumbprint(),
        )


@click.group("mandate")
def mandate_group() -> None:
    """Sign and verify AP2 v0.1 mandates (intent -> cart -> payment).

    \b
    sign-intent   the user signs an IntentMandate (user_authorization, a mudrika extension)
    sign-cart     the merchant signs CartContents into a CartMandate (merchant_authorization)
    sign-payment  the user authorises PaymentMandateContents (SD-JWT VC + key-binding JWT)
    verify        verify a chain (three mandate files, or one evidence bundle) and print the report
    v02           AP2 v0.2 delegate SD-JWT chains: issue-open, present, sign-checkout, sign-receipt, verify
    """


mandate_group.add_command(v02_group)


@mandate_group.command("sign-intent")
@_signing_options
@click.option(
    "--kid", required=True, help="DID URL of the user's key (e.g. did:key:z...#z...); its DID is 'iss'."
)
@_signer_did_document_option
def sign_intent_command(
    source: str,
    key_uri: str,
    now_text: str | None,
    kid: str,
    did_document_files: tuple[str, ...],
    password_env: str | None,
    password_file: Path | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Sign the IntentMandate in FILE ('-': stdin) as the user; print it with user_authorization.

    The user signs intent_hash = H(the intent without user_authorization) in a compact JWS
    (typ ap2-intent+jwt). An unsigned intent must keep user_cart_confirmation_required=true.
    --key must be the key --kid names (checked offline before signing).
    """
    from mudrika.payments.models import receive_intent
    from mudrika.payments.signing import sign_intent

    intent = receive_intent(read_source(source))
    documents = _documents(did_document_files)
    now = signing_time(now_text)
    pair = load_signing_key(key_uri, password_env, password_file)
    check_key_matches(pair, kid=kid, documents=documents)
    signed = sign_intent(
        intent, pair, kid=kid, now=now, alg=algorithm_for(pair, None, allowed=MERCHANT_ALGORITHMS)
    )
    emit_document(signed.plain(), out_path, force=force)


@mandate_group.command("sign-cart")
@_signing_options
@click.option("--merchant-did", required=True, help="The merchant's DID (the 'iss' of the cart JWT).")
@click.option(
    "--kid", required=True, help="DID URL of the merchant's signing key (a method of --merchant-did)."
)
@click.option("--aud", required=True, help="Audience of the cart JWT (who will verify it).")
@click.option(
    "--ttl", type=click.IntRange(1, 900), default=900, show_default=True, help="Lifetime in seconds (<= 900)."
)
@click.option("--jti", help="JWT id (default: 128 random bits).")
@click.option(
    "--alg",
    type=click.Choice(sorted(MERCHANT_ALGORITHMS)),
    help="Signature algorithm. Default: the key's (ES256 for P-256, EdDSA for Ed25519, ES256K for secp256k1).",
)
@_signer_did_document_option
def sign_cart_command(
    source: str,
    key_uri: str,
    now_text: str | None,
    merchant_did: str,
    kid: str,
    aud: str,
    ttl: int,
    jti: str | None,
    alg: str | None,
    did_document_files: tuple[str, ...],
    password_env: str | None,
    password_file: Path | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Sign the CartContents in FILE ('-': stdin) as the merchant; print the CartMandate.

    merchant_authorization is a compact JWS with iss, sub (cart id), aud, iat, exp, jti and
    cart_hash = H(CartContents) over the exact JSON object read from FILE. --key must be the key
    --kid names (did:web and other methods: give the DID document with --did-document).
    """
    from mudrika.payments.signing import sign_cart

    contents = _contents(source, "CartContents")
    documents = _documents(did_document_files)
    now = signing_time(now_text)
    pair = load_signing_key(key_uri, password_env, password_file)
    check_key_matches(pair, kid=kid, documents=documents)
    cart = sign_cart(
        contents,
        pair,
        merchant_did=merchant_did,
        kid=kid,
        aud=aud,
        now=now,
        ttl=ttl,
        jti=jti,
        alg=algorithm_for(pair, alg, allowed=MERCHANT_ALGORITHMS),
    )
    emit_document(cart.plain(), out_path, force=force)


@mandate_group.command("sign-payment")
@_signing_options
@click.option("--cart", "cart_file", required=True, help="The signed CartMandate (JSON) being paid.")
@click.option(
    "--intent",
    "intent_file",
    required=True,
    help="The IntentMandate (JSON, signed or not) this payment fulfils; H(IntentMandate) is signed too.",
)
@click.option(
    "--credential",
    "credential_file",
    required=True,
    help="File holding the user's SD-JWT VC (compact form, as issued: <jwt>~<disclosure>~...~).",
)
@click.option(
    "--aud", required=True, help="Audience of the key-binding JWT (the verifier that sent the nonce)."
)
@click.option("--nonce", required=True, help="The verifier's nonce for this payment.")
@click.option(
    "--disclose", multiple=True, metavar="PATH", help="Disclose this credential claim (repeatable)."
)
def sign_payment_command(
    source: str,
    key_uri: str,
    now_text: str | None,
    cart_file: str,
    intent_file: str,
    credential_file: str,
    aud: str,
    nonce: str,
    disclose: tuple[str, ...],
    password_env: str | None,
    password_file: Path | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Authorise the PaymentMandateContents in FILE ('-': stdin) as the user; print the PaymentMandate.

    user_authorization = the credential + a key-binding JWT (typ kb+jwt, aud, nonce, iat, sd_hash,
    transaction_data = [H(CartMandate), H(PaymentMandateContents), H(IntentMandate)]) signed with
    --key, which must be the key in the credential's cnf.jwk.
    """
    from mudrika.payments.models import receive_cart, receive_intent
    from mudrika.payments.signing import sign_payment

    contents = _contents(source, "PaymentMandateContents")
    cart = receive_cart(read_source(cart_file))
    intent = receive_intent(read_source(intent_file))
    try:
        credential = read_source(credential_file, max_bytes=_MAX_TOKEN_FILE).decode("ascii").strip()
    except UnicodeDecodeError:
        raise InvalidInput("the credential file is not ASCII", code="malformed_sd_jwt") from None
    now = signing_time(now_text)
    pair = load_signing_key(key_uri, password_env, password_file)
    _credential_holder_matches(credential, pair)
    payment = sign_payment(
        contents,
        credential=credential,
        user_key=pair,
        cart=cart,
        intent=intent,
        aud=aud,
        nonce=nonce,
        now=now,
        disclose=disclose,
    )
    emit_document(payment.plain(), out_path, force=force)


def _jwks_option(values: tuple[str, ...]) -> dict[str, Any]:
    return {
        issuer: _json_file(path) for issuer, path in split_pairs(values, option="--jwks", form="ISSUER=FILE")
    }


@mandate_group.command("verify")
@click.argument("files", metavar="FILE...", nargs=-1, required=True)
@trust_root_option(
    "Your trust root (mudrika.trust-root/v1): issuers and their keys, pinned merchants, "
    "algorithms, credential types, leeway, maximum ages. Required for three mandate files."
)
@audience_options(
    merchant="The 'aud' the merchant's cart JWT must carry (else the trust root's).",
    kb="The 'aud' the user's key-binding JWT must carry (else the trust root's).",
)
@kb_nonce_option("The nonce you issued for this payment.")
@did_documents_option(
    "Use this DID document (repeatable). With any, keys come only from the given material "
    "(plus did:key / did:jwk): no network."
)
@click.option("--jwks", multiple=True, metavar="ISSUER=FILE", help="An issuer's JWK Set (repeatable).")
@click.option(
    "--offline", is_flag=True, help="Never touch the network (did:key, did:jwk and given files only)."
)
@at_option("Evaluate at this ISO 8601 time. Default: now (bundle: its evidence_time).")
@replay_db_option("SQLite replay store that remembers used jti/nonces across runs (default: this run only).")
@report_options
@report_verbose_option("List the passed checks too.")
def verify_command(
    files: tuple[str, ...],
    trust_root_path: Path | None,
    merchant_aud: str | None,
    kb_aud: str | None,
    kb_nonce: str | None,
    did_document_files: tuple[str, ...],
    jwks: tuple[str, ...],
    offline: bool,
    at_text: str | None,
    replay_db: Path | None,
    as_json: bool,
    html_path: Path | None,
    verbose: bool,
) -> int:
    """Verify a chain: FILE... is INTENT CART PAYMENT (three mandate files), or one evidence bundle.

    With three files, --trust-root and --kb-nonce are required, and the audiences come from
    --merchant-aud / --kb-aud or the trust root: nothing is trusted by omission. --did-document and
    --jwks are evidence: a key only they vouch for leaves the verdict UNANCHORED. With a bundle, its
    key material is used offline, at --at or its evidence_time (like `mudrika dispute verify`).
    The table of checks and the keys the verdict rests on go to stderr. Exit 0 when the verdict is
    OK, 1 when a check failed or the verdict is UNANCHORED, 2 for malformed input or usage.
    """
    from mudrika.identity.resolver import DIDResolver
    from mudrika.payments.bundle import inspect_bundle, load_bundle
    from mudrika.payments.chain import KeyMaterial, inspect_chain
    from mudrika.payments.trustroot import load_trust_root

    at = parse_time_option(at_text)
    trust_root = load_trust_root(trust_root_path) if trust_root_path is not None else None
    if len(files) == 1:
        report = inspect_bundle(
            load_bundle(files[0]),
            trust_root=trust_root,
            at=at,
            merchant_audience=merchant_aud,
            kb_audience=kb_aud,
            kb_nonce=kb_nonce,
        )
        return finish_report(
            report, title=f"AP2 chain — {files[0]}", as_json=as_json, html_path=html_path, verbose=verbose
        )
    if len(files) != 3:
        raise click.UsageError("give three files (INTENT CART PAYMENT) or one evidence bundle")
    identity = trust_root.verifier if trust_root is not None else None
    merchant_aud = merchant_aud or (identity.merchant_audience if identity else None)
    kb_aud = kb_aud or (identity.kb_audience if identity else None)
    if trust_root is None or not merchant_aud or not kb_aud or not kb_nonce:
        missing = [
            name
            for name, value in (
                ("--trust-root", trust_root),
                ("--merchant-aud (or the trust root's verifier.merchant_audience)", merchant_aud),
                ("--kb-aud (or the trust root's verifier.kb_audience)", kb_aud),
                ("--kb-nonce", kb_nonce),
            )
            if not value
        ]
        raise click.UsageError("verifying three mandates needs " + ", ".join(missing))
    documents = did_documents(did_document_files, _json_file)
    issuer_keys = _jwks_option(jwks)
    if offline or documents:
        keys = KeyMaterial.offline_snapshot(documents, jwks=issuer_keys)
    else:
        keys = KeyMaterial(DIDResolver(), jwks=issuer_keys)
    with replay_store(replay_db) as store:
        report = inspect_chain(
            read_source(files[0]),
            read_source(files[1]),
            read_source(files[2]),
            trust_root=trust_root,
            keys=keys,
            merchant_audience=merchant_aud,
            kb_audience=kb_aud,
            kb_nonce=kb_nonce,
            now=at or datetime.now(UTC),
            replay_store=store,
        )
    return finish_report(
        report, title="AP2 chain verification", as_json=as_json, html_path=html_path, verbose=verbose
    )
