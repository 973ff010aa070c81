"""The Friedman 1 variance-regression reproduction of Gruber & Buettner (2022, App. G.5.2).

The script runs once in ``--quick`` mode (a module-scoped fixture) into a temporary
folder. The tests check its outputs against facts computed here, independently of
the script: the noise law of the data generator (Monte Carlo), the recalibrated
average variance against the test MSE, the fitted objective on the validation set,
and the Dawid-Sebastiani score, SKCE, MSE and average variance recomputed from the
saved final predictions.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("torch")

from calipers.regression import dawid_sebastiani  # noqa: E402
from calipers.regression.skce import gaussian_skce  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "reproduce_gruber2022_regression.py"


@pytest.fixture(scope="module")
def script() -> dict:
    return runpy.run_path(str(SCRIPT), run_name="reproduce_under_test")


@pytest.fixture(scope="module")
def quick(script: dict, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("friedman1")
    return script["main"](["--quick", "--out", str(out)]), out


def _friedman1(x: np.ndarray) -> np.ndarray:
    # Friedman (1991); Gruber & Buettner 2022, eq. 62, written out independently
    return (
        10 * np.sin(np.pi * x[:, 0] * x[:, 1])
        + 20 * (x[:, 2] - 0.5) ** 2
        + 10 * x[:, 3]
        + 5 * x[:, 4]
    )


def test_outputs_exist(quick: tuple[dict, Path]) -> None:
    res, out = quick
    png = out / "fig9_friedman1.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 1_000 < png.stat().st_size < 400_000
    assert json.loads((out / "friedman1.json").read_text())["seeds"] == res["seeds"] == 2
    with np.load(out / "friedman1_final_predictions.npz", allow_pickle=False) as f:
        assert set(f.files) == {"mean", "variance", "variance_recal", "targets"}
        assert f["mean"].shape == (2, 100)


def test_noise_law_is_heteroscedastic_with_sd_half_plus_x6(script: dict) -> None:
    rng = np.random.default_rng(12345)
    x, y = script["draw_friedman1"](400_000, rng)
    assert x.shape == (400_000, 10)
    assert x.min() >= 0.0 and x.max() <= 1.0
    eps = y - _friedman1(x)
    # E eps = 0 and Var eps = E (0.5 + X6)^2 = 1/4 + 1/2 + 1/3 = 13/12 (sd 0.5 + X6);
    # were 0.5 + X6 the variance, Var eps would be E(0.5 + X6) = 1
    assert abs(eps.mean()) < 0.01
    assert eps.var() == pytest.approx(13 / 12, abs=0.015)
    # conditionally on X6, and independent of the other features
    for lo in (0.0, 0.45, 0.9):
        rows = (x[:, 5] >= lo) & (x[:, 5] < lo + 0.1)
        x6 = x[rows, 5]
        assert eps[rows].var() == pytest.approx(np.mean((0.5 + x6) ** 2), rel=0.03)
    rows = x[:, 0] > 0.9
    assert eps[rows].var() == pytest.approx(13 / 12, rel=0.03)


def test_final_numbers_recomputed_from_saved_predictions(quick: tuple[dict, Path]) -> None:
    res, out = quick
    last = res["per_seed_last"]
    saved = json.loads((out / "friedman1.json").read_text())
    assert saved["per_seed_last"] == last
    with np.load(out / "friedman1_final_predictions.npz", allow_pickle=False) as f:
        mu, var, var_c, y = f["mean"], f["variance"], f["variance_recal"], f["targets"]
    for s in range(2):
        dss = np.mean(np.log(var[s]) + (y[s] - mu[s]) ** 2 / var[s])
        assert last["dss"][s] == pytest.approx(dss, rel=1e-12)
        assert last["dss"][s] == pytest.approx(
            dawid_sebastiani(mu[s], variance=var[s], targets=y[s])
        )
        assert last["dss_recal"][s] == pytest.approx(
            dawid_sebastiani(mu[s], variance=var_c[s], targets=y[s])
        )
        assert last["skce"][s] == pytest.approx(gaussian_skce(mu[s], variance=var[s], targets=y[s]))
        assert last["skce_recal"][s] == pytest.approx(
            gaussian_skce(mu[s], variance=var_c[s], targets=y[s])
        )
        assert last["mse"][s] == pytest.approx(np.mean((y[s] - mu[s]) ** 2))
        assert last["avg_var"][s] == pytest.approx(var[s].mean())
        assert last["avg_var_recal"][s] == pytest.approx(var_c[s].mean())
        # the recalibrated variance is exp(b) (sigma^2)^w with the recorded w, b
        np.testing.assert_allclose(
            var_c[s], np.exp(last["w"][s] * np.log(var[s]) + last["b"][s]), rtol=1e-10
        )
    # the mean over seeds at the last step is what the summary reports
    assert res["summary"]["at"]["last"]["dss"] == pytest.approx(np.mean(last["dss"]))


def test_recalibrated_variance_tracks_the_mse(quick: tuple[dict, Path]) -> None:
    _, out = quick
    with np.load(out / "friedman1_final_predictions.npz", allow_pickle=False) as f:
        mu, var, var_c, y = f["mean"], f["variance"], f["variance_recal"], f["targets"]
    for s in range(2):
        mse = np.mean((y[s] - mu[s]) ** 2)
        # Gruber & Buettner 2022, Table 1: only after recalibration Avg Var ~ MSE
        assert abs(np.log(var_c[s].mean() / mse)) < abs(np.log(var[s].mean() / mse))
        # the recalibration leaves the means alone and keeps the variances positive
        assert np.all(var_c[s] > 0)


def test_recalibration_lowers_the_fitted_objective(quick: tuple[dict, Path]) -> None:
    res, _ = quick
    c = res["summary"]["curves"]
    before = np.asarray(c["val_dss"]["mean"])
    after = np.asarray(c["val_dss_recal"]["mean"])
    # Platt scaling minimises the validation DSS over (w, b), and (1, 0) is the identity
    assert np.all(after <= before + 1e-9)
    assert len(before) == len(res["summary"]["iteration"]) == 1000 // 50 + 1


def test_overfitting_and_its_repair(quick: tuple[dict, Path]) -> None:
    res, _ = quick
    at = res["summary"]["at"]
    # Fig. 9: the test DSS rises after its minimum (the variance overfits) while
    # the recalibrated DSS does not; the MSE is not overfitted
    assert at["last"]["dss"] > at["best"]["dss"] + 1.0
    assert at["last"]["dss_recal"] < at["last"]["dss"]
    assert at["last"]["avg_var"] < at["best"]["avg_var"]
    assert res["summary"]["statements"]["mse_not_overfitted"]
