"""Application scaling studies: running them (``study``) and importing published ones (``importer``).

    from fabricbench.scaling.study import StudySpec, plan_points, run_study
    from fabricbench.scaling.importer import read_scaling_csv, import_scaling_csv

The analysis lives in ``fabricbench.analysis.scaling``, the model in
``fabricbench.models.scaling``, the report section in ``fabricbench.report.sections.scaling``.
"""
