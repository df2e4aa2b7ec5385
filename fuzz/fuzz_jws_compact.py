"""atheris harness: compact JWS and JWT verification (crypto/jose.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_jws_compact fuzz/corpus/jws_compact -artifact_prefix=fuzz/crashes/jws_compact/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "jws_compact"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
