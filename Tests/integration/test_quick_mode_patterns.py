"""Patterns that can never match what they say are refused with the reason, as `#` already was, in quick
mode (`--dictionaries`, `--history-dictionaries`) and in configuration files (a rule's `match`,
`resources`, `compress`): a query after a `?` modifier (`/a/*?q=1`: dcserve matches paths only),
characters a request path carries only percent-encoded and `Use-As-Dictionary` cannot carry at all
(non-ASCII, a space, a trailing space), a literal `\\` (URL parsers read it as `/`) or a `\\` that
escapes nothing. Before, they were accepted silently. Release binary."""
from __future__ import annotations

import json

import pytest

from dcserve_server import DCServe
from decision_support import V1, request
from test_config_settings import refused

NEVER = {  # pattern: (test id, what the refusal says)
    "/a/*?q=1": ("query-after-star", "query"),
    "/a/:id?x=1": ("query-after-name", "query"),
    "/caf\u00e9/*": ("non-ascii", "percent-encoded"),
    "/static/app.* ": ("trailing-space", "a space"),
    "/a b/*": ("inner-space", "a space"),
    "/a\\\\b/*": ("literal-backslash", "literal"),
    "/static\\app.*": ("backslash-escaping-nothing", "escapes nothing"),
    "/a/*#top": ("hash", "hash"),
}
IDS = [test_id for test_id, _ in NEVER.values()]


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(V1)
    return root


@pytest.mark.parametrize("pattern", NEVER, ids=IDS)
@pytest.mark.parametrize("flag", ["--dictionaries", "--history-dictionaries"])
def test_quick_mode_refuses_patterns_that_never_match(dcserve_bin, site, tmp_path, flag, pattern):
    if flag == "--history-dictionaries":
        pattern = "/h/:group" + pattern  # a history pattern needs its :group segment first
    err = refused(dcserve_bin, ["--root", str(site), "--store", str(tmp_path / "store"), flag, pattern])
    assert flag in err and NEVER[pattern.removeprefix("/h/:group")][1] in err, err


@pytest.mark.parametrize("pattern", NEVER, ids=IDS)
@pytest.mark.parametrize("key", ["match", "resources", "compress"])
def test_configuration_files_refuse_them_too(dcserve_bin, site, tmp_path, key, pattern):
    rule = {"match": "/static/app.*", key: [pattern] if key == "compress" else pattern}
    config = {"server": {"host": "127.0.0.1", "port": 0}, "store": {"path": str(tmp_path / "store")},
              "site": {"root": str(site)}, "dictionaries": {"rules": ["app"], "app": rule}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config))
    err = refused(dcserve_bin, ["--config", str(path)])
    assert f"dictionaries.app.{key}" in err and NEVER[pattern][1] in err, err


@pytest.mark.parametrize("pattern", ["/static/app.*", "/caf%C3%A9/*", "/a%20b/*", "/a/\\:literal/*", "/files/:name?",
                                     "/files/:name?/x", "/a/{:id}?"])
def test_patterns_that_can_match_are_still_accepted(dcserve_bin, site, tmp_path, pattern):
    with DCServe(dcserve_bin, ["--root", str(site), "--store", str(tmp_path / "store"), "--dictionaries", pattern]) as server:
        assert request(server.port, "/static/app.v1.js")[0] == 200
