"""Which assertion keys a did:webvh DID had, and when: its log read as key validity windows.

Why windows: a dispute judges a signature as of the day it was made.  The trust root already judges
every pinned key against a window (``valid_from``, ``valid_until``) with one function
(:func:`mudrika.identity.anchoring.judge_signing_time`); a did:webvh log *is* such a record, signed
and hash-chained by the DID's controller.  So the log is turned into one document holding every key
the DID ever listed under ``assertionMethod``, each with the window in which the log listed it:
from the ``versionTime`` of the version that added it until that of the first version that dropped
it (or deactivated the DID).  The same judgement then says "this key was the merchant's key in
March" — or that it had been rotated out the week before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mudrika.errors import InvalidInput
from mudrika.identity.methods.webvh._log import LogEntry, VerifiedLog

__all__ = ["KeyHistory", "assertion_key_history"]


@dataclass(frozen=True, slots=True)
class KeyHistory:
    """Every assertion key a DID's log ever listed (``document``: one DID document holding them all,
    each under ``assertionMethod``) and, per absolute key id, ``[listed_from, listed_until)`` (the
    end ``None`` while the latest version still lists it)."""

    document: dict[str, Any]
    windows: Mapping[str, tuple[datetime, datetime | None]]


def _absolute(did: str, reference: str) -> str:
    return did + reference if reference.startswith("#") else reference


def _assertion_methods(did: str, state: Mapping[str, Any], number: int) -> dict[str, dict[str, Any]]:
    """The version's assertion keys by absolute id, each as a verification method object."""
    methods = {
        _absolute(did, method["id"]): method
        for method in state.get("verificationMethod", [])
        if isinstance(method, Mapping) and isinstance(method.get("id"), str)
    }
    found: dict[str, dict[str, Any]] = {}
    for item in state.get("assertionMethod", []):
        if isinstance(item, str):
            method = methods.get(_absolute(did, item))
            if method is None:
                raise InvalidInput(
                    f"version {number} lists an assertion key its document does not define",
                    code="webvh_history_unusable",
                )
            found[_absolute(did, item)] = dict(method)
        elif isinstance(item, Mapping) and isinstance(item.get("id"), str):
            found[_absolute(did, item["id"])] = dict(item)
    return found


def _material(method: Mapping[str, Any]) -> tuple[Any, ...]:
    return (method.get("type"), method.get("publicKeyMultibase"), repr(method.get("publicKeyJwk")))


def assertion_key_history(did: str, log: VerifiedLog) -> KeyHistory:
    """The assertion keys of ``did`` over its verified ``log`` (only the versions whose document is
    ``did``: a portable DID that moved is pinned under each identifier separately).

    Refused (InvalidInput ``webvh_history_unusable``): a key id reused for other key material (which
    key would a signature name?), and a key that leaves the document and comes back (one window
    cannot say "valid in March and in May but not in April": pin such a key with explicit windows).
    """
    versions: list[tuple[LogEntry, dict[str, dict[str, Any]]]] = [
        (entry, _assertion_methods(did, entry.state, entry.version_number))
        for entry in log.entries
        if entry.state.get("id") == did
    ]
    if not versions:
        raise InvalidInput("no version of the log is this DID's document", code="webvh_history_unusable")
    keys: dict[str, dict[str, Any]] = {}
    starts: dict[str, datetime] = {}
    ends: dict[str, datetime] = {}
    previous: set[str] = set()
    for entry, methods in versions:
        listed = set() if entry.parameters.get("deactivated") is True else set(methods)
        for kid in listed - previous:
            if kid in ends:
                raise InvalidInput(
                    f"the key {kid[:200]} left the DID document and came back: pin it with key_windows",
                    code="webvh_history_unusable",
                )
            starts[kid] = entry.version_time
        for kid in previous - listed:
            ends[kid] = entry.version_time
        for kid in listed:
            method = {**methods[kid], "id": kid}
            if kid in keys and _material(keys[kid]) != _material(method):
                raise InvalidInput(
                    f"the key id {kid[:200]} names other key material in a later version",
                    code="webvh_history_unusable",
                )
            keys[kid] = method
        previous = listed
    document = {
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": did,
        "verificationMethod": list(keys.values()),
        "assertionMethod": list(keys),
    }
    return KeyHistory(document=document, windows={kid: (starts[kid], ends.get(kid)) for kid in keys})
