"""Findings -> words for what could confound a comparison (``analysis.comparability``): a fact's
value as it reads ('12 GiB', '1.5 (uneven)', 'Gen3 x16 (15,754 MB/s) on mlx5_0'), the cautions
(a run that started on a busy host) and the comparability as JSON. Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from fabricbench.analysis.comparability import Comparability, Difference, Quantity, Several
from fabricbench.numbers import fixed, grouped, short


def busy_text(busy: Any) -> str:
    """'load 9.8 on 2 CPUs' (``comparability.BusyHost``)."""
    return f"load {short(busy.load)} on {busy.cpus} CPUs"


def fact_text(v: Any) -> Optional[str]:
    """A fact's value as text (None stays None: not recorded)."""
    if isinstance(v, Several):
        return ", ".join(fact_text(x) or "" for x in v)
    if isinstance(v, Quantity):
        if v.kind == "memory_gib":
            return f"{fixed(v.value, v.decimals)} GiB"
        if v.kind == "ppn_uneven":
            return f"{fixed(v.value, v.decimals)} (uneven)"
        if v.kind == "pcie":
            name, nic = v.detail
            return f"{name} ({grouped(v.value)} MB/s) on {nic}"
        raise ValueError(f"unknown fact quantity '{v.kind}'")
    return v


def cautions(c: Comparability) -> List[str]:
    """Not a difference of configuration, but a reason to doubt the comparison."""
    busy = [f"{side} ({busy_text(b)})" for side, b in c.busy]
    if not busy:
        return []
    return [f"run {' and run '.join(busy)} started on a busy host: other work shared its cores, so "
            "its timings can differ for reasons that are not the fabric; repeat on an idle host, or "
            "compare against several runs (a baseline) so that run-to-run noise is measured"]


def difference_dict(d: Difference) -> Dict[str, Any]:
    return {"key": d.key, "label": d.label, "a": fact_text(d.a), "b": fact_text(d.b), "why": d.why}


def comparability_dict(c: Comparability) -> Dict[str, Any]:
    """The comparability of two runs as JSON (``compare --json``)."""
    return {
        "comparable": c.comparable,
        "differences": [difference_dict(d) for d in c.differences],
        "not_recorded": c.not_recorded,
        "cautions": cautions(c),
    }
