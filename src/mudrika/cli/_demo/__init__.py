"""``mudrika demo``: an agent purchase end to end, protected, signed and verified offline, on 127.0.0.1.

Why it lives under ``cli``: it uses the trust wing (the middleware in front of the merchant) *and*
the payments wing (mandates, the chain verifier), and only ``cli`` may import both.  ``_identities``
is step 1, ``_merchant`` the protected a2a-sdk merchant, ``_shopper`` the a2a-sdk client, ``_evidence``
the bundles and offline verification, ``_run`` the script that ties the six steps together.
"""

from __future__ import annotations

from mudrika.cli._demo._run import DEMO_FORMAT, STEP_NAMES, DemoRun, StepOutcome, run_demo

__all__ = ["DEMO_FORMAT", "STEP_NAMES", "DemoRun", "StepOutcome", "run_demo"]
