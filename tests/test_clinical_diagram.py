"""The clinical calibration diagram draws the numbers of the calibration hierarchy.

Every artist is read back (the curve, its band, the belt, the risk groups and their
intervals, the spikes of the risk distribution, the text box) and compared with
:func:`calipers.clinical.calibration_hierarchy` of the same predictions and with
quantities computed here independently (the Wilson interval from its formula, the
spike counts by a loop over the rows).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calipers.clinical import calibration_hierarchy
from calipers.validation import CalibrationInputError

pytest.importorskip("matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from calipers.diagrams import (  # noqa: E402
    clinical_calibration_diagram,
    clinical_calibration_diagram_data,
    clinical_note,
)


def _overfit(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Risks twice as extreme as the truth (an over-fitted model: slope about 0.5)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(np.int64)
    return 1 / (1 + np.exp(-2 * z)), y


def _by_gid(ax: Any, gid: str) -> list[Any]:
    return [a for a in [*ax.lines, *ax.collections] if a.get_gid() == gid]


def _wilson(p: np.ndarray, n: np.ndarray, z: float = 1.959963984540054) -> tuple[Any, Any]:
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_curve_band_groups_and_spikes_are_the_hierarchys_numbers() -> None:
    p, y = _overfit()
    h = calibration_hierarchy(p, y)
    fig = clinical_calibration_diagram(p, y)
    ax = fig.axes[0]
    (curve,) = _by_gid(ax, "flexible-curve")
    np.testing.assert_array_equal(curve.get_xdata(), np.asarray(h.curve.grid, float))
    np.testing.assert_array_equal(curve.get_ydata(), np.asarray(h.curve.estimate, float))
    (band,) = _by_gid(ax, "curve-band")
    verts = {tuple(v) for v in band.get_paths()[0].vertices.tolist()}
    for g, lo, hi in zip(h.curve.grid, h.curve.lower, h.curve.upper, strict=True):
        assert (float(g), float(lo)) in verts and (float(g), float(hi)) in verts
    # the risk groups: the Hosmer-Lemeshow table of the hierarchy (without one, ten
    # groups of consecutive sorted risks, formed here)
    hl = h.hosmer_lemeshow
    if hl is not None:
        size = np.asarray(hl.group_sizes, float)
        risk = np.asarray(hl.mean_risk, float)
        obs = np.asarray(hl.observed_events, float) / size
    else:
        parts = np.array_split(np.argsort(p, kind="stable"), 10)
        size = np.array([len(i) for i in parts], float)
        risk = np.array([p[i].mean() for i in parts])
        obs = np.array([y[i].mean() for i in parts])
    (groups,) = _by_gid(ax, "groups")
    np.testing.assert_allclose(groups.get_xdata(), risk, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(groups.get_ydata(), obs, rtol=1e-12, atol=1e-15)
    # ... which hold every row once: sizes, risks and events add up to the data's
    assert size.sum() == len(p)
    assert np.isclose(np.dot(size, groups.get_xdata()), p.sum(), rtol=1e-12)
    assert np.isclose(np.dot(size, groups.get_ydata()), y.sum(), rtol=1e-12)
    # their intervals: Wilson's formula, written here
    (bars,) = _by_gid(ax, "group-intervals")
    segs = np.array(bars.get_segments())
    lo, hi = _wilson(obs, size)
    np.testing.assert_allclose(segs[:, 0, 1], lo, atol=1e-12)
    np.testing.assert_allclose(segs[:, 1, 1], hi, atol=1e-12)
    # the spikes: events up, non-events down, counted here row by row in 100 bins
    ev, ne = np.zeros(100), np.zeros(100)
    for pi, yi in zip(p, y, strict=True):
        b = min(int(pi * 100), 99)
        (ev if yi == 1 else ne)[b] += 1
    (up,) = _by_gid(ax, "events")
    (down,) = _by_gid(ax, "non-events")
    up_len = np.array([s[1][1] - s[0][1] for s in up.get_segments()])
    down_len = np.array([s[1][1] - s[0][1] for s in down.get_segments()])
    scale = 0.08 / max(ev.max(), ne.max())
    np.testing.assert_allclose(up_len, scale * ev[ev > 0], rtol=1e-12)
    np.testing.assert_allclose(down_len, scale * ne[ne > 0], rtol=1e-12)
    assert all(s[0][1] == -0.1 for s in up.get_segments())  # from the baseline, up
    assert all(s[1][1] == -0.1 for s in down.get_segments())  # down to it
    plt.close(fig)


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text)]


def test_the_text_box_holds_the_hierarchys_numbers() -> None:
    p, y = _overfit(seed=1)
    h = calibration_hierarchy(p, y)
    fig = clinical_calibration_diagram(p, y)
    box = fig.axes[1].artists[0]  # beside the plot
    assert box.get_gid() == "metrics"
    _, ax = plt.subplots()
    assert clinical_calibration_diagram(p, y, ax=ax) is ax.figure
    inside = ax.artists[0]  # in the plot given
    assert inside.get_title().get_text() == box.get_title().get_text()
    plt.close(ax.figure)
    lines = box.get_title().get_text().splitlines()
    assert lines == clinical_note(h).splitlines()
    assert _numbers(lines[0]) == [len(p), y.sum()]
    w = h.weak
    for line, (v, (lo, hi)) in zip(
        lines[1:3],
        [(w.intercept, w.intercept_interval), (w.slope, w.slope_interval)],
        strict=True,
    ):
        got = _numbers(line)
        assert got == pytest.approx([v, lo, hi], abs=0.005 + 1e-12)
    assert _numbers(lines[3]) == pytest.approx([h.c_statistic], abs=0.0005 + 1e-12)
    assert _numbers(lines[4]) == pytest.approx([h.brier], abs=0.0005 + 1e-12)
    ici, e90, emax = (_numbers(lines[5])[0], _numbers(lines[5])[2], _numbers(lines[5])[3])
    assert [ici, e90, emax] == pytest.approx([h.index.ici, h.index.e90, h.index.emax], abs=5e-4)
    # an over-fitted model: the slope read in the box is well below 1
    assert _numbers(lines[2])[0] < 0.7
    plt.close(fig)


def test_the_belt_is_drawn_at_each_level_in_place_of_the_band() -> None:
    p, y = _overfit(n=500, seed=2)
    h = calibration_hierarchy(p, y, belt=True)
    if h.belt is None:
        pytest.skip("calibration_hierarchy has no belt yet")
    fig = clinical_calibration_diagram(p, y, hierarchy=h, show_belt=True)
    ax = fig.axes[0]
    assert not _by_gid(ax, "curve-band")
    belt = h.belt
    for j, level in enumerate(belt.confidence_levels):
        (poly,) = _by_gid(ax, f"belt-{level:g}")
        verts = {tuple(v) for v in poly.get_paths()[0].vertices.tolist()}
        for g, lo, hi in zip(belt.grid, belt.lower[j], belt.upper[j], strict=True):
            assert (float(g), float(lo)) in verts and (float(g), float(hi)) in verts
    plt.close(fig)


def test_given_hierarchy_is_drawn_as_given_and_checked() -> None:
    p, y = _overfit(n=300, seed=3)
    h = calibration_hierarchy(p, y, curve="rcs")
    d = clinical_calibration_diagram_data(p, y, hierarchy=h)
    assert d.hierarchy is h
    with pytest.raises(CalibrationInputError, match="300"):
        clinical_calibration_diagram_data(p[:200], y[:200], hierarchy=h)
    with pytest.raises(CalibrationInputError, match="belt=True"):
        clinical_calibration_diagram_data(p, y, hierarchy=h, show_belt=True)


def test_multiclass_is_one_vs_rest_on_the_column_asked() -> None:
    rng = np.random.default_rng(4)
    z = rng.normal(size=(400, 3)) * 1.5
    P = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in P])
    d = clinical_calibration_diagram_data(P, y, class_index=2)
    ref = calibration_hierarchy(P[:, 2], (y == 2).astype(int))
    assert d.class_index == 2
    assert d.hierarchy.to_dict() == ref.to_dict()
    assert d.spike_events.sum() == (y == 2).sum()
    with pytest.raises(CalibrationInputError, match="class_index"):
        clinical_calibration_diagram_data(P, y)
    with pytest.raises(CalibrationInputError, match="class_index"):
        clinical_calibration_diagram_data(P, y, class_index=3)
    # two columns: the positive class by default, as 1-D risks
    p2 = np.c_[1 - P[:, 0], P[:, 0]]
    y2 = (y == 0).astype(int)
    a = clinical_calibration_diagram_data(p2, y2)
    b = clinical_calibration_diagram_data(P[:, 0], y2)
    assert a.hierarchy.to_dict() == b.hierarchy.to_dict()


def test_cli_draws_the_clinical_diagram_of_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from calipers.cli import main

    p, y = _overfit(n=300, seed=5)
    f = tmp_path / "risks.csv"
    np.savetxt(f, np.c_[p, y], delimiter=",", header="probs,labels", comments="", fmt="%.17g")
    out = tmp_path / "clinical.png"
    assert main(["diagram", "clinical", str(f), "--out", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")
    # --class-index belongs to the clinical diagram: refused elsewhere, in one line
    assert main(["diagram", "reliability", str(f), "--class-index", "1"]) == 3
    err = capsys.readouterr().err
    assert "--class-index is for the clinical diagram" in err and "Traceback" not in err
