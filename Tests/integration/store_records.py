"""Reads the records of dcserve's default dictionary store (one SQLite database, `dcserve.sqlite` in
the store directory) the way the directory store's JSON records read: a dict per (partition, hash)
with the same keys (`hash` in hex, `partition` None when shared, `byte_size`, `rule`, ...)."""
import sqlite3
from pathlib import Path

DATABASE = "dcserve.sqlite"


def records(store: Path) -> list[dict]:
    """Every committed record, or [] when the database does not exist yet. Opened read-only (WAL
    readers never block the server's writer)."""
    path = Path(store) / DATABASE
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute(
            "SELECT partition, hex(hash), match, rule, source_path, byte_size, last_served FROM records").fetchall()
    except sqlite3.OperationalError:
        return []  # the schema is being created right now
    finally:
        conn.close()
    return [{"partition": p or None, "hash": h.lower(), "match": m, "rule": r, "source_path": s, "byte_size": n,
             "last_served": t} for p, h, m, r, s, n, t in rows]


def blob(store: Path, hex_hash: str) -> bytes | None:
    """The stored bytes of `hex_hash`, or None."""
    path = Path(store) / DATABASE
    if not path.exists():
        return None
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        row = conn.execute("SELECT bytes FROM blobs WHERE hash = ?", (bytes.fromhex(hex_hash),)).fetchone()
    finally:
        conn.close()
    return row[0] if row else None


def blob_hashes(store: Path) -> set[str]:
    """The hex hashes of every stored byte string."""
    path = Path(store) / DATABASE
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return {h.lower() for (h,) in conn.execute("SELECT hex(hash) FROM blobs")}
    finally:
        conn.close()


def replace_blob(store: Path, hex_hash: str, data: bytes) -> None:
    """Overwrites the stored bytes of `hex_hash` (a test corrupting the store; the server stopped)."""
    conn = sqlite3.connect(Path(store) / DATABASE, timeout=10)
    try:
        with conn:
            conn.execute("UPDATE blobs SET bytes = ? WHERE hash = ?", (data, bytes.fromhex(hex_hash)))
    finally:
        conn.close()
