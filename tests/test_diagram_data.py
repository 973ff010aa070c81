"""The compute step of the diagrams: the data equal independent computations, the
figures draw exactly the data, and computing imports no matplotlib.

``reliability_diagram_data``, ``smooth_reliability_diagram_data`` and
``calibration_sharpness_diagram_data`` return what the one-call diagrams draw. Each
test compares the data with values computed here (bins by ``ceil(15 c) - 1`` and
``np.bincount``, Wilson intervals from the closed form, the Nadaraya-Watson support
rule by hand) or with the calipers functions the diagrams document as their source
(``reliability_table``, ``smooth_reliability``, ``calibration_sharpness``), then
reads the drawn artists back and compares them with the data.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

import calipers as cp  # noqa: E402
from calipers.datasets import load_default_predictions  # noqa: E402
from calipers.diagrams import (  # noqa: E402
    CalibrationSharpnessDiagramData,
    ReliabilityDiagramData,
    SmoothReliabilityDiagramData,
    calibration_sharpness_diagram,
    calibration_sharpness_diagram_data,
    reliability_diagram,
    reliability_diagram_data,
    sharpness_note,
    smooth_reliability_diagram,
    smooth_reliability_diagram_data,
)
from calipers.metrics import calibration_sharpness  # noqa: E402

D = load_default_predictions()
P_NB = np.asarray(D.probs["gaussian_nb"], dtype=np.float64)
Y = np.asarray(D.labels)


def _bins_by_hand(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, B: int = 15):
    """Top-label bins ``(lo, hi]`` of width 1/B: weight, mean confidence, accuracy."""
    c = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(np.float64)
    w = np.ones_like(c) if w is None else w
    ids = np.clip(np.ceil(B * c).astype(int) - 1, 0, B - 1)
    W = np.bincount(ids, weights=w, minlength=B)
    W2 = np.bincount(ids, weights=w * w, minlength=B)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.bincount(ids, weights=w * c, minlength=B) / W
        acc = np.bincount(ids, weights=w * correct, minlength=B) / W
    return W, W2, conf, acc


def _wilson(p: np.ndarray, n: np.ndarray, z: float = 1.959963984540054):
    """The Wilson score interval, closed form (Wilson 1927)."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def _bar_heights(ax, prefix: str) -> dict[int, float]:
    return {
        int(p.get_gid().rsplit("-", 1)[1]): p.get_height()
        for p in ax.patches
        if (p.get_gid() or "").startswith(prefix)
    }


# ----------------------------------------------------------------------------- reliability


def test_reliability_data_are_the_bins_computed_by_hand() -> None:
    data = reliability_diagram_data(P_NB, Y, intervals="wilson")
    assert isinstance(data, ReliabilityDiagramData)
    W, _, conf, acc = _bins_by_hand(P_NB, Y)
    ne = W > 0
    np.testing.assert_array_equal(data.nonempty, ne)
    np.testing.assert_allclose(data.weight, W, rtol=0, atol=1e-9)
    np.testing.assert_allclose(data.mean_score[ne], conf[ne], rtol=1e-12)
    np.testing.assert_allclose(data.observed[ne], acc[ne], rtol=1e-12)
    np.testing.assert_allclose(data.bin_low, np.arange(15) / 15, atol=1e-15)
    np.testing.assert_allclose(data.bin_high, np.arange(1, 16) / 15, atol=1e-15)
    lo, hi = _wilson(acc[ne], W[ne])
    np.testing.assert_allclose(data.interval_low[ne], lo, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(data.interval_high[ne], hi, rtol=1e-9, atol=1e-12)
    assert np.isnan(data.interval_low[~ne]).all() and np.isnan(data.interval_high[~ne]).all()
    assert data.ece == pytest.approx(cp.ece(P_NB, Y), rel=1e-12)
    assert data.accuracy == pytest.approx(cp.accuracy(P_NB, Y), rel=1e-12)
    assert (data.x_label, data.y_label, data.weighted) == ("Confidence", "Accuracy", False)
    assert data.note == (
        f"ECE = {100 * cp.ece(P_NB, Y):.2f}%\nAccuracy = {100 * cp.accuracy(P_NB, Y):.1f}%"
    )


def test_reliability_data_equal_the_reliability_table_weighted() -> None:
    rng = np.random.default_rng(0)
    w = rng.uniform(0.2, 3.0, Y.shape[0])
    data = reliability_diagram_data(P_NB, Y, intervals="wilson", sample_weight=w)
    table = cp.reliability_table(P_NB, Y, sample_weight=w, empty="keep", as_frame=False)
    np.testing.assert_allclose(data.weight, table["weight"], rtol=1e-12)
    ne = data.nonempty
    np.testing.assert_allclose(data.observed[ne], table["observed"][ne], rtol=1e-12)
    np.testing.assert_allclose(data.mean_score[ne], table["mean_score"][ne], rtol=1e-12)
    np.testing.assert_allclose(data.interval_low[ne], table["ci_lower"][ne], rtol=1e-9)
    np.testing.assert_allclose(data.interval_high[ne], table["ci_upper"][ne], rtol=1e-9)
    # Kish's effective size by hand: (sum w)^2 / sum w^2 per bin
    W, W2, _, acc = _bins_by_hand(P_NB, Y, w)
    lo, hi = _wilson(acc[ne], W[ne] ** 2 / W2[ne])
    np.testing.assert_allclose(data.interval_low[ne], lo, rtol=1e-9, atol=1e-12)
    assert data.weighted and data.ece == pytest.approx(cp.ece(P_NB, Y, sample_weight=w))


def test_reliability_binary_lens_has_no_accuracy() -> None:
    rng = np.random.default_rng(1)
    p = rng.uniform(0.02, 0.98, 500)
    y = (rng.uniform(size=500) < p**1.5).astype(int)
    data = reliability_diagram_data(p, y, n_bins=10)
    assert data.lens == "binary" and data.accuracy is None and data.interval_low is None
    ids = np.clip(np.ceil(10 * p).astype(int) - 1, 0, 9)
    np.testing.assert_allclose(data.weight, np.bincount(ids, minlength=10))
    ne = data.nonempty
    acc = np.bincount(ids, weights=y, minlength=10)[ne] / np.bincount(ids, minlength=10)[ne]
    np.testing.assert_allclose(data.observed[ne], acc, rtol=1e-12)
    assert data.note == f"ECE = {100 * cp.ece(p, y, n_bins=10):.2f}%"
    assert (data.x_label, data.y_label) == ("Predicted probability", "Observed frequency")


@pytest.mark.parametrize("intervals", ["wilson", "bootstrap"])
def test_reliability_figure_draws_exactly_the_data(intervals: str) -> None:
    kw = {"intervals": intervals, "n_bootstrap": 60, "seed": 3}
    data = reliability_diagram_data(P_NB, Y, **kw)
    fig = reliability_diagram(P_NB, Y, **kw)
    try:
        ax_main, ax_hist = fig.axes[0], fig.axes[1]
        idx = np.flatnonzero(data.nonempty)
        bars = _bar_heights(ax_main, "reliability-bar-")
        assert sorted(bars) == idx.tolist()
        np.testing.assert_array_equal([bars[j] for j in idx], data.observed[idx])
        hist = _bar_heights(ax_hist, "histogram-bar-")
        np.testing.assert_array_equal([hist[j] for j in idx], data.weight[idx])
        gaps = _bar_heights(ax_main, "gap-bar-")
        np.testing.assert_allclose(
            [gaps[j] for j in idx], np.abs(data.mean_score[idx] - data.observed[idx])
        )
        (seg,) = [c for c in ax_main.collections if c.get_gid() == "intervals"]
        ends = np.array([s[:, 1] for s in seg.get_segments()])
        np.testing.assert_allclose(
            ends[:, 0], np.minimum(data.interval_low[idx], data.observed[idx])
        )
        np.testing.assert_allclose(
            ends[:, 1], np.maximum(data.interval_high[idx], data.observed[idx])
        )
        assert ax_main.artists[0].get_title().get_text() == data.note
    finally:
        plt.close(fig)


def test_reliability_bootstrap_data_are_seeded() -> None:
    a = reliability_diagram_data(P_NB, Y, intervals="bootstrap", n_bootstrap=40, seed=7)
    b = reliability_diagram_data(P_NB, Y, intervals="bootstrap", n_bootstrap=40, seed=7)
    np.testing.assert_array_equal(a.interval_low, b.interval_low)
    ne = a.nonempty
    assert (a.interval_low[ne] <= a.interval_high[ne]).all()


def test_classwise_data_are_the_per_class_bins_and_are_drawn() -> None:
    p = np.asarray(D.probs["random_forest"], dtype=np.float64)
    data = cp.diagrams.classwise_reliability_grid_data(p, Y, panels=[4, 1], n_bins=10)
    assert data.columns == [4, 1] and data.names == ["class 4", "class 1"]
    for c, panel in zip(data.columns, data.panels, strict=True):
        ids = np.clip(np.ceil(10 * p[:, c]).astype(int) - 1, 0, 9)
        n = np.bincount(ids, minlength=10)
        np.testing.assert_allclose(panel.weight, n)
        ne = n > 0
        hits = np.bincount(ids, weights=(Y == c).astype(float), minlength=10)
        np.testing.assert_allclose(panel.observed[ne], hits[ne] / n[ne], rtol=1e-12)
        conf = np.bincount(ids, weights=p[:, c], minlength=10)
        np.testing.assert_allclose(panel.mean_score[ne], conf[ne] / n[ne], rtol=1e-12)
        gap = np.sum(n[ne] * np.abs(hits[ne] / n[ne] - conf[ne] / n[ne])) / n.sum()
        assert panel.ece == pytest.approx(gap, rel=1e-12)
    fig = cp.diagrams.classwise_reliability_grid(p, Y, panels=[4, 1], n_bins=10)
    try:
        for panel, ax in zip(data.panels, fig.axes, strict=False):
            bars = _bar_heights(ax, "reliability-bar-")
            idx = np.flatnonzero(panel.nonempty)
            np.testing.assert_array_equal([bars[j] for j in idx], panel.observed[idx])
            assert ax.artists[0].get_title().get_text() == f"ECE {100 * panel.ece:.1f}%"
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------- smooth


def test_smooth_data_are_smooth_reliability() -> None:
    p = D.probs["random_forest"]
    data = smooth_reliability_diagram_data(p, Y)
    assert isinstance(data, SmoothReliabilityDiagramData)
    sr = cp.smooth_reliability(p, Y)
    np.testing.assert_array_equal(data.t, sr.t)
    np.testing.assert_array_equal(data.mean_target, sr.mean_target)
    np.testing.assert_array_equal(data.density, sr.density)
    assert data.smece == pytest.approx(cp.smece(p, Y), rel=1e-12)
    assert data.bandwidth == pytest.approx(cp.smece_bandwidth(p, Y), rel=1e-12)
    assert data.fixed_point and data.band_low is None and data.lens == "top_label"
    np.testing.assert_array_equal(data.shown, sr.density > 1e-3 * sr.density.max())
    d = sr.density
    np.testing.assert_allclose(data.linewidths, 0.4 + 3.6 * d[:-1] / d.max())
    assert data.accuracy == pytest.approx(cp.accuracy(p, Y))
    fixed = smooth_reliability_diagram_data(p, Y, bandwidth=0.05)
    assert not fixed.fixed_point and fixed.bandwidth == 0.05
    assert fixed.note.splitlines()[1] == "σ = 0.050"


def test_smooth_figure_draws_exactly_the_data() -> None:
    rng = np.random.default_rng(2)
    p = rng.uniform(0.02, 0.98, 400)
    y = (rng.uniform(size=400) < p**1.3).astype(int)
    kw = {"intervals": "bootstrap", "n_bootstrap": 20, "bandwidth": 0.05}
    data = smooth_reliability_diagram_data(p, y, **kw)
    assert data.lens == "binary" and data.band_low is not None
    assert (data.band_low <= data.band_high + 1e-12).all()
    fig = smooth_reliability_diagram(p, y, **kw)
    try:
        ax = fig.axes[0]
        (lc,) = [c for c in ax.collections if c.get_gid() == "smooth-curve"]
        assert isinstance(lc, LineCollection)
        keep = data.shown[:-1] & data.shown[1:]
        segs = np.array(lc.get_segments())
        pts = np.column_stack([data.t, data.mean_target])
        np.testing.assert_array_equal(segs[:, 0], pts[:-1][keep])
        np.testing.assert_array_equal(segs[:, 1], pts[1:][keep])
        np.testing.assert_array_equal(lc.get_linewidths(), data.linewidths[keep])
        assert ax.artists[0].get_title().get_text() == data.note
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------- sharpness


def test_sharpness_data_are_calibration_sharpness() -> None:
    models = {m: D.probs[m] for m in ("gaussian_nb", "logistic_regression")}
    data = calibration_sharpness_diagram_data(models, Y, bandwidth=0.08, n_points=301)
    assert isinstance(data, CalibrationSharpnessDiagramData)
    assert list(data.panels) == list(models) and data.lens == "top_label"
    for name, p in models.items():
        cs = calibration_sharpness(p, Y, lens="top_label", bandwidth=0.08, n_points=301)
        got = data.panels[name]
        for field in ("grid", "calibration_curve", "band_lower", "band_upper", "density"):
            np.testing.assert_array_equal(getattr(got, field), getattr(cs, field))
        assert data.notes[name] == sharpness_note(cs, "sharpcal")
        # at least one effective sample under the Gaussian kernel: n p(x) sigma sqrt(2 pi) >= 1
        want = cs.density * len(Y) * 0.08 * np.sqrt(2 * np.pi) >= 1.0
        np.testing.assert_array_equal(data.supported[name], want)
        finite = np.concatenate(
            [cs.band_upper[np.isfinite(cs.band_upper)], cs.calibration_curve, [1.0]]
        )
        assert data.tops[name] == pytest.approx(float(np.nanmax(finite)))
    assert data.caption == cp.diagrams.sharpness_caption("brier", "sharpcal", "top_label")


def test_sharpness_figure_draws_exactly_the_data() -> None:
    data = calibration_sharpness_diagram_data(P_NB, Y, calibration_form="plugin")
    assert list(data.panels) == [""]
    fig = calibration_sharpness_diagram(P_NB, Y, calibration_form="plugin")
    try:
        ax = fig.axes[0]
        cs, sup = data.panels[""], data.supported[""]
        (curve,) = [ln for ln in ax.lines if ln.get_gid() == "calibration-curve"]
        np.testing.assert_array_equal(curve.get_xdata(), cs.grid)
        np.testing.assert_array_equal(
            curve.get_ydata(), np.where(sup, cs.calibration_curve, np.nan)
        )
        assert ax.artists[0].get_title().get_text() == data.notes[""]
        assert ax.get_ylim()[1] == pytest.approx(1.06 * data.tops[""])
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------- bar charts

GROUPS = [[0, 6, 8, 9], [1, 4, 7], [2, 3, 5]]


def _bars_by_model(ax, gid: str, n_models: int, n_cats: int) -> np.ndarray:
    """Bar heights read back from the gids ``<gid>-<model>-<category>`` (NaN: no bar)."""
    out = np.full((n_models, n_cats), np.nan)
    for patch in ax.patches:
        g = patch.get_gid() or ""
        if g.startswith(gid + "-") and "-na-" not in g:
            i, j = (int(x) for x in g[len(gid) + 1 :].split("-"))
            out[i, j] = patch.get_height()
    return out


def test_top_k_data_are_the_metrics_and_are_drawn() -> None:
    models = {"nb": P_NB, "rf": D.probs["random_forest"]}
    data = cp.diagrams.top_k_bar_chart_data(models, Y, ks=(1, 3), show_full=True)
    assert data.categories == ["Trad.", "Top-1", "Top-3", "Full"]
    for name, p in models.items():
        want = [cp.ece(p, Y), cp.top_k_ece(p, Y, k=1), cp.top_k_ece(p, Y, k=3), cp.full_ece(p, Y)]
        np.testing.assert_allclose(data.values[name], want, rtol=1e-12)
    fig = cp.diagrams.top_k_bar_chart(models, Y, ks=(1, 3), show_full=True)
    try:
        drawn = _bars_by_model(fig.axes[0], "topk-bar", 2, 4)
        np.testing.assert_array_equal(drawn, np.stack(list(data.values.values())))
        assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == data.categories
    finally:
        plt.close(fig)


def test_group_data_are_the_grouping_lens_and_are_drawn() -> None:
    keep = Y < 9  # no sample of class 9: its group has no value
    p, y = P_NB[keep], Y[keep]
    groups = [[0, 6, 8], [1, 4, 7], [2, 3, 5], [9]]
    data = cp.diagrams.group_bar_chart_data(p, y, groups, show_traditional=False)
    assert data.categories == ["All", "group 0", "group 1", "group 2", "group 3"]
    v = data.values[""]
    assert v[0] == pytest.approx(cp.group_ece(p, y, groups), rel=1e-12)
    est, lens = cp.KDTree(0.1), cp.grouping(groups)
    for i, g in enumerate(groups[:3]):
        want = cp.calibration_error(
            p, y, lens=lens, selection=cp.LabelSelection(g), estimator=est, divergence=cp.TVD()
        )
        assert v[1 + i] == pytest.approx(want, rel=1e-12)
    assert np.isnan(v[4])
    assert data.x_label == "Samples whose true class is in the group"
    fig = cp.diagrams.group_bar_chart(p, y, groups, show_traditional=False)
    try:
        np.testing.assert_array_equal(_bars_by_model(fig.axes[0], "group-bar", 1, 5)[0], v)
    finally:
        plt.close(fig)


def test_interval_data_count_the_closed_intervals_and_are_drawn() -> None:
    rng = np.random.default_rng(4)
    w = rng.uniform(0.5, 2.0, Y.shape[0])
    data = cp.diagrams.interval_diagram_data(P_NB, Y, sample_weight=w)
    assert data.categories == ["Trad.", "Full", "Low", "Medium", "High"]
    assert data.weighted and data.lens == "top_label"
    c = P_NB.max(axis=1)
    want = [w[(c >= lo) & (c <= hi)].sum() for lo, hi in cp.diagrams.DEFAULT_LIKERT]
    np.testing.assert_allclose(data.counts[""], want, rtol=1e-12)
    per = cp.interval_calibration_error(P_NB, Y, sample_weight=w)
    np.testing.assert_allclose(data.errors[""][2:], per, rtol=1e-12)
    assert data.errors[""][0] == pytest.approx(cp.ece(P_NB, Y, sample_weight=w), rel=1e-12)
    fig = cp.diagrams.interval_diagram(P_NB, Y, sample_weight=w)
    try:
        drawn = _bars_by_model(fig.axes[1], "count-bar", 1, 3)[0]
        np.testing.assert_array_equal(drawn, data.counts[""])
        np.testing.assert_array_equal(
            _bars_by_model(fig.axes[0], "interval-bar", 1, 5)[0], data.errors[""]
        )
        assert fig.axes[1].get_ylabel() == "Weight"
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------- regression


def _gaussian(n: int = 600, scale: float = 2.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    var = rng.uniform(0.5, 2.0, n)
    y = mu + rng.normal(scale=scale * np.sqrt(var))
    return mu, var, y


def test_pit_data_are_the_normal_cdf_histogram_and_are_drawn() -> None:
    from scipy import stats

    mu, var, y = _gaussian()
    data = cp.diagrams.pit_histogram_diagram_data(mu, variance=var, targets=y, n_bins=8)
    u = stats.norm.cdf((y - mu) / np.sqrt(var))
    counts = np.histogram(u, bins=np.linspace(0, 1, 9))[0]
    np.testing.assert_array_equal(data.before.counts, counts)
    assert data.after is None and data.total == 600.0 and not data.weighted
    assert (data.band_low, data.band_high) == cp.diagrams.pit_histogram.pit_band(8, 600.0, 600.0)
    ks = stats.kstest(u, "uniform").statistic
    assert data.note.splitlines()[0] == f"KS distance = {ks:.4f}"
    fig = cp.diagrams.pit_histogram_diagram(mu, variance=var, targets=y, n_bins=8)
    try:
        ax = fig.axes[0]
        heights = [p.get_height() for p in ax.patches if p.get_gid() == "pit-bars"]
        np.testing.assert_array_equal(heights, data.before.counts)
        assert ax.artists[0].get_title().get_text() == data.note
    finally:
        plt.close(fig)


def test_quantile_data_are_the_coverage_of_central_intervals() -> None:
    from scipy import stats

    mu, var, y = _gaussian(seed=1)
    levels = [0.9, 0.2, 0.5]
    data = cp.diagrams.quantile_reliability_diagram_data(mu, variance=var, targets=y, levels=levels)
    np.testing.assert_array_equal(data.levels, [0.2, 0.5, 0.9])
    z = np.abs(y - mu) / np.sqrt(var)
    want = [np.mean(z <= stats.norm.ppf(0.5 + lv / 2)) for lv in data.levels]
    np.testing.assert_allclose(data.coverage, want, rtol=1e-12)
    np.testing.assert_allclose(data.band_low, stats.binom.ppf(0.025, 600, data.levels) / 600)
    assert data.mean_absolute_error == pytest.approx(np.mean(np.abs(want - data.levels)))
    fig = cp.diagrams.quantile_reliability_diagram(mu, variance=var, targets=y, levels=levels)
    try:
        (line,) = [ln for ln in fig.axes[0].lines if ln.get_gid() == "coverage"]
        np.testing.assert_array_equal(line.get_ydata(), data.coverage)
        assert fig.axes[0].artists[0].get_title().get_text() == data.note
    finally:
        plt.close(fig)


def test_variance_data_are_the_binned_rmv_and_rmse() -> None:
    mu, var, y = _gaussian(n=900, seed=2)
    data = cp.diagrams.variance_error_diagram_data(mu, variance=var, targets=y, n_bins=3)
    # three equal-mass bins of the predicted variance, by hand
    order = np.argsort(var, kind="stable")
    parts = np.array_split(order, 3)
    rmv = [np.sqrt(var[i].mean()) for i in parts]
    rmse = [np.sqrt(((y[i] - mu[i]) ** 2).mean()) for i in parts]
    np.testing.assert_allclose(data.before.bin_rmv, rmv, rtol=1e-12)
    np.testing.assert_allclose(data.before.bin_rmse, rmse, rtol=1e-12)
    lo, hi = data.limits
    assert lo < min(rmv + rmse) and hi > max(rmv + rmse)
    fig = cp.diagrams.variance_error_diagram(mu, variance=var, targets=y, n_bins=3)
    try:
        (line,) = [ln for ln in fig.axes[0].lines if ln.get_gid() == "rmse"]
        np.testing.assert_array_equal(line.get_xdata(), data.before.bin_rmv)
        np.testing.assert_array_equal(line.get_ydata(), data.before.bin_rmse)
        assert fig.axes[0].get_xlim() == pytest.approx(data.limits)
        assert fig.axes[0].artists[0].get_title().get_text() == data.note
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------- no matplotlib


def test_computing_the_data_imports_no_matplotlib() -> None:
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from calipers.diagrams import (reliability_diagram_data, "
        "smooth_reliability_diagram_data, calibration_sharpness_diagram_data)\n"
        "rng = np.random.default_rng(0)\n"
        "p = rng.dirichlet(np.ones(3), 300); y = rng.integers(0, 3, 300)\n"
        "reliability_diagram_data(p, y, intervals='wilson')\n"
        "reliability_diagram_data(p, y, intervals='bootstrap', n_bootstrap=5)\n"
        "smooth_reliability_diagram_data(p, y, intervals='bootstrap', n_bootstrap=3)\n"
        "calibration_sharpness_diagram_data({'a': p, 'b': p}, y, n_points=101)\n"
        "from calipers.diagrams import classwise_reliability_grid_data\n"
        "classwise_reliability_grid_data(p, y, n_bins=5)\n"
        "from calipers.diagrams import (top_k_bar_chart_data, group_bar_chart_data, "
        "interval_diagram_data)\n"
        "top_k_bar_chart_data(p, y, ks=(1,), show_full=True)\n"
        "group_bar_chart_data(p, y, [[0], [1, 2]])\n"
        "interval_diagram_data({'a': p, 'b': p}, y)\n"
        "from calipers.diagrams import (pit_histogram_diagram_data, "
        "quantile_reliability_diagram_data, variance_error_diagram_data)\n"
        "m = rng.normal(size=200); v = np.ones(200); t = m + rng.normal(size=200)\n"
        "pit_histogram_diagram_data(m, variance=v, targets=t)\n"
        "quantile_reliability_diagram_data(m, variance=v, targets=t)\n"
        "variance_error_diagram_data(m, variance=v, targets=t)\n"
        "assert 'matplotlib' not in sys.modules, sorted(m for m in sys.modules if 'matplotlib' in m)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
