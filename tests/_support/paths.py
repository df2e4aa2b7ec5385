"""Where the tests find the public conformance vectors and the node interop peers.

The vectors live in ``../shared/vectors`` beside the checkout and are never copied into the project;
tests that need them skip with a clear message when the folder is absent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
VECTORS = REPO_ROOT.parent / "shared" / "vectors"
NODE_DIR = REPO_ROOT / "tests" / "node"
FIXTURES = REPO_ROOT / "fixtures"


def vectors(*parts: str) -> Path:
    """Return a path under ../shared/vectors, or skip the test when the vectors are not there."""
    path = VECTORS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"conformance vectors not found at {path} (expected ../shared/vectors beside the repo)")
    return path


def node_peer() -> Path:
    """Return the node_modules folder of the interop peers, or skip when node or the install is missing."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed; scripts/test.sh installs it")
    modules = NODE_DIR / "node_modules"
    if not modules.is_dir():
        pytest.skip("tests/node/node_modules missing; run scripts/setup.sh --with-node")
    return modules


def openssl() -> str:
    """The openssl binary, or skip when it is missing (scripts/setup.sh installs it)."""
    path = shutil.which("openssl")
    if path is None:
        pytest.skip("openssl is not installed (scripts/setup.sh installs it)")
    return path
