"""atheris harness: evidence bundles of either format read for their claims, nothing verified (payments/claims.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_bundle_claims fuzz/corpus/bundle_claims -artifact_prefix=fuzz/crashes/bundle_claims/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "bundle_claims"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
