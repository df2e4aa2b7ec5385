"""Verifying a 100-entry did:webvh log against its floor.

The log is made by the reference implementation (PyPI ``did-webvh``, its own Askar Ed25519 keys and
signer): a genesis entry and 99 updates, each changing the DID document and signed by the update key,
so every entry carries one ``eddsa-jcs-2022`` proof.  *ours* = ``verify_log(parse_log(text))`` from
the ``did.jsonl`` bytes: strict JSON per line, then every check of did:webvh v1.0 §3.7 per entry
(versionId sequence, parameters, SCID, entry hash, versionTime order, DID, update-key authorisation,
the proof).  *verify only* = ``verify_log`` on already-parsed entries.  The floor is what a correct
verifier cannot avoid, on already-parsed entries: per entry the entry hash (RFC 8785 JCS of the entry
with ``versionId`` set to its predecessor's, SHA-256) and the proof's hash data (JCS + SHA-256 of the
proof options and of the entry without its proof), then one bare ``cryptography`` Ed25519 verify —
100 verifies and 300 JCS serialisations, with mudrika's JCS.  Target: ours within 3× of the floor's
time.

Run: .venv/bin/python bench/bench_webvh.py
"""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from _ceiling import per_core_cell  # noqa: E402
from _timing import Spread, fmt, measure, ratio, verdict  # noqa: E402
from mudrika.crypto.jcs import canonicalize  # noqa: E402
from mudrika.crypto.keys import PublicKey  # noqa: E402
from mudrika.crypto.multibase import base58btc_decode  # noqa: E402
from mudrika.identity.did import parse_cache_clear  # noqa: E402
from mudrika.identity.methods.webvh._log import parse_log, verify_log  # noqa: E402

ENTRIES = 100
REPEATS = 7
TARGET = 3.0
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def _document(did: str, multikey: str, version: int) -> dict[str, Any]:
    return {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
        "id": did,
        "verificationMethod": [
            {"id": f"{did}#key-1", "type": "Multikey", "controller": did, "publicKeyMultibase": multikey}
        ],
        "assertionMethod": [f"{did}#key-1"],
        "authentication": [f"{did}#key-1"],
        "service": [
            {
                "id": f"{did}#shop",
                "type": "LinkedDomains",
                "serviceEndpoint": f"https://shop.example/v{version}",
            }
        ],
    }


def build_log() -> str:
    """did.jsonl of ENTRIES entries, made and signed by did-webvh alone."""
    from did_webvh.askar import AskarSigningKey
    from did_webvh.core.state import DocumentState

    key = AskarSigningKey.generate("ed25519")
    placeholder = "did:webvh:{SCID}:shop.example"
    state = DocumentState.initial(
        params={"updateKeys": [key.multikey]}, document=_document(placeholder, key.multikey, 1), timestamp=T0
    )
    state.proofs.append(state.create_proof(key, timestamp=state.timestamp))
    states = [state]
    for version in range(2, ENTRIES + 1):
        state = states[-1].create_next(
            document=_document(states[0].document_id, key.multikey, version),
            timestamp=T0 + timedelta(hours=version),
        )
        state.proofs.append(state.create_proof(key, timestamp=state.timestamp))
        states.append(state)
    return "".join(json.dumps(s.history_line()) + "\n" for s in states)


def main() -> None:
    text = build_log()
    data = text.encode("utf-8")
    entries = parse_log(data)
    assert len(verify_log(entries).entries) == ENTRIES

    # The floor's inputs: parsed entries, each proof's signature and key decoded ahead of time.
    prepared = []
    previous = ""
    for number, entry in enumerate(entries, start=1):
        proof = entry["proof"][0]
        multikey = proof["verificationMethod"].split("#", 1)[1]
        public = PublicKey.from_multikey(multikey).to_cryptography()
        assert isinstance(public, ed25519.Ed25519PublicKey)
        signature = base58btc_decode(proof["proofValue"][1:])
        options = {name: value for name, value in proof.items() if name != "proofValue"}
        prepared.append(
            (entry, previous if number > 1 else entry["parameters"]["scid"], options, public, signature)
        )
        previous = entry["versionId"]

    def floor() -> None:
        for entry, predecessor, options, public, signature in prepared:
            unsigned = {name: value for name, value in entry.items() if name != "proof"}
            hashlib.sha256(canonicalize({**unsigned, "versionId": predecessor})).digest()
            public.verify(
                signature,
                hashlib.sha256(canonicalize(options)).digest()
                + hashlib.sha256(canonicalize(unsigned)).digest(),
            )

    t = measure(
        {
            "floor": floor,
            "ours": lambda: (parse_cache_clear(), verify_log(parse_log(data))),
            "verify only": lambda: (parse_cache_clear(), verify_log(entries)),
        },
        repetitions=REPEATS,
        number=3,
    )
    slower = ratio(t["ours"], t["floor"])
    slower_verify = ratio(t["verify only"], t["floor"])
    ms = {name: _ms(spread) for name, spread in t.items()}
    print("## did:webvh log verification (bench/bench_webvh.py)\n")
    print(
        f"A did:webvh log of {ENTRIES} entries ({len(data):,} bytes) made and signed by the reference "
        "implementation (PyPI `did-webvh`): genesis + 99 document updates, one `eddsa-jcs-2022` proof each. "
        "*ours* = `verify_log(parse_log(did.jsonl bytes))`, every did:webvh v1.0 §3.7 check per entry; "
        "*verify only* = `verify_log` on parsed entries. *floor* = on parsed entries, per entry the entry "
        "hash (JCS + SHA-256) and the proof's hash data (JCS + SHA-256 of options and of the unsigned "
        "entry) and one bare `cryptography` Ed25519 verify: 100 verifies, 300 JCS serialisations "
        f"(mudrika's JCS). Median (min–max) of {REPEATS} interleaved repetitions of 3 verifications; "
        f"× floor = time ÷ floor time per repetition (target ≤ {TARGET:g}×). Cold: the one cache of ours "
        "on this path, DID parsing, is emptied before every verification (the same log is verified again "
        "and again).\n"
    )
    verifies = {"EdDSA": ENTRIES}
    print("| verification | ms per log | logs per core | × floor | target | verdict |")
    print("|---|---:|---:|---:|---|---|")
    print(f"| floor | {fmt(ms['floor'], 2)} | {per_core_cell(t['floor'].median, verifies)} | 1.00 |  |  |")
    print(
        f"| ours, from the log bytes | {fmt(ms['ours'], 2)} | {per_core_cell(t['ours'].median, verifies)} "
        f"| {fmt(slower, 2)} | ≤ {TARGET:g}× "
        f"| {verdict(slower, TARGET, at_least=False)} |"
    )
    print(
        f"| `verify_log` on parsed entries | {fmt(ms['verify only'], 2)} "
        f"| {per_core_cell(t['verify only'].median, verifies)} | {fmt(slower_verify, 2)} | ≤ {TARGET:g}× "
        f"| {verdict(slower_verify, TARGET, at_least=False)} |"
    )


def _ms(spread: Spread) -> Spread:
    """µs per log to ms per log, sample by sample."""
    return Spread.of([value / 1000 for value in spread.samples])


if __name__ == "__main__":
    main()
