"""Key-to-identity checks for every command that signs in a DID's name (mandates, credentials, CSRs).

Why before signing: a signature made with the wrong key under someone's ``kid`` does not fail when
it is made — it fails months later, in a dispute, as ``intent.jws.alg … algorithm not allowed for
this key`` or an unverifiable signature, when nobody remembers which file was used.  So a signing
command resolves the DID it signs for *offline* — did:key and did:jwk are computed from the DID
itself, any other method needs its DID document (``--did-document FILE``, a snapshot) — and refuses
a key that is not the one the ``kid`` names.  The algorithm defaults from the key type, and a
mismatch names the algorithm that fits.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mudrika.errors import InvalidInput, MudrikaError

if TYPE_CHECKING:
    from mudrika.crypto.keys import KeyPair
    from mudrika.identity.document import SigningPurpose

__all__ = [
    "algorithm_for",
    "check_key_in_did",
    "check_key_matches",
    "did_documents",
    "read_did_documents",
]

_SELF_CERTIFYING = frozenset({"key", "jwk"})


def did_documents(paths: Iterable[str | Path], load_json: Callable[[str], Any]) -> dict[str, dict[str, Any]]:
    """``{DID: document}`` of the DID document files a command is given (:func:`read_did_documents`)."""
    return {did: document for _, did, document in read_did_documents(paths, load_json)}


def read_did_documents(
    paths: Iterable[str | Path], load_json: Callable[[str], Any]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(path, DID, document)`` for each DID document FILE a command is handed as evidence.

    Why one reader: every command handed ``--did-document`` files (mandate, dispute, card, csr,
    credential) keys them by their ``id`` and must refuse a file that is no DID document the same
    way, naming the file; each passes its own ``load_json`` (``mandate`` also reads '-' as stdin).
    """
    for path in map(str, paths):
        document = load_json(path)
        did = document.get("id") if isinstance(document, dict) else None
        if not isinstance(did, str):
            raise InvalidInput(f"{path} is not a DID document (no 'id')", code="bad_did_document")
        yield path, did, document


def check_key_matches(
    pair: KeyPair,
    *,
    kid: str,
    documents: Mapping[str, Mapping[str, Any]],
    option: str = "--kid",
    purpose: SigningPurpose = "assertionMethod",
) -> None:
    """Refuse unless ``kid`` (a DID URL) names ``pair``'s public key for ``purpose`` in its DID document.

    Raises :class:`InvalidInput` ``key_mismatch`` (the key is another one: both RFC 7638 thumbprints
    are in the fields), ``key_not_in_did`` (the DID has no such key for signing) or
    ``did_document_needed`` (the DID cannot be resolved offline without its document).
    """
    from mudrika.identity.did import parse_did_url
    from mudrika.identity.resolver import DIDResolver

    url = parse_did_url(kid)
    did = url.did_str
    _require_document(did, did.split(":", 2)[1], documents)
    resolver = DIDResolver.offline({name: dict(doc) for name, doc in documents.items()})
    try:
        named = resolver.resolve_key(kid, purpose)
    except MudrikaError as exc:
        raise InvalidInput(
            f"{option} {kid} names no {purpose} key of {did}",
            code="key_not_in_did",
            kid=kid,
            cause=exc.code,
        ) from None
    if named != pair.public_key:
        raise InvalidInput(
            f"the key given with --key is not the key {option} names: sign with the private key of {kid}, "
            "or name this key's DID URL",
            code="key_mismatch",
            kid=kid,
            expected_thumbprint=named.thumbprint(),
            got_thumbprint=pair.public_key.thumbprint(),
        )


def check_key_in_did(pair: KeyPair, *, did: str, documents: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse unless ``pair``'s public key is one of ``did``'s verification methods (resolved offline).

    did:bindu is self-certifying: its ``agent_id`` is derived from the key, so it is checked without
    a document.  Codes as :func:`check_key_matches`.
    """
    from mudrika.identity.did import parse_did
    from mudrika.identity.methods import bindu
    from mudrika.identity.resolver import DIDResolver

    parsed = parse_did(did)
    if parsed.method == "bindu" and did not in documents:
        if bindu.parse(did).agent_id != bindu.agent_id_for(pair.public_key):
            raise InvalidInput(
                f"the key given with --key is not the key {did} is derived from: use that agent's key",
                code="key_mismatch",
                did=did,
                got_thumbprint=pair.public_key.thumbprint(),
            )
        return
    _require_document(did, parsed.method, documents)
    resolver = DIDResolver.offline({name: dict(doc) for name, doc in documents.items()})
    document = resolver.resolve(did).document
    for method in document.verification_methods or ():
        try:
            key = method.public_key()
        except MudrikaError:
            continue
        if key == pair.public_key:
            return
    raise InvalidInput(
        f"the key given with --key is not a key of {did}: use that DID's key, or the DID of this key",
        code="key_mismatch",
        did=did,
        got_thumbprint=pair.public_key.thumbprint(),
    )


def algorithm_for(pair: KeyPair, requested: str | None, *, allowed: Collection[str]) -> str:
    """The JWS algorithm to sign with: ``requested`` when it fits the key, else the key type's default."""
    fits = pair.public_key.algorithms & frozenset(allowed)
    if requested is None:
        default = pair.public_key.default_algorithm
        if default in fits:
            return default
        if not fits:
            raise InvalidInput(
                f"a {pair.key_type} key can sign none of the allowed algorithms ({', '.join(sorted(allowed))})",
                code="alg_not_allowed",
                key_type=str(pair.key_type),
            )
        return sorted(fits)[0]
    if requested not in fits:
        default = pair.public_key.default_algorithm
        hint = default if default in fits else (sorted(fits)[0] if fits else None)
        raise InvalidInput(
            f"algorithm {requested} does not fit this {pair.key_type} key"
            + (f": use --alg {hint} (or leave --alg out)" if hint else ""),
            code="alg_key_mismatch",
            alg=requested,
            key_type=str(pair.key_type),
            fits=sorted(fits),
        )
    return requested


def _require_document(did: str, method: str, documents: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse early, naming the option to use, when ``did`` cannot be resolved offline without its document."""
    if method not in _SELF_CERTIFYING and did not in documents:
        if documents:
            # Documents were given, none of them this DID's: say whose they are, not "give one".
            raise InvalidInput(
                f"the DID document given with --did-document is for {', '.join(sorted(documents))}, "
                f"not for {did}: give {did}'s own document",
                code="did_document_mismatch",
                did=did,
                given=sorted(documents),
                option="--did-document",
            )
        raise InvalidInput(
            f"cannot check that the key belongs to {did} offline: give its DID document with "
            "--did-document FILE",
            code="did_document_needed",
            did=did,
            option="--did-document",
        )
