"""atheris harness: Signature-Agent and the Web Bot Auth profile rules (trust/httpsig/_webprofile.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_signature_agent fuzz/corpus/signature_agent -artifact_prefix=fuzz/crashes/signature_agent/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "signature_agent"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
