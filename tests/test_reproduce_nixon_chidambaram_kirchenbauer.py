"""The paper reproductions examples/reproduce_{nixon2019,chidambaram2024,kirchenbauer2022}.py.

Each script runs in ``--quick`` mode into a temporary folder (through its
``main``, loaded with ``runpy``), must write its figures, and its numbers are
checked against values computed here independently: closed forms (the MRR rows
of Chidambaram & Ge 2024), hand-written numpy estimators (equal-width ECE,
the class-wise error against known probabilities), inequalities that hold by
construction (inter-interval distance <= L1 distance on the same bins) and the
qualitative findings the scripts reproduce (noise raises the calibration error;
MRR zeroes ECE while destroying sharpness).
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers as cp

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _run(name: str, out: Path) -> dict[str, Any]:
    module = runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=name)
    result: dict[str, Any] = module["main"](["--quick", "--out", str(out)])
    return result


def _assert_png(path: Path) -> None:
    assert path.is_file(), path
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 5_000 < path.stat().st_size < 150_000


def _numpy_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int) -> float:
    """Top-label ECE, equal-width bins (lo, hi] (Guo et al. 2017), written out here."""
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    bins = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    total = 0.0
    for b in range(n_bins):
        m = bins == b
        if m.any():
            total += m.sum() * abs(correct[m].mean() - conf[m].mean())
    return total / len(conf)


# --- Nixon et al. 2019 ------------------------------------------------------------------


@pytest.fixture(scope="module")
def nixon(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run("reproduce_nixon2019", tmp_path_factory.mktemp("nixon"))


def test_nixon_writes_its_figure_and_table(nixon: dict[str, Any]) -> None:
    _assert_png(nixon["figure"])
    assert (nixon["figure"].parent / "label_noise.csv").is_file()
    # 3 noise levels x 2 repetitions x 5 temperatures
    assert len(nixon["rows"]) == 30
    assert [s["noise"] for s in nixon["summary"]] == [0.0, 0.4, 0.8]


def test_nixon_noise_raises_every_calibration_error(nixon: dict[str, Any]) -> None:
    s = nixon["summary"]
    for key in ("ECE", "ACE", "TACE", "SCE", "true_classwise", "true_top_label"):
        assert s[-1][key] > s[0][key], key
    assert s[0]["true_classwise"] < s[1]["true_classwise"] < s[2]["true_classwise"]
    # noise destroys accuracy: about 0.96 clean, about (1 - 0.8) + 0.8 / 10 = 0.28 at most with lam = 0.8
    assert s[0]["accuracy"] > 0.9 and s[-1]["accuracy"] < 0.3


def test_nixon_metrics_rank_models_like_the_truth_without_noise(nixon: dict[str, Any]) -> None:
    # tempering the logits changes calibration monotonically away from T ~ 1: every metric follows
    rho = nixon["summary"][0]
    for name in ("ECE", "ACE", "TACE", "SCE"):
        assert rho[f"rho_{name}"] > 0.7, name


def test_nixon_true_error_is_the_ace_with_onehot_targets() -> None:
    # with one-hot "true" probabilities and n a multiple of the bin count the ground-truth
    # estimator of the script is exactly Nixon et al.'s ACE with count weights
    module = runpy.run_path(str(EXAMPLES / "reproduce_nixon2019.py"), run_name="nixon")
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), 30)
    y = rng.integers(0, 3, 30)
    assert module["true_classwise_error"](p, np.eye(3)[y]) == pytest.approx(
        float(cp.ace(p, y, n_bins=15)), abs=1e-12
    )
    # known probabilities equal to the predictions: no calibration error at all
    assert module["true_classwise_error"](p, p) == pytest.approx(0.0, abs=1e-15)
    assert module["true_top_label_error"](p, p) == pytest.approx(0.0, abs=1e-15)
    # hand example, 2 samples, 1 bin per class: mean p = (.6, .4), mean pi = (.5, .5)
    p2, pi2 = np.array([[0.8, 0.2], [0.4, 0.6]]), np.array([[1.0, 0.0], [0.0, 1.0]])
    assert module["true_classwise_error"](p2, pi2, n_bins=1) == pytest.approx(0.1)


# --- Chidambaram & Ge 2024 --------------------------------------------------------------


@pytest.fixture(scope="module")
def chidambaram(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run("reproduce_chidambaram2024", tmp_path_factory.mktemp("chidambaram"))


def _mrr_closed_form(test_acc: float, cal_acc: float, k: int) -> tuple[float, float]:
    """NLL and Brier (sum over classes) of MRR, from the accuracies alone."""
    b = (1 - cal_acc) / (k - 1)
    nll = -test_acc * np.log(cal_acc) - (1 - test_acc) * np.log(b)
    brier = test_acc * (1 - cal_acc) ** 2 * k / (k - 1) + (1 - test_acc) * (
        cal_acc**2 + (1 - b) ** 2 + (k - 2) * b**2
    )
    return float(nll), float(brier)


def test_chidambaram_writes_its_figure(chidambaram: dict[str, Any]) -> None:
    _assert_png(chidambaram["figure"])
    assert (chidambaram["figure"].parent / "table.csv").is_file()
    assert (chidambaram["figure"].parent / "mrr_rows.csv").is_file()


def test_chidambaram_mrr_rows_match_the_closed_form_and_the_paper(
    chidambaram: dict[str, Any],
) -> None:
    rows = chidambaram["mrr_rows"]
    assert [r["table"] for r in rows] == ["Table 5", "Table 6"]  # --quick: the CIFAR tables
    for r in rows:
        a_t, gap = r["paper_acc"] / 100, r["paper_ece"] / 100
        forms = [_mrr_closed_form(a_t, a_t - s * gap, r["K"]) for s in (1, -1)]
        nll, brier = min(forms, key=lambda f: abs(100 * f[0] - r["paper_nll"]))
        assert r["calipers_NLL"] == pytest.approx(100 * nll, abs=1e-9)
        assert r["calipers_Brier"] == pytest.approx(100 * brier, abs=1e-9)
        for metric in ("ECE", "ACE", "SmoothECE"):
            assert r[f"calipers_{metric}"] == pytest.approx(100 * gap, abs=1e-6), metric
        assert r["calipers_accuracy"] == pytest.approx(r["paper_acc"], abs=1e-9)
        # the paper prints 2 decimals of rounded accuracies: agreement to 0.05 (x100)
        assert r["calipers_NLL"] == pytest.approx(r["paper_nll"], abs=0.05)
        assert r["calipers_Brier"] == pytest.approx(r["paper_brier"], abs=0.05)


def test_chidambaram_mrr_games_ece_and_loses_sharpness(chidambaram: dict[str, Any]) -> None:
    t = chidambaram["table"]
    mrr, base, ts = t["MRR"], t["uncalibrated"], t["TS"]
    assert mrr["accuracy"] == base["accuracy"]  # MRR keeps the arg-max
    assert mrr["ECE"] < base["ECE"] and mrr["ECE"] < 0.5  # (x100) near zero
    assert mrr["ECE"] == pytest.approx(mrr["ACE"]) == pytest.approx(mrr["SmoothECE"], abs=1e-6)
    assert mrr["conf_std"] < 1e-12 < 0.01 < base["conf_std"]  # one confidence for every sample
    assert mrr["Brier"] > max(base["Brier"], ts["Brier"])
    assert mrr["NLL"] > ts["NLL"]
    # the sharpness gap (total divergence minus calibration error, Chidambaram & Ge 2024
    # Lemma 4.1) grows under MRR: what the band of the diagram shows
    probs, labels = chidambaram["probs"], chidambaram["labels"]
    gaps = {}
    for method in ("uncalibrated", "MRR"):
        cs = cp.calibration_sharpness(probs[method], labels)
        gaps[method] = cs.total_divergence - cs.calibration_error
    assert gaps["MRR"] > gaps["uncalibrated"]
    # the table's ECE column is the equal-width ECE, checked against a numpy version
    for method, p in probs.items():
        assert t[method]["ECE"] == pytest.approx(100 * _numpy_ece(p, labels, 15), abs=1e-9)


# --- Kirchenbauer, Oaks & Heim 2022 ------------------------------------------------------


@pytest.fixture(scope="module")
def kirchenbauer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run("reproduce_kirchenbauer2022", tmp_path_factory.mktemp("kirchenbauer"))


def test_kirchenbauer_writes_its_figures(kirchenbauer: dict[str, Any]) -> None:
    assert set(kirchenbauer["figures"]) == {"likert", "grouping", "granularity"}
    for path in kirchenbauer["figures"].values():
        _assert_png(path)


def test_kirchenbauer_bin_sweep_is_the_ece_at_each_bin_count(kirchenbauer: dict[str, Any]) -> None:
    probs, labels = kirchenbauer["probs"], kirchenbauer["labels"]
    ece_rows = [r for r in kirchenbauer["sweep"] if r["metric"] == "ece"]
    assert [r["setting"] for r in ece_rows] == [2, 15, 100]
    for r in ece_rows:
        b = int(r["setting"])
        assert r["estimate"] == pytest.approx(_numpy_ece(probs, labels, b), abs=1e-12)
        assert r["estimate"] == pytest.approx(float(cp.ece(probs, labels, n_bins=b)), abs=1e-15)
    full_rows = [r for r in kirchenbauer["sweep"] if r["metric"] == "full_ece"]
    assert [r["setting"] for r in full_rows] == [0.5, 2**-4, 2**-7]
    for r in full_rows:
        assert r["estimate"] == pytest.approx(float(cp.full_ece(probs, labels, gamma=r["setting"])))
        assert 0 < r["boot_std"] < 0.05
    # finer bins, larger estimate (the positive bias of sparse bins, App. B.3)
    assert full_rows[0]["estimate"] < full_rows[-1]["estimate"]
    assert ece_rows[0]["estimate"] < ece_rows[-1]["estimate"]


def test_kirchenbauer_likert_errors_are_bounded_by_the_l1_error(
    kirchenbauer: dict[str, Any],
) -> None:
    # on the same bins the inter-interval distance of a bin whose scores lie in [l, h] is at
    # most |y_bar - s_bar| (s_bar is inside [l, h]); so is each category's error
    from sklearn.datasets import load_breast_cancer  # noqa: F401  (the script's fallback data)

    likert = kirchenbauer["likert"]
    assert set(likert) == {"logistic regression", "naive Bayes", "random forest"}
    module = runpy.run_path(str(EXAMPLES / "reproduce_kirchenbauer2022.py"), run_name="k")
    _, models = module["binary_forecasts"](None)
    intervals = module["LIKERT"]
    for name, (p, y) in models.items():
        for j, (lo, hi) in enumerate(intervals):
            l1 = cp.calibration_error(
                p, y, selection=cp.ScoreInterval(lo, hi), estimator=cp.KDTree(0.1), divergence="l1"
            )
            assert 0.0 <= likert[name][2 + j] <= float(l1) + 1e-12, (name, lo, hi)
        assert likert[name][0] == pytest.approx(float(cp.ece(p, y)))


def test_kirchenbauer_grouping_is_coarser_than_the_full_ece(kirchenbauer: dict[str, Any]) -> None:
    g = kirchenbauer["grouping"]
    assert g["group ECE"] < g["full ECE (finest grouping)"]
    assert len([k for k in g if k.startswith("group ECE | true class in")]) == 3
