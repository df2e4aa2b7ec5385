"""``mudrika trust-root``: write and read the analyst's trust root (the keys and policy you trust).

Why a command group: a dispute verdict is only as good as the keys it rests on, and those must be
chosen by the analyst, before the dispute, never taken from the evidence.  ``init`` writes a new
``mudrika.trust-root/v1`` file with the policy (algorithms, accepted credential types, leeway,
maximum ages, legacy chains, the audiences you verify as); ``add-issuer`` pins a credential issuer's
JWK Set or DID document; ``add-merchant`` pins a merchant's DID document or JWK Set; ``show`` lists
every pinned key with its RFC 7638 thumbprint, so it can be compared with the party out of band, and
its validity window in words.  Keys change over the months before a dispute is judged:
``revoke-key`` records that a key was superseded or reported compromised, ``rotate-key`` pins the
successor and ends the old key's window at the same instant (the old key stays pinned, so what it
signed before still verifies).

Every change re-validates the whole file (the same strict loader the verifier uses) before it is
written, atomically.  The payments modules are imported inside the commands, so that
``mudrika trust-root --help`` starts without them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mudrika.cli._common import audience_options, emit_json, err, force_option, json_option, read_json_file
from mudrika.errors import InvalidInput, MudrikaError

if TYPE_CHECKING:
    from mudrika.identity.anchoring import KeyValidity
    from mudrika.payments.trustroot import Section

__all__ = ["trust_root_group"]

_MAX_INPUT = 1024 * 1024
#: The file's section names and the role each pins.
_SECTIONS: tuple[tuple[str, Section], ...] = (("issuers", "issuer"), ("merchants", "merchant"))
_TIME_HELP = "RFC 3339 with an offset (2026-10-01T00:00:00Z) or UNIX seconds; written in UTC."

_F = TypeVar("_F", bound=Callable[..., Any])


def _load_document(path: Path) -> dict[str, Any]:
    """The trust-root file as a plain JSON object (validated: a broken file is never edited)."""
    from mudrika.payments.trustroot import load_trust_root

    root = load_trust_root(path)
    document: dict[str, Any] = json.loads(root.to_json())
    return document


def _write(path: Path, document: dict[str, Any], *, force: bool) -> str:
    """Validate ``document`` strictly, then write it atomically; its fingerprint."""
    from mudrika.crypto.keystore import write_file_atomic
    from mudrika.payments.trustroot import parse_trust_root

    root = parse_trust_root(document)
    write_file_atomic(path, (root.to_json() + "\n").encode("utf-8"), force=force, private_dir=False)
    err(f"wrote {path} (trust root {root.fingerprint})")
    return str(root.fingerprint)


#: --json of the commands that write the trust root.
_WRITE_JSON = 'Print {"path", "fingerprint", "changed", ...} of the written trust root as one JSON document.'


def _written(as_json: bool, path: Path, fingerprint: str | None, **facts: Any) -> None:
    """The --json result of a command that writes FILE (``fingerprint`` None: FILE was left as it was)."""
    if as_json:
        emit_json(
            {"path": str(path), "fingerprint": fingerprint, "changed": fingerprint is not None, **facts}
        )


def _key_material(jwks: Path | None, did_document: Path | None) -> dict[str, Any]:
    if jwks is not None and did_document is not None:
        raise click.UsageError("give --jwks or --did-document, not both")
    if jwks is not None:
        return {"jwks": read_json_file(jwks, max_bytes=_MAX_INPUT)}
    if did_document is not None:
        return {"did_document": read_json_file(did_document, max_bytes=_MAX_INPUT)}
    return {}


def _jwks_option(help_text: str) -> Callable[[_F], _F]:
    """``--jwks FILE``: the JWK Set pinned for an issuer or a merchant (a snapshot, read now)."""
    return click.option(
        "--jwks", type=click.Path(dir_okay=False, exists=True, path_type=Path), help=help_text
    )


def _did_document_option(help_text: str) -> Callable[[_F], _F]:
    """``--did-document FILE``: the DID document snapshot pinned for an issuer or a merchant."""
    return click.option(
        "--did-document", type=click.Path(dir_okay=False, exists=True, path_type=Path), help=help_text
    )


def _utc_text(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A time option as the trust root writes it (UTC, ``Z``): the CLI takes the forms every other
    command takes, the file keeps one spelling per instant."""
    if value is None:
        return None
    from mudrika.payments.models import parse_time
    from mudrika.payments.trustroot import format_utc_time

    try:
        return format_utc_time(parse_time(value))
    except InvalidInput as exc:
        raise click.BadParameter(f"{exc.message} ({_TIME_HELP})") from None


def _time_option(flag: str, help_text: str, *, required: bool = False) -> Callable[[_F], _F]:
    """A point-in-time option (``--valid-from``, ``--at`` …), normalised to UTC text."""
    return click.option(
        flag, metavar="TIME", callback=_utc_text, required=required, help=f"{help_text} {_TIME_HELP}"
    )


def _window_options(func: _F) -> _F:
    """``--valid-from`` / ``--valid-until`` for the keys an ``add-*`` command pins."""
    func = _time_option(
        "--valid-until", "First instant the added keys may no longer sign (exclusive; every key added)."
    )(func)
    return _time_option("--valid-from", "First instant the added keys may sign (every key added).")(func)


#: ``--source``: where the pinned key material came from, recorded with it and shown in reports.
_source_option = click.option("--source", help="Where and when you obtained these keys (shown in reports).")


def _pin(
    path: Path,
    section: str,
    name: str,
    *,
    jwks: Path | None,
    did_document: Path | None,
    source: str | None,
    valid_from: str | None,
    valid_until: str | None,
    force: bool,
    vcts: tuple[str, ...] = (),
) -> str:
    """Put ``name`` with its key material into ``section`` (issuers or merchants) of FILE, replacing it.

    Why one function: an issuer and a merchant are pinned the same way (the validated file is read,
    the entry rebuilt from the options, the whole file validated again and written); only issuers
    carry their own accepted credential types.  ``valid_from`` / ``valid_until`` become the window of
    every signing key the entry pins.  An entry that carries windows is replaced only with ``force``:
    replacing it would silently drop a recorded revocation, and a compromised key would be trusted
    again.
    """
    from mudrika.payments.trustroot import parse_trust_root

    document = _load_document(path)
    earlier = document[section].get(name)
    if earlier is not None and earlier.get("key_windows") and not force:
        raise MudrikaError(
            f"{name} carries key validity windows ({', '.join(sorted(earlier['key_windows']))[:400]}); "
            "replacing the entry would drop them: use rotate-key to add keys, or --force to replace it",
            code="would_drop_windows",
        )
    entry = _key_material(jwks, did_document)
    if not entry and not _is_self_certifying(name):
        role = dict(_SECTIONS)[section]
        first, second = ("--did-document", "--jwks") if role == "merchant" else ("--jwks", "--did-document")
        raise click.UsageError(
            f"give the {role}'s keys: {first} FILE or {second} FILE "
            "(only a did:key or did:jwk identifier carries its own key)"
        )
    if vcts:
        entry["vct"] = list(vcts)
    if source is not None:
        entry["source"] = source
    document[section][name] = entry
    if valid_from is not None or valid_until is not None:
        role = dict(_SECTIONS)[section]
        kids = _signing_kids(parse_trust_root(document), role, name)
        if not kids:
            raise click.UsageError(f"{name} pins no signing key to give a window to")
        window = {"valid_from": valid_from, "valid_until": valid_until}
        entry["key_windows"] = {kid: {k: v for k, v in window.items() if v is not None} for kid in kids}
    return _write(path, document, force=True)


def _is_self_certifying(owner: str) -> bool:
    """A did:key / did:jwk identifier is its own key, so it is pinned without a key file; any other
    owner given no keys is a command line that forgot them, said as such (not as a malformed file)."""
    return owner.startswith(("did:key:", "did:jwk:"))


def _signing_kids(root: Any, role: str, owner: str) -> list[str]:
    """The kids of ``owner`` a verdict may rest on (those ``show`` lists), as a signature names them."""
    return [kid for section, pinned, kid, _ in root.pinned_keys() if section == role and pinned == owner]


def _owned_key(document: dict[str, Any], owner: str, kid: str) -> list[tuple[str, str]]:
    """The ``(section, absolute kid)`` pairs under which FILE pins ``owner``'s key ``kid``; a clear
    error for an unknown owner or kid (a revocation recorded under a typo would protect nothing).

    A DID owner's kid may be given relative (``#key-1``); it is recorded absolute, as signatures name it.
    """
    from mudrika.payments.trustroot import parse_trust_root

    root = parse_trust_root(document)
    sections = [(section, role) for section, role in _SECTIONS if owner in document[section]]
    if not sections:
        raise InvalidInput(f"the trust root pins no issuer or merchant {owner}", code="unknown_owner")
    absolute = owner + kid if owner.startswith("did:") and kid.startswith("#") else kid
    found = [(section, absolute) for section, role in sections if absolute in root.kids_of(role, owner)]
    if not found:
        known = sorted({k for _, role in sections for k in root.kids_of(role, owner)})
        raise InvalidInput(
            f"{owner} has no pinned key {absolute} (its keys: {', '.join(known) or 'none'})",
            code="unknown_kid",
        )
    return found


def _revoke(window: dict[str, Any], *, kid: str, at: str, reason: str, force: bool) -> bool:
    """Record ``reason`` at ``at`` in ``window``; whether anything changed.

    Never silent: an earlier, different revocation is replaced only with ``force``.  A key already
    reported compromised stays compromised when it is merely rotated (``superseded``): the stronger
    record wins, since a thief's signatures must keep failing.  When a superseded key is later
    reported compromised (with ``force``), the supersession still ends the window: it is kept as
    ``valid_until``.
    """
    earlier_at, earlier_reason = window.get("revoked_at"), window.get("reason")
    if (earlier_at, earlier_reason) == (at, reason):
        return False
    if earlier_reason == "compromised" and reason == "superseded" and not force:
        err(f"{kid}: kept as compromised since {earlier_at} (a rotation does not lift that)")
        return False
    if earlier_at is not None and not force:
        raise MudrikaError(
            f"{kid} is already {earlier_reason} since {earlier_at}; give --force to replace that revocation",
            code="already_revoked",
        )
    if earlier_reason == "superseded" and reason == "compromised":
        until = window.get("valid_until")
        window["valid_until"] = earlier_at if until is None or earlier_at < until else until
    window["revoked_at"], window["reason"] = at, reason
    return True


def _merged_document(owner: str, pinned: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The new DID document with the old one's methods it dropped kept in (and in their relationships).

    Why: the trust root must still hold the superseded key to judge what it signed before the
    rotation; only its window ends.  A method id reused for other key material is refused: one kid,
    one key, or windows would be ambiguous.
    """

    def absolute(entry: Any) -> Any:
        if isinstance(entry, str) and entry.startswith("#"):
            return owner + entry
        return entry

    def method_id(entry: Any) -> Any:
        return absolute(entry.get("id")) if isinstance(entry, dict) else absolute(entry)

    new_methods = {method_id(m): m for m in new.get("verificationMethod", []) if isinstance(m, dict)}
    merged = dict(new)
    kept = []
    for method in pinned.get("verificationMethod", []):
        same = new_methods.get(method_id(method))
        if same is None:
            kept.append(method)
        elif same.get("publicKeyJwk") != method.get("publicKeyJwk") or same.get(
            "publicKeyMultibase"
        ) != method.get("publicKeyMultibase"):
            raise InvalidInput(
                f"the new document reuses the kid {method_id(method)} for another key", code="kid_reused"
            )
    if kept:
        merged["verificationMethod"] = [*new.get("verificationMethod", []), *kept]
    for relationship in (
        "authentication",
        "assertionMethod",
        "keyAgreement",
        "capabilityInvocation",
        "capabilityDelegation",
    ):
        listed = list(new.get(relationship, []))
        ids = {method_id(entry) for entry in listed}
        listed += [entry for entry in pinned.get(relationship, []) if method_id(entry) not in ids]
        if listed:
            merged[relationship] = listed
    return merged


@click.group("trust-root")
def trust_root_group() -> None:
    """Write and inspect your trust root: the issuers, merchants and policy dispute verdicts rest on."""


@trust_root_group.command("init")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--description", help="Free text: whose trust root this is and what it is for.")
@click.option(
    "--vct",
    "vcts",
    multiple=True,
    help="A credential type (vct) accepted from every issuer without its own list (repeatable). "
    "Default: the profile's payment credential.",
)
@click.option(
    "--algorithm",
    "algorithms",
    multiple=True,
    help="Accepted JWS algorithm (repeatable). Default: ES256, ES256K, EdDSA, Ed25519.",
)
@click.option("--leeway", type=click.FloatRange(0, 30), default=0.0, show_default=True, help="Seconds.")
@click.option(
    "--kb-max-age",
    type=click.FloatRange(1, 86400),
    default=300.0,
    show_default=True,
    help="Oldest acceptable key-binding JWT (seconds before the evaluation time).",
)
@click.option("--intent-max-age", type=click.FloatRange(1, 366 * 86400), help="Oldest acceptable intent JWS.")
@audience_options(
    merchant="The 'aud' merchants' cart JWTs must carry (who you verify as).",
    kb="The 'aud' users' key-binding JWTs must carry (who you verify as).",
)
@click.option(
    "--accept-legacy-unbound-intent",
    is_flag=True,
    help="Accept legacy v0.1 chains whose key-binding JWT does not cover the intent (reported in words).",
)
@force_option("an existing file")
@json_option(help_text=_WRITE_JSON)
def init_command(
    path: Path,
    description: str | None,
    vcts: tuple[str, ...],
    algorithms: tuple[str, ...],
    leeway: float,
    kb_max_age: float,
    intent_max_age: float | None,
    merchant_aud: str | None,
    kb_aud: str | None,
    accept_legacy_unbound_intent: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Write a new trust root FILE with no issuers or merchants yet, and the policy given."""
    from mudrika.payments.profile import PAYMENT_CREDENTIAL_VCT
    from mudrika.payments.trustroot import TRUST_ROOT_FORMAT

    document: dict[str, Any] = {
        "format": TRUST_ROOT_FORMAT,
        "issuers": {},
        "merchants": {},
        "accepted_vct": list(vcts) or [PAYMENT_CREDENTIAL_VCT],
        "leeway_seconds": leeway,
        "max_age_seconds": {"key_binding": kb_max_age},
        "verifier": {},
        "accept_legacy_unbound_intent": accept_legacy_unbound_intent,
    }
    if description is not None:
        document["description"] = description
    if algorithms:
        document["algorithms"] = list(algorithms)
    if intent_max_age is not None:
        document["max_age_seconds"]["intent"] = intent_max_age
    if merchant_aud is not None:
        document["verifier"]["merchant_audience"] = merchant_aud
    if kb_aud is not None:
        document["verifier"]["kb_audience"] = kb_aud
    _written(as_json, path, _write(path, document, force=force))


@trust_root_group.command("add-issuer")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.argument("issuer")
@_jwks_option("The issuer's JWK Set.")
@_did_document_option("A snapshot of the issuer's DID document (an issuer identified by a DID).")
@click.option(
    "--vct", "vcts", multiple=True, help="A credential type accepted from this issuer (repeatable)."
)
@_source_option
@_window_options
@force_option("an earlier entry that carries key validity windows (they are dropped)")
@json_option(help_text=_WRITE_JSON)
def add_issuer_command(
    path: Path,
    issuer: str,
    jwks: Path | None,
    did_document: Path | None,
    vcts: tuple[str, ...],
    source: str | None,
    valid_from: str | None,
    valid_until: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Pin credential issuer ISSUER (its 'iss') in FILE, with its keys; replaces an earlier entry.

    Give --jwks for an https issuer, --did-document for a DID issuer, or neither for a did:key /
    did:jwk issuer (its key is the identifier).  --valid-from / --valid-until set the validity
    window of every signing key added.  An entry with recorded windows is replaced only with --force.

    \b
    Example:
      mudrika trust-root add-issuer root.json https://issuer.example --jwks jwks.json \\
          --valid-from 2026-01-01T00:00:00Z --source "from /.well-known/jwks.json, 2026-01-02"
    """
    fingerprint = _pin(
        path,
        "issuers",
        issuer,
        jwks=jwks,
        did_document=did_document,
        source=source,
        vcts=vcts,
        valid_from=valid_from,
        valid_until=valid_until,
        force=force,
    )
    _written(as_json, path, fingerprint, issuer=issuer)


@trust_root_group.command("add-merchant")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.argument("did")
@_did_document_option("A snapshot of the merchant's DID document.")
@_jwks_option("A JWK Set of the merchant's signing keys (kid: DID URLs of DID, or #fragments).")
@_source_option
@_window_options
@force_option("an earlier entry that carries key validity windows (they are dropped)")
@json_option(help_text=_WRITE_JSON)
def add_merchant_command(
    path: Path,
    did: str,
    did_document: Path | None,
    jwks: Path | None,
    source: str | None,
    valid_from: str | None,
    valid_until: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Pin merchant DID in FILE with a snapshot of its cart-signing keys; replaces an earlier entry.

    --valid-from / --valid-until set the validity window of every signing key added.  An entry with
    recorded windows is replaced only with --force.

    \b
    Example:
      mudrika trust-root add-merchant root.json did:web:shop.example --did-document shop.json \\
          --valid-from 2026-01-01T00:00:00Z
    """
    fingerprint = _pin(
        path,
        "merchants",
        did,
        jwks=jwks,
        did_document=did_document,
        source=source,
        valid_from=valid_from,
        valid_until=valid_until,
        force=force,
    )
    _written(as_json, path, fingerprint, merchant=did)


@trust_root_group.command("revoke-key")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--owner", required=True, help="The issuer or merchant identifier, as pinned in FILE.")
@click.option("--kid", required=True, help="The key's kid (a DID owner's: its DID URL, or #fragment).")
@_time_option("--at", "When the key stopped being valid (exclusive end of its window).", required=True)
@click.option(
    "--reason",
    type=click.Choice(["superseded", "compromised"]),
    required=True,
    help="superseded: replaced, its holder still believed about when it signed; compromised: stolen, "
    "only a time attested by another party counts from now on.",
)
@click.option("--note", help="Who reported it, where and when (kept with the window).")
@force_option("an earlier, different revocation of this key")
@json_option(help_text=_WRITE_JSON)
def revoke_key_command(
    path: Path, owner: str, kid: str, at: str, reason: str, note: str | None, force: bool, as_json: bool
) -> None:
    """Record in FILE that OWNER's key KID was superseded or compromised at --at.

    The key stays pinned: what it signed before --at can still be judged.  For a compromised key
    only a signing time attested by someone other than the key holder can show that (the holder's
    own 'iat' no longer counts).  An earlier, different revocation is replaced only with --force.

    \b
    Examples:
      mudrika trust-root revoke-key root.json --owner did:web:shop.example --kid '#cart-1' \\
          --at 2026-10-01T00:00:00Z --reason compromised --note "merchant's notice of 2026-10-02"
      mudrika trust-root revoke-key root.json --owner https://issuer.example --kid issuer-2025 \\
          --at 2026-03-01T00:00:00Z --reason superseded
    """
    document = _load_document(path)
    changed = False
    for section, absolute in _owned_key(document, owner, kid):
        window = document[section][owner].setdefault("key_windows", {}).setdefault(absolute, {})
        changed |= _revoke(window, kid=absolute, at=at, reason=reason, force=force)
        if note is not None and window.get("note") != note:
            window["note"], changed = note, True
    if not changed:
        err(f"{path} unchanged: {kid} is already {reason} since {at}")
        _written(as_json, path, None, owner=owner, kid=kid, reason=reason, at=at)
        return
    fingerprint = _write(path, document, force=True)
    err(f"{owner} {kid}: {reason} since {at}")
    _written(as_json, path, fingerprint, owner=owner, kid=kid, reason=reason, at=at)


@trust_root_group.command("rotate-key")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--owner", required=True, help="The issuer or merchant identifier, as pinned in FILE.")
@click.option(
    "--old-kid", required=True, help="The key being replaced (a DID owner's: DID URL or #fragment)."
)
@_time_option(
    "--at", "The instant of the rotation: the old key's end and the new keys' start.", required=True
)
@_jwks_option("The new keys, as a JWK Set (for an owner pinned by its JWK Set): added to the pinned set.")
@_did_document_option("The owner's new DID document (for an owner pinned by a DID document).")
@force_option("an earlier, different supersession of the old key")
@json_option(help_text=_WRITE_JSON)
def rotate_key_command(
    path: Path,
    owner: str,
    old_kid: str,
    at: str,
    jwks: Path | None,
    did_document: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Pin OWNER's new key material and end the old key's window at --at.

    The old key stays pinned with revoked_at=--at, reason superseded (a key already recorded as
    compromised stays compromised); every signing key the new material adds gets valid_from=--at.
    With --jwks the new keys join the pinned set; with --did-document the new document is pinned and
    the old document's methods it no longer lists are kept, so the old key can still be judged.  A
    did:key / did:jwk owner is its one key: pin the successor identifier with add-issuer instead.

    \b
    Example:
      mudrika trust-root rotate-key root.json --owner https://issuer.example --old-kid issuer-2025 \\
          --at 2026-03-01T00:00:00Z --jwks issuer-jwks-2026.json
    """
    from mudrika.payments.trustroot import parse_trust_root

    material = _key_material(jwks, did_document)
    if not material:
        raise click.UsageError("give the new key material: --jwks FILE or --did-document FILE")
    document = _load_document(path)
    targets = _owned_key(document, owner, old_kid)
    before = parse_trust_root(document)
    for section, _ in targets:
        entry = document[section][owner]
        if "jwks" in material:
            if "jwks" not in entry:
                raise InvalidInput(
                    f"{owner} is not pinned by a JWK Set: give --did-document", code="wrong_material"
                )
            pinned = entry["jwks"]["keys"]
            added = [jwk for jwk in material["jwks"].get("keys", []) if jwk not in pinned]
            entry["jwks"] = {**entry["jwks"], "keys": [*pinned, *added]}
        else:
            if "did_document" not in entry:
                raise InvalidInput(
                    f"{owner} is not pinned by a DID document: give --jwks, or pin a successor did:key / "
                    "did:jwk identifier with add-issuer",
                    code="wrong_material",
                )
            entry["did_document"] = _merged_document(owner, entry["did_document"], material["did_document"])
    after = parse_trust_root(document)
    for section, old in targets:
        role = dict(_SECTIONS)[section]
        new_kids = [
            kid for kid in _signing_kids(after, role, owner) if kid not in before.kids_of(role, owner)
        ]
        if not new_kids:
            raise InvalidInput("the new key material adds no signing key", code="no_new_key")
        windows = document[section][owner].setdefault("key_windows", {})
        _revoke(windows.setdefault(old, {}), kid=old, at=at, reason="superseded", force=force)
        for kid in new_kids:
            windows[kid] = {"valid_from": at}
        err(f"{owner}: {old} superseded at {at} by {', '.join(new_kids)}")
    _written(as_json, path, _write(path, document, force=True), owner=owner, at=at)


@trust_root_group.command("show")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@json_option(help_text="Print the pinned keys and policy as JSON on stdout.")
def show_command(path: Path, as_json: bool) -> None:
    """List FILE's policy and every pinned key with its RFC 7638 thumbprint and validity window.

    A key with a window shows its state in words ("compromised since 2026-10-01", "valid from …").
    """
    from mudrika.payments.trustroot import load_trust_root

    root = load_trust_root(path)
    rows = root.pinned_keys()
    policy = {
        "fingerprint": root.fingerprint,
        "algorithms": list(root.algorithms),
        "accepted_vct": list(root.accepted_vct),
        "leeway_seconds": root.leeway_seconds,
        "max_age_seconds": root.max_age_seconds.model_dump(exclude_none=True),
        "verifier": root.verifier.model_dump(exclude_none=True),
        "accept_legacy_unbound_intent": root.accept_legacy_unbound_intent,
    }
    windows: dict[tuple[str, str, str], tuple[dict[str, Any], KeyValidity]] = {}
    for role, owner, kid, _ in rows:
        entry = root.issuers[owner] if role == "issuer" else root.merchants[owner]
        recorded = (entry.key_windows or {}).get(kid)
        if recorded is not None:
            windows[(role, owner, kid)] = (recorded.model_dump(exclude_none=True), recorded.validity())
    if as_json:
        keys = []
        for role, owner, kid, thumbprint in rows:
            key: dict[str, Any] = {"role": role, "owner": owner, "kid": kid, "thumbprint": thumbprint}
            window = windows.get((role, owner, kid))
            if window is not None:
                key["window"], key["state"] = window[0], window[1].describe()
            keys.append(key)
        emit_json({**policy, "keys": keys})
        return
    from mudrika.payments.chain import printable

    # One line per key, never wrapped: thumbprints are compared with the party out of band.
    err(f"trust root {path}")
    for role, owner, kid, thumbprint in rows:
        window = windows.get((role, owner, kid))
        state = f" — {window[1].describe()}" if window is not None else ""
        err(f"  {role}: {printable(owner)} kid={printable(kid)} thumbprint={thumbprint}{state}")
    for name, value in policy.items():
        err(f"{name}: {_readable(value)}")


def _readable(value: Any) -> str:
    """A policy value as a person reads it: lists comma-separated, mappings as ``name=value``, yes/no,
    whole numbers without ``.0``, every party-supplied text escaped (never a Python repr)."""
    from mudrika.payments.chain import printable

    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        return ", ".join(f"{key}={_readable(item)}" for key, item in value.items()) or "(none)"
    if isinstance(value, list | tuple):
        return ", ".join(_readable(item) for item in value) or "(none)"
    return printable(str(value))
