"""atheris harness: A2A Agent Cards and their signatures (trust/a2a/cards.py).

Run from the repository root (see fuzz/README.md)::

    PYTHONPATH=src python -m fuzz.fuzz_agent_card fuzz/corpus/agent_card -artifact_prefix=fuzz/crashes/agent_card/
"""

from __future__ import annotations

from fuzz._harness import main, run_one

NAME = "agent_card"


def TestOneInput(data: bytes) -> None:  # noqa: N802 (the name atheris and libFuzzer use)
    run_one(NAME, data)


if __name__ == "__main__":
    main(NAME, TestOneInput)
