"""atheris harness: SD-JWT presentations with key binding (crypto/sdjwt).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_sd_jwt fuzz/corpus/sd_jwt -artifact_prefix=fuzz/crashes/sd_jwt/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "sd_jwt"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
