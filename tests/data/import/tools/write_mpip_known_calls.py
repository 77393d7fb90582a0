"""Writes mpip_known_calls_4ranks.mpiP: the report mpiP 3.5 would write for
tests/data/profiler/known_calls.c on 4 ranks (mpiP cannot be installed on the development
machine). The call sites, counts and bytes follow known_calls.c line by line; the times are
those of a real fabricbench profile of the same program (split evenly where one profile
entry covers several call sites). Every line is laid out with the format of the matching
printf in mpiP's report.c (verbose report, default options: %g figures, COV column, stack
depth 1, single collector task).

    mpirun -np 4 known_calls under fabricbench's profiler -> profile.json
    python tests/data/import/tools/write_mpip_known_calls.py profile.json tests/data/import/mpip_known_calls_4ranks.mpiP
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict

RANKS = range(4)
EVERY = {r: 1 for r in RANKS}
# (site id, source line, MPI call, {rank: calls}, bytes of one call in the sent / RMA tables)
SITES = [
    (1, 11, "Comm_rank", EVERY, None), (2, 12, "Comm_size", EVERY, None),
    (3, 24, "Send", {0: 5}, ("sent", 800)), (4, 26, "Recv", {1: 5}, None),
    (5, 33, "Irecv", {r: 3 for r in RANKS}, None), (6, 35, "Isend", {r: 3 for r in RANKS}, ("sent", 64)),
    (7, 36, "Waitall", EVERY, None), (8, 40, "Sendrecv", EVERY, ("sent", 256)),
    (9, 46, "Comm_split", EVERY, None), (10, 48, "Comm_rank", EVERY, None),
    (11, 50, "Ssend", {0: 1, 1: 1}, ("sent", 4)), (12, 52, "Recv", {2: 1, 3: 1}, None),
    (13, 55, "Alltoall", {r: 2 for r in RANKS}, ("sent", 8192)), (14, 56, "Comm_free", EVERY, None),
    (15, 59, "Bcast", EVERY, ("sent", 8)), (16, 61, "Allreduce", EVERY, ("sent", 4)),
    (17, 68, "Send_init", {2: 1}, None), (18, 70, "Recv_init", {3: 1}, None),
    (19, 72, "Start", {2: 4, 3: 4}, None), (20, 73, "Wait", {2: 4, 3: 4}, None),
    (21, 75, "Request_free", {2: 1, 3: 1}, None), (22, 81, "Win_create", EVERY, None),
    (23, 82, "Win_fence", EVERY, None), (24, 83, "Put", EVERY, ("rma", 16)),
    (25, 84, "Win_fence", EVERY, None), (26, 85, "Get", EVERY, ("rma", 8)),
    (27, 86, "Win_fence", EVERY, None), (28, 87, "Win_free", EVERY, None),
    (29, 98, "Barrier", EVERY, None), (30, 101, "Send", EVERY, ("sent", 8)),
]
LOCAL_CALL_US = 0.3  # Comm_rank/Comm_size are not in fabricbench's profile: a local call's time


def heading(title: str) -> str:
    line = "-" * 75
    text = f"@--- {title} "
    return f"{line}\n{text}{'-' * max(0, 75 - len(text))}\n{line}\n"


def intro(name: str, value: str) -> str:
    return f"{'@':<2}{name:<25}: {value}\n"


def site_times(profile):
    """{(site, rank): (count, total us, min us, max us)} from the profile's [rank, call, bin] entries."""
    entries = defaultdict(list)
    for rank, call, _bin, count, _nbytes, t, tmin, tmax in profile["calls"]:
        entries[(rank, call)].append((count, t * 1e6, tmin * 1e6, tmax * 1e6))
    out = {}
    for site, _line, call, per_rank, _b in SITES:
        for rank, count in per_rank.items():
            have = entries.get((rank, "MPI_" + call), [])
            total_count = sum(e[0] for e in have)
            if not have:
                out[(site, rank)] = (count, count * LOCAL_CALL_US, LOCAL_CALL_US * 0.8, LOCAL_CALL_US * 1.4)
                continue
            # the calls of this rank at this site, out of all its calls of this MPI function
            share = count / total_count
            total = sum(e[1] for e in have) * share
            out[(site, rank)] = (count, total, min(e[2] for e in have), max(e[3] for e in have))
    return out


def main(profile_path: str, out_path: str) -> None:
    profile = json.load(open(profile_path))
    times = site_times(profile)
    app = {r["rank"]: r["app_time"] for r in profile["rank_info"]}
    mpi_us = defaultdict(float)
    for (site, rank), (_c, total, _lo, _hi) in times.items():
        mpi_us[rank] += total
    global_app = sum(app.values())
    global_mpi = sum(mpi_us.values())
    name_of = {site: call for site, _l, call, _p, _b in SITES}
    out = ["@ mpiP\n", "@ Command : ./known_calls \n"]
    out += [intro("Version", "3.5.0"), intro("MPIP Build date", "Jan 10 2024, 10:12:01"),
            intro("Start time", "2024 05 02 14:31:07"), intro("Stop time", "2024 05 02 14:31:08"),
            intro("Timer Used", "PMPI_Wtime"), intro("MPIP env var", "[null]"), intro("Collector Rank", "0"),
            intro("Collector PID", "27685"), intro("Final Output Dir", "."),
            intro("Report generation", "Single collector task")]
    out += [intro("MPI Task Assignment", f"{r} vm") for r in RANKS]
    out.append("\n")
    out.append(heading("MPI Time (seconds)"))
    out.append(f"{'Task':<4} {'AppTime':>10} {'MPITime':>10}    {'MPI%':>5}\n")
    for r in RANKS:
        out.append(f"{r:4d} {app[r]:10.3g} {mpi_us[r] / 1e6:10.3g}    {100.0 * mpi_us[r] / 1e6 / app[r]:5.2f}\n")
    out.append(f"   * {global_app:10.3g} {global_mpi / 1e6:10.3g}    {100.0 * global_mpi / 1e6 / global_app:5.2f}\n")

    out.append(heading(f"Callsites: {len(SITES)}"))
    out.append(f"{'ID':>3} {'Lev':>3} {'File/Address':<18} {'Line':>5} {'Parent_Funct':<24} MPI_Call\n")
    for site, line, call, _p, _b in SITES:
        out.append(f"{site:3d} {0:3d} {'known_calls.c':<18} {line:5d} {'main':<24} {call}\n")

    agg = []
    for site, _l, call, per_rank, _b in SITES:
        per = [times[(site, r)][1] for r in sorted(per_rank)]
        agg.append((sum(per), call, site, sum(per_rank.values()), per))
    agg.sort(key=lambda a: -a[0])
    out.append(heading("Aggregate Time (top twenty, descending, milliseconds)"))
    out.append(f"{'Call':<20} {'Site':>4} {'Time  ':>12}{'App%':>6}  {'MPI%':>6}     {'Count':>6} {'COV':>6}\n")
    for total, call, site, count, per in agg[:20]:
        cov = statistics.stdev(per) / statistics.fmean(per) if len(per) > 1 else 0.0
        out.append(f"{call:<20} {site:4d} {total / 1000.0:10.3g}  {100.0 * total / (global_app * 1e6):6.2f}  "
                   f"{100.0 * total / global_mpi:6.2f} {count:10d} {cov:6.2f}\n")

    def volume(kind):
        rows = []
        for site, _l, call, per_rank, b in SITES:
            if b and b[0] == kind:
                rows.append((sum(per_rank.values()) * b[1], call, site, sum(per_rank.values())))
        return sorted(rows, key=lambda r: -r[0])

    sent, rma = volume("sent"), volume("rma")
    total_sent, total_rma = sum(r[0] for r in sent), sum(r[0] for r in rma)
    out.append(heading("Aggregate Sent Message Size (top twenty, descending, bytes)"))
    out.append(f"{'Call':<20} {'Site':>4} {'Count':>10} {'Total':>10} {'Avrg':>10} {'Sent%':>6}\n")
    for total, call, site, count in sent[:20]:
        out.append(f"{call:<20} {site:4d} {count:10d} {total:10.3g} {total / count:10.3g} {total * 100 / total_sent:6.2f}\n")
    out.append(heading("Aggregate RMA Origin Size (top twenty, descending, bytes)"))
    out.append(f"{'Call':<20} {'Site':>4} {'Count':>10} {'Total':>10} {'Avrg':>10} {'I/O%':>6}\n")
    for total, call, site, count in rma[:20]:
        out.append(f"{call:<20} {site:4d} {count:10d} {total:10.3g} {total / count:10.3g} {total * 100 / total_rma:6.2f}\n")

    # per site and rank, sorted by MPI function name, site, rank (mpiP's callsite_sort_by_name_id_rank)
    keyed = sorted(times.items(), key=lambda kv: ("MPI_" + name_of[kv[0][0]], kv[0][0], kv[0][1]))
    out.append(heading(f"Callsite Time statistics (all, milliseconds): {len(keyed)}"))
    out.append(f"{'Name':<17} {'Site':>4} {'Rank':>4} {'Count':>6} {'Max':>8} {'Mean':>8} {'Min':>8} {'App%':>6} {'MPI%':>6}\n")
    group = []

    def summary(site, rows):
        count = sum(r[0] for r in rows)
        total = sum(r[1] for r in rows)
        return (f"{name_of[site]:<17} {site:4d} {'*':>4} {count:6d} {max(r[3] for r in rows) / 1000.0:8.3g} "
                f"{total / (count * 1000.0):8.3g} {min(r[2] for r in rows) / 1000.0:8.3g} "
                f"{100.0 * total / (global_app * 1e6):6.2f} {100.0 * total / global_mpi:6.2f}\n")

    for i, ((site, rank), (count, total, lo, hi)) in enumerate(keyed):
        if i and site != keyed[i - 1][0][0]:
            out.append(summary(keyed[i - 1][0][0], group))
            out.append("\n")
            group = []
        group.append((count, total, lo, hi))
        out.append(f"{name_of[site]:<17} {site:4d} {rank:4d} {count:6d} {hi / 1000.0:8.3g} {total / (count * 1000.0):8.3g} "
                   f"{lo / 1000.0:8.3g} {100.0 * total / (app[rank] * 1e6):6.2f} {100.0 * total / mpi_us[rank]:6.2f}\n")
    out.append(summary(keyed[-1][0][0], group))

    def bytes_table(title, kind):
        out.append(heading(title))
        out.append(f"{'Name':<17} {'Site':>4} {'Rank':>4} {'Count':>7} {'Max':>9} {'Mean':>9} {'Min':>9} {'Sum':>9}\n")
        rows = [(site, rank, count, b[1]) for (site, rank), (count, *_t) in keyed
                for s, _l, _c, _p, b in SITES if s == site and b and b[0] == kind]
        last, acc = 0, []
        for site, rank, count, size in rows:
            if acc and site != last:
                out.append(bytes_summary(last, acc))
                acc = []
            if last and last != site:
                out.append("\n")
            acc.append((count, size))
            out.append(f"{name_of[site]:<17} {site:4d} {rank:4d} {count:7d} {size:9.4g} {size:9.4g} {size:9.4g} "
                       f"{count * size:9.4g}\n")
            last = site
        if acc:
            out.append(bytes_summary(last, acc))

    def bytes_summary(site, acc):
        count = sum(a[0] for a in acc)
        total = sum(a[0] * a[1] for a in acc)
        return (f"{name_of[site]:<17} {site:4d} {'*':>4} {count:7d} {max(a[1] for a in acc):9.4g} {total / count:9.4g} "
                f"{min(a[1] for a in acc):9.4g} {total:9.4g}\n")

    bytes_table("Callsite Message Sent statistics (all, sent bytes)", "sent")
    bytes_table("Callsite RMA statistics (all, origin bytes)", "rma")
    out.append(heading("End of Report"))
    with open(out_path, "w") as fh:
        fh.write("".join(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
