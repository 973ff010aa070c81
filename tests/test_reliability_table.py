"""The reliability table: every number checked against something computed elsewhere.

scikit-learn's ``calibration_curve`` (both strategies), per-bin means by hand
and with ``np.bincount``, intervals from ``scipy.stats.binomtest``, and the
ECE of :func:`calipers.calibration_error` / :func:`calipers.ece` as the
weighted mean of the table's ``|gap|``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.metrics._reliability_table import RELIABILITY_TABLE_COLUMNS

calibration_curve = pytest.importorskip("sklearn.calibration").calibration_curve


def _binary_data(n: int, seed: int, B: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded scores with every edge value (``j / B`` and ``np.linspace``'s) among them."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    grid = np.r_[np.linspace(0.0, 1.0, B + 1), np.arange(B + 1) / B]
    p[: grid.size] = grid
    y = (rng.uniform(size=n) < p**1.5).astype(np.int64)
    return p, y


def _table(*args: Any, **kwargs: Any) -> np.recarray:
    return cp.reliability_table(*args, as_frame=False, **kwargs)  # type: ignore[no-any-return]


def _ece_from_table(t: np.recarray) -> float:
    return float(np.sum(t.weight * np.abs(t.gap)) / np.sum(t.weight))


# ----------------------------------------------------------------------------- scikit-learn


@pytest.mark.parametrize("B", [1, 5, 10, 15, 20, 100])
@pytest.mark.parametrize("seed", [0, 1])
def test_uniform_strategy_is_reproduced_exactly(B: int, seed: int) -> None:
    p, y = _binary_data(2000, seed, B)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=B, strategy="uniform")
    t = _table(p, y, estimator=cp.FixedEdges(np.linspace(0.0, 1.0, B + 1)))
    assert t.slice.tolist() == ["positive class"] * len(prob_true)
    np.testing.assert_array_equal(t.observed, prob_true)
    np.testing.assert_array_equal(t.mean_score, prob_pred)


@pytest.mark.parametrize("B", [5, 10, 15, 20])
def test_equal_width_matches_sklearn_for_scores_on_the_grid(B: int) -> None:
    # scores equal to j / B (and everything off the edges) land in sklearn's bins
    rng = np.random.default_rng(3)
    p = rng.uniform(size=1500)
    p[: B + 1] = np.arange(B + 1) / B
    y = (rng.uniform(size=p.size) < p).astype(np.int64)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=B)
    t = _table(p, y, n_bins=B)
    np.testing.assert_allclose(t.observed, prob_true, rtol=1e-12, atol=0)
    np.testing.assert_allclose(t.mean_score, prob_pred, rtol=1e-12, atol=0)


def test_equal_width_differs_from_sklearn_only_between_the_two_edge_roundings() -> None:
    # np.linspace(0, 1, 11)[3] = 0.30000000000000004 > 3 / 10: sklearn puts it in
    # (0.2, 0.30000000000000004], EqualWidth(10) in (0.3, 0.4] (documented)
    v = np.linspace(0.0, 1.0, 11)[3]
    assert v > 0.3
    p = np.array([0.05, v, 0.95])
    y = np.array([0, 1, 1])
    prob_true, _ = calibration_curve(y, p, n_bins=10)
    assert _table(p, y, n_bins=10).bin.tolist() == [0, 3, 9]
    assert _table(p, y, estimator=cp.FixedEdges(np.linspace(0, 1, 11))).bin.tolist() == [0, 2, 9]
    np.testing.assert_array_equal(prob_true, [0.0, 1.0, 1.0])


@pytest.mark.parametrize("B", [3, 5, 10])
@pytest.mark.parametrize("n", [11, 100, 1001])
def test_quantile_strategy_is_reproduced_with_percentile_edges(B: int, n: int) -> None:
    rng = np.random.default_rng(n + B)
    p = np.round(rng.beta(2.0, 3.0, size=n), 2)  # ties, also at the edges
    y = (rng.uniform(size=n) < p).astype(np.int64)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=B, strategy="quantile")
    edges = np.percentile(p, np.linspace(0, 1, B + 1) * 100)  # sklearn's expression
    t = _table(p, y, estimator=cp.FixedEdges(edges))
    np.testing.assert_array_equal(t.observed, prob_true)
    np.testing.assert_array_equal(t.mean_score, prob_pred)
    np.testing.assert_array_equal(t.lower, edges[:-1][t.bin])


@pytest.mark.parametrize(
    ("rule", "n", "counts_sklearn", "counts_calipers"),
    [
        # percentile positions 9 * 0.333... = 2.9999999999999996 and 5.999999999999999
        # (scikit-learn's q = linspace(0, 1, 4) * 100): edges just below order
        # statistics 3 and 6; Nixon's edges are statistics round(10/3) = 3 and
        # round(20/3) = 7 with [lo, hi) bins
        ("nixon", 10, [3, 3, 4], [3, 4, 3]),
        # positions 3.33 and 6.67; Kumar's array_split parts have 4, 4 and 3 rows
        ("kumar", 11, [4, 3, 4], [4, 4, 3]),
    ],
)
def test_equal_mass_rules_are_not_sklearn_quantile(
    rule: str, n: int, counts_sklearn: list[int], counts_calipers: list[int]
) -> None:
    p = np.linspace(0.05, 0.95, n)
    y = np.arange(n) % 2
    prob_true, _ = calibration_curve(y, p, n_bins=3, strategy="quantile")
    t_pct = _table(p, y, estimator=cp.FixedEdges(np.percentile(p, np.linspace(0, 1, 4) * 100)))
    assert t_pct["count"].tolist() == counts_sklearn
    np.testing.assert_array_equal(t_pct.observed, prob_true)
    t = _table(p, y, estimator=cp.EqualMass(3, rule=rule))  # type: ignore[arg-type]
    assert t["count"].tolist() == counts_calipers


# ----------------------------------------------------------------------------- by hand


def test_hand_computed_example() -> None:
    p = np.array([0.1, 0.3, 0.35, 0.8, 0.9, 0.95])
    y = np.array([0, 1, 0, 1, 1, 0])
    t = _table(p, y, n_bins=2)
    assert t.dtype.names == RELIABILITY_TABLE_COLUMNS
    assert t.bin.tolist() == [0, 1]
    assert t.lower.tolist() == [0.0, 0.5] and t.upper.tolist() == [0.5, 1.0]
    assert t["count"].tolist() == [3, 3] and t.weight.tolist() == [3.0, 3.0]
    np.testing.assert_allclose(t.mean_score, [0.75 / 3, 2.65 / 3], rtol=1e-15)
    np.testing.assert_allclose(t.observed, [1 / 3, 2 / 3], rtol=1e-15)
    np.testing.assert_allclose(t.gap, [1 / 3 - 0.25, 2 / 3 - 2.65 / 3], rtol=1e-14)
    assert t.gap[0] > 0 > t.gap[1]  # under-confident low bin, over-confident high bin
    assert t.n_effective.tolist() == [3.0, 3.0]
    assert not t.empty.any()
    assert _ece_from_table(t) == pytest.approx((1 / 12 + 0.65 / 3) / 2, rel=1e-14)


def test_edge_values_follow_the_edge_rule() -> None:
    p = np.array([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    y = np.array([0, 1, 0, 1, 0, 1])
    right = _table(p, y, n_bins=5, empty="keep")
    left = _table(p, y, estimator=cp.EqualWidth(5, edge_rule="left"), empty="keep")
    assert right["count"].tolist() == [2, 1, 1, 1, 1]  # (lo, hi], first bin closed
    assert left["count"].tolist() == [1, 1, 1, 1, 2]  # [lo, hi), last bin closed


def test_empty_bins_dropped_or_kept() -> None:
    p = np.array([0.05, 0.1, 0.92, 0.97])
    y = np.array([0, 0, 1, 1])
    dropped = _table(p, y, n_bins=4)
    kept = _table(p, y, n_bins=4, empty="keep")
    assert dropped.bin.tolist() == [0, 3]
    assert kept.bin.tolist() == [0, 1, 2, 3]
    assert kept.empty.tolist() == [False, True, True, False]
    assert kept["count"].tolist() == [2, 0, 0, 2] and kept.weight.tolist() == [2.0, 0, 0, 2.0]
    for c in ("mean_score", "observed", "gap", "ci_lower", "ci_upper"):
        assert np.isnan(kept[c][1:3]).all()
        np.testing.assert_array_equal(kept[c][[0, 3]], dropped[c])
    assert kept.lower.tolist() == [0.0, 0.25, 0.5, 0.75]


# ----------------------------------------------------------------------------- intervals


@pytest.mark.parametrize(
    ("interval", "method"), [("wilson", "wilson"), ("clopper_pearson", "exact")]
)
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_intervals_match_scipy_binomtest(interval: str, method: str, level: float) -> None:
    from scipy.stats import binomtest

    p, y = _binary_data(400, 5, 10)
    t = _table(p, y, n_bins=10, interval=interval, confidence_level=level)
    assert len(t) == 10
    for row in t:
        k = round(row.observed * row["count"])
        assert k == pytest.approx(row.observed * row["count"], abs=1e-9)
        ci = binomtest(k, int(row["count"])).proportion_ci(level, method=method)
        assert row.ci_lower == pytest.approx(ci.low, abs=1e-10)
        assert row.ci_upper == pytest.approx(ci.high, abs=1e-10)
        assert row.ci_lower <= row.observed <= row.ci_upper


def test_intervals_at_zero_and_one_and_none() -> None:
    p = np.array([0.05, 0.1, 0.92, 0.97])
    y = np.array([0, 0, 1, 1])
    for interval in ("wilson", "clopper_pearson"):
        t = _table(p, y, n_bins=4, interval=interval)
        assert t.ci_lower[0] == 0.0 and 0.0 < t.ci_upper[0] < 1.0
        assert t.ci_upper[1] == 1.0 and 0.0 < t.ci_lower[1] < 1.0
    t = _table(p, y, n_bins=4, interval=None)
    assert "ci_lower" not in t.dtype.names and "ci_upper" not in t.dtype.names


def test_reliability_diagram_draws_the_same_wilson_bars() -> None:
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    p, y = _binary_data(300, 7, 10)
    t = _table(p, y, n_bins=10)
    fig = cp.reliability_diagram(p, y, n_bins=10, intervals="wilson")
    try:
        ax = fig.axes[0]
        heights = {
            int(r.get_gid().rsplit("-", 1)[1]): r.get_height()
            for r in ax.patches
            if (r.get_gid() or "").startswith("reliability-bar-")
        }
        assert sorted(heights) == t.bin.tolist()
        np.testing.assert_allclose([heights[b] for b in t.bin], t.observed, rtol=1e-12)
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------- lenses


def test_top_label_rows() -> None:
    rng = np.random.default_rng(11)
    P = rng.dirichlet(np.ones(4) * 0.7, size=500)
    y = rng.integers(0, 4, size=500)
    t = _table(P, y, n_bins=10)
    assert set(t.slice.tolist()) == {"top-label"}
    conf = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(float)
    ids = np.clip(np.ceil(conf * 10).astype(int) - 1, 0, 9)  # (lo, hi], first bin closed
    cnt = np.bincount(ids, minlength=10)
    ne = cnt > 0
    assert t.bin.tolist() == np.flatnonzero(ne).tolist()
    assert t["count"].tolist() == cnt[ne].tolist()
    np.testing.assert_allclose(t.mean_score, np.bincount(ids, conf, 10)[ne] / cnt[ne], rtol=1e-12)
    np.testing.assert_allclose(t.observed, np.bincount(ids, correct, 10)[ne] / cnt[ne], rtol=1e-12)
    assert _ece_from_table(t) == pytest.approx(float(cp.ece(P, y, n_bins=10)), rel=1e-12)
    # the binary problem read top-label: max(p, 1 - p) against correctness
    p1 = P[:, 0] / P[:, :2].sum(1)
    y1 = (y % 2).astype(np.int64)
    tb = _table(p1, y1, lens="top_label", n_bins=5)
    assert set(tb.slice.tolist()) == {"top-label"} and (tb.mean_score >= 0.5).all()
    assert _ece_from_table(tb) == pytest.approx(
        float(cp.ece(p1, y1, lens="top_label", n_bins=5)), rel=1e-12
    )


def test_classwise_rows() -> None:
    rng = np.random.default_rng(12)
    P = rng.dirichlet(np.ones(3), size=300)
    y = rng.integers(0, 3, size=300)
    t = _table(P, y, lens="classwise", n_bins=8)
    assert list(dict.fromkeys(t.slice.tolist())) == ["class 0", "class 1", "class 2"]
    per_class = []
    for c in range(3):
        rows = t[t.slice == f"class {c}"]
        assert int(rows["count"].sum()) == 300
        ids = np.clip(np.ceil(P[:, c] * 8).astype(int) - 1, 0, 7)
        cnt = np.bincount(ids, minlength=8)
        ne = cnt > 0
        np.testing.assert_allclose(
            rows.observed, np.bincount(ids, (y == c).astype(float), 8)[ne] / cnt[ne], rtol=1e-12
        )
        e = _ece_from_table(rows)
        assert e == pytest.approx(
            float(cp.calibration_error(P, y, lens=cp.single_class(c), estimator=cp.EqualWidth(8))),
            rel=1e-12,
        )
        per_class.append(e)
    assert np.mean(per_class) == pytest.approx(
        float(cp.calibration_error(P, y, lens="classwise", estimator=cp.EqualWidth(8))), rel=1e-12
    )


def test_vector_lenses_are_refused() -> None:
    P = np.array([[0.7, 0.2, 0.1], [0.3, 0.6, 0.1]])
    with pytest.raises(cp.CalibrationInputError, match="1-D scores"):
        cp.reliability_table(P, [0, 1], lens="canonical")
    with pytest.raises(cp.CalibrationInputError, match="not both"):
        cp.reliability_table(P, [0, 1], n_bins=5, estimator=cp.EqualWidth(5))
    with pytest.raises(cp.CalibrationInputError, match="interval"):
        cp.reliability_table(P, [0, 1], interval="wald")  # type: ignore[arg-type]
    with pytest.raises(cp.CalibrationInputError, match="empty"):
        cp.reliability_table(P, [0, 1], empty="nan")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- weights


def test_integer_weights_equal_repeated_rows() -> None:
    rng = np.random.default_rng(13)
    p = rng.uniform(size=200)
    y = (rng.uniform(size=200) < p).astype(np.int64)
    w = rng.integers(1, 4, size=200)
    tw = _table(p, y, n_bins=10, sample_weight=w.astype(float))
    tr = _table(np.repeat(p, w), np.repeat(y, w), n_bins=10)
    assert tw.bin.tolist() == tr.bin.tolist()
    np.testing.assert_allclose(tw.weight, tr["count"], rtol=1e-12)
    np.testing.assert_allclose(tw.mean_score, tr.mean_score, rtol=1e-12)
    np.testing.assert_allclose(tw.observed, tr.observed, rtol=1e-12)
    ids = np.clip(np.ceil(p * 10).astype(int) - 1, 0, 9)
    assert tw["count"].tolist() == np.bincount(ids, minlength=10)[tw.bin].tolist()
    # Kish's effective size drives the interval
    sw = np.bincount(ids, w.astype(float), 10)[tw.bin]
    sw2 = np.bincount(ids, (w * w).astype(float), 10)[tw.bin]
    np.testing.assert_allclose(tw.n_effective, sw**2 / sw2, rtol=1e-12)
    lo, hi = cp.diagrams.wilson_interval(tw.observed, tw.n_effective)
    np.testing.assert_allclose(tw.ci_lower, lo, rtol=1e-12)
    np.testing.assert_allclose(tw.ci_upper, hi, rtol=1e-12)
    assert _ece_from_table(tw) == pytest.approx(
        float(cp.ece(p, y, n_bins=10, sample_weight=w)), rel=1e-12
    )


# ----------------------------------------------------------------------------- estimators


@pytest.mark.parametrize(
    "estimator",
    [
        cp.EqualWidth(7),
        cp.EqualWidth(7, edge_rule="left"),
        cp.EqualMass(6),
        cp.EqualMass(6, rule="kumar"),
        cp.FixedEdges([0.0, 0.3, 0.5, 0.9, 1.0]),
        cp.KDTree(0.2),
    ],
)
@pytest.mark.parametrize("lens", ["binary", "top_label"])
def test_weighted_mean_abs_gap_is_the_ece(estimator: Any, lens: str) -> None:
    rng = np.random.default_rng(14)
    p = rng.beta(2.0, 2.0, size=400)
    y = (rng.uniform(size=400) < p**1.2).astype(np.int64)
    w = rng.uniform(0.5, 2.0, size=400)
    for sw in (None, w):
        t = _table(p, y, lens=lens, estimator=estimator, sample_weight=sw)
        ce = float(cp.calibration_error(p, y, lens=lens, estimator=estimator, sample_weight=sw))
        assert _ece_from_table(t) == pytest.approx(ce, rel=1e-12)
        assert ((t.lower <= t.mean_score + 1e-12) & (t.mean_score <= t.upper + 1e-12)).all()


def test_data_driven_edges() -> None:
    rng = np.random.default_rng(15)
    p = rng.uniform(size=90)
    y = (rng.uniform(size=90) < p).astype(np.int64)
    em = cp.EqualMass(3)
    t = _table(p, y, estimator=em)
    upper = em.edges(p)
    np.testing.assert_array_equal(t.upper[:3], upper[:3])
    assert t.lower[0] == 0.0 and t.lower[1:3].tolist() == upper[:2].tolist()
    kd = cp.KDTree(0.3)
    t = _table(p, y, estimator=kd)
    ids, _ = kd.assign(p, None)
    for row in t:
        members = p[ids == row.bin]
        assert row.lower == members.min() and row.upper == members.max()


# ----------------------------------------------------------------------------- containers


def test_dataframe_and_record_array_hold_the_same_numbers() -> None:
    pd = pytest.importorskip("pandas")
    P = np.array([[0.7, 0.2, 0.1], [0.3, 0.6, 0.1], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1]])
    df = cp.reliability_table(P, [0, 1, 1, 2], lens="classwise", n_bins=5)
    assert isinstance(df, pd.DataFrame)
    assert tuple(df.columns) == RELIABILITY_TABLE_COLUMNS
    assert df.attrs["interval"] == "wilson" and df.attrs["confidence_level"] == 0.95
    rec = _table(P, [0, 1, 1, 2], lens="classwise", n_bins=5)
    for c in RELIABILITY_TABLE_COLUMNS:
        assert df[c].tolist() == rec[c].tolist()
    assert df.groupby("slice")["count"].sum().tolist() == [4, 4, 4]


def test_without_pandas_a_record_array(monkeypatch: pytest.MonkeyPatch) -> None:
    p = np.array([0.1, 0.3, 0.35, 0.8, 0.9, 0.95])
    y = np.array([0, 1, 0, 1, 1, 0])
    expected = _table(p, y, n_bins=3, empty="keep")
    real_import = builtins.__import__

    def no_pandas(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    t = cp.reliability_table(p, y, n_bins=3, empty="keep")
    assert isinstance(t, np.recarray)
    assert t.dtype.names == RELIABILITY_TABLE_COLUMNS
    for c in RELIABILITY_TABLE_COLUMNS:
        np.testing.assert_array_equal(t[c], expected[c])
    with pytest.raises(ImportError, match="pandas"):
        cp.reliability_table(p, y, as_frame=True)


def test_string_labels_with_classes() -> None:
    p = np.array([0.1, 0.3, 0.35, 0.8, 0.9, 0.95])
    y = np.array(["no", "yes", "no", "yes", "yes", "no"])
    t = _table(p, y, n_bins=2, classes=["no", "yes"])
    np.testing.assert_allclose(t.observed, [1 / 3, 2 / 3])


def test_torch_input_gives_the_numpy_table() -> None:
    torch = pytest.importorskip("torch")
    p, y = _binary_data(300, 9, 10)
    t_np = _table(p, y, n_bins=10)
    t_t = _table(torch.as_tensor(p), torch.as_tensor(y), n_bins=10)
    for c in RELIABILITY_TABLE_COLUMNS:
        if c == "slice":
            assert t_t[c].tolist() == t_np[c].tolist()
        else:
            np.testing.assert_allclose(t_t[c], t_np[c], rtol=1e-12)
