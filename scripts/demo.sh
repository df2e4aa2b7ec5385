#!/usr/bin/env bash
# Installs mudrika, then runs its main job: `mudrika demo` — a merchant agent that lets only the right
# callers in, a purchase whose every step is signed, and an analyst who verifies it offline (and
# catches a changed amount). 127.0.0.1 only; keys and files go to a new temporary directory.
# Extra arguments go to the demo (e.g. --out DIR, --json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/mudrika demo "$@"
