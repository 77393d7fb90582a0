"""The HPC Challenge driver: size the problem, write hpccinf.txt, run the real ``hpcc``
through a launcher, import its hpccoutf.txt and store the run (kind ``hpcc``).

    result = run_hpcc(store, np=2, n=500)      # small problem for a 2-core machine
    result.hpl_gflops, result.percent_of_peak

``config`` owns problem size, process grid and the input file; ``peak`` the CPU's
theoretical peak; ``driver`` running HPCC and storing what it measured. The seven
tests side by side are ``fabricbench.analysis.hpcc``.
"""
from fabricbench.hpcc.config import HpccPlan, plan, process_grid, problem_size, render_hpccinf
from fabricbench.hpcc.driver import HpccError, HpccResult, run_hpcc
from fabricbench.hpcc.peak import CpuPeak, detect_peak, flops_per_cycle

__all__ = [
    "run_hpcc", "HpccResult", "HpccError", "HpccPlan", "plan", "process_grid", "problem_size", "render_hpccinf",
    "CpuPeak", "detect_peak", "flops_per_cycle",
]
