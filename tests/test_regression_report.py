"""regression_report: its numbers are those of calipers.regression, before and after.

Every value is compared with the calipers.regression / regression_skce function
called here on the same rows (the recalibrated ones on variances scaled by a
factor computed here by hand); renderings carry the regression columns and the
LaTeX compiles with pdflatex.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from calipers.regression import (
    check_gaussian,
    crps_gaussian,
    dawid_sebastiani,
    gaussian_nll,
    interval_coverage_error,
    pit_histogram,
    quantile_calibration_error,
    variance_calibration,
)
from calipers.regression.skce import gaussian_skce
from calipers.reports._regression_report import regression_report
from calipers.validation import CalibrationInputError


class ScalingStandIn:
    """Variance scaling sigma'^2 = s sigma^2 with s = mean((y - mu)^2 / sigma^2), the NLL optimum."""

    gaussian = True
    injective = True

    def __init__(self) -> None:
        self.s_: float | None = None

    def get_params(self) -> dict:
        return {}

    def fit(self, mean, variance=None, *, std=None, targets, sample_weight=None):
        G = check_gaussian(
            mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
        )
        self.s_ = G.weighted_mean((G.targets - G.mean) ** 2 / G.variance)
        return self

    def predict_variance(self, mean, variance=None, *, std=None):
        var = np.asarray(variance if variance is not None else np.asarray(std) ** 2, float)
        return self.s_ * var

    def predict_cdf(self, mean, variance=None, *, std=None, targets):
        sd = np.sqrt(self.predict_variance(mean, variance=variance, std=std))
        return stats.norm.cdf((np.asarray(targets) - np.asarray(mean)) / sd)

    def predict_interval(self, mean, variance=None, *, std=None, level=0.9):
        sd = np.sqrt(self.predict_variance(mean, variance=variance, std=std))
        z = stats.norm.ppf((1 + level) / 2)
        return np.asarray(mean) - z * sd, np.asarray(mean) + z * sd

    @staticmethod
    def _rows(mu, var, y):
        nll = 0.5 * np.log(2 * np.pi * var) + (y - mu) ** 2 / (2 * var)
        dss = np.log(var) + (y - mu) ** 2 / var
        z = (y - mu) / np.sqrt(var)
        crps = np.sqrt(var) * (
            z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi)
        )
        return {"nll": nll, "dss": dss, "crps": crps}

    def _scores(self, mu, var, y, w):
        return {k: float(np.average(v, weights=w)) for k, v in self._rows(mu, var, y).items()}

    def scores_per_row(self, mean, variance=None, *, std=None, targets):
        var = self.predict_variance(mean, variance=variance, std=std)
        return self._rows(np.asarray(mean), var, np.asarray(targets))

    def scores(self, mean, variance=None, *, std=None, targets, sample_weight=None):
        var = self.predict_variance(mean, variance=variance, std=std)
        return self._scores(np.asarray(mean), var, np.asarray(targets), sample_weight)

    def improvement(self, mean, variance=None, *, std=None, targets, sample_weight=None):
        var = np.asarray(variance if variance is not None else np.asarray(std) ** 2, float)
        before = self._scores(np.asarray(mean), var, np.asarray(targets), sample_weight)
        after = self.scores(mean, variance=var, targets=targets, sample_weight=sample_weight)
        return {k: before[k] - after[k] for k in before}


class RemapStandIn(ScalingStandIn):
    """Non-Gaussian: the PIT remapped by u -> u**2 (a monotone map of the CDF)."""

    gaussian = False

    def fit(self, mean, variance=None, *, std=None, targets, sample_weight=None):
        return self

    def predict_cdf(self, mean, variance=None, *, std=None, targets):
        sd = np.sqrt(np.asarray(variance, float))
        return stats.norm.cdf((np.asarray(targets) - np.asarray(mean)) / sd) ** 2

    def predict_interval(self, mean, variance=None, *, std=None, level=0.9):
        sd = np.sqrt(np.asarray(variance, float))
        lo_u, hi_u = np.sqrt((1 - level) / 2), np.sqrt((1 + level) / 2)
        return (
            np.asarray(mean) + sd * stats.norm.ppf(lo_u),
            np.asarray(mean) + sd * stats.norm.ppf(hi_u),
        )

    def scores(self, mean, variance=None, *, std=None, targets, sample_weight=None):
        return {"nll": 1.0, "dss": 2.0, "crps": 3.0}

    def scores_per_row(self, mean, variance=None, *, std=None, targets):
        var = np.asarray(variance, float)
        return self._rows(np.asarray(mean), var, np.asarray(targets))

    def improvement(self, mean, variance=None, *, std=None, targets, sample_weight=None):
        return {"nll": 0.1, "dss": 0.2, "crps": 0.3}


def _split(n=400, scale=2.0, seed=0):
    """A model whose predicted sd is 1/scale of the true one: (test, calibration)."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=2 * n)
    var = rng.uniform(0.25, 4.0, size=2 * n)
    y = mu + rng.normal(size=2 * n) * np.sqrt(var) * scale
    return (mu[:n], var[:n], y[:n]), (mu[n:], var[n:], y[n:])


def _model(t):
    """A (mean, variance, targets) triple as the dict regression_report takes."""
    return {"mean": t[0], "variance": t[1], "targets": t[2]}


def _expected(mu, var, y, n_bins=15):
    v = variance_calibration(mu, variance=var, targets=y, n_bins=n_bins)
    return {
        "nll": gaussian_nll(mu, variance=var, targets=y),
        "dss": dawid_sebastiani(mu, variance=var, targets=y),
        "crps": crps_gaussian(mu, variance=var, targets=y),
        "pit_ks": pit_histogram(mu, variance=var, targets=y).ks_statistic,
        "interval_ce": interval_coverage_error(mu, variance=var, targets=y),
        "ence": v.ence,
        "mse_over_avg_var": v.mse_over_avg_var,
        "se_var_ratio": v.se_var_ratio,
        # both kernel length scales: the standard deviation of the test targets
        "skce": gaussian_skce(mu, variance=var, targets=y, length_scale=float(np.std(y))),
    }


def test_values_are_the_regression_functions():
    (mu, var, y), _ = _split()
    rep = regression_report({"net": _model((mu, var, y))})
    row = rep.row("net")
    assert row.n == 400
    assert rep.columns == tuple(_expected(mu, var, y))
    for k, v in _expected(mu, var, y).items():
        assert row.metrics[k] == pytest.approx(v, rel=1e-12), k


def test_recalibrated_row_of_a_misscaled_model():
    test, cal = _split()
    rep = regression_report(
        {"net": _model(test)}, calibration={"net": _model(cal)}, recalibrators=[ScalingStandIn()]
    )
    before, after = rep.row("net"), rep.row("net", "ScalingStandIn")
    mu, var, y = test
    s = np.mean((cal[2] - cal[0]) ** 2 / cal[1])  # the NLL-optimal scale, fitted by hand
    assert 3.0 < s < 5.0  # true sd twice the predicted one
    exp = _expected(mu, s * var, y)
    for k, v in exp.items():
        assert after.metrics[k] == pytest.approx(v, rel=1e-12), k
    for k in ("nll", "dss", "crps"):
        d = after.metrics[f"{k}_improvement"]
        assert d > 0
        assert d == pytest.approx(before.metrics[k] - after.metrics[k], rel=1e-9)
        assert math.isnan(before.metrics[f"{k}_improvement"])
    assert after.metrics["pit_ks"] < before.metrics["pit_ks"]
    assert abs(after.metrics["se_var_ratio"] - 1) < abs(before.metrics["se_var_ratio"] - 1)


def test_non_gaussian_recalibrator_row_and_skce_subsample():
    test, cal = _split(n=300)
    rep = regression_report(
        {"net": _model(test)},
        calibration={"net": _model(cal)},
        recalibrators=[RemapStandIn()],
        skce_max_n=100,
        seed=3,
    )
    row = rep.row("net", "RemapStandIn")
    assert (row.metrics["nll"], row.metrics["dss"], row.metrics["crps"]) == (1.0, 2.0, 3.0)
    assert row.metrics["nll_improvement"] == 0.1
    for k in ("ence", "mse_over_avg_var", "se_var_ratio", "skce"):
        assert math.isnan(row.metrics[k])
    assert any("not Gaussian" in f for f in row.flags)
    mu, var, y = test
    u = np.sort(stats.norm.cdf((y - mu) / np.sqrt(var)) ** 2)
    ks = max(np.max(np.arange(1, 301) / 300 - u), np.max(u - np.arange(300) / 300))
    assert row.metrics["pit_ks"] == pytest.approx(ks)
    # the SKCE of the uncalibrated row: a seeded subsample of 100 of the 300 rows
    skce = rep.row("net").metrics["skce"]
    ls = float(np.std(y))  # of all 300 test targets, not of the subsample
    full = gaussian_skce(mu, variance=var, targets=y, length_scale=ls)
    assert skce != full
    idx = np.sort(np.random.default_rng(3).choice(300, size=100, replace=False))
    assert skce == pytest.approx(
        gaussian_skce(mu[idx], variance=var[idx], targets=y[idx], length_scale=ls)
    )
    assert "subsample of at most 100" in rep.settings["skce"]
    assert f"net: {ls:.4g}" in rep.settings["skce"]


def test_skce_length_scale_follows_the_targets_units():
    """Targets in other units (x 100): the default SKCE is the same number (kernel scale
    tied to the targets' spread), the fixed length scale 1 gives about 0."""
    (mu, var, y), _ = _split(n=300)
    base = regression_report({"m": _model((mu, var, y))}).row("m").metrics["skce"]
    scaled = (
        regression_report({"m": _model((100 * mu, 1e4 * var, 100 * y))}).row("m").metrics["skce"]
    )
    assert scaled == pytest.approx(base, rel=1e-9)
    assert base > 1e-3  # the misscaled model of _split is detected
    fixed = regression_report({"m": _model((100 * mu, 1e4 * var, 100 * y))}, skce_length_scale=1.0)
    assert abs(fixed.row("m").metrics["skce"]) < 1e-4 * base
    assert fixed.row("m").metrics["skce"] == pytest.approx(
        gaussian_skce(100 * mu, variance=1e4 * var, targets=100 * y, length_scale=1.0), rel=1e-12
    )


def test_weights_and_std_through_gaussian_predictions():
    (mu, var, y), _ = _split(n=200)
    w = np.random.default_rng(2).uniform(0.5, 2, size=200)
    G = check_gaussian(mu, std=np.sqrt(var), targets=y, sample_weight=w)
    rep = regression_report({"w": G}, skce=False, n_bins=5)
    assert "skce" not in rep.columns
    m = rep.row("w").metrics
    assert m["nll"] == pytest.approx(gaussian_nll(G))
    assert m["nll"] != pytest.approx(gaussian_nll(mu, variance=var, targets=y))
    assert m["ence"] == pytest.approx(variance_calibration(G, n_bins=5).ence)


def test_renderings_have_the_regression_columns():

    test, cal = _split(n=200)
    rep = regression_report(
        {"model_1 & co": _model(test)},
        calibration={"model_1 & co": _model(cal)},
        recalibrators=[ScalingStandIn(), RemapStandIn()],
    )
    md = rep.to_markdown()
    for label in ("PIT KS", "Interval CE", "ENCE", "MSE/AvgVar", "SE/Var ratio", "SKCE", "ΔNLL"):
        assert label in md
    assert "Proper scores and calibration errors of probabilistic regression" in rep.to_html()
    doc = json.loads(rep.to_json())
    assert doc["columns"][-1] == "crps_improvement"
    assert doc["rows"][0]["metrics"]["nll_improvement"] == "nan"
    df = rep.to_dataframe()
    assert df.loc[("model_1 & co", "ScalingStandIn"), "crps"] == rep.rows[1].metrics["crps"]
    tex = rep.to_latex()
    assert r"$\Delta$NLL" in tex


def test_latex_with_figures_compiles(tmp_path):
    pytest.importorskip("matplotlib")
    from test_report_latex import _compile

    test, cal = _split(n=120)
    rep = regression_report(
        {"net": _model(test)},
        calibration={"net": _model(cal)},
        recalibrators=[ScalingStandIn(), RemapStandIn()],
        figures=True,
        n_bins=6,
    )
    assert sorted(rep.figures) == sorted(
        [f"net__uncalibrated__{k}" for k in ("pit", "quantile", "variance")]
        + [f"net__ScalingStandIn__{k}" for k in ("pit", "quantile", "variance")]
        + [f"net__RemapStandIn__{k}" for k in ("pit", "quantile")]
    )
    assert all(png.startswith(b"\x89PNG") for png in rep.figures.values())
    rep.save(tmp_path / "rep")
    pdf, log = _compile(tmp_path / "rep" / "report.tex")
    assert len(pdf) > 1000


class _Refuses(ScalingStandIn):
    def fit(self, mean, variance=None, *, std=None, targets, sample_weight=None):
        raise CalibrationInputError("cannot fit this split")


def test_bad_input_and_not_applicable():
    test, cal = _split(n=50)
    with pytest.raises(CalibrationInputError, match="at least one model"):
        regression_report({})
    with pytest.raises(CalibrationInputError, match="give a dict such as"):
        regression_report({"m": "predictions.csv"})
    with pytest.raises(CalibrationInputError, match="test predictions of model 'm'.*variance"):
        regression_report({"m": _model((test[0], -test[1], test[2]))})
    with pytest.raises(CalibrationInputError, match="calibration split"):
        regression_report({"m": _model(test)}, recalibrators=[ScalingStandIn()])
    with pytest.raises(CalibrationInputError, match="no calibration split for model 'm'"):
        regression_report(
            {"m": _model(test)}, calibration={"x": _model(cal)}, recalibrators=[ScalingStandIn()]
        )
    with pytest.raises(TypeError, match="has no fit"):
        regression_report(
            {"m": _model(test)}, calibration={"m": _model(cal)}, recalibrators=[object()]
        )
    with pytest.raises(CalibrationInputError, match="n_bins must be at most"):
        regression_report({"m": _model(test)}, n_bins=51)
    with pytest.raises(CalibrationInputError, match="skce_max_n"):
        regression_report({"m": _model(test)}, skce_max_n=1)
    rep = regression_report(
        {"m": _model(test)}, calibration={"m": _model(cal)}, recalibrators=[_Refuses()]
    )
    assert rep.row("m", "_Refuses").not_applicable == "cannot fit this split"
    assert "cannot fit this split" in rep.to_markdown()


def test_with_the_recalibrators_of_calipers():
    from calipers.recalibration import QuantileRecalibration, VarianceScaling

    test, cal = _split()
    rep = regression_report(
        {"net": _model(test)},
        calibration={"net": _model(cal)},
        recalibrators=[VarianceScaling(), QuantileRecalibration()],
        skce=False,
    )
    mu, var, y = test
    vs = VarianceScaling().fit(cal[0], variance=cal[1], targets=cal[2])
    row = rep.row("net", "VarianceScaling")
    var2 = vs.predict_variance(mu, variance=var)
    assert row.metrics["nll"] == pytest.approx(gaussian_nll(mu, variance=var2, targets=y))
    assert row.metrics["nll"] == pytest.approx(vs.scores(mu, variance=var, targets=y)["nll"])
    assert row.metrics["ence"] == pytest.approx(
        variance_calibration(mu, variance=var2, targets=y).ence
    )
    qr = QuantileRecalibration().fit(cal[0], variance=cal[1], targets=cal[2])
    row = rep.row("net", "QuantileRecalibration")
    assert row.metrics["crps"] == pytest.approx(qr.scores(mu, variance=var, targets=y)["crps"])
    for method in ("VarianceScaling", "QuantileRecalibration"):
        r = rep.row("net", method)
        assert all(r.metrics[f"{k}_improvement"] > 0 for k in ("nll", "dss", "crps"))


def test_flags_read_paired_intervals_of_per_row_scores():
    """A recalibration that makes the scores worse beyond the noise is flagged, with the
    paired t-interval of the per-row differences computed here; one that helps is not."""
    test, cal = _split(n=400, scale=1.0)  # calibrated model

    class Inflate(ScalingStandIn):
        """Variances x 9: worse on every row's NLL beyond the noise."""

        def fit(self, mean, variance=None, *, std=None, targets, sample_weight=None):
            self.s_ = 9.0
            return self

    rep = regression_report(
        {"m": _model(test)}, calibration={"m": _model(cal)}, recalibrators=[Inflate()], skce=False
    )
    row = rep.row("m", "Inflate")
    mu, var, y = test
    d = Inflate._rows(mu, 9.0 * var, y)["nll"] - Inflate._rows(mu, var, y)["nll"]
    se = d.std(ddof=1) / math.sqrt(d.size)
    t = stats.t.ppf(0.975, d.size - 1)
    mean, lo, hi = row.differences["nll"]
    assert mean == pytest.approx(d.mean(), rel=1e-12)
    assert (lo, hi) == pytest.approx((d.mean() - t * se, d.mean() + t * se), rel=1e-9)
    assert lo > 0
    assert any("worse beyond the noise" in f and "NLL" in f for f in row.flags)
    # a misscaled model fixed by the fitted scale: no flag
    test, cal = _split()
    rep = regression_report(
        {"m": _model(test)}, calibration={"m": _model(cal)}, recalibrators=[ScalingStandIn()]
    )
    row = rep.row("m", "ScalingStandIn")
    assert row.differences["nll"][2] < 0
    assert not any("beyond the noise" in f for f in row.flags)


# ----------------------------------------------------------------- the spread is named


def test_a_model_names_its_spread_std_or_variance():
    """{"std": sd} and {"variance": sd**2} give the same row; the NLL is the closed form."""
    (mu, var, y), _ = _split(n=200)
    sd = np.sqrt(var)
    by_std = regression_report({"m": {"mean": mu, "std": sd, "targets": y}}, skce=False)
    by_var = regression_report({"m": {"mean": mu, "variance": var, "targets": y}}, skce=False)
    by_hand = float(np.mean(-stats.norm.logpdf(y, loc=mu, scale=sd)))
    assert by_std.row("m").metrics["nll"] == pytest.approx(by_hand, rel=1e-12)
    for k, v in by_var.row("m").metrics.items():
        assert by_std.row("m").metrics[k] == pytest.approx(v, rel=1e-12), k
    w = np.linspace(0.5, 2.0, 200)
    weighted = regression_report(
        {"m": {"mean": mu, "std": sd, "targets": y, "sample_weight": w}}, skce=False
    )
    nll_w = float(np.average(-stats.norm.logpdf(y, loc=mu, scale=sd), weights=w))
    assert weighted.row("m").metrics["nll"] == pytest.approx(nll_w, rel=1e-12)


def test_a_tuple_is_refused_with_the_dict_to_write():
    """A tuple cannot say whether its spread is a variance or a std: refused, never guessed."""
    (mu, var, y), _ = _split(n=50)
    with pytest.raises(CalibrationInputError) as err:
        regression_report({"m": (mu, np.sqrt(var), y)})
    msg = str(err.value)
    assert "model 'm'" in msg and "variance or a standard deviation" in msg
    assert "{'mean': mu, 'std': sd, 'targets': y}" in msg
    assert "{'mean': mu, 'variance': var, 'targets': y}" in msg
    with pytest.raises(CalibrationInputError, match="calibration split of model 'm'.*tuple"):
        regression_report(
            {"m": _model((mu, var, y))},
            calibration={"m": (mu, var, y)},
            recalibrators=[ScalingStandIn()],
        )
    with pytest.raises(CalibrationInputError, match="unknown key\\(s\\) 'sd'.*'std'"):
        regression_report({"m": {"mean": mu, "sd": var, "targets": y}})
    with pytest.raises(CalibrationInputError, match="exactly one of variance= .* and std="):
        regression_report({"m": {"mean": mu, "variance": var, "std": var, "targets": y}})
    with pytest.raises(CalibrationInputError, match="no 'mean'"):
        regression_report({"m": {"variance": var, "targets": y}})


def test_a_regression_file_is_a_model(tmp_path):
    from calipers.io import read_regression_file

    (mu, var, y), _ = _split(n=60)
    path = tmp_path / "m.csv"
    np.savetxt(
        path,
        np.c_[mu, np.sqrt(var), y],
        delimiter=",",
        header="y_pred,y_std,y_true",
        comments="",
        fmt="%.17g",
    )
    rep = regression_report({"m": read_regression_file(path)}, skce=False)
    by_hand = float(np.mean(-stats.norm.logpdf(y, loc=mu, scale=np.sqrt(var))))
    assert rep.row("m").metrics["nll"] == pytest.approx(by_hand, rel=1e-12)


# ----------------------------------------------------------------- the interval CE column


def test_interval_ce_column_is_interval_coverage_error_not_kuleshov():
    """The column is named for what it computes: the mean |coverage - level| of central
    intervals (computed here by hand), not the one-sided error of Kuleshov et al. 2018."""
    (mu, var, y), _ = _split(n=400, scale=1.5)
    rep = regression_report({"m": _model((mu, var, y))}, skce=False)
    m = rep.row("m").metrics
    assert "quantile_ce" not in m and "quantile_ce" not in rep.columns
    levels = np.linspace(0.05, 0.95, 19)
    z = np.abs(y - mu) / np.sqrt(var)
    cover = np.array([np.mean(z <= stats.norm.ppf((1 + p) / 2)) for p in levels])
    by_hand = float(np.mean(np.abs(cover - levels)))
    assert m["interval_ce"] == pytest.approx(by_hand, rel=1e-12)
    assert m["interval_ce"] == interval_coverage_error(mu, variance=var, targets=y)
    one_sided = np.array([np.mean(stats.norm.cdf((y - mu) / np.sqrt(var)) <= p) for p in levels])
    kuleshov = float(np.sum((levels - one_sided) ** 2))
    assert quantile_calibration_error(mu, variance=var, targets=y) == pytest.approx(kuleshov)
    # two quantities, two names: means shifted by one predicted sd (variances right)
    # move the one-sided error far more than the central-interval one
    shifted = regression_report({"m": _model((mu + np.sqrt(var), var * 1.5**2, y))}, skce=False)
    qce = quantile_calibration_error(mu + np.sqrt(var), variance=var * 1.5**2, targets=y)
    assert qce > 5 * shifted.row("m").metrics["interval_ce"]
    assert "Interval CE" in rep.to_markdown() and "Quantile CE" not in rep.to_markdown()
    assert "interval_ce" in json.loads(rep.to_json())["settings"]
