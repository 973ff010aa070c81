"""The report and the argument checks read a distribution of any kind as they read Gaussians.

* The summary of predictions without a density (quantile sets, ensembles) ranks the
  methods by the CRPS, not by an NLL that is nan ("no method lowered the NLL (nan)").
* The recalibrated row's PIT KS is the KS of the recalibrator's randomised PIT
  (``predict_pit``, Czado, Gneiting & Held 2009), as the uncalibrated row's is the KS of
  the randomised ``pit_values``: the upper end of each jump (``predict_cdf``) made a
  well recalibrated quantile set read 0.21.
* A distribution followed by positional targets is told to pass ``targets=``, not a spread.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtri

import calipers as cp
from calipers.regression import QuantileSet, SampleEnsemble, check_predictive, pit_values


def _quantile_model(n: int = 3000, seed: int = 3) -> tuple[QuantileSet, np.ndarray]:
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    y = mu + 2.0 * rng.normal(size=n)  # predicted sd 1, true sd 2
    levels = np.linspace(0.05, 0.95, 19)
    return QuantileSet(levels, mu[:, None] + ndtri(levels)[None, :]), y


def test_summary_of_a_quantile_set_ranks_by_crps_and_pit_ks_is_randomised() -> None:
    Q, y = _quantile_model()
    cal, test = np.arange(1500), np.arange(1500, 3000)
    rep = cp.regression_report(
        {"m": check_predictive(Q.take(test), targets=y[test])},
        calibration={"m": check_predictive(Q.take(cal), targets=y[cal])},
        recalibrators=[cp.QuantileRecalibration()],
    )
    text = rep.to_markdown()
    assert "NLL (nan)" not in text
    assert "lowest CRPS where the predictions have no density" in text
    # independent oracle: the CRPS of each row as 2 x the mean pinball loss at the levels
    before = float(Q.take(test).crps(y[test]).mean())
    rec = cp.QuantileRecalibration().fit(Q.take(cal), targets=y[cal])
    after = rec.scores(Q.take(test), targets=y[test])["crps"]
    assert after < before
    assert f"Best by CRPS: QuantileRecalibration (CRPS {before:.4f} -> {after:.4f})" in text

    rows = {r.method: r for r in rep.rows}
    u = rec.predict_pit(Q.take(test), targets=y[test])
    ks_after = stats.kstest(u, "uniform").statistic
    ks_before = stats.kstest(pit_values(Q.take(test), targets=y[test]), "uniform").statistic
    assert rows["QuantileRecalibration"].metrics["pit_ks"] == pytest.approx(ks_after, abs=1e-12)
    assert rows["uncalibrated"].metrics["pit_ks"] == pytest.approx(ks_before, abs=1e-12)
    assert ks_after < 0.05 < ks_before


def test_summary_of_gaussians_still_ranks_by_nll() -> None:
    rng = np.random.default_rng(0)
    mu = rng.normal(size=2000)
    y = mu + 2.0 * rng.normal(size=2000)
    sd = np.ones(2000)
    rep = cp.regression_report(
        {"g": {"mean": mu[1000:], "std": sd[1000:], "targets": y[1000:]}},
        calibration={"g": {"mean": mu[:1000], "std": sd[:1000], "targets": y[:1000]}},
        recalibrators=[cp.VarianceScaling()],
    )
    text = rep.to_markdown()
    assert "(per model: the lowest-NLL method" in text
    assert "Best by NLL: VarianceScaling" in text


def test_an_ensemble_report_never_speaks_of_a_nan_nll() -> None:
    rng = np.random.default_rng(1)
    n = 1200
    mu = rng.normal(size=n)
    y = mu + 1.5 * rng.normal(size=n)
    S = SampleEnsemble(mu[:, None] + rng.normal(size=(n, 30)))
    rep = cp.regression_report({"ens": check_predictive(S, targets=y)})
    assert "nan)" not in rep.to_markdown().split("\n\n|")[0]


@pytest.mark.parametrize("call", ["pit_values", "predict_cdf"])
def test_a_distribution_with_positional_targets_is_told_to_name_them(call: str) -> None:
    Q = QuantileSet([0.1, 0.9], [[0.0, 1.0]])
    with pytest.raises(TypeError, match=r"takes the targets by name: pass targets=\.\.\."):
        if call == "pit_values":
            pit_values(Q, [0.5])
        else:
            cp.QuantileRecalibration().predict_cdf(Q, [0.5])


def test_summary_of_one_quantile_model_gives_its_crps() -> None:
    Q, y = _quantile_model(n=800)
    rep = cp.regression_report({"q": check_predictive(Q, targets=y)})
    summary = rep.to_markdown().split("\n\n|")[0]
    want = float(Q.crps(y).mean())
    assert f"- **q**: CRPS {want:.4f}." in summary
    assert "NLL" not in summary.split("\n", 1)[1]


def test_ensemble_improvement_agrees_with_the_crps_columns() -> None:
    # an ensemble too narrow by half: the row's CRPS is the standard ensemble estimator,
    # and the improvement is that number minus the recalibrated row's, not a difference of
    # two other readings of the ensemble
    rng = np.random.default_rng(5)
    n = 2400
    mu = rng.normal(size=n)
    y = mu + 2.0 * rng.normal(size=n)
    S = SampleEnsemble(mu[:, None] + rng.normal(size=(n, 15)))
    cal, test = np.arange(1200), np.arange(1200, n)
    rep = cp.regression_report(
        {"e": check_predictive(S.take(test), targets=y[test])},
        calibration={"e": check_predictive(S.take(cal), targets=y[cal])},
        recalibrators=[cp.QuantileRecalibration()],
    )
    rows = {r.method: r for r in rep.rows}
    before, after = rows["uncalibrated"].metrics, rows["QuantileRecalibration"].metrics
    from calipers.regression import crps_ensemble

    assert before["crps"] == pytest.approx(crps_ensemble(S.take(test).samples, y[test]), rel=1e-12)
    assert after["crps_improvement"] == pytest.approx(before["crps"] - after["crps"], abs=1e-9)
    d = rows["QuantileRecalibration"].differences["crps"]
    assert d[0] == pytest.approx(after["crps"] - before["crps"], abs=1e-9)


def test_improvement_of_an_ensemble_starts_from_its_own_crps() -> None:
    rng = np.random.default_rng(8)
    n = 2000
    mu = rng.normal(size=n)
    y = mu + 2.0 * rng.normal(size=n)
    S = SampleEnsemble(mu[:, None] + rng.normal(size=(n, 12)))
    cal, test = np.arange(1000), np.arange(1000, n)
    rec = cp.QuantileRecalibration().fit(S.take(cal), targets=y[cal])
    from calipers.regression import crps_ensemble

    own = crps_ensemble(S.take(test).samples, y[test])
    after = rec.scores(S.take(test), targets=y[test])["crps"]
    got = rec.improvement(S.take(test), targets=y[test])["crps"]
    assert got == pytest.approx(own - after, abs=1e-12)
