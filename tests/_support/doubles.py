"""Random IEEE 754 doubles drawn from every bit pattern (so every exponent and digit count turns up),
for the RFC 8785 number tests."""

from __future__ import annotations

import math
import random
import struct

__all__ = ["random_doubles"]


def random_doubles(count: int, seed: int) -> list[float]:
    """``count`` finite doubles from uniformly random 64-bit patterns (NaN and infinities skipped)."""
    rng = random.Random(seed)
    numbers: list[float] = []
    while len(numbers) < count:
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(x):
            numbers.append(x)
    return numbers
