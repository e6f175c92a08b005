"""The heap-allocation counter for a running dcserve: malloc_counter/malloc_counter.c built into a
shared library, loaded with LD_PRELOAD, counting into a file this module reads.

    lib = build_malloc_counter(tmp_dir)                 # compiles the interposer with cc
    counter = AllocationCounter(tmp_dir / "counts")
    DCServe(bin, args, env=counter.env(lib))            # the server counts into counter.path
    before = counter.total(); ...; counter.total() - before
"""
from __future__ import annotations

import pathlib
import struct
import subprocess

SOURCE = pathlib.Path(__file__).resolve().parent / "malloc_counter/malloc_counter.c"
MAGIC = 0x636F756E746D616C
SLOTS = 1024


def build_malloc_counter(out_dir: pathlib.Path) -> pathlib.Path:
    """Compiles the interposer into `out_dir`/libmalloc_counter.so and returns its path."""
    lib = out_dir / "libmalloc_counter.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(lib), str(SOURCE)],
                   check=True, capture_output=True, timeout=60)
    return lib


class AllocationCounter:
    """Reads the counts one process writes into `path` (the layout is malloc_counter.c's)."""

    def __init__(self, path: pathlib.Path):
        self.path = path

    def env(self, lib: pathlib.Path) -> dict[str, str]:
        """The environment that makes a child process count into `path`."""
        return {"LD_PRELOAD": str(lib), "DCSERVE_MALLOC_COUNTER_FILE": str(self.path)}

    def per_thread(self) -> dict[int, int]:
        """Allocations so far by thread id (0: the overflow slot shared by threads beyond the table)."""
        data = self.path.read_bytes()
        magic, claimed = struct.unpack_from("=QQ", data, 0)
        if magic != MAGIC:
            raise RuntimeError(f"{self.path} is not a malloc counter file (magic {magic:#x})")
        counts: dict[int, int] = {}
        for i in range(min(claimed, SLOTS)):
            tid, n = struct.unpack_from("=QQ", data, 16 + 16 * i)
            counts[tid] = counts.get(tid, 0) + n
        _, overflow = struct.unpack_from("=QQ", data, 16 + 16 * SLOTS)
        if overflow:
            counts[0] = overflow
        return counts

    def total(self) -> int:
        """Allocations so far on every thread of the process."""
        return sum(self.per_thread().values())
