"""The classic calibration tests of clinical risk models: Hosmer-Lemeshow and Spiegelhalter.

Every expected number below is computed by hand or by an independent
re-implementation written here from the papers (Hosmer & Lemeshow 1980, with the
groups of ResourceSelection::hoslem.test; Spiegelhalter 1986, as rms::val.prob's
S:z), never by the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2, norm

from calipers.clinical import (
    HosmerLemeshowTest,
    SpiegelhalterTest,
    hosmer_lemeshow_test,
    spiegelhalter_z_test,
)
from calipers.validation import CalibrationInputError

P10 = [0.1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
Y10 = [0, 0, 0, 1, 0, 1, 1, 0, 1, 1]


def test_hosmer_lemeshow_by_hand():
    # breaks quantile(p, 0:5/5) (type 7): 0.1, 0.18, 0.36, 0.54, 0.72, 0.9; groups
    # {0.1, 0.1}, {0.2, 0.3}, {0.4, 0.5}, {0.6, 0.7}, {0.8, 0.9}
    t = hosmer_lemeshow_test(P10, Y10, n_groups=5)
    assert isinstance(t, HosmerLemeshowTest)
    np.testing.assert_allclose(t.breaks, [0.1, 0.18, 0.36, 0.54, 0.72, 0.9])
    assert t.group_sizes.tolist() == [2, 2, 2, 2, 2]
    assert t.observed_events.tolist() == [0, 1, 1, 1, 2]
    np.testing.assert_allclose(t.expected_events, [0.2, 0.5, 0.9, 1.3, 1.7])
    np.testing.assert_allclose(t.mean_risk, [0.1, 0.25, 0.45, 0.65, 0.85])
    # (O1 - E1)^2 / E1 + (O0 - E0)^2 / E0, group by group
    by_hand = (
        (0.2**2 / 0.2 + 0.2**2 / 1.8)
        + (0.5**2 / 0.5 + 0.5**2 / 1.5)
        + (0.1**2 / 0.9 + 0.1**2 / 1.1)
        + (0.3**2 / 1.3 + 0.3**2 / 0.7)
        + (0.3**2 / 1.7 + 0.3**2 / 0.3)
    )
    assert t.statistic == pytest.approx(by_hand, rel=1e-12)
    assert t.statistic == pytest.approx(1.4598342833637, rel=1e-12)
    assert (t.df, t.n_groups) == (3, 5)
    # chi-square with 3 df in closed form: sf(x) = erfc(sqrt(x/2)) + sqrt(2x/pi) e^(-x/2)
    x = by_hand
    sf3 = math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2)
    assert t.p_value == pytest.approx(sf3, rel=1e-10)


def _hoslem_reference(p, y, g):
    """ResourceSelection::hoslem.test, rewritten from its documented steps."""
    p = np.asarray(p, float)
    y = np.asarray(y, float)
    qq = np.unique(np.quantile(p, np.linspace(0, 1, g + 1), method="linear"))
    # cut(..., include.lowest = TRUE): interval k holds qq[k-1] < p <= qq[k]
    lab = np.digitize(p, qq, right=True)
    lab[lab == 0] = 1
    stat, sizes = 0.0, []
    for k in range(1, len(qq)):
        sel = lab == k
        if not sel.any():
            continue
        n_k, o1, e1 = sel.sum(), y[sel].sum(), p[sel].sum()
        stat += (o1 - e1) ** 2 / e1 + ((n_k - o1) - (n_k - e1)) ** 2 / (n_k - e1)
        sizes.append(n_k)
    return stat, sizes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hosmer_lemeshow_matches_an_independent_implementation(seed):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 5, 500)
    y = rng.binomial(1, np.clip(p * 1.2, 0, 1))
    stat, sizes = _hoslem_reference(p, y, 10)
    t = hosmer_lemeshow_test(p, y)
    assert t.statistic == pytest.approx(stat, rel=1e-10)
    assert t.group_sizes.tolist() == sizes
    assert t.df == 8
    assert t.p_value == pytest.approx(chi2.sf(stat, 8), rel=1e-10)


def test_hosmer_lemeshow_ties_merge_groups_and_lower_df():
    # 40 rows at risk 0.1, 40 at 0.3, 20 spread: deciles repeat, groups merge
    rng = np.random.default_rng(3)
    p = np.r_[np.full(40, 0.1), np.full(40, 0.3), np.linspace(0.4, 0.9, 20)]
    y = rng.binomial(1, p)
    stat, sizes = _hoslem_reference(p, y, 10)
    t = hosmer_lemeshow_test(p, y)
    assert t.n_groups == len(sizes) < 10
    assert t.df == len(sizes) - 2
    assert t.group_sizes.tolist() == sizes
    assert t.statistic == pytest.approx(stat, rel=1e-10)
    # tied risks never straddle two groups
    assert t.group_sizes[0] == 40 and t.group_sizes[1] == 40


def test_hosmer_lemeshow_too_few_distinct_risks_gives_nan_p():
    t = hosmer_lemeshow_test([0.2] * 5 + [0.6] * 5, [0, 0, 1, 0, 0, 1, 1, 0, 1, 1])
    # breaks 0.2, 0.4 (between the 5th and 6th order statistics), 0.6: two groups
    np.testing.assert_allclose(t.breaks, [0.2, 0.4, 0.6])
    assert t.n_groups == 2 and t.df == 0 and math.isnan(t.p_value)
    assert t.group_sizes.tolist() == [5, 5]


def test_hosmer_lemeshow_weights_count_rows():
    rng = np.random.default_rng(4)
    p = rng.uniform(0.05, 0.95, 200)
    y = rng.binomial(1, p)
    plain = hosmer_lemeshow_test(p, y)
    double = hosmer_lemeshow_test(p, y, sample_weight=np.full(200, 2.0))
    assert double.statistic == pytest.approx(2 * plain.statistic, rel=1e-12)
    np.testing.assert_allclose(double.group_sizes, 2 * plain.group_sizes)


def test_hosmer_lemeshow_takes_both_columns_and_class_names():
    p = np.asarray(P10)
    a = hosmer_lemeshow_test(np.c_[1 - p, p], Y10, n_groups=5)
    b = hosmer_lemeshow_test(
        p, ["no" if v == 0 else "yes" for v in Y10], n_groups=5, classes=["no", "yes"]
    )
    assert a.statistic == b.statistic == hosmer_lemeshow_test(p, Y10, n_groups=5).statistic


@pytest.mark.parametrize("bad", [2, 0, 2.5, True, "10"])
def test_hosmer_lemeshow_refuses_bad_n_groups(bad):
    with pytest.raises(CalibrationInputError, match="n_groups"):
        hosmer_lemeshow_test(P10, Y10, n_groups=bad)


def test_spiegelhalter_by_hand():
    # sum (y - p)(1 - 2p) = -0.12 + 0.48 - 0.12 - 0.12 = 0.12
    # sum (1 - 2p)^2 p (1 - p) = 4 * 0.36 * 0.16 = 0.2304, sqrt = 0.48
    t = spiegelhalter_z_test([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1])
    assert isinstance(t, SpiegelhalterTest)
    assert t.z == pytest.approx(0.25, rel=1e-12)
    assert t.statistic == t.z
    assert t.p_value == pytest.approx(math.erfc(0.25 / math.sqrt(2)), rel=1e-12)


def test_spiegelhalter_matches_the_formula_row_by_row():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.01, 0.99, 300)
    y = rng.binomial(1, p**0.8)
    num = sum((yi - pi) * (1 - 2 * pi) for pi, yi in zip(p, y, strict=True))
    var = sum((1 - 2 * pi) ** 2 * pi * (1 - pi) for pi in p)
    z = num / math.sqrt(var)
    t = spiegelhalter_z_test(p, y)
    assert t.z == pytest.approx(z, rel=1e-10)
    assert t.p_value == pytest.approx(2 * norm.sf(abs(z)), rel=1e-10)


def test_spiegelhalter_weights_are_repeated_rows():
    p = np.array([0.1, 0.35, 0.7, 0.9])
    y = np.array([0, 1, 0, 1])
    w = np.array([3, 1, 2, 4])
    a = spiegelhalter_z_test(p, y, sample_weight=w)
    b = spiegelhalter_z_test(np.repeat(p, w), np.repeat(y, w))
    assert a.z == pytest.approx(b.z, rel=1e-12)


def test_spiegelhalter_without_variance_is_nan():
    t = spiegelhalter_z_test([0.5, 0.5, 0.5], [0, 1, 1])
    assert math.isnan(t.z) and math.isnan(t.p_value)


def test_detects_miscalibration_and_accepts_calibration():
    rng = np.random.default_rng(6)
    p = rng.uniform(0.05, 0.95, 5000)
    good = rng.binomial(1, p)
    bad = rng.binomial(1, np.clip(0.5 + 1.6 * (p - 0.5), 0, 1))  # risks too moderate
    assert hosmer_lemeshow_test(p, bad).p_value < 1e-6
    assert spiegelhalter_z_test(p, bad).p_value < 1e-6
    assert hosmer_lemeshow_test(p, good).p_value > 0.001
    assert spiegelhalter_z_test(p, good).p_value > 0.001


def test_to_dict_is_json_ready():
    import json

    json.dumps(hosmer_lemeshow_test(P10, Y10, n_groups=5).to_dict())
    json.dumps(spiegelhalter_z_test(P10, Y10).to_dict())
