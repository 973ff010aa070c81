"""Mistakes a classification user makes, caught or made impossible.

* binary ``(n,)`` scores in scikit-learn's ``GridSearchCV`` with its probability
  scorers (``"neg_log_loss"``, ``"neg_brier_score"``, ``"roc_auc"``): finite
  scores, no warning, and the values scikit-learn's own metrics give fold by fold
  on the recalibrators fitted by hand;
* a metric called in scikit-learn's argument order ``(labels, probs)``: the error
  says the arguments look swapped, and legitimate calls are untouched;
* every metric object of :mod:`calipers.stream.torchmetrics` takes each argument of its
  function or names it in a clear error (compared with ``inspect.signature``).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import calipers as cp
from calipers.validation import CalibrationInputError

# ----------------------------------------------------------------------------- data


def _binary(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident binary probabilities P(y = 1) (a known miscalibration), labels 0/1."""
    rng = np.random.default_rng(seed)
    p_true = rng.uniform(0.03, 0.97, n)
    y = (rng.uniform(size=n) < p_true).astype(np.int64)
    z = 2.5 * np.log(p_true / (1 - p_true))  # logits scaled by 2.5: over-confident
    return 1 / (1 + np.exp(-z)), y


# ----------------------------------------------------------------------------- scikit-learn scorers

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score  # noqa: E402
from sklearn.model_selection import GridSearchCV, StratifiedKFold  # noqa: E402

# (method, grid): every binary-capable classification recalibrator with a parameter to tune
GRIDS = {
    "HistogramBinning": {"n_bins": [3, 10, 300]},
    "IsotonicRegression": {"interpolation": ["linear", "step"]},
    "PlattScaling": {"max_iter": [100, 200]},
    "BetaCalibration": {"max_iter": [100, 200]},
    "TemperatureScaling": {"t_max": [50.0, 100.0]},
    "MonotoneLogitMap": {"n_knots": [3, 6]},
}
SCORERS = {
    "neg_log_loss": lambda y, q: -log_loss(y, q, labels=[0, 1]),
    "neg_brier_score": lambda y, q: -brier_score_loss(y, q),
    "roc_auc": lambda y, q: roc_auc_score(y, q),
}


@pytest.mark.parametrize("scoring", sorted(SCORERS))
@pytest.mark.parametrize("name", sorted(GRIDS))
def test_grid_search_on_binary_1d_scores_with_scikit_learns_scorers(
    name: str, scoring: str
) -> None:
    """(n,) probabilities: no warning, finite scores equal to scikit-learn's metric on the
    (n,) outputs of the recalibrators fitted by hand on each fold, and the best setting
    is the arg-max of those (before: an IndexError per fold, nan scores, a 'best' anyway)."""
    p, y = _binary(900, seed=1)
    if name in ("TemperatureScaling", "MonotoneLogitMap", "PlattScaling"):
        x = np.log(p / (1 - p))  # logit methods get logits
    else:
        x = p
    cls = getattr(cp, name)
    grid = GRIDS[name]
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning (scikit-learn's "Scoring failed") fails
        gs = GridSearchCV(cls(), grid, scoring=scoring, cv=cv).fit(x, y)
    got = gs.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(got))
    ((key, values),) = grid.items()
    want = []
    for v in values:
        folds = []
        for tr, te in cv.split(x, y):
            m = cls(**{key: v}).fit(x[tr], y[tr])
            q = m.predict_proba(x[te])
            assert q.shape == (len(te),)  # an object made by its constructor: (n,) out
            folds.append(SCORERS[scoring](y[te], q))
        want.append(np.mean(folds))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert gs.best_params_ == {key: values[int(np.argmax(want))]}


def test_grid_search_picks_a_sensible_number_of_bins() -> None:
    """Histogram binning on 1800 rows: 3 bins underfit, 300 bins leave empty or tiny
    bins (log-loss near the clipping floor): 10 or 30 bins must win on the log-loss."""
    p, y = _binary(1800, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gs = GridSearchCV(
            cp.HistogramBinning(), {"n_bins": [3, 10, 30, 300]}, scoring="neg_log_loss"
        ).fit(p, y)
    assert gs.best_params_["n_bins"] in (10, 30)
    # the refitted best estimator is a scikit-learn classifier: (n, 2) out
    q = gs.best_estimator_.predict_proba(p)
    assert q.shape == (len(p), 2)
    hand = cp.HistogramBinning(n_bins=gs.best_params_["n_bins"]).fit(p, y).predict_proba(p)
    np.testing.assert_array_equal(q, np.stack([1 - hand, hand], axis=1))


def test_a_clone_gives_two_columns_and_the_original_keeps_one() -> None:
    p, y = _binary(300, seed=3)
    hb = cp.HistogramBinning(n_bins=7)
    c = clone(hb)
    assert c.get_params() == hb.get_params() and c is not hb
    q = hb.fit(p, y).predict_proba(p)
    assert q.shape == (300,)
    np.testing.assert_array_equal(c.fit(p, y).predict_proba(p), np.stack([1 - q, q], axis=1))
    assert clone(c)._two_columns  # a clone of a clone stays a scikit-learn classifier
    assert c.score(p, y) == hb.score(p, y)


# ----------------------------------------------------------------------------- swapped arguments

SWAP = "arguments look swapped"


def _mc(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(k), n), rng.integers(0, k, n)


@pytest.mark.parametrize("fn", ["ece", "mce", "nll", "brier", "classwise_ece", "rmsce"])
def test_scikit_learn_argument_order_is_named(fn: str) -> None:
    f = getattr(cp, fn)
    p, y = _binary(200, seed=4)
    for labels in (y, y.astype(np.float64), y.astype(bool), y.tolist()):
        with pytest.raises(CalibrationInputError, match=SWAP + r".*\(probs, labels\)"):
            f(labels, p)
    P, Y = _mc(200, 4, seed=5)
    with pytest.raises(CalibrationInputError, match=SWAP):
        f(Y, P)


def test_swap_hint_keeps_the_original_error() -> None:
    p, y = _binary(50, seed=6)
    with pytest.raises(CalibrationInputError) as e:
        cp.ece(y, p)
    assert "labels must be integers; found" in str(e.value)


@pytest.mark.parametrize("fn", ["ece", "nll", "brier"])
def test_legitimate_inputs_get_no_swap_hint(fn: str) -> None:
    """Probabilities that are exactly 0/1 with integer labels are a legitimate call (no
    error at all); real errors of another kind keep their message without the hint."""
    f = getattr(cp, fn)
    p = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    y = np.array([0, 1, 0, 0, 1])
    assert np.isfinite(f(p, y)) or fn == "nll"  # nll of a wrong 0/1 prediction is +inf
    cases = [
        (np.array([0.2, 0.7, 0.9]), np.array([0.5, 1.0, 0.0])),  # non-integer labels, real probs
        (np.array([0, 1, 2]), np.array([0, 1, 1])),  # both integer: no probabilities anywhere
        (np.array([0, 1, 1]), np.array([0.2, 1.5, 0.1])),  # 'probabilities' outside [0, 1]
    ]
    for a, b in cases:
        with pytest.raises(CalibrationInputError) as e:
            f(a, b)
        assert SWAP not in str(e.value)


# ----------------------------------------------------------------------------- metric objects


def _objects() -> list[tuple[str, str]]:
    pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    return [
        ("ECE", "ece"),
        ("ECE", "mce"),
        ("ECE", "rmsce"),
        ("ClasswiseECE", "classwise_ece"),
        ("BinnedProperCE", "calibration_error"),
        ("NLL", "nll"),
        ("Brier", "brier"),
    ]


_VALUES = {  # a non-default value of each argument, to construct the object with
    "lens": "top_label",
    "n_bins": 7,
    "edge_rule": "left",
    "reduction": "sum",
    "logits": True,
    "validate": False,
    "clip": 1e-3,
    "sample_weight": [1.0, 2.0],
    "classes": [0, 1],
    "estimator": None,
    "selection": None,
    "divergence": "kl",
    "aggregate": "max",
    "class_aggregate": "sum",
}


@pytest.mark.parametrize("pair", range(7))
def test_every_metric_object_takes_its_functions_arguments_or_names_them(pair: int) -> None:
    """For every argument of the function (beyond probs and labels): the object takes it,
    and then streams the function's value with it; or it raises CalibrationInputError
    naming the argument (never a bare TypeError)."""
    obj_name, fn_name = _objects()[pair]  # skips without torch / torchmetrics
    import torch

    import calipers.stream.torchmetrics as ctm

    obj, fn = getattr(ctm, obj_name), getattr(cp, fn_name)
    obj_params = set(inspect.signature(obj).parameters) - {"kwargs"}
    fn_params = [k for k in inspect.signature(fn).parameters if k not in ("probs", "labels")]
    rng = np.random.default_rng(pair)
    z = torch.as_tensor(rng.standard_normal((400, 3)) * 2)
    y = torch.as_tensor(rng.integers(0, 3, 400))
    extra = {"mce": {"norm": "max"}, "rmsce": {"norm": "l2"}}.get(fn_name, {})
    for key in fn_params:
        value = _VALUES[key]
        if key in obj_params:
            kw = {"logits": True, key: value}  # the data are logits
            m = obj(**kw, **extra)
            for sl in (slice(0, 150), slice(150, 400)):
                m.update(z[sl], y[sl])
            if fn_name in ("rmsce", "calibration_error"):  # the objects' equal-width bins
                from calipers.estimators.binning import EqualWidth

                binning = EqualWidth(kw.pop("n_bins", 15), kw.pop("edge_rule", "right"))
                kw["estimator"] = binning
            if fn_name == "calibration_error":
                kw["divergence"] = "kl"  # BinnedProperCE(score="log")
            want = fn(z, y, **kw)
            assert float(m.compute()) == pytest.approx(float(want), rel=1e-10), key
        else:
            with pytest.raises(CalibrationInputError, match=rf"does not take {key}="):
                obj(**{key: value})


def test_classwise_ece_with_n_bins_and_logits_only() -> None:
    """The issue's call: ClasswiseECE(n_bins=15, logits=True) (a bare TypeError before);
    the number of classes is read from the first batch, as classwise_ece reads it."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from calipers.stream.torchmetrics import ClasswiseECE

    rng = np.random.default_rng(7)
    z = torch.as_tensor(rng.standard_normal((500, 4)))
    y = torch.as_tensor(rng.integers(0, 4, 500))
    m = ClasswiseECE(n_bins=15, logits=True)
    for sl in (slice(0, 1), slice(1, 100), slice(100, 500)):
        m.update(z[sl], y[sl])
    want = cp.classwise_ece(z, y, n_bins=15, logits=True)
    assert float(m.compute()) == pytest.approx(float(want), rel=1e-12)
    with pytest.raises(
        CalibrationInputError, match="classes 3 in this batch, 4 fixed by the first batch"
    ):
        m.update(z[:5, :3], y[:5] % 3)
    m.reset()
    m.update(z[:, :3], y % 3)  # after reset, the next batch says again
    want3 = cp.classwise_ece(z[:, :3], y % 3, n_bins=15, logits=True)
    assert float(m.compute()) == pytest.approx(float(want3), rel=1e-12)


def test_a_logit_method_on_a_classifier_without_logits_names_what_applies() -> None:
    # GaussianNB has no decision_function and its predict_proba holds exact 1.0 on this
    # data: the error must not ask for logits the user cannot give, and must name the
    # methods that take probabilities
    from sklearn.datasets import load_breast_cancer
    from sklearn.naive_bayes import GaussianNB

    X, y = load_breast_cancer(return_X_y=True)
    assert (GaussianNB().fit(X, y).predict_proba(X) == 1.0).any()
    for method in (cp.PlattScaling(), cp.TemperatureScaling()):
        for rc in (
            cp.RecalibratedClassifier(GaussianNB(), method, cv=3),
            cp.RecalibratedClassifier(GaussianNB().fit(X[:300], y[:300]), method),
        ):
            with pytest.raises(CalibrationInputError) as info:
                rc.fit(X if rc.cv else X[300:], y if rc.cv else y[300:])
            text = str(info.value)
            assert "GaussianNB has no decision_function" in text
            assert "IsotonicRegression" in text and "is 1.0" in text
            assert "logits=True" not in text
    q = cp.RecalibratedClassifier(GaussianNB(), cp.IsotonicRegression(), cv=3).fit(X, y)
    assert np.isfinite(cp.nll(q.predict_proba(X), y))
