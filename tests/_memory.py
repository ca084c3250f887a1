"""Resident bytes of address ranges, for the tests of :mod:`onnxport.mapped_pages` and its users."""

from __future__ import annotations

import re
import time
from collections.abc import Callable


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


def settled(measure: Callable[[], int], bound: int, seconds: float = 2.0) -> int:
    """``measure()`` once it is at most ``bound``, or its last value after ``seconds``: a thread
    dropping pages every millisecond may wait for a core on a busy machine."""
    deadline = time.monotonic() + seconds
    value = measure()
    while value > bound and time.monotonic() < deadline:
        time.sleep(0.01)
        value = measure()
    return value
