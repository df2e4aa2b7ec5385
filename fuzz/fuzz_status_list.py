"""atheris harness: IETF Token Status List 'lst' decoding (crypto/statuslist/_list.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_status_list fuzz/corpus/status_list -artifact_prefix=fuzz/crashes/status_list/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "status_list"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
