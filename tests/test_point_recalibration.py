"""IsotonicPointRecalibration, and conformalized quantile regression on predictive distributions.

* IsotonicPointRecalibration fits the isotonic T-reliability curve: by hand
  (PAV in the mean, the median of pooled blocks), on the calibration rows equal
  to :func:`calipers.regression.isotonic_recalibration`, for the mean equal to
  scikit-learn's ``IsotonicRegression(out_of_bounds="clip")`` on new forecasts
  (1e-12), for quantiles equal to model-diagnostics' ``IsotonicRegression``;
  auto-calibration lowers the score in sample for every functional and on
  held-out rows of a miscalibrated model; contract (files, clone, tensors).
* ConformalizedQuantileRegression on a QuantileSet gives the intervals of the
  pair of columns at the level (exactly, though ``(1 - 0.9) / 2`` is not 0.05
  in float64), and on a Gaussian those of its quantiles.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from scipy.special import ndtri

import calipers
from calipers.recalibration import NotFittedError
from calipers.recalibration.regression import (
    ConformalizedQuantileRegression,
    IsotonicPointRecalibration,
)
from calipers.regression import Gaussian, QuantileSet, isotonic_recalibration
from calipers.validation import CalibrationInputError

# ----------------------------------------------------------------------------- isotonic


def test_isotonic_mean_by_hand() -> None:
    # targets 3, 1, 2, 6 at forecasts 1..4: PAV pools 3 and 1 -> 2, then 2 with 2 -> 2
    rc = IsotonicPointRecalibration().fit([4.0, 1.0, 3.0, 2.0], [6.0, 3.0, 2.0, 1.0])
    assert rc.knots_.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert rc.values_.tolist() == [2.0, 2.0, 2.0, 6.0]
    assert rc.predict([0.0, 3.25, 3.5, 10.0]).tolist() == [2.0, 3.0, 4.0, 6.0]


def test_isotonic_median_by_hand() -> None:
    # decreasing targets: one block; its median (the midpoint of the lower and upper
    # medians of 1, 2, 3, 10 is 2.5)
    rc = IsotonicPointRecalibration(functional="median").fit(
        [1.0, 2.0, 3.0, 4.0], [10.0, 3.0, 2.0, 1.0]
    )
    assert rc.values_.tolist() == [2.5, 2.5, 2.5, 2.5]


@pytest.mark.parametrize(
    ("functional", "level"),
    [("mean", None), ("median", None), ("quantile", 0.1), ("quantile", 0.8), ("expectile", 0.3)],
)
def test_in_sample_equals_isotonic_recalibration(functional: str, level: float | None) -> None:
    rng = np.random.default_rng(1)
    z = np.round(rng.uniform(0, 3, 300), 1)  # ties among the forecasts
    y = z**2 + rng.standard_normal(300)
    w = rng.uniform(0, 2, 300)
    rc = IsotonicPointRecalibration(functional, level).fit(z, y, sample_weight=w)
    ref = isotonic_recalibration(z, y, functional=functional, level=level, sample_weight=w)
    np.testing.assert_array_equal(rc.predict(z), ref)
    assert np.all(np.diff(rc.values_) >= 0)


def test_mean_equals_scikit_learn_on_new_forecasts() -> None:
    isotonic = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(2)
    z, y = rng.uniform(0, 1, 500), rng.uniform(0, 1, 500)
    y = y + z
    w = rng.uniform(0.1, 3, 500)
    new = rng.uniform(-0.2, 1.2, 200)
    ours = IsotonicPointRecalibration().fit(z, y, sample_weight=w).predict(new)
    sk = isotonic.IsotonicRegression(out_of_bounds="clip").fit(z, y, sample_weight=w)
    np.testing.assert_allclose(ours, sk.predict(new), rtol=0, atol=1e-12)


@pytest.mark.parametrize("level", [0.2, 0.5, 0.9])
def test_quantile_equals_model_diagnostics(level: float) -> None:
    isotonic = pytest.importorskip("model_diagnostics._utils.isotonic")
    rng = np.random.default_rng(3)
    z = rng.uniform(0, 2, 400)
    y = z + rng.standard_normal(400)
    ours = IsotonicPointRecalibration("quantile", level).fit(z, y)
    md = isotonic.IsotonicRegression(functional="quantile", level=level).fit(z, y)
    new = np.sort(rng.uniform(0, 2, 100))
    np.testing.assert_allclose(ours.predict(z), md.predict(z), atol=1e-12)
    np.testing.assert_allclose(ours.predict(new), md.predict(new), atol=1e-12)


def _score(functional: str, level: float | None, z: np.ndarray, y: np.ndarray) -> float:
    """Mean consistent score, written out here: squared error, pinball, expectile score."""
    if functional == "mean":
        return float(np.mean((z - y) ** 2))
    a = 0.5 if level is None else level
    if functional in ("median", "quantile"):
        return float(np.mean(((y < z) - a) * (z - y)))
    return float(np.mean(np.abs((y < z) - a) * (z - y) ** 2))


@pytest.mark.parametrize(
    ("functional", "level"),
    [("mean", None), ("median", None), ("quantile", 0.9), ("expectile", 0.7)],
)
def test_auto_calibration_never_scores_worse(functional: str, level: float | None) -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 4000)
    y = 3 * x + (0.2 + x) * rng.standard_normal(4000)
    z = 2 * x - 0.5  # miscalibrated for every functional
    cal, test = slice(0, 2000), slice(2000, None)
    rc = IsotonicPointRecalibration(functional, level).fit(z[cal], y[cal])
    # in sample: never worse (the isotonic fit minimises every consistent score)
    assert _score(functional, level, rc.predict(z[cal]), y[cal]) <= _score(
        functional, level, z[cal], y[cal]
    )
    # held out: a clearly lower score
    before = _score(functional, level, z[test], y[test])
    after = _score(functional, level, rc.predict(z[test]), y[test])
    assert after < 0.7 * before


def test_isotonic_contract(tmp_path: Any) -> None:
    rng = np.random.default_rng(5)
    z, y = rng.uniform(0, 1, 100), rng.uniform(0, 1, 100)
    rc = IsotonicPointRecalibration("quantile", 0.25).fit(z, y)
    assert repr(rc) == "IsotonicPointRecalibration(functional='quantile', level=0.25)"
    back = calipers.load_recalibrator(rc.to_json())
    assert isinstance(back, IsotonicPointRecalibration)
    np.testing.assert_array_equal(back.predict(z), rc.predict(z))
    rc.save(tmp_path / "iso.json")
    np.testing.assert_array_equal(
        IsotonicPointRecalibration.load(tmp_path / "iso.json").values_, rc.values_
    )
    doc = json.loads(rc.to_json())
    doc["state"]["values_"]["ndarray"][0] = 99.0
    with pytest.raises(CalibrationInputError, match="field 'values_' must be non-decreasing"):
        calipers.load_recalibrator(json.dumps(doc))
    doc = json.loads(rc.to_json())
    doc["params"]["level"] = None
    with pytest.raises(
        CalibrationInputError,
        match="'level' must be a number in \\(0, 1\\) for functional 'quantile'",
    ):
        calipers.load_recalibrator(json.dumps(doc))
    doc = json.loads(IsotonicPointRecalibration().to_json())
    doc["params"]["level"] = 0.5
    with pytest.raises(CalibrationInputError, match="must be null for functional 'mean'"):
        calipers.load_recalibrator(json.dumps(doc))
    base = pytest.importorskip("sklearn.base")
    c = base.clone(rc)
    assert c.get_params() == {"functional": "quantile", "level": 0.25} and not hasattr(c, "knots_")
    with pytest.raises(NotFittedError, match="call fit\\(forecasts, targets\\)"):
        c.predict(z)
    with pytest.raises(
        CalibrationInputError,
        match="IsotonicPointRecalibration.fit: parameter .level. must be a number in \\(0, 1\\) for functional .expectile.",
    ):
        IsotonicPointRecalibration("expectile").fit(z, y)
    with pytest.raises(CalibrationInputError, match="targets has 99 rows but forecasts has 100"):
        IsotonicPointRecalibration().fit(z, y[:99])
    with pytest.raises(CalibrationInputError, match="forecasts must be finite; row 3 is nan"):
        rc.predict([0.0, 1.0, 2.0, np.nan])


def test_isotonic_tensors() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    z, y = rng.uniform(0, 1, 50), rng.uniform(0, 1, 50)
    rc = IsotonicPointRecalibration().fit(torch.tensor(z), torch.tensor(y))
    out = rc.predict(torch.tensor(z, dtype=torch.float32))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_allclose(
        out.numpy(), IsotonicPointRecalibration().fit(z, y).predict(z.astype(np.float32)), rtol=1e-6
    )


# ----------------------------------------------------------------------------- CQR on distributions


def test_cqr_on_a_quantile_set_takes_the_pair_at_the_level() -> None:
    rng = np.random.default_rng(7)
    n = 200
    m = rng.normal(size=n)
    levels = [0.025, 0.05, 0.25, 0.5, 0.75, 0.95, 0.975]
    spread = rng.uniform(0.5, 1.5, n)
    Q = m[:, None] + spread[:, None] * ndtri(np.array(levels))[None, :]
    y = m + 1.3 * spread * rng.standard_normal(n)
    qs = QuantileSet(levels, Q)
    # (1 - 0.9) / 2 is 0.04999999999999999: the 0.05 column itself is used
    assert (1 - 0.9) / 2 != 0.05
    a = ConformalizedQuantileRegression(level=0.9).fit(qs, targets=y)
    b = ConformalizedQuantileRegression(level=0.9).fit(Q[:, 1], Q[:, 5], y)
    np.testing.assert_array_equal(a.scores_, b.scores_)
    lo, hi = a.predict_interval(qs.take(np.arange(10)))
    lo2, hi2 = b.predict_interval(Q[:10, 1], Q[:10, 5])
    np.testing.assert_array_equal(lo, lo2)
    np.testing.assert_array_equal(hi, hi2)
    # level 0.5: the 0.25 and 0.75 columns
    c = ConformalizedQuantileRegression(level=0.5).fit(qs, targets=y)
    d = ConformalizedQuantileRegression(level=0.5).fit(Q[:, 2], Q[:, 4], y)
    np.testing.assert_array_equal(c.scores_, d.scores_)
    # level 0.8: between the set's levels, the set's interpolated quantiles
    e = ConformalizedQuantileRegression(level=0.8).fit(qs, targets=y)
    f = ConformalizedQuantileRegression(level=0.8).fit(
        qs.quantile((1 - 0.8) / 2), qs.quantile((1 + 0.8) / 2), y
    )
    np.testing.assert_array_equal(e.scores_, f.scores_)


def test_cqr_on_a_gaussian() -> None:
    rng = np.random.default_rng(8)
    mu, sd = rng.normal(size=100), rng.uniform(0.5, 2.0, 100)
    y = mu + 2 * sd * rng.standard_normal(100)
    G = Gaussian(mu, std=sd)
    z = ndtri(0.95)
    a = ConformalizedQuantileRegression(level=0.9).fit(G, targets=y)
    b = ConformalizedQuantileRegression(level=0.9).fit(mu - z * sd, mu + z * sd, y)
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=0, atol=1e-12)


def test_cqr_distribution_misuse() -> None:
    qs = QuantileSet([0.05, 0.95], [[0.0, 1.0], [1.0, 2.0]])
    with pytest.raises(
        CalibrationInputError,
        match="lower is a predictive distribution, which gives both quantiles; leave upper out",
    ):
        ConformalizedQuantileRegression().fit(qs, [0.5, 1.5])
    with pytest.raises(CalibrationInputError, match="needs targets"):
        ConformalizedQuantileRegression().fit(qs)
    with pytest.raises(CalibrationInputError, match="targets has 3 rows but lower has 2"):
        ConformalizedQuantileRegression().fit(qs, targets=[0.5, 1.5, 2.0])
