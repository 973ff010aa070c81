"""Every recalibrator, and :class:`calipers.RecalibratedClassifier`, as a scikit-learn classifier.

* ``import calipers`` never imports scikit-learn (a fresh interpreter is asked);
* scikit-learn's own ``check_estimator`` on every recalibrator and on the wrapper,
  with the checks that cannot apply listed in :func:`sklearn_expected_failed_checks`
  (one reason each): no other check may fail, and every listed check must fail
  (so the list cannot go stale);
* ``GridSearchCV`` and ``cross_val_score`` give the scores computed by hand, fold
  by fold, with ``sklearn.metrics.log_loss`` or a NumPy log-likelihood;
* labels as users have them (strings, ``classes=``, a fitted classifier's
  ``classes_``) give the fit of the column indices they stand for, and survive JSON;
* the ``(n, 1)`` single-column rule, and torch tensors given back as tensors;
* the wrapper equals its recalibrator fitted by hand on the frozen estimator's
  ``decision_function`` / ``predict_proba``, inside a ``Pipeline`` and a grid search.
"""

from __future__ import annotations

import contextlib
import copy
import doctest
import json
import os
import pickle
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin, clone, is_classifier
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_array, get_tags
from sklearn.utils.estimator_checks import check_estimator
from sklearn.utils.validation import check_is_fitted

import calipers as cp
from calipers.recalibration import base
from calipers.validation import CalibrationInputError

METHODS = sorted(
    name for name, c in base._REGISTRY.items() if c.__module__.startswith("calipers.recalibration")
)
BINARY_ONLY = {"BetaCalibration", "PlattScaling"}
K = 3

# ----------------------------------------------------------------------------- data


def _softmax(z: np.ndarray) -> np.ndarray:
    if z.ndim == 1:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _data(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident logits (labels drawn from the logits / 2) and their labels."""
    rng = np.random.default_rng(seed)
    if kind == "binary":
        z = 2.5 * rng.standard_normal(n) + 0.3
        return z, (rng.random(n) < _softmax(z / 2)).astype(np.int64)
    z = 2.5 * rng.standard_normal((n, K)) + np.array([0.3, 0.0, -0.2])
    p = _softmax(z / 2)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1), K - 1)
    return z, y


def _kinds(name: str) -> list[str]:
    return ["binary"] if name in BINARY_ONLY else ["binary", "multiclass"]


PAIRS = [(m, k) for m in METHODS for k in _kinds(m)]
NAMES = np.array(["ant", "bee", "cat"])  # sorted: the classes of column 0, 1, 2


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Fits on small samples may warn (a temperature at its bound); not the point here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _exact(cls: Any, **kw: Any) -> Any:
    """``cls(**kw)`` with exact bin / isotonic frequencies (``smoothing="none"``) where the
    class has that choice: outputs exactly 0 and 1 are possible."""
    import inspect

    if "smoothing" in inspect.signature(cls).parameters:
        kw["smoothing"] = "none"
    return cls(**kw)


def _fit(rc: base.Recalibrator, *args: Any, **kw: Any) -> base.Recalibrator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return rc.fit(*args, **kw)


def _loglik(q: np.ndarray, y: np.ndarray) -> float:
    """Mean log-likelihood computed by hand: log q[y] ((n,) binary: log q or log(1 - q))."""
    if q.ndim == 1:
        return float(np.mean(np.log(np.where(y == 1, q, 1.0 - q))))
    return float(np.mean(np.log(q[np.arange(len(y)), y])))


# ----------------------------------------------------------------------------- import cost


def test_import_calipers_does_not_import_sklearn() -> None:
    code = (
        "import sys, calipers, calipers.recalibration.recalibrated_classifier\n"
        "print(sorted(m for m in sys.modules if m == 'sklearn' or m.startswith('sklearn.')))\n"
        "print(calipers.__file__)\n"
    )
    here = str(Path(cp.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    loaded, path = out.stdout.splitlines()[:2]
    assert Path(path).resolve() == Path(cp.__file__).resolve()
    assert loaded == "[]"


# ----------------------------------------------------------------------------- the estimator checks


class FirstTwoFeatures(TransformerMixin, BaseEstimator):
    """The first two columns of any input (zero-padded), dense: the frozen model of the
    wrapper's checks reads X of any width, so that scikit-learn's check data reach the
    wrapper (a model with a fixed number of features would refuse most of them)."""

    def fit(self, X: Any, y: Any = None) -> FirstTwoFeatures:
        return self

    def transform(self, X: Any) -> np.ndarray:
        X = check_array(X, accept_sparse="csr")
        out = X[:, :2]
        out = np.asarray(out.toarray() if hasattr(out, "toarray") else out)
        pad = np.zeros((out.shape[0], 2 - out.shape[1]))
        return np.hstack([out, pad]) if pad.shape[1] else out

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.requires_fit = False
        return tags


def _frozen_model() -> Pipeline:
    X, y = make_blobs(n_samples=300, random_state=0, n_features=2)
    return make_pipeline(FirstTwoFeatures(), LogisticRegression()).fit(X, y)


def sklearn_expected_failed_checks(estimator: Any) -> dict[str, str]:
    """The checks of ``check_estimator`` that cannot apply, with the reason for each.

    Recalibrators: scikit-learn's checks feed arbitrary features as ``X`` (uniform
    numbers, counts, blobs, iris), and a recalibrator's ``X`` is scores (logits or
    probabilities) with one column per class, read from their values only when that
    is unambiguous; labels are column indices. The wrapper: its classes are the frozen
    estimator's (here [0, 1, 2], from a model that reads the first two features of any X).
    """
    features = (
        "X holds arbitrary non-negative features, neither probabilities (rows do not sum to "
        "1) nor recognisable logits (no entry below -0.5): fit refuses to guess"
    )
    near_zero = (
        "X has small negative entries (above -0.5) and rows that do not sum to 1: neither "
        "probabilities nor recognisable logits, so fit refuses to guess"
    )
    one_label = (
        "the classes are the score columns, not the labels seen: a fit on one label is valid "
        "and predicts every column's class"
    )
    if isinstance(estimator, cp.RecalibratedClassifier):
        model = "the frozen model reads any number of features (the first two)"
        other = "labels outside the frozen estimator's classes_ [0, 1, 2]"
        why = {
            "check_n_features_in_after_fitting": model + ", so it has no n_features_in_",
            "check_n_features_in": model + ", so it has no n_features_in_",
            "check_classifiers_train": model + ": predict(X.T) does not fail",
            "check_dtype_object": other + " (y takes 4 values)",
            "check_estimator_sparse_array": other + " (y takes 4 values)",
            "check_estimator_sparse_matrix": other + " (y takes 4 values)",
            "check_classifiers_classes": other + " (string labels)",
        }
        return why
    why = {
        "check_fit_score_takes_y": features + " (and fit names its arguments scores, labels)",
        "check_dont_overwrite_parameters": features,
        "check_estimators_dtypes": features,
        "check_sample_weights_pandas_series": features,
        "check_sample_weights_not_an_array": features,
        "check_sample_weights_list": features,
        "check_sample_weights_shape": features,
        "check_sample_weights_not_overwritten": features,
        "check_sample_weight_equivalence_on_dense_data": (
            features + "; it also calls fit(X, y=y), and fit names its labels 'labels'"
        ),
        "check_dtype_object": "object arrays are refused by design, as by the metrics",
        "check_estimators_empty_data_messages": (
            "(n, 0) scores are refused in calipers' words ('calibration needs k >= 2 "
            "classes'), not scikit-learn's '0 feature(s)'"
        ),
        "check_pipeline_consistency": near_zero,
        "check_estimators_pickle": near_zero,
        "check_estimators_nan_inf": features + " (and NaN is reported as 'nan', not 'NaN')",
        "check_f_contiguous_array_estimator": features,
        "check_classifier_data_not_an_array": features,
        "check_classifiers_one_label": one_label,
        "check_classifiers_one_label_sample_weights": one_label,
        "check_classifiers_classes": (
            "3 string classes on 2 columns of features: string labels name the columns in "
            "sorted order only when there is one per column"
        ),
        "check_classifiers_regression_target": (
            features + "; a continuous target is refused as 'labels must be integers'"
        ),
        "check_supervised_y_2d": features,
        "check_methods_sample_order_invariance": features,
        "check_methods_subset_invariance": features,
        "check_fit2d_1sample": features + " (the check wants a message about 1 sample)",
        "check_fit2d_1feature": (
            "one column is binary scores P(y = 1); these exceed 1 with none below -0.5, so "
            "fit refuses to guess (the check wants '1 feature(s)')"
        ),
        "check_dict_unchanged": features,
        "check_fit_idempotent": features,
        "check_fit_check_is_fitted": features,
        "check_n_features_in": features,
        "check_fit2d_predict1d": features,
    }
    if not estimator._binary_only:  # binary-only methods get binary labels from the checks
        columns = "3 classes of labels on 2 columns of features: label 2 is out of range"
        why["check_estimators_overwrite_params"] = columns
        why["check_estimators_fit_returns_self"] = columns
        why["check_readonly_memmap_input"] = columns
        why["check_classifiers_train"] = (
            "blob features read as logits: their arg-max is no trained classifier (accuracy "
            "far below 0.83), and 3 classes on 2 columns are out of range"
        )
    else:
        four = "4 columns of features for a binary method, which needs (n,) or (n, 2) scores"
        why["check_n_features_in_after_fitting"] = four
        why["check_positive_only_tag_during_fit"] = four
    if isinstance(estimator, cp.BetaCalibration):  # Platt's affine map of z1 - z0 passes
        why["check_classifiers_train"] = (
            "blob features read as two logits: beta calibration maps their sigmoid "
            "monotonically (without reversing it), so accuracy stays far below 0.83"
        )
    if "max_iter" in estimator.get_params():
        why["check_non_transformer_estimators_n_iter"] = (
            "X is the iris features (positive, rows not summing to 1): fit refuses to guess"
        )
    return why


def _run_checks(estimator: Any) -> dict[str, set[str]]:
    """check_estimator with the expected failures; {status: check names}."""
    expected = sklearn_expected_failed_checks(estimator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(
            estimator, expected_failed_checks=expected, on_fail=None, on_skip=None
        )
    status: dict[str, set[str]] = {}
    for r in results:
        status.setdefault(r["status"], set()).add(r["check_name"])
    failed = {
        r["check_name"]: f"{type(r['exception']).__name__}: {r['exception']}"[:300]
        for r in results
        if r["status"] == "failed"
    }
    assert not failed, failed
    assert status.get("xfail", set()) == set(expected), (
        "listed as expected to fail, but passed: "
        f"{sorted(set(expected) - status.get('xfail', set()))}"
    )
    assert status.get("skipped", set()) <= {"check_array_api_input"}
    return status


@pytest.mark.parametrize("name", METHODS)
def test_check_estimator_on_every_recalibrator(name: str) -> None:
    status = _run_checks(base._REGISTRY[name]())
    # what passes is scikit-learn's API contract: clone, get/set_params, NotFittedError
    # before fit, y=None, all-zero weights, complex / sparse X and NaN labels refused
    assert {
        "check_estimator_cloneable",
        "check_get_params_invariance",
        "check_set_params",
        "check_estimators_unfitted",
        "check_no_attributes_set_in_init",
        "check_complex_data",
        "check_estimator_sparse_array",
        "check_requires_y_none",
        "check_all_zero_sample_weights_error",
        "check_estimator_sparse_matrix",
        "check_supervised_y_no_nan",
    } <= status["passed"]
    if name in BINARY_ONLY:
        assert "check_classifier_not_supporting_multiclass" in status["passed"]
    else:
        assert "check_n_features_in_after_fitting" in status["passed"]


@pytest.mark.parametrize("method", [None, cp.HistogramBinning()], ids=["default", "histogram"])
def test_check_estimator_on_the_wrapper(method: base.Recalibrator | None) -> None:
    status = _run_checks(cp.RecalibratedClassifier(_frozen_model(), method))
    assert {
        "check_estimators_pickle",
        "check_fit_idempotent",
        "check_methods_subset_invariance",
        "check_methods_sample_order_invariance",
        "check_sample_weight_equivalence_on_dense_data",
        "check_supervised_y_2d",
        "check_classifiers_regression_target",
        "check_estimators_overwrite_params",
        "check_dict_unchanged",
    } <= status["passed"]


DOC = Path(__file__).resolve().parents[1] / "docs" / "scikit-learn.md"


def test_the_page_lists_every_expected_failure_and_its_examples_run() -> None:
    text = DOC.read_text(encoding="utf-8")
    listed = set()
    for line in text.splitlines():
        if line.startswith("| `check_"):
            listed |= set(re.findall(r"`(check_\w+)`", line.split(" | ")[0]))
    estimators = [base._REGISTRY[name]() for name in METHODS] + [
        cp.RecalibratedClassifier(_frozen_model(), method)
        for method in (None, cp.HistogramBinning())
    ]
    expected = set().union(*(sklearn_expected_failed_checks(e) for e in estimators))
    assert listed == expected
    result = doctest.testfile(
        str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0 and result.attempted > 10


# ----------------------------------------------------------------------------- the contract


@pytest.mark.parametrize("name", METHODS)
def test_tags_clone_and_fitted_state(name: str) -> None:
    rc = base._REGISTRY[name]()
    tags = get_tags(rc)
    assert tags.estimator_type == "classifier" and is_classifier(rc)
    assert tags.classifier_tags is not None
    assert tags.classifier_tags.multi_class is (name not in BINARY_ONLY)
    assert rc._estimator_type == "classifier"
    assert not hasattr(rc, "classes_") and not hasattr(rc, "n_features_in_")
    with pytest.raises(NotFittedError):
        check_is_fitted(rc)
    with pytest.raises(NotFittedError, match="not fitted"):
        rc.predict(np.zeros(3))
    twin = clone(rc)
    assert type(twin) is type(rc) and twin.get_params() == rc.get_params() and twin is not rc
    z, y = _data("binary", 80, 1)
    _fit(rc, z, y)
    check_is_fitted(rc)
    assert rc.n_features_in_ == 1 and rc.classes_.tolist() == [0, 1]
    assert not hasattr(clone(rc), "n_classes_")  # a clone is unfitted
    try:
        base._REGISTRY[name]().predict_proba(z)
    except NotFittedError as exc:  # also calipers' own, and it survives pickling
        pickle.dumps(exc)  # picklable (joblib); rebuilt by the same __reduce__ protocol:
        again = copy.deepcopy(exc)
        assert isinstance(again, base.NotFittedError) and isinstance(again, NotFittedError)
        assert isinstance(exc, CalibrationInputError) and isinstance(exc, AttributeError)


@pytest.mark.parametrize(("name", "kind"), PAIRS)
def test_invariances_on_valid_scores(name: str, kind: str) -> None:
    """What scikit-learn's checks would test on data they cannot give a recalibrator:
    sample order and subsets do not change a row's prediction, predict changes no
    state, a refit gives the same map, pickling keeps it."""
    z, y = _data(kind, 120, 3)
    rc = _fit(base._REGISTRY[name](), z, y)
    q = rc.predict_proba(z)
    state = pickle.dumps(rc.__dict__)
    order = np.random.default_rng(0).permutation(len(z))
    np.testing.assert_allclose(rc.predict_proba(z[order]), q[order], rtol=0, atol=1e-12)
    np.testing.assert_allclose(rc.predict_proba(z[:7]), q[:7], rtol=0, atol=1e-12)
    assert pickle.dumps(rc.__dict__) == state
    again = _fit(rc, z, y)
    np.testing.assert_array_equal(again.predict_proba(z), q)
    pickle.dumps(rc)  # picklable, as joblib needs; rebuilt through the same protocol:
    back = copy.deepcopy(rc)
    np.testing.assert_array_equal(back.predict_proba(z), q)
    np.testing.assert_array_equal(back.predict(z), rc.predict(z))


@pytest.mark.parametrize(("name", "kind"), PAIRS)
def test_cross_val_score_is_the_mean_log_likelihood_of_each_fold(name: str, kind: str) -> None:
    """scikit-learn's cross_val_score with the default scoring (the recalibrator's
    score) equals the log-likelihood of each held-out fold computed by hand."""
    z, y = _data(kind, 150, 4)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    with _quiet():
        got = cross_val_score(base._REGISTRY[name](), z, y, cv=cv)
        want = [
            _loglik(base._REGISTRY[name]().fit(z[tr], y[tr]).predict_proba(z[te]), y[te])
            for tr, te in cv.split(z, y)
        ]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_score_is_minus_the_nll_and_not_clipped() -> None:
    z, y = _data("multiclass", 200, 5)
    ts = _fit(cp.TemperatureScaling(), z, y)
    q = ts.predict_proba(z)
    assert ts.score(z, y) == pytest.approx(_loglik(q, y), rel=1e-12)
    assert ts.score(z, y) == pytest.approx(-log_loss(y, q), rel=1e-12)
    w = np.random.default_rng(0).random(200)
    want = np.sum(w * np.log(q[np.arange(200), y])) / w.sum()
    assert ts.score(z, y, sample_weight=w) == pytest.approx(want, rel=1e-12)
    # a true class at probability 0: -inf (scikit-learn's log_loss clips instead)
    p = np.array([0.05, 0.15, 0.95, 0.85])
    hb = _exact(cp.HistogramBinning, n_bins=2).fit(p, [0, 0, 1, 1])
    assert hb.score(np.array([0.1]), [1]) == -np.inf


# ----------------------------------------------------------------------------- grid search


def _grid_by_hand(
    make: Any, grid: list[Any], X: np.ndarray, y: np.ndarray, cv: Any, labels: Any
) -> np.ndarray:
    """Mean over the folds of minus sklearn's log_loss, per grid point, fitted by hand."""
    out = []
    for value in grid:
        losses = []
        for tr, te in cv.split(X, y):
            q = make(value).fit(X[tr], y[tr]).predict_proba(X[te])
            losses.append(log_loss(y[te], q, labels=labels))
        out.append(-np.mean(losses))
    return np.asarray(out)


def test_grid_search_on_one_column_of_binary_probabilities() -> None:
    z, y = _data("binary", 300, 6)
    p = _softmax(z)[:, None]  # (n, 1): scikit-learn's matrix of one feature
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    grid = [5, 10, 20]
    gs = GridSearchCV(cp.HistogramBinning(), {"n_bins": grid}, scoring="neg_log_loss", cv=cv)
    gs.fit(p, y)
    want = _grid_by_hand(lambda b: cp.HistogramBinning(n_bins=b), grid, p, y, cv, [0, 1])
    np.testing.assert_allclose(gs.cv_results_["mean_test_score"], want, rtol=1e-12)
    assert gs.best_params_ == {"n_bins": grid[int(np.argmax(want))]}
    assert gs.best_score_ == pytest.approx(want.max(), rel=1e-12)
    assert gs.predict_proba(p).shape == (300, 2)


def test_grid_search_on_multiclass_probabilities_with_string_labels() -> None:
    z, y = _data("multiclass", 300, 7)
    p, names = _softmax(z), NAMES[y]
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    grid = ["one_vs_rest", "top_label"]
    gs = GridSearchCV(cp.HistogramBinning(), {"mode": grid}, scoring="neg_log_loss", cv=cv)
    gs.fit(p, names)
    want = _grid_by_hand(lambda m: cp.HistogramBinning(mode=m), grid, p, names, cv, NAMES)
    np.testing.assert_allclose(gs.cv_results_["mean_test_score"], want, rtol=1e-12)
    assert gs.best_score_ == pytest.approx(want.max(), rel=1e-12)
    assert set(gs.predict(p)) <= set(NAMES)


def test_grid_search_on_binary_logits_with_the_default_score() -> None:
    """(n,) scores work with the default scoring (the recalibrator's score, not clipped:
    a bin without positives gives -inf on a fold, by hand too)."""
    z, y = _data("binary", 240, 8)
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    grid = [5, 10, 20]
    with warnings.catch_warnings(), np.errstate(divide="ignore"):
        warnings.simplefilter("ignore")
        gs = GridSearchCV(_exact(cp.HistogramBinning), {"n_bins": grid}, cv=cv).fit(z, y)
        want = [
            np.mean(
                [
                    _loglik(
                        _exact(cp.HistogramBinning, n_bins=b)
                        .fit(z[tr], y[tr])
                        .predict_proba(z[te]),
                        y[te],
                    )
                    for tr, te in cv.split(z, y)
                ]
            )
            for b in grid
        ]
    np.testing.assert_allclose(gs.cv_results_["mean_test_score"], want, rtol=1e-12)
    assert np.isneginf(want[-1]) and gs.best_params_ == {"n_bins": grid[int(np.argmax(want))]}


def test_one_dimensional_scores_feed_scikit_learns_probability_scorers() -> None:
    """scikit-learn's scorers read predict_proba(X)[:, 1]: the copies its clone makes give
    two columns for (n,) scores, so (n,) and (n, 1) give the same grid search (it raised
    IndexError on every fold before)."""
    z, y = _data("binary", 120, 9)
    gs = GridSearchCV(
        cp.TemperatureScaling(),
        {"t_max": [50.0, 100.0]},
        scoring="neg_log_loss",
        error_score="raise",
    )
    with _quiet():
        flat = gs.fit(z, y).cv_results_["mean_test_score"]
        col = gs.fit(z[:, None], y).cv_results_["mean_test_score"]
    assert np.all(np.isfinite(flat))
    np.testing.assert_array_equal(flat, col)


# ----------------------------------------------------------------------------- the (n, 1) rule


@pytest.mark.parametrize("name", METHODS)
def test_one_column_is_binary_scores(name: str) -> None:
    z, y = _data("binary", 100, 10)
    one = _fit(base._REGISTRY[name](), z, y)
    col = _fit(base._REGISTRY[name](), z[:, None], y)
    q = one.predict_proba(z)
    assert col.n_features_in_ == one.n_features_in_ == 1
    np.testing.assert_array_equal(col.predict_proba(z), q)
    np.testing.assert_array_equal(one.predict_proba(z[:, None]), np.stack([1 - q, q], axis=1))
    np.testing.assert_array_equal(col.predict(z[:, None]), (q > 0.5).astype(np.int64))
    two = _fit(base._REGISTRY[name](), np.stack([np.zeros_like(z), z], axis=1), y)
    assert two.n_features_in_ == 2


def test_a_column_of_multiclass_scores_is_read_as_binary_and_refused_by_name() -> None:
    z, y = _data("multiclass", 60, 11)
    ts = _fit(cp.TemperatureScaling(), z, y)
    with pytest.raises(CalibrationInputError, match=r"one column \(n, 1\), read as binary"):
        ts.predict_proba(z[:, :1])
    with pytest.raises(CalibrationInputError, match=r"labels must be in \[0, 2\)"):
        cp.TemperatureScaling().fit(z[:, :1], y)


# ----------------------------------------------------------------------------- labels


@pytest.mark.parametrize(("name", "kind"), PAIRS)
def test_string_labels_fit_as_the_column_indices_they_name(name: str, kind: str) -> None:
    z, y = _data(kind, 150, 12)
    names = NAMES[: (2 if kind == "binary" else K)]
    ints = _fit(base._REGISTRY[name](), z, y)
    strs = _fit(base._REGISTRY[name](), z, names[y].tolist())  # a plain list of str
    assert strs.classes_.tolist() == names.tolist() and ints.classes_.tolist() == list(
        range(len(names))
    )
    np.testing.assert_array_equal(strs.predict_proba(z), ints.predict_proba(z))
    np.testing.assert_array_equal(strs.predict(z), names[ints.predict(z)])
    assert strs.score(z, names[y]) == ints.score(z, y)
    # classes in another order than sorted: the labels follow the columns they name
    order = names[::-1]
    told = _fit(base._REGISTRY[name](), z, order[y], classes=order)
    np.testing.assert_array_equal(told.predict_proba(z), ints.predict_proba(z))
    np.testing.assert_array_equal(told.predict(z), order[ints.predict(z)])
    # a fitted classifier's classes_
    model = LogisticRegression().fit(np.arange(6.0)[:, None], np.resize(order, 6))
    assert model.classes_.tolist() == sorted(order.tolist())
    fitted = _fit(base._REGISTRY[name](), z, names[y], classes=model)
    np.testing.assert_array_equal(fitted.predict_proba(z), ints.predict_proba(z))
    # the classes survive JSON; a fit on column indices writes none (files as before)
    back = cp.load_recalibrator(told.to_json())
    assert back.classes_.tolist() == order.tolist()
    np.testing.assert_array_equal(back.predict(z), told.predict(z))
    assert "classes_" not in json.loads(ints.to_json())["state"]
    # a Predictions validated with classes carries them
    P = cp.check_predictions(z, names[y], logits=True, classes=names)
    via = _fit(base._REGISTRY[name](), P, None)
    assert via.classes_.tolist() == names.tolist()
    np.testing.assert_array_equal(via.predict(P), strs.predict(z))


def test_string_labels_that_do_not_name_the_columns_ask_for_classes() -> None:
    z, y = _data("multiclass", 60, 13)
    with pytest.raises(CalibrationInputError, match=r"labels name 2 classes .*Pass classes="):
        cp.TemperatureScaling().fit(z, NAMES[y % 2])
    with pytest.raises(CalibrationInputError, match=r"labels contain 'dog' at row 0"):
        cp.TemperatureScaling().fit(z, np.r_[["dog"], NAMES[y[1:]]], classes=NAMES)
    with pytest.raises(CalibrationInputError, match=r"classes names 2 classes, but probs has 3"):
        cp.TemperatureScaling().fit(z, y, classes=["a", "b"])
    with pytest.raises(CalibrationInputError, match=r"mix values that cannot be sorted"):
        cp.TemperatureScaling().fit(z, np.array(["a", 1, "b"] * 20, dtype=object))


def test_classes_and_features_in_documents() -> None:
    z, y = _data("binary", 80, 14)
    wide = np.stack([-z / 2, z / 2], axis=1)
    hb = cp.HistogramBinning().fit(_softmax(wide), np.array(["no", "yes"])[y])
    doc = json.loads(hb.to_json())
    assert doc["state"]["classes_"] == ["no", "yes"] and doc["state"]["n_features_in_"] == 2
    back = cp.load_recalibrator(json.dumps(doc))
    assert back.n_features_in_ == 2 and back.classes_.tolist() == ["no", "yes"]
    assert back.to_json() == hb.to_json()
    old = {
        **doc,
        "state": {k: v for k, v in doc["state"].items() if k not in ("classes_", "n_features_in_")},
    }
    legacy = cp.load_recalibrator(json.dumps(old))  # a file written before: the defaults
    assert legacy.classes_.tolist() == [0, 1] and legacy.n_features_in_ == 1
    for field, value, match in [
        ("classes_", ["no"], r"'classes_' must be a list of n_classes_ .*2 labels; got 1"),
        ("classes_", ["no", "no"], r"label 'no' appears at positions 0 and 1"),
        ("classes_", ["no", 1], r"labels of types \['int', 'str'\]"),
        ("n_features_in_", 3, r"'n_features_in_' must be 1 or 2 \(binary scores\); got 3"),
        ("n_features_in_", 0, r"'n_features_in_' must be an integer >= 1"),
    ]:
        bad = {**doc, "state": {**doc["state"], field: value}}
        with pytest.raises(CalibrationInputError, match=match):
            cp.load_recalibrator(json.dumps(bad))
    unfitted = {**doc, "state": {"classes_": ["no", "yes"]}}
    with pytest.raises(CalibrationInputError, match=r"state holds no fit"):
        cp.load_recalibrator(json.dumps(unfitted))
    odd = np.array([1.5, "a"], dtype=object)  # a float and a string: no JSON list type
    mixed = cp.TemperatureScaling().fit(z, odd[y], classes=odd)
    with pytest.raises(CalibrationInputError, match=r"cannot be saved: field 'classes_'"):
        mixed.to_json()


# ----------------------------------------------------------------------------- torch


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["TemperatureScaling", "HistogramBinning", "PlattScaling"])
def test_tensors_come_back_as_tensors(name: str, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    kind = "binary" if name == "PlattScaling" else "multiclass"
    z, y = _data(kind, 100, 15)
    t = torch.tensor(z, dtype=getattr(torch, dtype))
    rc = _fit(base._REGISTRY[name](), t, torch.tensor(y))
    ref = _fit(base._REGISTRY[name](), t.numpy(), y)  # the same numbers, in NumPy
    q = rc.predict_proba(t)
    assert isinstance(q, torch.Tensor) and q.dtype == t.dtype and q.device == t.device
    expected = ref.predict_proba(t.numpy())
    assert expected.dtype == np.float64  # NumPy in, float64 out
    assert q.equal(torch.from_numpy(expected).to(t.dtype))
    pred = rc.predict(t)
    assert isinstance(pred, torch.Tensor) and pred.dtype == torch.int64 and pred.device == t.device
    if kind == "binary":
        two = rc.predict_proba(t[:, None])
        assert two.shape == (100, 2) and two.dtype == t.dtype
    named = _fit(base._REGISTRY[name](), t, NAMES[y])
    assert named.predict(t).tolist() == NAMES[ref.predict(t.numpy())].tolist()


# ----------------------------------------------------------------------------- the wrapper


def _split_data(n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((900, 4)) * [3.0, 1.0, 1.0, 1.0] + 2.0
    w = rng.standard_normal((4, n_classes))
    logits = 3.0 * (X - 2.0) @ w
    y = np.array([rng.choice(n_classes, p=p) for p in _softmax(logits / 3)])
    return X, NAMES[y] if n_classes <= 3 else y


@pytest.mark.parametrize("n_classes", [2, 3])
def test_wrapper_equals_its_recalibrator_fitted_by_hand(n_classes: int) -> None:
    X, y = _split_data(n_classes)
    train, cal, test = slice(0, 300), slice(300, 600), slice(600, 900)
    model = LogisticRegression(C=1e4).fit(X[train], y[train])
    coef = model.coef_.copy()
    rc = cp.RecalibratedClassifier(model).fit(X[cal], y[cal])
    assert (
        rc.response_method_ == "decision_function"
        and rc.classes_.tolist() == model.classes_.tolist()
    )
    assert rc.n_features_in_ == 4 and np.array_equal(model.coef_, coef)
    z = model.decision_function(X[cal])
    assert z.ndim == (1 if n_classes == 2 else 2)
    ts = _fit(cp.TemperatureScaling(), z, y[cal], logits=True, classes=model.classes_)
    q = ts.predict_proba(model.decision_function(X[test]), logits=True)
    q2 = np.stack([1 - q, q], axis=1) if q.ndim == 1 else q
    np.testing.assert_allclose(rc.predict_proba(X[test]), q2, rtol=1e-12, atol=1e-15)
    assert rc.method_.temperature_ == ts.temperature_
    np.testing.assert_array_equal(rc.predict(X[test]), model.classes_[q2.argmax(axis=1)])
    assert rc.score(X[test], y[test]) == pytest.approx(
        -log_loss(y[test], q2, labels=model.classes_)
    )
    # a method of probabilities reads predict_proba (binary: its column 1)
    hb = cp.RecalibratedClassifier(model, cp.HistogramBinning(n_bins=10)).fit(X[cal], y[cal])
    assert hb.response_method_ == "predict_proba"
    P = model.predict_proba(X[cal])
    by_hand = cp.HistogramBinning(n_bins=10).fit(
        P[:, 1] if n_classes == 2 else P, y[cal], classes=model
    )
    P_test = model.predict_proba(X[test])
    q = by_hand.predict_proba(P_test[:, 1] if n_classes == 2 else P_test)
    q2 = np.stack([1 - q, q], axis=1) if q.ndim == 1 else q
    np.testing.assert_array_equal(hb.predict_proba(X[test]), q2)
    # told to read probabilities, temperature scaling uses log p
    forced = cp.RecalibratedClassifier(model, response_method="predict_proba").fit(X[cal], y[cal])
    assert forced.response_method_ == "predict_proba" and forced.method_.input_kind_ == "probs"


def test_wrapper_on_a_pipeline_and_in_a_pipeline() -> None:
    X, y = _split_data(2, seed=1)
    train, cal, test = slice(0, 300), slice(300, 600), slice(600, 900)
    pipe = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression(C=1e4))])
    pipe.fit(X[train], y[train])
    rc = cp.RecalibratedClassifier(pipe, cp.PlattScaling()).fit(X[cal], y[cal])
    platt = cp.PlattScaling().fit(pipe.decision_function(X[cal]), y[cal], classes=pipe.classes_)
    q = platt.predict_proba(pipe.decision_function(X[test]))
    np.testing.assert_allclose(rc.predict_proba(X[test])[:, 1], q, rtol=1e-12)
    # the wrapper as the last step, after a frozen (fitted, never refitted) scaler
    scaler = StandardScaler().fit(X[train])
    mean = scaler.mean_.copy()
    lr = LogisticRegression(C=1e4).fit(scaler.transform(X[train]), y[train])
    outer = Pipeline(
        [
            ("scale", FrozenEstimator(scaler)),
            ("clf", cp.RecalibratedClassifier(lr, cp.PlattScaling())),
        ]
    ).fit(X[cal], y[cal])
    assert np.array_equal(scaler.mean_, mean)
    np.testing.assert_allclose(outer.predict_proba(X[test]), rc.predict_proba(X[test]), rtol=1e-10)
    assert outer.score(X[test], y[test]) == pytest.approx(rc.score(X[test], y[test]), rel=1e-10)


def test_grid_search_over_the_method_of_the_wrapper() -> None:
    X, y = _split_data(3, seed=2)
    model = LogisticRegression(C=1e4).fit(X[:300], y[:300])
    Xc, yc = X[300:], y[300:]
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    grid = [5, 10, 20]
    est = cp.RecalibratedClassifier(model, cp.HistogramBinning())
    gs = GridSearchCV(est, {"method__n_bins": grid}, scoring="neg_log_loss", cv=cv).fit(Xc, yc)
    want = _grid_by_hand(
        lambda b: cp.RecalibratedClassifier(model, cp.HistogramBinning(n_bins=b)),
        grid,
        Xc,
        yc,
        cv,
        model.classes_,
    )
    np.testing.assert_allclose(gs.cv_results_["mean_test_score"], want, rtol=1e-12)
    assert gs.best_params_ == {"method__n_bins": grid[int(np.argmax(want))]}
    assert gs.best_estimator_.estimator is model  # frozen: never cloned, never refitted
    assert est.method.n_bins == 15 and not hasattr(est, "method_")  # the template is untouched
    # the same through the default scoring (the wrapper's mean log-likelihood)
    got = cross_val_score(cp.RecalibratedClassifier(model), Xc, yc, cv=cv)
    by_hand = []
    for tr, te in cv.split(Xc, yc):
        ts = _fit(cp.TemperatureScaling(), model.decision_function(Xc[tr]), yc[tr], classes=model)
        q = ts.predict_proba(model.decision_function(Xc[te]))
        by_hand.append(-log_loss(yc[te], q, labels=model.classes_))
    np.testing.assert_allclose(got, by_hand, rtol=1e-10)


def test_wrapper_parameters_and_refusals() -> None:
    X, y = _split_data(3, seed=3)
    model = LogisticRegression().fit(X[:300], y[:300])
    rc = cp.RecalibratedClassifier(model, cp.HistogramBinning())
    params = rc.get_params()
    assert params["method__n_bins"] == 15 and params["estimator"] is model
    assert set(rc.get_params(deep=False)) == {
        "estimator",
        "method",
        "response_method",
        "cv",
        "ensemble",
    }
    assert "estimator__C" not in params  # frozen (cv=None): not a parameter to tune
    assert rc.set_params(method__n_bins=7) is rc and rc.method.n_bins == 7
    rc.set_params(method=cp.IsotonicRegression(), method__renormalize=False)
    assert rc.method.renormalize is False
    with pytest.raises(ValueError, match=r"the estimator is frozen"):
        rc.set_params(estimator__C=3.0)
    with pytest.raises(ValueError, match=r"no parameter 'bins'"):
        rc.set_params(bins=3)
    twin = clone(rc)
    assert twin.estimator is model and twin.method is not rc.method
    assert twin.method.get_params() == rc.method.get_params()
    with pytest.raises(NotFittedError, match=r"is not fitted \(it has no classes_\)"):
        cp.RecalibratedClassifier(LogisticRegression()).fit(X[:10], y[:10])
    with pytest.raises(NotFittedError):
        rc.predict(X[:3])
    with pytest.raises(ValueError, match=r"response_method must be one of"):
        cp.RecalibratedClassifier(model, response_method="proba").fit(X, y)
    with pytest.raises(ValueError, match=r"labels contain 'dog'"):
        cp.RecalibratedClassifier(model).fit(X[:3], ["dog", "ant", "bee"])
    fitted = cp.RecalibratedClassifier(model).fit(X[300:], y[300:])
    pickle.dumps(fitted)  # picklable, as joblib needs; rebuilt through the same protocol:
    back = copy.deepcopy(fitted)
    np.testing.assert_array_equal(back.predict_proba(X[:5]), fitted.predict_proba(X[:5]))
    assert "RecalibratedClassifier(LogisticRegression()" in repr(fitted)


# ----------------------------------------------------------------------------- cross-fitting


def _exact_isotonic() -> cp.IsotonicRegression:
    """Isotonic regression in scikit-learn's exact form (no smoothing of the fitted values)."""
    return _exact(cp.IsotonicRegression)


def _cancer() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    return tuple(train_test_split(X, y, test_size=0.4, random_state=0, stratify=y))  # type: ignore[return-value]


@pytest.mark.parametrize("ensemble", [True, False])
@pytest.mark.parametrize("case", ["svc-sigmoid", "lr-sigmoid", "gnb-isotonic", "rf-isotonic-10"])
def test_cross_fitting_equals_scikit_learns_calibrated_classifier_cv(
    case: str, ensemble: bool
) -> None:
    """cv=5 with the same folds and the same method gives scikit-learn's
    CalibratedClassifierCV probabilities: Platt's sigmoid with smoothed targets on the
    decision function (to the optimisers' tolerance), isotonic regression on
    predict_proba (exactly; one-vs-rest and renormalised for 10 classes)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB
    from sklearn.svm import SVC

    if case == "rf-isotonic-10":
        X, y = load_digits(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, random_state=0, stratify=y)
    else:
        Xtr, Xte, ytr, yte = _cancer()
    est: Any = {
        "svc-sigmoid": make_pipeline(StandardScaler(), SVC()),
        "lr-sigmoid": make_pipeline(StandardScaler(), LogisticRegression()),
        "gnb-isotonic": GaussianNB(),
        "rf-isotonic-10": RandomForestClassifier(n_estimators=10, random_state=0),
    }[case]
    sigmoid = "sigmoid" in case
    method: Any = cp.PlattScaling(smooth_targets=True) if sigmoid else _exact_isotonic()
    cv = StratifiedKFold(5)
    with _quiet():
        sk = CalibratedClassifierCV(
            est, method="sigmoid" if sigmoid else "isotonic", cv=cv, ensemble=ensemble
        ).fit(Xtr, ytr)
        rc = cp.RecalibratedClassifier(est, method, cv=cv, ensemble=ensemble).fit(Xtr, ytr)
    assert not hasattr(est, "classes_")  # the template is cloned, never fitted itself
    assert len(rc.calibrated_classifiers_) == (5 if ensemble else 1)
    assert rc.response_method_ == ("decision_function" if sigmoid else "predict_proba")
    np.testing.assert_array_equal(rc.classes_, sk.classes_)
    np.testing.assert_allclose(
        rc.predict_proba(Xte), sk.predict_proba(Xte), rtol=0, atol=1e-6 if sigmoid else 1e-12
    )
    np.testing.assert_array_equal(rc.predict(Xte), sk.predict(Xte))


def test_cross_fitting_by_hand() -> None:
    """ensemble=True: the mean of k wrappers fitted by hand (model on the training folds,
    recalibrator on the held-out fold); ensemble=False: one recalibrator on the
    out-of-fold decision values, paired with the model refitted on all the data."""
    X, names = _split_data(3, seed=5)
    classes = np.unique(names).tolist()
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    model = LogisticRegression(C=50.0)
    ens = cp.RecalibratedClassifier(model, cp.TemperatureScaling(), cv=cv).fit(X, names)
    pairs = []
    oof = np.empty((len(names), 3))
    for tr, te in cv.split(X, names):
        m = clone(model).fit(X[tr], names[tr])
        pairs.append(cp.RecalibratedClassifier(m, cp.TemperatureScaling()).fit(X[te], names[te]))
        oof[te] = m.decision_function(X[te])
    want = np.mean([p.predict_proba(X) for p in pairs], axis=0)
    np.testing.assert_allclose(ens.predict_proba(X), want, rtol=0, atol=1e-15)
    assert ens.classes_.tolist() == classes
    one = cp.RecalibratedClassifier(model, cp.TemperatureScaling(), cv=cv, ensemble=False)
    one = one.fit(X, names)
    ts = cp.TemperatureScaling().fit(oof, names, logits=True, classes=classes)
    full = clone(model).fit(X, names)
    want = ts.predict_proba(full.decision_function(X), logits=True)
    np.testing.assert_allclose(one.predict_proba(X), want, rtol=0, atol=1e-15)
    assert one.method_.temperature_ == pytest.approx(ts.temperature_, rel=1e-12)  # row order


def test_cross_fitting_in_a_grid_search_and_its_refusals() -> None:
    """With cv the estimator is a template: estimator__C is a parameter to tune, clones
    do not share it, and the user's object is never fitted or changed."""
    X, y = _split_data(2, seed=6)
    model = LogisticRegression()
    rc = cp.RecalibratedClassifier(model, cp.PlattScaling(), cv=3)
    assert rc.get_params()["estimator__C"] == 1.0
    assert clone(rc).estimator is not model
    with _quiet():
        gs = GridSearchCV(rc, {"estimator__C": [0.01, 1.0]}, cv=3).fit(X, y)
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
    assert model.C == 1.0 and not hasattr(model, "classes_")
    with pytest.raises(ValueError, match=r"ensemble must be True or False"):
        cp.RecalibratedClassifier(model, cv=3, ensemble="auto").fit(X, y)
    rare = np.where(np.arange(len(y)) < 1, "zzz", y)  # a third class with one row
    with warnings.catch_warnings(), pytest.raises(ValueError, match=r"fold \d has the classes"):
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn: 1 member < n_splits
        cp.RecalibratedClassifier(model, cv=StratifiedKFold(3), ensemble=False).fit(X, rare)
    from sklearn.neighbors import KNeighborsClassifier

    with pytest.raises(ValueError, match=r"KNeighborsClassifier.fit takes no sample_weight"):
        cp.RecalibratedClassifier(KNeighborsClassifier(), cv=3).fit(
            X, y, sample_weight=np.ones(len(y))
        )
    # a Pipeline passes it to its last step: weights 1 are no weights, others change the fit
    pipe = make_pipeline(StandardScaler(), LogisticRegression())
    rc = cp.RecalibratedClassifier(pipe, cp.PlattScaling(), cv=3)
    q = rc.fit(X, y).predict_proba(X)
    np.testing.assert_allclose(rc.fit(X, y, sample_weight=np.ones(len(y))).predict_proba(X), q)
    w = np.random.default_rng(0).uniform(0.1, 3.0, len(y))
    assert np.abs(rc.fit(X, y, sample_weight=w).predict_proba(X) - q).max() > 1e-3
    with pytest.raises(NotFittedError, match=r"pass cv=5 to cross-fit"):
        cp.RecalibratedClassifier(LogisticRegression()).fit(X, y)
