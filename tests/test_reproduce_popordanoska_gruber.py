"""The reproduction scripts of Popordanoska et al. (2024) and Gruber & Buettner (2022).

Each script runs once in ``--quick`` mode (module-scoped fixtures) into a temporary
folder; the tests check that the figures exist and that the numbers obey
expectations computed independently of the scripts: a quadrature of the synthetic
recipe, closed forms of the simulated models, the published values for the
DenseNet-40 logits (Kull et al. 2019), and a numpy Brier score.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import quad

from shared_data import available, data_dir

pytest.importorskip("matplotlib")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _run(script: str, argv: list[str]) -> dict:
    module = runpy.run_path(str(EXAMPLES / script), run_name="reproduce_under_test")
    return module["main"](argv)


@pytest.fixture(scope="module")
def popordanoska(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    out = tmp_path_factory.mktemp("popordanoska")
    return _run("reproduce_popordanoska2024.py", ["--quick", "--out", str(out)]), out


@pytest.fixture(scope="module")
def gruber(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("gruber")
    argv = ["--quick", "--out", str(out)]
    if available("densenet40_c10_test.npz", "densenet40_c10_val.npz"):
        d = data_dir()
        argv += ["--data", str(d / "densenet40_c10_test.npz")]
        argv += ["--calibration", str(d / "densenet40_c10_val.npz")]
    return _run("reproduce_gruber2022.py", argv), out


def _png(path: Path) -> None:
    assert path.exists(), path
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 1_000 < path.stat().st_size < 400_000


# ------------------------------------------------------------ Popordanoska et al. 2024


def test_popordanoska_figures(popordanoska: tuple[dict, Path]) -> None:
    _, out = popordanoska
    _png(out / "fig2_estimators.png")
    _png(out / "fig3_information_monotonicity.png")


def test_popordanoska_truth_k2_matches_quadrature(popordanoska: tuple[dict, Path]) -> None:
    # K = 2: u ~ U(0, 1), p1 = tempered (1 - u, u) at T = 0.9, p2 = p1 tempered at T = 0.6;
    # class-wise CE_KL = E[KL(p1 || p2)] (binary KL, the same for both classes)
    def kl(u: float) -> float:
        p = u ** (1 / 0.9) / (u ** (1 / 0.9) + (1 - u) ** (1 / 0.9))
        q = p ** (1 / 0.6) / (p ** (1 / 0.6) + (1 - p) ** (1 / 0.6))
        p, q = min(max(p, 1e-7), 1 - 1e-7), min(max(q, 1e-7), 1 - 1e-7)
        return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))

    exact = quad(kl, 0, 1, limit=200)[0]
    res, _ = popordanoska
    assert res["fig2"][2]["truth"] == pytest.approx(exact, abs=2e-3)
    assert res["fig2"][2]["authors_truth"] == pytest.approx(exact, abs=2e-3)
    # for K > 2 the authors' ground truth is an upper bound of the class-wise CE (Jensen)
    for k in (5, 10):
        assert res["fig2"][k]["truth"] <= res["fig2"][k]["authors_truth"] + 1e-4


def test_popordanoska_bias_shrinks_with_n(popordanoska: tuple[dict, Path]) -> None:
    res, _ = popordanoska
    for k, r in res["fig2"].items():
        rows = r["rows"]
        assert [row["n"] for row in rows] == [100, 400]
        small, large = (abs(row["direct_mean"] - r["truth"]) for row in rows)
        assert large < small, k
        # at n = 100 every estimator over-estimates the (small) true error
        assert rows[0]["direct_mean"] > r["truth"]
        assert rows[0]["binned_mean"] > r["truth"]


def test_popordanoska_sharpness_bounds_and_monotonicity(popordanoska: tuple[dict, Path]) -> None:
    res, _ = popordanoska
    fig3 = res["fig3"]
    from sklearn.datasets import load_digits

    _, y = load_digits(return_X_y=True)
    from sklearn.model_selection import train_test_split

    _, y_te = train_test_split(y, test_size=0.5, random_state=0, stratify=y)
    freq = np.bincount(y_te, minlength=10) / len(y_te)
    assert fig3["max"] == pytest.approx(1 - (freq**2).sum())
    s = np.array(fig3["sharpness"])
    assert s.shape == (len(fig3["epoch"]), 4)
    assert np.all(s >= -1e-9)
    assert np.all(s <= fig3["max"] + 1e-9)
    # the network learns, and the first hidden layer is at least as sharp as the last
    assert fig3["accuracy"][-1] > 0.2
    assert s[-1, 0] >= s[-1, 3]
    assert s[-1, 0] > s[0, 0]


# ------------------------------------------------------------- Gruber & Buettner 2022


def test_gruber_figures(gruber: tuple[dict, Path]) -> None:
    _, out = gruber
    for name in (
        "fig2_ece_simulation.png",
        "fig2_estimators_simulation.png",
        "real_logits_test_size.png",
    ):
        _png(out / name)


def test_gruber_simulation_truth(gruber: tuple[dict, Path]) -> None:
    res, _ = gruber
    t = res["simulation"]["truth"]
    # softmax(logits) is the label distribution: every calibration error is exactly 0
    for key in ("TCE1", "ECE15 limit", "TCE2", "CE2"):
        assert t["perfect"][key] == 0.0
    # scaling the logits keeps the arg-max and makes the model more over-confident
    assert t["perfect"]["accuracy"] == t["mediocre"]["accuracy"] == t["bad"]["accuracy"]
    for key in ("TCE1", "TCE2", "CE2"):
        assert 0 < t["mediocre"][key] < t["bad"][key]
    for m in t.values():
        # population hierarchy (Gruber & Buettner 2022, Thm. 3.1 and 4.3)
        assert m["ECE15 limit"] <= m["TCE1"] + 1e-12 <= m["TCE2"] + 2e-12
        assert m["TCE2"] <= m["CE2"] + 1e-12 <= m["RBS limit"] + 2e-12


def test_gruber_simulation_estimates(gruber: tuple[dict, Path]) -> None:
    res, _ = gruber
    sim = res["simulation"]
    assert sim["sizes"] == [100, 1000]
    ece = sim["estimates"]["perfect"]["ECE"]["mean"]
    # Prop. 3.3: the ECE of a calibrated model is positive and falls with n
    assert ece[0] > ece[1] > 0
    for name, est in sim["estimates"].items():
        # RBS estimates the upper bound of CE_2
        assert min(est["RBS"]["mean"]) >= sim["truth"][name]["CE2"]


def test_gruber_real_logits(gruber: tuple[dict, Path]) -> None:
    res, _ = gruber
    real = res["real"]
    full = real["full"]
    for i in (0, 1):
        rbs = full["RBS"][i]
        assert rbs == pytest.approx(np.sqrt(full["U_BS"][i]))
        # the upper bound is above every lower-bound estimate on the same data
        for key in ("ECE", "100b TCE2", "15b d TCE2", "KS", "15b CWCE2"):
            assert full[key][i] <= rbs
    assert real["improvement_bs"] == pytest.approx(full["U_BS"][0] - full["U_BS"][1])
    assert real["sizes"][-1] == real["n"]
    if real["densenet"]:
        # values published for these logits (Kull et al. 2019)
        assert full["accuracy"][0] == pytest.approx(1 - 0.0758, abs=1e-4)
        assert full["ECE"][0] == pytest.approx(0.055003, abs=1e-6)
        assert full["ECE"][1] == pytest.approx(0.009464, abs=2e-5)
        assert full["U_BS"][0] == pytest.approx(10 * 0.012738, abs=1e-5)
        assert real["temperature"] == pytest.approx(2.88, abs=0.01)
    else:
        from calipers.datasets import load_default_predictions

        d = load_default_predictions()
        z = d.logits["logistic_regression"][~d.is_calibration]
        y = d.labels[~d.is_calibration]
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        brier = ((p - np.eye(p.shape[1])[y]) ** 2).sum(1).mean()
        assert full["U_BS"][0] == pytest.approx(brier)
        assert full["accuracy"][0] == pytest.approx((p.argmax(1) == y).mean())
