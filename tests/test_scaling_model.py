"""The scaling model: candidates chosen by leave-one-out cross-validation recover known laws."""
import math
from fractions import Fraction

import numpy as np
import pytest

from fabricbench.models.scaling import (
    ModelError,
    ScalingModel,
    Term,
    candidate_terms,
    fit_scaling_model,
)
from fabricbench.report.words.models import format_model, scaling_model_json

SCALES = [1, 2, 4, 8, 16, 32, 64]


def fit_law(law, scales=SCALES):
    return fit_scaling_model([(p, law(p)) for p in scales])


def test_amdahl_like_law_recovers_p_to_the_minus_one():
    m = fit_law(lambda p: 10 + 100 / p)
    assert m.term == Term(Fraction(-1), 0)
    assert m.c0 == pytest.approx(10) and m.c1 == pytest.approx(100)
    assert m.cv_smape == pytest.approx(0, abs=1e-6) and m.adj_r2 == pytest.approx(1)
    assert format_model(m) == "t(p) = 10 + 100 * p^(-1)"


def test_logarithmic_law_recovers_log2():
    m = fit_law(lambda p: 5 + 2 * math.log2(p))
    assert (m.term.i, m.term.j) == (0, 1)
    assert m.c0 == pytest.approx(5) and m.c1 == pytest.approx(2)
    assert format_model(m) == "t(p) = 5 + 2 * log2(p)"


@pytest.mark.parametrize(
    "i, j",
    [(Fraction(1, 2), 0), (Fraction(-1, 2), 0), (Fraction(1), 1), (Fraction(1, 3), 2), (Fraction(2), 0), (Fraction(-2, 3), 1)],
)
def test_every_kind_of_term_is_recovered(i, j):
    term = Term(i, j)
    m = fit_law(lambda p: 3 + 0.5 * term.evaluate(p))
    assert m.term == term
    assert m.c0 == pytest.approx(3, rel=1e-6) and m.c1 == pytest.approx(0.5, rel=1e-6)


def test_flat_data_gives_the_constant_model():
    m = fit_law(lambda p: 7.0)
    assert m.term is None and m.c0 == pytest.approx(7) and m.c1 == 0
    assert format_model(m) == "t(p) = 7"


def test_noisy_repetitions_still_find_the_law():
    rng = np.random.default_rng(7)
    pts = [(p, (10 + 100 / p) * (1 + 0.01 * rng.standard_normal())) for p in SCALES for _ in range(3)]
    m = fit_scaling_model(pts)
    assert m.term == Term(Fraction(-1), 0)
    assert m.c1 == pytest.approx(100, rel=0.05)
    assert m.n_points == 21 and len(m.scales) == 7
    assert 0 < m.cv_smape < 5 and m.adj_r2 > 0.99


def test_a_model_predicts_and_survives_a_round_trip():
    m = fit_law(lambda p: 10 + 100 / p)
    assert m.predict(128) == pytest.approx(10 + 100 / 128)
    assert list(m.predict([1, 2])) == pytest.approx([110, 60])
    again = ScalingModel.from_dict(m.to_dict())
    assert again.term == m.term and again.predict(1000) == pytest.approx(m.predict(1000))
    assert "leave-one-out SMAPE" in format_model(m, errors=True)
    assert scaling_model_json(m)["formula"] == "t(p) = 10 + 100 * p^(-1)"


def test_negative_coefficient_and_other_names_print_plainly():
    m = fit_scaling_model([(p, 50 - 3 * math.log2(p)) for p in SCALES], metric="fom", variable="n")
    assert format_model(m) == "fom(n) = 50 - 3 * log2(n)"


def test_too_few_scales_or_bad_scales_are_refused():
    with pytest.raises(ModelError, match="at least 3"):
        fit_scaling_model([(8, 10732), (16, 14273), (16, 14000)])
    with pytest.raises(ModelError, match="positive"):
        fit_scaling_model([(0, 1), (1, 2), (2, 3)])


def test_candidate_grid_matches_extra_p_style_hypotheses():
    terms = candidate_terms()
    assert terms[0] is None
    assert len(terms) == 1 + 11 * 3 - 1  # constant + every (i, j) but p^0 log^0
    assert Term(Fraction(3, 2), 2).format() == "p^(3/2) * log2(p)^2"
    assert Term(Fraction(1), 0).format() == "p" and Term(Fraction(2), 0).format() == "p^2"
