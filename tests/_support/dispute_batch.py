"""A varied batch of evidence bundles for the batch tests and the benchmark: genuine ones, amounts
raised after signing, and cases whose nonce is not the one the user signed."""

from __future__ import annotations

import json
from typing import Final

from mudrika.payments.batch import Case
from tests._support.evidence import BUNDLE, NONCE

__all__ = ["batch_of"]

_KINDS: Final = ("genuine", "amount-raised", "other-nonce", "genuine", "no-case-nonce")


def batch_of(count: int) -> list[tuple[bytes, Case]]:
    """``count`` (bundle bytes, the analyst's case) pairs, cycling through five kinds of case."""
    template = json.loads(BUNDLE.read_text())
    genuine = json.dumps(template).encode()
    jobs: list[tuple[bytes, Case]] = []
    for index in range(count):
        kind = _KINDS[index % len(_KINDS)]
        name = f"{index:04d}-{kind}"
        if kind == "amount-raised":
            document = json.loads(genuine)
            total = document["mandates"]["payment"]["payment_mandate_contents"]["payment_details_total"]
            total["amount"]["value"] = 138.49 + index
            jobs.append((json.dumps(document).encode(), Case(name=name, kb_nonce=NONCE)))
        elif kind == "other-nonce":
            jobs.append((genuine, Case(name=name, kb_nonce=f"someone-elses-nonce-{index}")))
        elif kind == "no-case-nonce":
            jobs.append((genuine, Case(name=name)))
        else:
            jobs.append((genuine, Case(name=name, kb_nonce=NONCE)))
    return jobs
