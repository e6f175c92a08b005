"""Where things are, for the integration tests and the benches (bench/lib/benchlib.py and the benches
that run on their own import it too): the repository root and the programs the tests run, each
program overridable from the environment as `make test` sets it."""
from __future__ import annotations

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
DCSERVE_BIN = os.environ.get("DCSERVE_BIN", str(ROOT / ".build/release/dcserve"))
BROTLI_CLI = os.environ.get("DCSERVE_BROTLI_CLI", str(ROOT / ".deps/brotli/bin/brotli"))
VENV_PYTHON = ROOT / ".deps/venv/bin/python"
