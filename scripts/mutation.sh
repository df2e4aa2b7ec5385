#!/usr/bin/env bash
# Mutation check of the security core (docs/security.md, "Mutation check"):
#   bash scripts/mutation.sh                      every target module
#   bash scripts/mutation.sh --module anchoring.py   one module (repeatable); --list shows the mutants
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src"
exec .venv/bin/python scripts/mutation.py "$@"
