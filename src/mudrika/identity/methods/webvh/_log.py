"""Reading and verifying a did:webvh DID log (did:webvh v1.0 §3.6.2 "Read (Resolve)", §3.7).

The log is JSON Lines (``did.jsonl``); each line is one entry ``{versionId, versionTime, parameters,
state, proof}``.  Every entry is checked, in order, before any version is answered — a log whose
later part is forged is a log someone tampered with, and a key judged "as of" an earlier day must
not rest on it:

1. **Shape** (§3.6.2 step 1): exactly those five members, ``versionId`` = ``<n>-<entryHash>`` with
   ``n`` the entry's position (1, 2, …) — a gap, a repeat or a reordering is a broken chain.
2. **SCID** (§3.7.3, entry 1 only): the entry without ``proof``, ``versionId`` set to the SCID, every
   occurrence of the SCID replaced by ``{SCID}``, canonicalised (JCS) and hashed, must give the SCID.
3. **Entry hash** (§3.7.4): the entry without ``proof``, with ``versionId`` replaced by the previous
   entry's ``versionId`` (the SCID for entry 1), JCS, SHA-256, multihash, base58btc — must equal the
   ``entryHash`` part of its own ``versionId``.  An entry changed after it was written fails here.
4. **Parameters** (§3.7.6): only the defined ones, with their types; ``method`` is
   ``did:webvh:1.0``; ``scid`` only in entry 1; ``portable`` only switched on in entry 1.
5. **Authorisation** (§3.7.5, §3.7.8): every proof is ``eddsa-jcs-2022``, ``assertionMethod``, by a
   ``did:key`` whose Multikey is an authorised update key — the previous entry's ``updateKeys``, or,
   for entry 1 and while pre-rotation is active, the entry's own.
6. **Pre-rotation** (§3.7.8): after an entry with ``nextKeyHashes``, the next entry must set
   ``updateKeys`` and each key's hash (base58btc multihash SHA-256 of the Multikey text) must be one
   of those committed hashes.
7. **Time** (§3.6.2 step 4): ``versionTime`` is UTC ISO 8601 and strictly increases.
8. **Identity** (§3.6.2 step 7): ``state.id`` is a did:webvh whose SCID is the log's; it may only
   change while ``portable`` is on.
9. **Deactivation** (§3.6.4): nothing may follow an entry with ``deactivated: true``.
10. **Witnesses** (§3.7.9): when the rule in force for an entry (the previous entry's ``witness``;
    entry 1's own) has a threshold, that many of its witnesses must have approved this version or
    a later one in ``did-witness.json``, each approval an ``eddsa-jcs-2022`` proof over
    ``{"versionId": …}`` by the witness's did:key.

Each failure has its own code (``webvh_*``), so a report can say *which* rule a log broke.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from mudrika.crypto.dataintegrity import did_key_of_proof, verify_eddsa_jcs_2022
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.keys import PublicKey
from mudrika.crypto.multibase import base58btc_encode
from mudrika.errors import (
    BindingError,
    InvalidInput,
    SignatureError,
    UntrustedKeyError,
    VerificationError,
)

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_LOG_BYTES",
    "METHOD_VERSION",
    "SCID_PLACEHOLDER",
    "LogEntry",
    "VerifiedLog",
    "entry_hash",
    "key_hash",
    "parse_log",
    "verify_log",
]

METHOD_VERSION: Final = "did:webvh:1.0"
SCID_PLACEHOLDER: Final = "{SCID}"
DEFAULT_MAX_LOG_BYTES: Final = 4 * 1024 * 1024
DEFAULT_MAX_ENTRIES: Final = 10_000
_MAX_LINE_BYTES: Final = 256 * 1024
_ENTRY_MEMBERS: Final = frozenset({"versionId", "versionTime", "parameters", "state", "proof"})
_PARAMETERS: Final = frozenset(
    {"method", "scid", "updateKeys", "nextKeyHashes", "portable", "deactivated", "witness", "watchers", "ttl"}
)
_VERSION_ID: Final = re.compile(r"([1-9][0-9]{0,8})-([1-9A-HJ-NP-Za-km-z]{1,80})")
#: ASCII digits only (``\d`` would also match other scripts' digits, which datetime refuses).
_TIME: Final = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-]00:00)"
)
#: didwebvh-ts writes the witness threshold as a string of ASCII digits (``str.isdigit`` would
#: also accept "²" and strings too long for ``int``).
_THRESHOLD_TEXT: Final = re.compile(r"[0-9]{1,9}")
#: multihash header of SHA-256 (code 0x12, length 32).
_SHA256_MULTIHASH: Final = b"\x12\x20"


def _multihash_b58(data: bytes) -> str:
    return base58btc_encode(_SHA256_MULTIHASH + hashlib.sha256(data).digest())


def key_hash(multikey: str) -> str:
    """The pre-rotation commitment to an update key (§3.7.8): base58btc(multihash(SHA-256(text)))."""
    return _multihash_b58(multikey.encode("utf-8"))


def entry_hash(entry: Mapping[str, Any], previous_version_id: str) -> str:
    """§3.7.4: the hash an entry's ``versionId`` must carry, given its predecessor's ``versionId``."""
    unsigned = {name: value for name, value in entry.items() if name != "proof"}
    unsigned["versionId"] = previous_version_id
    return _multihash_b58(canonicalize(unsigned))


def _scid_of(entry: Mapping[str, Any], scid: str) -> str:
    """§3.7.3: the SCID the first entry's own content derives (the ``{SCID}`` marker restored everywhere)."""
    unsigned = {name: value for name, value in entry.items() if name != "proof"}
    unsigned["versionId"] = scid
    text = canonicalize(unsigned).decode("utf-8").replace(scid, SCID_PLACEHOLDER)
    preliminary = loads_strict(text.encode("utf-8"), max_bytes=_MAX_LINE_BYTES * 2, max_depth=64)
    return _multihash_b58(canonicalize(preliminary))


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One verified entry with the parameters in force after it."""

    version_id: str
    version_number: int
    version_time: datetime
    version_time_text: str
    parameters: Mapping[str, Any]  # accumulated
    changes: Mapping[str, Any]  # as written in this entry
    state: Mapping[str, Any]
    proofs: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class VerifiedLog:
    """A log whose every entry passed; ``witnessed`` says whether a witness rule applied."""

    scid: str
    entries: tuple[LogEntry, ...]
    witnessed: bool = False
    witness_approvals: Mapping[str, int] = field(default_factory=dict)


def parse_log(
    text: str | bytes, *, max_bytes: int = DEFAULT_MAX_LOG_BYTES, max_entries: int = DEFAULT_MAX_ENTRIES
) -> list[dict[str, Any]]:
    """The entries of a ``did.jsonl`` (strict JSON per line, capped); InvalidInput ``webvh_malformed_log``."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if len(data) > max_bytes:
        raise InvalidInput("DID log larger than allowed", code="too_large", limit=max_bytes)
    lines = data.split(b"\n")
    if lines and lines[-1].strip() == b"":
        lines.pop()
    if not lines:
        raise InvalidInput("the DID log is empty", code="webvh_malformed_log")
    if len(lines) > max_entries:
        raise InvalidInput("DID log has too many entries", code="too_large", limit=max_entries)
    entries = []
    for number, line in enumerate(lines, start=1):
        try:
            entry = loads_strict(line.rstrip(b"\r"), max_bytes=_MAX_LINE_BYTES, max_depth=64)
        except InvalidInput as exc:
            raise InvalidInput(
                "DID log line is not a JSON object", code="webvh_malformed_log", line=number, reason=exc.code
            ) from None
        if not isinstance(entry, dict):
            raise InvalidInput("DID log line is not a JSON object", code="webvh_malformed_log", line=number)
        entries.append(entry)
    return entries


def _malformed(message: str, number: int, **fields: Any) -> InvalidInput:
    return InvalidInput(message, code="webvh_malformed_log", version=number, **fields)


def _parse_time(text: object, number: int) -> datetime:
    if not isinstance(text, str) or not _TIME.fullmatch(text):
        raise _malformed("versionTime must be an ISO 8601 UTC date-time", number)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:  # the shape is right but the date is not one (month 13, hour 25, 30 February)
        raise _malformed("versionTime must be an ISO 8601 UTC date-time", number) from None
    return moment.astimezone(UTC)


def _check_string_list(value: object, name: str, number: int) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise _malformed(f"parameter {name!r} must be a list of strings", number, parameter=name)


def _witness_rule(value: object, number: int) -> tuple[int, tuple[str, ...]] | None:
    """``(threshold, witness DIDs)`` of a ``witness`` parameter; ``None`` for ``{}`` / null."""
    if value is None or value == {}:
        return None
    if not isinstance(value, Mapping) or set(value) - {"threshold", "witnesses"}:
        raise _malformed("parameter 'witness' must be {threshold, witnesses}", number)
    threshold = value.get("threshold")
    if isinstance(threshold, str) and _THRESHOLD_TEXT.fullmatch(threshold):
        threshold = int(threshold)  # didwebvh-ts writes the threshold as a string
    witnesses = value.get("witnesses")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not isinstance(witnesses, list):
        raise _malformed("parameter 'witness' must be {threshold, witnesses}", number)
    ids = []
    for item in witnesses:
        if not isinstance(item, Mapping) or set(item) != {"id"} or not isinstance(item["id"], str):
            raise _malformed("each witness is {id: did:key}", number)
        if not item["id"].startswith("did:key:z"):
            raise _malformed("witnesses are did:key DIDs", number)
        ids.append(item["id"])
    if len(set(ids)) != len(ids) or not 0 <= threshold <= len(ids) or (ids and threshold < 1):
        raise _malformed("witness threshold must be 1..number of witnesses", number)
    return (threshold, tuple(ids)) if threshold else None


def _apply(previous: Mapping[str, Any] | None, changes: object, number: int) -> dict[str, Any]:
    """§3.7.6: the parameters in force after an entry (``previous`` plus this entry's changes)."""
    if not isinstance(changes, Mapping):
        raise _malformed("parameters must be a JSON object", number)
    unknown = set(changes) - _PARAMETERS
    if unknown:
        raise _malformed("unknown parameter", number, parameters=sorted(unknown)[:8])
    merged = dict(previous or {})
    for name, value in changes.items():
        if name == "method":
            if value != METHOD_VERSION:
                raise _malformed("method must be did:webvh:1.0", number)
        elif name == "scid":
            if previous is not None:
                raise _malformed("scid may only be set in the first entry", number)
            if not isinstance(value, str) or not value:
                raise _malformed("scid must be a string", number)
        elif name in ("updateKeys", "nextKeyHashes", "watchers"):
            if value is not None:
                _check_string_list(value, name, number)
        elif name in ("portable", "deactivated"):
            if not isinstance(value, bool):
                raise _malformed(f"parameter {name!r} must be a boolean", number)
            if name == "portable" and value and previous is not None and not previous.get("portable"):
                raise _malformed("portable may only be switched on in the first entry", number)
        elif name == "witness":
            _witness_rule(value, number)
        elif name == "ttl" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise _malformed("ttl must be a non-negative integer", number)
        merged[name] = value
    if previous is None:
        for required in ("method", "scid", "updateKeys"):
            if required not in changes:
                raise _malformed(f"the first entry must set {required!r}", number, parameter=required)
    return merged


def _check_did(state: Mapping[str, Any], scid: str, number: int) -> str:
    did = state.get("id")
    if not isinstance(did, str) or not did.startswith("did:webvh:"):
        raise _malformed("state.id must be a did:webvh", number)
    if did.split(":")[2] != scid:
        raise BindingError(
            "the DID in the log does not carry the log's SCID", code="webvh_scid_mismatch", version=number
        )
    return did


def _authorised_proofs(
    entry: Mapping[str, Any], proofs: object, allowed: Sequence[str], number: int
) -> tuple[Mapping[str, Any], ...]:
    """§3.7.5: every proof verifies and is made by an authorised update key; at least one proof."""
    if isinstance(proofs, Mapping):
        proofs = [proofs]
    if not isinstance(proofs, list) or not proofs or not all(isinstance(p, Mapping) for p in proofs):
        raise _malformed("proof must be a non-empty list of Data Integrity proofs", number)
    for proof in proofs:
        multikey = did_key_of_proof(proof)
        if multikey not in allowed:
            raise UntrustedKeyError(
                "log entry signed by a key that was not an authorised update key",
                code="webvh_unauthorized_key",
                version=number,
            )
        try:
            verify_eddsa_jcs_2022(
                entry, proof, key=PublicKey.from_multikey(multikey), proof_purpose="assertionMethod"
            )
        except SignatureError:
            raise SignatureError(
                "log entry proof does not verify", code="webvh_bad_proof", version=number
            ) from None
    return tuple(proofs)


def _check_prerotation(committed: Sequence[str], changes: Mapping[str, Any], number: int) -> None:
    """§3.7.8: after ``nextKeyHashes``, the new ``updateKeys`` must all be ones committed to."""
    keys = changes.get("updateKeys")
    if not isinstance(keys, list) or not keys:
        raise UntrustedKeyError(
            "pre-rotation is active but the entry does not rotate its update keys",
            code="webvh_prerotation_violation",
            version=number,
        )
    for multikey in keys:
        if key_hash(multikey) not in committed:
            raise UntrustedKeyError(
                "update key was not committed to in the previous nextKeyHashes",
                code="webvh_prerotation_violation",
                version=number,
            )


def verify_log(
    entries: Sequence[Mapping[str, Any]],
    *,
    witness_proofs: Sequence[Any] | None = None,
) -> VerifiedLog:
    """Verify every entry of a parsed log (steps 1-10 of the module docstring) and return them."""
    verified: list[LogEntry] = []
    scid = ""
    previous: LogEntry | None = None
    document_id = ""
    rules: list[tuple[int, int, tuple[str, ...]]] = []  # (version, threshold, witnesses)
    for number, entry in enumerate(entries, start=1):
        if set(entry) != _ENTRY_MEMBERS:
            raise _malformed(
                "a log entry has exactly versionId, versionTime, parameters, state, proof", number
            )
        match = _VERSION_ID.fullmatch(entry["versionId"]) if isinstance(entry["versionId"], str) else None
        if match is None:
            raise _malformed("versionId must be <number>-<entryHash>", number)
        if int(match.group(1)) != number:
            raise BindingError(
                "versionId number out of sequence: an entry is missing, repeated or moved",
                code="webvh_chain_broken",
                version=number,
                found=int(match.group(1)),
            )
        if previous is not None and previous.parameters.get("deactivated") is True:
            raise VerificationError(
                "an entry follows the deactivation", code="webvh_after_deactivation", version=number
            )
        parameters = _apply(previous.parameters if previous else None, entry["parameters"], number)
        if previous is None:
            scid = parameters["scid"]
            if _scid_of(entry, scid) != scid:
                raise BindingError(
                    "the SCID is not derived from the first entry", code="webvh_scid_mismatch", version=1
                )
        expected = entry_hash(entry, previous.version_id if previous else scid)
        if match.group(2) != expected:
            raise BindingError(
                "entry hash does not match its content and predecessor",
                code="webvh_entry_hash_mismatch",
                version=number,
            )
        when = _parse_time(entry["versionTime"], number)
        if previous is not None and when <= previous.version_time:
            raise VerificationError("versionTime must increase", code="webvh_version_time", version=number)
        state = entry["state"]
        if not isinstance(state, Mapping):
            raise _malformed("state must be a DID document", number)
        did = _check_did(state, scid, number)
        if previous is not None and did != document_id and not previous.parameters.get("portable"):
            raise BindingError(
                "the DID changed but the DID is not portable", code="webvh_not_portable", version=number
            )
        document_id = did
        changes = entry["parameters"]
        committed = previous.parameters.get("nextKeyHashes") if previous else None
        if committed:
            _check_prerotation(committed, changes, number)
        if previous is None or committed:
            allowed = parameters.get("updateKeys") or []
        else:
            allowed = previous.parameters.get("updateKeys") or []
        proofs = _authorised_proofs(entry, entry["proof"], allowed, number)
        rule = _witness_rule((previous.parameters if previous else parameters).get("witness"), number)
        if rule is not None:
            rules.append((number, *rule))
        previous = LogEntry(
            version_id=entry["versionId"],
            version_number=number,
            version_time=when,
            version_time_text=entry["versionTime"],
            parameters=parameters,
            changes=dict(changes),
            state=state,
            proofs=proofs,
        )
        verified.append(previous)
    if not verified:
        raise InvalidInput("the DID log is empty", code="webvh_malformed_log")
    approvals: dict[str, int] = {}
    if rules:
        approvals = _witness_approvals(witness_proofs, [e.version_id for e in verified])
        for number, threshold, witnesses in rules:
            count = sum(1 for witness in witnesses if approvals.get(witness, 0) >= number)
            if count < threshold:
                raise VerificationError(
                    "not enough witnesses approved this version",
                    code="webvh_witness_threshold",
                    version=number,
                    approvals=count,
                    threshold=threshold,
                )
    return VerifiedLog(scid=scid, entries=tuple(verified), witnessed=bool(rules), witness_approvals=approvals)


def _witness_approvals(witness_proofs: Sequence[Any] | None, version_ids: Sequence[str]) -> dict[str, int]:
    """§3.7.9: the highest version each witness DID approved (an approval of version N approves
    every version before it).  Approvals of versions not in this log count for nothing; an approval
    whose signature fails is refused outright (``did-witness.json`` is published by the controller,
    so a bad proof in it is a tampered file, not noise)."""
    if witness_proofs is None:
        raise VerificationError(
            "the log needs witness approvals (did-witness.json)", code="webvh_witness_threshold"
        )
    if not isinstance(witness_proofs, list):
        raise InvalidInput("did-witness.json must be a JSON array", code="webvh_malformed_witness")
    numbers = {version_id: index for index, version_id in enumerate(version_ids, start=1)}
    best: dict[str, int] = {}
    for item in witness_proofs:
        if not isinstance(item, Mapping) or not isinstance(item.get("versionId"), str):
            raise InvalidInput("witness entry needs versionId and proof", code="webvh_malformed_witness")
        number = numbers.get(item["versionId"])
        proofs = item.get("proof")
        if isinstance(proofs, Mapping):
            proofs = [proofs]
        if not isinstance(proofs, list):
            raise InvalidInput("witness entry needs versionId and proof", code="webvh_malformed_witness")
        for proof in proofs:
            if not isinstance(proof, Mapping):
                raise InvalidInput("a witness proof is a JSON object", code="webvh_malformed_witness")
            multikey = did_key_of_proof(proof)
            try:
                verify_eddsa_jcs_2022(
                    {"versionId": item["versionId"]},
                    proof,
                    key=PublicKey.from_multikey(multikey),
                    proof_purpose="assertionMethod",
                )
            except SignatureError:
                raise SignatureError(
                    "witness proof does not verify", code="webvh_bad_witness_proof"
                ) from None
            if number is not None:
                witness = "did:key:" + multikey
                best[witness] = max(best.get(witness, 0), number)
    return best


def witness_json(text: str | bytes, *, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> Any:
    """``did-witness.json`` parsed strictly."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return loads_strict(data, max_bytes=max_bytes, max_depth=32)
