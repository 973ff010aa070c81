"""Venn-Abers predictors: VennAbers (IVAP) and CrossVennAbersClassifier (CVAP).

The fast tables (Vovk, Petej & Fedorova 2015) are checked against a brute
force written here (the isotonic regression refitted with the test object
added with label 0 and with label 1, by a pool-adjacent-violators loop), on
random data full of ties; against hand computations; and, where the
``venn-abers`` package is installed, against its VennAbers and
VennAbersCalibrator (inductive and cross) to 1e-12.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import calipers as cp
from calipers.recalibration import load_recalibrator
from calipers.recalibration.venn_abers import venn_abers_tables
from calipers.validation import CalibrationInputError

# the peer's own arithmetic warns on all-NaN slices (venn_abers.py line 112)
pytestmark = pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning")

# ----------------------------------------------------------------------------- brute force


def _pav_at(x: np.ndarray, y: np.ndarray, at: float) -> float:
    """Isotonic least-squares fit of y on x (ties pooled first), read at x == at."""
    ux = np.unique(x)
    blocks = [[float(y[x == u].sum()), float((x == u).sum()), {u}] for u in ux]
    merged: list[list] = []
    for b in blocks:
        merged.append(b)
        while len(merged) > 1 and merged[-2][0] / merged[-2][1] >= merged[-1][0] / merged[-1][1]:
            top = merged.pop()
            merged[-1] = [merged[-1][0] + top[0], merged[-1][1] + top[1], merged[-1][2] | top[2]]
    for s, n, members in merged:
        if at in members:
            return s / n
    raise AssertionError("test point not found")


def _brute(s_cal: np.ndarray, y_cal: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p0 = [_pav_at(np.append(s_cal, t), np.append(y_cal, 0), t) for t in s]
    p1 = [_pav_at(np.append(s_cal, t), np.append(y_cal, 1), t) for t in s]
    return np.array(p0), np.array(p1)


def _random_case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = int(rng.integers(1, 25))
    s = (1 + rng.integers(0, int(rng.integers(1, 9)), size=n)) / 10.0  # many ties, in [0.1, 0.8]
    y = (rng.random(n) < s).astype(np.int64) if rng.random() < 0.5 else rng.integers(0, 2, n)
    test = np.concatenate([np.unique(s), np.unique(s) + 0.05, [0.0, 1.0]])
    return s, y, test


def test_fast_tables_equal_brute_force_with_ties() -> None:
    rng = np.random.default_rng(20140)
    for _ in range(150):
        s, y, test = _random_case(rng)
        va = cp.VennAbers().fit(s, y, logits=False)
        p0, p1 = va.predict_interval(test, logits=False)
        b0, b1 = _brute(s, y, test)
        np.testing.assert_allclose(p0, b0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(p1, b1, rtol=0, atol=1e-12)


def test_hand_computed_example() -> None:
    s = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])
    y = np.array([0, 1, 0, 1, 1, 1])
    va = cp.VennAbers().fit(s, y)
    p0, p1 = va.predict_interval(np.array([0.05, 0.35, 0.95]))
    # 0.05 labelled 1: the PAV of 1, 0, 1, 0, 1, 1, 1 is 1/2, 1/2, 1/2, 1/2, 1, 1, 1;
    # 0.35 labelled 0: 0, 1, 0, 0, 1, 1, 1 pools 1, 0, 0 -> 1/3; labelled 1: pools 1, 1, 0 -> 2/3;
    # 0.95 labelled 0: 0, 1, 0, 1, 1, 1, 0 -> 0, 1/2, 1/2, 3/4, 3/4, 3/4, 3/4
    np.testing.assert_allclose(p0, [0.0, 1 / 3, 3 / 4], atol=1e-15)
    np.testing.assert_allclose(p1, [1 / 2, 2 / 3, 1.0], atol=1e-15)
    q = va.predict_proba(np.array([0.05, 0.35, 0.95]))
    np.testing.assert_allclose(q, [0.5 / 1.5, (2 / 3) / (4 / 3), 1 / 1.25], atol=1e-15)


def test_interval_order_range_and_merge() -> None:
    rng = np.random.default_rng(7)
    s = rng.random(300)
    y = (rng.random(300) < s**2).astype(int)
    va = cp.VennAbers().fit(s, y)
    t = np.linspace(0.0, 1.0, 501)
    p0, p1 = va.predict_interval(t)
    assert np.all(p0 <= p1) and np.all(p0 >= 0) and np.all(p1 <= 1)
    assert np.all(np.diff(p0) >= 0) and np.all(np.diff(p1) >= 0)  # monotone in the score
    q = va.predict_proba(t)
    assert np.all((q > 0) & (q < 1))
    np.testing.assert_allclose(q, p1 / (1 - p0 + p1), rtol=0, atol=0)
    assert np.all((p0 <= q) & (q <= p1))  # the merge lies in the interval
    # tables: first p0 is 0, last p1 is 1, one entry more than distinct scores
    c, t0, t1 = venn_abers_tables(s, y)
    assert t0[0] == 0.0 and t1[-1] == 1.0 and len(t0) == len(t1) == len(c) + 1


def test_increasing_transform_and_logits_give_the_same_predictions() -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(size=200)
    y = (rng.random(200) < 1 / (1 + np.exp(-2 * z))).astype(int)
    a = cp.VennAbers().fit(z, y, logits=True).predict_proba(z[:50], logits=True)
    p = 1 / (1 + np.exp(-z))
    b = cp.VennAbers().fit(p, y, logits=False).predict_proba(p[:50], logits=False)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)
    two = np.stack([1 - p, p], axis=1)  # (n, 2): the second column
    c = cp.VennAbers().fit(two, y).predict_proba(two[:50])
    np.testing.assert_allclose(c[:, 1], b, rtol=0, atol=1e-15)


def test_integer_weights_repeat_rows_and_fractions_are_refused() -> None:
    rng = np.random.default_rng(4)
    s = rng.integers(0, 10, 60) / 10
    y = rng.integers(0, 2, 60)
    w = rng.integers(0, 4, 60)
    t = np.linspace(0, 1, 23)
    a = cp.VennAbers().fit(s, y, sample_weight=w.astype(float)).predict_interval(t)
    idx = np.repeat(np.arange(60), w)
    b = cp.VennAbers().fit(s[idx], y[idx]).predict_interval(t)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    with pytest.raises(CalibrationInputError, match=r"integer sample_weight.*row 0"):
        cp.VennAbers().fit(s, y, sample_weight=np.full(60, 0.5))


# ----------------------------------------------------------------------------- multiclass


def _probs(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = 2 * rng.normal(size=(n, k))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    q = np.exp(z / 2) / np.exp(z / 2).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(q, axis=1)).sum(axis=1).clip(0, k - 1)
    return p, y


def test_one_vs_rest_is_a_binary_predictor_per_column() -> None:
    p, y = _probs(300, 3, 1)
    pt, _ = _probs(50, 3, 2)
    va = cp.VennAbers(multiclass="one_vs_rest").fit(p, y)
    lo, hi = va.predict_interval(pt)
    merged = []
    for k in range(3):
        one = cp.VennAbers().fit(p[:, k], (y == k).astype(int), logits=False)
        a, b = one.predict_interval(pt[:, k], logits=False)
        np.testing.assert_array_equal(lo[:, k], a)
        np.testing.assert_array_equal(hi[:, k], b)
        merged.append(b / (1 - a + b))
    m = np.stack(merged, axis=1)
    np.testing.assert_allclose(va.predict_proba(pt), m / m.sum(axis=1, keepdims=True), atol=1e-15)


def test_one_vs_one_pairwise_coupling() -> None:
    p, y = _probs(300, 3, 5)
    pt, _ = _probs(40, 3, 6)
    va = cp.VennAbers().fit(p, y)
    assert va.pairs_ == [(0, 1), (0, 2), (1, 2)]
    pair_p = {}
    for a, b in va.pairs_:
        rows = (y == a) | (y == b)
        one = cp.VennAbers().fit(p[rows, b] / (p[rows, a] + p[rows, b]), (y[rows] == b).astype(int))
        pair_p[(a, b)] = one.predict_proba(pt[:, b] / (pt[:, a] + pt[:, b]))
    q = np.empty((40, 3))
    for i in range(3):
        inv = sum(1 / pair_p[(j, i)] for j in range(i))  # P(i | j or i), j < i
        inv = inv + sum(1 / (1 - pair_p[(i, j)]) for j in range(i + 1, 3))
        q[:, i] = 1 / (inv - 1)  # K - 2 = 1
    np.testing.assert_allclose(va.predict_proba(pt), q / q.sum(axis=1, keepdims=True), atol=1e-14)
    lo, hi = va.predict_interval(pt)
    assert lo.shape == (40, 3) and np.all(lo <= hi)


# ----------------------------------------------------------------------------- the peer


def test_equal_to_venn_abers_package_binary() -> None:
    venn_abers = pytest.importorskip("venn_abers")
    rng = np.random.default_rng(11)
    for trial in range(30):
        n = int(rng.integers(2, 300))
        s = np.round(rng.random(n), int(rng.integers(1, 4)))  # ties at 1-3 decimals
        y = (rng.random(n) < s).astype(int)
        if y.min() == y.max():
            continue
        t = np.concatenate([s, rng.random(40), [0.0, 1.0]])
        peer = venn_abers.VennAbers().fit(np.c_[1 - s, s], y)
        pq, pp = peer.predict_proba(np.c_[1 - t, t])
        va = cp.VennAbers().fit(s, y, logits=False)
        p0, p1 = va.predict_interval(t, logits=False)
        np.testing.assert_allclose(p0, pp[:, 0], rtol=0, atol=1e-12, err_msg=str(trial))
        np.testing.assert_allclose(p1, pp[:, 1], rtol=0, atol=1e-12, err_msg=str(trial))
        np.testing.assert_allclose(va.predict_proba(t, logits=False), pq[:, 1], atol=1e-12)


@pytest.mark.parametrize("kind", ["one_vs_one", "one_vs_rest"])
def test_equal_to_venn_abers_package_multiclass(kind: str) -> None:
    venn_abers = pytest.importorskip("venn_abers")
    p, y = _probs(400, 4, 8)
    pt, _ = _probs(100, 4, 9)
    peer = venn_abers.VennAbersCalibrator()
    want = peer.predict_proba(p_cal=p, y_cal=y, p_test=pt, va_type=kind)
    got = cp.VennAbers(multiclass=kind).fit(p, y).predict_proba(pt)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_equal_to_venn_abers_package_inductive_and_cross() -> None:
    venn_abers = pytest.importorskip("venn_abers")
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, train_test_split

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = (rng.random(500) < 1 / (1 + np.exp(-2 * X[:, 0] - X[:, 1]))).astype(int)
    Xt = rng.normal(size=(150, 3))
    # inductive: the same proper-training / calibration split
    peer = venn_abers.VennAbersCalibrator(
        LogisticRegression(), inductive=True, cal_size=0.3, random_state=1, shuffle=True
    ).fit(X, y)
    Xp, Xc, yp, yc = train_test_split(X, y, test_size=0.3, random_state=1, shuffle=True)
    lr = LogisticRegression().fit(Xp, yp)
    va = cp.VennAbers().fit(lr.predict_proba(Xc)[:, 1], yc)
    got = va.predict_proba(lr.predict_proba(Xt)[:, 1])
    np.testing.assert_allclose(got, peer.predict_proba(Xt)[:, 1], rtol=0, atol=1e-12)
    # cross: the same folds
    folds = StratifiedKFold(5, shuffle=True, random_state=3)
    peer = venn_abers.VennAbersCalibrator(
        LogisticRegression(), inductive=False, n_splits=5, random_state=3, shuffle=True
    ).fit(X, y)
    for loss in ("log", "brier"):
        cvap = cp.CrossVennAbersClassifier(LogisticRegression(), cv=folds, loss=loss).fit(X, y)
        want = peer.predict_proba(Xt, loss=loss)
        np.testing.assert_allclose(cvap.predict_proba(Xt), want, rtol=0, atol=1e-12)
    _, pp = peer.predict_proba(Xt, p0_p1_output=True)
    p0, p1 = cvap.predict_interval(Xt)
    np.testing.assert_allclose(np.hstack([p0, p1]), np.asarray(pp).reshape(150, 10), atol=1e-12)


# ----------------------------------------------------------------------------- CVAP without peer


def test_cross_venn_abers_is_the_merge_of_fold_predictors() -> None:
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    X = rng.normal(size=(240, 2))
    y = np.where(rng.random(240) < 1 / (1 + np.exp(-3 * X[:, 0])), "yes", "no")
    Xt = rng.normal(size=(30, 2))
    cvap = cp.CrossVennAbersClassifier(LogisticRegression(), n_splits=3, seed=5).fit(X, y)
    assert cvap.classes_.tolist() == ["no", "yes"]
    t = (y == "yes").astype(int)
    fold = cp.recalibration.stratified_folds(t, 3, seed=5)
    lo, hi = [], []
    for f in range(3):
        lr = LogisticRegression().fit(X[fold != f], t[fold != f])
        s_held = lr.predict_proba(X[fold == f])[:, 1]
        s_test = lr.predict_proba(Xt)[:, 1]
        b0, b1 = _brute(s_held, t[fold == f], s_test)
        lo.append(b0)
        hi.append(b1)
    p0, p1 = np.stack(lo, axis=1), np.stack(hi, axis=1)
    g1 = np.prod(p1, axis=1) ** (1 / 3)
    g0 = np.prod(1 - p0, axis=1) ** (1 / 3)
    np.testing.assert_allclose(cvap.predict_proba(Xt)[:, 1], g1 / (g0 + g1), atol=1e-12)
    brier = p1.mean(axis=1) + 0.5 * (p0**2).mean(axis=1) - 0.5 * (p1**2).mean(axis=1)
    cb = cp.CrossVennAbersClassifier(LogisticRegression(), n_splits=3, seed=5, loss="brier")
    np.testing.assert_allclose(cb.fit(X, y).predict_proba(Xt)[:, 1], brier, atol=1e-12)
    assert set(cvap.predict(Xt)) <= {"no", "yes"}
    assert cvap.score(X, y) < 0


def test_cross_venn_abers_sklearn_clone_and_refusals() -> None:
    pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    c = cp.CrossVennAbersClassifier(LogisticRegression(C=2.0), n_splits=3)
    d = clone(c)
    assert d.get_params()["estimator__C"] == 2.0 and d.n_splits == 3
    d.set_params(estimator__C=0.5, loss="brier")
    assert d.estimator.C == 0.5 and d.loss == "brier"
    X = np.random.default_rng(0).normal(size=(60, 2))
    with pytest.raises(NotFittedError):
        c.predict_proba(X)
    with pytest.raises(CalibrationInputError, match="binary problems: y holds 3 classes"):
        c.fit(X, np.arange(60) % 3)
    with pytest.raises(CalibrationInputError, match="has no predict_proba"):
        cp.CrossVennAbersClassifier(LinearSVC()).fit(X, np.arange(60) % 2)
    with pytest.raises(CalibrationInputError, match="n_splits must be an integer >= 2"):
        cp.CrossVennAbersClassifier(LogisticRegression(), n_splits=1).fit(X, np.arange(60) % 2)
    with pytest.raises(CalibrationInputError, match="loss must be 'log' or 'brier'"):
        cp.CrossVennAbersClassifier(LogisticRegression(), loss="nll").fit(X, np.arange(60) % 2)
    with pytest.raises(CalibrationInputError, match="no parameter 'foo'"):
        c.set_params(foo=1)


# ----------------------------------------------------------------------------- contract


def test_json_round_trip_and_file(tmp_path) -> None:
    p, y = _probs(200, 3, 12)
    pt, _ = _probs(30, 3, 13)
    for va in (cp.VennAbers().fit(p, y), cp.VennAbers(multiclass="one_vs_rest").fit(p, y)):
        assert "VennAbers" in va.to_json()
        back = load_recalibrator(va.to_json())
        np.testing.assert_array_equal(back.predict_proba(pt), va.predict_proba(pt))
        for a, b in zip(back.predict_interval(pt), va.predict_interval(pt), strict=True):
            np.testing.assert_array_equal(a, b)
    s = p[:, 0]
    va = cp.VennAbers().fit(s, (y == 0).astype(int))
    va.save(tmp_path / "va.json")
    back = cp.VennAbers.load(tmp_path / "va.json")
    np.testing.assert_array_equal(back.predict_interval(s)[1], va.predict_interval(s)[1])


def test_edited_file_with_crossed_tables_is_refused() -> None:
    va = cp.VennAbers().fit(np.array([0.2, 0.4, 0.6, 0.8]), [0, 1, 0, 1])
    doc = json.loads(va.to_json())
    text = json.dumps(doc)
    broken = text.replace('"multiclass": "one_vs_one"', '"multiclass": "pairs"')
    with pytest.raises(CalibrationInputError, match="multiclass"):
        load_recalibrator(broken)
    va.p0_ = [np.array([0.0, 0.9, 0.9, 0.9, 0.9])]  # above p1 = 0.5 .. 1
    with pytest.raises(CalibrationInputError, match="must not exceed"):
        va.predict_proba(np.array([0.5]))


def test_tensors_back_and_sklearn_clone() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    from sklearn.base import clone

    s = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])
    y = np.array([0, 1, 0, 1, 1, 1])
    va = cp.VennAbers().fit(torch.tensor(s), torch.tensor(y))
    q = va.predict_proba(torch.tensor([0.35], dtype=torch.float32))
    assert isinstance(q, torch.Tensor) and q.dtype == torch.float32
    lo, hi = va.predict_interval(torch.tensor([0.35]))
    assert isinstance(lo, torch.Tensor) and float(hi[0]) == pytest.approx(2 / 3)
    c = clone(va)
    assert c.get_params() == {"multiclass": "one_vs_one"}
    assert c.fit(s, y).predict_proba(s).shape == (6, 2)  # scikit-learn's copies: two columns


def test_unfitted_and_pair_without_rows() -> None:
    with pytest.raises(CalibrationInputError, match="not fitted yet"):
        cp.VennAbers().predict_interval(np.array([0.5]))
    p, _ = _probs(30, 3, 1)
    with pytest.raises(CalibrationInputError, match="rows of class 1 or class 2"):
        cp.VennAbers().fit(p, np.zeros(30, dtype=int))
    assert cp.VennAbers(multiclass="one_vs_rest").fit(p, np.zeros(30, dtype=int)).n_classes_ == 3
