"""atheris harness: A2A artifact and message parts signatures (trust/a2a/artifacts.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_a2a_parts fuzz/corpus/a2a_parts -artifact_prefix=fuzz/crashes/a2a_parts/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "a2a_parts"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
