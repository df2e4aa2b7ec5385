"""atheris harness: mudrika.evidence/v1 bundles: parse, verify, render (payments/bundle.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_bundle_v01 fuzz/corpus/bundle_v01 -artifact_prefix=fuzz/crashes/bundle_v01/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "bundle_v01"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
