"""Cross-checks against peer libraries used as test oracles, where the conventions agree.

Each peer is imported with ``pytest.importorskip`` inside the test, so the suite
passes without them. Which convention each peer follows is documented in
/work/shared/reference/peer_libraries.md §4.2 and docs/how-calipers-computes.md §2-4; every test
states the reason the two computations must agree.

Oracles used (pip):
    pip install uncertainty-calibration==0.1.4 torchmetrics   # torch (CPU) separately
    scikit-learn (already a dev dependency)

The last section is an independent NumPy port of robustness_metrics'
``_GeneralCalibrationErrorMetric`` written from docs/how-calipers-computes.md §3.2 (Nixon et
al.'s SCE / ACE / TACE / RMSCE as coded), not from calipers.
"""

from __future__ import annotations

import numpy as np
import pytest

import calipers as cp
from calipers.estimators.binning import EqualMass, EqualWidth, nixon_even_bins
from toy_data import NIXON_P, NIXON_Y

pytestmark = pytest.mark.oracle


# ----------------------------------------------------------------------------- data


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_data(n: int, k: int, seed: int, temp: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    """the standard benchmark recipe: labels from softmax(logits), predictions
    softmax(temp * logits) (overconfident for temp > 1)."""
    rng = np.random.default_rng(seed)
    logits = 3.0 * rng.standard_normal((n, k))
    p_true = _softmax(logits)
    u = rng.random(n)
    labels = np.minimum((u[:, None] > np.cumsum(p_true, axis=1)).sum(axis=1), k - 1)
    return _softmax(temp * logits), labels


def grid_data(n: int, k: int, seed: int, m: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities on the grid j/m: ties, exact zeros and ones, values on bin edges."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.full(k, 0.7), size=n)
    P = rng.multinomial(m, q / q.sum(axis=1, keepdims=True)) / m
    u = rng.random(n)
    y = np.minimum((u[:, None] > np.cumsum(q, axis=1)).sum(axis=1), k - 1)
    return P, y


@pytest.fixture(scope="module")
def uc():
    """uncertainty-calibration 0.1.4 (import name ``calibration``; a generic name, so check)."""
    mod = pytest.importorskip("calibration.utils")
    if not hasattr(mod, "get_ece") or not hasattr(mod, "get_equal_bins"):
        pytest.skip("the installed 'calibration' package is not uncertainty-calibration")
    return mod


# ----------------------------------------------------------------------------- uncertainty-calibration


@pytest.mark.parametrize("seed", [0, 1])
def test_uc_get_ece_random(uc, seed: int) -> None:
    """get_ece: top-label, 15 equal-width bins, (lo, hi] via searchsorted on upper edges
    i/15 (docs/how-calipers-computes.md §4.1) -- exactly our ece."""
    P, y = make_data(5000, 10, seed, temp=1.0)  # > 4096: calipers' fast binning path
    assert cp.ece(P, y) == pytest.approx(uc.get_ece(P, y, num_bins=15), abs=1e-12)
    for B in (5, 10, 20):
        assert cp.ece(P, y, n_bins=B) == pytest.approx(uc.get_ece(P, y, num_bins=B), abs=1e-12)


@pytest.mark.parametrize("B", [5, 10, 15])
def test_uc_get_ece_values_on_edges_float64(uc, B: int) -> None:
    """Scores exactly on the edges i/B, 0 and 1 included. Its edges ``i * 1.0 / B`` and
    ours are the same doubles, both rules are (lo, hi]: identical in float64. Compared
    in float64 only (uncertainty-calibration's float32 flip: next test)."""
    rng = np.random.default_rng(B)
    j = np.arange(B + 1)
    # 1-D binary input: uncertainty-calibration bins p itself (positive-class lens).
    # Random values between the edges make the side an edge value joins matter.
    for n_edge, n_rand in ((5, 60), (300, 4000)):  # the second exceeds 4096 samples
        p = np.concatenate([np.repeat(j / B, n_edge), rng.random(n_rand)])
        yb = rng.integers(0, 2, p.size)
        ref = uc.get_ece(p, yb, num_bins=B)
        est = EqualWidth(B)
        assert cp.calibration_error(p, yb, lens="binary", estimator=est) == pytest.approx(
            ref, abs=1e-12
        )
        p32 = p.astype(np.float32)
        assert cp.calibration_error(p32, yb, lens="binary", estimator=est) == pytest.approx(
            ref, abs=1e-6
        )
    # multi-class, top-label confidence exactly on an edge (> 1/2 so it is the arg-max)
    c = np.concatenate([np.repeat(j[2 * j > B] / B, 7), 0.5 + 0.5 * rng.random(100)])
    P = np.stack([c, 0.6 * (1 - c), 0.4 * (1 - c)], axis=1)
    y = rng.integers(0, 3, c.size)
    assert cp.ece(P, y, n_bins=B) == pytest.approx(uc.get_ece(P, y, num_bins=B), abs=1e-12)


def test_uc_float32_flip_does_not_affect_calipers(uc) -> None:
    """Gaps of opposite sign on both sides of the edge 0.4 (10 bins): 0.35 (all correct)
    and 0.4 (all wrong) share the bin (0.3, 0.4] -> |0.375 - 0.5| = 0.125.

    uncertainty-calibration's float32 flip (0.1.4): it turns the data into a float64
    array of (p, y) pairs, so ``np.float32(0.4) = 0.4000000059604645 > 0.4`` leaves the
    bin (0.3, 0.4] and ``get_ece(p.astype(np.float32), y, num_bins=10)`` returns
    0.5250000059604645 instead of 0.125. calipers compares float32 scores with float32
    edges, so its float32 result is the float64 one."""
    p = np.array([0.35, 0.35, 0.4, 0.4])
    y = np.array([1, 1, 0, 0])
    assert uc.get_ece(p, y, num_bins=10) == pytest.approx(0.125, abs=1e-12)
    for dt in (np.float64, np.float32):
        v = cp.calibration_error(p.astype(dt), y, lens="binary", estimator=EqualWidth(10))
        assert v == pytest.approx(0.125, abs=1e-7), dt


@pytest.mark.parametrize("power", [1, 2])
@pytest.mark.parametrize("seed", [3, 4])
def test_uc_get_calibration_error_equal_mass(uc, power: int, seed: int) -> None:
    """get_calibration_error(p, debias=False) on non-discrete predictions is
    lower_bound_scaling_ce with 15 bins of get_equal_bins (array_split parts,
    mid-point edges, (lo, hi]; docs/how-calipers-computes.md §4.1) = our EqualMass(rule="kumar").
    marginal: (mean_k CE_k^p)^(1/p); top-label: CE of the confidences."""
    P, y = make_data(1000, 5, seed)
    k = P.shape[1]
    assert not uc.is_discrete(P)  # otherwise it would bin at the unique values
    est = EqualMass(15, "kumar")
    marg = uc.get_calibration_error(P, y, p=power, debias=False, mode="marginal")
    top = uc.get_calibration_error(P, y, p=power, debias=False, mode="top-label")
    div = cp.Lp(power)
    ours_marg = cp.calibration_error(P, y, lens="classwise", estimator=est, divergence=div)
    assert ours_marg == pytest.approx(marg, abs=1e-12)
    assert cp.tce_p(P, y, p=power, estimator=est) == pytest.approx(top, abs=1e-12)
    # Gruber & Buettner's (2022) CWCE sums over classes: (K * mean)^(1/p)
    assert cp.cwce_p(P, y, p=power, estimator=est) == pytest.approx(
        (k * marg**power) ** (1 / power), abs=1e-12
    )
    if power == 1:
        assert cp.classwise_ece(P, y, estimator=est) == pytest.approx(marg, abs=1e-12)


@pytest.mark.parametrize("B", [3, 7, 15, 40])
def test_uc_equal_bins_with_ties(uc, B: int) -> None:
    """Tie-heavy grid data with get_equal_bins called directly (get_calibration_error
    would switch to discrete bins): mid-points between equal values collapse and
    ties stay together on the lower side, as in EqualMass(rule='kumar')."""
    P, y = grid_data(300, 4, seed=B)
    est = EqualMass(B, "kumar")
    for mode, lens in (("marginal", "classwise"), ("top-label", "top_label")):
        ref = uc.lower_bound_scaling_ce(
            P, y, p=2, debias=False, num_bins=B, binning_scheme=uc.get_equal_bins, mode=mode
        )
        ours = cp.calibration_error(P, y, lens=lens, estimator=est, divergence="l2")
        assert ours == pytest.approx(ref, abs=1e-12), mode
    # the edges themselves, on the tie example of docs/how-calipers-computes.md §4.1
    s = np.array([0.1, 0.2, 0.2, 0.2, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9])
    assert EqualMass(3, "kumar").edges(s).tolist() == uc.get_equal_bins(list(s), num_bins=3)


# ----------------------------------------------------------------------------- scikit-learn


@pytest.mark.parametrize("k", [2, 3, 7])
def test_sklearn_brier(k: int) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    P, y = make_data(500, k, seed=10 + k)
    w = np.random.default_rng(k).integers(0, 4, len(y)).astype(float)
    labels = np.arange(k)
    # multi-class sklearn sums over classes; it halves for < 3 columns unless told not to
    ref = metrics.brier_score_loss(y, P, labels=labels, scale_by_half=False)
    assert cp.brier(P, y) == pytest.approx(ref, abs=1e-12)
    ref_w = metrics.brier_score_loss(y, P, labels=labels, sample_weight=w, scale_by_half=False)
    assert cp.brier(P, y, sample_weight=w) == pytest.approx(ref_w, abs=1e-12)
    assert cp.brier(P, y, reduction="mean") == pytest.approx(ref / k, abs=1e-12)
    if k == 2:  # 1-D binary input: the usual mean (p - y)^2
        assert cp.brier(P[:, 1], y) == pytest.approx(
            metrics.brier_score_loss(y, P[:, 1]), abs=1e-12
        )


@pytest.mark.parametrize("k", [2, 5])
def test_sklearn_log_loss(k: int) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    labels = np.arange(k)
    eps = np.finfo(np.float64).eps
    # sklearn clips to [eps, 1 - eps]; with true-class probabilities inside that range
    # nothing is clipped and the two are the plain -mean log p_y
    P, y = make_data(500, k, seed=20 + k, temp=1.0)
    py = P[np.arange(len(y)), y]
    assert py.min() > eps and py.max() < 1 - eps
    w = np.random.default_rng(k).integers(0, 4, len(y)).astype(float)
    assert cp.nll(P, y) == pytest.approx(metrics.log_loss(y, P, labels=labels), abs=1e-12)
    assert cp.nll(P, y, sample_weight=w) == pytest.approx(
        metrics.log_loss(y, P, labels=labels, sample_weight=w), abs=1e-12
    )
    # exact zeros and ones: sklearn's clip equals nll(clip=eps); plain nll is inf
    G, yg = grid_data(300, k, seed=k, m=5)
    assert np.any(G[np.arange(len(yg)), yg] == 0)
    assert cp.nll(G, yg) == np.inf
    assert cp.nll(G, yg, clip=eps) == pytest.approx(
        metrics.log_loss(yg, G, labels=labels), rel=1e-12
    )


def _sklearn_count_per_sample(calibration_curve, p: np.ndarray, n_bins: int) -> np.ndarray:
    """Size of the sklearn bin holding each sample: with y = e_i the only non-zero
    fraction of positives is 1 / (size of i's bin)."""
    out = np.empty(len(p))
    for i in range(len(p)):
        yi = np.zeros(len(p), dtype=int)
        yi[i] = 1
        frac, _ = calibration_curve(yi, p, n_bins=n_bins, strategy="uniform")
        out[i] = 1.0 / frac[frac > 0][0]
    return out


@pytest.mark.parametrize("B", [5, 10, 15])
def test_sklearn_calibration_curve(B: int) -> None:
    """calibration_curve(strategy='uniform') bins with searchsorted(edges[1:-1], p)
    (side left) -> (lo, hi] like EqualWidth(B). Its edges come from np.linspace, which
    differs from j/B in the last bit for some j, so exact-edge values are used only
    where the two edges are the same double."""
    calibration = pytest.importorskip("sklearn.calibration")
    rng = np.random.default_rng(B)
    lin = np.linspace(0.0, 1.0, B + 1)
    on_edges = lin[lin == np.arange(B + 1) / B]
    p = np.concatenate([rng.random(150), np.repeat(on_edges, 3)])
    y = rng.integers(0, 2, p.size)
    est = EqualWidth(B)
    st = cp.binned_statistics(p, y, lens="binary", estimator=est)[0].stats
    ne = st.nonempty
    prob_true, prob_pred = calibration.calibration_curve(y, p, n_bins=B, strategy="uniform")
    np.testing.assert_allclose(st.mean_target[ne], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(st.mean_score[ne], prob_pred, rtol=0, atol=1e-12)
    ids, _ = est.assign(p, None)
    sk_counts = _sklearn_count_per_sample(calibration.calibration_curve, p, B)
    np.testing.assert_array_equal(st.count[ids], sk_counts)
    assert st.count.sum() == p.size


# ----------------------------------------------------------------------------- torchmetrics


def _off_edges(c: np.ndarray, B: int, tol: float = 1e-6) -> np.ndarray:
    """Rows whose score is farther than ``tol`` from every edge j/B and below 1."""
    return (np.abs(c * B - np.round(c * B)) / B > tol) & (c < 1.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_torchmetrics_multiclass(seed: int) -> None:
    """multiclass_calibration_error: top-label, 15 equal-width bins [lo, hi) with a
    hidden extra bin for conf == 1.0 (torchmetrics#3510), confidences cast to float32.
    With no confidence on an edge or at 1.0 the edge rules coincide: L1 = ece,
    max = mce, L2 = tce_p(p=2), up to the float32 cast."""
    torch = pytest.importorskip("torch")
    F = pytest.importorskip("torchmetrics.functional.classification")
    P, y = make_data(5000, 10, seed)  # > 4096 after filtering: the fast binning path
    srt = np.sort(P, axis=1)
    keep = _off_edges(srt[:, -1], 15) & (srt[:, -1] - srt[:, -2] > 1e-6)  # same arg-max in f32
    P, y = P[keep], y[keep]
    assert len(y) > 4096
    tp, ty = torch.from_numpy(P), torch.from_numpy(y)
    for norm, ours in (
        ("l1", cp.ece(P, y)),
        ("max", cp.mce(P, y)),
        ("l2", cp.tce_p(P, y, p=2)),
    ):
        ref = float(F.multiclass_calibration_error(tp, ty, num_classes=10, n_bins=15, norm=norm))
        assert ours == pytest.approx(ref, abs=1e-6), norm
    # our float32 path agrees too
    assert cp.ece(P.astype(np.float32), y) == pytest.approx(cp.ece(P, y), abs=1e-6)


def test_torchmetrics_binary() -> None:
    """binary_calibration_error is positive-class reliability (p vs 1{y = 1}):
    our "binary" lens with EqualWidth(15)."""
    torch = pytest.importorskip("torch")
    F = pytest.importorskip("torchmetrics.functional.classification")
    P, y = make_data(3000, 2, seed=7)
    keep = _off_edges(P[:, 1], 15) & (P[:, 1] > 1e-6)
    p, y = P[keep, 1], y[keep]
    assert len(y) > 2900
    ours = cp.calibration_error(p, y, lens="binary", estimator=EqualWidth(15))
    ref = float(F.binary_calibration_error(torch.from_numpy(p), torch.from_numpy(y), n_bins=15))
    assert ours == pytest.approx(ref, abs=1e-6)


# ----------------------------------------------------------------------------- robustness_metrics port


def _rm_even_upper(num_bins: int) -> np.ndarray:
    # §3.2 item 6: upper edges histogram_bin_edges([], B, (0, 1))[1:], 1.0 included
    return np.histogram_bin_edges([], bins=num_bins, range=(0.0, 1.0))[1:]


def _rm_adaptive_upper(p: np.ndarray, num_bins: int) -> np.ndarray:
    # §3.2 item 6: e = sort(p)[min(round(linspace(0, n, B, endpoint=False)), n - 1)],
    # upper bounds = concat(e[1:], [1.0])
    s = np.sort(p)
    n = s.size
    pos = np.round(np.linspace(0, n, num_bins, endpoint=False)).astype(int)
    e = s[np.minimum(pos, n - 1)]
    return np.concatenate([e[1:], [1.0]])


def _rm_slice_error(p: np.ndarray, y: np.ndarray, upper: np.ndarray, norm: str) -> float:
    # §3.2 item 5: digitize on the upper edges; counts + eps; weights counts / len(slice)
    idx = np.digitize(p, upper)
    nb = len(upper) + 1
    sums = np.bincount(idx, weights=p, minlength=nb).astype(np.float64)
    counts = np.bincount(idx, minlength=nb) + np.finfo(np.float64).eps
    conf = sums / counts
    acc = np.bincount(idx, weights=y, minlength=nb) / counts
    gap = acc - conf
    weighting = counts / float(len(p))
    if norm == "l1":
        return float(np.sum(np.abs(gap) * weighting))
    return float(np.sum(gap**2 * weighting))


def rm_general_calibration_error(
    probs: np.ndarray,
    labels: np.ndarray,
    *,
    binning_scheme: str,
    max_prob: bool,
    class_conditional: bool,
    norm: str,
    num_bins: int,
    threshold: float = 0.0,
) -> float:
    """robustness_metrics ``_GeneralCalibrationErrorMetric`` (Oct-2020 semantics) from the
    text of docs/how-calipers-computes.md §3.2."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim == 1:
        probs = np.stack([1 - probs, probs], axis=1)
    n, k = probs.shape
    onehot = np.eye(k)[labels]

    def upper(p: np.ndarray) -> np.ndarray:
        if binning_scheme == "even":
            return _rm_even_upper(num_bins)
        return _rm_adaptive_upper(p, num_bins)

    if class_conditional and not max_prob:
        err = 0.0
        for j in range(k):
            p, t = probs[:, j], onehot[:, j]
            keep = p > threshold  # strict
            p, t = p[keep], t[keep]
            err += _rm_slice_error(p, t, upper(p), norm) / k
    elif not class_conditional:
        if max_prob:
            a = np.argmax(probs, axis=1)
            p, t = probs[np.arange(n), a], onehot[np.arange(n), a]
        else:
            p, t = probs.ravel(), onehot.ravel()
        keep = p > threshold
        p, t = p[keep], t[keep]
        err = _rm_slice_error(p, t, upper(p), norm)
    else:  # pragma: no cover - not used by the registered metrics compared here
        raise NotImplementedError
    return float(np.sqrt(err)) if norm == "l2" else err


def _rm(P: np.ndarray, y: np.ndarray, name: str, B: int) -> float:
    kw = {
        "ece": dict(binning_scheme="even", max_prob=True, class_conditional=False, norm="l1"),
        "rmsce": dict(binning_scheme="adaptive", max_prob=True, class_conditional=False, norm="l2"),
        "sce": dict(binning_scheme="even", max_prob=False, class_conditional=True, norm="l1"),
        "ace": dict(binning_scheme="adaptive", max_prob=False, class_conditional=True, norm="l1"),
        "tace": dict(
            binning_scheme="adaptive",
            max_prob=False,
            class_conditional=True,
            norm="l1",
            threshold=0.01,
        ),
    }[name]
    return rm_general_calibration_error(P, y, num_bins=B, **kw)


TOY_P, TOY_Y = NIXON_P, NIXON_Y


@pytest.mark.parametrize(
    ("name", "B", "value"),
    [
        ("ece", 5, 0.176667),
        ("sce", 5, 0.095556),
        ("ace", 2, 0.173333),
        ("tace", 2, 0.177167),
        ("rmsce", 2, 0.326769),
    ],
)
def test_rm_port_reproduces_conventions_worked_example(name: str, B: int, value: float) -> None:
    """The port itself against the numbers of docs/how-calipers-computes.md §3.4 (checked there
    against PyPI uncertainty-metrics 0.0.81 for ece/sce/ace/tace)."""
    assert _rm(TOY_P, TOY_Y, name, B) == pytest.approx(value, abs=5e-7)


def _ours(P: np.ndarray, y: np.ndarray, name: str, B: int) -> float:
    if name == "ece":  # Nixon's even bins on the confidences (not cp.ece's (lo, hi])
        return cp.calibration_error(P, y, estimator=nixon_even_bins(B), divergence="l1")
    if name == "rmsce":
        return cp.rmsce(P, y, n_bins=B)
    if name == "sce":
        return cp.sce(P, y, n_bins=B)
    if name == "ace":
        return cp.ace(P, y, n_bins=B)
    return cp.tace(P, y, n_bins=B, threshold=0.01)


@pytest.mark.parametrize("name", ["sce", "ace", "tace", "rmsce", "ece"])
@pytest.mark.parametrize("kind", ["random", "grid"])
def test_nixon_metrics_match_robustness_metrics_port(name: str, kind: str) -> None:
    """n = 500, k = 5, 15 bins; "grid" adds ties, exact zeros, 1.0 and values on edges."""
    if kind == "random":
        P, y = make_data(500, 5, seed=42)
    else:
        P, y = grid_data(500, 5, seed=42, m=10)
        assert np.any(P == 0) and np.any(P == 1.0)
    assert _ours(P, y, name, 15) == pytest.approx(_rm(P, y, name, 15), abs=1e-10)
    assert _ours(TOY_P, TOY_Y, name, 3) == pytest.approx(_rm(TOY_P, TOY_Y, name, 3), abs=1e-10)
