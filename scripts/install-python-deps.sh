#!/usr/bin/env bash
# Creates the project-local virtualenv .deps/venv with the Python test tools (independent decoders,
# DevTools client, pytest). Idempotent: pip runs only when requirements changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.deps/venv"
req="$root/Tests/integration/requirements.txt"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
stamp="$venv/.req-$(sha256sum "$req" | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
  touch "$stamp"
fi
# mitmproxy (HAR recordings for the estimate tests) in a virtualenv of its own: its pins conflict with
# the test tools' (see requirements-mitmproxy.txt).
mitm="$root/.deps/venv-mitmproxy"
mreq="$root/Tests/integration/requirements-mitmproxy.txt"
[ -x "$mitm/bin/python" ] || python3 -m venv "$mitm"
mstamp="$mitm/.req-$(sha256sum "$mreq" | cut -c1-16)"
if [ ! -f "$mstamp" ]; then
  "$mitm/bin/python" -m pip install --quiet --disable-pip-version-check -r "$mreq"
  touch "$mstamp"
fi
