"""A profile in the results database: a run of kind `profile`.

The whole JSON profile is the run's `profile` artifact; the measurements are its calls in
long format, one per MPI call and message-size bin, summed over ranks: metric `time` (s)
with n = calls, min and max = the fastest and slowest single call, and the bytes moved in
`detail`. Run-level figures (wall time, MPI time per rank) are in the provenance.
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from fabricbench.analysis.profile_data import bin_range
from fabricbench.store import Measurement, Run

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store


def profile_measurements(profile: Dict[str, Any]) -> List[Measurement]:
    acc: Dict[tuple, List[float]] = defaultdict(lambda: [0, 0.0, float("inf"), 0.0, 0, set()])
    for rank, call, b, count, nbytes, t, tmin, tmax in profile["calls"]:
        a = acc[(call, b)]
        a[0] += count
        a[1] += t
        a[2] = min(a[2], tmin)
        a[3] = max(a[3], tmax)
        a[4] += nbytes
        a[5].add(rank)
    out = []
    for (call, b), (count, total, tmin, tmax, nbytes, ranks) in sorted(acc.items(), key=lambda kv: (-kv[1][1], kv[0])):
        lo, hi = bin_range(b)
        out.append(
            Measurement(
                benchmark="mpi_profile",
                params={"call": call, "size": lo, "size_max": hi, "bin": b, "ranks": profile["ranks"]},
                metric="time",
                unit="s",
                value=total,
                n=count,
                mean=total / count if count else None,
                min=tmin if count else None,
                max=tmax,
                detail={"bytes": nbytes, "calling_ranks": len(ranks)},
            )
        )
    return out


def profile_provenance(profile: Dict[str, Any]) -> Dict[str, Any]:
    info = profile["rank_info"]
    cpu = {}
    if info and all("cpu_time" in r for r in info):  # whether ranks shared cores (newer profiles)
        cpu = {"cpu_time_s": [r["cpu_time"] for r in info], "run_delay_s": [r.get("run_delay") for r in info],
               "cpus_online": [r.get("cpus_online") for r in info]}
    return {
        "hosts": sorted(set(profile.get("hosts", []))),
        "nodes": len(set(profile.get("hosts", []))) or None,
        "ranks": profile["ranks"],
        "mpi_library": profile.get("mpi", {}).get("library"),
        "profiled_command": profile.get("command"),
        "app_time_s": [r["app_time"] for r in info],
        "mpi_time_s": [r["mpi_time"] for r in info],
        **cpu,
    }


def store_profile(
    store: Store,
    profile: Dict[str, Any],
    label: Optional[str] = None,
    tags: Optional[Dict[str, str]] = None,
    command: Optional[str] = None,
    launch: Optional[Dict[str, Any]] = None,
) -> Run:
    """One transaction: the run, its call measurements and the profile artifact. ``launch`` is the
    launcher's provenance when fabricbench started the ranks (``profile --launcher``)."""
    provenance = profile_provenance(profile)
    if launch:
        provenance = {**launch, **provenance}
    return store.save_run(
        profile_measurements(profile),
        kind="profile",
        label=label,
        tags=tags,
        command=command,
        provenance=provenance,
        ranks=profile["ranks"],
        artifacts={"profile": profile},
    )
