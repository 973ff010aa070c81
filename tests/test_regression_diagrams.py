"""The three regression diagrams draw the numbers of calipers.regression.

Each number read back from the Axes (bar heights, line data, the band) is
compared with a value computed here independently: PIT counts by
``scipy.stats.norm.cdf`` and ``numpy.histogram``, interval coverage and the
binned RMV / RMSE by hand, the band by ``scipy.stats.binom``. The recalibrated
curves use the small stand-in regression recalibrators of test_regression_report
that follow the shared contract (variance scaling, and a non-Gaussian PIT remapping).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from calipers.diagrams import (  # noqa: E402
    pit_histogram_diagram,
    quantile_reliability_diagram,
    variance_error_diagram,
)
from calipers.regression import check_gaussian  # noqa: E402
from calipers.validation import CalibrationInputError  # noqa: E402
from test_regression_report import RemapStandIn, ScalingStandIn  # noqa: E402


def _data(n=600, scale=2.0, seed=0):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    sd = rng.uniform(0.5, 2.0, size=n)
    y = mu + rng.normal(size=n) * sd * scale
    return mu, sd, y


def _patches(ax, gid):
    return [p for p in ax.patches if p.get_gid() == gid]


def _line(ax, gid):
    (line,) = [ln for ln in ax.get_lines() if ln.get_gid() == gid]
    return line


def _note(ax):
    return ax.artists[0].get_title().get_text()


def test_pit_bars_are_the_histogram_of_the_normal_cdf():
    mu, sd, y = _data()
    fig = pit_histogram_diagram(mu, std=sd, targets=y, n_bins=8)
    ax = fig.axes[0]
    u = stats.norm.cdf((y - mu) / sd)
    expected, _ = np.histogram(u, bins=8, range=(0, 1))
    heights = [p.get_height() for p in _patches(ax, "pit-bars")]
    np.testing.assert_allclose(heights, expected)
    assert _line(ax, "uniform").get_ydata()[0] == pytest.approx(600 / 8)
    band = _patches(ax, "calibrated-band")[0]
    ys = band.get_path().transformed(band.get_patch_transform()).vertices[:, 1]
    lo, hi = stats.binom.ppf([0.025, 0.975], 600, 1 / 8)
    assert ys.min() == pytest.approx(lo) and ys.max() == pytest.approx(hi)
    ks = stats.kstest(u, "uniform").statistic
    assert f"KS distance = {ks:.4f}" in _note(ax)
    plt.close(fig)


def test_pit_recalibrated_bars_and_weights():
    mu, sd, y = _data()
    rc = ScalingStandIn().fit(mu, variance=sd**2, targets=y)
    s = np.mean((y - mu) ** 2 / sd**2)
    fig = pit_histogram_diagram(mu, variance=sd**2, targets=y, recalibrator=rc, n_bins=5)
    ax = fig.axes[0]
    after, _ = np.histogram(stats.norm.cdf((y - mu) / (sd * np.sqrt(s))), bins=5, range=(0, 1))
    np.testing.assert_allclose(
        [p.get_height() for p in _patches(ax, "pit-bars-recalibrated")], after
    )
    assert "→" in _note(ax)
    plt.close(fig)
    # weights: bar heights are weighted counts, the uniform line total / n_bins
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=600)
    fig = pit_histogram_diagram(mu, std=sd, targets=y, sample_weight=w, n_bins=5)
    ax = fig.axes[0]
    expected, _ = np.histogram(stats.norm.cdf((y - mu) / sd), bins=5, range=(0, 1), weights=w)
    np.testing.assert_allclose([p.get_height() for p in _patches(ax, "pit-bars")], expected)
    assert _line(ax, "uniform").get_ydata()[0] == pytest.approx(w.sum() / 5)
    plt.close(fig)


def test_quantile_coverage_by_hand_and_band():
    mu, sd, y = _data()
    levels = [0.2, 0.5, 0.8, 0.95]
    rc = ScalingStandIn().fit(mu, variance=sd**2, targets=y)
    fig = quantile_reliability_diagram(
        mu, variance=sd**2, targets=y, levels=levels, recalibrator=rc
    )
    ax = fig.axes[0]
    absz = np.abs(y - mu) / sd
    cov = [np.mean(absz <= stats.norm.ppf((1 + p) / 2)) for p in levels]
    np.testing.assert_allclose(_line(ax, "coverage").get_xdata(), levels)
    np.testing.assert_allclose(_line(ax, "coverage").get_ydata(), cov)
    s = np.mean((y - mu) ** 2 / sd**2)
    cov2 = [np.mean(absz / np.sqrt(s) <= stats.norm.ppf((1 + p) / 2)) for p in levels]
    np.testing.assert_allclose(_line(ax, "coverage-recalibrated").get_ydata(), cov2)
    (band,) = [c for c in ax.collections if c.get_gid() == "calibrated-band"]
    ys = band.get_paths()[0].vertices[:, 1]
    for p in levels:
        lo, hi = stats.binom.ppf([0.025, 0.975], 600, p) / 600
        assert np.isclose(ys, lo).any() and np.isclose(ys, hi).any()
    mae = np.mean(np.abs(np.array(cov) - levels))
    assert f"{mae:.4f}" in _note(ax)
    plt.close(fig)


def test_quantile_non_gaussian_recalibrator_uses_its_intervals():
    mu, sd, y = _data(scale=1.0)
    fig = quantile_reliability_diagram(
        mu, variance=sd**2, targets=y, levels=[0.5, 0.9], recalibrator=RemapStandIn()
    )
    ax = fig.axes[0]
    z = (y - mu) / sd
    exp = []
    for p in (0.5, 0.9):
        lo, hi = stats.norm.ppf(np.sqrt((1 - p) / 2)), stats.norm.ppf(np.sqrt((1 + p) / 2))
        exp.append(np.mean((z >= lo) & (z <= hi)))
    np.testing.assert_allclose(_line(ax, "coverage-recalibrated").get_ydata(), exp)
    plt.close(fig)


def test_variance_error_bins_by_hand():
    mu, sd, y = _data(n=600)
    rc = ScalingStandIn().fit(mu, variance=sd**2, targets=y)
    fig = variance_error_diagram(mu, std=sd, targets=y, n_bins=15, recalibrator=rc)
    ax = fig.axes[0]
    order = np.argsort(sd**2, kind="stable")
    var, se = (sd**2)[order].reshape(15, 40), ((y - mu) ** 2)[order].reshape(15, 40)
    rmv, rmse = np.sqrt(var.mean(1)), np.sqrt(se.mean(1))
    np.testing.assert_allclose(_line(ax, "rmse").get_xdata(), rmv)
    np.testing.assert_allclose(_line(ax, "rmse").get_ydata(), rmse)
    s = np.mean((y - mu) ** 2 / sd**2)
    np.testing.assert_allclose(_line(ax, "rmse-recalibrated").get_xdata(), rmv * np.sqrt(s))
    np.testing.assert_allclose(_line(ax, "rmse-recalibrated").get_ydata(), rmse)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    ence = np.mean(np.abs(rmv - rmse) / rmv)
    ratio = (y - mu) ** 2 / sd**2
    note = _note(ax)
    assert f"ENCE = {ence:.4f}" in note
    assert f"MSE/AvgVar = {np.mean((y - mu) ** 2) / np.mean(sd**2):.4f}" in note
    assert f"SE/Var ratio = {ratio.mean():.4f} ± {ratio.std():.4f}" in note
    plt.close(fig)


def test_axes_given_and_gaussian_predictions_input():
    mu, sd, y = _data(n=200)
    fig, axs = plt.subplots(1, 3)
    G = check_gaussian(mu, std=sd, targets=y)
    out = [
        pit_histogram_diagram(G, ax=axs[0]),
        quantile_reliability_diagram(G, ax=axs[1]),
        variance_error_diagram(G, ax=axs[2], n_bins=5, title="model"),
    ]
    assert all(f is fig for f in out)
    assert axs[2].get_title() == "model"
    assert len(_patches(axs[0], "pit-bars")) == 10
    plt.close(fig)


def test_bad_input():
    mu, sd, y = _data(n=50)
    with pytest.raises(CalibrationInputError, match="no predicted variance"):
        variance_error_diagram(mu, std=sd, targets=y, n_bins=5, recalibrator=RemapStandIn())
    with pytest.raises(TypeError, match="has no predict_cdf"):
        pit_histogram_diagram(mu, std=sd, targets=y, recalibrator=object())
    with pytest.raises(CalibrationInputError, match="n_bins"):
        pit_histogram_diagram(mu, std=sd, targets=y, n_bins=0)
    with pytest.raises(CalibrationInputError, match="n_bins"):
        variance_error_diagram(mu, std=sd, targets=y, n_bins=51)
    with pytest.raises(CalibrationInputError, match="same length"):
        quantile_reliability_diagram(mu, std=sd[:-1], targets=y)
    with pytest.raises(CalibrationInputError, match="strictly between 0 and 1"):
        quantile_reliability_diagram(mu, std=sd, targets=y, levels=[0.5, 1.0])
    plt.close("all")
