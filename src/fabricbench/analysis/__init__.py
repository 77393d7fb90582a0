"""Analysis: statistics, comparison, peak catalog, provenance checks (no printing, no processes).

Modules (import them directly; this package imports nothing on purpose so that each
engineer's module stays independent):

- ``direction``      which way is better for a metric (lower for latency/time) - the one rule
- ``series``         measurements grouped into curves (one benchmark/metric/params over size)
- ``peaks``          the fabric catalog (data/fabrics.toml), fabric detection, % of peak, PCIe ceiling
- ``stats``          medians and their CIs from sample sketches, ratio tests, Holm/BH corrections
- ``matching``       which points of two runs are the same measurement, and why the others are not
- ``compare``        two runs point by point: medians, B/A with its CI, corrected verdicts, summaries
- ``history``        one figure across runs over time
- ``lint``           the scientific-benchmarking rules (Hoefler and Belli, SC15) a result set breaks
- ``comparability``  provenance facts of a run and the differences that confound a comparison
- ``hpcc``           HPCC's seven tests side by side (``hpcc_table``)
- ``scaling``        scaling studies: speedup, efficiency, confidence intervals
"""
