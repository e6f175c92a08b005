"""Shared fixtures for integration tests: they run the real release binary and independent tools."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def dcserve_bin() -> str:
    path = os.environ.get("DCSERVE_BIN", str(ROOT / ".build/release/dcserve"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} missing: run `make build` (make test does)")
    return path


@pytest.fixture(scope="session")
def brotli_cli() -> str:
    path = os.environ.get("DCSERVE_BROTLI_CLI", str(ROOT / ".deps/brotli/bin/brotli"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} missing: run `make deps` (make test does)")
    return path


def run(*args, check=True, **kw) -> subprocess.CompletedProcess:
    """Runs a command with a timeout so no test can hang."""
    kw.setdefault("timeout", 120)
    return subprocess.run(list(args), capture_output=True, check=check, **kw)
