"""A figure across runs over time (``analysis.history.History``): one line per set of key
parameters, the median with its 95% CI as error bars, runs called worse than the first in red."""
from __future__ import annotations

import datetime as _dt
from typing import Optional

from matplotlib import rc_context
from matplotlib.figure import Figure

from fabricbench.report.plots import _RC, run_color, safe_label, save_figure


def _when(created: str) -> Optional[_dt.datetime]:
    try:
        return _dt.datetime.fromisoformat(created)
    except (TypeError, ValueError):
        return None


def history_plot(hist, title: str, fmt: str = "svg") -> bytes:
    """The history as an image (SVG or PNG bytes)."""
    with rc_context(_RC):
        fig = Figure(figsize=(9.0, 4.0))
        ax = fig.add_axes((0.09, 0.16, 0.62, 0.74))
        for i, line in enumerate(hist.lines):
            rows = [r for r in hist.rows if r.line == line and r.value is not None and _when(r.run.created)]
            if not rows:
                continue
            xs = [_when(r.run.created) for r in rows]
            ys = [r.value for r in rows]
            lo = [r.value - r.ci[0] if r.ci else 0.0 for r in rows]
            hi = [r.ci[1] - r.value if r.ci else 0.0 for r in rows]
            color = run_color(i)
            ax.errorbar(xs, ys, yerr=[lo, hi], color=color, marker="o", markersize=4, linewidth=1.2, capsize=3,
                        label=safe_label(line or hist.benchmark, 40))
            worse = [(x, y) for x, y, r in zip(xs, ys, rows) if r.vs_first is not None and r.vs_first.verdict == "worse"]
            if worse:
                wx, wy = zip(*worse)
                ax.plot(wx, wy, "x", color="#d62728", markersize=9, markeredgewidth=2,
                        label="worse than the first run" if i == 0 else None)
        ax.set_title(safe_label(title))
        ax.set_xlabel("run date (UTC)")
        ax.set_ylabel(f"{hist.metric} ({hist.unit}), median and 95% CI")
        ax.grid(True, alpha=0.3)
        fig.autofmt_xdate()
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)
        return save_figure(fig, fmt)
