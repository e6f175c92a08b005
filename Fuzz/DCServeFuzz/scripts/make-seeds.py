"""Writes the seed inputs of the client-response, history-path, partition, lab and header-fields fuzz modes into
Fuzz/DCServeFuzz/corpus/<mode> (real gzip/br/zstd/dcb/dcz bodies for the driver's fixed dictionary).
Run with the repository's venv: .deps/venv/bin/python Fuzz/DCServeFuzz/scripts/make-seeds.py"""
import hashlib, gzip, os, subprocess, tempfile, zstandard, json
HERE = os.path.dirname(os.path.abspath(__file__))
C = os.path.join(HERE, "..", "corpus")
BROTLI = os.path.join(HERE, "..", "..", "..", ".deps", "brotli", "bin", "brotli")
TMP = tempfile.mkdtemp()
d = b"dcserve client fuzz dictionary: function export const return " * 4
h = hashlib.sha256(d).digest()
payload = b"export const answer = function() { return 42 }; " * 6
def w(mode, name, data):
    os.makedirs(f"{C}/{mode}", exist_ok=True)
    open(f"{C}/{mode}/{name}", "wb").write(data)
def br(data, dictionary=None):
    open(TMP + "/in", "wb").write(data)
    args = [BROTLI, "-c", "-q", "5", TMP + "/in"]
    if dictionary:
        open(TMP + "/dict", "wb").write(dictionary); args[1:1] = ["-D", TMP + "/dict"]
    return subprocess.run(args, check=True, capture_output=True).stdout
zdict = zstandard.ZstdCompressionDict(d, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
dcz = b"\x5e\x2a\x4d\x18\x20\x00\x00\x00" + h + zstandard.ZstdCompressor(level=3, dict_data=zdict, write_content_size=True).compress(payload)
dcb = b"\xff\x44\x43\x42" + h + br(payload, d)
# client-response: head lines, blank line, body
use = b'use-as-dictionary: match="/static/app.*.js", match-dest=("script"), id="v1"\ncache-control: max-age=3600\n'
w("client-response", "dictionary-identity", use + b"\n" + payload)
w("client-response", "dictionary-gzip", use + b"content-encoding: gzip\n\n" + gzip.compress(payload, mtime=0))
w("client-response", "dcz", b"content-encoding: dcz\ncache-control: max-age=60\n\n" + dcz)
w("client-response", "dcb", b"content-encoding: dcb\n\n" + dcb)
w("client-response", "br-zstd", b"content-encoding: zstd, br\n\n" + zstandard.ZstdCompressor().compress(br(payload)))
w("client-response", "link", b"http://localhost:8080/a/page.html\nlink: </d/dict.dat>; rel=\"compression-dictionary\", <https://other.example/x>; rel=preload, <../up>; rel=\"preload compression-dictionary\"\n\nhello")
w("client-response", "lifetime", b"https://example.com/app/v1.js\nuse-as-dictionary: match=\"v*.js\", ttl=86400\ndate: Sun, 06 Nov 1994 08:49:37 GMT\nexpires: Sun, 06 Nov 1994 09:49:37 GMT\nage: 30\ncache-control: stale-while-revalidate=100, must-revalidate\n\nbody")
w("client-response", "rejected", b"fuzz-status: 404\nuse-as-dictionary: match=\"https://evil.example/*\"\ncache-control: no-store\n\nx")
# history-path
hexs = h.hex()
w("history-path", "in-scope", b"/api/chats/:chat/*\x00/api/chats/42/.dcserve-dictionary/" + hexs.encode())
w("history-path", "well-known", b"/.well-known/dcserve-dictionary/" + hexs.encode())
w("history-path", "group", b"/api/chats/7/messages")
w("history-path", "exact", b"/api/chats/:chat\x00/api/chats/abc-1.x~_")
w("history-path", "nested", b"/v1/rooms/:room_id/log/*\x00/v1/rooms/r9/log/.dcserve-dictionary/" + hexs.encode())
# partition
w("partition", "header", b"Authorization\x00authorization:Bearer abc\ncookie:x=1")
w("partition", "cookie", b"session\x00cookie:theme=dark; session=s3cr3t; x=y\ncookie:session=other")
w("partition", "upstream", b"X-DCServe-User\x00x-dcserve-user:user-42\ncontent-type:text/plain")
w("partition", "empty", b"session\x00cookie:session=\nauthorization:")
# lab: a plan document (the one the lab serves), and requests
plan = {"version": 1, "run": "r1", "reportURL": "/lab/r/r1/report/{step}", "resultsURL": "/lab/runs/r1/results.json",
        "reportPageURL": "/lab/runs/r1/", "scenarios": [{"id": "basic", "title": "t", "rfc": "RFC 9842 2.1", "checks": "c"}],
        "steps": [{"id": "basic.fetch", "scenario": "basic", "kind": "fetch", "method": "GET", "url": "/lab/r/r1/basic/app.v1.js",
                   "destination": "script", "report": True, "followLinks": False, "expect": "e", "maxTries": 3,
                   "intervalMilliseconds": 100, "readyURL": "/lab/r/r1/ready/basic.fetch", "seconds": 1.5}]}
w("lab", "plan", json.dumps(plan).encode())
for name, req in [("plan-json", b"GET\n/lab/plan.json?run=abc_1"), ("report", b"POST\n/lab/r/abc_1/report/registration.use\n{\"sha256\": \"abababababababababababababababababababababababababababababababab\"}"), ("report-get", b"GET\n/lab/r/abc_1/report/dictionary-id.use?error=refused%20it"),
                  ("results", b"GET\n/lab/runs/abc_1/results.json"), ("scenario", b"GET\n/lab/r/abc_1/registration/dict.js?x=%20+y"), ("use", b"GET\n/lab/r/abc_1/registration/app.v2.js"),
                  ("ready", b"HEAD\n/lab/r/abc_1/ready/registration.probe"), ("root", b"DELETE\n/lab/")]:
    w("lab", name, b"\x80" + req)
print("ok")

# header-fields: NUL-separated values (Cache-Control / If-None-Match / path, ETag / Forwarded, date, Last-Modified)
w("header-fields", "cache-control", b'max-age=60, stale-while-revalidate=86400, "private"\0"v1"\0Sun, 06 Nov 1994 08:49:37 GMT\0Sun, 06 Nov 1994 08:49:37 GMT')
w("header-fields", "etags", b'W/"a", "b", *\0W/"b"\0\0/a/./b/../c%2E%2e/d')
w("header-fields", "proxies", b'::ffff:127.0.0.1\0for=1.2.3.4;proto="https", for=5.6.7.8;proto=http\0\0/static/%61pp.%2Ejs')
w("header-fields", "paths", b'/api/../%2e%2E/x%00y\0[::1]:8080\0/a//b/%41%zz\0Accept-Encoding, *')
