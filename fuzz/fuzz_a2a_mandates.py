"""atheris harness: AP2 mandates in A2A DataParts (payments/a2a.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_a2a_mandates fuzz/corpus/a2a_mandates -artifact_prefix=fuzz/crashes/a2a_mandates/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "a2a_mandates"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
