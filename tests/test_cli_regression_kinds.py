"""``calipers table``, ``report`` and ``diagram`` on files of quantiles, intervals and samples.

Every number of the table is compared with a value computed here from the arrays
written (hand formulas: the pinball loss, the interval score of Gneiting & Raftery
2007 eq. 43, coverage, width, the standard ensemble CRPS
``mean|X - y| - mean|X - X'| / 2``, the fraction of targets at or below each
quantile), or with the library function called directly on those arrays where no
short formula exists (PIT KS, miscalibration area, ENCE); never with what the
command printed before. Refusals are one line on standard error with exit status 3.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from calipers.cli import main
from calipers.regression import (
    QuantileSet,
    SampleEnsemble,
    check_predictive,
    interval_coverage_error,
    miscalibration_area,
    pit_histogram,
    variance_calibration,
)

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:  # the .parquet tests need pyarrow
    pa = pq = None  # type: ignore[assignment]

needs_pyarrow = pytest.mark.skipif(pa is None, reason="pyarrow is not installed")

RNG = np.random.default_rng(20261127)
N = 120
MU = RNG.normal(size=N)
Y = MU + 1.4 * RNG.normal(size=N)
W = RNG.integers(1, 4, size=N).astype(np.float64)
LEVELS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
Z = np.array(
    [-1.6448536269514722, -0.6744897501960817, 0.0, 0.6744897501960817, 1.6448536269514722]
)
Q = MU[:, None] + Z[None, :]
K = 12
S = MU[:, None] + RNG.normal(size=(N, K))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _csv(path: Path, cols: dict[str, np.ndarray]) -> Path:
    lines = [",".join(cols)] + [
        ",".join(repr(float(v)) for v in row) for row in zip(*cols.values(), strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write(path: Path, cols: dict[str, np.ndarray]) -> Path:
    if path.suffix == ".csv":
        return _csv(path, cols)
    if path.suffix == ".npz":
        np.savez(path, **cols)
    else:
        pq.write_table(
            pa.table({k: pa.array(list(v) if v.ndim == 2 else v) for k, v in cols.items()}), path
        )
    return path


def _wmean(x: np.ndarray, w: np.ndarray | None) -> float:
    return float(np.average(x, weights=w))


def _pinball(q: np.ndarray, y: np.ndarray, tau: float) -> np.ndarray:
    u = y - q
    return u * (tau - (u < 0))


def _table(files: list[Path], capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    code, out, err = run(["table", *map(str, files), "--format", "json", *extra], capsys)
    assert code == 0, err
    return json.loads(out)


FORMATS = [
    pytest.param(".csv", id="csv"),
    pytest.param(".npz", id="npz"),
    pytest.param(".parquet", id="parquet", marks=needs_pyarrow),
]


# ------------------------------------------------------------------ quantiles


@pytest.mark.parametrize("suffix", FORMATS)
def test_table_of_quantile_columns(
    tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ["q5", "q25", "q50", "q75", "q95"]
    f = _write(
        tmp_path / f"quant{suffix}",
        {**{n: Q[:, j] for j, n in enumerate(names)}, "y": Y, "weight": W},
    )
    doc = _table([f], capsys)
    assert doc["columns"] == [
        "model", "n", "crps", "pinball", "pit_ks", "interval_ce", "quantile_ce", "miscal_area",
    ]  # fmt: skip
    (row,) = doc["models"]
    pin = [_wmean(_pinball(Q[:, j], Y, t), W) for j, t in enumerate(LEVELS)]
    assert row["pinball"] == pytest.approx(np.mean(pin), rel=1e-12)
    assert row["crps"] == pytest.approx(2 * np.mean(pin), rel=1e-12)  # CRPS_Q = (2/m) sum rho
    below = [_wmean((Y <= Q[:, j]).astype(float), W) for j in range(5)]
    assert row["quantile_ce"] == pytest.approx(np.mean(np.abs(np.array(below) - LEVELS)), abs=1e-14)
    P = check_predictive(QuantileSet(LEVELS, Q), targets=Y, sample_weight=W)
    assert row["pit_ks"] == pytest.approx(pit_histogram(P).ks_statistic, rel=1e-12)
    assert row["interval_ce"] == pytest.approx(interval_coverage_error(P), rel=1e-12)
    assert row["miscal_area"] == pytest.approx(miscalibration_area(P), rel=1e-12)


def test_quantiles_array_with_levels_in_npz(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "qa.npz"
    np.savez(f, quantiles=Q, levels=LEVELS, y=Y)
    (row,) = _table([f], capsys)["models"]
    pin = [np.mean(_pinball(Q[:, j], Y, t)) for j, t in enumerate(LEVELS)]
    assert row["pinball"] == pytest.approx(np.mean(pin), rel=1e-12)


def test_crossing_quantiles_refused_with_row_and_levels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = Q.copy()
    bad[7, [1, 3]] = bad[7, [3, 1]]  # row 7: the 0.25- and 0.75-quantiles swapped
    f = _csv(tmp_path / "x.csv", {**{f"q{t}": bad[:, j] for j, t in enumerate(LEVELS)}, "y": Y})
    code, out, err = run(["table", str(f)], capsys)
    assert code == 3 and out == ""
    line = err.strip().splitlines()[-1]
    assert str(f) in line and "row 7" in line and "level 0.5" in line
    assert "rows are counted from 0" in line and "--crossing sort" in line
    # --crossing sort rearranges each row (Chernozhukov et al. 2010): the sorted quantiles
    doc = _table([f], capsys, "--crossing", "sort")
    pin = [np.mean(_pinball(np.sort(bad, axis=1)[:, j], Y, t)) for j, t in enumerate(LEVELS)]
    assert doc["models"][0]["pinball"] == pytest.approx(np.mean(pin), rel=1e-12)


@pytest.mark.parametrize(
    ("header", "match"),
    [
        (["q0.05", "q1.5", "y"], "column 'q1.5' gives level 1.5, not a quantile level"),
        (["q0.5", "q50", "y"], "both give the quantile level 0.5"),
        (["sample_0", "sample_1", "sample_3", "y"], r"are ragged \(number 2 is missing\)"),
        (["lower", "upper", "y"], "do not say their level; give it with interval_level="),
        (["q0.1", "q0.9", "sample_0", "sample_1", "y"], "ambiguous: its columns could hold"),
    ],
)
def test_refusals_are_one_line(
    tmp_path: Path, header: list[str], match: str, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _csv(tmp_path / "bad.csv", {h: S[:, j] for j, h in enumerate(header)})
    for command in ("table", "report"):
        code, out, err = run([command, str(f)], capsys)
        assert code == 3 and out == "", err
        assert len(err.strip().splitlines()) == 1 and str(f) in err
        assert re.search(match, err), err


def test_quantile_level_option_out_of_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _csv(tmp_path / "e.csv", {"lo": Q[:, 0], "hi": Q[:, 4], "y": Y})
    code, _, err = run(
        ["table", str(f), "--quantile-columns", "lo,hi", "--quantile-levels", "0.05,1"], capsys
    )
    assert code == 3 and "level 1, not a quantile level strictly inside (0, 1)" in err
    doc = _table([f], capsys, "--quantile-columns", "lo,hi", "--quantile-levels", "0.05,0.95")
    pin = [np.mean(_pinball(Q[:, j], Y, t)) for j, t in ((0, 0.05), (4, 0.95))]
    assert doc["models"][0]["pinball"] == pytest.approx(np.mean(pin), rel=1e-12)


# ------------------------------------------------------------------ intervals


def test_table_of_an_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lo, hi = Q[:, 0], Q[:, 4]
    f = _csv(tmp_path / "iv.csv", {"lower": lo, "upper": hi, "y": Y, "sample_weight": W})
    doc = _table([f], capsys, "--interval-level", "0.9")
    assert doc["columns"] == ["model", "n", "pinball", "interval_score", "coverage", "width"]
    (row,) = doc["models"]
    alpha = 0.1
    score = (hi - lo) + 2 / alpha * (lo - Y) * (Y < lo) + 2 / alpha * (Y - hi) * (Y > hi)
    assert row["interval_score"] == pytest.approx(_wmean(score, W), rel=1e-12)
    assert row["coverage"] == pytest.approx(_wmean((lo <= Y) & (Y <= hi), W), abs=1e-15)
    assert row["width"] == pytest.approx(_wmean(hi - lo, W), rel=1e-12)
    pin = (_wmean(_pinball(lo, Y, 0.05), W) + _wmean(_pinball(hi, Y, 0.95), W)) / 2
    assert row["pinball"] == pytest.approx(pin, rel=1e-12)
    # the interval score is the pinball form scaled: IS = (2 / alpha) * (rho_0.05 + rho_0.95)
    assert row["interval_score"] == pytest.approx(2 / alpha * 2 * pin, rel=1e-12)


# ------------------------------------------------------------------ samples


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.parametrize("layout", ["columns", "array"])
def test_table_of_samples(
    tmp_path: Path, suffix: str, layout: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if layout == "array" and suffix == ".csv":
        pytest.skip("a CSV file holds columns")
    cols = {f"member_{j}": S[:, j] for j in range(K)} if layout == "columns" else {"samples": S}
    f = _write(tmp_path / f"ens{suffix}", {**cols, "y_true": Y})
    doc = _table([f], capsys, "--bins", "6")
    assert doc["columns"] == [
        "model", "n", "crps", "pit_ks", "interval_ce", "miscal_area", "ence",
        "mse_over_avg_var", "se_var_ratio",
    ]  # fmt: skip
    (row,) = doc["models"]
    # the standard ensemble CRPS (Gneiting & Raftery 2007, eq. 21 with the empirical CDF)
    spread = np.abs(S[:, :, None] - S[:, None, :]).mean(axis=(1, 2))
    crps = np.abs(S - Y[:, None]).mean(axis=1) - spread / 2
    assert row["crps"] == pytest.approx(crps.mean(), rel=1e-12)
    P = check_predictive(SampleEnsemble(S), targets=Y)
    assert row["pit_ks"] == pytest.approx(pit_histogram(P).ks_statistic, rel=1e-12)
    assert row["miscal_area"] == pytest.approx(miscalibration_area(P), rel=1e-12)
    m, v = S.mean(axis=1), S.var(axis=1, ddof=1)
    vc = variance_calibration(P, n_bins=6)
    assert row["ence"] == pytest.approx(vc.ence, rel=1e-12)
    assert row["se_var_ratio"] == pytest.approx(vc.se_var_ratio, rel=1e-12)
    # SE/Var by hand, with the ensemble's own mean and variance (whichever ddof it uses)
    var = P.distribution.variance()
    assert np.allclose(var, v) or np.allclose(var, S.var(axis=1))
    assert row["se_var_ratio"] == pytest.approx(np.mean((Y - m) ** 2 / var), rel=1e-12)


def test_missing_member_value_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "r.csv"
    f.write_text("sample_0,sample_1,y\n1,2,3\n1,,3\n")
    code, _, err = run(["table", str(f)], capsys)
    assert code == 3 and "line 3, column 'sample_1'" in err
    g = tmp_path / "n.csv"
    g.write_text("sample_0,sample_1,y\n1,2,3\n1,nan,3\n")
    code, _, err = run(["table", str(g)], capsys)
    assert code == 3 and str(g) in err and "row 1" in err and "nan" in err


# ------------------------------------------------------------------ kinds together


def test_mixed_table_keeps_the_gaussian_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = tmp_path / "gauss.npz"
    np.savez(g, mean=MU, std=np.full(N, 1.2), y=Y)
    q = _csv(tmp_path / "quant.csv", {**{f"q{t}": Q[:, j] for j, t in enumerate(LEVELS)}, "y": Y})
    alone = _table([g], capsys)
    both = _table([g, q], capsys)
    assert alone["columns"] == ["model", "n", "nll", "dss", "crps", "pit_ks", "interval_ce",
                                "ence", "mse_over_avg_var", "se_var_ratio"]  # fmt: skip
    rows = {r["model"]: r for r in both["models"]}
    for key, value in alone["models"][0].items():
        assert rows["gauss"][key] == value, key  # bit-identical
    assert rows["gauss"]["pinball"] is None and rows["quant"]["nll"] is None
    assert any("n/a: the column does not apply" in n for n in both["notes"])
    code, out, _ = run(["table", str(g), str(q)], capsys)
    assert code == 0 and "n/a" in out


def test_classification_and_quantiles_refused_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = _csv(tmp_path / "quant.csv", {"q0.1": Q[:, 0], "q0.9": Q[:, 4], "y": Y})
    c = tmp_path / "c.npz"
    np.savez(c, probs=np.full((4, 2), 0.5), labels=np.array([0, 1, 0, 1]))
    code, _, err = run(["table", str(q), str(c)], capsys)
    assert code == 3 and "regression predictions" in err and "classification" in err


# ------------------------------------------------------------------ report and diagram


def test_report_of_samples_and_quantiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = tmp_path / "ens.npz"
    np.savez(s, samples=S, y=Y)
    q = _csv(tmp_path / "quant.csv", {**{f"q{t}": Q[:, j] for j, t in enumerate(LEVELS)}, "y": Y})
    code, out, err = run(
        ["report", str(s), str(q), "--recalibrate", "quantile,vscale", "--format", "json"], capsys
    )
    assert code == 0, err
    doc = json.loads(out)
    rows = {(r["model"], r["method"]): r["metrics"] for r in doc["rows"]}
    assert rows[("ens", "uncalibrated")]["nll"] == "nan"  # samples state no density
    base, after = rows[("quant", "uncalibrated")], rows[("quant", "QuantileRecalibration")]
    # the test rows: the seeded split of calipers report (--split 0.5, --seed 0)
    perm = np.random.default_rng(0).permutation(N)
    test = np.sort(perm[N // 2 :])
    pin = [np.mean(_pinball(Q[test, j], Y[test], t)) for j, t in enumerate(LEVELS)]
    assert base["crps"] == pytest.approx(2 * np.mean(pin), rel=1e-12)
    assert after["crps_improvement"] == pytest.approx(base["crps"] - after["crps"], rel=1e-9)
    assert ("quant", "VarianceScaling") not in rows
    assert "VarianceScaling recalibrates gaussian predictions only" in out


def test_diagrams_of_every_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    q = _csv(tmp_path / "quant.csv", {**{f"q{t}": Q[:, j] for j, t in enumerate(LEVELS)}, "y": Y})
    s = tmp_path / "ens.npz"
    np.savez(s, samples=S, y=Y)
    iv = _csv(tmp_path / "iv.csv", {"lower": Q[:, 0], "upper": Q[:, 4], "y": Y})
    ok = [("pit", q, []), ("quantile", q, []), ("pit", s, []), ("variance", s, []),
          ("quantile", iv, ["--interval-level", "0.9"])]  # fmt: skip
    for kind, f, extra in ok:
        out = tmp_path / f"{kind}-{f.stem}.png"
        code, _, err = run(["diagram", kind, str(f), "--out", str(out), *extra], capsys)
        assert code == 0, err
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, err = run(["diagram", "variance", str(q), "--out", str(tmp_path / "v.png")], capsys)
    assert code == 3 and "its diagrams are pit, quantile" in err
    code, _, err = run(
        ["diagram", "pit", str(iv), "--interval-level", "0.9", "--out", str(tmp_path / "p.png")],
        capsys,
    )
    assert code == 3 and "its diagrams are quantile" in err
    # the PIT histogram's bars are those of pit_histogram of the distribution
    from calipers.cli.diagram import _figure
    from calipers.cli.program import build_parser

    fig = _figure(build_parser().parse_args(["diagram", "pit", str(q), "--bins", "5"]))
    (bars,) = fig.axes[0].containers
    P = check_predictive(QuantileSet(LEVELS, Q), targets=Y)
    assert [b.get_height() for b in bars] == pytest.approx(pit_histogram(P, n_bins=5).counts)


def _curve(fig) -> tuple[np.ndarray, np.ndarray]:
    (line,) = [ln for ln in fig.axes[0].lines if ln.get_gid() == "t-reliability"]
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)


def test_t_reliability_of_point_forecasts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file of mean forecasts: the curve is the isotonic regression of the targets on the
    forecasts (scikit-learn's IsotonicRegression, fitted here); a quantile file's median
    column and an ensemble's mean give the curves of those forecasts."""
    import matplotlib

    matplotlib.use("Agg")
    from calipers.cli.diagram import _figure
    from calipers.cli.program import build_parser

    def figure(*argv: str):
        return _figure(build_parser().parse_args(["diagram", "t-reliability", *argv]))

    z = 0.8 * MU
    f = _csv(tmp_path / "point.csv", {"y_pred": z, "y": Y})
    x, t = _curve(figure(str(f)))
    iso = pytest.importorskip("sklearn.isotonic").IsotonicRegression().fit(z, Y)
    assert np.allclose(t, iso.predict(x), atol=1e-12)
    code, _, err = run(
        ["diagram", "t-reliability", str(f), "--out", str(tmp_path / "t.png")], capsys
    )
    assert code == 0 and "point forecasts (forecasts from 'y_pred', targets from 'y')" in err
    # the median column of a quantile file, and the mean of an ensemble
    q = _csv(tmp_path / "quant.csv", {**{f"q{t}": Q[:, j] for j, t in enumerate(LEVELS)}, "y": Y})
    from calipers.diagrams import t_reliability_diagram

    want = _curve(t_reliability_diagram(Q[:, 2], Y, functional="quantile", level=0.5))
    got = _curve(figure(str(q), "--functional", "median"))
    assert np.allclose(got[0], want[0]) and np.allclose(got[1], want[1])
    s = tmp_path / "ens.npz"
    np.savez(s, samples=S, y=Y)
    want = _curve(t_reliability_diagram(S.mean(axis=1), Y))
    got = _curve(figure(str(s)))
    assert np.allclose(got[0], want[0]) and np.allclose(got[1], want[1])
    # a quantile set states no mean; an expectile needs its forecasts
    for argv, match in (
        ([str(q)], "state no mean"),
        ([str(q), "--functional", "quantile"], "needs --level"),
        ([str(s), "--functional", "expectile", "--level", "0.3"], "expectile"),
    ):
        code, _, err = run(
            ["diagram", "t-reliability", *argv, "--out", str(tmp_path / "x.png")], capsys
        )
        assert code == 3 and re.search(match, err), err


def test_point_forecast_file_refusals(tmp_path: Path) -> None:
    from calipers.io import PredictionFileError
    from calipers.io.predictive_file import read_point_forecast_file

    f = _csv(tmp_path / "p.csv", {"a": MU, "y": Y})
    with pytest.raises(PredictionFileError, match="no column recognised as the forecasts"):
        read_point_forecast_file(f)
    z, y, w, note = read_point_forecast_file(f, forecast_key="a")
    assert np.array_equal(z, MU) and np.array_equal(y, Y) and w is None
    g = _csv(tmp_path / "two.csv", {"y_pred": MU, "prediction": MU, "y": Y})
    with pytest.raises(PredictionFileError, match="ambiguous"):
        read_point_forecast_file(g)


def test_regression_diagram_data_of_distributions() -> None:
    """The diagrams' numbers for a quantile set and an ensemble are those of the library's
    functions on the same distribution; with a fitted QuantileRecalibration the bars after
    are the histogram of its predict_cdf; a Gaussian given as arrays is drawn as before."""
    from calipers.diagrams import (
        pit_histogram_diagram_data,
        quantile_reliability_diagram_data,
        variance_error_diagram_data,
    )
    from calipers.recalibration import QuantileRecalibration
    from calipers.regression import quantile_calibration
    from calipers.validation import CalibrationInputError

    qs = QuantileSet(LEVELS, Q)
    P = check_predictive(qs, targets=Y, sample_weight=W)
    data = pit_histogram_diagram_data(qs, targets=Y, sample_weight=W, n_bins=5)
    assert np.array_equal(data.before.counts, pit_histogram(P, n_bins=5).counts)
    rc = QuantileRecalibration().fit(qs, targets=Y)
    data = pit_histogram_diagram_data(P, recalibrator=rc, n_bins=5)
    u = rc.predict_cdf(qs, targets=Y)
    counts = np.bincount(np.minimum((u * 5).astype(int), 4), weights=W, minlength=5)
    assert np.allclose(data.after.counts, counts)
    ens = SampleEnsemble(S)
    E = check_predictive(ens, targets=Y)
    qd = quantile_reliability_diagram_data(ens, targets=Y)
    assert np.allclose(qd.coverage, quantile_calibration(E).coverage[np.argsort(qd.levels)])
    vd = variance_error_diagram_data(E, n_bins=4)
    assert vd.before.ence == variance_calibration(E, n_bins=4).ence
    with pytest.raises(CalibrationInputError, match="variance"):
        variance_error_diagram_data(qs, targets=Y, n_bins=4)
    with pytest.raises(CalibrationInputError, match="states its own spread"):
        pit_histogram_diagram_data(qs, variance=np.ones(N), targets=Y)
    g = pit_histogram_diagram_data(MU, std=np.ones(N), targets=Y, n_bins=5)
    assert np.array_equal(
        g.before.counts, pit_histogram(MU, std=np.ones(N), targets=Y, n_bins=5).counts
    )


def test_regression_report_of_distributions() -> None:
    """regression_report takes predictions of any kind: the columns from the library's
    functions on the distribution, NaN where a column needs a Gaussian, a note saying so;
    a dict with a 'distribution' key works too."""
    from calipers.regression import crps_per_row, log_score_per_row
    from calipers.reports import regression_report

    ens = check_predictive(SampleEnsemble(S), targets=Y, sample_weight=W)
    qs = {"distribution": QuantileSet(LEVELS, Q), "targets": Y}
    rep = regression_report({"ens": ens, "qs": qs}, skce=False, n_bins=5)
    e, q = rep.row("ens").metrics, rep.row("qs").metrics
    assert e["crps"] == pytest.approx(_wmean(crps_per_row(ens), W), rel=1e-12)
    assert e["ence"] == variance_calibration(ens, n_bins=5).ence
    assert np.isnan(e["nll"]) and np.isnan(e["dss"]) and np.isnan(q["ence"])
    pin = [np.mean(_pinball(Q[:, j], Y, t)) for j, t in enumerate(LEVELS)]
    assert q["crps"] == pytest.approx(2 * np.mean(pin), rel=1e-12)
    assert any("QuantileSet (quantiles), not Gaussian arrays" in f for f in rep.row("qs").flags)
    from calipers.regression import Parametric

    t = Parametric("student_t", df=np.full(N, 5.0), loc=MU, scale=np.ones(N))
    rep = regression_report({"t": check_predictive(t, targets=Y)}, skce=False)
    lp = _wmean(log_score_per_row(check_predictive(t, targets=Y)), None)
    assert rep.row("t").metrics["nll"] == pytest.approx(lp, rel=1e-12)
    from scipy import stats

    nll = -np.mean(stats.t.logpdf(Y, 5.0, loc=MU, scale=1.0))
    assert rep.row("t").metrics["nll"] == pytest.approx(nll, rel=1e-10)


@pytest.mark.parametrize(
    "argv", [["--kind", "quantiles"], ["--quantile-levels", "0.1"], ["--crossing", "sort"]]
)
def test_regression_options_need_a_file(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["table", *argv], capsys)
    assert code == 2 and f"{argv[0]} needs a prediction FILE" in err
