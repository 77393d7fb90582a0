"""Findings -> words for link ceilings (analysis.peaks): what bounds a run's bandwidth. Used by
the report's bandwidth section. Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

from fabricbench.analysis.peaks import Ceiling
from fabricbench.numbers import fixed, grouped


def ceiling_note(c: Ceiling) -> str:
    """'PCIe Gen3 x8 (7,877 MB/s) on ib0 is the ceiling, not InfiniBand EDR 4x (12,500 MB/s)', or the
    one link that bounds it with its rate per direction ('' when nothing does)."""
    if c.by == "pcie" and c.fabric is not None and c.pcie is not None:
        return (f"{c.pcie.name} ({grouped(c.pcie.data_rate_MBps)} MB/s) on {c.pcie.nic or 'the NIC'} is the ceiling, "
                f"not {c.fabric.name} ({grouped(c.fabric.data_rate_MBps)} MB/s)")
    if c.fabric is not None:
        return f"{c.fabric.name}: {grouped(c.fabric.data_rate_MBps)} MB/s per direction"
    if c.pcie is not None:
        return f"{c.pcie.name}: {grouped(c.pcie.data_rate_MBps)} MB/s per direction"
    return ""


def over_peak_note(shaped: bool, percent: float) -> str:
    """Why a figure can exceed 100% of its peak (`shaped`: the peak is a lab link's shaped rate): said
    next to any such figure."""
    if shaped:
        return (f"{fixed(percent, 1)}% of the shaped rate: the token bucket passes a burst at full speed before it "
                "shapes, so short measurements can exceed the rate")
    return (f"{fixed(percent, 1)}% of the peak: more than the link can carry, so part of the traffic did not cross it "
            "(ranks sharing a host) or the fabric named for this run is not the one it used (check --tag fabric=)")
