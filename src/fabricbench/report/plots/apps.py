"""The application study's chart (seed 000's "relative performance" graph), from ``analysis.apps``.

``relative_chart(studies)``: one group of bars per node count, one bar per application (and
compared fabric), the height B's performance relative to the reference fabric A (A = 1.0,
drawn as a line); each bar carries its value. Returns SVG or PNG bytes, or None when nothing
was compared.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from matplotlib import rc_context
from matplotlib.figure import Figure

from fabricbench.numbers import exact, fixed
from fabricbench.report.plots import grouped_bars, safe_label, save_figure

_RC = {"svg.hashsalt": "fabricbench", "svg.fonttype": "none", "font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8}


def relative_chart(studies: Sequence, fmt: str = "svg") -> Optional[bytes]:
    bars = [(st, fabric) for st in studies for fabric in st.fabrics[1:]]
    scales: List[float] = sorted({r.nodes for st, fab in bars for r in st.rows if r.relative.get(fab) is not None})
    if not scales:
        return None
    references = sorted({st.reference for st in studies})
    with rc_context(_RC):
        fig = Figure(figsize=(7.2, 4.0), layout="constrained")
        ax = fig.add_subplot()
        groups = [(f"{st.app}: {fabric} vs {st.reference}" if len(references) > 1 or len(st.fabrics) > 2 else st.app,
                   {r.nodes: r.relative.get(fabric) for r in st.rows}) for st, fabric in bars]
        top = max([1.0] + grouped_bars(ax, scales, groups, fixed, label_chars=40))
        ax.axhline(1.0, color="#333333", linewidth=0.9, label=safe_label(f"reference: {', '.join(references)}", 40))
        ax.set_ylim(0, top * 1.15)
        ax.set_xticklabels([exact(s) for s in scales])
        ax.set_xlabel("nodes")
        others = sorted({fab for _st, fab in bars})
        ax.set_ylabel(f"relative performance ({', '.join(references)} = 1.0)")
        ax.set_title(f"Performance on {', '.join(others)} relative to {', '.join(references)}")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="best")
        return save_figure(fig, fmt)
