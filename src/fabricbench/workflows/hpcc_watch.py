"""Watch hpccoutf.txt while HPCC runs and note when each "Begin/End of NAME section." appears.

HPCC's rank 0 opens, writes and closes its output file around every section line, so a line
is on disk the moment the section starts or ends. A thread reads what was appended every
INTERVAL seconds. Each line is timed by the file's modification time when it was read: the
time of the last write before the read, not of our read (which the scheduler may delay on
a busy host). For the last line of a read that is the very write of the line; a line read
together with later ones gets the time of the latest (HPCC wrote it at most that early:
on a busy host the reads fall behind, and a test a few milliseconds long may share it). The marks are seconds since
1970, to be put on the profiler's clock with its ``init_epoch`` (analysis/hpcc_sections.py).
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from fabricbench.analysis.hpcc_sections import LINE

INTERVAL = 0.005


class SectionWatcher:
    """Start with ``start()``, end with ``stop()``; ``result()`` is what the run stores."""

    def __init__(self, path: Path, interval: float = INTERVAL):
        self.path = Path(path)
        self.interval = interval
        self.marks: List[List[Any]] = []
        self.timed_by_write = 0
        self.max_gap = 0.0  # the longest time between two reads: how late a shared time can be
        self._offset = 0
        self._partial = b""
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "SectionWatcher":
        self._thread = threading.Thread(target=self._loop, name="hpcc-section-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._poll()  # what was written after the last read

    def result(self) -> Dict[str, Any]:
        return {"source": self.path.name, "marks": self.marks, "resolution": self.interval,
                "timed_by_write": self.timed_by_write, "max_gap": self.max_gap}

    def _loop(self) -> None:
        # On a loaded host a thread of normal priority waits its turn for up to a second: the
        # lines of several short sections would then share one time. Root can raise this
        # thread's priority (it only reads a few bytes every INTERVAL); otherwise it stays.
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
        except (OSError, AttributeError):
            pass
        last = time.monotonic()
        while not self._stop.is_set():
            self._poll()
            self._stop.wait(self.interval)
            now = time.monotonic()
            self.max_gap = max(self.max_gap, now - last)
            last = now

    def _poll(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError:
            return
        if st.st_size <= self._offset:
            return
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read(st.st_size - self._offset)
        except OSError:
            return
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        found = [(i, LINE.match(line.decode("utf-8", "replace").strip())) for i, line in enumerate(lines)]
        found = [(i, m) for i, m in found if m]
        for i, m in found:
            # Only the last line of this read was the file's last write (HPCC writes a section
            # line alone, or with the "Current time" line just before it).
            last = i == len(lines) - 1 and not self._partial
            self.timed_by_write += int(last)
            when = st.st_mtime_ns / 1e9
            self.marks.append([m.group(1).lower(), m.group(2), when])
