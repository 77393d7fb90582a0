"""Analysis: statistics, comparison, peak catalog, provenance checks (no printing, no processes).

Modules (import them directly; this package imports nothing on purpose so that each
engineer's module stays independent):

- ``direction``      which way is better for a metric (lower for latency/time) - the one rule
- ``series``         measurements grouped into curves (one benchmark/metric/params over size)
- ``peaks``          the fabric catalog (data/fabrics.toml), fabric detection, % of peak, PCIe ceiling
- ``compare``        two runs point by point: ratio, absolute difference, significance
- ``comparability``  provenance facts of a run and the differences that confound a comparison
- ``hpcc``           HPCC's seven tests side by side (``hpcc_table``)
- ``scaling``        scaling studies: speedup, efficiency, confidence intervals
"""
