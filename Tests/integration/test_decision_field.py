"""Every response through the compression step carries one typed decision, shown in
the `DCServe-Decision` field (off by default with --config, on in quick mode), the access log and the
metrics. Each decision kind is driven with http.client and checked against what was actually sent
(dcz/dcb bodies decoded with the zstd CLI and the brotli CLI)."""
from __future__ import annotations

import json
import time

import pytest

from dcserve_server import DCServe
from decision_support import (LIB, NOISE, PAGE, V1, V2, available, hash16, make_site, request, wait_for_log)
from decoders import dcb_with_brotli_cli, dcz_with_zstd_cli, decode_plain
from test_metrics_health import scrape, value
from upstream_support import ExampleAPI

UNKNOWN = ":" + "A" * 43 + "=:"


@pytest.fixture
def quick(dcserve_bin, tmp_path):
    site = make_site(tmp_path / "site")
    with DCServe(dcserve_bin, ["--root", str(site), "--store", str(tmp_path / "store"),
                               "--dictionaries", "/static/app*", "--dictionaries", "/lib/*"]) as server:
        status, headers, body = request(server.port, "/static/app.v1.js")
        assert status == 200 and body == V1 and headers["Use-As-Dictionary"]
        yield server


def scrape_until(server, ready, timeout: float = 10.0):
    """Metrics once `ready(samples)` holds (a delta's plain-size report may come from the background)."""
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(server)
        if ready(samples) or time.monotonic() > deadline:
            return samples
        time.sleep(0.1)


def decision(server, path, headers=None, method="GET", status=200):
    got_status, headers_out, body = request(server.port, path, headers, method)
    assert got_status == status, (got_status, dict(headers_out), body[:200])
    field = headers_out.get("DCServe-Decision")
    assert field is not None, dict(headers_out)
    return field, headers_out, body


def test_delta_dcz_and_dcb_name_the_dictionary_and_what_they_saved(quick, brotli_cli):
    offer = {"Available-Dictionary": available(V1)}
    field, headers, body = decision(quick, "/static/app.v2.js", {"Accept-Encoding": "dcz, br", **offer})
    assert headers["Content-Encoding"] == "dcz"
    assert dcz_with_zstd_cli(body, V1) == V2
    parts = dict(p.split("=", 1) for p in field.split())
    assert parts["delta"] == "dcz" and parts["dict"] == hash16(V1) and parts["rule"] == "quick1", field
    # The first delta already compares with the best plain coding the client takes (br at the fast
    # level, encoded for this field), never with identity.
    _, fast_headers, fast_br = request(quick.port, "/static/app.v2.js", {"Accept-Encoding": "br"})
    assert fast_headers["Content-Encoding"] == "br"
    assert parts["vs"] == "br", field
    # br now is the fast level or, once the background refine landed, the smaller best level.
    saved = int(parts["saved"].rstrip("%"))
    versus_now = (len(fast_br) - len(body)) * 100 // len(fast_br)
    versus_identity = (len(V2) - len(body)) * 100 // len(V2)
    assert versus_now <= saved < versus_identity, (field, len(fast_br), len(V2))
    field, headers, body = decision(quick, "/static/app.v2.js", {"Accept-Encoding": "dcb", **offer})
    assert headers["Content-Encoding"] == "dcb" and dcb_with_brotli_cli(body, V1, brotli_cli) == V2
    assert field.startswith(f"delta=dcb dict={hash16(V1)} saved=") and field.endswith(" rule=quick1"), field
    # Once the best plain variant is cached at its best level (br 11, encoded in the background),
    # `saved` is against it and exact.
    # The variant's ETag names the variant, not its level: the upgrade is seen in the encode metric
    # (the variant is cached right after its encode is timed).
    scrape_until(quick, lambda samples: any(
        name.startswith("dcserve_compression_duration_seconds") and ("coding", "br") in labels and ("level", "11") in labels
        for (name, labels) in samples), timeout=20)
    time.sleep(0.3)
    _, br_headers, br_body = request(quick.port, "/static/app.v2.js", {"Accept-Encoding": "br"})
    field, headers, body = decision(quick, "/static/app.v2.js", {"Accept-Encoding": "dcz, br", **offer})
    expected = (len(br_body) - len(body)) * 100 // len(br_body)
    assert field == f"delta=dcz dict={hash16(V1)} saved={expected}% vs=br rule=quick1", (field, len(body), len(br_body))


# (path, request headers, method, expected status, expected field, expected Content-Encoding or None)
PLAIN_CASES = [
    ("/static/app.v2.js", {"Accept-Encoding": "br"}, "GET", 200,
     "plain=br reason=no-dictionary-offered rule=quick1", "br"),
    ("/static/app.v2.js", {"Accept-Encoding": "br, dcz", "Available-Dictionary": UNKNOWN}, "GET", 200,
     "plain=br reason=unknown-dictionary rule=quick1", "br"),
    ("/static/app.v2.js", {"Accept-Encoding": "br", "Available-Dictionary": available(V1)}, "GET", 200,
     "plain=br reason=dictionary-coding-not-accepted rule=quick1", "br"),
    ("/static/app.v2.js", {"Accept-Encoding": "gzip, dcz", "Available-Dictionary": "not-a-hash"}, "GET", 200,
     "plain=gzip reason=invalid-available-dictionary rule=quick1", "gzip"),
    ("/static/app.v2.js", {"Accept-Encoding": "gzip, dcz", "Available-Dictionary": available(V1), "Dictionary-ID": "12"},
     "GET", 200, "plain=gzip reason=invalid-dictionary-id rule=quick1", "gzip"),
    ("/static/app.v2.js", {"Accept-Encoding": "br, dcz;q=0.5", "Available-Dictionary": available(V1)}, "GET", 200,
     "plain=br reason=dictionary-coding-not-preferred rule=quick1", "br"),
    ("/static/app.v2.js", {"Accept-Encoding": "br, dcz", "Available-Dictionary": available(V1), "Authorization": "Bearer x"},
     "GET", 200, "plain=br reason=credentialed-request rule=quick1", "br"),
    ("/static/app.v2.js", {"Accept-Encoding": "br, dcz", "Available-Dictionary": available(V1), "Sec-Fetch-Mode": "cors",
                           "Sec-Fetch-Site": "cross-site", "Origin": "http://elsewhere.example"}, "GET", 200,
     "plain=br reason=cross-origin-gate rule=quick1", "br"),
    ("/lib/util.js", {"Accept-Encoding": "br, dcz", "Available-Dictionary": available(V1)}, "GET", 200,
     "plain=br reason=match-mismatch rule=quick2", "br"),
    ("/page.html", {"Accept-Encoding": "br, dcz", "Available-Dictionary": available(V1)}, "GET", 200,
     "plain=br reason=no-rule", "br"),
    ("/page.html", {"Accept-Encoding": "identity"}, "GET", 200, "plain=identity reason=identity-only-client", None),
    ("/tiny.txt", {"Accept-Encoding": "br"}, "GET", 200, "plain=identity reason=body-too-small", None),
    # A coded body no smaller than the body itself is not sent: the body goes as it is, unless the client
    # refuses identity.
    ("/noise.bin", {"Accept-Encoding": "br"}, "GET", 200, "plain=identity reason=no-saving", None),
    ("/noise.bin", {"Accept-Encoding": "gzip, br, zstd"}, "GET", 200, "plain=identity reason=no-saving", None),
    ("/noise.bin", {"Accept-Encoding": "gzip"}, "GET", 200, "plain=identity reason=no-saving", None),
    ("/noise.bin", {"Accept-Encoding": "br, identity;q=0"}, "GET", 200, "plain=br reason=no-rule", "br"),
    ("/static/app.noise.js", {"Accept-Encoding": "dcz, dcb, br", "Available-Dictionary": available(V1)}, "GET", 200,
     "plain=identity reason=no-saving rule=quick1", None),
    ("/image.png", {"Accept-Encoding": "br"}, "GET", 200, "plain=identity reason=precompressed-type", None),
    ("/missing.txt", {"Accept-Encoding": "br"}, "GET", 404, "plain=identity reason=status", None),
    ("/static/app.v2.js", {"Accept-Encoding": "br"}, "POST", 405, "plain=identity reason=method rule=quick1", None),
    ("/static/app.v2.js", {"Accept-Encoding": "br", "Range": "bytes=0-9"}, "GET", 206,
     "plain=identity reason=range rule=quick1", None),
    ("/static/app.v2.js", {"Accept-Encoding": "identity;q=0"}, "GET", 406,
     "not-acceptable reason=not-acceptable rule=quick1", None),
]


@pytest.mark.parametrize("path,headers,method,status,expected,coding", PLAIN_CASES,
                         ids=[c[4].split(" rule=")[0] + ("" if "noise" not in c[0] else " " + c[1]["Accept-Encoding"])
                              for c in PLAIN_CASES])
def test_plain_decisions_say_why(quick, brotli_cli, path, headers, method, status, expected, coding):
    field, out, body = decision(quick, path, headers, method, status)
    assert field == expected, (field, dict(out))
    assert out.get("Content-Encoding") == coding
    if status == 200:
        original = {"/static/app.v2.js": V2, "/lib/util.js": LIB, "/page.html": PAGE, "/noise.bin": NOISE,
                    "/static/app.noise.js": NOISE}.get(path)
        if original is not None:
            assert decode_plain(body, coding or "identity", brotli_cli) == original


def test_a_delta_no_smaller_than_the_body_goes_only_to_a_client_refusing_identity(quick):
    offer = {"Available-Dictionary": available(V1)}
    # The first request encodes the delta (nothing known of its size yet): accepting identity, the client
    # gets the body as it is, with the Vary a dictionary coding needs.
    field, headers, body = decision(quick, "/static/app.noise.js", {"Accept-Encoding": "dcz", **offer})
    assert field == "plain=identity reason=no-saving rule=quick1" and body == NOISE, field
    assert "Content-Encoding" not in headers
    assert "available-dictionary" in headers["Vary"].lower(), headers["Vary"]
    # Refusing identity, it gets the delta.
    field, headers, body = decision(quick, "/static/app.noise.js", {"Accept-Encoding": "dcz, identity;q=0", **offer})
    assert headers["Content-Encoding"] == "dcz" and len(body) >= len(NOISE), (field, len(body))
    assert field.startswith(f"delta=dcz dict={hash16(V1)} "), field
    assert dcz_with_zstd_cli(body, V1) == NOISE


def test_memoised_responses_get_their_own_decision_each_time(quick):
    """Static responses are memoised (content-addressed): the field is added per response, so the
    same path alternates between a delta and a plain decision without one leaking into the other."""
    offer = {"Accept-Encoding": "dcz, br", "Available-Dictionary": available(V1)}
    plain = {"Accept-Encoding": "br"}
    seen = []
    for _ in range(3):
        seen.append(decision(quick, "/static/app.v2.js", offer)[0].split()[0])
        seen.append(decision(quick, "/static/app.v2.js", plain)[0].split()[0])
    assert seen == ["delta=dcz", "plain=br"] * 3
    # A conditional request that the memo answers with 304 still says what the 200 would have been.
    # The dcz variant's ETag names its level: when the background best-level encode replaces the
    # on-the-fly one between the two requests, the ETag sent no longer matches (a 200 with the new
    # ETag, correctly); ask again with that one (bounded).
    _, headers, _ = decision(quick, "/static/app.v2.js", offer)
    etag, deadline = headers["ETag"], time.monotonic() + 20
    while True:
        status, out, body = request(quick.port, "/static/app.v2.js", {**offer, "If-None-Match": etag})
        if status == 304 or time.monotonic() > deadline or out.get("ETag") == etag:
            break
        etag = out["ETag"]
    assert status == 304, (status, dict(out))
    field = out["DCServe-Decision"]
    assert field.startswith(f"delta=dcz dict={hash16(V1)}") and body == b""


def test_quick_mode_flag_turns_it_off_and_access_log_and_metrics_still_record(dcserve_bin, tmp_path):
    site = make_site(tmp_path / "site")
    with DCServe(dcserve_bin, ["--root", str(site), "--store", str(tmp_path / "store"),
                               "--dictionaries", "/static/app*", "--no-decision-header"]) as server:
        request(server.port, "/static/app.v1.js")
        status, headers, body = request(server.port, "/static/app.v2.js",
                                        {"Accept-Encoding": "dcz", "Available-Dictionary": available(V1)})
        assert status == 200 and headers["Content-Encoding"] == "dcz" and "DCServe-Decision" not in headers
        log = wait_for_log(server, f"decision=dcz@{hash16(V1)} rule=quick1")
        assert "GET /static/app.v2.js 200" in log
        samples = scrape_until(server, lambda s: value(s, "dcserve_rule_bytes_total", rule="quick1", kind="sent") >= len(body) + len(V1))
        assert value(samples, "dcserve_decisions_total", rule="quick1", decision="delta", reason="hit") == 1
        assert value(samples, "dcserve_decisions_total", rule="quick1", decision="plain", reason="no-dictionary-offered") == 1
        assert value(samples, "dcserve_rule_bytes_total", rule="quick1", kind="sent") == len(body) + len(V1)
        assert value(samples, "dcserve_rule_bytes_total", rule="quick1", kind="identity") == len(V2) + len(V1)


@pytest.fixture
def config_site(tmp_path):
    site = make_site(tmp_path / "site")
    config = {
        "server": {"host": "127.0.0.1", "port": 0},
        "site": {"root": str(site)},
        "store": {"path": str(tmp_path / "store")},
        "compression": {"precompress": False},
        "dictionaries": {"rules": ["app"], "app": {"match": "/static/app*", "matchDest": ["script"]}},
    }
    path = tmp_path / "dcserve.json"
    path.write_text(json.dumps(config))
    return path


def test_config_mode_has_no_field_by_default_but_logs_and_counts(dcserve_bin, config_site):
    with DCServe(dcserve_bin, ["--config", str(config_site)]) as server:
        offer = {"Accept-Encoding": "dcz, br", "Available-Dictionary": available(V1), "Sec-Fetch-Dest": "script"}
        request(server.port, "/static/app.v1.js")
        for headers in (offer, {"Accept-Encoding": "br"}, {**offer, "Sec-Fetch-Dest": "document"}):
            status, out, body = request(server.port, "/static/app.v2.js", headers)
            assert status == 200 and "DCServe-Decision" not in out, dict(out)
        status, out, _ = request(server.port, "/nothing-here")
        assert status == 404 and "DCServe-Decision" not in out
        wait_for_log(server, "GET /static/app.v2.js 200")
        log = wait_for_log(server, "decision=br:match-dest-mismatch rule=app")
        assert f"decision=dcz@{hash16(V1)} rule=app" in log
        assert "decision=br:no-dictionary-offered rule=app" in log
        assert "GET /nothing-here 404" in log and "decision=identity:status" in log
        samples = scrape_until(server, lambda s: value(s, "dcserve_rule_bytes_total", rule="app", kind="identity") >= len(V1) + 3 * len(V2))
        assert value(samples, "dcserve_decisions_total", rule="app", decision="delta", reason="hit") == 1
        assert value(samples, "dcserve_decisions_total", rule="app", decision="plain", reason="match-dest-mismatch") == 1
        assert value(samples, "dcserve_decisions_total", rule="-", decision="plain", reason="status") == 1
        identity = value(samples, "dcserve_rule_bytes_total", rule="app", kind="identity")
        best = value(samples, "dcserve_rule_bytes_total", rule="app", kind="best_plain")
        sent = value(samples, "dcserve_rule_bytes_total", rule="app", kind="sent")
        assert identity == len(V1) + 3 * len(V2) and sent < best < identity, (identity, best, sent)


def test_config_key_and_environment_turn_it_on(dcserve_bin, config_site):
    with DCServe(dcserve_bin, ["--config", str(config_site)], env={"DCSERVE_SERVER_DECISION_HEADER": "true"}) as server:
        request(server.port, "/static/app.v1.js")
        field, _, _ = decision(server, "/static/app.v2.js", {"Accept-Encoding": "dcz, br", "Available-Dictionary": available(V1),
                                                            "Sec-Fetch-Dest": "document"})
        assert field == "plain=br reason=match-dest-mismatch rule=app"
    config = json.loads(config_site.read_text())
    config["server"]["decisionHeader"] = True
    config_site.write_text(json.dumps(config))
    with DCServe(dcserve_bin, ["--config", str(config_site)]) as server:
        field, _, _ = decision(server, "/tiny.txt", {"Accept-Encoding": "br"})
        assert field == "plain=identity reason=body-too-small"


def test_proxied_decisions_in_quick_mode(dcserve_bin, tmp_path):
    with ExampleAPI() as api, DCServe(dcserve_bin, ["--upstream", api.base, "--store", str(tmp_path / "store"),
                                                    "--dictionaries", "/api/*"]) as server:
        field, out, _ = decision(server, "/api/notransform", {"Accept-Encoding": "br"})
        assert field == "plain=identity reason=no-transform rule=quick1" and out.get("Content-Encoding") is None
        # A HEAD on a rule's path is answered from its GET: the same coding, no body.
        field, out, body = decision(server, "/api/items", {"Accept-Encoding": "br"}, method="HEAD")
        assert field == "plain=br reason=no-dictionary-offered rule=quick1" and out["Content-Encoding"] == "br" and body == b""
        field, out, _ = decision(server, "/api/me", {"Accept-Encoding": "br, dcz", "Available-Dictionary": UNKNOWN})
        assert field == "plain=br reason=private-response rule=quick1" and out["Content-Encoding"] == "br", dict(out)
        # A shared rule does not make a per-user response a dictionary (nor drop its `private`).
        assert out["Cache-Control"] == "private, max-age=60" and "Use-As-Dictionary" not in out
        field, out, body = decision(server, "/api/big?bytes=9000000", {"Accept-Encoding": "gzip"})
        assert field == "plain=gzip reason=streamed rule=quick1" and out["Content-Encoding"] == "gzip"


def test_partition_mismatch_reads_as_unknown_to_the_client_but_not_in_the_log(dcserve_bin, tmp_path):
    with ExampleAPI() as api, DCServe(dcserve_bin, ["--upstream", api.base, "--store", str(tmp_path / "store"),
                                                    "--dictionaries", "/api/calendar", "--partition-header", "Authorization",
                                                    "--dictionary-lifetime", "max-age=0, stale-while-revalidate=86400"]) as server:
        alice, bob = {"Authorization": "Bearer alice"}, {"Authorization": "Bearer bob"}
        status, out, a1 = request(server.port, "/api/calendar", alice)
        assert status == 200 and out["Use-As-Dictionary"]
        field, out, body = decision(server, "/api/calendar", {**alice, "Accept-Encoding": "dcz", "Available-Dictionary": available(a1)})
        assert field.startswith(f"delta=dcz dict={hash16(a1)}") and out["Content-Encoding"] == "dcz"
        field, out, _ = decision(server, "/api/calendar", {**bob, "Accept-Encoding": "dcz, br", "Available-Dictionary": available(a1)})
        assert field == "plain=br reason=unknown-dictionary rule=quick1", field
        log = wait_for_log(server, "decision=br:partition-mismatch rule=quick1")
        assert "Bearer" not in log
        samples = scrape(server)
        assert value(samples, "dcserve_decisions_total", rule="quick1", decision="plain", reason="partition-mismatch") == 1
