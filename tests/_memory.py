"""Resident bytes of address ranges, for the tests of :mod:`onnxport.mapped_pages` and its users."""

from __future__ import annotations

import re


def resident(ranges: frozenset[tuple[int, int]]) -> int:
    """Bytes of the mappings starting at ``ranges``' starts that are resident in this process
    (``/proc/self/smaps`` ``Rss``)."""
    starts = {start for start, _ in ranges}
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = re.match(r"^([0-9a-f]+)-[0-9a-f]+ ", line)
            if head:
                inside = int(head.group(1), 16) in starts
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1]) * 1024
    return total
