"""Every plot kind in a real browser: a report per kind, each plot screenshotted on its own and
checked not to be blank. With FABRICBENCH_SHOTS=DIR the screenshots are kept there to be looked at."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_browser import _pixels, browser  # noqa: F401 - the module's headless Chromium fixture
from test_report import make_demo_store
from test_report_plots import near_equal_profile

DATA = Path(__file__).parent / "data"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    from fabricbench.importers import import_file, store_parsed
    from fabricbench.importers.fbprofile import store_profile
    from fabricbench.importers.scaling_csv import import_scaling_csv
    from fabricbench.cli.report import report_of
    from fabricbench.report import write_report

    d = tmp_path_factory.mktemp("plot-kinds")
    store, edr, fdr, imported = make_demo_store(d / "demo.db")
    profile = store_profile(store, near_equal_profile(), label="near-equal matrix")
    health = store_parsed(store, import_file(str(DATA / "import" / "mpigraph_6nodes.txt")))
    scaling = import_scaling_csv(store, str(DATA / "scaling" / "seed004_lsdyna.csv"))
    kinds = {"comparison": [edr.id, fdr.id, imported.id], "profile": [profile.id], "health": [health.id],
             "scaling": [r.id for r in scaling]}
    return {k: write_report(report_of(store, ids), d / f"{k}.html") for k, ids in kinds.items()}


EXPECTED = {
    "comparison": ["latency-latency-comparison", "bw-bandwidth-comparison", "allreduce-latency-comparison", "barrier-latency",
                   "hpcc-summary-better"],
    "profile": ["-matrix", "-time", "-sizes"],
    "health": ["bandwidth-heatmap", "bandwidth-histogram"],
    "scaling": ["scaling-value", "scaling-speedup", "scaling-efficiency", "scaling-relative"],
}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_every_plot_kind_renders(browser, reports, kind):
    keep = os.environ.get("FABRICBENCH_SHOTS")
    browser.open(reports[kind].as_uri())
    assert browser.problems() == []
    imgs = browser.evaluate("""Array.from(document.images).map(i => { const r = i.getBoundingClientRect();
        return {slug: i.dataset.slug, x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}; })""")
    slugs = [i["slug"] for i in imgs]
    for want in EXPECTED[kind]:
        assert any(want in s for s in slugs), (want, slugs)
    for img in imgs:
        png = browser.screenshot(img["x"], img["y"], img["w"], img["h"])
        std, ink = _pixels(png)
        assert std > 0.05 and ink > 0.01, f"plot {img['slug']} looks blank (std {std:.3f}, ink {ink:.3f})"
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / f"{kind}-{img['slug']}.png").write_bytes(png)
