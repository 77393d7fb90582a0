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
from typing import List, Optional, Sequence

# How Open MPI reports a dead rank, tried in order: the pattern, and the death its groups tell.
# Open MPI wraps its messages at any space, hence \s+ between words.
_OMPI_DEATHS = (
    (re.compile(r"process\s+rank\s+(\d+)\s+with\s+PID\s+\d+\s+on\s+node\s+(\S+)\s+exited\s+on\s+signal\s+(\d+)"
                r"(?:\s+\(([^)]*)\))?"),
     lambda m, _host: RankDeath("signal", int(m[1]), m[2], int(m[3]), m[4] or "")),
    (re.compile(r"process\s+rank\s+(\d+)\s+with\s+PID\s+\d+\s+on\s+node\s+(\S+)\s+exiting\s+improperly"),
     lambda m, _host: RankDeath("no-finalize", int(m[1]), m[2])),
    (re.compile(r"Process\s+name:\s+\[\[\d+,\d+\],(\d+)\]\s+Exit\s+code:\s+(\d+)"),
     lambda m, _host: RankDeath("exit", int(m[1]), None, int(m[2]))),
)
# The same for Hydra's banner, whose host is the one it names RUNNING AT.
_HYDRA_DEATHS = (
    (re.compile(r"application called MPI_Abort\(\S+, (-?\d+)\) - process (\d+)"),
     lambda m, host: RankDeath("exit", int(m[2]), host, int(m[1]))),
    (re.compile(r"KILLED BY SIGNAL: (\d+) \(([^)]*)\)"),
     lambda m, host: RankDeath("signal", None, host, int(m[1]), m[2])),
    (re.compile(r"TERMINATED WITH THE EXIT STRING: ([^(\n]*?)\s*\(signal (\d+)\)"),
     lambda m, host: RankDeath("signal", None, host, int(m[2]), m[1].strip())),
)
_HYDRA_RUNNING = re.compile(r"PID (\d+) RUNNING AT (\S+)")
_HYDRA_EXIT_CODE = re.compile(r"=\s+EXIT CODE: (\d+)")
# mpiexec -print-all-exitcodes: "[mpiexec@n1] Exit codes: [n1] 0,9\n[n2] 0,0", one group per host
# with the raw wait status of each of its ranks, in the order of their world ranks.
_HYDRA_CODES = re.compile(r"Exit codes:((?:\s*\[[^\]\s]+\] *-?\d+(?:,-?\d+)*)+)")
_HYDRA_GROUP = re.compile(r"\[([^\]\s]+)\] *(-?\d+(?:,-?\d+)*)")
_ENGINE_ERR = re.compile(r"^(?:fabricbench-mpi: )?(?:error|validation)[^\n]*", re.I | re.M)
_RULE = re.compile(r"^[-=*#_\s]+$")
# Lines launchers print outside their banners that say nothing about the cause.
_LAUNCHER_NOISE = re.compile(r"setpgid|^\[[^\]]*\] \d+ more process|^\[[^\]]*\] Set MCA parameter|^\[proxy:[^\]]*\]")


# What MPICH's Hydra prints on its stdout (not stderr) when a job ends badly.
_HYDRA_STDOUT = re.compile(r"^(?:=+|=\s.*|\[mpiexec@[^\]]*\].*|\[[^\]\s]+\] *-?\d+(?:,-?\d+)*|YOUR APPLICATION TERMINATED.*|"
                           r"This typically refers to a problem with your application\.|"
                           r"Please see the FAQ page for debugging suggestions.*)$")


def launcher_line(line: str) -> bool:
    """True for a line Hydra prints on the job's stdout about the job (its banners, exit codes),
    which a reader of the program's stdout should hand to the failure explanation instead."""
    return bool(_HYDRA_STDOUT.match(line.strip()))


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


def find_dead_rank(stderr: str, rank_hosts: Optional[Sequence[str]] = None) -> Optional[RankDeath]:
    """The first rank the launcher reports dead, or None. For Hydra, `rank_hosts` (the host of
    every world rank, as the engine's run record lists them) names the rank behind its per-host
    exit codes when the job spans several hosts."""
    return _first_death(_OMPI_DEATHS, stderr, None) or _hydra_dead_rank(stderr, rank_hosts)


def _first_death(deaths, text: str, host: Optional[str]) -> Optional[RankDeath]:
    """The death told by the first of `deaths` (pattern, maker) whose pattern is found in `text`."""
    for pattern, death in deaths:
        m = pattern.search(text)
        if m:
            return death(m, host)
    return None


def _hydra_dead_rank(text: str, rank_hosts: Optional[Sequence[str]]) -> Optional[RankDeath]:
    """Hydra's banner names one process that ended badly by pid and host, not by rank, and not
    necessarily the first (the lowest rank once it has ended the others with SIGKILL); its exit
    codes (mpiexec -print-all-exitcodes) give every rank's wait status."""
    located = _hydra_exit_codes(text, rank_hosts)
    if located is not None:
        rank, where, status = located
        if status & 0x7F:
            return RankDeath("signal", rank, where, status & 0x7F, signal_name_short(status & 0x7F))
        return RankDeath("exit", rank, where, (status >> 8) & 0xFF)
    running = _HYDRA_RUNNING.search(text)
    host = running[2] if running else None
    death = _first_death(_HYDRA_DEATHS, text, host)
    if death is not None:
        return death
    if running:
        code = _HYDRA_EXIT_CODE.search(text)
        return RankDeath("exit", None, host, int(code[1]) if code else None)
    return None


def _hydra_exit_codes(text: str, rank_hosts: Optional[Sequence[str]]) -> Optional[tuple]:
    """(world rank or None, host, wait status) of the rank that ended the job, from Hydra's exit
    codes. Hydra ends the other ranks with SIGKILL once one died, so a rank with any other
    status is the cause; among SIGKILLed ranks only a single one can be named."""
    m = _HYDRA_CODES.search(text)
    if not m:
        return None
    groups = [(g[1], [int(v) for v in g[2].split(",")]) for g in _HYDRA_GROUP.finditer(m[1])]
    bad = [(h, i, st) for h, codes in groups for i, st in enumerate(codes) if st != 0]
    if not bad:
        return None
    causes = [c for c in bad if c[2] != signal.SIGKILL] or bad
    h, local, status = causes[0]
    if len(causes) > 1 and status == signal.SIGKILL:
        hosts = {c[0] for c in causes}
        return None, h if len(hosts) == 1 else None, status
    if rank_hosts:
        on_host = [r for r, name in enumerate(rank_hosts) if name == h]
        rank = on_host[local] if local < len(on_host) else None
    elif len(groups) == 1:
        rank = local  # one host: its ranks are the world ranks in order
    else:
        rank = None
    return rank, h, status


def signal_name_short(num: int) -> str:
    """'Killed', 'Segmentation fault': the signal's description, as the launchers print it."""
    try:
        return signal.strsignal(num) or signal_name(num)
    except ValueError:
        return signal_name(num)


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


def explain_failure(stderr: str, rank_hosts: Optional[Sequence[str]] = None) -> str:
    """Why a job that streams results failed: a rank killed or gone without MPI_Finalize,
    else the engine's error line, else the application's own last line on stderr (outside
    the launcher's banners), else the rank that exited non-zero, else the last word."""
    death = find_dead_rank(stderr, rank_hosts)
    if death is not None and death.how != "exit":
        return death.died()
    m = _ENGINE_ERR.search(stderr)
    if m:
        return m.group(0).strip()
    own = [line for line in own_lines(stderr) if not _LAUNCHER_NOISE.search(line) and not launcher_line(line)]
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


# What ssh prints when it could not reach a host (exit status 255): the cause, in the user's words.
_SSH_UNREACHABLE = (
    ("Connection timed out", "it does not answer (connection timed out): it is down, or unreachable from here"),
    ("No route to host", "there is no route to it (No route to host)"),
    ("Network is unreachable", "its network is unreachable from here"),
    ("Connection refused", "it refuses ssh connections (no ssh server on port 22?)"),
    ("Could not resolve hostname", "its name does not resolve"),
    ("Name or service not known", "its name does not resolve"),
    ("Permission denied", "it refuses the login (ssh keys without a password are needed)"),
    ("Host key verification failed", "its host key is not known here (ssh to it once by hand)"),
)


def ssh_unreachable(returncode: Optional[int], stderr: str) -> Optional[str]:
    """Why ssh could not reach its host ('its name does not resolve', ...), or None when ssh got there
    (the remote command's own failure, or not ssh at all)."""
    if returncode != 255:
        return None
    for needle, why in _SSH_UNREACHABLE:
        if needle in (stderr or ""):
            return why
    return None


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


# Open MPI's "*** ..." error block lines that repeat boilerplate rather than say what went wrong.
_OMPI_STARS = re.compile(r"^(?:\[[^\]]*\]\s*)?\*\*\*\s*(.*)$")  # "[host:pid] *** text"
_OMPI_BOILERPLATE = re.compile(r"^(reported by process|on communicator|MPI_ERRORS_ARE_FATAL|and potentially|"
                               r"Your MPI job will now abort|This is disallowed by the MPI standard|$)")
_MPICH_FATAL = re.compile(r"Fatal error in (\S+?): ([^,\n]*(?:, error stack)?)")


def mpi_library_error(stderr: str) -> Optional[str]:
    """The MPI library's own word on why a rank stopped, as one line: Open MPI's '*** ...' block
    ('The MPI_Init() function was called after MPI_FINALIZE was invoked.', 'An error occurred in
    MPI_Send: MPI_ERR_RANK: invalid rank') or MPICH's 'Fatal error in PMPI_Send: Invalid rank'."""
    said: List[str] = []
    for line in (stderr or "").splitlines():
        m = _OMPI_STARS.match(line.strip())
        if m:
            text = m.group(1).strip()
            if _OMPI_BOILERPLATE.match(text):
                continue
            if text in said:
                break  # the next rank's copy of the same block
            said.append(text)
        elif said:
            break
    if said:
        return ": ".join(t.rstrip(".") for t in said[:3]) + "."
    m = _MPICH_FATAL.search(stderr or "")
    if m:
        return f"Fatal error in {m.group(1)}: {m.group(2).replace(', error stack', '').strip()}"
    return None


def explain_exit(returncode: Optional[int], stderr: str) -> str:
    """Why a command run to its end failed: its exit status, then the rank that died and what MPI said."""
    details = []
    death = find_dead_rank(stderr)
    mpi_said = mpi_library_error(stderr) if returncode != 0 else None
    if death is not None:
        details.append(death.killed())
    if mpi_said:
        details.append(f"MPI said: {mpi_said}")
    if death is None and not mpi_said and returncode == 0:
        details.append("the program may not call MPI_Init/MPI_Finalize, or LD_PRELOAD did not reach it "
                       "(statically linked or setuid programs ignore LD_PRELOAD)")
    return exit_status(returncode) + (": " + "; ".join(details) if details else "")
