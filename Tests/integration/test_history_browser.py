"""Headless Chromium and history dictionaries, through the reverse proxy against the example
API's chats: a page navigation to a chat whose response carries `Link: <…>; rel="compression-dictionary"`
makes Chromium fetch and register alice's dictionary of chat 1 (the Authorization header comes from
DevTools' extra headers, so the dictionary URL sees alice's partition); the page's later fetch() of
that chat's messages carries Available-Dictionary, arrives as dcb or dcz (the smaller), and decodes
byte for byte (the page checks length and SHA-256 with WebCrypto). After a rebuild, Chromium fetches
the next dictionary (in the chat's scope) naming the one it holds, and gets it as a dcb/dcz delta.
"""
from __future__ import annotations

import hashlib
import json
import os
import time

import pytest

from chromium import CHROMIUM, Chromium
from dcserve_server import DCServe
from test_browser import fetch_checked, wait_for_dictionary
from test_history_dictionaries import auth, available, converse_until_link, direct, history_config, link_of, post, request
from upstream_support import ExampleAPI

if not os.access(CHROMIUM, os.X_OK):
    pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install chromium`", pytrace=False)


def test_chromium_registers_a_linked_history_dictionary_and_decodes_the_delta(dcserve_bin, tmp_path):
    with ExampleAPI() as api, DCServe(dcserve_bin, ["--config", history_config(tmp_path, api.base)]) as server, \
            Chromium() as browser:
        url, hex_hash = converse_until_link(server.port, "1", "alice", "bob")
        browser.call("Network.setExtraHTTPHeaders", {"headers": auth("alice")}, session=True)
        page = "/api/chats/1/messages?since=0"
        browser.navigate(f"http://localhost:{server.port}{page}")
        received = browser.received_headers(page)
        assert received and "link" in received[-1], received
        linked = received[-1]["link"]
        assert linked.startswith("</api/chats/1/.dcserve-dictionary/"), linked
        linked_hex = linked.split("/.dcserve-dictionary/")[1][:64]
        # Chromium fetches the dictionary on its own; poll a URL in the chat's scope until it names it.
        sent = wait_for_dictionary(browser, "/api/chats/1/probe")
        status, _, dictionary = request(server.port, f"/api/chats/1/.dcserve-dictionary/{linked_hex}",
                                        {**auth("alice"), "Accept-Encoding": "identity"})
        assert status == 200 and hashlib.sha256(dictionary).hexdigest() == linked_hex
        assert sent["available-dictionary"] == available(dictionary)
        assert sent.get("dictionary-id") == '"chat:1"'
        fetched = browser.sent_headers(f"/.dcserve-dictionary/{linked_hex}")
        assert fetched, "Chromium fetched the linked dictionary"

        post(server.port, "1", "bob", "Bob from the browser test: the minutes are ready for review.")
        messages = "/api/chats/1/messages?since=3"
        expected = direct(api, messages, "alice")
        got = fetch_checked(browser, messages)
        assert got["sent"]["available-dictionary"] == available(dictionary)
        # The smaller of dcb and dcz (both decoded by Chromium; test_history_codings checks the choice).
        assert got["received"].get("content-encoding") in ("dcb", "dcz"), (got["received"], server.logs()[-3000:])
        assert got["page"]["status"] == 200
        assert got["page"]["length"] == len(expected)
        assert got["page"]["sha256"] == hashlib.sha256(expected).hexdigest()

        # After a rebuild, the next navigation links the new dictionary; its URL lies in the chat's
        # scope, so Chromium fetches it naming the one it holds and gets it as a dcb/dcz delta.
        converse_until_link(server.port, "1", "alice", "bob", previous=linked_hex)
        page2 = "/api/chats/1/messages?since=1"
        browser.events.clear()  # navigate() waits for a load event: not the first page's
        browser.navigate(f"http://localhost:{server.port}{page2}")
        new_hex = browser.received_headers(page2)[-1]["link"].split("/.dcserve-dictionary/")[1][:64]
        assert new_hex != linked_hex
        deadline = time.monotonic() + 10
        while not browser.received_headers(f"/.dcserve-dictionary/{new_hex}") and time.monotonic() < deadline:
            browser.pump(0.2)
        fetch = browser.sent_headers(f"/.dcserve-dictionary/{new_hex}")
        assert fetch and fetch[-1]["available-dictionary"] == available(dictionary), fetch
        assert browser.received_headers(f"/.dcserve-dictionary/{new_hex}")[-1].get("content-encoding") in ("dcb", "dcz")
