"""Headless Chromium runs the lab's browser page (`/lab/`) over DevTools: every scenario Chromium
implements passes; the ones it does not are listed (README "Testing your client") and asserted here
as failing for the documented reason, so a Chromium that changes is noticed."""
from __future__ import annotations

import json
import os

import pytest

from chromium import CHROMIUM, Chromium
from lab_support import Lab
from test_lab import SCENARIOS

if not os.access(CHROMIUM, os.X_OK):
    pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium", pytrace=False)

# Scenario → a substring of the lab's failure message, for what Chromium 156 does not implement.
CHROMIUM_KNOWN_FAILURES: dict[str, str] = {}


def test_chromium_runs_the_lab_page(dcserve_bin):
    with Lab(dcserve_bin) as lab, Chromium() as browser:
        browser.navigate(f"http://localhost:{lab.port}/lab/")
        results = browser.evaluate("runLab()", timeout=240)
        got = {s["id"]: s for s in results["scenarios"]}
        assert set(got) == set(SCENARIOS)
        report = json.dumps(results, indent=1)
        for scenario in SCENARIOS:
            if scenario in CHROMIUM_KNOWN_FAILURES:
                assert got[scenario]["status"] == "failed", report
                assert any(CHROMIUM_KNOWN_FAILURES[scenario] in f for f in got[scenario]["failures"]), report
            else:
                assert got[scenario]["status"] == "passed", report
        # The page shows the graded table (checked in the DOM), and the lab recorded Chromium's own requests.
        rows = browser.evaluate(
            "Array.from(document.querySelectorAll('#results tr[data-scenario]')).map(r => [r.dataset.scenario, r.className])")
        assert {s: c for s, c in rows} == {s: got[s]["status"].replace(" ", "-") for s in SCENARIOS}
        assert "Chrome" in (results.get("userAgent") or ""), results.get("userAgent")
        # What Chromium sent is what the lab graded: its DevTools view of a delta request agrees.
        sent = browser.sent_headers(f"/lab/r/{results['run']}/registration/app.v2.js")
        assert sent and sent[-1].get("available-dictionary"), sent
