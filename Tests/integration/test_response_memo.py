"""Repeated requests (answered from dcserve's response memo after the first computations) against the
real binary: files changed in place are noticed on the very next request, and every metric counts
each repeated response exactly as a computed one."""
from __future__ import annotations

import json
import os
import time

from decoders import dcz_with_python_zstandard
from test_metrics_health import scrape, value
from test_transport import V1, V2, available, serve, site  # noqa: F401  (site is a fixture)


def test_repeated_requests_notice_in_place_changes_at_once(dcserve_bin, site):  # noqa: F811
    news = site["root"] / "news.html"
    yesterday = news.read_bytes()
    delta = {"Accept-Encoding": "dcz", "Available-Dictionary": available(yesterday)}
    with serve(dcserve_bin, site) as s:
        for _ in range(5):
            assert s.get("/news.html")[2] == yesterday
        tags = set()
        for _ in range(5):
            status, h, body = s.get("/news.html", delta)
            assert status == 200 and h["Content-Encoding"] == "dcz"
            assert dcz_with_python_zstandard(body, yesterday) == yesterday
            tags.add(h["ETag"])

        # Overwritten in place with the same size (file timestamps come from the kernel's coarse
        # clock: wait past one tick so the new mtime differs, as it does for any real deploy).
        today = yesterday.replace(b"Yesterday", b"TodayNews")
        assert len(today) == len(yesterday) and today != yesterday
        time.sleep(0.05)
        with open(news, "r+b") as f:
            f.write(today)
        status, h, body = s.get("/news.html")
        assert body == today and h["ETag"] not in tags
        status, h, body = s.get("/news.html", delta)
        assert h["Content-Encoding"] == "dcz" and dcz_with_python_zstandard(body, yesterday) == today

        # Replaced by a rename.
        later = today.replace(b"TodayNews", b"LaterNews")
        tmp = news.with_suffix(".tmp")
        tmp.write_bytes(later)
        os.replace(tmp, news)
        assert s.get("/news.html")[2] == later
        status, h, body = s.get("/news.html", delta)
        assert h["Content-Encoding"] == "dcz" and dcz_with_python_zstandard(body, yesterday) == later


def test_repeated_responses_count_exactly(dcserve_bin, site):  # noqa: F811
    (site["root"] / "static/app.v2.js").write_bytes(V2)
    # One level per coding: no background re-encode changes the variant between requests.
    config = json.loads(open(site["config"]).read())
    config["compression"]["levels"] = {c: {"fast": 3, "best": 3} for c in ["dcz", "zstd"]}
    with open(site["config"], "w") as f:
        json.dump(config, f)
    delta = {"Accept-Encoding": "dcz", "Available-Dictionary": available(V1)}
    with serve(dcserve_bin, site) as s:
        assert s.get("/static/app.v1.js")[2] == V1
        sizes = []
        for _ in range(12):
            status, h, body = s.get("/static/app.v2.js", delta)
            assert status == 200 and h["Content-Encoding"] == "dcz"
            sizes.append(len(body))
        for _ in range(4):
            status, h, body = s.get("/static/app.v2.js", delta, method="HEAD")
            assert status == 200 and h["Content-Encoding"] == "dcz" and body == b""
        for _ in range(6):
            assert s.get("/static/app.v2.js")[2] == V2
        m = scrape(s)
        assert value(m, "dcserve_http_requests_total", status="200", coding="dcz") == 16
        assert value(m, "dcserve_http_requests_total", status="200", coding="identity") == 7
        assert value(m, "dcserve_http_response_body_bytes_total", coding="dcz") == sum(sizes)
        assert value(m, "dcserve_dictionary_negotiations_total", outcome="dcz") == 16
        assert value(m, "dcserve_dictionary_negotiations_total", outcome="noDictionaryOffered") == 7
        # one miss (the first dcz encode), then hits: memo hits count as the hits they stand for
        assert value(m, "dcserve_variant_cache_lookups_total", result="miss") == 1
        assert value(m, "dcserve_variant_cache_lookups_total", result="hit") == 15
        assert value(m, "dcserve_compressible_identity_bytes_total") == len(V1) + 22 * len(V2)
        # HEAD responses report the size they would have sent, like computed ones
        head_size = sizes[-1]
        assert value(m, "dcserve_compressible_sent_bytes_total") == len(V1) + sum(sizes) + 4 * head_size + 6 * len(V2)
        assert value(m, "dcserve_compressible_best_plain_bytes_total") == len(V1) + 22 * len(V2)
