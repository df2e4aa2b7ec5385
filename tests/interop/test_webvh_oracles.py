"""did:webvh logs made by both reference implementations resolve in mudrika to the documents the
implementations themselves resolve, at every version.

* PyPI ``did-webvh`` 1.0.1 makes a pre-rotation log (three key rotations, a service, an update,
  deactivation) and a plain one under a path; npm ``didwebvh-ts`` 2.8.0 makes its own rotating,
  deactivated log.  Each log is resolved at every ``versionNumber`` by mudrika and by both oracles.
* The two oracles write the implicit ``#files`` / ``#whois`` services differently (Python: absolute
  ids and a trailing slash; TypeScript, like the specification's example: ``#files`` and no slash).
  mudrika writes them as didwebvh-ts does, so documents are compared exactly with didwebvh-ts and,
  with Python, exactly except for those two implicit entries, whose URLs are compared instead.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from mudrika.identity.methods.webvh import resolve_log
from tests._support.node import run_node_peer
from tests._support.webvh import PyLog, make_plain_log, make_prerotation_log, resolve_with_oracle

pytestmark = pytest.mark.interop
oracle_resolver = pytest.importorskip("did_webvh.resolver")

_IMPLICIT = ("#files", "#whois")


def _explicit(document: dict[str, Any]) -> dict[str, Any]:
    services = [s for s in document.get("service", []) if not str(s["id"]).endswith(_IMPLICIT)]
    return {**document, "service": services}


def _implicit_urls(document: dict[str, Any]) -> list[str]:
    return [
        str(s["serviceEndpoint"]).rstrip("/")
        for s in document.get("service", [])
        if str(s["id"]).endswith(_IMPLICIT)
    ]


@pytest.mark.parametrize("make", [make_prerotation_log, make_plain_log], ids=["prerotation", "plain"])
def test_python_logs_resolve_alike_in_mudrika_python_and_typescript(make: Any, tmp_path: Path) -> None:
    log: PyLog = make()
    text = log.text()
    ts = run_node_peer("webvh.mjs", {"op": "resolve", "log": log.lines()})
    assert "error" not in ts, ts
    assert len(ts["versions"]) == len(log.states)
    for number in range(1, len(log.states) + 1):
        ours = resolve_log(log.did, text, version_number=number)
        py = resolve_with_oracle(log, tmp_path, number)
        assert ours.document == ts["versions"][number - 1]["doc"]
        assert _explicit(ours.document) == _explicit(py["didDocument"])
        assert _implicit_urls(ours.document) == _implicit_urls(py["didDocument"])
        for meta in (py["didDocumentMetadata"], ts["versions"][number - 1]["meta"]):
            assert meta["versionId"] == ours.metadata["versionId"]
            assert bool(meta.get("deactivated")) == ours.metadata["deactivated"]


def test_typescript_log_resolves_alike_in_mudrika_and_python(tmp_path: Path) -> None:
    made = run_node_peer(
        "webvh.mjs",
        {"op": "make", "address": "shop.example", "seeds": [secrets.token_hex(32) for _ in range(3)]},
    )
    did, lines = made["did"], made["log"]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    assert len(lines) == 4
    (tmp_path / "did.jsonl").write_text(text)
    for number, theirs in enumerate(made["versions"], start=1):
        ours = resolve_log(did, text, version_number=number)
        assert ours.document == theirs["doc"]
        assert ours.metadata["versionId"] == theirs["meta"]["versionId"]
        py = asyncio.run(
            oracle_resolver.resolve_did(did, local_history=tmp_path / "did.jsonl", version_number=str(number))
        ).serialize()
        assert _explicit(ours.document) == _explicit(py["didDocument"])
        assert py["didDocumentMetadata"]["versionId"] == ours.metadata["versionId"]
    assert resolve_log(did, text).metadata["deactivated"] is True
