#!/usr/bin/env bash
# Creates the project-local virtualenv .deps/venv with the Python test tools (independent decoders,
# DevTools client, pytest). Idempotent: pip runs only when requirements changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.deps/venv"
req="$root/Tests/integration/requirements.txt"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
stamp="$venv/.req-$(sha256sum "$req" | cut -c1-16)"
[ -f "$stamp" ] && exit 0
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
touch "$stamp"
