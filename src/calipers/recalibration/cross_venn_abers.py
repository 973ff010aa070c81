"""Cross Venn-Abers predictors, CVAP (Vovk, Petej & Fedorova 2015).

The training set is split into ``K`` folds (stratified); the underlying
classifier is fitted on the other folds and an inductive Venn-Abers
predictor (:class:`calipers.VennAbers`) on the held-out fold. A test object
gets ``K`` pairs ``(p0_k, p1_k)``, from each fold's classifier and
predictor, merged for the log loss as
``p = GM(p1) / (GM(1 - p0) + GM(p1))`` (GM the geometric mean over the
folds) or for the Brier loss as
``p = mean(p1) + mean(p0^2) / 2 - mean(p1^2) / 2`` (Vovk, Petej & Fedorova
2015, section 4): the construction of the ``venn-abers`` package's
``VennAbersCalibrator(inductive=False)``, binary problems.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ..validation import CalibrationInputError
from .base import _not_fitted
from .split import stratified_folds
from .venn_abers import VennAbers

__all__ = ["CrossVennAbersClassifier"]

_PARAMS = ("estimator", "n_splits", "seed", "cv", "loss")


class CrossVennAbersClassifier:
    """Cross Venn-Abers predictor on a scikit-learn classifier (Vovk, Petej & Fedorova 2015).

    A scikit-learn classifier (``fit``, ``predict_proba``, ``predict``,
    ``score``; ``clone`` and ``GridSearchCV`` work) for binary problems.
    ``fit(X, y)`` fits ``n_splits`` copies of ``estimator`` (each on all but
    one fold) and a :class:`calipers.VennAbers` on each held-out fold's
    probabilities of the second class; ``predict_interval`` gives the
    ``n_splits`` multiprobabilities ``(p0_k, p1_k)`` and ``predict_proba``
    their merge.

    Parameters
    ----------
    estimator : scikit-learn classifier
        An unfitted template with ``predict_proba``; cloned for every fold.
    n_splits : int, default 5
        Number of folds (at least 2).
    seed : int, numpy.random.Generator or None, default 0
        Seed of the stratified folds (:func:`calipers.stratified_folds`).
    cv : scikit-learn splitter, optional
        Anything with ``split(X, y)`` (e.g. ``StratifiedKFold``): its folds
        replace those of ``n_splits`` and ``seed``.
    loss : {"log", "brier"}, default "log"
        The merge: geometric means (log loss) or the Brier-loss formula.

    Attributes
    ----------
    classes_ : numpy.ndarray
        The two classes (``predict_proba`` columns; the second is "class 1").
    estimators_ : list
        The fitted copies of ``estimator``, one per fold.
    calibrators_ : list of VennAbers
        The Venn-Abers predictor of each held-out fold.

    References
    ----------
    Vovk, V., Petej, I. & Fedorova, V. (2015). Large-scale probabilistic
    predictors with and without guarantees of validity. NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2))
    >>> y = (rng.random(400) < 1 / (1 + np.exp(-3 * X[:, 0]))).astype(int)
    >>> cvap = cp.CrossVennAbersClassifier(LogisticRegression(), n_splits=4).fit(X, y)
    >>> p0, p1 = cvap.predict_interval(X[:3])
    >>> p0.shape, bool(np.all(p0 <= p1))                 # one (p0, p1) per fold
    ((3, 4), True)
    >>> q = cvap.predict_proba(X[:3])
    >>> gm = lambda a: np.exp(np.log(a).mean(axis=1))
    >>> bool(np.allclose(q[:, 1], gm(p1) / (gm(1 - p0) + gm(p1))))
    True
    """

    _estimator_type = "classifier"

    def __init__(
        self,
        estimator: Any,
        *,
        n_splits: int = 5,
        seed: int | np.random.Generator | None = 0,
        cv: Any = None,
        loss: Literal["log", "brier"] = "log",
    ) -> None:
        self.estimator = estimator
        self.n_splits = n_splits
        self.seed = seed
        self.cv = cv
        self.loss = loss

    # ------------------------------------------------------------------ parameters

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments (with ``deep``, also ``estimator__<name>``)."""
        out = {name: getattr(self, name) for name in _PARAMS}
        if deep and hasattr(self.estimator, "get_params"):
            for key, value in self.estimator.get_params(deep=True).items():
                out[f"estimator__{key}"] = value
        return out

    def set_params(self, **params: Any) -> CrossVennAbersClassifier:
        """Set parameters (``estimator__C=0.1`` sets the estimator's); returns ``self``."""
        nested: dict[str, Any] = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in _PARAMS or (sep and name != "estimator"):
                raise CalibrationInputError(
                    f"CrossVennAbersClassifier has no parameter {key!r}; it has {list(_PARAMS)} "
                    "and the estimator's as estimator__<name>"
                )
            if sep:
                nested[sub] = value
            else:
                setattr(self, name, value)
        if nested:
            self.estimator.set_params(**nested)
        return self

    def __repr__(self) -> str:
        return f"CrossVennAbersClassifier({self.estimator!r}, n_splits={self.n_splits!r})"

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "calibrators_")

    def __sklearn_tags__(self) -> Any:
        """A binary classifier of whatever the estimator takes."""
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags, get_tags

        try:
            input_tags = get_tags(self.estimator).input_tags
        except Exception:  # not a scikit-learn estimator
            input_tags = InputTags()
        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(multi_class=False),
            input_tags=input_tags,
        )

    # ------------------------------------------------------------------ fitting

    def _folds(self, X: Any, t: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        if self.cv is not None:
            if not hasattr(self.cv, "split"):
                raise CalibrationInputError(
                    f"cv must be a scikit-learn splitter (with split(X, y)); got {self.cv!r}"
                )
            return [(np.asarray(a), np.asarray(b)) for a, b in self.cv.split(X, t)]
        k = self.n_splits
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
            raise CalibrationInputError(f"n_splits must be an integer >= 2; got {k!r}")
        fold = stratified_folds(t, int(k), seed=self.seed)
        rows = np.arange(len(t))
        return [(rows[fold != f], rows[fold == f]) for f in range(int(k))]

    def fit(self, X: Any, y: Any) -> CrossVennAbersClassifier:
        """Fit one classifier and one Venn-Abers predictor per fold; returns ``self``.

        Parameters
        ----------
        X : array-like
            Training inputs, as the estimator takes them.
        y : array-like of shape (n,)
            Labels of exactly two classes (any type numpy.unique sorts).

        Returns
        -------
        CrossVennAbersClassifier
        """
        from sklearn.base import clone
        from sklearn.utils import _safe_indexing

        if self.loss not in ("log", "brier"):
            raise CalibrationInputError(f"loss must be 'log' or 'brier'; got {self.loss!r}")
        if not hasattr(self.estimator, "predict_proba"):
            raise CalibrationInputError(
                f"the estimator {type(self.estimator).__name__} has no predict_proba: "
                "CrossVennAbersClassifier calibrates its probabilities of the second class"
            )
        yy = np.asarray(y)
        if yy.ndim != 1:
            raise CalibrationInputError(f"y must be 1-D; got shape {yy.shape}")
        classes = np.unique(yy)
        if len(classes) != 2:
            raise CalibrationInputError(
                f"CrossVennAbersClassifier is for binary problems: y holds {len(classes)} "
                "classes (for more, use VennAbers(multiclass=...) on a calibration split)"
            )
        t = (yy == classes[1]).astype(np.int64)
        estimators: list[Any] = []
        calibrators: list[VennAbers] = []
        for i, (train, held) in enumerate(self._folds(X, t)):
            if len(np.unique(t[train])) < 2 or len(held) == 0:
                raise CalibrationInputError(
                    f"fold {i}: its training part holds one class or its held-out part is "
                    "empty; use fewer folds or more rows"
                )
            est = clone(self.estimator).fit(_safe_indexing(X, train), t[train])
            s = np.asarray(est.predict_proba(_safe_indexing(X, held)))[:, 1]
            va = VennAbers()
            va.fit(s, t[held], logits=False)
            calibrators.append(va)
            estimators.append(est)
        self.classes_ = classes
        self.estimators_ = estimators
        self.calibrators_ = calibrators
        self.n_features_in_ = getattr(estimators[0], "n_features_in_", None)
        return self

    # ------------------------------------------------------------------ predicting

    def _check_is_fitted(self) -> None:
        if not hasattr(self, "calibrators_"):
            raise _not_fitted(
                "this CrossVennAbersClassifier is not fitted yet; call fit(X, y) first"
            )

    def predict_interval(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Each fold's multiprobability ``(p0_k, p1_k)`` of the second class.

        Returns
        -------
        (p0, p1) : pair of numpy.ndarray of shape (n, n_folds)
            ``p0 <= p1`` entry by entry.
        """
        self._check_is_fitted()
        lo, hi = [], []
        for est, va in zip(self.estimators_, self.calibrators_, strict=True):
            s = np.asarray(est.predict_proba(X), dtype=np.float64)[:, 1]
            a, b = va.predict_interval(s, logits=False)
            lo.append(a)
            hi.append(b)
        return np.stack(lo, axis=1), np.stack(hi, axis=1)

    def predict_proba(self, X: Any) -> np.ndarray:
        """The merged probabilities, shape ``(n, 2)`` (columns ``classes_``)."""
        p0, p1 = self.predict_interval(X)
        if self.loss == "brier":
            p = p1.mean(axis=1) + 0.5 * (p0**2).mean(axis=1) - 0.5 * (p1**2).mean(axis=1)
        else:
            g1 = np.exp(np.log(p1).mean(axis=1))
            g0 = np.exp(np.log1p(-p0).mean(axis=1))
            p = g1 / (g0 + g1)
        return np.stack([1.0 - p, p], axis=1)

    def predict(self, X: Any) -> np.ndarray:
        """The second class where its merged probability exceeds 0.5, else the first."""
        return self.classes_[(self.predict_proba(X)[:, 1] > 0.5).astype(np.int64)]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean log-likelihood of ``y`` (minus the log loss, nats; greater is better)."""
        q = self.predict_proba(X)
        yy = np.asarray(y)
        unknown = ~np.isin(yy, self.classes_)
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            raise CalibrationInputError(f"y row {i} is {yy[i]!r}, not one of {self.classes_}")
        ll = np.log(q[np.arange(len(yy)), (yy == self.classes_[1]).astype(np.int64)])
        return float(np.average(ll, weights=sample_weight))
