"""The report's uncertainty: bootstrap intervals, paired differences behind the flags,
the lens of binary input, and progress lines in logs.

Oracles: the metric functions on resampled copies of the rows (the report resamples
with weights), scipy's one-sample t interval, and hand-made null draws.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

import calipers as cp
from calipers.recalibration.base import Recalibrator
from calipers.reports._report import _paired_t


def _data(n=600, k=4, seed=0, scale=2.0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * scale
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > p.cumsum(1)).sum(1).clip(0, k - 1)
    return z, y


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


class _Scale(Recalibrator):
    """Test double: divides the logits by a fixed temperature ``t`` (no fitting)."""

    input = "logits"

    def __init__(self, t: float = 1.0) -> None:
        self.t = t

    def _fit(self, S, y, w):
        self.fitted_ = True

    def _transform(self, S):
        return _softmax(S / self.t)


def _basic(e, vals):
    return max(0.0, 2 * e - np.quantile(vals, 0.975)), 2 * e - np.quantile(vals, 0.025)


def test_intervals_are_basic_bootstrap_intervals_of_the_metric_on_resampled_rows() -> None:
    z, y = _data(n=300, seed=5)
    p = _softmax(z)
    B = 40
    rep = cp.report({"m": (p, y)}, n_bootstrap=B, null_resamples=0)
    r = rep.row("m")
    # the report's resamples: seed + 1000 * model + 7 for the rows, + 8 for the kernel rows
    idx = np.random.default_rng(7).integers(0, 300, (B, 300))
    for key, fn in [
        ("accuracy", cp.accuracy),
        ("nll", cp.nll),
        ("brier", cp.brier),
        ("ece", cp.ece),
        ("ace", cp.ace),
        ("smece", cp.smece),
    ]:
        vals = np.array([fn(p[i], y[i]) for i in idx])
        assert r.intervals[key] == pytest.approx(_basic(r.metrics[key], vals), rel=1e-9, abs=1e-12)
    vals = np.array([math.sqrt(cp.brier(p[i], y[i])) for i in idx])
    assert r.intervals["rbs"] == pytest.approx(_basic(r.metrics["rbs"], vals), rel=1e-9)
    # the kernel estimate on a resample is the weighted leave-one-out estimate
    conf, correct = p.max(1), (p.argmax(1) == y).astype(int)
    kidx = np.random.default_rng(8).integers(0, 300, (B, 300))
    counts = [np.bincount(i, minlength=300).astype(float) for i in kidx]
    kl = [
        cp.proper_calibration_error(conf, correct, lens="binary", bandwidth=0.02, sample_weight=c)
        for c in counts
    ]
    assert r.intervals["ce_kl"] == pytest.approx(
        _basic(r.metrics["ce_kl"], np.array([k.value for k in kl])), rel=1e-9
    )
    assert r.intervals["refinement_kl"] == pytest.approx(
        _basic(r.metrics["refinement_kl"], np.array([k.refinement for k in kl])), rel=1e-9
    )
    assert "ece_p_value" not in r.intervals
    assert "basic bootstrap" in rep.settings["intervals"]


def test_intervals_are_reproducible_and_seeded() -> None:
    z, y = _data(n=200, seed=6)
    a = cp.report({"m": (z, y)}, logits=True, n_bootstrap=25, null_resamples=0)
    b = cp.report({"m": (z, y)}, logits=True, n_bootstrap=25, null_resamples=0)
    c = cp.report({"m": (z, y)}, logits=True, n_bootstrap=25, null_resamples=0, seed=1)
    assert a.row("m").intervals == b.row("m").intervals != c.row("m").intervals


def test_paired_t_interval_is_scipys() -> None:
    d = np.random.default_rng(0).standard_t(4, size=500) * 0.01 + 0.002
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    mean, lo, hi = _paired_t(d, None)
    assert (mean, lo, hi) == pytest.approx((d.mean(), ci.low, ci.high), rel=1e-12)
    assert _paired_t(d, np.ones(500)) == pytest.approx((mean, lo, hi), rel=1e-12)
    assert _paired_t(np.array([0.1, math.inf]), None) == (math.inf, math.inf, math.inf)
    assert all(math.isnan(v) for v in _paired_t(np.array([0.1, math.nan]), None))


@pytest.mark.parametrize("n_bootstrap", [0, 60])
def test_flags_fire_on_a_real_worsening_and_not_on_noise(n_bootstrap: int) -> None:
    z, y = _data(n=4000, seed=11, scale=1.5)  # labels drawn from softmax(z): z is calibrated
    cal, test = slice(0, 2000), slice(2000, None)
    methods = [_Scale(1.03), _Scale(1 / 3)]
    rep = cp.report(
        {"m": (z[test], y[test])},
        logits=True,
        calibration={"m": (z[cal], y[cal])},
        recalibrators=methods,
        null_resamples=0,
        n_bootstrap=n_bootstrap,
    )
    base = rep.row("m")
    tiny, worse = rep.rows[1], rep.rows[2]
    # a change of about 1e-4 in NLL: the old rule (any increase) would have flagged it
    dn = tiny.metrics["nll"] - base.metrics["nll"]
    assert 0 < dn < 1e-3
    d, lo, hi = tiny.differences["nll"]
    assert d == pytest.approx(dn, rel=1e-9) and lo < 0 < hi
    assert not any("worse" in f for f in tiny.flags)
    # sharpening by 3 really hurts: flagged, with its paired interval
    d, lo, hi = worse.differences["nll"]
    assert lo > 0
    flags = [f for f in worse.flags if "worse beyond the noise" in f]
    assert len(flags) == 1 and "paired interval" in flags[0] and "does not help" in flags[0]
    assert not base.differences


class _MeanReplacement(Recalibrator):
    """Test double: the predicted class gets the calibration accuracy, the rest share."""

    input = "probs"

    def __init__(self) -> None:
        pass

    def _fit(self, S, y, w):
        self.a_ = float(np.mean(S.argmax(1) == y))

    def _transform(self, S):
        out = np.full_like(S, (1 - self.a_) / (S.shape[1] - 1))
        out[np.arange(len(S)), S.argmax(1)] = self.a_
        return out


def test_pitfall_flag_carries_its_paired_interval() -> None:
    z, y = _data(n=2000, seed=1)
    rep = cp.report(  # z is calibrated: replacing it by the mean loses all refinement
        {"m": (z[1000:], y[1000:])},
        logits=True,
        calibration={"m": (z[:1000], y[:1000])},
        recalibrators=[_MeanReplacement()],
        null_resamples=0,
    )
    r, base = rep.row("m", "_MeanReplacement"), rep.row("m")
    assert r.metrics["ece"] < base.metrics["ece"]
    for key in ("nll", "brier"):
        d, lo, hi = r.differences[key]
        assert d == pytest.approx(r.metrics[key] - base.metrics[key], rel=1e-9) and lo > 0
    (flag,) = [f for f in r.flags if "pitfall" in f]
    assert "got worse beyond the noise" in flag and flag.count("paired interval") == 2


def test_binary_input_is_measured_in_the_positive_class_lens() -> None:
    rng = np.random.default_rng(3)
    p = rng.uniform(0.02, 0.98, size=1500)
    y = (rng.uniform(size=1500) < np.where(p < 0.5, p / 2, p)).astype(int)  # bad below 0.5
    rep = cp.report({"b": (p, y)}, null_resamples=100)
    m = rep.row("b").metrics
    pos = cp.proper_calibration_error(p, y, lens="binary", bandwidth=0.02)
    assert m["ce_kl"] == pytest.approx(pos.value, rel=1e-10)
    assert m["refinement_kl"] == pytest.approx(pos.refinement, rel=1e-10)
    assert m["ece"] == pytest.approx(cp.ece(p, y, lens="binary"), rel=1e-12)
    assert "positive class" in rep.settings["ece"]
    # the null draws y* ~ Bernoulli(p), by hand with the report's generator (seed 0)
    fake = np.random.default_rng(0).random((100, 1500)) < p
    null = np.array([cp.ece(p, f.astype(int), lens="binary") for f in fake])
    observed = cp.ece(p, y, lens="binary")
    assert m["ece_p_value"] == pytest.approx((1 + np.sum(null >= observed - 1e-15)) / 101)
    # two columns stay top-label: max(p, 1 - p) against correctness
    two = cp.report({"b": (np.stack([1 - p, p], 1), y)}, null_resamples=0)
    conf, correct = np.maximum(p, 1 - p), ((p > 0.5) == y).astype(int)
    top = cp.proper_calibration_error(conf, correct, lens="binary", bandwidth=0.02)
    assert two.row("b").metrics["ce_kl"] == pytest.approx(top.value, rel=1e-10)
    assert abs(top.value - pos.value) > 0.1 * pos.value  # the two lenses differ here
    assert "top label" in two.settings["ece"]


def test_progress_is_one_line_per_step_when_stderr_is_not_a_terminal(capsys) -> None:
    z, y = _data(n=400, seed=2)
    cp.report(
        {"m": (z[200:], y[200:])},
        logits=True,
        calibration={"m": (z[:200], y[:200])},
        recalibrators=[cp.TemperatureScaling()],
        n_bootstrap=20,
        null_resamples=0,
        progress=True,
    )
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0].startswith("calipers report: m: fitting TemperatureScaling (1/1) (")
    assert any(ln.startswith("calipers report: [1/2] m / uncalibrated: suite (") for ln in lines)
    assert any("[2/2] m / TemperatureScaling: bootstrap 20/20 resamples" in ln for ln in lines)
    assert "\r" not in err  # no progress bar
    cp.report({"m": (z, y)}, logits=True, null_resamples=0)
    assert capsys.readouterr().err == ""  # progress=False: silent


def test_cli_progress_lines_reach_a_pipe(tmp_path) -> None:
    z, y = _data(n=300, seed=4)
    f = tmp_path / "preds.npz"
    np.savez(f, logits=z, labels=y)
    proc = subprocess.run(
        [sys.executable, "-m", "calipers", "report", str(f), "--bootstrap", "20"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "calipers report: [1/1] preds / uncalibrated: suite (" in proc.stderr
    assert "calipers report: [1/1] preds / uncalibrated: bootstrap 20/20 resamples" in proc.stderr
