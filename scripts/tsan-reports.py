#!/usr/bin/env python3
"""Summarises the ThreadSanitizer reports of a run (the files TSAN_OPTIONS=log_path=DIR/dcserve wrote,
one per process that reported): every distinct report once, keyed by its SUMMARY line, with how many
times and in how many processes it occurred, and the first full report of each. Exit status 1 when
there is any report (suppressed ones are never written), 0 when there is none.

Usage: scripts/tsan-reports.py DIR"""
import collections
import pathlib
import re
import sys


def main() -> int:
    directory = pathlib.Path(sys.argv[1])
    files = sorted(p for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []
    first: dict[str, str] = {}
    count: collections.Counter[str] = collections.Counter()
    processes: dict[str, set[str]] = collections.defaultdict(set)
    for path in files:
        text = path.read_text(errors="replace")
        if "WARNING: ThreadSanitizer" not in text and text.strip():
            # Not a report but TSan's own complaint (an unreadable suppressions file, ...): a failure too.
            key = "ThreadSanitizer itself: " + text.strip().splitlines()[0]
            count[key] += 1
            processes[key].add(path.name)
            first.setdefault(key, text.strip())
            continue
        for block in re.split(r"(?m)^=+\n(?=WARNING: ThreadSanitizer)", text):
            if "WARNING: ThreadSanitizer" not in block:
                continue
            match = re.search(r"(?m)^SUMMARY: ThreadSanitizer: (.*)$", block)
            # Addresses and thread ids differ between processes: key on the summary's words.
            key = re.sub(r"0x[0-9a-f]+", "0x…", match.group(1) if match else block.splitlines()[0])
            count[key] += 1
            processes[key].add(path.name)
            first.setdefault(key, block.strip())
    if not count:
        print(f"ThreadSanitizer: no report in {len(files)} log files under {directory}")
        return 0
    print(f"ThreadSanitizer: {len(count)} distinct reports ({sum(count.values())} in all):")
    for key, n in count.most_common():
        print(f"  {n:5d}x in {len(processes[key])} processes: {key}")
    for key, _ in count.most_common():
        print("\n" + "=" * 100 + "\n" + first[key])
    return 1


if __name__ == "__main__":
    sys.exit(main())
