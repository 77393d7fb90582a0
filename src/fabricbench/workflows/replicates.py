"""Stored runs of the same configuration as the runs compared: where `compare`, `check` and the
report take the run-to-run noise's history from (``analysis.compare``'s ``history``).

A store lookup shared by the CLI and the report, so that both compare with the same runs:
``analysis/`` stays a pure function of what it is given, ``cli/`` only parses and prints. The
lookup reads through the store the caller already has open (no connection of its own).
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

HISTORY_RUNS = 10  # the most recent stored replicate runs a side takes its run-to-run noise from


def replicate_history(store: Any, side_a: Sequence[Any], side_b: Sequence[Any],
                      limit: int = HISTORY_RUNS) -> Tuple[List[Any], List[Any]]:
    """Stored replicate runs of A's and of B's configuration (``comparability.is_replicate`` of each
    side's first run), as RunData: the `limit` most recent per side that started before the later of
    the compared runs, none of the compared runs among them. A side is a list of loaded runs
    (``RunData`` or anything with ``.run`` and ``.hosts``, as the report's ``LoadedRun``)."""
    from fabricbench.analysis.comparability import is_replicate
    from fabricbench.store import RunData

    compared = [rd.run for rd in list(side_a) + list(side_b)]
    exclude = {r.id for r in compared}
    later = max((r.created, r.id) for r in compared)  # ids break ties: `created` has whole seconds
    candidates = [r for r in reversed(store.list_runs(status="complete"))
                  if r.id not in exclude and (r.created, r.id) < later]
    hosts: Dict[int, Any] = {}
    chosen = []
    for side in (side_a, side_b):
        ref = side[0]
        found = []
        for r in candidates:
            if r.kind != ref.run.kind or r.tags != ref.run.tags:
                continue
            if r.id not in hosts:
                hosts[r.id] = store.hosts(r.id)
            if is_replicate(ref.run, ref.hosts, r, hosts[r.id]):
                found.append(r)
                if len(found) >= limit:
                    break
        chosen.append(found)
    measured = store.measurements_by_run([r.id for runs in chosen for r in runs])
    return tuple([RunData(r, measured[r.id], hosts[r.id]) for r in reversed(runs)] for runs in chosen)
