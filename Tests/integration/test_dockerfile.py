"""The Dockerfile cannot be built here (no Docker engine): check its structure so it cannot rot —
stages, the build step identical to the Makefile's, non-root user, health check, exposed ports,
volumes, signal handling, entrypoint — and that what it copies and runs exists in the repository."""
from __future__ import annotations

import json
import pathlib
import re

from paths import ROOT


def instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for word, rest in instructions():
        if word == "FROM":
            result.append([])
        result[-1].append((word, rest))
    return result


def test_two_stages_build_with_swift_on_noble_runtime_slim():
    build, runtime = stages()
    assert re.fullmatch(r"swift:6\.\d+-noble AS build", build[0][1])
    assert re.fullmatch(r"swift:6\.\d+-noble-slim AS runtime", runtime[0][1])
    assert build[0][1].split(":")[1].split("-")[0] == runtime[0][1].split(":")[1].split("-")[0], "same Swift version"


def test_build_stage_runs_the_makefile_build():
    build, _ = stages()
    runs = " ".join(rest for word, rest in build if word == "RUN")
    assert "make build" in runs and ".build/release/dcserve" in runs
    assert re.search(r"^build:", (ROOT / "Makefile").read_text(), re.M), "Makefile has no build target"


def test_runtime_is_non_root_with_healthcheck_ports_volumes_and_signals():
    _, runtime = stages()
    get = lambda w: [rest for word, rest in runtime if word == w]
    assert get("USER") == ["dcserve"]
    assert any("useradd" in r and "--system" in r for r in get("RUN"))
    health = get("HEALTHCHECK")
    assert len(health) == 1 and "/healthz" in health[0] and "8080" in health[0]
    assert set(get("EXPOSE")[0].split()) == {"8080", "8443", "9090"}
    assert set(json.loads(get("VOLUME")[0])) == {"/etc/dcserve", "/var/lib/dcserve/dictionaries"}
    assert get("STOPSIGNAL") == ["SIGTERM"]
    entrypoint = json.loads(get("ENTRYPOINT")[0])
    assert entrypoint[:2] == ["/usr/bin/tini", "--"] and entrypoint[2].endswith("/dcserve")
    cmd = json.loads(get("CMD")[0])
    assert cmd[:2] == ["serve", "--config"] and cmd[2].startswith("/etc/dcserve/")
    assert (ROOT / "Config" / pathlib.Path(cmd[2]).name).is_file(), "CMD names a config the image does not copy"
    assert any("--from=build" in r for r in get("COPY"))
    env = " ".join(get("ENV"))
    assert "DCSERVE_SERVER_HOST=0.0.0.0" in env and "DCSERVE_STORE_PATH=/var/lib/dcserve/dictionaries" in env


def test_copied_sources_exist_and_build_context_is_small():
    for word, rest in instructions():
        if word == "COPY" and "--from" not in rest:
            src = rest.split()[0]
            assert src == "." or (ROOT / src).exists(), f"COPY source {src} missing"
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".build*/" in ignored and ".deps/" in ignored
