"""Sweeps over the test-set size and over estimator settings (calipers.inference.sweeps), their figure and CLI.

Oracles: the metric functions called directly on the same rows or with the same
setting, :func:`calipers.confidence_interval` called directly with the same
seed, :func:`calipers.recalibration_improvement` (Gruber & Buettner 2022, Prop.
4.5) for the improvement of the root Brier score, and the rows each metric
call saw (recorded by a metric of our own) for the nesting of the subsamples.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.cli import main
from calipers.inference.sweeps import default_sizes, metric_name
from calipers.validation import CalibrationInputError


def _binary(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, size=n)
    y = (rng.uniform(size=n) < p**2).astype(np.int64)  # over-confident
    return p, y


def _logits(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3.0
    e = np.exp(z / 2.5 - (z / 2.5).max(axis=1, keepdims=True))  # truth: temperature 2.5
    q = e / e.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in q])
    return z, y


# --------------------------------------------------------------------------- test-set size


class _Recorder:
    """A metric that records the rows it was called with (by their unique probabilities)."""

    __name__ = "recorder"

    def __init__(self) -> None:
        self.calls: list[np.ndarray] = []

    def __call__(self, P: Any, labels: Any = None, **kw: Any) -> float:
        self.calls.append(np.asarray(P.probs).copy())
        return float(np.mean(P.probs))


def test_subsamples_are_nested_prefixes_without_repeats() -> None:
    p, y = _binary(300, 0)
    assert np.unique(p).size == p.size
    rec = _Recorder()
    sizes = [10, 40, 150, 300]
    s = cp.test_size_sweep(rec, p, y, sizes=sizes, n_repeats=4, seed=3)
    assert len(rec.calls) == 4 * len(sizes)
    firsts = []
    for r in range(4):
        seen = rec.calls[r * len(sizes) : (r + 1) * len(sizes)]
        for m, rows in zip(sizes, seen, strict=True):
            assert rows.size == m and np.unique(rows).size == m  # without replacement
            assert np.isin(rows, p).all()
        for small, large in zip(seen, seen[1:], strict=False):
            assert np.isin(small, large).all()  # nested: the size-m rows lie in the size-m' rows
        firsts.append(frozenset(seen[0].tolist()))
    assert len(set(firsts)) == 4  # each repetition draws its own rows
    # the recorded values are the metric of those rows
    assert s.values[0, 1, 0] == pytest.approx(np.mean(rec.calls[len(sizes)]))


def test_full_size_equals_the_metric_on_all_rows() -> None:
    p, y = _binary(400, 1)
    s = cp.test_size_sweep([cp.ece, cp.brier, cp.rbs], p, y, sizes=[50, 400], n_repeats=3)
    for j, f in enumerate((cp.ece, cp.brier, cp.rbs)):
        np.testing.assert_allclose(s.values[j, :, -1], f(p, y), rtol=1e-12, atol=1e-15)
    assert np.all(s.std[:, -1] < 1e-12)  # every repetition holds all rows at full size
    assert s.metric_names == ("ece", "brier", "rbs")


def test_subsample_value_equals_the_metric_on_those_rows() -> None:
    p, y = _binary(200, 2)
    rec = _Recorder()
    s = cp.test_size_sweep({"rec": rec, "ece": cp.ece}, p, y, sizes=[30, 90], n_repeats=2, seed=5)
    rows = rec.calls[1]  # repetition 0, size 90
    mask = np.isin(p, rows)
    assert s.values[1, 0, 1] == pytest.approx(cp.ece(p[mask], y[mask]), abs=1e-15)


def test_mean_of_brier_over_subsamples_is_unbiased() -> None:
    # the mean Brier score is an average of per-row scores: its mean over uniform
    # subsamples is the full-data value (up to Monte Carlo error)
    p, y = _binary(500, 4)
    s = cp.test_size_sweep(cp.brier, p, y, sizes=[25, 500], n_repeats=400, seed=0)
    full = cp.brier(p, y)
    assert abs(s.mean[0, 0] - full) < 4 * s.standard_error[0, 0]


def test_improvement_matches_independent_calls() -> None:
    z_cal, y_cal = _logits(600, 4, 10)
    z, y = _logits(500, 4, 11)
    ts = cp.TemperatureScaling().fit(z_cal, y_cal, logits=True)
    after = ts.predict_proba(z, logits=True)
    s = cp.test_size_sweep(
        [cp.ece, cp.rbs], z, y, logits=True, sizes=[100, 500], n_repeats=2, recalibrator=ts
    )
    assert s.improvement is not None and s.recalibrator_name == "TemperatureScaling"
    before = cp.ece(z, y, logits=True)
    np.testing.assert_allclose(s.improvement[0, :, -1], before - cp.ece(after, y), atol=1e-12)
    # Gruber & Buettner (2022) Prop. 4.5: the change of RBS; our sign is before - after
    expected = -cp.recalibration_improvement(
        cp.check_predictions(z, y, logits=True).probs, after, y, root=True
    )
    np.testing.assert_allclose(s.improvement[1, :, -1], expected, atol=1e-12)
    rows = s.rows()
    assert {"improvement_mean", "improvement_std"} <= set(rows[0])


def test_default_sizes_follow_gruber_buettner() -> None:
    sizes = default_sizes(10000)
    assert sizes[0] == 100 and sizes[-1] == 10000 and sizes.size == 10
    ratios = sizes[1:] / sizes[:-1]
    np.testing.assert_allclose(ratios, 10 ** (2 / 9), rtol=0.01)  # equal steps in log scale
    small = default_sizes(40)
    assert small[-1] == 40 and np.all(np.diff(small) > 0)


def test_test_size_sweep_is_deterministic_by_seed() -> None:
    p, y = _binary(300, 6)
    a = cp.test_size_sweep([cp.ece], p, y, sizes=[30, 100], n_repeats=3, seed=7)
    b = cp.test_size_sweep([cp.ece], p, y, sizes=[30, 100], n_repeats=3, seed=7)
    c = cp.test_size_sweep([cp.ece], p, y, sizes=[30, 100], n_repeats=3, seed=8)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.array_equal(a.values, c.values)
    assert a.to_dict() == b.to_dict()
    assert json.loads(json.dumps(a.to_dict()))["values"] == a.values.tolist()


@pytest.mark.parametrize(
    ("sizes", "match"),
    [
        ([10, 301], r"sizes must lie in 1\.\.300.*\[301\]"),
        ([0, 10], r"sizes must lie in 1\.\.300.*\[0\]"),
        ([50, 20], "strictly increasing"),
        ([10.5], "integers"),
        ([], "non-empty"),
    ],
)
def test_bad_sizes_are_refused(sizes: list[Any], match: str) -> None:
    p, y = _binary(300, 0)
    with pytest.raises(CalibrationInputError, match=match):
        cp.test_size_sweep(cp.ece, p, y, sizes=sizes)


def test_bad_metrics_and_recalibrators_are_refused() -> None:
    p, y = _binary(100, 0)
    with pytest.raises(CalibrationInputError, match="metrics is empty"):
        cp.test_size_sweep([], p, y, sizes=[50])
    with pytest.raises(CalibrationInputError, match="two metrics are named 'ece'"):
        cp.test_size_sweep([cp.ece, cp.ece], p, y, sizes=[50])
    with pytest.raises(TypeError, match="not callable"):
        cp.test_size_sweep({"x": 3}, p, y, sizes=[50])
    with pytest.raises(CalibrationInputError, match="not fitted"):
        cp.test_size_sweep(cp.ece, p, y, sizes=[50], recalibrator=cp.PlattScaling())
    with pytest.raises(TypeError, match="predict_proba"):
        cp.test_size_sweep(cp.ece, p, y, sizes=[50], recalibrator=object())
    with pytest.raises(CalibrationInputError, match="returned a CalibrationSharpness"):
        cp.test_size_sweep(cp.calibration_sharpness, p, y, sizes=[50], n_repeats=1)


# --------------------------------------------------------------------------- parameters


def test_n_bins_sweep_equals_independent_calls() -> None:
    p, y = _binary(500, 3)
    values = [3, 10, 15, 40]
    s = cp.parameter_sweep(cp.ece, p, y, param="n_bins", values=values, interval=False)
    assert s.values == tuple(values) and s.low is None and s.n_resamples == 0
    for v, e in zip(values, s.estimates, strict=True):
        assert e == cp.ece(p, y, n_bins=v)
    rows = s.rows()
    assert [r["n_bins"] for r in rows] == values


def test_gamma_bandwidth_and_kernel_sweeps_equal_independent_calls() -> None:
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), size=300)
    y = np.array([rng.choice(3, p=row) for row in P])
    g = cp.parameter_sweep(cp.full_ece, P, y, param="gamma", values=[0.5, 0.1], interval=False)
    assert list(g.estimates) == [cp.full_ece(P, y, gamma=0.5), cp.full_ece(P, y, gamma=0.1)]
    b = cp.parameter_sweep(
        cp.confidence_calibration_error, P, y, param="bandwidth", values=[0.02, 0.2], interval=False
    )
    assert list(b.estimates) == [
        cp.confidence_calibration_error(P, y, bandwidth=0.02),
        cp.confidence_calibration_error(P, y, bandwidth=0.2),
    ]
    k = cp.parameter_sweep(
        cp.confidence_calibration_error,
        P,
        y,
        param="kernel",
        values=["gaussian", "epanechnikov"],
        interval=False,
        bandwidth=0.1,
    )
    assert list(k.estimates) == [
        cp.confidence_calibration_error(P, y, kernel="gaussian", bandwidth=0.1),
        cp.confidence_calibration_error(P, y, kernel="epanechnikov", bandwidth=0.1),
    ]
    assert k.to_dict()["values"] == ["gaussian", "epanechnikov"]


def test_interval_is_confidence_interval_with_the_same_seed() -> None:
    p, y = _binary(400, 8)
    s = cp.parameter_sweep(cp.ece, p, y, values=[5, 20], n_resamples=150, seed=4)
    for i, v in enumerate((5, 20)):
        ci = cp.confidence_interval(cp.ece, p, y, n_bins=v, n_resamples=150, seed=4)
        assert (s.low[i], s.high[i]) == pytest.approx((ci.low, ci.high), abs=1e-12)
        assert s.standard_error[i] == pytest.approx(ci.standard_error, abs=1e-12)
        assert s.estimates[i] == pytest.approx(ci.estimate, abs=1e-12)


def test_interval_contains_the_estimate_of_a_smooth_score() -> None:
    # the Brier score is a mean of per-row scores: its basic bootstrap interval is
    # (nearly) symmetric about the estimate, so it contains it
    p, y = _binary(400, 9)
    s = cp.parameter_sweep(
        cp.brier, p, y, param="reduction", values=["sum", "mean"], n_resamples=300
    )
    assert s.low is not None and s.high is not None
    assert np.all(s.low < s.estimates) and np.all(s.estimates < s.high)


def test_parameter_sweep_is_deterministic_by_seed() -> None:
    p, y = _binary(300, 2)
    a = cp.parameter_sweep(cp.ece, p, y, values=[5, 10], n_resamples=100, seed=1)
    b = cp.parameter_sweep(cp.ece, p, y, values=[5, 10], n_resamples=100, seed=1)
    c = cp.parameter_sweep(cp.ece, p, y, values=[5, 10], n_resamples=100, seed=2)
    assert a.to_dict() == b.to_dict()
    assert not np.array_equal(a.low, c.low)


def test_parameter_sweep_errors_name_the_parameters() -> None:
    p, y = _binary(100, 0)
    with pytest.raises(CalibrationInputError, match=r"ece has no parameter 'bandwidth'.*n_bins"):
        cp.parameter_sweep(cp.ece, p, y, param="bandwidth", values=[0.1])
    with pytest.raises(CalibrationInputError, match="values is empty"):
        cp.parameter_sweep(cp.ece, p, y, values=[])
    with pytest.raises(CalibrationInputError, match="swept parameter"):
        cp.parameter_sweep(cp.ece, p, y, values=[5], n_bins=3)
    with pytest.raises(CalibrationInputError, match=r"ece with n_bins=0"):
        cp.parameter_sweep(cp.ece, p, y, values=[0], interval=False)
    with pytest.raises(TypeError, match="callable"):
        cp.parameter_sweep("ece", p, y, values=[5])  # type: ignore[arg-type]


def test_metric_name() -> None:
    import functools

    assert metric_name(cp.ece) == "ece"
    assert metric_name(functools.partial(cp.ece, n_bins=100)) == "ece(n_bins=100)"


# --------------------------------------------------------------------------- figure


def test_sweep_diagram_draws_the_numbers() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    z_cal, y_cal = _logits(300, 3, 1)
    z, y = _logits(300, 3, 2)
    ts = cp.TemperatureScaling().fit(z_cal, y_cal, logits=True)
    s = cp.test_size_sweep(
        [cp.ece, cp.rbs], z, y, logits=True, sizes=[30, 100, 300], n_repeats=3, recalibrator=ts
    )
    fig = cp.sweep_diagram(s)
    ax0, ax1 = fig.axes[:2]
    assert ax0.get_xscale() == "log"
    line = next(li for li in ax0.get_lines() if li.get_gid() == "sweep-size-line-1")
    np.testing.assert_allclose(line.get_ydata(), s.mean[1])
    imp = next(li for li in ax1.get_lines() if li.get_gid() == "sweep-improvement-line-0")
    assert s.improvement_mean is not None
    np.testing.assert_allclose(imp.get_ydata(), s.improvement_mean[0])
    plt.close(fig)
    fig = cp.sweep_diagram(s, kind="values")
    assert len(fig.axes) == 1
    plt.close(fig)
    fig, ax = plt.subplots()
    with pytest.raises(CalibrationInputError, match="needs 2 Axes"):
        cp.sweep_diagram(s, ax=ax)
    plt.close(fig)

    p, y2 = _binary(200, 0)
    k = cp.parameter_sweep(
        cp.confidence_calibration_error,
        p,
        y2,
        param="kernel",
        values=["gaussian", "epanechnikov"],
        n_resamples=50,
    )
    fig = cp.sweep_diagram(k)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["gaussian", "epanechnikov"]
    plt.close(fig)
    nb = cp.parameter_sweep(cp.ece, p, y2, values=[5, 50], interval=False)
    with pytest.raises(CalibrationInputError, match="same parameter"):
        cp.sweep_diagram([k, nb])
    plt.close("all")


# --------------------------------------------------------------------------- CLI


def _files(tmp_path: Path) -> tuple[Path, Path]:
    z, y = _logits(240, 3, 20)
    zc, yc = _logits(240, 3, 21)
    test, cal = tmp_path / "test.npz", tmp_path / "val.npz"
    np.savez(test, logits=z, labels=y)
    np.savez(cal, logits=zc, labels=yc)
    return test, cal


def test_cli_sweep_size_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    test, cal = _files(tmp_path)
    out = tmp_path / "out"
    argv = ["sweep", str(test), "--over", "size", "--metrics", "ece,rbs", "--sizes", "40,240"]
    argv += ["--repeats", "3", "--calibration", str(cal), "--recalibrate", "ts"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [
        ".calipers-report",
        "sweep.csv",
        "sweep.json",
        "sweep.png",
    ]
    assert (out / "sweep.csv").read_text() == printed
    rows = list(csv.DictReader(io.StringIO(printed)))
    z, y = np.load(test)["logits"], np.load(test)["labels"]
    full = [r for r in rows if r["size"] == "240"]
    assert float(full[0]["mean"]) == pytest.approx(cp.ece(z, y, logits=True), abs=1e-12)
    assert float(full[1]["mean"]) == pytest.approx(cp.rbs(z, y, logits=True), abs=1e-12)
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["over"] == "size" and doc["recalibrator"] == "TemperatureScaling"
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_sweep_parameter_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    test, _ = _files(tmp_path)
    out = tmp_path / "bins"
    argv = ["sweep", str(test), "--over", "n_bins", "--metrics", "ece", "--values", "5,12"]
    assert main([*argv, "--resamples", "40", "--out", str(out), "--format", "svg"]) == 0
    capsys.readouterr()
    doc = json.loads((out / "sweep.json").read_text())
    (sw,) = doc["sweeps"]
    z, y = np.load(test)["logits"], np.load(test)["labels"]
    assert sw["values"] == [5, 12] and sw["metric"] == "ece"
    assert sw["estimates"] == [
        cp.ece(z, y, logits=True, n_bins=5),
        cp.ece(z, y, logits=True, n_bins=12),
    ]
    assert all(lo <= hi for lo, hi in zip(sw["low"], sw["high"], strict=True))
    assert (out / "sweep.svg").read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metrics", "nope"], "unknown metric 'nope'"),
        (["--recalibrate", "ts"], "--recalibrate needs --calibration"),
        (["--over", "n_bins", "--values", "a,b"], "must be integers"),
        (["--over", "gamma", "--metrics", "ece", "--no-intervals"], "ece has no parameter 'gamma'"),
        (["--sizes", "10,999"], "sizes must lie in 1..240"),
    ],
)
def test_cli_sweep_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    test, _ = _files(tmp_path)
    assert main(["sweep", str(test), "--repeats", "1", *extra]) == 3
    assert message in capsys.readouterr().err
