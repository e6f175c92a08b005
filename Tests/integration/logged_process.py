"""A child process for a test: output into a temporary log file (kept so a failing test can show it),
ready once a pattern appears in that log, stopped by PID."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time


class LoggedProcess:
    def __init__(self, argv: list[str], *, log_prefix: str, cwd: str | None = None,
                 env: dict[str, str] | None = None):
        self.log_file = tempfile.NamedTemporaryFile(prefix=log_prefix, suffix=".txt", delete=False)
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(argv, cwd=cwd, env=full_env, stdout=self.log_file, stderr=subprocess.STDOUT)

    def wait_for_log(self, ready, what: str, timeout: float) -> re.Match | tuple | None:
        """Polls the log until `ready(log bytes)` returns something truthy and returns it; raises (after
        stopping the process) when the process exits first or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = ready(open(self.log_file.name, "rb").read())
            if found:
                return found
            if self.proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {self.proc.returncode}:\n{self.logs()}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{what} did not report its port:\n" + self.logs())

    def logs(self) -> str:
        return open(self.log_file.name, "rb").read().decode(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        """Signals the process (SIGTERM: graceful shutdown) and returns its exit code; kills it if it
        has not exited within `timeout` seconds."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
