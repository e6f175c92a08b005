"""Dates in `--json` reports are RFC 3339 strings in UTC, never seconds since 2001 (Foundation's
default): `dcserve fetch --json` names a registered dictionary's expiry, in the first run (registered)
and the next (the dictionary named)."""
from __future__ import annotations

import datetime
import json
import re
import subprocess

from test_fetch_links import DICTIONARY_RESPONSE, Origin

RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def test_fetch_json_dates_are_rfc3339(dcserve_bin, tmp_path):
    with Origin({"/api/chats/1/.dictionary": DICTIONARY_RESPONSE, "/api/chats/1/m": (200, {}, b"hello")}) as origin:
        before = datetime.datetime.now(datetime.timezone.utc)
        reports = []
        for path in ("/api/chats/1/.dictionary", "/api/chats/1/m"):
            r = subprocess.run([dcserve_bin, "fetch", "--json", "--store", str(tmp_path / "store"), origin.base + path],
                               capture_output=True, timeout=60)
            assert r.returncode == 0, r.stderr
            reports.append(json.loads(r.stdout))
    for expires in (reports[0]["main"]["registered"]["expires"], reports[1]["main"]["dictionary"]["expires"]):
        assert isinstance(expires, str) and RFC3339_UTC.match(expires), expires
        when = datetime.datetime.strptime(expires, "%Y-%m-%dT%H:%M:%S%z")
        # max-age=3600: an hour after the fetch (give or take the run's own duration).
        assert datetime.timedelta(minutes=50) < when - before < datetime.timedelta(minutes=70), (expires, before)
