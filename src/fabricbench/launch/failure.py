"""Why a launched job failed, read from its exit status and the launcher's stderr.

One parser for what Open MPI's mpirun and MPICH's Hydra print when a rank dies (killed
by a signal, exited without MPI_Finalize, exited non-zero) and for the engine's own
error lines; every workflow explains a failure through ``explain_failure`` (a job that
streams records: the dead rank, else the engine's or the application's last word) or
``explain_exit`` (a command run to its end: its exit status, then the dead rank).
"""
from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from typing import List, Optional

# Open MPI wraps its messages at any space, hence \s+ between words.
_OMPI_SIGNAL = re.compile(
    r"process\s+rank\s+(\d+)\s+with\s+PID\s+\d+\s+on\s+node\s+(\S+)\s+exited\s+on\s+signal\s+(\d+)(?:\s+\(([^)]*)\))?")
_OMPI_IMPROPER = re.compile(r"process\s+rank\s+(\d+)\s+with\s+PID\s+\d+\s+on\s+node\s+(\S+)\s+exiting\s+improperly")
_OMPI_EXIT = re.compile(r"Process\s+name:\s+\[\[\d+,\d+\],(\d+)\]\s+Exit\s+code:\s+(\d+)")
_HYDRA_RUNNING = re.compile(r"PID (\d+) RUNNING AT (\S+)")
_HYDRA_SIGNAL = re.compile(r"KILLED BY SIGNAL: (\d+) \(([^)]*)\)")
_ENGINE_ERR = re.compile(r"^(?:fabricbench-mpi: )?(?:error|validation)[^\n]*", re.I | re.M)
_RULE = re.compile(r"^[-=*#_\s]+$")
# Lines launchers print outside their banners that say nothing about the cause.
_LAUNCHER_NOISE = re.compile(r"setpgid|^\[[^\]]*\] \d+ more process|^\[[^\]]*\] Set MCA parameter")


@dataclass(frozen=True)
class RankDeath:
    """A rank that ended the job: `how` is 'signal', 'no-finalize' or 'exit'."""

    how: str
    rank: Optional[int]
    host: Optional[str]
    code: Optional[int] = None  # the signal number or the exit code
    name: str = ""  # the signal's name as the launcher printed it

    @property
    def who(self) -> str:
        rank = f"rank {self.rank}" if self.rank is not None else "a rank"
        return f"{rank} on {self.host}" if self.host else rank

    def killed(self) -> str:
        """'rank 2 on n7 was killed by signal 9 (Killed)': what happened, for a finished command."""
        if self.how == "signal":
            return f"{self.who} was killed by signal {self.code}" + (f" ({self.name})" if self.name else "")
        if self.how == "no-finalize":
            return f"{self.who} exited without calling MPI_Finalize"
        return f"{self.who} exited with code {self.code}" if self.code is not None else f"{self.who} died"

    def died(self) -> str:
        """'rank 2 on host n7 died (signal 9, Killed)': the cause of a failed measurement."""
        host = f" on host {self.host}" if self.host else ""
        rank = f"rank {self.rank}" if self.rank is not None else "a rank"
        if self.how == "signal" and self.code is not None:
            return f"{rank}{host} died (signal {self.code}{', ' + self.name if self.name else ''})"
        if self.how == "no-finalize":
            return f"{rank}{host} died (exited without calling MPI_Finalize)"
        return f"{rank}{host} died" + (f" (exit code {self.code})" if self.code is not None else "")


def find_dead_rank(stderr: str) -> Optional[RankDeath]:
    """The first rank the launcher reports dead, or None."""
    m = _OMPI_SIGNAL.search(stderr)
    if m:
        return RankDeath("signal", int(m[1]), m[2], int(m[3]), m[4] or "")
    m = _OMPI_IMPROPER.search(stderr)
    if m:
        return RankDeath("no-finalize", int(m[1]), m[2])
    m = _OMPI_EXIT.search(stderr)
    if m:
        return RankDeath("exit", int(m[1]), None, int(m[2]))
    m = _HYDRA_SIGNAL.search(stderr)
    if m:
        running = _HYDRA_RUNNING.search(stderr)
        return RankDeath("signal", None, running[2] if running else None, int(m[1]), m[2])
    m = _HYDRA_RUNNING.search(stderr)
    if m:
        return RankDeath("exit", None, m[2])
    return None


def own_lines(stderr: str) -> List[str]:
    """The lines of stderr outside the launcher's boxed banners (rules of - = * #)."""
    own, in_banner = [], False
    for line in stderr.splitlines():
        text = line.strip()
        if text and _RULE.match(text):
            in_banner = not in_banner
            continue
        if text and not in_banner:
            own.append(text)
    return own


def explain_failure(stderr: str) -> str:
    """Why a job that streams results failed: a rank killed or gone without MPI_Finalize,
    else the engine's error line, else the application's own last line on stderr (outside
    the launcher's banners), else the rank that exited non-zero, else the last word."""
    death = find_dead_rank(stderr)
    if death is not None and death.how != "exit":
        return death.died()
    m = _ENGINE_ERR.search(stderr)
    if m:
        return m.group(0).strip()
    own = [line for line in own_lines(stderr) if not _LAUNCHER_NOISE.search(line)]
    if own:
        return own[-1][:300]
    if death is not None:
        return death.died()
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not _RULE.match(ln.strip())]
    return lines[-1][:300] if lines else "no message on stderr"


def banners(stderr: str) -> List[List[str]]:
    """The launcher's boxed messages (between rule lines of - = * #), each as its lines."""
    out: List[List[str]] = []
    current: Optional[List[str]] = None
    for line in stderr.splitlines():
        text = line.rstrip()
        if text.strip() and _RULE.match(text.strip()):
            if current is None:
                current = []
            else:
                if any(t.strip() for t in current):
                    out.append(current)
                current = None
            continue
        if current is not None:
            current.append(text)
    return out


def _one_line(lines: List[str]) -> str:
    """A banner as one line: prose lines joined with spaces, indented 'Key: value' lines with '; '."""
    parts: List[str] = []
    for line in lines:
        text = " ".join(line.split())
        if not text:  # a paragraph ends
            if parts and not parts[-1].endswith((".", ":", "!", "?")):
                parts[-1] += "."
            continue
        if parts and line[:1].isspace() and not parts[-1].endswith((":", ";", ".")):
            parts[-1] += ";"
        parts.append(text)
    return " ".join(parts)


def explain_start_failure(stderr: str) -> str:
    """Why a job did not start: the launcher's whole explanation when it printed one in a box
    (Open MPI's 'Please revise the conflict' block: what conflicts, with which values), as one
    line; else ``explain_failure``."""
    boxes = [b for b in banners(stderr) if not any(_LAUNCHER_NOISE.search(t) for t in b)]
    if boxes:
        return _one_line(boxes[-1])
    return explain_failure(stderr)


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def exit_status(returncode: Optional[int]) -> str:
    """'the command exited with status 137 (128 + signal 9, SIGKILL)' and the like."""
    if returncode is None:
        return "the command did not run"
    if returncode < 0:
        return f"the command was killed by signal {-returncode} ({signal_name(-returncode)})"
    if returncode > 128 and returncode - 128 < 65:
        return (f"the command exited with status {returncode} "
                f"(128 + signal {returncode - 128}, {signal_name(returncode - 128)})")
    return f"the command exited with status {returncode}"


def explain_exit(returncode: Optional[int], stderr: str) -> str:
    """Why a command run to its end failed: its exit status, then the rank that died."""
    details = []
    death = find_dead_rank(stderr)
    if death is not None:
        details.append(death.killed())
    elif returncode == 0:
        details.append("the program may not call MPI_Init/MPI_Finalize, or LD_PRELOAD did not reach it "
                       "(statically linked or setuid programs ignore LD_PRELOAD)")
    return exit_status(returncode) + (": " + "; ".join(details) if details else "")
