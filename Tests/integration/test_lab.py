"""`dcserve lab`: `dcserve fetch --lab` passes every scenario; an independent
Python client passes too, and the same client with deliberate mistakes fails exactly the scenarios
those mistakes break, with messages that say what was expected and what came; bad input gets 4xx."""
from __future__ import annotations

import http.server
import json
import re
import subprocess
import threading

import pytest

from lab_support import Lab, ScriptedClient
from tls_support import make_ca, make_leaf

SCENARIOS = ["registration", "dictionary-id", "match-dest", "match-dest-precedence", "expired",
             "stale-while-revalidate", "no-store", "longest-match", "single-available-dictionary",
             "codings-with-dictionary", "wrong-hash", "link"]


@pytest.fixture
def lab(dcserve_bin):
    with Lab(dcserve_bin) as lab:
        yield lab


def statuses(results: dict) -> dict[str, str]:
    return {s["id"]: s["status"] for s in results["scenarios"]}


def test_fetch_lab_passes_every_scenario(dcserve_bin, lab):
    out = subprocess.run([dcserve_bin, "fetch", "--lab", lab.base], capture_output=True, timeout=120, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    table = out.stdout
    for scenario in SCENARIOS:
        assert re.search(rf"^{re.escape(scenario)}\s+PASSED\s", table, re.M), table
    assert f"{len(SCENARIOS)} passed, 0 failed, 0 not run" in table
    run = re.search(r"dcserve lab run (\S+)", table).group(1)
    # The lab's own record agrees, and the HTML report shows it.
    results = lab.json(f"/lab/runs/{run}/results.json")
    assert statuses(results) == {s: "passed" for s in SCENARIOS}
    status, _, page = lab.request("GET", f"/lab/runs/{run}/")
    assert status == 200 and b"12 passed, 0 failed, 0 not run" in page
    # The deltas really were deltas: both codings were used somewhere, and the wrong-hash body was refused.
    observed = "\n".join(line for s in results["scenarios"] for line in s["observed"])
    assert "dcz with dictionary" in observed and "dcb with dictionary" in observed, observed


def test_fetch_lab_against_something_else(dcserve_bin, lab):
    # Nothing listening: a clear message and a non-zero exit.
    out = subprocess.run([dcserve_bin, "fetch", "--lab", "http://127.0.0.1:9/"], capture_output=True, timeout=60, text=True)
    assert out.returncode != 0 and "127.0.0.1:9" in out.stderr, out.stderr
    # A server that is not a lab: its answer to /lab/plan.json is named.
    class NotALab(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"nothing here"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotALab)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        out = subprocess.run([dcserve_bin, "fetch", "--lab", f"http://127.0.0.1:{server.server_address[1]}"],
                             capture_output=True, timeout=60, text=True)
        assert out.returncode != 0 and "/lab/plan.json: 404 nothing here" in out.stderr, out.stderr
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_independent_python_client_passes_every_scenario(lab, brotli_cli):
    results = ScriptedClient(lab, brotli_cli).run(lab.json("/lab/plan.json"))
    assert statuses(results) == {s: "passed" for s in SCENARIOS}, json.dumps(results, indent=1)


def test_wrong_client_fails_exactly_the_scenarios_it_should(lab, brotli_cli):
    client = ScriptedClient(lab, brotli_cli, stale_hash=True, codings_without_dictionary=True,
                            wrong_sha_for={"registration.use"},
                            two_dictionaries_in={"single-available-dictionary.use"}, render_undecodable=True)
    results = client.run(lab.json("/lab/plan.json"))
    got = statuses(results)
    # dcb/dcz offered without a dictionary also breaks match-dest's fetch() step and expired's use step.
    failed = {"registration", "expired", "codings-with-dictionary", "match-dest", "single-available-dictionary",
              "wrong-hash"}
    assert got == {s: "failed" if s in failed else "passed" for s in SCENARIOS}, json.dumps(results, indent=1)
    failures = {s["id"]: "\n".join(s["failures"]) for s in results["scenarios"]}
    # Each failure says what was expected and what came.
    assert re.search(r"use: expected decoded SHA-256 [0-9a-f]{64}, got [0-9a-f]{64} \(served: dcz with dictionary main\)",
                     failures["registration"]), failures["registration"]
    assert re.search(r"use: expected no Available-Dictionary, got :[A-Za-z0-9+/=]+: \(dictionary main\)", failures["expired"])
    assert "expected no dcb/dcz in Accept-Encoding (no dictionary named), got \"gzip, br, dcb, dcz\"" in failures["codings-with-dictionary"]
    assert "fetch: expected no dcb/dcz" in failures["match-dest"], failures["match-dest"]
    assert "before:" in failures["codings-with-dictionary"] and "unmatched:" in failures["codings-with-dictionary"]
    assert "expected exactly one Available-Dictionary field with one 32-byte sf-binary, got 2 field line(s)" in failures["single-available-dictionary"]
    assert "but the client decoded it and reported SHA-256" in failures["wrong-hash"]


def test_a_client_without_dictionary_support_fails_every_scenario_saying_why(lab, brotli_cli):
    results = ScriptedClient(lab, brotli_cli, plain=True).run(lab.json("/lab/plan.json"))
    assert statuses(results) == {s: "failed" for s in SCENARIOS}, json.dumps(results, indent=1)
    failures = {s["id"]: "\n".join(s["failures"]) for s in results["scenarios"]}
    assert re.search(r"^use: expected Available-Dictionary :[A-Za-z0-9+/=]+: \(dictionary main\), got none$",
                     failures["registration"], re.M), failures["registration"]
    assert "(dictionary long of long, short), got none" in failures["longest-match"]
    assert "use: expected Dictionary-ID \"lab:" in failures["dictionary-id"]


def test_a_client_that_does_nothing_is_not_run(lab):
    plan = lab.json("/lab/plan.json")
    results = lab.json(plan["resultsURL"])
    assert results["notRun"] == len(SCENARIOS) and results["passed"] == 0


def test_bad_input_gets_a_clear_4xx(lab):
    plan = lab.json("/lab/plan.json?run=ci-42")
    assert plan["run"] == "ci-42" and plan["steps"][0]["url"].startswith("/lab/r/ci-42/")
    report = plan["reportURL"].replace("{step}", "registration.use")
    cases = [
        ("GET", "/lab/plan.json?run=bad%20id", None, 400, b"run must be"),
        ("GET", "/lab/r/ci-42/nope/x.js", None, 404, b"no scenario"),
        ("GET", "/lab/r/ci-42/registration/missing.js", None, 404, b"has no resource"),
        ("POST", report, b"not json", 400, b"not a JSON object"),
        ("POST", report, b'{"sha256": "abc"}', 400, b"64 hex digits"),
        ("POST", report, b"{}", 400, b"names sha256"),
        ("POST", plan["reportURL"].replace("{step}", "registration.nope"), b'{"error": "x"}', 404, b"no step"),
        ("GET", "/lab/r/ci-42/ready/registration.use", None, 404, b"no probe step"),
        ("DELETE", "/lab/plan.json", None, 405, b"not allowed"),
        ("GET", "/lab/runs/unknown-run/results.json", None, 404, b"no run"),
        ("GET", "/elsewhere", None, 404, b"/lab/"),
    ]
    for method, path, body, status, reason in cases:
        got, _, text = lab.request(method, path, [("Content-Type", "application/json")] if body else [], body)
        assert got == status and reason in text, (method, path, got, text)
    # A GET report with a query works as well as a POST.
    got, _, _ = lab.request("GET", report + "?error=refused%20it")
    assert got == 200
    assert lab.proc.poll() is None


def test_fetch_lab_over_https(dcserve_bin, tmp_path):
    ca = make_ca(tmp_path / "ca")
    leaf = make_leaf(ca, tmp_path / "leaf", "lab")
    with Lab(dcserve_bin, ["--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key)]) as lab:
        assert lab.scheme == "https"
        out = subprocess.run([dcserve_bin, "fetch", "--lab", "--json", "--cacert", str(ca.cert), lab.base],
                             capture_output=True, timeout=120, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        results = json.loads(out.stdout)
        assert results["passed"] == len(SCENARIOS) and statuses(results) == {s: "passed" for s in SCENARIOS}
    # A certificate without its key is refused on the command line.
    out = subprocess.run([dcserve_bin, "lab", "--tls-cert", str(leaf.cert)], capture_output=True, timeout=30, text=True)
    assert out.returncode != 0 and "--tls-cert and --tls-key go together" in out.stderr
