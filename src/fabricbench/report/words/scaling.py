"""Findings -> words for application scaling (analysis.scaling): why a threshold has no
predicted scale, and a baseline that is not a measured scale. Used by the report's scaling
section and by `fabricbench scaling-report` (its text and its JSON). Numbers by
``fabricbench.numbers`` (scales as written: 16, 0.5).
"""
from __future__ import annotations

from typing import Any, Dict

from fabricbench.analysis.scaling import NotAMeasuredScale, ScalingSeries, StudyAnalysis, Threshold
from fabricbench.numbers import exact, share


def threshold_note(t: Threshold, series: ScalingSeries) -> str:
    """Why the model gives no scale below the threshold ('' when it gives one)."""
    if t.unknown == "no baseline":
        return "no baseline value"
    if t.unknown == "no model":
        return "no model to extrapolate"
    if t.unknown == "no positive value":
        return f"the model predicts no positive {series.metric} beyond {exact(t.limit)} {series.axis}"
    if t.unknown == "stays above":
        return f"the model stays above {share(t.threshold)} up to {exact(t.limit)} {series.axis}"
    return ""


def error_text(exc: Exception) -> str:
    """The message of a ScalingAnalysisError, with the scales a baseline could have been."""
    if isinstance(exc, NotAMeasuredScale):
        s = exc.series
        return (f"baseline {exact(exc.baseline)} {s.axis} is not a measured scale of {s.name} "
                f"(scales: {', '.join(exact(v) for v in s.scales)})")
    return str(exc)


def study_dict(analysis: StudyAnalysis) -> Dict[str, Any]:
    """analysis.to_dict() with each threshold's note in words (the JSON of scaling-report)."""
    data = analysis.to_dict()
    for sa, out in zip(analysis.series, data["series"]):
        out["threshold"]["note"] = threshold_note(sa.threshold, sa.series)
    return data
