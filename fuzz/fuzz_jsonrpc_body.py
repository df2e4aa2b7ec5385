"""atheris harness: JSON-RPC request bodies as the middleware reads them (A2A and MCP).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_jsonrpc_body fuzz/corpus/jsonrpc_body -artifact_prefix=fuzz/crashes/jsonrpc_body/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "jsonrpc_body"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
