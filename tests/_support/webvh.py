"""did:webvh logs made by the PyPI reference implementation ``did-webvh`` 1.0.1 (the oracle), and
the small edits the refusal tests make to them.  Only the oracle's own API builds and signs entries
here; mudrika's code is never used to make what it is then asked to verify."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

DOMAIN = "shop.example"
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def oracle() -> Any:
    """The did_webvh package, or skip when it is not installed (it is in the ``test`` extra)."""
    return pytest.importorskip("did_webvh")


@dataclass
class PyLog:
    """A log the oracle made: its states (one per entry), keys, and the witness file if any."""

    states: list[Any]
    keys: dict[str, Any]
    witness: list[dict[str, Any]] | None = None
    extra_lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def did(self) -> str:
        return str(self.states[-1].document_id)

    def lines(self) -> list[dict[str, Any]]:
        return [state.history_line() for state in self.states] + self.extra_lines

    def text(self) -> str:
        return "".join(json.dumps(line) + "\n" for line in self.lines())


def _key(name: str) -> Any:
    from did_webvh.askar import AskarSigningKey

    return AskarSigningKey.generate("ed25519")


def _vm(key: Any, did: str, fragment: str) -> dict[str, Any]:
    return {
        "id": f"{did}#{fragment}",
        "type": "Multikey",
        "controller": did,
        "publicKeyMultibase": key.multikey,
    }


def _document(did: str, key: Any, fragment: str, *, service: bool = False) -> dict[str, Any]:
    document: dict[str, Any] = {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
        "id": did,
        "verificationMethod": [_vm(key, did, fragment)],
        "assertionMethod": [f"{did}#{fragment}"],
        "authentication": [f"{did}#{fragment}"],
    }
    if service:
        document["service"] = [
            {"id": f"{did}#shop", "type": "LinkedDomains", "serviceEndpoint": "https://shop.example/"}
        ]
    return document


def _sign(state: Any, key: Any) -> Any:
    state.proofs.append(state.create_proof(key, timestamp=state.timestamp))
    return state


def make_prerotation_log() -> PyLog:
    """v1 (k1, commits k2) → v2 rotates to k2 (commits k3) → v3 rotates to k3, ends pre-rotation,
    adds a service → v4 changes the document under k3 → v5 deactivates."""
    oracle()
    from did_webvh.core.hash_utils import DEFAULT_HASH, HashInfo
    from did_webvh.core.state import DocumentState

    hashed = HashInfo.from_name(DEFAULT_HASH)
    keys = {name: _key(name) for name in ("k1", "k2", "k3")}
    placeholder = f"did:webvh:{{SCID}}:{DOMAIN}"
    genesis = DocumentState.initial(
        params={
            "updateKeys": [keys["k1"].multikey],
            "nextKeyHashes": [hashed.formatted_hash(keys["k2"].multikey.encode())],
        },
        document=_document(placeholder, keys["k1"], "key-1"),
        timestamp=T0,
    )
    states = [_sign(genesis, keys["k1"])]
    did = genesis.document_id
    steps = [
        (
            keys["k2"],
            _document(did, keys["k2"], "key-2"),
            {
                "updateKeys": [keys["k2"].multikey],
                "nextKeyHashes": [hashed.formatted_hash(keys["k3"].multikey.encode())],
            },
        ),
        (
            keys["k3"],
            _document(did, keys["k3"], "key-3", service=True),
            {"updateKeys": [keys["k3"].multikey], "nextKeyHashes": []},
        ),
        (
            keys["k3"],
            {**_document(did, keys["k3"], "key-3", service=True), "alsoKnownAs": ["https://shop.example/"]},
            {},
        ),
        (keys["k3"], None, {"deactivated": True, "updateKeys": []}),
    ]
    for number, (key, document, params) in enumerate(steps, start=1):
        state = states[-1].create_next(
            document=document, params_update=params, timestamp=T0 + timedelta(days=30 * number)
        )
        states.append(_sign(state, key))
    return PyLog(states=states, keys=keys)


def make_plain_log(
    *,
    witnesses: int = 0,
    threshold: int = 0,
    portable: bool = False,
    first_params: dict[str, Any] | None = None,
    second_params: dict[str, Any] | None = None,
    second_did: str | None = None,
) -> PyLog:
    """v1 (k1, no pre-rotation, optional witness rule and ``portable``, more ``first_params``) → v2
    changes the document (its own parameter changes ``second_params``; under ``second_did``, a DID
    with the same SCID on another path, when given), signed by k1."""
    oracle()
    from did_webvh.core.state import DocumentState

    keys = {name: _key(name) for name in ("k1", "stranger", *(f"w{i}" for i in range(witnesses)))}
    params: dict[str, Any] = {"updateKeys": [keys["k1"].multikey]}
    if witnesses:
        params["witness"] = {
            "threshold": threshold,
            "witnesses": [{"id": "did:key:" + keys[f"w{i}"].multikey} for i in range(witnesses)],
        }
    if portable:
        params["portable"] = True
    params.update(first_params or {})
    placeholder = f"did:webvh:{{SCID}}:{DOMAIN}:dids:alice"
    genesis = _sign(
        DocumentState.initial(
            params=params, document=_document(placeholder, keys["k1"], "key-1"), timestamp=T0
        ),
        keys["k1"],
    )
    did = genesis.document_id
    if second_did is not None:
        did = second_did.replace("{SCID}", did.split(":")[2])
    second = genesis.create_next(
        document=_document(did, keys["k1"], "key-1", service=True),
        params_update=second_params or {},
        timestamp=T0 + timedelta(days=1),
    )
    return PyLog(states=[genesis, _sign(second, keys["k1"])], keys=keys)


def witness_entry(log: PyLog, version: int, witness: str) -> dict[str, Any]:
    """A did-witness.json entry: ``witness`` approves ``version`` (the oracle's own signer)."""
    from did_webvh.core.proof import di_jcs_sign

    version_id = log.states[version - 1].version_id
    proof = di_jcs_sign({"versionId": version_id}, log.keys[witness], timestamp=T0 + timedelta(days=2))
    return {"versionId": version_id, "proof": [proof]}


def resolve_with_oracle(log: PyLog, tmp_dir: Any, version: int) -> dict[str, Any]:
    """The oracle's own resolution of ``log`` at ``version`` (a document, or its error)."""
    import asyncio

    from did_webvh.resolver import resolve_did

    path = tmp_dir / "did.jsonl"
    path.write_text(log.text())
    if log.witness is not None:
        (tmp_dir / "did-witness.json").write_text(json.dumps(log.witness))
    result = asyncio.run(resolve_did(log.did, local_history=path, version_number=str(version)))
    serialized: dict[str, Any] = result.serialize()
    return serialized


def make_assertion_rotation_log(first: Any, second: Any, *, rotated_at: datetime) -> PyLog:
    """v1 (at :data:`T0`) lists ``first`` (a mudrika ``KeyPair``) as ``#key-1`` under
    ``assertionMethod``; v2 (at ``rotated_at``) replaces it with ``second`` as ``#key-2``.  The log
    itself is signed by an update key of the oracle's."""
    oracle()
    from did_webvh.core.state import DocumentState

    update = _key("update")

    def document(did: str, key: Any, fragment: str) -> dict[str, Any]:
        method = {
            "id": f"{did}#{fragment}",
            "type": "Multikey",
            "controller": did,
            "publicKeyMultibase": key.public_key.to_multikey(),
        }
        return {
            "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
            "id": did,
            "verificationMethod": [method],
            "assertionMethod": [method["id"]],
        }

    placeholder = f"did:webvh:{{SCID}}:{DOMAIN}:dids:issuer"
    genesis = _sign(
        DocumentState.initial(
            params={"updateKeys": [update.multikey]},
            document=document(placeholder, first, "key-1"),
            timestamp=T0,
        ),
        update,
    )
    rotated = genesis.create_next(
        document=document(genesis.document_id, second, "key-2"), timestamp=rotated_at
    )
    return PyLog(states=[genesis, _sign(rotated, update)], keys={"update": update})
