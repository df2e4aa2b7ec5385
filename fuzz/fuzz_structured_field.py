"""atheris harness: RFC 8941 Dictionary fields: Signature-Input, Signature (trust/httpsig/_sf.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_structured_field fuzz/corpus/structured_field -artifact_prefix=fuzz/crashes/structured_field/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "structured_field"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
