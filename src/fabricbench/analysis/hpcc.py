"""HPCC's seven tests side by side: which figure heads each test, which way is better,
and how much better each run is than the first.

HPCC runs (imported hpccoutf.txt files or ``fabricbench hpcc`` runs) hold one
measurement of benchmark ``hpcc`` per summary value, ``params["test"]`` being the HPCC
summary key and the value in the project's units (HPL in Gflop/s, bandwidths in MB/s).
``SEVEN_TESTS`` names each test's headline figure (the seed study's charts: HPL,
DGEMM, STREAM Triad, PTRANS, MPI RandomAccess, MPI FFT, and the b_eff
latency/bandwidth tests) and its companions; ``hpcc_table`` lines several runs up.

"% better" compares each run with the first (the baseline): for higher-is-better
figures it is the gain, (value / base - 1) x 100 ("EDR outperforms FDR by 68% in
PTRANS"); for latencies it is the reduction, (1 - value / base) x 100 ("ring latency is
reduced by 51%"). Positive always means better than the baseline.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from fabricbench.analysis.direction import higher_is_better as _higher, improvement


@dataclass(frozen=True)
class HpccFigure:
    key: str  # the HPCC summary key, params["test"] of the measurement
    display: str
    metric: str
    unit: str  # after import
    higher_is_better: bool


@dataclass(frozen=True)
class HpccTest:
    name: str
    title: str
    headline: HpccFigure
    also: Tuple[HpccFigure, ...] = ()
    what: str = ""

    @property
    def figures(self) -> Tuple[HpccFigure, ...]:
        return (self.headline,) + self.also


def _f(key: str, display: str, metric: str, unit: str) -> HpccFigure:
    return HpccFigure(key, display, metric, unit, _higher(metric))


SEVEN_TESTS: Tuple[HpccTest, ...] = (
    HpccTest("HPL", "HPL (Linpack TPP)", _f("HPL_Tflops", "HPL", "flops", "Gflop/s"),
             what="floating-point rate solving a dense linear system"),
    HpccTest("DGEMM", "DGEMM", _f("StarDGEMM_Gflops", "Star DGEMM", "flops", "Gflop/s"),
             (_f("SingleDGEMM_Gflops", "Single DGEMM", "flops", "Gflop/s"),),
             what="double-precision matrix-matrix multiply on every process"),
    HpccTest("STREAM", "STREAM", _f("StarSTREAM_Triad", "Star STREAM Triad", "bandwidth", "MB/s"),
             (_f("SingleSTREAM_Triad", "Single STREAM Triad", "bandwidth", "MB/s"),),
             what="sustainable memory bandwidth"),
    HpccTest("PTRANS", "PTRANS", _f("PTRANS_GBs", "PTRANS", "bandwidth", "MB/s"),
             what="parallel matrix transpose: pairs exchanging at once, the network's total capacity"),
    HpccTest("RandomAccess", "RandomAccess", _f("MPIRandomAccess_GUPs", "MPI RandomAccess", "update_rate", "GUP/s"),
             (_f("MPIRandomAccess_LCG_GUPs", "MPI RandomAccess LCG", "update_rate", "GUP/s"),),
             what="random updates of a distributed table (GUPS)"),
    HpccTest("FFT", "FFT", _f("MPIFFT_Gflops", "MPI FFT", "flops", "Gflop/s"),
             (_f("StarFFT_Gflops", "Star FFT", "flops", "Gflop/s"),),
             what="distributed double-complex 1-D discrete Fourier transform"),
    HpccTest("b_eff", "Communication bandwidth and latency (b_eff)",
             _f("RandomlyOrderedRingBandwidth_GBytes", "Random ring bandwidth", "bandwidth", "MB/s"),
             (_f("RandomlyOrderedRingLatency_usec", "Random ring latency", "latency", "us"),
              _f("NaturallyOrderedRingBandwidth_GBytes", "Natural ring bandwidth", "bandwidth", "MB/s"),
              _f("NaturallyOrderedRingLatency_usec", "Natural ring latency", "latency", "us"),
              _f("MinPingPongBandwidth_GBytes", "Min ping-pong bandwidth", "bandwidth", "MB/s"),
              _f("AvgPingPongBandwidth_GBytes", "Avg ping-pong bandwidth", "bandwidth", "MB/s"),
              _f("MaxPingPongLatency_usec", "Max ping-pong latency", "latency", "us"),
              _f("AvgPingPongLatency_usec", "Avg ping-pong latency", "latency", "us")),
             what="latency and bandwidth of simultaneous ping-pongs and natural/random rings"),
)

FIGURES: Dict[str, HpccFigure] = {f.key: f for t in SEVEN_TESTS for f in t.figures}
HEADLINE_KEYS: Tuple[str, ...] = tuple(t.headline.key for t in SEVEN_TESTS)


def better_pct(base: Optional[float], value: Optional[float], higher_is_better: bool) -> Optional[float]:
    """How much better ``value`` is than ``base``, in percent (negative: worse); the rule is
    ``analysis.direction.improvement``'s."""
    frac = improvement(base, value, "bandwidth" if higher_is_better else "latency")
    return None if frac is None else frac * 100.0


def _field(m: Any, name: str) -> Any:
    return m.get(name) if isinstance(m, Mapping) else getattr(m, name, None)


def hpcc_values(measurements: Iterable[Any]) -> Dict[str, float]:
    """{HPCC summary key: value} from one run's measurements (benchmark ``hpcc``)."""
    values: Dict[str, float] = {}
    for m in measurements:
        if _field(m, "benchmark") != "hpcc":
            continue
        params = _field(m, "params") or {}
        key = params.get("test")
        value = _field(m, "value")
        if key and value is not None:
            values[key] = float(value)
    return values


RunsMeasurements = Union[Mapping[str, Iterable[Any]], Sequence[Tuple[str, Iterable[Any]]], Sequence[Iterable[Any]]]


def _normalise(runs_measurements: RunsMeasurements) -> List[Tuple[str, Dict[str, float]]]:
    if isinstance(runs_measurements, Mapping):
        items = list(runs_measurements.items())
    else:
        items = []
        for i, item in enumerate(runs_measurements):
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                items.append(item)
            else:
                items.append((f"run {i + 1}", item))
    return [(str(name), hpcc_values(ms)) for name, ms in items]


def hpcc_table(runs_measurements: RunsMeasurements, companions: bool = True) -> List[Dict[str, Any]]:
    """One row per figure (the seven headline figures, then each test's companions when
    ``companions``), each with every run's value and its % better than the first run.

    ``runs_measurements`` is {run name: measurements}, or [(name, measurements), ...], or
    [measurements, ...]; measurements are ``Measurement`` objects or dicts. Rows:
    ``{"test", "title", "key", "display", "metric", "unit", "higher_is_better",
    "headline", "runs", "values", "better_pct", "best"}``; ``values`` and ``better_pct``
    follow ``runs`` (None where a run lacks the figure; better_pct[0] is None); ``best``
    is the index of the best run or None. Figures no run has are left out.
    """
    runs = _normalise(runs_measurements)
    names = [name for name, _ in runs]
    rows: List[Dict[str, Any]] = []
    for test in SEVEN_TESTS:
        figures = test.figures if companions else (test.headline,)
        for fig in figures:
            values = [vals.get(fig.key) for _, vals in runs]
            if all(v is None for v in values):
                continue
            base = values[0] if values else None
            pct = [None] + [better_pct(base, v, fig.higher_is_better) for v in values[1:]]
            present = [(v, i) for i, v in enumerate(values) if v is not None]
            best = (max(present) if fig.higher_is_better else min(present))[1] if present else None
            rows.append({
                "test": test.name, "title": test.title, "key": fig.key, "display": fig.display,
                "metric": fig.metric, "unit": fig.unit, "higher_is_better": fig.higher_is_better,
                "headline": fig is test.headline, "runs": names, "values": values, "better_pct": pct, "best": best,
            })
    return rows


def percent_of_peak(gflops: Optional[float], peak_gflops: Optional[float]) -> Optional[float]:
    if gflops is None or not peak_gflops:
        return None
    return gflops / peak_gflops * 100.0


_KINDS_OF = (("Star", "star"), ("Single", "single"), ("MPI", "MPI"))
_STEMS = (("PingPongBandwidth", "ping-pong bandwidth"), ("PingPongLatency", "ping-pong latency"),
          ("OrderedRingBandwidth", "ring bandwidth"), ("OrderedRingLatency", "ring latency"))


def figure_name(key: str) -> str:
    """A summary key as a reader names it: 'MinPingPongBandwidth_GBytes' -> 'ping-pong bandwidth, min',
    'RandomlyOrderedRingBandwidth_GBytes' -> 'ring bandwidth, random order', 'StarSTREAM_Triad' ->
    'STREAM Triad, star', 'MPIRandomAccess_LCG_GUPs' -> 'RandomAccess LCG, MPI'; unknown keys as they are."""
    stem = key.split("_")[0]
    for head, words in _STEMS:
        if stem.endswith(head):
            which = stem[: -len(head)]
            if which in ("Min", "Max", "Avg"):
                return f"{words}, {'average' if which == 'Avg' else which.lower()}"
            if which in ("Naturally", "Randomly"):
                return f"{words}, {'natural' if which == 'Naturally' else 'random'} order"
    if key == "HPL_Tflops":
        return "HPL"
    if key == "PTRANS_GBs":
        return "PTRANS"
    for prefix, word in _KINDS_OF:
        if key.startswith(prefix):
            rest = key[len(prefix):]
            if rest.startswith("STREAM_"):
                return f"STREAM {rest[len('STREAM_'):]}, {word}"
            test = rest.rsplit("_", 1)[0].replace("_", " ") if "_" in rest else rest
            return f"{test}, {word}"
    return key
