"""Stored runs of the same configuration as the runs compared: where `compare`, `check` and the
report take the run-to-run noise's history from (``analysis.compare``'s ``history``).

A store query of the loaded run (``RunData.replicates``), so that the CLI and the report compare
with the same runs; "the same configuration" is ``analysis.comparability.is_replicate``'s
judgement, applied to the stored candidates. It reads through the store the runs were loaded from
(no connection of its own).
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

HISTORY_RUNS = 10  # the most recent stored replicate runs a side takes its run-to-run noise from


def replicates(store: Any, ref: Any, compared: Sequence[Any], limit: int = HISTORY_RUNS) -> List[Any]:
    """Stored complete runs of `ref`'s configuration (a loaded run: ``.run`` and ``.hosts``), as
    RunData, oldest first: the `limit` most recent that started before the latest of the `compared`
    runs, none of the compared runs among them."""
    from fabricbench.analysis.comparability import is_replicate

    runs = [rd.run for rd in compared]
    exclude = {r.id for r in runs}
    later = max((r.created, r.id) for r in runs)  # ids break ties: `created` has whole seconds
    found = []
    hosts: Dict[int, Any] = {}
    for r in reversed(store.list_runs(status="complete")):
        if r.id in exclude or (r.created, r.id) >= later or r.kind != ref.run.kind or r.tags != ref.run.tags:
            continue
        hosts[r.id] = store.hosts(r.id)
        if is_replicate(ref.run, ref.hosts, r, hosts[r.id]):
            found.append(r)
            if len(found) >= limit:
                break
    from fabricbench.store.records import RunData

    measured = store.measurements_by_run([r.id for r in found]) if found else {}
    return [RunData(r, measured[r.id], hosts[r.id], name=r.name, store=store) for r in reversed(found)]


def replicate_history(side_a: Sequence[Any], side_b: Sequence[Any],
                      limit: int = HISTORY_RUNS) -> Tuple[List[Any], List[Any]]:
    """Stored replicate runs of A's and of B's configuration (of each side's first run), neither
    side's runs among them (see ``replicates``). A side is a list of loaded runs (``RunData``)."""
    compared = list(side_a) + list(side_b)
    return side_a[0].replicates(compared, limit), side_b[0].replicates(compared, limit)
