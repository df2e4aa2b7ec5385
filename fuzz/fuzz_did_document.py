"""atheris harness: DID Core documents and key_for (identity/document.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_did_document fuzz/corpus/did_document -artifact_prefix=fuzz/crashes/did_document/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "did_document"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
