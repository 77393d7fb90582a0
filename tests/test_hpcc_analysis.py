"""The seven HPCC tests side by side, with "% better" in each figure's direction."""
from __future__ import annotations

from pathlib import Path

import pytest

from fabricbench.analysis.hpcc import FIGURES, HEADLINE_KEYS, SEVEN_TESTS, better_pct, hpcc_table, hpcc_values
from fabricbench.importers import import_file, store_parsed
from fabricbench.importers.hpcc import FIGURES as IMPORTED
from fabricbench.store import open_db
from fabricbench.store.records import Measurement

DATA = Path(__file__).parent / "data" / "import"


def hpcc(key, value):
    return Measurement(benchmark="hpcc", params={"test": key}, metric=FIGURES[key].metric, unit=FIGURES[key].unit,
                       value=value)


def test_seven_tests_and_their_figures_match_the_importer():
    assert [t.name for t in SEVEN_TESTS] == ["HPL", "DGEMM", "STREAM", "PTRANS", "RandomAccess", "FFT", "b_eff"]
    assert HEADLINE_KEYS == ("HPL_Tflops", "StarDGEMM_Gflops", "StarSTREAM_Triad", "PTRANS_GBs",
                             "MPIRandomAccess_GUPs", "MPIFFT_Gflops", "RandomlyOrderedRingBandwidth_GBytes")
    for key, fig in FIGURES.items():
        metric, unit, _factor, _conv = IMPORTED[key]
        assert (fig.metric, fig.unit) == (metric, unit), key
        assert fig.higher_is_better == (metric != "latency")


def test_better_pct_direction():
    assert better_pct(100.0, 168.0, True) == pytest.approx(68.0)   # PTRANS: EDR 68% better than FDR
    assert better_pct(2.0, 0.98, False) == pytest.approx(51.0)     # ring latency reduced by 51%
    assert better_pct(2.0, 3.0, False) == pytest.approx(-50.0)     # worse is negative
    assert better_pct(0.0, 1.0, True) is None and better_pct(None, 1.0, True) is None


def test_table_lines_runs_up_with_baseline_first():
    fdr = [hpcc("HPL_Tflops", 30000.0), hpcc("PTRANS_GBs", 10000.0), hpcc("RandomlyOrderedRingLatency_usec", 2.0),
           hpcc("MPIFFT_Gflops", 100.0), hpcc("RandomlyOrderedRingBandwidth_GBytes", 500.0)]
    edr = [hpcc("HPL_Tflops", 30600.0), hpcc("PTRANS_GBs", 16800.0), hpcc("RandomlyOrderedRingLatency_usec", 0.98),
           {"benchmark": "hpcc", "params": {"test": "MPIFFT_Gflops"}, "value": 180.0},
           hpcc("RandomlyOrderedRingBandwidth_GBytes", 600.0),
           Measurement(benchmark="latency", params={"size": 8}, metric="latency", unit="us", value=1.0)]
    rows = hpcc_table({"FDR": fdr, "EDR": edr})
    by = {r["key"]: r for r in rows}
    assert set(by) == {"HPL_Tflops", "PTRANS_GBs", "RandomlyOrderedRingLatency_usec", "MPIFFT_Gflops",
                       "RandomlyOrderedRingBandwidth_GBytes"}
    assert by["PTRANS_GBs"]["runs"] == ["FDR", "EDR"]
    assert by["PTRANS_GBs"]["better_pct"] == [None, pytest.approx(68.0)]
    assert by["MPIFFT_Gflops"]["better_pct"][1] == pytest.approx(80.0)
    lat = by["RandomlyOrderedRingLatency_usec"]
    assert (lat["higher_is_better"], lat["headline"], lat["best"]) == (False, False, 1)
    assert lat["better_pct"][1] == pytest.approx(51.0)
    assert [r["key"] for r in rows if r["headline"]] == ["HPL_Tflops", "PTRANS_GBs", "MPIFFT_Gflops",
                                                         "RandomlyOrderedRingBandwidth_GBytes"]
    headline_only = hpcc_table([("FDR", fdr), ("EDR", edr)], companions=False)
    assert all(r["headline"] for r in headline_only)
    assert hpcc_table([fdr])[0]["runs"] == ["run 1"]


def test_table_from_stored_imported_runs(tmp_path):
    store = open_db(str(tmp_path / "r.db"))
    run = store_parsed(store, import_file(str(DATA / "hpccoutf_2ranks.txt")), tags={"fabric": "shm"})
    ms = store.measurements(run.id)
    values = hpcc_values(ms)
    assert set(HEADLINE_KEYS) <= set(values)
    slower = [Measurement(benchmark=m.benchmark, params=m.params, metric=m.metric, unit=m.unit, value=m.value * 0.5)
              for m in ms]
    rows = hpcc_table([(run.name, ms), ("half", slower)], companions=False)
    assert len(rows) == 7
    assert all(r["better_pct"][1] == pytest.approx(-50.0) for r in rows)
    store.close()
