"""`dcserve fetch` and `Link: rel="compression-dictionary"`: a linked dictionary is fetched from the
page's own origin with the page's `-H` fields (a partitioned API answers a per-user dictionary only
with the user's credentials), never from another origin and never with credentials to one; `-v` and
the JSON report say why a link was not registered; link targets are resolved with their dot segments
removed (RFC 3986 §5.2.4). The origins are the Python standard library's HTTP server."""
from __future__ import annotations

import http.server
import json
import subprocess
import threading

import pytest

DICTIONARY = b"chat history: " + b"<msg from='alice'>hello bob, the meeting is at noon</msg>\n" * 40


class Origin:
    """Serves `routes[path] = (status, headers, body)`; a path in `private` answers 404 unless the
    request carries `Authorization: Bearer alice`. Records (path, headers) of every request."""

    def __init__(self, routes: dict[str, tuple[int, dict[str, str], bytes]], private: set[str] = frozenset()):
        self.routes, self.private = routes, private
        self.requests: list[tuple[str, dict[str, str]]] = []
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                origin.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, headers, body = origin.routes.get(self.path, (404, {}, b"not found"))
                if self.path in origin.private and self.headers.get("Authorization") != "Bearer alice":
                    status, headers, body = 404, {}, b"no such dictionary in your partition"
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def paths(self) -> list[str]:
        return [p for p, _ in self.requests]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def page(links: list[str]) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Link": ", ".join(f'<{link}>; rel="compression-dictionary"' for link in links),
                 "Cache-Control": "private, max-age=0"}, b"<html>the page</html>"


DICTIONARY_RESPONSE = (200, {"Use-As-Dictionary": 'match="/api/chats/1/*"', "Cache-Control": "private, max-age=3600"},
                       DICTIONARY)


def fetch(dcserve_bin, tmp_path, url: str, *args: str) -> tuple[dict, str]:
    r = subprocess.run([dcserve_bin, "fetch", "--json", "-v", "--store", str(tmp_path / "store"), *args, url],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr.decode(errors="replace")


def test_a_linked_dictionary_is_fetched_with_the_pages_credentials(dcserve_bin, tmp_path):
    routes = {"/api/chats/1/messages": page(["/api/chats/1/.dictionary"]), "/api/chats/1/.dictionary": DICTIONARY_RESPONSE}
    with Origin(routes, private={"/api/chats/1/messages", "/api/chats/1/.dictionary"}) as origin:
        report, _ = fetch(dcserve_bin, tmp_path, origin.base + "/api/chats/1/messages", "-H", "Authorization: Bearer alice")
        assert report["main"]["status"] == 200
        [link] = report["links"]
        assert link["status"] == 200 and link["registered"]["match"] == "/api/chats/1/*", link
        assert [h.get("authorization") for p, h in origin.requests] == ["Bearer alice", "Bearer alice"]


def test_verbose_says_why_a_linked_dictionary_was_not_registered(dcserve_bin, tmp_path):
    routes = {"/page": page(["/private.dict", "/plain.txt"]), "/private.dict": DICTIONARY_RESPONSE,
              "/plain.txt": (200, {"Cache-Control": "max-age=60"}, b"not a dictionary")}
    with Origin(routes, private={"/private.dict"}) as origin:
        report, err = fetch(dcserve_bin, tmp_path, origin.base + "/page")
        assert f"linked dictionary {origin.base}/private.dict not registered: status 404" in err, err
        assert f"linked dictionary {origin.base}/plain.txt not registered: the response carries no Use-As-Dictionary" in err, err
        assert [link["notRegistered"] for link in report["links"]] == ["status 404", "the response carries no Use-As-Dictionary"]


def test_a_link_to_another_origin_is_never_fetched(dcserve_bin, tmp_path):
    with Origin({"/other.dict": DICTIONARY_RESPONSE}) as other:
        with Origin({"/page": page([other.base + "/other.dict", "//127.0.0.1:%d/other.dict" % other.port])}) as origin:
            report, err = fetch(dcserve_bin, tmp_path, origin.base + "/page", "-H", "Authorization: Bearer alice")
            assert other.requests == []
            assert report["links"] == []
            reasons = {s["link"]: s["reason"] for s in report["skippedLinks"]}
            assert "another origin" in reasons[other.base + "/other.dict"], reasons
            assert f"Link {other.base}/other.dict skipped: another origin" in err, err


def test_link_targets_lose_their_dot_segments(dcserve_bin, tmp_path):
    routes = {"/a/b/page": page(["../d/x", "./y/../z", "/e/./f/%2e%2E/g", "/a/b/c/.."])}
    with Origin(routes) as origin:
        report, _ = fetch(dcserve_bin, tmp_path, origin.base + "/a/b/page")
        assert origin.paths()[1:] == ["/a/d/x", "/a/b/z", "/e/g", "/a/b/"], origin.paths()
        assert report["main"]["links"] == [origin.base + p for p in ["/a/d/x", "/a/b/z", "/e/g", "/a/b/"]]
