#!/usr/bin/env bash
# Installs mudrika and runs its main job: provision an agent (key, DID, DID document, CSR) into a
# temporary directory and print its AgentIdentity JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out="$(mktemp -d)/agent"
export MUDRIKA_DEMO_PASSWORD="${MUDRIKA_DEMO_PASSWORD:-$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(24))')}"
.venv/bin/mudrika provision --name demo-agent --method bindu --author demo --endpoint https://demo-agent.example/a2a --out "$out" --password-env MUDRIKA_DEMO_PASSWORD --json
