"""The standard report: every number equals the metric function's, flags fire when they must."""

import json
import math

import numpy as np
import pytest

import calipers as cp
from calipers.recalibration.base import Recalibrator


def _data(n=600, k=4, seed=0, scale=2.0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * scale
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > p.cumsum(1)).sum(1).clip(0, k - 1)
    return z, y


class _ConstantTop(Recalibrator):
    """Test double: mean replacement written here (predicted class gets the calibration accuracy)."""

    input = "probs"

    def __init__(self) -> None:
        pass

    def _fit(self, S, y, w):
        self.a_ = float(np.mean(S.argmax(1) == y))

    def _transform(self, S):
        k = S.shape[1]
        out = np.full_like(S, (1 - self.a_) / (k - 1))
        out[np.arange(len(S)), S.argmax(1)] = self.a_
        return out


def test_numbers_are_the_metric_functions() -> None:
    z, y = _data()
    rep = cp.report({"m": (3 * z, y)}, logits=True, null_resamples=20)
    m = rep.row("m").metrics
    p = np.exp(3 * z) / np.exp(3 * z).sum(1, keepdims=True)
    assert m["accuracy"] == pytest.approx(cp.accuracy(p, y), rel=1e-12)
    assert m["nll"] == pytest.approx(cp.nll(3 * z, y, logits=True), rel=1e-12)
    assert m["brier"] == pytest.approx(cp.brier(p, y), rel=1e-10)
    assert m["rbs"] == pytest.approx(math.sqrt(cp.brier(p, y)), rel=1e-10)
    assert m["ece"] == pytest.approx(cp.ece(p, y), rel=1e-10)
    assert m["ace"] == pytest.approx(cp.ace(p, y), rel=1e-10)
    assert m["smece"] == pytest.approx(cp.smece(p, y), rel=1e-10)
    conf, correct = p.max(1), (p.argmax(1) == y).astype(int)
    kl = cp.proper_calibration_error(conf, correct, lens="binary", bandwidth=0.02)
    assert m["ce_kl"] == pytest.approx(kl.value, rel=1e-10)
    assert m["refinement_kl"] == pytest.approx(kl.refinement, rel=1e-10)
    assert 0 < m["ece_p_value"] <= 1


def test_pitfall_flag_for_mean_replacement_and_calibrated_null() -> None:
    z, y = _data(n=2000, seed=1)
    cal, test = slice(0, 1000), slice(1000, 2000)
    rep = cp.report(
        {"m": (2 * z[test], y[test])},
        logits=True,
        calibration={"m": (2 * z[cal], y[cal])},
        recalibrators=[_ConstantTop(), cp.TemperatureScaling()],
        null_resamples=100,
    )
    mrr = rep.row("m", "_ConstantTop")
    base = rep.row("m")
    assert mrr.metrics["ece"] < base.metrics["ece"]
    assert mrr.metrics["nll"] > base.metrics["nll"]
    assert any("pitfall" in f for f in mrr.flags)
    assert not any("pitfall" in f for f in base.flags)
    # z itself is calibrated (labels drawn from softmax(z)); 2 z is not
    ts = rep.row("m", "TemperatureScaling")
    assert ts.metrics["ece_p_value"] > 0.05 and any("noise" in f for f in ts.flags)
    assert base.metrics["ece_p_value"] < 0.05


def test_infinite_nll_is_reported_in_every_format() -> None:
    p = np.array([[1.0, 0.0], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    y = np.array([1, 1, 0, 1])
    rep = cp.report({"zero": (p, y)}, null_resamples=0, kernel_max_n=4)
    assert math.isinf(rep.row("zero").metrics["nll"])
    assert "∞" in rep.to_markdown()
    assert r"$\infty$" in rep.to_latex()
    doc = json.loads(rep.to_json())
    assert doc["rows"][0]["metrics"]["nll"] == "inf"
    assert doc["calipers_report"] == 2 and doc["columns"][0] == "accuracy"
    assert math.isnan(rep.row("zero").metrics["ece_p_value"])


def test_bootstrap_intervals_and_dataframe() -> None:
    z, y = _data(n=300, seed=2)
    rep = cp.report({"a": (z, y), "b": (2 * z, y)}, logits=True, n_bootstrap=30, null_resamples=0)
    r = rep.row("b")
    lo, hi = r.intervals["brier"]
    assert lo < r.metrics["brier"] < hi
    pd = pytest.importorskip("pandas")
    df = rep.to_dataframe()
    assert (
        isinstance(df, pd.DataFrame)
        and df.loc[("a", "uncalibrated"), "ece"] == rep.row("a").metrics["ece"]
    )
    assert "<table" in rep._repr_html_()


def test_bad_arguments() -> None:
    z, y = _data(n=50)
    with pytest.raises(cp.CalibrationInputError, match="at least one model"):
        cp.report({})
    with pytest.raises(cp.CalibrationInputError, match="calibration split"):
        cp.report({"m": (z, y)}, logits=True, recalibrators=[cp.TemperatureScaling()])
    with pytest.raises(cp.CalibrationInputError, match="scores, labels"):
        cp.report({"m": z})


class _Worse(Recalibrator):
    """Test double: a recalibration that only sharpens (T = 1/3), hurting NLL and ECE."""

    input = "logits"

    def __init__(self) -> None:
        pass

    def _fit(self, S, y, w):
        self.t_ = 1.0 / 3.0

    def _transform(self, S):
        e = np.exp((S - S.max(1, keepdims=True)) / self.t_)
        return e / e.sum(1, keepdims=True)


def test_flag_when_recalibration_only_hurts() -> None:
    z, y = _data(n=1000, seed=3)
    rep = cp.report(
        {"m": (z[500:], y[500:])},
        logits=True,
        calibration={"m": (z[:500], y[:500])},
        recalibrators=[_Worse()],
        null_resamples=0,
    )
    row = rep.row("m", "_Worse")
    assert row.metrics["nll"] > rep.row("m").metrics["nll"]
    assert row.metrics["ece"] > rep.row("m").metrics["ece"]
    assert any("does not help" in f for f in row.flags)
    assert not any("does not help" in f for f in rep.row("m").flags)
