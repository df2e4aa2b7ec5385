"""atheris harness: AP2 v0.2 evidence bundles: parse, verify, render (payments/v02/bundle.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_bundle_v02 fuzz/corpus/bundle_v02 -artifact_prefix=fuzz/crashes/bundle_v02/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "bundle_v02"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
