"""MPI profiles: run a program under libfabricbench-prof, read the JSON profile it writes,
and say what it shows (share of time in MPI, dominant calls and message sizes, imbalance,
top talkers). Plots for reports are in fabricbench.profile.plots.
"""
from fabricbench.profile.data import (
    ProfileError,
    bin_range,
    call_rows,
    format_bytes,
    load_profile,
    matrix_cells,
    matrix_dense,
    validate_profile,
)
from fabricbench.profile.run import ProfiledRun, explain_failure, prepare_command, run_profiled
from fabricbench.profile.summary import format_summary, summarize

__all__ = [
    "ProfileError",
    "ProfiledRun",
    "bin_range",
    "call_rows",
    "explain_failure",
    "format_bytes",
    "format_summary",
    "load_profile",
    "matrix_cells",
    "matrix_dense",
    "prepare_command",
    "run_profiled",
    "summarize",
    "validate_profile",
]
