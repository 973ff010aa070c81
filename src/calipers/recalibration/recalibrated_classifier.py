"""A recalibrator on top of any fitted classifier, itself a scikit-learn classifier.

:class:`RecalibratedClassifier` freezes a fitted classifier (a scikit-learn
estimator, a :class:`~sklearn.pipeline.Pipeline`, or anything with
``classes_`` and ``predict_proba`` or ``decision_function``) and fits only a
calipers recalibrator on its outputs on a calibration split: post-hoc
calibration as Guo et al. (2017) describe it for temperature scaling, and as
Platt (1999) and Zadrozny & Elkan (2001, 2002) did before for binary scores.
scikit-learn's analogue is ``CalibratedClassifierCV(FrozenEstimator(model))``,
with sigmoid or isotonic calibration only; here any calipers method does the
recalibration (temperature, vector or matrix scaling, beta calibration,
histogram binning, ...), with calipers' input checks, and the result is saved
or inspected as that method.

With ``cv=k`` it cross-fits instead, as scikit-learn's
``CalibratedClassifierCV(estimator, cv=k, ensemble=...)``: the (unfitted)
estimator is fitted on each training fold and the recalibrator on the
held-out fold, and the ``k`` pairs are averaged (``ensemble=True``), or one
recalibrator is fitted on the out-of-fold outputs and paired with the
estimator refitted on all the data (``ensemble=False``).

scikit-learn is needed only by scikit-learn's tools (``clone``, the tags,
``GridSearchCV``) and by ``cv``: it is imported by the methods they call,
never by ``import calipers``.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Literal

import numpy as np

from .._backend import is_torch
from ..validation import CalibrationInputError, _label_array, check_predictions
from .base import Recalibrator, _not_fitted

__all__ = ["RecalibratedClassifier"]

_RESPONSES = ("auto", "decision_function", "predict_proba")
_COLUMN_Y = (
    "A column-vector y was passed when a 1d array was expected. Please change the shape of y "
    "to (n_samples,), for example using ravel()."
)
_PARAMS = ("estimator", "method", "response_method", "cv", "ensemble")


class RecalibratedClassifier:
    """A fitted classifier recalibrated by a calipers method, as a scikit-learn classifier.

    ``fit(X, y)`` fits only the recalibrator, on the frozen ``estimator``'s
    outputs on ``(X, y)`` (a calibration split the estimator was not trained
    on); the estimator itself is never refitted, copied or changed, also not
    by ``sklearn.base.clone``, ``GridSearchCV`` or ``cross_val_score``, which
    refit only the recalibrator. This is post-hoc recalibration as in Guo et
    al. (2017); scikit-learn's ``CalibratedClassifierCV(FrozenEstimator(est))``
    does the same with Platt's sigmoid or isotonic regression.

    The recalibrator reads logits or probabilities (``method.input``), so the
    estimator's outputs are taken accordingly (``response_method="auto"``):
    ``decision_function`` when the method's natural input is logits and the
    estimator has it (binary: the ``(n,)`` logit of ``classes_[1]``;
    multiclass: ``(n, k)``), otherwise ``predict_proba`` (binary: its column
    1, P(y = classes_[1]), as ``(n,)`` scores). ``predict_proba`` returns
    ``(n, n_classes)`` probabilities in the order of ``classes_`` (binary: two
    columns), as scikit-learn's classifiers do.

    Parameters
    ----------
    estimator : fitted classifier
        Has ``classes_`` and ``predict_proba`` or ``decision_function``
        (a fitted scikit-learn classifier or ``Pipeline``). Frozen: its
        parameters are not among this object's nested parameters.
    method : Recalibrator, optional
        The recalibration method (not changed: ``fit`` fits a copy, stored in
        ``method_``). Default ``None``: :class:`TemperatureScaling` (Guo et
        al. 2017).
    response_method : {"auto", "decision_function", "predict_proba"}, default "auto"
        Which of the estimator's outputs the recalibrator reads (see above);
        ``"decision_function"`` outputs are read as logits, ``"predict_proba"``
        outputs as probabilities.
    cv : int, cross-validation splitter or iterable of splits, optional
        Default ``None``: the estimator is fitted and frozen (post-hoc
        recalibration on the calibration split given to ``fit``). Otherwise
        the estimator is a template (unfitted; cloned, never fitted itself)
        and ``fit(X, y)`` cross-fits on ``(X, y)`` with these folds (an int
        ``k``: scikit-learn's ``StratifiedKFold(k)``): each of the ``k``
        clones is fitted on a training split and its recalibrator on the
        held-out split, so no row calibrates a model trained on it (Platt
        1999; scikit-learn's ``CalibratedClassifierCV``). The estimator's
        parameters are then tunable as ``estimator__<name>``.
    ensemble : bool, default True
        With ``cv``: ``True`` averages the probabilities of the ``k`` (model,
        recalibrator) pairs; ``False`` fits one recalibrator on the
        out-of-fold outputs of the ``k`` models and pairs it with the
        estimator refitted on all of ``(X, y)``. Not used without ``cv``.

    Attributes
    ----------
    method_ : Recalibrator
        The fitted recalibrator (save it with ``method_.save(path)``); with
        ``cv``, only when ``ensemble=False``.
    calibrated_classifiers_ : list of RecalibratedClassifier
        With ``cv``: the fitted (model, recalibrator) pairs whose
        probabilities :meth:`predict_proba` averages (``k`` of them, or one
        with ``ensemble=False``).
    classes_ : numpy.ndarray
        The estimator's ``classes_``.
    response_method_ : str
        The estimator method used: ``"decision_function"`` or ``"predict_proba"``.
    n_features_in_ : int
        The estimator's ``n_features_in_`` (when it has one).
    feature_names_in_ : numpy.ndarray
        The estimator's ``feature_names_in_`` (when it has them).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((400, 3))
    >>> y = np.where(X[:, 0] + 0.5 * rng.standard_normal(400) > 0, "yes", "no")
    >>> model = LogisticRegression(C=100.0).fit(X[:200], y[:200])   # training split
    >>> rc = cp.RecalibratedClassifier(model, cp.TemperatureScaling())
    >>> rc = rc.fit(X[200:300], y[200:300])                         # calibration split
    >>> rc.response_method_, rc.classes_.tolist()
    ('decision_function', ['no', 'yes'])
    >>> rc.predict_proba(X[300:]).shape
    (100, 2)
    >>> z = model.decision_function(X[200:300])                     # the same by hand
    >>> ts = cp.TemperatureScaling().fit(z, y[200:300], logits=True, classes=model.classes_)
    >>> p = ts.predict_proba(model.decision_function(X[300:]), logits=True)
    >>> bool(np.allclose(rc.predict_proba(X[300:])[:, 1], p))
    True
    >>> bool(rc.score(X[300:], y[300:]) >= -np.log(2))             # mean log-likelihood
    True

    Cross-fitting an unfitted model, as ``CalibratedClassifierCV(est, cv=5)``:

    >>> cv5 = cp.RecalibratedClassifier(LogisticRegression(), cp.PlattScaling(), cv=5)
    >>> cv5 = cv5.fit(X[:300], y[:300])
    >>> len(cv5.calibrated_classifiers_), cv5.predict_proba(X[300:]).shape
    (5, (100, 2))
    """

    _estimator_type = "classifier"
    #: Set by ``fit`` with ``cv`` (a declaration only: absent before).
    calibrated_classifiers_: list[RecalibratedClassifier]

    def __init__(
        self,
        estimator: Any,
        method: Recalibrator | None = None,
        *,
        response_method: Literal["auto", "decision_function", "predict_proba"] = "auto",
        cv: Any = None,
        ensemble: bool = True,
    ) -> None:
        self.estimator = estimator
        self.method = method
        self.response_method = response_method
        self.cv = cv
        self.ensemble = ensemble

    # ------------------------------------------------------------------ parameters

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments; with ``deep``, also ``method__<name>`` for the method's.

        Without ``cv`` the estimator is frozen, so its own parameters are not
        listed (as scikit-learn's ``FrozenEstimator``): setting them could not
        refit it. With ``cv`` it is a template fitted on every training fold,
        and ``estimator__<name>`` are listed too.
        """
        out = {name: getattr(self, name) for name in _PARAMS}
        nested: list[tuple[str, Any]] = [("method", self.method)]
        if self.cv is not None:
            nested.append(("estimator", self.estimator))
        for prefix, obj in nested:
            if deep and hasattr(obj, "get_params"):
                for key, value in obj.get_params(deep=True).items():
                    out[f"{prefix}__{key}"] = value
        return out

    def set_params(self, **params: Any) -> RecalibratedClassifier:
        """Set parameters (``method__n_bins=10`` sets the method's); returns ``self``."""
        nested: dict[str, Any] = {}
        nested_estimator: dict[str, Any] = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in _PARAMS:
                raise CalibrationInputError(
                    f"RecalibratedClassifier has no parameter {key!r}; it has {list(_PARAMS)} "
                    "and the method's as method__<name>"
                )
            if not sep:
                setattr(self, name, value)
            elif name == "method":
                nested[sub] = value
            elif name == "estimator" and params.get("cv", self.cv) is not None:
                nested_estimator[sub] = value  # a template, refitted on every fold
            else:
                raise CalibrationInputError(
                    f"cannot set {key!r}: the {name} is frozen (fitted before, never refitted "
                    "here, as cv=None); set a new estimator=..., or pass cv=... to cross-fit it"
                )
        if nested:  # after the top-level ones, so that method=..., method__x=... works
            method: Any = self.method
            if not hasattr(method, "set_params"):
                raise CalibrationInputError(
                    f"cannot set {sorted('method__' + k for k in nested)}: method is "
                    f"{method!r}; pass method=<a Recalibrator> first"
                )
            method.set_params(**nested)
        if nested_estimator:
            self.estimator.set_params(**nested_estimator)
        return self

    def __repr__(self) -> str:
        args = [repr(self.estimator)]
        if self.method is not None:
            args.append(f"method={self.method!r}")
        if self.response_method != "auto":
            args.append(f"response_method={self.response_method!r}")
        if self.cv is not None:
            args.append(f"cv={self.cv!r}")
        if self.ensemble is not True:
            args.append(f"ensemble={self.ensemble!r}")
        return f"RecalibratedClassifier({', '.join(args)})"

    # ------------------------------------------------------------------ scikit-learn protocol

    def __sklearn_clone__(self) -> RecalibratedClassifier:
        """A copy with the same (frozen, fitted) estimator and a fresh copy of the method.

        ``sklearn.base.clone`` would otherwise clone the estimator too, which
        returns it unfitted.
        """
        from sklearn.base import clone

        method = None if self.method is None else clone(self.method)
        return type(self)(
            self.estimator if self.cv is None else clone(self.estimator),
            method,
            response_method=self.response_method,
            cv=self.cv,
            ensemble=self.ensemble,
        )

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "method_") or hasattr(self, "calibrated_classifiers_")

    def __sklearn_tags__(self) -> Any:
        """A classifier that takes what the frozen estimator takes (its input tags)."""
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags, get_tags

        try:
            input_tags = get_tags(self.estimator).input_tags
        except Exception:  # not a scikit-learn estimator: a dense 2-D matrix
            input_tags = InputTags()
        binary_only = bool(getattr(self.method, "_binary_only", False))
        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(multi_class=not binary_only),
            input_tags=input_tags,
        )

    # ------------------------------------------------------------------ fitting

    @staticmethod
    def _check_targets(y: Any, classes: np.ndarray) -> Any:
        """``y`` as ``fit`` takes it (also used by the cross-fitting of ``cv=``)."""
        return _check_targets(y, classes)

    def _method(self) -> Recalibrator:
        """A fresh copy of ``method`` (TemperatureScaling by default)."""
        if self.method is None:
            from .temperature_scaling import TemperatureScaling

            return TemperatureScaling()
        if not isinstance(self.method, Recalibrator):
            raise CalibrationInputError(
                f"method must be a calipers Recalibrator (e.g. calipers.TemperatureScaling()); "
                f"got {self.method!r}"
            )
        return type(self.method)(**self.method.get_params())

    def _response(self, method: Recalibrator) -> str:
        """The estimator method whose output the recalibrator reads."""
        if self.response_method not in _RESPONSES:
            raise CalibrationInputError(
                f"response_method must be one of {list(_RESPONSES)}; got {self.response_method!r}"
            )
        has = {m: hasattr(self.estimator, m) for m in _RESPONSES[1:]}
        if self.response_method != "auto":
            if not has[self.response_method]:
                raise CalibrationInputError(
                    f"response_method={self.response_method!r}, but the estimator "
                    f"{type(self.estimator).__name__} has no {self.response_method}"
                )
            return str(self.response_method)
        if not (has["decision_function"] or has["predict_proba"]):
            raise CalibrationInputError(
                f"the estimator {type(self.estimator).__name__} has neither predict_proba nor "
                "decision_function: it gives no scores to recalibrate"
            )
        if method.input == "logits" and has["decision_function"]:
            return "decision_function"
        return "predict_proba" if has["predict_proba"] else "decision_function"

    def _scores(self, X: Any, response: str, n_classes: int) -> Any:
        """The estimator's scores for the recalibrator: binary as ``(n,)``, else ``(n, k)``."""
        out = getattr(self.estimator, response)(X)
        if response == "predict_proba" and n_classes == 2:
            out = np.asarray(out)
            if out.ndim == 2 and out.shape[1] == 2:
                out = out[:, 1]  # P(y = classes_[1])
        return out

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> RecalibratedClassifier:
        """Fit the recalibrator on the frozen estimator's outputs on ``(X, y)``; returns ``self``.

        Parameters
        ----------
        X : array-like
            Calibration inputs, as the estimator takes them (not used to train it).
        y : array-like of shape (n,)
            Their labels, members of the estimator's ``classes_``.
        sample_weight : array-like of shape (n,), optional
            Passed to the recalibrator's ``fit``.

        Returns
        -------
        RecalibratedClassifier
        """
        for key in ("calibrated_classifiers_", "method_"):  # a refit starts from nothing
            self.__dict__.pop(key, None)
        if self.cv is not None:
            from ._cross_fit import cross_fit

            return cross_fit(self, X, y, sample_weight)
        classes = getattr(self.estimator, "classes_", None)
        if classes is None:
            raise _not_fitted(
                f"RecalibratedClassifier recalibrates a fitted classifier, and the estimator "
                f"{type(self.estimator).__name__} is not fitted (it has no classes_): fit it on "
                "a training split first, then fit this on a calibration split; or pass cv=5 to "
                "cross-fit it here (as scikit-learn's CalibratedClassifierCV)"
            )
        classes = np.asarray(classes)
        if y is None:
            raise CalibrationInputError(
                "RecalibratedClassifier.fit needs the labels of the calibration split; it "
                "requires y to be passed, but the target y is None"
            )
        y = _check_targets(y, classes)
        method = self._method()
        response = self._response(method)
        scores = self._scores(X, response, int(classes.shape[0]))
        try:
            method.fit(
                scores,
                y,
                logits=response == "decision_function",
                sample_weight=sample_weight,
                classes=classes,
            )
        except CalibrationInputError as exc:
            text = str(exc)
            if response != "predict_proba" or "needs logits" not in text or "but " not in text:
                raise
            # a logit method on predict_proba that holds an exact 0 or 1 (naive Bayes,
            # forests): the user has no logits to pass, so say what does apply
            where = text.split("but ", 1)[1].split(". ", 1)[0]
            raise CalibrationInputError(
                f"{type(method).__name__} works on logits; {type(self.estimator).__name__} has "
                "no decision_function, so its predict_proba was read as log-odds, and an exact "
                f"0 or 1 has none ({where}). Use a method that takes probabilities "
                "(IsotonicRegression, HistogramBinning, BetaCalibration) with this classifier."
            ) from exc
        for key in ("n_features_in_", "feature_names_in_"):
            self.__dict__.pop(key, None)
            if hasattr(self.estimator, key):
                setattr(self, key, getattr(self.estimator, key))
        self.classes_ = classes
        self.response_method_ = response
        self.method_ = method
        return self

    # ------------------------------------------------------------------ predicting

    def _check_is_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise _not_fitted(
                "this RecalibratedClassifier is not fitted yet; call fit(X, y) on a calibration "
                "split first"
            )

    def predict_proba(self, X: Any) -> np.ndarray:
        """Recalibrated probabilities, shape ``(n, n_classes)`` in the order of ``classes_``.

        With ``cv``: the mean of the ``calibrated_classifiers_``' probabilities
        (one pair with ``ensemble=False``).
        """
        self._check_is_fitted()
        members = self.__dict__.get("calibrated_classifiers_")
        if members is not None:
            return np.asarray(sum(m.predict_proba(X) for m in members) / len(members))
        scores = self._scores(X, self.response_method_, int(self.classes_.shape[0]))
        q = self.method_.predict_proba(scores, logits=self.response_method_ == "decision_function")
        q = np.asarray(q, dtype=np.float64)
        return np.stack([1.0 - q, q], axis=1) if q.ndim == 1 else q

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """``log`` of :meth:`predict_proba` (``-inf`` where a probability is 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class (ties: the first in ``classes_``), from ``classes_``."""
        Q = self.predict_proba(X)
        return np.asarray(self.classes_[np.argmax(Q, axis=1)])

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean log-likelihood of ``y`` under :meth:`predict_proba` (greater is better).

        Minus the negative log-likelihood, the log score (a strictly proper
        scoring rule; Gneiting & Raftery 2007), as
        :meth:`calipers.Recalibrator.score`; not the accuracy that
        scikit-learn's classifiers report. Not clipped: ``-inf`` when a true
        class gets probability 0.
        """
        from ..metrics.scores import nll

        Q = self.predict_proba(X)
        P = check_predictions(
            Q, y, sample_weight=sample_weight, validate=False, classes=self.classes_
        )
        return -float(nll(P, None))


def _check_targets(y: Any, classes: np.ndarray) -> Any:
    """``y`` as scikit-learn's classifiers take it: a column ``(n, 1)`` is raveled (with
    scikit-learn's ``DataConversionWarning``), and a continuous target is refused as such.

    Everything else is checked by the recalibrator's ``fit`` (labels must be members of
    ``classes``).
    """
    arr = _label_array(y)
    if is_torch(arr):
        return y
    if arr.ndim == 2 and arr.shape[1] == 1:
        sk = sys.modules.get("sklearn.exceptions")
        category = getattr(sk, "DataConversionWarning", UserWarning)
        warnings.warn(_COLUMN_Y, category, stacklevel=3)
        arr = arr[:, 0]
        y = arr
    if arr.ndim == 1 and arr.dtype.kind == "f" and classes.dtype.kind != "f":
        frac = ~np.isfinite(arr) | (arr != np.round(arr))
        if frac.any():
            i = int(np.flatnonzero(frac)[0])
            raise CalibrationInputError(
                f"Unknown label type: continuous target (y has {arr[i].item()!r} at row {i}); "
                f"the labels must be among the estimator's classes_ {classes.tolist()!r}"
            )
    return y
