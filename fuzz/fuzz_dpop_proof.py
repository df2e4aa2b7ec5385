"""atheris harness: RFC 9449 DPoP proofs (trust/keycloak/dpop.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_dpop_proof fuzz/corpus/dpop_proof -artifact_prefix=fuzz/crashes/dpop_proof/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "dpop_proof"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
