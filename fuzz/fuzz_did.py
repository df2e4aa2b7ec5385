"""atheris harness: DIDs, DID URLs, did:key, did:jwk and did:bindu identifiers (identity).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_did fuzz/corpus/did -artifact_prefix=fuzz/crashes/did/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "did"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
