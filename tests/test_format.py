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


def test_named_styles_keep_what_each_output_printed():
    """The formatters folded into fabricbench.numbers print what they printed where they were."""
    assert f.factor(1.2345) == "1.23" and f.factor(1234.5) == "1,234" and f.factor(0.0042) == "0.0042"
    assert f.difference(1204.4) == "+1,204" and f.difference(1.5) == "+1.50" and f.difference(-0.00421) == "-0.00421"
    assert f.interval((0.91, 1.123)) == "0.91-1.12" and f.interval((0.00001, 1500)) == "0->999" and f.interval(None) == ""
    assert f.fraction_pct(0.029) == "2.9%" and f.fraction_pct(0.12) == "12%" and f.fraction_pct(22.0) == "2,200%"
    assert f.percent_share(74.2) == "74%" and f.percent_share(3.71) == "3.7%" and f.percent_share(0.01) == "<0.1%"
    assert f.share(0.9) == "90%" and f.short(0.5) == "0.5" and f.short(16.0) == "16" and f.short(3.14159, 4) == "3.142"
    assert f.short(float("inf")) == "inf" and f.grouped(12500.4) == "12,500" and f.padded(7) == "07"
    assert f.gib(12 * 2**30) == "12 GiB" and f.gib(1.5 * 2**30) == "1.5 GiB" and f.gib(0) is None
    assert f.exact_binary_size(4 * 2**20) == "4 MiB" and f.exact_binary_size(1000) == "1000 B"
    assert f.sentence_size(0) == "0-byte" and f.sentence_size(16384) == "16 KiB"
    assert f.count(2**60 + 1) == "1,152,921,504,606,846,977" and f.scientific(12345678) == "1.235e+07"


def test_the_table_of_formats_names_every_style():
    assert f.render("share", 0.25) == "25%" and f.render("size:tick", 65536) == "64K"
    assert f.render("fixed", 2.5, 3) == "2.500"
    with pytest.raises(ValueError, match="unknown number style 'nope'"):
        f.render("nope", 1)
