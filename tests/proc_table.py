"""The processes of this machine as tests look for leftovers: (pid, command line, working directory)."""
import os
from typing import Iterator, Tuple


def processes() -> Iterator[Tuple[int, str, str]]:
    """Every live process; zombies and processes that vanish while being read are left out."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        yield int(entry), cmdline, cwd
