"""The T-reliability diagram of point forecasts and its compute step."""

from __future__ import annotations

import numpy as np
import pytest

from calipers.diagrams import t_reliability_diagram_data
from calipers.regression import score_decomposition, t_reliability_curve
from calipers.validation import CalibrationInputError


def _data(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 2.0, n)
    return 1.4 * x - 0.2, x + rng.normal(size=n)


def test_data_is_the_curve_and_the_decomposition() -> None:
    z, y = _data()
    d = t_reliability_diagram_data(z, y, functional="quantile", level=0.7)
    c = t_reliability_curve(z, y, functional="quantile", level=0.7)
    np.testing.assert_array_equal(d.forecasts, c.forecasts)
    np.testing.assert_array_equal(d.recalibrated, c.recalibrated)
    s = score_decomposition(z, y, scoring_function="pinball", level=0.7)
    assert d.decomposition == s
    assert d.band_low is None and d.band_high is None and d.n_resamples == 0
    assert d.label == "0.7-quantile"
    # the note gives the mean pinball loss, computed here by hand
    pin = np.mean(((z >= y) - 0.7) * (z - y))
    assert d.note.splitlines()[0] == f"pinball = {pin:.4g}"
    assert d.note.splitlines()[1] == f"MCB = {s.miscalibration:.4g}"
    e = t_reliability_diagram_data(z, y, functional="expectile", level=0.2)
    assert e.decomposition.scoring_function == "expectile" and e.label == "0.2-expectile"
    m = t_reliability_diagram_data(z, y, functional="median")
    assert m.decomposition.scoring_function == "pinball" and m.label == "median"


def test_bootstrap_band_is_the_percentile_band_of_refitted_curves() -> None:
    z, y = _data(120, seed=1)
    d = t_reliability_diagram_data(z, y, n_resamples=40, confidence_level=0.8, seed=5)
    # the same resamples, refitted here by brute-force PAV with numpy
    rng = np.random.default_rng(5)
    curves = []
    for _ in range(40):
        idx = rng.integers(0, 120, 120)
        zb, yb = z[idx], y[idx]
        u = np.unique(zb)
        means = [yb[zb == v].mean() for v in u]
        counts = [float(np.sum(zb == v)) for v in u]
        blocks = [[m, c, 1] for m, c in zip(means, counts, strict=True)]
        out: list[list[float]] = []
        for b in blocks:
            out.append(b)
            while len(out) > 1 and out[-2][0] >= out[-1][0]:
                b2 = out.pop()
                b1 = out.pop()
                w = b1[1] + b2[1]
                out.append([(b1[0] * b1[1] + b2[0] * b2[1]) / w, w, b1[2] + b2[2]])
        fit = np.repeat([b[0] for b in out], [b[2] for b in out])
        curves.append(np.interp(d.forecasts, u, fit))
    lo, hi = np.quantile(np.array(curves), [0.1, 0.9], axis=0)
    np.testing.assert_allclose(d.band_low, lo, rtol=0, atol=1e-12)
    np.testing.assert_allclose(d.band_high, hi, rtol=0, atol=1e-12)
    assert d.n_resamples == 40 and d.confidence_level == 0.8
    # seeded: the same seed gives the same band, another seed another
    again = t_reliability_diagram_data(z, y, n_resamples=40, confidence_level=0.8, seed=5)
    np.testing.assert_array_equal(again.band_low, d.band_low)
    other = t_reliability_diagram_data(z, y, n_resamples=40, confidence_level=0.8, seed=6)
    assert not np.array_equal(other.band_low, d.band_low)


def test_band_covers_a_calibrated_curve() -> None:
    # forecasts that are the true conditional mean: the band holds the diagonal
    # at most forecasts
    rng = np.random.default_rng(2)
    z = rng.uniform(0.0, 1.0, 2000)
    y = z + 0.3 * rng.normal(size=2000)
    d = t_reliability_diagram_data(z, y, n_resamples=60, confidence_level=0.9, seed=0)
    inside = (d.band_low <= d.forecasts) & (d.forecasts <= d.band_high)
    assert inside.mean() > 0.7


def test_refusals() -> None:
    z, y = _data(20)
    with pytest.raises(CalibrationInputError, match="n_resamples"):
        t_reliability_diagram_data(z, y, n_resamples=0)
    with pytest.raises(CalibrationInputError, match="confidence_level must lie in"):
        t_reliability_diagram_data(z, y, confidence_level=1.5)
    with pytest.raises(CalibrationInputError, match="needs its level"):
        t_reliability_diagram_data(z, y, functional="expectile")


def test_the_figure_draws_the_data() -> None:
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    from calipers.diagrams import t_reliability_diagram

    z, y = _data()
    d = t_reliability_diagram_data(z, y, n_resamples=20)
    fig = t_reliability_diagram(z, y, n_resamples=20, title="T")
    ax = fig.axes[0]
    line = next(a for a in ax.lines if a.get_gid() == "t-reliability")
    np.testing.assert_array_equal(line.get_xdata(), d.forecasts)
    np.testing.assert_array_equal(line.get_ydata(), d.recalibrated)
    assert any(a.get_gid() == "ideal" for a in ax.lines)
    assert any(c.get_gid() == "confidence-band" for c in ax.collections)
    assert ax.artists[0].get_title().get_text() == d.note
    assert ax.get_xlabel() == "Forecast (mean)" and ax.get_title() == "T"
    plt.close(fig)
    # the bias view: forecast minus recalibrated, into a given Axes
    fig2, ax2 = plt.subplots()
    out = t_reliability_diagram(z, y, kind="bias", ax=ax2)
    assert out is fig2
    line = next(a for a in ax2.lines if a.get_gid() == "t-reliability")
    np.testing.assert_allclose(line.get_ydata(), d.forecasts - d.recalibrated, atol=0)
    plt.close(fig2)
    with pytest.raises(CalibrationInputError, match="kind must be"):
        t_reliability_diagram(z, y, kind="rotated")
