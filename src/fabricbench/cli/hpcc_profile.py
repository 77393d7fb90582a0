"""The MPI profile of a profiled hpcc run, per HPCC test: printed after `hpcc --profile`,
by `show-profile --phases` and by `compare` of two such runs."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from rich.table import Table
from rich.text import Text

from fabricbench.cli.app import console

LEAD_NOTE = ("leading data call: the data-moving MPI call that moved the most bytes in the test ('-': the "
             "test moved no data through MPI); most MPI time: the call of any kind with the most")


def test_phases(store, run_id, top: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """hpcc_phases of a run that has a profile and section marks (every call of each test,
    or its ``top`` calls); None otherwise."""
    from fabricbench.analysis.hpcc_sections import ALL_CALLS, hpcc_phases

    sections = store.artifact(run_id, "hpcc_sections")
    data = store.artifact(run_id, "profile") if sections is not None else None
    if data is None:
        return None
    return hpcc_phases(data, sections, top=top or ALL_CALLS)


def profile_json(store, run_id) -> Optional[Dict[str, Any]]:
    from fabricbench.analysis.hpcc_sections import leading_calls

    result = test_phases(store, run_id)
    if result is None:
        return None
    from fabricbench.report.words.profile import json_words

    return json_words({"method": result["method"], "unnamed": result.get("unnamed"), "tests": leading_calls(result),
                       "phases": result["phases"]})


def _share(v: Optional[float]) -> str:
    from fabricbench.numbers import percent_share as _pct

    return "-" if v is None else _pct(v)


def _what(call: Optional[Dict[str, Any]], size: bool = True) -> str:
    """'488 KiB MPI_Sendrecv' when the call had one message size, else the call alone (the
    range is in show-profile --phases): a table cell that fits 80 columns."""
    from fabricbench.report.words.profile import phase_sizes

    if call is None:
        return "-"
    sizes = phase_sizes(call)
    if not size or not sizes or call.get("size_range"):
        return call["call"]
    return f"{sizes} {call['call']}"


def lead_table(result: Dict[str, Any]) -> Table:
    from fabricbench.analysis.hpcc_sections import leading_calls

    table = Table(title="MPI profile per HPCC test", title_justify="left")
    for name, just in (("test", "left"), ("leading data call", "left"), ("of MPI", "right"),
                       ("most MPI time", "left"), ("of MPI", "right"), ("in MPI", "right")):
        table.add_column(name, justify=just)
    for test, data in leading_calls(result).items():
        lead, most = data["lead_call"], data["most"]
        table.add_row(test, _what(lead), _share(lead["percent_mpi"] if lead else None),
                      "same" if most is lead and lead else _what(most, size=False),
                      _share(most["percent_mpi"] if most and most is not lead else None), _share(data["percent_mpi"]))
    return table


def print_test_leads(store, run_id) -> None:
    result = test_phases(store, run_id)
    if result is None:
        console.print(f"run {run_id} has no profile per HPCC test (run hpcc with --profile)", highlight=False)
        return
    if result.get("unnamed"):
        console.print(f"HPCC's tests cannot be named in this profile: {result['unnamed']}", highlight=False)
        return
    console.print(lead_table(result))
    console.print(Text(f"{LEAD_NOTE}. of MPI: share of the test's MPI time; in MPI: share of the test's "
                       f"runtime in MPI. Each test's calls: fabricbench show-profile {run_id} --phases"))


def compare_json(store, run_a, run_b) -> Optional[List[Dict[str, Any]]]:
    from fabricbench.analysis.hpcc_sections import compare_leads, leading_calls

    a, b = test_phases(store, run_a), test_phases(store, run_b)
    if a is None or b is None or a.get("unnamed") or b.get("unnamed"):
        return None
    from fabricbench.report.words.profile import json_words, phase_sizes

    rows = compare_leads(leading_calls(a), leading_calls(b))
    for row in rows:
        for side in (row["a"], row["b"]):
            if side is not None:
                side["sizes"] = phase_sizes(side["lead_call"]) if side["lead_call"] else None
    return json_words(rows)


def print_compare(store, run_a, run_b) -> None:
    """Per HPCC test, the leading call of A and B side by side (one line per test)."""
    rows = compare_json(store, run_a, run_b)
    if rows is None:
        return
    table = Table(title=f"MPI profile per HPCC test: run {run_a} (A) and run {run_b} (B)", title_justify="left")
    for name, just in (("test", "left"), ("A leading call", "left"), ("of MPI", "right"),
                       ("B leading call", "left"), ("of MPI", "right")):
        table.add_column(name, justify=just)

    def cell(side):
        if side is None:
            return "not run", "-"
        return _what(side["lead_call"]), _share(side["percent_of_mpi"])

    for row in rows:
        la, pa = cell(row["a"])
        lb, pb = cell(row["b"])
        table.add_row(row["test"], la, pa, lb, pb)
    console.print(table)
    console.print("leading call: each test's data-moving MPI call that moved the most bytes; of MPI: its share "
                  "of the test's MPI time. Each test's calls: fabricbench show-profile RUN --phases", highlight=False)
