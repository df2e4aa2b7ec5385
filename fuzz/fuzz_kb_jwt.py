"""atheris harness: Key Binding JWTs after a genuine SD-JWT (crypto/sdjwt/_kb.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_kb_jwt fuzz/corpus/kb_jwt -artifact_prefix=fuzz/crashes/kb_jwt/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "kb_jwt"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
