"""Cross-fitting a classifier and a calipers recalibrator: ``RecalibratedClassifier(cv=...)``.

With ``cv`` the estimator is a template, cloned and fitted on each training
fold; the recalibrator is fitted on the held-out fold's outputs, so no row
calibrates a model that was trained on it. ``ensemble=True`` keeps the ``k``
(model, recalibrator) pairs and averages their probabilities; ``ensemble=False``
fits one recalibrator on the out-of-fold outputs of all ``k`` models and pairs
it with the estimator refitted on all the data. This is the procedure of
scikit-learn's ``CalibratedClassifierCV(estimator, cv=k, ensemble=...)``
(Platt 1999 used held-out folds in the same way; Zadrozny & Elkan 2002), with
any calipers method as the recalibrator.

scikit-learn is imported here, when ``fit`` is called with ``cv``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..validation import CalibrationInputError

if TYPE_CHECKING:
    from .recalibrated_classifier import RecalibratedClassifier

__all__ = ["cross_fit"]


def _labels(y: Any, check_targets: Callable[[Any, np.ndarray], Any]) -> np.ndarray:
    """``y`` as a 1-D NumPy array (a column ``(n, 1)`` as scikit-learn ravels it)."""
    arr = np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        return np.asarray(check_targets(arr, np.unique(arr[:, 0])))
    if arr.ndim != 1:
        raise CalibrationInputError(
            f"RecalibratedClassifier.fit with cv needs y of shape (n,); got shape {arr.shape}"
        )
    return arr


def _fit_estimator(est: Any, X: Any, y: np.ndarray, w: np.ndarray | None) -> Any:
    """``est.fit(X, y)``, with ``sample_weight`` when given (refused clearly if not taken).

    A ``Pipeline`` gets it as ``<last step>__sample_weight`` when its last step takes it.
    """
    if w is None:
        return est.fit(X, y)
    from sklearn.utils.validation import has_fit_parameter

    if has_fit_parameter(est, "sample_weight"):
        return est.fit(X, y, sample_weight=w)
    steps = getattr(est, "steps", None)
    if steps and has_fit_parameter(steps[-1][1], "sample_weight"):
        return est.fit(X, y, **{f"{steps[-1][0]}__sample_weight": w})
    raise CalibrationInputError(
        f"sample_weight was given, but {type(est).__name__}.fit takes no sample_weight: "
        "the models of the folds cannot be weighted as the recalibrators are. Fit "
        "without sample_weight, or with an estimator that takes it"
    )


def cross_fit(
    rc: RecalibratedClassifier, X: Any, y: Any, sample_weight: Any = None
) -> RecalibratedClassifier:
    """Fit ``rc`` (whose ``cv`` is set) by cross-fitting; returns ``rc``.

    Sets ``calibrated_classifiers_`` (``k`` fitted :class:`RecalibratedClassifier`
    pairs with ``ensemble=True``, one with ``ensemble=False``), ``classes_``,
    ``response_method_``, ``n_features_in_`` / ``feature_names_in_`` (when the
    estimator has them), and ``method_`` with ``ensemble=False`` (the one
    recalibrator).
    """
    from sklearn.base import clone
    from sklearn.model_selection import check_cv
    from sklearn.utils import _safe_indexing

    cls = type(rc)  # the members are made by rc's own class (no import of it here)

    if rc.ensemble not in (True, False):
        raise CalibrationInputError(f"ensemble must be True or False; got {rc.ensemble!r}")
    if y is None:
        raise CalibrationInputError(
            "RecalibratedClassifier.fit needs the labels; it requires y to be passed, but the "
            "target y is None"
        )
    yn = _labels(y, cls._check_targets)
    classes = np.unique(yn)
    if classes.shape[0] < 2:
        raise CalibrationInputError(
            f"RecalibratedClassifier.fit with cv needs at least 2 classes in y; got "
            f"{classes.tolist()!r}"
        )
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    folds = list(check_cv(rc.cv, yn, classifier=True).split(X, yn))
    template = cls(rc.estimator, rc.method, response_method=rc.response_method)
    method = template._method()  # checks method (a Recalibrator) before any model is fitted
    members: list[RecalibratedClassifier] = []
    scores: list[Any] = []
    response = None
    for i, (tr, te) in enumerate(folds):
        est = _fit_estimator(
            clone(rc.estimator),
            _safe_indexing(X, tr),
            yn[tr],
            None if w is None else w[tr],
        )
        got = np.asarray(getattr(est, "classes_", []))
        if got.shape != classes.shape or not np.array_equal(got, classes):
            raise CalibrationInputError(
                f"the training split of fold {i} has the classes {got.tolist()!r}, not all of "
                f"{classes.tolist()!r}: every class needs a few rows in every training fold "
                "(use fewer folds, or a StratifiedKFold)"
            )
        pair = cls(est, rc.method, response_method=rc.response_method)
        X_te, w_te = _safe_indexing(X, te), None if w is None else w[te]
        if rc.ensemble:
            members.append(pair.fit(X_te, yn[te], sample_weight=w_te))
        else:
            response = pair._response(method)
            scores.append(np.asarray(pair._scores(X_te, response, int(classes.shape[0]))))
    if not rc.ensemble:
        assert response is not None
        order = np.concatenate([te for _, te in folds])
        method.fit(
            np.concatenate(scores),
            yn[order],
            logits=response == "decision_function",
            sample_weight=None if w is None else w[order],
            classes=classes,
        )
        final = _fit_estimator(clone(rc.estimator), X, yn, w)
        one = cls(final, rc.method, response_method=rc.response_method)
        one.method_ = method
        one.classes_ = classes
        one.response_method_ = response
        members = [one]
        rc.method_ = method
    first = members[0]
    for key in ("n_features_in_", "feature_names_in_"):
        rc.__dict__.pop(key, None)
        if hasattr(first.estimator, key):
            setattr(rc, key, getattr(first.estimator, key))
    rc.classes_ = classes
    rc.response_method_ = first.response_method_
    rc.calibrated_classifiers_ = members
    return rc
