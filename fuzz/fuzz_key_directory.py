"""atheris harness: signed key directory responses (trust/httpsig/_directory.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_key_directory fuzz/corpus/key_directory -artifact_prefix=fuzz/crashes/key_directory/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "key_directory"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
