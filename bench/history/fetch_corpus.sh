#!/usr/bin/env bash
# Fetches the chatterbot-corpus package (real conversational English, PyPI) into a cache directory
# (never committed) and prints the directory holding its english/*.yml files.
#   bench/history/fetch_corpus.sh [CACHE_DIR]   (default: ${DCSERVE_BENCH_CACHE:-~/.cache/dcserve-bench})
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${1:-${DCSERVE_BENCH_CACHE:-$HOME/.cache/dcserve-bench}}/chatterbot-corpus-1.2.0
if [ ! -d "$cache/chatterbot_corpus/data/english" ]; then
    mkdir -p "$cache"
    "$root/.deps/venv/bin/python" -m pip download --quiet --no-deps chatterbot-corpus==1.2.0 -d "$cache" >&2
    "$root/.deps/venv/bin/python" -m zipfile -e "$cache"/chatterbot_corpus-1.2.0-py2.py3-none-any.whl "$cache" >&2
fi
echo "$cache/chatterbot_corpus/data/english"
