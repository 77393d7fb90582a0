"""Pure planning: which launches, which sizes, which inputs, and how long a step may stay silent.

Nothing here starts a process or writes to the store; ``workflows/`` carries the plans out.
``suite`` (the benchmark table and suites) is the first step of every plan; here are the rest:
``repeats`` (the order of repeated launches), ``suite_time`` (what fits a run's time),
``watchdog`` (the silence a step is allowed), ``hpcc_input`` (HPL's problem size, grid and
hpccinf.txt) and ``fabric_topology`` (the simulated fabric's fat tree as an ibsim net file).
"""
