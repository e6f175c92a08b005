"""Shared fixtures for integration tests: they run the real release binary and independent tools."""
import os
import subprocess

import pytest

from paths import BROTLI_CLI, DCSERVE_BIN, ROOT  # noqa: F401 (ROOT: re-exported to the tests)


@pytest.fixture(scope="session")
def dcserve_bin() -> str:
    path = DCSERVE_BIN
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} missing: run `make build` (make test does)")
    return path


@pytest.fixture(scope="session")
def brotli_cli() -> str:
    path = BROTLI_CLI
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} missing: run `make deps` (make test does)")
    return path


def run(*args, check=True, **kw) -> subprocess.CompletedProcess:
    """Runs a command with a timeout so no test can hang."""
    kw.setdefault("timeout", 120)
    return subprocess.run(list(args), capture_output=True, check=check, **kw)
