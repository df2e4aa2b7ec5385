#!/usr/bin/env bash
# The one command that installs everything the tests need and runs every check CI runs:
# ruff, mypy --strict (src + tests), and pytest with warnings as errors (unit, integration with real
# servers started by the tests on 127.0.0.1, interop against other implementations, security).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-node
.venv/bin/ruff check src tests bench fuzz
.venv/bin/ruff format --check src tests bench fuzz
.venv/bin/mypy
.venv/bin/python -m pytest -W error --cov --cov-report=term:skip-covered -q "$@"
