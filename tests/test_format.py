"""The one number formatter (fabricbench.numbers): the rules every output shares."""
from __future__ import annotations

import math

import pytest

from fabricbench import numbers as f


@pytest.mark.parametrize("value, text", [
    (0, "0"), (0.0, "0"), (1048576, "1,048,576"), (168000.0, "168,000"), (30000.0, "30,000.0"),
    (11013.42, "11,013.4"), (123.456, "123.5"), (42.174, "42.17"), (2.0, "2.00"), (0.38, "0.380"),
    (0.1049, "0.105"), (0.0876555, "0.0877"), (0.00215, "0.00215"), (2.15e-5, "2.15e-5"), (-3.5, "-3.50"),
    (None, "-"), (math.nan, "-"), (math.inf, "-"),
])
def test_number_rules(value, text):
    assert f.number(value) == text


def test_signed_percent_ratio_and_fixed():
    assert f.signed(0.13) == "+0.130" and f.signed(-1204.5) == "-1,204.5" and f.signed(0.0) == "0"
    assert f.percent(40.52) == "40.5%" and f.percent(-104.08, signed=True) == "-104.1%"
    assert f.percent(50, decimals=0) == "50%"
    assert f.ratio(3.8) == "3.80x" and f.ratio(18856.3) == "18,856x" and f.fixed(0.3789) == "0.38"


def test_an_improvement_past_ten_times_is_a_factor_not_a_huge_percentage():
    # A latency 18,856 times the baseline's: (A - B) / A = -1885529.3% - a factor reads better.
    assert f.improvement_pct(-1885529.3) == "18,856x worse"
    assert f.improvement_pct(-2182464.0) == "21,826x worse"
    assert f.improvement_pct(1200.0) == "13.00x better"
    assert f.improvement_pct(-104.08) == "-104.1%" and f.improvement_pct(68.0) == "+68.0%"
    assert f.improvement_pct(None) == "-"


def test_sizes_constants_and_machine_cells():
    assert f.size(65536) == "65,536" and f.binary_size(16384) == "16 KiB" and f.binary_size(1.5 * 2**20) == "1.5 MiB"
    assert f.size_tick(0.5) == "0" and f.size_tick(65536) == "64K" and f.size_tick(2**20) == "1M"
    assert f.exact(14.0625) == "14.0625" and f.exact(25.78125) == "25.78125" and f.exact(12500.0) == "12500"
    assert f.exact(0.13333333333333333) == "0.133333" and f.exact(0.5) == "0.5"
    assert f.machine(0.1) == "0.1" and f.machine(None) == "" and f.machine(3) == "3" and f.machine(True) == "true"
    assert f.duration(65) == "1m05s" and f.duration(7380) == "2h03m" and f.duration(42) == "42s"


def test_axis_labels_fractions_only_on_base_two_axes():
    assert f.axis_value(0.015625, fractions=True) == "1/64"
    assert f.axis_value(0.00390625, fractions=True) == "1/256"
    assert f.axis_value(0.5) == "0.5" and f.axis_value(0.3, fractions=True) == "0.3"
    assert f.axis_value(12000) == "12k" and f.axis_value(3.5e6) == "3.5M" and f.axis_value(2) == "2"


def test_distinct_labels_tell_close_ticks_apart():
    ticks = [1.22256e8, 1.222565e8, 1.22257e8]
    labels = f.distinct_labels(ticks)
    assert len(set(labels)) == 3, labels
    assert f.distinct_labels([0.0, 0.5, 1.0]) == ["0", "0.500", "1.00"]
