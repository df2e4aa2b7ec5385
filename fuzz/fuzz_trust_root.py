"""atheris harness: the analyst's trust root, mudrika.trust-root/v1 (payments/trustroot).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_trust_root fuzz/corpus/trust_root -artifact_prefix=fuzz/crashes/trust_root/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "trust_root"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
