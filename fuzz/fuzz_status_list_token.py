"""atheris harness: Status List Tokens and the status claim (crypto/statuslist/_token.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_status_list_token fuzz/corpus/status_list_token -artifact_prefix=fuzz/crashes/status_list_token/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "status_list_token"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
