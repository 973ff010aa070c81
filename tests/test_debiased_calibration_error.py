"""Debiased binned calibration errors (Kumar, Liang & Ma 2019; docs/how-calipers-computes.md §4.1).

Checked against the worked example of docs/how-calipers-computes.md §4.1, against the PyPI
package ``uncertainty-calibration`` (import name ``calibration``) as an oracle,
and for (near) unbiasedness on a simulated design with a known bin-wise truth.
"""

import numpy as np
import pytest

import calipers as cp
from calipers.metrics._debiased_calibration_error import debiased_calibration_error

CONF = np.array([0.55, 0.6, 0.65, 0.7, 0.8, 0.9, 0.9, 0.95])
CORRECT = np.array([1, 0, 1, 0, 1, 1, 0, 1])
P8 = np.stack([CONF, 1 - CONF], axis=1)  # class 0 is the predicted class
Y8 = np.where(CORRECT == 1, 0, 1)
EM2 = cp.EqualMass(2, rule="kumar")


def _random(n: int, k: int, seed: int, temp: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident softmax predictions with labels drawn from a cooler model."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 1.5
    p = np.exp(temp * z)
    p /= p.sum(1, keepdims=True)
    q = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = (q.cumsum(1) < rng.uniform(size=(n, 1))).sum(1).clip(max=k - 1)
    return p, y


# ---------------------------------------------------------------- worked example


def test_worked_example_by_hand() -> None:
    # bins {.55,.6,.65,.7 | y .5} and {.8,.9,.9,.95 | y .75}, edge 0.75
    plug_in = 0.5 * (0.125**2 + 0.1375**2)
    debiased = 0.5 * (0.125**2 - 0.25 / 3) + 0.5 * (0.1375**2 - 0.1875 / 3)
    assert plug_in == pytest.approx(0.0172656, abs=1e-7)
    assert debiased == pytest.approx(-0.0556510, abs=1e-7)
    assert debiased_calibration_error(P8, Y8, estimator=EM2, root=False) == pytest.approx(
        debiased, abs=1e-15
    )
    assert debiased_calibration_error(P8, Y8, estimator=EM2) == 0.0
    # the plug-in of the same bins, from the pipeline
    assert cp.calibration_error(P8, Y8, estimator=EM2, divergence="squared_l2") == pytest.approx(
        plug_in, abs=1e-15
    )


def test_small_bins_contribute_zero_and_normal_refuses_them() -> None:
    # 8 points, 8 bins of one point each: every unbiased term is dropped
    assert debiased_calibration_error(P8, Y8, estimator=cp.EqualMass(8, rule="kumar")) == 0.0
    with pytest.raises(cp.CalibrationInputError, match="at least 2 samples"):
        debiased_calibration_error(P8, Y8, estimator=cp.EqualMass(8, rule="kumar"), method="normal")
    # bins (.5, .75] with 3 rows and (.75, 1] with 1: only the bin of 3 counts, weight 3/4
    conf, corr = np.array([0.6, 0.62, 0.64, 0.95]), np.array([1, 0, 1, 1])
    P = np.stack([conf, 1 - conf], 1)
    y = np.where(corr == 1, 0, 1)
    pb, yb = 0.62, 2 / 3
    expect = 0.75 * ((pb - yb) ** 2 - yb * (1 - yb) / 2)
    assert debiased_calibration_error(
        P, y, estimator=cp.EqualWidth(4), root=False
    ) == pytest.approx(expect, abs=1e-15)


def test_bad_arguments() -> None:
    with pytest.raises(cp.CalibrationInputError, match="p = 2"):
        debiased_calibration_error(P8, Y8, p=1)
    with pytest.raises(cp.CalibrationInputError, match="method"):
        debiased_calibration_error(P8, Y8, method="bootstrap")  # type: ignore[arg-type]
    with pytest.raises(cp.CalibrationInputError, match="lens"):
        debiased_calibration_error(P8, Y8, lens="canonical")  # type: ignore[arg-type]
    with pytest.raises(cp.CalibrationInputError, match="p must"):
        debiased_calibration_error(P8, Y8, p=0.5, method="normal")
    with pytest.raises(cp.CalibrationInputError, match="n_resamples"):
        debiased_calibration_error(P8, Y8, method="normal", n_resamples=0)
    with pytest.raises(cp.CalibrationInputError, match="class_aggregate"):
        debiased_calibration_error(P8, Y8, class_aggregate="max")  # type: ignore[arg-type]


# ---------------------------------------------------------------- oracle: verified_calibration


@pytest.mark.oracle
@pytest.mark.parametrize("seed", [0, 1])
def test_unbiased_matches_uncertainty_calibration(seed: int) -> None:
    cal = pytest.importorskip("calibration")
    p, y = _random(600, 4, seed)
    for mode, lens in [("top-label", "top_label"), ("marginal", "classwise")]:
        ref = cal.lower_bound_scaling_ce(p, y, p=2, debias=True, mode=mode)
        assert debiased_calibration_error(p, y, lens=lens) == pytest.approx(ref, abs=1e-13)
        # the user-facing entry point takes the same path on continuous scores
        ref2 = cal.get_calibration_error(p, y, p=2, debias=True, mode=mode)
        assert ref2 == pytest.approx(ref, abs=1e-15)
    # binary 1-D input: Kumar's code computes the CE of P(y = 1)
    pb, yb = p[:, 0] / (p[:, 0] + p[:, 1]), (y == 0).astype(np.int64)
    ref = cal.lower_bound_scaling_ce(pb, yb, p=2, debias=True)
    assert debiased_calibration_error(pb, yb, lens="binary") == pytest.approx(ref, abs=1e-13)
    # squared space: the unclipped unbiased_square_ce on the same bins
    conf = p.max(1)
    corr = (p.argmax(1) == y).astype(float)
    data = list(zip(conf, corr, strict=True))
    binned = cal.utils.bin(data, cal.utils.get_equal_bins(list(conf), num_bins=15))
    assert debiased_calibration_error(p, y, root=False) == pytest.approx(
        cal.utils.unbiased_square_ce(binned), abs=1e-13
    )
    # equal-width (get_equal_prob_bins) and other bin counts
    for nb in (5, 10):
        ref = cal.lower_bound_scaling_ce(
            p,
            y,
            p=2,
            debias=True,
            num_bins=nb,
            binning_scheme=cal.get_equal_prob_bins,
            mode="top-label",
        )
        ours = debiased_calibration_error(p, y, estimator=cp.EqualWidth(nb))
        assert ours == pytest.approx(ref, abs=1e-13)


@pytest.mark.oracle
def test_classwise_sum_convention_and_clipping_per_class() -> None:
    cal = pytest.importorskip("calibration")
    p, y = _random(400, 3, 5)
    # per-class values from the oracle's 1-D path, then Gruber & Buettner's (2022) sum over classes
    per = [
        cal.lower_bound_scaling_ce(p[:, k], (y == k).astype(np.int64), p=2, debias=True)
        for k in range(3)
    ]
    ours = debiased_calibration_error(p, y, lens="classwise", class_aggregate="sum")
    assert ours == pytest.approx(np.sqrt(np.sum(np.square(per))), abs=1e-13)
    # root=False: the unclipped per-class D_k, averaged (an unbiased estimate)
    Dk = [debiased_calibration_error(p, y, lens=cp.single_class(k), root=False) for k in range(3)]
    assert debiased_calibration_error(p, y, lens="classwise", root=False) == pytest.approx(
        np.mean(Dk), abs=1e-15
    )


def _normal_mc_sd(conf: np.ndarray, corr: np.ndarray, bins: list, power: float) -> float:
    """Standard deviation of one resampled plug-in c* (for the Monte-Carlo tolerance)."""
    ids = np.searchsorted(bins, conf)
    rng = np.random.default_rng(123)
    nb = np.bincount(ids, minlength=len(bins))
    ne = nb > 0
    f = nb[ne] / nb.sum()
    pb = np.bincount(ids, conf, len(bins))[ne] / nb[ne]
    yb = np.bincount(ids, corr, len(bins))[ne] / nb[ne]
    ys = yb + np.sqrt(yb * (1 - yb) / nb[ne]) * rng.standard_normal((4000, ne.sum()))
    c = ((np.abs(ys - pb) ** power) @ f) ** (1 / power)
    return float(c.std())


@pytest.mark.oracle
@pytest.mark.parametrize("power", [1, 2, 3])
def test_normal_matches_uncertainty_calibration_within_monte_carlo_error(power: int) -> None:
    cal = pytest.importorskip("calibration")
    p, y = _random(800, 5, 7)
    conf = p.max(1)
    corr = (p.argmax(1) == y).astype(float)
    bins = cal.utils.get_equal_bins(list(conf), num_bins=15)
    binned = cal.utils.bin(list(zip(conf, corr, strict=True)), bins)
    R = 20000
    np.random.seed(0)  # noqa: NPY002 (the oracle draws from the global generator)
    ref = cal.utils.normal_debiased_ce(binned, power=power, resamples=R)
    ours = debiased_calibration_error(p, y, p=power, method="normal", n_resamples=R)
    # both are 2 c - (mean of R draws of c*): independent Monte-Carlo errors
    tol = 5 * np.sqrt(2) * _normal_mc_sd(conf, corr, bins, power) / np.sqrt(R)
    assert abs(ours - ref) < tol
    assert tol < 2e-3  # the comparison is sharp: the correction itself is larger
    plug = cal.utils.plugin_ce(binned, power=power)
    assert plug - ours > 5 * tol
    # the oracle's top-level call, default 1000 resamples (p != 2 takes the normal path)
    if power != 2:
        np.random.seed(1)  # noqa: NPY002
        ref1000 = cal.lower_bound_scaling_ce(p, y, p=power, debias=True, mode="top-label")
        ours1000 = debiased_calibration_error(p, y, p=power, method="normal")
        tol1000 = 5 * np.sqrt(2) * _normal_mc_sd(conf, corr, bins, power) / np.sqrt(1000)
        assert abs(ours1000 - ref1000) < tol1000


def test_normal_is_reproducible_and_seed_dependent() -> None:
    p, y = _random(300, 3, 3)
    a = debiased_calibration_error(p, y, method="normal", p=1, seed=4)
    assert debiased_calibration_error(p, y, method="normal", p=1, seed=4) == a
    assert debiased_calibration_error(p, y, method="normal", p=1, seed=5) != a
    g = np.random.default_rng(4)
    assert debiased_calibration_error(p, y, method="normal", p=1, seed=g) == a


# ---------------------------------------------------------------- (near) unbiasedness


def test_unbiased_on_average_where_the_plug_in_is_biased() -> None:
    # Fixed distinct scores (so Kumar's 15 equal-mass bins are 15 runs of 20
    # consecutive scores), labels i.i.d. Bernoulli(mu_b) within each bin.
    n, B, reps = 300, 15, 800
    rng = np.random.default_rng(11)
    s = np.sort(rng.uniform(0.05, 0.95, n))
    bin_of = np.repeat(np.arange(B), n // B)
    pbar = np.array([s[bin_of == b].mean() for b in range(B)])
    mu = np.clip(pbar + rng.normal(scale=0.05, size=B), 0.01, 0.99)
    truth = float(np.mean((pbar - mu) ** 2))  # every bin has weight 1/15
    plug_bias = float(np.mean(mu * (1 - mu) / (n // B)))
    y = (rng.uniform(size=(reps, n)) < mu[bin_of]).astype(int)
    deb = np.array([debiased_calibration_error(s, yi, lens="binary", root=False) for yi in y])
    plug = np.array(
        [
            cp.calibration_error(
                s,
                yi,
                lens="binary",
                estimator=cp.EqualMass(15, rule="kumar"),
                divergence="squared_l2",
            )
            for yi in y
        ]
    )
    se = deb.std() / np.sqrt(reps)
    assert abs(deb.mean() - truth) < 4 * se
    # the plug-in is biased upwards by E Var(y_b) = sum_b mu_b (1 - mu_b) / (15 n_b)
    assert plug.mean() - truth == pytest.approx(plug_bias, abs=4 * plug.std() / np.sqrt(reps))
    assert plug.mean() - truth > 20 * se


# ---------------------------------------------------------------- weights, torch


def test_integer_weights_equal_repeated_rows() -> None:
    p, y = _random(200, 3, 9)
    w = np.random.default_rng(1).integers(1, 4, len(y))
    rep = np.repeat(np.arange(len(y)), w)
    for kw in (
        {},
        {"root": False},
        {"lens": "classwise"},
        {"estimator": cp.EqualWidth(10)},
    ):
        a = debiased_calibration_error(p, y, sample_weight=w, **kw)
        b = debiased_calibration_error(p[rep], y[rep], **kw)
        assert a == pytest.approx(b, abs=1e-13)
    a = debiased_calibration_error(p, y, sample_weight=w, method="normal", p=1)
    b = debiased_calibration_error(p[rep], y[rep], method="normal", p=1)
    assert a == pytest.approx(b, abs=1e-13)


def test_torch_input_gives_the_same_value() -> None:
    torch = pytest.importorskip("torch")
    p, y = _random(300, 4, 2)
    v = debiased_calibration_error(torch.from_numpy(p), torch.from_numpy(y), lens="classwise")
    assert isinstance(v, torch.Tensor)
    assert float(v) == pytest.approx(debiased_calibration_error(p, y, lens="classwise"), abs=1e-14)
