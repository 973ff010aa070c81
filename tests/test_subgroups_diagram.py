"""The reliability diagram per group (calipers.diagrams.group_reliability_diagram)."""

from __future__ import annotations

import numpy as np
import pytest

import calipers as cp
from calipers.subgroups import calibration_by_group
from calipers.validation import CalibrationInputError

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg", force=True)
import matplotlib.pyplot as plt  # noqa: E402

from calipers.diagrams import group_reliability_diagram  # noqa: E402


def _data(n: int = 900) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=n)
    g = rng.choice(np.array(["a", "b", "c"]), size=n)
    y = (rng.uniform(size=n) < np.where(g == "c", p**2, p)).astype(int)
    return p, y, g


def test_each_curve_is_the_groups_reliability_table() -> None:
    p, y, g = _data()
    fig = group_reliability_diagram(p, y, groups=g, n_bins=8, n_null=50)
    lines = [ln for ln in fig.axes[0].lines if str(ln.get_gid()).startswith("group-")]
    assert [ln.get_label().split(" ")[0] for ln in lines] == ["a", "b", "c"]
    for ln, name in zip(lines, "abc", strict=True):
        m = g == name
        t = cp.reliability_table(p[m], y[m], n_bins=8, as_frame=False)
        np.testing.assert_array_equal(ln.get_xdata(), t.mean_score)
        np.testing.assert_array_equal(ln.get_ydata(), t.observed)
        assert f"n = {m.sum()}" in ln.get_label()
        assert f"ece {cp.ece(p[m], y[m]):.3f}" in ln.get_label()
    plt.close(fig)


def test_from_a_result_in_a_grid_and_max_groups() -> None:
    p, y, g = _data()
    r = calibration_by_group(p, y, groups=g, n_resamples=0, n_null=0)
    fig = group_reliability_diagram(r, layout="grid", max_groups=2)
    drawn = [ax for ax in fig.axes if ax.get_visible() and ax.get_gid() != "unused"]
    assert len(drawn) == 2
    assert "noise" not in drawn[0].lines[-1].get_label()  # no noise levels were computed
    plt.close(fig)
    fig, ax = plt.subplots()
    assert group_reliability_diagram(r, ax=ax, interval=None) is fig
    plt.close(fig)


def test_refusals() -> None:
    p, y, g = _data()
    r = calibration_by_group(p, y, groups=g, n_resamples=0, n_null=0)
    with pytest.raises(CalibrationInputError, match="give no labels"):
        group_reliability_diagram(r, y)
    with pytest.raises(CalibrationInputError, match="layout must be"):
        group_reliability_diagram(r, layout="wide")
    with pytest.raises(CalibrationInputError, match="one value per row"):
        group_reliability_diagram(p, y, groups=g[:10])
