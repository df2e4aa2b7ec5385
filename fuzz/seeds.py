"""Write every row's seeds into ``fuzz/corpus/<name>/`` (``python -m fuzz.seeds``).

Why: libFuzzer mutates from its corpus; starting from valid inputs (a signed JWS, a verifiable
bundle) gets it past the first checks within seconds.  Files are named by their SHA-1, as libFuzzer
names the inputs it adds, so re-running never duplicates a seed.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from fuzz.targets import TARGETS

CORPUS = Path(__file__).resolve().parent / "corpus"


def write_seeds(root: Path = CORPUS) -> int:
    """Write the seeds of every row under ``root``; returns how many files were new."""
    written = 0
    for target in TARGETS:
        folder = root / target.name
        folder.mkdir(parents=True, exist_ok=True)
        for seed in target.seeds():
            path = folder / hashlib.sha1(seed, usedforsecurity=False).hexdigest()
            if not path.exists():
                path.write_bytes(seed)
                written += 1
    return written


if __name__ == "__main__":
    count = write_seeds(Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS)
    sys.stdout.write(f"{count} new seed files\n")
