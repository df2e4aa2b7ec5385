"""Every exception is importable from the package root; the root import stays light."""

from __future__ import annotations

import subprocess
import sys

import mudrika
from mudrika.errors import MudrikaError


def test_every_exported_exception_is_a_mudrika_error() -> None:
    for name in mudrika.__all__:
        if name == "__version__":
            continue
        obj = getattr(mudrika, name)
        assert isinstance(obj, type)
        assert issubclass(obj, MudrikaError), name


def test_root_import_does_not_load_trust_or_payments() -> None:
    code = "import sys, mudrika; print(sorted(m for m in sys.modules if m.startswith('mudrika.')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "mudrika.trust" not in loaded
    assert "mudrika.payments" not in loaded


def test_payments_never_pull_in_trust() -> None:
    code = (
        "import sys, mudrika.payments.models, mudrika.payments.a2a, mudrika.crypto.sdjwt;"
        "print(sorted(m for m in sys.modules if m.startswith('mudrika.trust')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
