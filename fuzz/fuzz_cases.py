"""atheris harness: dispute case files, JSON Lines (payments/batch.py parse_case).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_cases fuzz/corpus/cases -artifact_prefix=fuzz/crashes/cases/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "cases"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
