"""One contract for every recalibration method (scikit-learn's estimator style).

A recalibrator is fitted on a calibration split and maps a model's scores to
new class probabilities::

    rc = TemperatureScaling().fit(logits_cal, labels_cal)
    probs_test = rc.predict_proba(logits_test)

* Constructor arguments are the hyper-parameters (``get_params`` /
  ``set_params`` read them from the signature, as scikit-learn does); fitted
  state lives in attributes ending in ``_``.
* ``fit(scores, labels, *, logits=None, sample_weight=None)``: ``scores`` are
  logits or probabilities. Pass ``logits=True`` or ``logits=False`` to say
  which; with ``logits=None`` (the default) they are read from the values,
  only where the reading is unambiguous, and every other call is refused with
  a message asking for ``logits=``:

  - ``(n, k)`` scores are probabilities when every row lies on the simplex
    (entries in ``[0, 1]``, rows summing to 1 within the default tolerance of
    :func:`calipers.check_predictions`, rounding allowance included); logits
    when some entry is below -0.5 (no probability is negative; every row of
    log-probabilities has an entry <= -log 2) and at most half of the rows
    sum to 1. Refused: non-negative scores that are not probability vectors
    (percentages, counts, one-vs-rest or multi-label outputs: also logits
    that all lie in ``[0, 1]``), entries only slightly negative, and most
    rows summing to 1 but not all (probabilities with broken rows).
  - ``(n,)`` scores are P(y = 1) when every value lies in ``[0, 1]``; logits
    when some value is below -0.5; otherwise refused (values in ``[0, 1]``
    and above 1, such as percentages).

  The two readings that cannot be refuted from the values are settled by
  what real scores look like: a matrix of logits whose every row sums to 1
  with entries in ``[0, 1]``, or binary logits that all lie in ``[0, 1]``
  (every sample given P(y = 1) between 0.5 and 0.73), is read as
  probabilities. ``input_kind_`` (``"logits"`` or ``"probs"``) records the
  reading and ``input_detected_`` whether it came from the values; nothing
  is printed.

  A logit method given probabilities uses ``log p`` (softmax(log p) = p;
  log-probabilities are the logits up to a per-row constant, which temperature
  scaling and its bias-corrected and ensemble forms ignore but vector, matrix
  scaling and the monotone logit map do not: fit and predict those on the same
  kind of scores) and refuses a probability of exactly 0. A probability method
  given logits applies the softmax (probabilities within 1e-16 of 0 or 1 then
  round to it).
* ``predict_proba(scores, *, logits=None)``: with ``logits=None`` the scores are
  read by the same rule and must be of the kind ``fit`` read (told or
  detected); scores of the other kind, or ambiguous ones, are refused with a
  message asking for ``logits=``. ``logits=True/False`` reads them as told.
* A :class:`calipers.Predictions` (from :func:`calipers.check_predictions`,
  e.g. with ``renormalize=True``) may be passed in place of ``scores`` (with
  ``labels=None`` in ``fit``): it says what it holds (logits when it kept
  them) and carries its labels and weights.
* ``accuracy_preserving`` (the arg-max never changes) and ``injective``
  (different score vectors never map to the same output; Gruber & Buettner (2022) Prop. 4.5
  needs it) are declared per method and checked by property tests.
* Every input (scores, labels, ``sample_weight``, of ``fit``, ``predict_proba``,
  ``predict`` and the cross-validation helpers) goes through the validation
  layer of the metrics: the same input gets the same verdict and the same
  message as :func:`calipers.ece` (float16 and bfloat16 scores included, with
  their dtype's tolerance). Logit methods also refuse logits larger than
  :data:`MAX_LOGIT` = 1e100 in magnitude, where their arithmetic would overflow.
* ``to_json`` / ``from_json`` (and ``save`` / ``load``) store the class name,
  the parameters and the fitted state as plain JSON: nothing is pickled. Each
  method declares the schema of its parameters and fitted state (``schema``:
  types, shapes tied to ``n_classes_`` and the parameters, ranges, monotone
  maps, weights on the simplex), checked when a file is loaded, after ``fit``,
  before ``to_json`` and before ``predict_proba``. Files carry a format version
  (2 is written; 1, written by calipers 0.1 and the 0.2 development versions,
  still loads) and are read within limits (:data:`MAX_DOCUMENT_BYTES` = 64 MiB,
  :data:`MAX_DEPTH` = 32 levels of nesting). See :func:`load_recalibrator`.

* Labels as users have them: ``fit(..., classes=None)``. Without ``classes``,
  numbers and booleans are column indices ``0 .. k-1`` (``classes_`` is
  ``[0, 1, ..., k-1]``) and labels that are not numbers (strings, Python
  objects) name the classes in sorted order (``numpy.unique``), which must be
  exactly ``k`` (binary: 2), else a message asks for ``classes=``. ``classes``
  lists the class of each column in order (binary: ``[negative, positive]``)
  or is a fitted classifier (its ``classes_``). ``predict`` returns members of
  ``classes_``; files store ``classes_`` (and ``n_features_in_``) only where
  they differ from the default, so files of fits on column indices are as
  before and older files load.
* Arrays back as they came: ``predict_proba`` of a torch tensor is a tensor on
  the same device, of the tensor's floating dtype (float64 for integer
  tensors); of anything else a NumPy float64 array. The arithmetic is float64.
* scikit-learn: every recalibrator is a scikit-learn classifier of scores,
  without inheriting from scikit-learn (``import calipers`` never imports it):
  ``__sklearn_tags__`` (scikit-learn is imported there, when its tools ask),
  ``_estimator_type = "classifier"``, ``classes_``, ``n_features_in_``,
  ``__sklearn_is_fitted__``, :class:`NotFittedError` before ``fit``, and
  ``score(X, y, sample_weight=None)``, the mean log-likelihood (minus the NLL,
  the log score; greater is better), so that ``clone``, ``GridSearchCV`` and
  ``cross_val_score`` work on (scores, labels). A single column ``(n, 1)``
  (scikit-learn's matrix of one feature) holds binary scores of class 1 and
  ``predict_proba`` then returns ``(n, 2)`` = ``[1 - p, p]``, as scikit-learn's
  classifiers do. scikit-learn's probability scorers (``"neg_log_loss"``,
  ``"neg_brier_score"``, ``"roc_auc"``) read two columns: the copies its
  ``clone`` makes (those ``GridSearchCV`` and ``cross_val_score`` fit) return
  ``(n, 2)`` for ``(n,)`` scores too, so binary scores go to its tools as
  ``(n,)`` or ``(n, 1)``; an object made by its constructor returns ``(n,)``
  for ``(n,)``. See docs/scikit-learn.md, and
  :class:`calipers.RecalibratedClassifier` for a recalibrator on top of a
  fitted classifier.

Binary problems: scores of shape ``(n,)`` (or ``(n, 1)``) hold the logit (or
probability) of class 1, and ``predict_proba`` returns ``(n,)`` probabilities of
class 1 (``(n, 2)`` for ``(n, 1)`` scores).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np

from ..validation import (
    CalibrationInputError,
    Predictions,
    _first_true,
    check_predictions,
)
from . import _registry
from ._inputs import MAX_LOGIT, _as_input, _InputReading, _is_default_classes, _Read
from ._persistence import _PRIVATE_STATE, _Persistence, load_recalibrator
from ._schema import MAX_DEPTH, MAX_DOCUMENT_BYTES, check_registrable

__all__ = [
    "Recalibrator",
    "NotFittedError",
    "load_recalibrator",
    "register",
    "MAX_DOCUMENT_BYTES",
    "MAX_DEPTH",
    "MAX_LOGIT",
]


class NotFittedError(CalibrationInputError, AttributeError):
    """A recalibrator used before ``fit``.

    A :class:`~calipers.validation.CalibrationInputError` (a ``ValueError``)
    and an ``AttributeError``, as scikit-learn's ``NotFittedError``: so
    ``hasattr(rc, "classes_")`` is False before ``fit``. Once scikit-learn has
    been imported (by the caller: calipers never imports it), the error raised
    is also an instance of ``sklearn.exceptions.NotFittedError``, which
    scikit-learn's tools catch.
    """

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_not_fitted, (str(self),))


_NOT_FITTED: dict[type, type] = {}


def _not_fitted(message: str) -> NotFittedError:
    """A :class:`NotFittedError`, also scikit-learn's when scikit-learn is imported."""
    sk = sys.modules.get("sklearn.exceptions")
    sk_error = getattr(sk, "NotFittedError", None)
    if not (isinstance(sk_error, type) and issubclass(sk_error, Exception)):
        return NotFittedError(message)
    cls = _NOT_FITTED.get(sk_error)
    if cls is None:
        cls = _NOT_FITTED[sk_error] = type(
            "NotFittedError", (NotFittedError, sk_error), {"__module__": __name__}
        )
    err = cls(message)
    assert isinstance(err, NotFittedError)
    return err


def register(cls: type[Recalibrator]) -> type[Recalibrator]:
    """Class decorator: make a recalibrator loadable by :func:`load_recalibrator`.

    The class must declare its ``schema`` (every constructor parameter and every
    fitted field), the declaration its files are checked against.

    Examples
    --------
    >>> from calipers.recalibration.base import Recalibrator, register
    >>> class Identity(Recalibrator):
    ...     pass
    >>> register(Identity)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: register: Identity declares no schema ...
    """
    check_registrable(cls, Recalibrator, "register")
    _registry.add(cls)
    return cls


# The estimator API, scikit-learn's tags and the column labels live here; the reading of
# the inputs comes from _InputReading (_inputs.py), the declared schema and the JSON files
# from _Persistence (_persistence.py).
class Recalibrator(_InputReading, _Persistence):
    """Base class of every recalibration method (see the module docstring).

    Subclasses set the class attributes ``input`` (``"logits"`` or
    ``"probs"``), ``accuracy_preserving`` and ``injective`` (or override the
    properties when they depend on hyper-parameters) and implement
    ``_fit(S, y, w)`` and ``_transform(S)`` on float64 NumPy arrays of the
    natural input kind, ``_transform`` returning probabilities. ``schema``
    declares the types and ranges of the parameters and of the fitted state
    beyond ``COMMON_STATE`` (``n_classes_``, ``input_kind_``,
    ``input_detected_``; ``OPTIONAL_STATE``, ``classes_`` and
    ``n_features_in_``, is written where it differs from its default); it is
    checked when a file is loaded, after ``fit`` (a fit whose result breaks it
    raises), before ``to_json`` and before ``predict_proba``.

    Every subclass is a scikit-learn classifier of scores (see the module
    docstring): ``classes_``, ``n_features_in_``, ``score`` (the mean
    log-likelihood), ``__sklearn_tags__`` (``multi_class=False`` where the
    class sets ``_binary_only = True``).
    """

    input: ClassVar[Literal["logits", "probs"]] = "logits"
    _accuracy_preserving: ClassVar[bool] = False
    _injective: ClassVar[bool] = False
    #: A classifier of scores, for scikit-learn (which reads ``__sklearn_tags__``).
    _estimator_type: ClassVar[str] = "classifier"
    #: True for the methods of binary problems only (their tags say ``multi_class=False``).
    _binary_only: ClassVar[bool] = False
    #: Fitted labels of the columns when they are not ``0 .. k-1`` (see ``classes_``).
    _classes: np.ndarray | None = None
    #: Fitted number of score columns when it is not the default (see ``n_features_in_``).
    _n_features_in: int | None = None
    #: True on the copies scikit-learn's ``clone`` makes (see ``__sklearn_clone__``):
    #: binary ``predict_proba`` then returns two columns also for ``(n,)`` scores.
    _two_columns: bool = False

    # ------------------------------------------------------------------ declared properties

    @property
    def accuracy_preserving(self) -> bool:
        """True when the arg-max of ``predict_proba`` always equals that of the input."""
        return self._accuracy_preserving

    @property
    def injective(self) -> bool:
        """True when distinct score vectors always give distinct outputs."""
        return self._injective

    # ------------------------------------------------------------------ public API

    def fit(
        self,
        scores: Any,
        labels: Any,
        *,
        logits: bool | None = None,
        sample_weight: Any = None,
        classes: Any = None,
    ) -> Recalibrator:
        """Fit on a calibration split; returns ``self``.

        Parameters
        ----------
        scores : array-like or tensor of shape (n, k), (n,) or (n, 1), or Predictions
            Logits or probabilities (see ``logits``), or a
            :class:`calipers.Predictions` (then ``labels=None``). ``(n,)`` and
            a single column ``(n, 1)`` (scikit-learn's matrix of one feature)
            are binary scores of class 1.
        labels : array-like of shape (n,)
            The class of each row: column indices ``0 .. k-1`` (integers,
            booleans for binary scores, or one-hot rows), members of
            ``classes``, or, without ``classes``, labels that are not numbers
            (strings), which then name the classes in sorted order and must
            name exactly ``k`` of them (binary: 2).
        logits : bool, optional
            Whether ``scores`` are logits. None (default): read from the values
            where that is unambiguous (see :mod:`calipers.recalibration.base`),
            otherwise refused; the reading is stored in ``input_kind_``.
        sample_weight : array-like of shape (n,), optional
            Non-negative weights with a positive sum (default: all 1).
        classes : array-like of k labels, or a fitted classifier, optional
            The class of each column of ``scores`` in order (binary:
            ``[negative, positive]``), or a fitted scikit-learn classifier
            (its ``classes_``). Default: the column indices, or the sorted
            labels when they are strings.

        Returns
        -------
        Recalibrator
            ``self``, fitted: ``input_kind_`` is ``"logits"`` or ``"probs"``,
            ``input_detected_`` says whether it was read from the values,
            ``classes_`` holds the classes (what :meth:`predict` returns) and
            ``n_features_in_`` the number of score columns given (1 for
            binary ``(n,)`` or ``(n, 1)`` scores).

        Raises
        ------
        CalibrationInputError
            Invalid scores, labels or weights, or scores that could be read both
            as logits and as probabilities (the message says how to choose).

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> p = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.6, 0.3, 0.1]])
        >>> ts = cp.TemperatureScaling().fit(p, [0, 1, 2, 1])   # rows on the simplex
        >>> ts.input_kind_, ts.input_detected_, ts.classes_
        ('probs', True, array([0, 1, 2]))
        >>> ts = cp.TemperatureScaling().fit(p, ["cat", "dog", "emu", "dog"])
        >>> ts.classes_.tolist(), ts.predict(p).tolist()
        (['cat', 'dog', 'emu'], ['cat', 'dog', 'emu', 'cat'])
        >>> cp.TemperatureScaling().fit(100 * p, [0, 1, 2, 1])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: TemperatureScaling.fit cannot tell whether ...
        """
        if labels is None and not isinstance(scores, Predictions):
            raise CalibrationInputError(
                "fit needs labels (labels=None only with a calipers.Predictions, which carries "
                "them); in scikit-learn's words: it requires y to be passed, but the target y "
                "is None"
            )
        self._check_params(type(self).__name__)
        r = self._read_all(scores, logits, labels, sample_weight, classes=classes)
        if r.y is None:  # pragma: no cover - _read returns labels whenever fit gives them
            raise CalibrationInputError("fit needs labels")
        self._fit_read(r.S, r.y, r.w, r.kind, r.detected)
        if r.classes is not None and not _is_default_classes(r.classes):
            self._classes = r.classes
        if r.n_features != self._default_n_features():
            self._n_features_in = r.n_features
        return self

    def _fit_read(
        self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None, kind: str, detected: bool
    ) -> Recalibrator:
        """``fit`` on what :meth:`_read` returned (also used by the cross-validation helpers)."""
        for key in (*self._state_fields(), *_PRIVATE_STATE):  # a refit starts from nothing
            self.__dict__.pop(key, None)
        self._fit(S, y, w)
        self.n_classes_ = 2 if S.ndim == 1 else int(S.shape[1])
        self.input_kind_ = kind
        self.input_detected_ = detected
        self._check_state(f"{type(self).__name__}: the fit gave an invalid result")
        return self

    def predict_proba(self, scores: Any, *, logits: bool | None = None) -> Any:
        """Recalibrated probabilities, in the form of ``scores``.

        Parameters
        ----------
        scores : array-like or tensor of shape (n, k), (n,) or (n, 1), or Predictions
        logits : bool, optional
            Whether ``scores`` are logits. None (default): read from the values
            by the rule of ``fit``; they must be of the kind ``fit`` read.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            Shape ``(n, k)`` for ``(n, k)`` scores; ``(n,)`` = P(y = 1) for
            binary ``(n,)`` scores; ``(n, 2)`` = ``[1 - p, p]`` for a single
            column ``(n, 1)``, as scikit-learn's classifiers return it. NumPy
            float64 for array-likes; for a torch tensor, a tensor on the same
            device, of the tensor's floating dtype (float64 for other
            dtypes). The arithmetic is float64 either way.

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.5, -1.0]])
        >>> ts = cp.TemperatureScaling().fit(z, [0, 1, 1, 0])
        >>> ts.input_kind_
        'logits'
        >>> ts.predict_proba(z).shape
        (4, 2)
        >>> p = ts.predict_proba(z)
        >>> ts.predict_proba(p)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: TemperatureScaling was fitted on logits (detected from the values), but these scores look like probabilities: ...
        >>> d = z[:, 1] - z[:, 0]                       # binary logits of class 1
        >>> b = cp.TemperatureScaling().fit(d, [0, 1, 1, 0])
        >>> b.predict_proba(d).shape, b.predict_proba(d[:, None]).shape
        ((4,), (4, 2))
        """
        Q, r = self._predict_all(scores, logits)
        return _as_input(Q, r.like)

    def _predict_all(self, scores: Any, logits: bool | None) -> tuple[np.ndarray, _Read]:
        """float64 NumPy probabilities (``(n, 2)`` for one column) and the reading of ``scores``."""
        self._check_fitted()
        name = type(self).__name__
        self._check_state(name)  # parameters and fitted state (set_params, edited attributes)
        r = self._read_all(scores, logits, fitted=self._fitted_kind())
        Q = self._predict_read(r.S)
        if (r.column or self._two_columns) and Q.ndim == 1:
            Q = np.stack([1.0 - Q, Q], axis=1)
        return Q, r

    def _predict_read(self, S: np.ndarray) -> np.ndarray:
        """``predict_proba`` on what :meth:`_read` returned: finite probabilities, or a refusal."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            Q = np.asarray(self._transform(S), dtype=np.float64)
        bad = ~np.isfinite(Q)
        if bad.any():  # extreme fitted values (a temperature of 1e-300) on large scores
            idx = _first_true(bad)
            raise CalibrationInputError(
                f"{type(self).__name__} gave a non-finite probability for row {idx[0]}: its "
                "arithmetic overflows on these scores with this fitted state (the scores or "
                "the fitted values are too extreme)"
            )
        return Q

    def predict(self, scores: Any, *, logits: bool | None = None) -> Any:
        """The most probable class of each row, from ``classes_``.

        The arg-max of :meth:`predict_proba` (ties -> the lowest column; binary
        scores: class 1 when p > 0.5), as the label it stands for:
        ``classes_[argmax]``. A NumPy array; for a torch tensor with numeric
        classes, a tensor on its device.

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.5, -1.0]])
        >>> cp.TemperatureScaling().fit(z, [0, 1, 1, 0]).predict(z)
        array([0, 1, 0, 0])
        >>> cp.TemperatureScaling().fit(z, ["no", "yes", "yes", "no"]).predict(z)
        array(['no', 'yes', 'no', 'no'], dtype='<U3')
        """
        Q, r = self._predict_all(scores, logits)
        idx = (Q > 0.5).astype(np.int64) if Q.ndim == 1 else np.argmax(Q, axis=1)
        out = self.classes_[idx]
        if r.like is not None and out.dtype.kind in "iub":
            import torch

            return torch.as_tensor(out, device=r.like.device)
        return out

    def score(
        self,
        X: Any,
        y: Any,
        sample_weight: Any = None,
        *,
        logits: bool | None = None,
    ) -> float:
        """Mean log-likelihood of ``labels`` under the recalibrated probabilities (nats).

        ``mean_i log q_{i, y_i}`` (weighted by ``sample_weight``): minus the
        negative log-likelihood (:func:`calipers.nll`), the log score, a
        strictly proper scoring rule (Gneiting & Raftery 2007), so that greater
        is better as scikit-learn's ``score`` and ``GridSearchCV`` expect; the
        proper score that recalibration should improve (Gruber & Buettner
        2022), not the accuracy that scikit-learn's classifiers report (an
        accuracy-preserving recalibrator never changes it). Nothing is clipped:
        a true class given probability exactly 0 (histogram binning, isotonic
        regression) gives ``-inf`` (scikit-learn's ``scoring="neg_log_loss"``
        clips to the machine epsilon instead).

        The arguments have scikit-learn's names (its tools pass ``y=`` by name).

        Parameters
        ----------
        X : array-like or tensor of shape (n, k), (n,) or (n, 1), or Predictions
            The scores, as :meth:`predict_proba` takes them.
        y : array-like of shape (n,)
            The labels: members of ``classes_`` (column indices when ``fit``
            was given those).
        sample_weight : array-like of shape (n,), optional
        logits : bool, optional
            As in :meth:`predict_proba`.

        Returns
        -------
        float
            At most 0; ``-inf`` possible.

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> p = np.array([0.9, 0.2, 0.7, 0.4])  # P(y = "b")
        >>> y = ["b", "a", "b", "b"]             # the arg-max is right on 3 of 4 rows
        >>> mr = cp.MeanReplacement().fit(p, y)
        >>> mr.classes_.tolist(), mr.predict_proba(p).tolist()
        (['a', 'b'], [0.75, 0.25, 0.75, 0.25])
        >>> bool(np.isclose(mr.score(p, y), (3 * np.log(0.75) + np.log(0.25)) / 4))
        True
        """
        Q, _ = self._predict_all(X, logits)
        P = check_predictions(
            Q,
            y,
            sample_weight=sample_weight,
            validate=False,
            classes=self._classes,
        )
        from ..metrics.scores import nll

        return -float(nll(P, None))

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_classes_"):
            raise _not_fitted(
                f"this {type(self).__name__} is not fitted yet; call fit(scores, labels) first"
            )

    # ------------------------------------------------------------------ scikit-learn

    @property
    def classes_(self) -> np.ndarray:
        """The class of each probability column (what :meth:`predict` returns), once fitted.

        ``[0, 1, ..., k-1]`` when ``fit`` was given column indices; the
        ``classes`` it was given, or the sorted string labels, otherwise.
        """
        self._check_fitted()
        named = self._classes
        return np.arange(int(self.n_classes_)) if named is None else named

    @property
    def n_features_in_(self) -> int:
        """Number of score columns ``fit`` was given (1 for binary ``(n,)`` or ``(n, 1)``)."""
        self._check_fitted()
        n = self._n_features_in
        return self._default_n_features() if n is None else int(n)

    def _default_n_features(self) -> int:
        """``n_features_in_`` unless recorded otherwise: 1 for binary, else ``n_classes_``."""
        k = int(self.n_classes_)
        return 1 if k == 2 else k

    def __sklearn_is_fitted__(self) -> bool:
        """Fitted? (scikit-learn's ``check_is_fitted`` asks this.)"""
        return hasattr(self, "n_classes_")

    def __sklearn_clone__(self) -> Recalibrator:
        """The unfitted copy ``sklearn.base.clone`` makes: a scikit-learn classifier throughout.

        The same parameters (each cloned as ``clone`` does), and binary
        :meth:`predict_proba` returns ``(n, 2)`` = ``[1 - p, p]`` also for
        ``(n,)`` scores, as scikit-learn's scorers (``"neg_log_loss"``,
        ``"neg_brier_score"``, ``"roc_auc"``) and ``cross_val_predict`` read
        it: ``GridSearchCV``, ``cross_val_score`` and ``cross_validate`` fit such
        copies, so they take binary scores as ``(n,)`` or ``(n, 1)``. An object
        made by its constructor (or :meth:`load`) keeps ``(n,)`` out for
        ``(n,)`` in. The probabilities are the same either way.
        """
        from sklearn.base import clone

        params = {k: clone(v, safe=False) for k, v in self.get_params(deep=False).items()}
        new = type(self)(**params)
        new._two_columns = True
        return new

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's estimator tags: a classifier of 1-D or 2-D scores.

        scikit-learn is imported here, when a scikit-learn tool asks, never by
        ``import calipers``.
        """
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(multi_class=not self._binary_only),
            # 1-D scores work too, but scikit-learn's checks read one_d_array=True as
            # "1-D only" (they would feed X[:, 0] everywhere)
            input_tags=InputTags(two_d_array=True),
        )

    # ------------------------------------------------------------------ to implement

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:  # pragma: no cover
        raise NotImplementedError

    def _transform(self, S: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


#: The registered classification recalibrators, by class name: a live view of the one
#: registry of :mod:`calipers.recalibration._registry`.
_REGISTRY: Mapping[str, type[Recalibrator]] = _registry.Family(Recalibrator)
