"""Findings -> words: the sentences and lines a user reads for what analysis/ and models/ return.

analysis/ and models/ return numbers and structured findings; the text is written here, once,
and used by both the terminal (cli/) and the report (report/sections/). One module per kind
of finding: ``models`` (a fabric's model, a prediction and its check), ``profile`` (an MPI
profile's summary, call sites and phases), ``fabric`` (a fabric check's evidence), ``scaling``
(thresholds, a baseline off the scales), ``transfer`` (a failed copy), ``peaks`` (a link ceiling),
``compare`` (a comparison's verdicts, summaries and
notes), ``direction`` (better or worse, by how much), ``host`` (the host probe and load),
``comparability`` (facts and cautions), ``health`` (link-health evidence and verdict), ``lint``
(the rules of scientific benchmarking). Every number in them is written by
``fabricbench.numbers``. Import the submodule you need (they pull in their analysis modules).
"""
