"""A throwaway PostgreSQL 15 for the shared-store tests, through
scripts/throwaway-postgres.sh: its own data directory, a free port on 127.0.0.1, started by the
test session and stopped by `pg_ctl` (then by the postmaster's PID) even when tests fail.

`postgres_server` (session fixture; import it into a test module) is shared; tests that stop the
server make their own `ThrowawayPostgres` in a temporary directory. `new_database()` gives every
test its own database, so tests never see each other's dictionaries.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import uuid

import pytest

from paths import ROOT
SCRIPT = ROOT / "scripts/throwaway-postgres.sh"
PG_BIN = pathlib.Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))


class ThrowawayPostgres:
    def __init__(self, directory: pathlib.Path):
        self.dir = pathlib.Path(directory)
        self.url = ""

    def start(self) -> "ThrowawayPostgres":
        out = subprocess.run([str(SCRIPT), "start", str(self.dir)], capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"throwaway PostgreSQL did not start:\n{out.stdout}\n{out.stderr}")
        self.url = out.stdout.strip().splitlines()[-1]
        return self

    def stop(self) -> None:
        subprocess.run([str(SCRIPT), "stop", str(self.dir)], capture_output=True, timeout=60)

    @classmethod
    def scratch(cls, name: str) -> "ThrowawayPostgres":
        """A server of its own under .build/pg (pytest's tmp_path is private to root, and the server
        runs as `postgres`); remove it with `discard()`."""
        directory = ROOT / ".build/pg" / f"{name}-{uuid.uuid4().hex[:8]}"
        return cls(directory)

    def discard(self) -> None:
        """Stops the server and deletes its directory."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def port(self) -> int:
        return int((self.dir / "port").read_text())

    def psql_command(self, sql: str, database: str = "postgres") -> list[str]:
        """The command that runs `sql` as the superuser over the Unix socket (unaligned output)."""
        cmd = [str(PG_BIN / "psql"), "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-h", str(self.dir),
               "-p", str(self.port), "-U", "postgres", "-d", database, "-c", sql]
        return ["runuser", "-u", "postgres", "--"] + cmd if os.getuid() == 0 else cmd

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Runs `sql` as the superuser over the Unix socket; returns the unaligned output."""
        out = subprocess.run(self.psql_command(sql, database), capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"psql failed: {out.stderr}")
        return out.stdout.strip()

    def new_database(self) -> tuple[str, str]:
        """A fresh database owned by the `dcserve` role: (name, URL)."""
        name = "t_" + uuid.uuid4().hex[:12]
        self.psql(f"CREATE DATABASE {name} OWNER dcserve")
        return name, self.url.rsplit("/", 1)[0] + f"/{name}?sslmode=disable"


@pytest.fixture(scope="session")
def postgres_server():
    """The session's throwaway PostgreSQL (DCSERVE_TEST_PG_DIR or .build/pg/integration)."""
    server = ThrowawayPostgres(pathlib.Path(os.environ.get("DCSERVE_TEST_PG_DIR", ROOT / ".build/pg/integration")))
    server.start()
    try:
        yield server
    finally:
        server.stop()
