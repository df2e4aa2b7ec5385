"""atheris harness: RFC 9421 DID-signed requests, RFC 9530 digests (trust/httpsig).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_httpsig_request fuzz/corpus/httpsig_request -artifact_prefix=fuzz/crashes/httpsig_request/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "httpsig_request"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
