"""deploy/: the systemd unit and the Kubernetes manifests.

- The unit passes `systemd-analyze verify` with no warning (its ExecStart pointed at the release
  binary), carries the sandboxing directives, and its ExecStart line, as written (binary and config
  path substituted), serves `/readyz` with the example configuration and tells systemd `READY=1` /
  `STOPPING=1` on `$NOTIFY_SOCKET` (the unit is `Type=notify`).
- The manifests pass `kubernetes-validate --strict` with the schemas the package ships (no network);
  the Deployment's memory is at least the budget the ConfigMap's dcserve configuration allows; and
  that configuration, with the Secret's values in the environment variables the Deployment names,
  starts against a real PostgreSQL and answers `/readyz` on the port the probes use.
"""
from __future__ import annotations

import configparser
import json
import os
import pathlib
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request

import pytest
import yaml

from dcserve_server import ADMIN_RE, LISTEN_RE
from logged_process import LoggedProcess
from pg_support import postgres_server  # noqa: F401  (fixture)

from paths import ROOT
UNIT = ROOT / "deploy/systemd/dcserve.service"
MANIFESTS = ROOT / "deploy/kubernetes"
MIB = 1 << 20


def unit_lines(text: str, key: str) -> list[str]:
    """Every value of `key=` in the unit (systemd keys may repeat; configparser would keep one)."""
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(key + "=")]


def readyz(admin_port: int) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/readyz", timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def started(process: LoggedProcess, timeout: float = 60) -> tuple[int, int]:
    """The (main, admin) ports the process logs once both listeners are open."""
    def both(text: bytes):
        m, admin = LISTEN_RE.search(text), ADMIN_RE.search(text)
        return (m, admin) if m and admin else None
    m, admin = process.wait_for_log(both, "dcserve", timeout)
    return int(m.group(1)), int(admin.group(1))


def test_unit_passes_systemd_analyze_verify(dcserve_bin, tmp_path):
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze missing (Debian package systemd)"
    text = UNIT.read_text()
    (exec_start,) = unit_lines(text, "ExecStart")
    binary = shlex.split(exec_start)[0]
    unit = tmp_path / "dcserve.service"
    unit.write_text(text.replace(f"ExecStart={binary}", f"ExecStart={dcserve_bin}"))
    out = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == "", "no warning (an unknown key or bad value is only a warning)"
    # As written, the binary it names does not exist here: verify notices (the check is real).
    unit.write_text(text.replace(f"ExecStart={binary}", "ExecStart=/nonexistent/dcserve"))
    out = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "/nonexistent/dcserve" in out.stderr


def test_unit_is_sandboxed_and_keeps_the_store(tmp_path):
    text = UNIT.read_text()
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    service = parser["Service"]
    assert service["Type"] == "notify"
    for key, value in {"ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
                       "NoNewPrivileges": "yes", "CapabilityBoundingSet": "", "StateDirectory": "dcserve"}.items():
        assert service[key] == value, key
    assert set(service["RestrictAddressFamilies"].split()) == {"AF_INET", "AF_INET6", "AF_UNIX"}
    assert "@system-service" in unit_lines(text, "SystemCallFilter")
    assert unit_lines(text, "ReadWritePaths") == ["/var/lib/dcserve"]
    store = [v for v in unit_lines(text, "Environment") if v.startswith("DCSERVE_STORE_PATH=")]
    assert store == ["DCSERVE_STORE_PATH=/var/lib/dcserve/dictionaries"], "the store lies in the writable state directory"


def test_exec_start_as_written_serves_readyz_and_notifies_systemd(dcserve_bin, tmp_path):
    text = UNIT.read_text()
    (exec_start,) = unit_lines(text, "ExecStart")
    argv = shlex.split(exec_start)
    config_index = argv.index("--config") + 1
    # The example configuration, its relative site root made absolute.
    example = json.loads((ROOT / "Config/dcserve.json").read_text())
    example["site"]["root"] = str(ROOT / example["site"]["root"])
    config = tmp_path / "dcserve.json"
    config.write_text(json.dumps(example))
    argv[0], argv[config_index] = dcserve_bin, str(config)
    # The unit's environment, its store path moved to the test's; ports chosen by the kernel.
    env = dict(v.split("=", 1) for v in unit_lines(text, "Environment"))
    env["DCSERVE_STORE_PATH"] = str(tmp_path / "dictionaries")
    env.update({"DCSERVE_SERVER_PORT": "0", "DCSERVE_ADMIN_PORT": "0"})
    # systemd's side of sd_notify: a datagram socket named by NOTIFY_SOCKET.
    notify_path = tempfile.mktemp(prefix="dcserve-notify-", dir="/tmp")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(60)
    env["NOTIFY_SOCKET"] = notify_path
    process = LoggedProcess(argv, log_prefix="dcserve-unit-", env=env)
    try:
        _, admin_port = started(process)
        assert notify.recv(4096) == b"READY=1"
        status, body = readyz(admin_port)
        assert status == 200, body
        assert (tmp_path / "dictionaries").is_dir(), "the store is where the unit puts it"
        process.proc.send_signal(signal.SIGTERM)
        assert notify.recv(4096) == b"STOPPING=1"
        assert process.proc.wait(timeout=30) == 0, process.logs()
    finally:
        process.stop()
        notify.close()
        os.unlink(notify_path)


def manifests() -> dict[str, dict]:
    """Each manifest by kind."""
    documents = {}
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            documents[document["kind"]] = document
    return documents


def test_manifests_pass_the_schema_check_offline():
    validate = pathlib.Path(sys.executable).parent / "kubernetes-validate"
    assert validate.exists(), "kubernetes-validate missing: scripts/install-python-deps.sh installs it"
    files = sorted(str(p) for p in MANIFESTS.glob("*.yaml"))
    assert len(files) == 5
    # The schemas ship with the package: no network needed (CI may have none).
    out = subprocess.run([str(validate), "--strict", *files], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("passed") == 5, out.stdout
    assert set(manifests()) == {"ConfigMap", "Secret", "Deployment", "Service", "PodDisruptionBudget"}


def memory_bytes(quantity: str) -> int:
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(quantity[:-len(suffix)]) * factor
    return int(quantity)


def test_deployment_probes_and_memory_follow_the_configuration():
    docs = manifests()
    config = json.loads(docs["ConfigMap"]["data"]["dcserve.json"])
    container = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    admin = next(p["containerPort"] for p in container["ports"] if p["name"] == "admin")
    assert admin == config["admin"]["port"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "admin"}
    # The one memory budget every cache draws from + 128 MiB of margin must fit the limit, and the
    # request is the limit (no overcommit); no per-cache setting overrides its share.
    assert not {"variantCacheBytes", "dictionaryMemoryBytes"} & set(config["compression"])
    budget = config["server"]["memoryBytes"] + 128 * MIB
    resources = container["resources"]
    assert memory_bytes(resources["limits"]["memory"]) >= budget
    assert resources["requests"]["memory"] == resources["limits"]["memory"]
    service = docs["Service"]["spec"]["ports"][0]
    assert service["targetPort"] == "http"
    assert next(p["containerPort"] for p in container["ports"] if p["name"] == "http") == config["server"]["port"]


def test_configmap_configuration_starts_against_postgres_with_the_secret(dcserve_bin, tmp_path, postgres_server):
    docs = manifests()
    config = json.loads(docs["ConfigMap"]["data"]["dcserve.json"])
    container = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    _, url = postgres_server.new_database()
    secret = {"partition-secret": secrets.token_hex(32), "postgres-url": url}
    assert set(docs["Secret"]["stringData"]) == set(secret)
    env = {e["name"]: secret[e["valueFrom"]["secretKeyRef"]["key"]] for e in container["env"]}
    # Loopback and free ports instead of the pod's 0.0.0.0:8080/9090; a local cache of the test's.
    env.update({"DCSERVE_SERVER_HOST": "127.0.0.1", "DCSERVE_ADMIN_HOST": "127.0.0.1", "DCSERVE_SERVER_PORT": "0",
                "DCSERVE_ADMIN_PORT": "0", "DCSERVE_STORE_PATH": str(tmp_path / "cache")})
    path = tmp_path / "dcserve.json"
    path.write_text(json.dumps(config))
    assert container["args"][:2] == ["serve", "--config"]
    process = LoggedProcess([dcserve_bin, *container["args"][:2], str(path)], log_prefix="dcserve-k8s-", env=env)
    try:
        _, admin_port = started(process)
        status, body = readyz(admin_port)
        assert status == 200, body
        logs = process.logs()
        assert "PostgreSQL dictionary store opened" in logs
        assert secret["partition-secret"] not in logs
    finally:
        process.stop()
