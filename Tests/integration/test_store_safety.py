"""The store is refused inside the document root, and files in the
store directory that dcserve did not write survive a server run untouched."""
import hashlib
import json
import os
import stat

import pytest
import store_records

from conftest import run
from dcserve_server import DCServe

JS = b"export const app = 'v1';\n" + b"// padding line for a compressible bundle\n" * 40


def test_store_inside_the_document_root_is_refused(dcserve_bin, tmp_path):
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(JS)
    # Directly inside, and through a symlink that leads inside.
    (tmp_path / "sneaky").symlink_to(root / "static")
    for store in (root / "dictionaries", tmp_path / "sneaky" / "dicts", root):
        r = run(dcserve_bin, "serve", "--root", str(root), "--store", str(store), "--port", "0",
                "--dictionaries", "/static/app.*.js", check=False, timeout=30)
        err = r.stderr.decode(errors="replace") + r.stdout.decode(errors="replace")
        assert r.returncode != 0, err
        assert "store.path" in err and "document root" in err, err
    assert not (root / "dictionaries").exists() and not (root / "static" / "dicts").exists()


@pytest.mark.parametrize("kind", ["sqlite", "directory"])
def test_files_the_store_did_not_write_survive(dcserve_bin, tmp_path, kind):
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(JS)
    store = tmp_path / "store"
    store.mkdir()
    foreign_hex = hashlib.sha256(b"something else").hexdigest()
    foreign = {
        ".tmp-notes.txt": b"my notes\n",
        foreign_hex + ".json": json.dumps({"mine": True}).encode(),
        hashlib.sha256(b"claimed").hexdigest(): b"not what the name claims\n",
        "README.md": b"my store notes\n",
    }
    for name, data in foreign.items():
        (store / name).write_bytes(data)
    passwd_hex = hashlib.sha256(open("/etc/passwd", "rb").read()).hexdigest()
    os.symlink("/etc/passwd", store / passwd_hex)

    with DCServe(dcserve_bin, ["--root", str(root), "--store", str(store), "--dictionaries", "/static/app.*.js"],
                 env={**os.environ, "DCSERVE_STORE_KIND": kind}) as s:
        status, headers, body = s.get("/static/app.v1.js")
        assert status == 200 and body == JS and "use-as-dictionary" in {k.lower() for k in headers.keys()}
        # A client naming /etc/passwd's hash gets no delta against it.
        import base64
        avail = ":" + base64.b64encode(bytes.fromhex(passwd_hex)).decode() + ":"
        status, headers, _ = s.get("/static/app.v1.js", {"Accept-Encoding": "dcb, dcz", "Available-Dictionary": avail})
        assert status == 200 and headers.get("Content-Encoding") in (None, "identity")
        logs = s.logs()
    for name, data in foreign.items():
        assert (store / name).read_bytes() == data, name
    assert os.readlink(store / passwd_hex) == "/etc/passwd"
    assert not (store / "quarantine").exists() or not os.listdir(store / "quarantine")
    if kind == "directory":
        assert (store / hashlib.sha256(JS).hexdigest()).read_bytes() == JS
    else:
        assert store_records.blob(store, hashlib.sha256(JS).hexdigest()) == JS
        assert stat.S_IMODE((store / store_records.DATABASE).stat().st_mode) == 0o600
    assert "not written by it" in logs


def test_the_partition_secret_is_no_foreign_file(dcserve_bin, tmp_path):
    """dcserve keeps its `partition-secret` in the store directory: a restart does not warn about it as
    a file the store did not write (a file that is foreign still is warned about)."""
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(JS)
    store = tmp_path / "store"
    args = ["--root", str(root), "--store", str(store), "--dictionaries", "/static/app.*.js", "--partition-header", "authorization"]
    # The directory store is the one that reads (and warns about) every file in its directory.
    env = {**os.environ, "DCSERVE_STORE_KIND": "directory"}
    for run_index in range(2):
        with DCServe(dcserve_bin, args, env=env) as s:
            assert s.get("/static/app.v1.js")[0] == 200
            logs = s.logs()
        assert (store / "partition-secret").exists()
        assert "partition-secret" not in logs and "not written by it" not in logs, logs
    (store / "notes.txt").write_bytes(b"mine\n")
    with DCServe(dcserve_bin, args, env=env) as s:
        logs = s.logs()
    assert "notes.txt" in logs and "partition-secret" not in logs, logs
