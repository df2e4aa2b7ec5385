"""atheris harness: strict JSON (I-JSON limits) and RFC 8785 canonical bytes (crypto/jcs).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_jcs fuzz/corpus/jcs -artifact_prefix=fuzz/crashes/jcs/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "jcs"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
