"""atheris harness: did:webvh logs and witness files (identity/methods/webvh/_log.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_webvh_log fuzz/corpus/webvh_log -artifact_prefix=fuzz/crashes/webvh_log/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "webvh_log"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
