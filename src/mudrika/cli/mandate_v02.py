"""``mudrika mandate v02``: issue, delegate, sign and verify AP2 v0.2 mandates (delegate SD-JWT chains).

Why a group of its own under ``mandate``: v0.2 has no intent/cart/payment objects but open and
closed mandates joined by key-binding hops, a merchant-signed checkout JWT and receipts, so its
verbs differ from v0.1's.  Every command reads JSON strictly, prints one JSON document on stdout,
reads private keys only through ``--key`` plus ``--password-env``/``--password-file``, and imports
the payments code inside the command (``--help`` stays fast).

Commands: ``issue-open`` (an issuer signs an open mandate: the root SD-JWT), ``present`` (a
delegate appends a hop), ``sign-checkout`` (a merchant signs a UCP Checkout), ``sign-receipt`` and
``verify`` (chains and receipts, or a v0.2 evidence bundle, against a trust root).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import click

from mudrika.cli._common import (
    at_option,
    emit_document,
    json_option,
    load_signing_key,
    now_option,
    output_file_options,
    password_options,
    split_pairs,
    status_options,
    status_reference,
    status_token_text,
    trust_root_option,
    v02_anchor_options,
    v02_anchors,
)
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
from mudrika.crypto.jcs import loads_strict
from mudrika.errors import InvalidInput

if TYPE_CHECKING:
    pass

__all__ = ["v02_group"]

_MAX_CHAIN_FILE = 512 * 1024


def _json(source: str) -> Any:
    value = loads_strict(read_source(source))
    if not isinstance(value, dict):
        raise InvalidInput(f"{source} is not a JSON object", code="not_an_object")
    return value


#: The members the commands' own JSON outputs carry a token in: ``issue-open`` writes ``sd_jwt``,
#: ``present`` writes ``chain``, ``sign-receipt`` writes ``receipt``.
_TOKEN_MEMBERS: Final = ("chain", "sd_jwt", "receipt")


def _token(source: str) -> str:
    """A compact token or chain from a file: the bare token, or the JSON document one of these
    commands wrote (its ``chain``, ``sd_jwt`` or ``receipt``), so each command's output is the next
    one's input.  ASCII, surrounding whitespace removed."""
    data = read_source(source, max_bytes=_MAX_CHAIN_FILE)
    if data.lstrip().startswith(b"{"):
        document = loads_strict(data)
        found = (
            [document[name] for name in _TOKEN_MEMBERS if isinstance(document.get(name), str)]
            if isinstance(document, dict)
            else []
        )
        if len(found) != 1:
            raise InvalidInput(
                f"{source} holds no token: give the bare token, or the JSON a command wrote "
                "(one of chain, sd_jwt, receipt)",
                code="malformed_token",
            )
        data = found[0].encode("utf-8")
    try:
        return data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise InvalidInput(f"{source} is not an ASCII token", code="malformed_token") from None


def _key_options(func: Any) -> Any:
    func = json_option(
        help_text="The result is one JSON document already; --json also reports failures as JSON."
    )(func)
    return signer_key_option(password_options(output_file_options("the result")(func)))


@click.group("v02")
def v02_group() -> None:
    """Issue, delegate, sign and verify AP2 v0.2 mandates (delegate SD-JWT chains).

    \b
    issue-open     an issuer signs an open checkout/payment mandate (the root SD-JWT)
    present        a delegate appends a hop (open mandate: delegation; closed: the purchase)
    sign-checkout  a merchant signs a UCP Checkout (checkout_jwt and checkout_hash)
    sign-receipt   a verifier signs a checkout or payment receipt
    verify         verify chains and receipts, or a v0.2 evidence bundle, against a trust root
    """


@v02_group.command("issue-open")
@click.argument("source", metavar="FILE|-", default="-")
@_key_options
@click.option(
    "--iss", "issuer", required=True, help="The issuer identifier ('iss'), as the trust root names it."
)
@click.option("--kid", required=True, help="The key id verifiers look the issuer's key up by.")
@now_option("Issuance time (ISO 8601 with offset). Default: now.")
@status_options("the open mandate")
def issue_open_command(
    source: str,
    key_uri: str,
    password_env: str | None,
    password_file: Path | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
    issuer: str,
    kid: str,
    now_text: str | None,
    status_uri: str | None,
    status_index: int | None,
) -> None:
    """Sign the open mandate in FILE ('-': stdin) as the root SD-JWT of a delegation chain.

    Prints {"sd_jwt": <issued SD-JWT with every disclosure>, "disclosable_paths": [...]}; `present`
    chooses which disclosures a presentation reveals.
    """
    from mudrika.payments.v02 import issue_open_mandate

    issued = issue_open_mandate(
        _json(source),
        issuer=issuer,
        issuer_key=load_signing_key(key_uri, password_env, password_file),
        kid=kid,
        now=signing_time(now_text),
        status=status_reference(status_uri, status_index),
    )
    emit_document(
        {"sd_jwt": issued.compact(), "disclosable_paths": list(issued.disclosable_paths)},
        out_path,
        force=force,
    )


@v02_group.command("present")
@click.argument("previous", metavar="PREVIOUS")
@click.argument("source", metavar="FILE|-", default="-")
@_key_options
@click.option("--aud", required=True, help="Audience of this hop (who receives it).")
@click.option("--nonce", required=True, help="The nonce the receiver handed out for this hop.")
@click.option(
    "--reveal",
    multiple=True,
    metavar="PATH",
    help="With an issued root as PREVIOUS: a disclosable path to reveal (repeatable; default: all).",
)
@click.option(
    "--binding",
    type=click.Choice(["sd_hash", "issuer_jwt_hash"]),
    default="sd_hash",
    show_default=True,
    help="How the hop binds the previous token.",
)
@now_option("Hop time ('iat', ISO 8601 with offset). Default: now.")
def present_command(
    previous: str,
    source: str,
    key_uri: str,
    password_env: str | None,
    password_file: Path | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
    aud: str,
    nonce: str,
    reveal: tuple[str, ...],
    binding: str,
    now_text: str | None,
) -> None:
    """Append a KB-SD-JWT hop carrying the mandate in FILE to the chain (or issued root) in PREVIOUS.

    PREVIOUS is the bare token, or the JSON `issue-open` or `present` wrote (its sd_jwt or chain).

    The key is the one the previous token's cnf names.  An open mandate with its own cnf makes an
    intermediate hop (kb+sd-jwt+kb); the closed mandate makes the terminal hop (kb+sd-jwt).
    Prints {"chain": <the chain>}.
    """
    from mudrika.crypto.sdjwt import SdJwt
    from mudrika.payments.v02 import append_hop, present_root

    text = _token(previous)
    if "~~" not in text:
        text = present_root(SdJwt.from_compact(text), reveal=reveal or None)
    elif reveal:
        raise click.UsageError("--reveal applies to an issued root, not to a chain")
    chain = append_hop(
        text,
        _json(source),
        holder_key=load_signing_key(key_uri, password_env, password_file),
        audience=aud,
        nonce=nonce,
        now=signing_time(now_text),
        binding="issuer_jwt_hash" if binding == "issuer_jwt_hash" else "sd_hash",
    )
    emit_document({"chain": chain}, out_path, force=force)


@v02_group.command("sign-checkout")
@click.argument("source", metavar="FILE|-", default="-")
@_key_options
@click.option("--kid", required=True, help="The merchant key's id (a DID URL of the merchant).")
def sign_checkout_command(
    source: str,
    key_uri: str,
    password_env: str | None,
    password_file: Path | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
    kid: str,
) -> None:
    """Sign the UCP Checkout in FILE as the merchant; print {"checkout_jwt", "checkout_hash"}."""
    from mudrika.payments.v02 import sd_digest, sign_checkout_jwt

    token = sign_checkout_jwt(
        _json(source), merchant_key=load_signing_key(key_uri, password_env, password_file), kid=kid
    )
    emit_document({"checkout_jwt": token, "checkout_hash": sd_digest(token)}, out_path, force=force)


@v02_group.command("sign-receipt")
@click.argument("source", metavar="FILE|-", default="-")
@_key_options
@click.option("--kind", type=click.Choice(["checkout", "payment"]), required=True, help="Which receipt.")
@click.option("--kid", required=True, help="The signer's key id.")
def sign_receipt_command(
    source: str,
    key_uri: str,
    password_env: str | None,
    password_file: Path | None,
    out_path: Path | None,
    force: bool,
    as_json: bool,
    kind: str,
    kid: str,
) -> None:
    """Sign the receipt claims in FILE; print {"receipt": <JWT>}."""
    from mudrika.payments.v02 import sign_receipt

    receipt_kind: Literal["checkout", "payment"] = "checkout" if kind == "checkout" else "payment"
    token = sign_receipt(
        _json(source), kind=receipt_kind, key=load_signing_key(key_uri, password_env, password_file), kid=kid
    )
    emit_document({"receipt": token}, out_path, force=force)


@v02_group.command("verify")
@click.argument("bundle", metavar="[BUNDLE]", required=False)
@trust_root_option(
    "Your trust root (mudrika.trust-root/v1): issuers, pinned merchants, algorithms, ages.", required=True
)
@click.option("--checkout-chain", "checkout_path", metavar="FILE", help="The checkout delegation chain.")
@click.option("--payment-chain", "payment_path", metavar="FILE", help="The payment delegation chain.")
@click.option("--checkout-receipt", "checkout_receipt_path", metavar="FILE", help="The checkout receipt JWT.")
@click.option("--payment-receipt", "payment_receipt_path", metavar="FILE", help="The payment receipt JWT.")
@v02_anchor_options
@at_option("Evaluate at this time. Default: now (bundle: its evidence_time).")
@replay_db_option("SQLite replay store: consume the accepted mandates across runs (default: this run only).")
@click.option(
    "--status-list",
    "status_lists",
    multiple=True,
    metavar="URI=FILE",
    help="A Token Status List token fetched from URI for an open mandate that names it (files mode); "
    "repeatable. Keep it in the evidence bundle: a dispute is judged on it.",
)
@report_options
def verify_command(
    bundle: str | None,
    trust_root_path: Path,
    checkout_path: str | None,
    payment_path: str | None,
    checkout_receipt_path: str | None,
    payment_receipt_path: str | None,
    checkout_aud: tuple[str, ...],
    checkout_nonce: tuple[str, ...],
    payment_aud: tuple[str, ...],
    payment_nonce: tuple[str, ...],
    at_text: str | None,
    replay_db: Path | None,
    usage_path: str | None,
    status_lists: tuple[str, ...],
    as_json: bool,
    html_path: Path | None,
) -> int:
    """Verify a v0.2 transaction: the chains and receipts given as files, or one evidence BUNDLE.

    Files: --checkout-chain is required, and every hop needs its --checkout-aud/--checkout-nonce
    (and --payment-aud/--payment-nonce), in hop order; accepted mandates are consumed (this run, or
    --replay-db across runs); --usage feeds payment.budget and payment.agent_recurrence.  A BUNDLE is judged offline at --at or its evidence_time and nothing
    is consumed; expectations not given here come from the bundle (then the verdict is UNANCHORED).
    Exit 0 when the verdict is OK, 1 when a check failed or it is UNANCHORED, 2 for bad input.
    """
    from mudrika.payments.credential_status import RecordedStatusList
    from mudrika.payments.trustroot import load_trust_root
    from mudrika.payments.v02 import V02Evidence, inspect_v02
    from mudrika.payments.v02.bundle import inspect_v02_bundle, load_v02_bundle

    trust_root = load_trust_root(trust_root_path)
    at = parse_time_option(at_text)
    checkout_hops, payment_hops, usage = v02_anchors(
        checkout_aud=checkout_aud,
        checkout_nonce=checkout_nonce,
        payment_aud=payment_aud,
        payment_nonce=payment_nonce,
        usage_path=usage_path,
    )
    if bundle is not None:
        if checkout_path or payment_path or checkout_receipt_path or payment_receipt_path or status_lists:
            raise click.UsageError("give a BUNDLE (it carries its status lists) or the files, not both")
        report = inspect_v02_bundle(
            load_v02_bundle(bundle),
            trust_root=trust_root,
            at=at,
            checkout_hops=checkout_hops or None,
            payment_hops=payment_hops or None,
            usage=usage,
        )
        title = f"AP2 v0.2 evidence bundle {bundle}"
    else:
        if checkout_path is None:
            raise click.UsageError("give a BUNDLE or --checkout-chain")
        evidence = V02Evidence(
            checkout_chain=_token(checkout_path),
            payment_chain=_token(payment_path) if payment_path else None,
            checkout_receipt=_token(checkout_receipt_path) if checkout_receipt_path else None,
            payment_receipt=_token(payment_receipt_path) if payment_receipt_path else None,
        )
        now = at or datetime.now(UTC)
        recorded = [
            RecordedStatusList(
                uri=uri,
                token=status_token_text(path),
                at=now.astimezone(UTC).isoformat().replace("+00:00", "Z"),
                via=f"status list token file {Path(path).name}",
            )
            for uri, path in split_pairs(status_lists, option="--status-list", form="URI=FILE")
        ]
        with replay_store(replay_db) as store:
            report = inspect_v02(
                evidence,
                trust_root=trust_root,
                checkout_hops=checkout_hops,
                payment_hops=payment_hops,
                now=now,
                usage=usage,
                replay_store=store,
                status_lists=recorded,
            )
        title = "AP2 v0.2 transaction"
    return finish_report(report, title=title, as_json=as_json, html_path=html_path, json_lists_passed=True)
