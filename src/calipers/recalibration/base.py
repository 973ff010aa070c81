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

import json
import math
import os
import sys
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, NamedTuple

import numpy as np

from .._backend import is_torch
from ..validation import (
    CalibrationInputError,
    Predictions,
    _as_array,
    _check_labels,
    _check_weight,
    _eps,
    _first_true,
    _label_array,
    _np,
    _read_kind,
    _sigmoid,
    check_predictions,
    resolve_classes,
)
from ..validation import _softmax as _softmax_rows
from . import _registry
from ._params import Parameters
from ._schema import (
    FORMAT,
    MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
    READABLE_FORMATS,
    Flag,
    Integer,
    Labels,
    OneOf,
    Schema,
    _show,
    _too_large,
    check_document,
    check_fields,
    check_registrable,
    parse_document,
    run_checks,
)

__all__ = [
    "Recalibrator",
    "NotFittedError",
    "load_recalibrator",
    "register",
    "MAX_DOCUMENT_BYTES",
    "MAX_DEPTH",
    "MAX_LOGIT",
]

#: Largest logit magnitude a logit method accepts: its arithmetic squares and cubes
#: logits (temperature scaling's cumulants, the whitening of matrix scaling), which
#: overflows near 1e102; the metrics themselves accept any finite logit.
MAX_LOGIT = 1e100

#: Fitted fields every method has (a method may narrow ``n_classes_``).
COMMON_STATE: dict[str, Any] = {
    "n_classes_": Integer(lo=2),
    "input_kind_": OneOf(("logits", "probs")),
    "input_detected_": Flag(),
}

#: Fitted fields a document holds only where they differ from their default (so that
#: the files of fits on column indices stay as they were, and older files load):
#: ``classes_`` (default ``[0, 1, ..., k-1]``) and ``n_features_in_`` (default 1 for
#: binary scores, ``n_classes_`` otherwise).
OPTIONAL_STATE: dict[str, Any] = {
    "classes_": Labels(),
    "n_features_in_": Integer(lo=1),
}
#: Where the live object keeps them (``classes_`` and ``n_features_in_`` are properties).
_PRIVATE_STATE = {"classes_": "_classes", "n_features_in_": "_n_features_in"}


def _n_features_consistent(v: Mapping[str, Any]) -> str | None:
    """``n_features_in_`` is 1 or 2 for binary scores, ``n_classes_`` otherwise."""
    if "n_features_in_" not in v:
        return None
    n, k = v["n_features_in_"], v["n_classes_"]
    if n == k or (k == 2 and n == 1):
        return None
    allowed = "1 or 2 (binary scores)" if k == 2 else f"{k} (field 'n_classes_')"
    return f"field 'n_features_in_' must be {allowed}; got {n}"


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


def _log_probs(p: np.ndarray, where: str) -> np.ndarray:
    if np.any(p <= 0):
        idx = tuple(int(i) for i in np.argwhere(p <= 0)[0])
        raise CalibrationInputError(
            f"{where} needs logits; it was given probabilities and would use log p, but "
            f"entry {idx} is {float(p[idx])!r} (log 0 = -inf). Pass the model's logits instead "
            "(logits=True)."
        )
    return np.log(p)


_KIND_NAMES = {"logits": "logits", "probs": "probabilities"}


def _told(logits: Any) -> bool | None:
    """``logits=`` as given: None, True or False; anything else is refused, not coerced."""
    if logits is None or isinstance(logits, (bool, np.bool_)):
        return None if logits is None else bool(logits)
    raise CalibrationInputError(
        f"logits must be True, False or None (read from the values); got {logits!r}"
    )


def _softmax(z: np.ndarray) -> np.ndarray:
    """Probabilities from logits: the validation layer's stable softmax (sigmoid for 1-D)."""
    return _sigmoid(z) if z.ndim == 1 else _softmax_rows(z)


def _scores_array(scores: Any) -> tuple[Any, np.ndarray]:
    """``(x0, S)``: the scores as the validation layer reads them, and as a NumPy array.

    ``x0`` is the array the metrics see (complex, string and object arrays are
    refused with their messages; tensors stay tensors), ``S`` its floating
    NumPy form after the metrics' array and shape rules (float16/32/64 kept,
    bfloat16 -> float32, integers and booleans -> float64). Values are not
    checked here.
    """
    x0 = _as_array(scores, "probs")
    n = int(x0.shape[0]) if x0.ndim >= 1 else 1
    head = check_predictions(x0, np.zeros(n, dtype=np.int64), validate=False)
    return x0, np.asarray(_np(head.probs))


def _min_max(S: np.ndarray) -> tuple[float, float]:
    """Smallest and largest entry (NaN when there is one), read once in cache-sized blocks.

    Unlike a sum, neither overflows: ``1e308`` logits are finite and stay so.
    """
    flat = S.reshape(-1)
    step = 1 << 18
    if flat.size <= step:
        return float(flat.min()), float(flat.max())
    lo, hi = math.inf, -math.inf
    for i in range(0, flat.size, step):
        b = flat[i : i + step]
        lo, hi = min(lo, float(b.min())), max(hi, float(b.max()))
        if math.isnan(lo) or math.isnan(hi):
            return math.nan, math.nan
    return lo, hi


def _check_magnitude(S: np.ndarray, lo: float, hi: float, name: str) -> None:
    """Refuse non-finite logits, and logits beyond :data:`MAX_LOGIT` in magnitude.

    ``lo`` and ``hi`` are the smallest and largest entry (:func:`_min_max`).
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        idx = _first_true(~np.isfinite(S))
        raise CalibrationInputError(
            f"logits contain a non-finite value ({S[idx].item()!r}) at "
            f"{'row ' + str(idx[0]) + (', column ' + str(idx[1]) if S.ndim > 1 else '')}"
        )
    if max(-lo, hi) > MAX_LOGIT:
        idx = _first_true(np.abs(S) > MAX_LOGIT)
        raise CalibrationInputError(
            f"{name} needs logits of magnitude at most {MAX_LOGIT:g}; entry "
            f"{idx if S.ndim > 1 else idx[0]} is {S[idx].item()!r}. Its arithmetic (squares "
            "and cubes of the logits in the fit) overflows beyond that; the metrics accept "
            "such logits, and the probability methods take their softmax"
        )


class _Read(NamedTuple):
    """What :meth:`Recalibrator._read_all` makes of its inputs."""

    S: np.ndarray  # scores of the method's natural kind, float32/float64 NumPy
    y: np.ndarray | None  # labels as column indices (int64)
    w: np.ndarray | None  # weights (float64)
    kind: str  # "logits" or "probs": what the scores were read as
    detected: bool  # read from the values (not told)
    classes: np.ndarray | None  # the labels' classes, in column order (None: column indices)
    n_features: int  # columns of the scores as given (1 for (n,) and (n, 1))
    column: bool  # the scores were one column (n, 1): predict_proba returns (n, 2)
    like: Any  # the torch tensor given (None for NumPy input): the output follows it


def _torch_like(x: Any) -> Any:
    """``x`` when it is a torch tensor (the output then follows it), else None."""
    return x if is_torch(x) else None


def _label_classes(labels: Any, k: int, classes: Any) -> np.ndarray | None:
    """The classes that ``labels`` name, in column order; None when they are column indices.

    ``classes`` given: :func:`calipers.validation.resolve_classes` (a list of ``k``
    labels, or a fitted classifier's ``classes_``). Otherwise, as scikit-learn's
    classifiers do, numbers and booleans are column indices ``0 .. k-1`` and
    labels that are not numbers (strings, Python objects) name the classes in
    sorted order (``numpy.unique``), which must then be exactly ``k`` classes.
    """
    if classes is not None:
        return resolve_classes(classes, k)
    y = _label_array(labels)
    if is_torch(y) or y.ndim != 1 or y.dtype.kind not in "OUS":
        return None  # column indices (the validation layer checks them)
    try:
        c = np.unique(y)
    except TypeError:
        raise CalibrationInputError(
            "labels mix values that cannot be sorted (e.g. strings and numbers), so the "
            "class of each column cannot be inferred; pass classes=[...], the class of each "
            "column in order"
        ) from None
    if c.shape[0] != k:
        shown = c.tolist() if c.shape[0] <= 10 else [*c[:10].tolist(), "..."]
        cols = (
            "binary scores ((n,) or (n, 1)) have 2 classes: [negative, positive]"
            if k == 2
            else f"the scores have {k} columns"
        )
        raise CalibrationInputError(
            f"labels name {c.shape[0]} classes {shown}, but {cols}; the "
            "classes of string labels are read in sorted order only when they match the "
            "columns one for one. Pass classes=[...], the class of each column in order "
            "(for a scikit-learn model: classes=model.classes_)"
        )
    return c


def _is_default_classes(c: np.ndarray) -> bool:
    """``c`` is ``[0, 1, ..., k-1]`` (integers): the labels were column indices."""
    vals = c.tolist()
    return all(type(v) is int for v in vals) and vals == list(range(len(vals)))


def _as_input(Q: np.ndarray, like: Any) -> Any:
    """``Q`` (NumPy) as the caller's array type: a tensor on ``like``'s device, or NumPy.

    A floating tensor gives its own dtype (float16, bfloat16, float32, float64);
    any other tensor float64.
    """
    if like is None:
        return Q
    import torch

    dtype = like.dtype if like.dtype.is_floating_point else torch.float64
    return torch.from_numpy(np.ascontiguousarray(Q)).to(device=like.device, dtype=dtype)


class Recalibrator(Parameters):
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
    schema: ClassVar[Schema] = Schema()
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

    # ------------------------------------------------------------------ inputs

    def _read(
        self,
        scores: Any,
        logits: bool | None,
        labels: Any = None,
        sample_weight: Any = None,
        *,
        fitted: str | None = None,
        classes: Any = None,
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, str, bool]:
        """Scores of the method's natural kind, labels, weights, the kind read, detected?

        The first five fields of :meth:`_read_all` (the cross-validation helpers use it).
        """
        r = self._read_all(scores, logits, labels, sample_weight, fitted=fitted, classes=classes)
        return r.S, r.y, r.w, r.kind, r.detected

    def _read_all(
        self,
        scores: Any,
        logits: bool | None,
        labels: Any = None,
        sample_weight: Any = None,
        *,
        fitted: str | None = None,
        classes: Any = None,
    ) -> _Read:
        """Scores of the method's natural kind, labels, weights, the kind read, detected?
        and what the output must look like (see :class:`_Read`).

        ``fitted`` is the kind ``fit`` read when called from ``predict_proba``
        (labels and weights are then None). A single column ``(n, 1)`` is read
        as binary ``(n,)`` scores. Labels are column indices, or members of
        ``classes`` (without ``classes``, string or object labels name the
        classes in sorted order: :func:`_label_classes`). Every input goes through the
        validation layer of the metrics, so the same scores, labels and weights
        get the same verdict and the same message as :func:`calipers.ece`: the
        array, dtype and shape rules of :func:`calipers.check_predictions` first,
        then the values. Logits given to a logit method are checked for
        finiteness (and for the method's magnitude limit, :data:`MAX_LOGIT`) and
        keep their float32/float64 dtype (no copy, no softmax: fitting reads them
        a few times, and 50 000 x 1000 logits are 200 MB in float32; float16 and
        bfloat16 become float32, exactly); every other case is validated by
        :func:`calipers.check_predictions` itself, in the caller's dtype (so
        float16 probabilities get float16's tolerance), and becomes float64.
        """
        name = type(self).__name__
        told = _told(logits)
        if isinstance(scores, Predictions):
            return self._read_predictions(scores, told, labels, sample_weight, fitted, classes)
        x0 = _as_array(scores, "probs")
        column = x0.ndim == 2 and int(x0.shape[1]) == 1
        if column:  # scikit-learn's matrix of one feature: binary scores of class 1
            x0 = x0[:, 0]
        x0, S = _scores_array(x0)
        n = int(S.shape[0])
        k = 2 if S.ndim == 1 else int(S.shape[1])
        if fitted is not None and k != self.n_classes_:
            got = "one column (n, 1), read as binary scores (2 classes)" if column else str(k)
            given = 1 if S.ndim == 1 else k
            raise CalibrationInputError(
                f"{name} was fitted on {self.n_classes_} classes; got scores with {got} (in "
                f"scikit-learn's words: X has {given} features, but {name} is expecting "
                f"{self.n_features_in_} features as input)"
            )
        detected = told is None
        if told is None:
            with np.errstate(over="ignore"):  # row sums of +-1e308 logits: inf, and read so
                kind, why = _read_kind(
                    S if S.dtype != np.float16 else S.astype(np.float32), _eps(x0)
                )
            if kind is None:
                where = "fit" if fitted is None else "predict_proba"
                since = "" if fitted is None else f" (it was fitted on {_KIND_NAMES[fitted]})"
                raise CalibrationInputError(
                    f"{name}.{where} cannot tell whether these scores are logits or "
                    f"probabilities{since}: {why}. Pass logits=True if they are logits, or "
                    "logits=False if they are probabilities"
                )
            if fitted is not None and kind != fitted:
                how = (
                    "detected from the values"
                    if self._detected()
                    else f"told logits={fitted == 'logits'}"
                )
                raise CalibrationInputError(
                    f"{name} was fitted on {_KIND_NAMES[fitted]} ({how}), but these scores "
                    f"look like {_KIND_NAMES[kind]}: {why}. Pass logits=True or logits=False "
                    "to say what they are"
                )
        else:
            kind = "logits" if told else "probs"
        y = w = None
        named = None if labels is None else _label_classes(labels, k, classes)
        if kind == "logits" and self.input == "logits":
            lo, hi = _min_max(S)
            if not (math.isfinite(lo) and math.isfinite(hi)):
                # the metrics' own message (it names the first non-finite entry)
                check_predictions(x0, np.zeros(n, dtype=np.int64), logits=True)
            _check_magnitude(S, lo, hi, name)
            if labels is not None:
                y = np.asarray(_np(_check_labels(labels, n, k, S.ndim == 1, S, named)))
            if sample_weight is not None:
                w = np.asarray(_check_weight(sample_weight, n, S), dtype=np.float64)
            if S.dtype not in (np.float32, np.float64):
                S = S.astype(np.float32)  # float16: exact in float32
        else:
            P = check_predictions(
                x0,
                np.zeros(n, dtype=np.int64) if labels is None else labels,
                logits=kind == "logits",
                sample_weight=sample_weight,
                classes=named,
            )
            if labels is not None:
                y = np.asarray(_np(P.labels), dtype=np.int64)
            if P.sample_weight is not None:
                w = np.asarray(_np(P.sample_weight), dtype=np.float64)
            probs = np.asarray(_np(P.probs), dtype=np.float64)
            if self.input == "logits":
                S = _log_probs(probs, name) if probs.ndim == 2 else _logit(probs, name)
            else:
                S = probs
        return _Read(
            S, y, w, kind, detected, named, 1 if S.ndim == 1 else k, column, _torch_like(x0)
        )

    def _read_predictions(
        self,
        P: Predictions,
        told: bool | None,
        labels: Any,
        sample_weight: Any,
        fitted: str | None,
        classes: Any = None,
    ) -> _Read:
        """``_read_all`` for a validated :class:`Predictions`: it says what it holds.

        Its labels are column indices already; ``classes`` (or the classes it was
        validated with) name the columns."""
        name = type(self).__name__
        if labels is not None:
            raise CalibrationInputError(
                "labels must be None when scores is a Predictions object (it carries its labels)"
            )
        kind = "logits" if P.logits is not None else "probs"
        if told is not None and told != (kind == "logits"):
            raise CalibrationInputError(
                f"logits={told} contradicts the Predictions object, which holds {_KIND_NAMES[kind]}"
            )
        if fitted is not None and P.n_classes != self.n_classes_:
            raise CalibrationInputError(
                f"{name} was fitted on {self.n_classes_} classes; got scores with {P.n_classes}"
            )
        probs = np.asarray(_np(P.probs), dtype=np.float64)
        if self.input == "probs":
            S = probs
        elif kind == "logits":
            S = np.asarray(_np(P.logits))
            if S.dtype not in (np.float32, np.float64):
                S = S.astype(np.float32 if S.dtype == np.float16 else np.float64)
            lo, hi = _min_max(S)
            _check_magnitude(S, lo, hi, name)
        else:
            S = _log_probs(probs, name) if probs.ndim == 2 else _logit(probs, name)
        y = w = None
        if fitted is None:
            y = np.asarray(_np(P.labels), dtype=np.int64)
            if sample_weight is not None and P.sample_weight is not None:
                raise CalibrationInputError(
                    "sample_weight was given twice: in the Predictions object and as an argument"
                )
            if sample_weight is None and P.sample_weight is not None:
                w = np.asarray(_np(P.sample_weight), dtype=np.float64)
            elif sample_weight is not None:
                w = np.asarray(_check_weight(sample_weight, S.shape[0], S), dtype=np.float64)
        named = None
        if fitted is None:
            named = P.classes
            if classes is not None:
                named = resolve_classes(classes, P.n_classes)
                if P.classes is not None and named.tolist() != P.classes.tolist():
                    raise CalibrationInputError(
                        f"classes={named.tolist()!r} contradicts the Predictions object, "
                        f"validated with classes {P.classes.tolist()!r}"
                    )
        n_features = 1 if P.binary else P.n_classes
        return _Read(S, y, w, kind, False, named, n_features, False, _torch_like(P.probs))

    def _fitted_kind(self) -> str:
        """The kind of scores ``fit`` read (``logits_`` of 0.1 files is converted at load)."""
        return str(self.input_kind_)

    def _detected(self) -> bool:
        return bool(getattr(self, "input_detected_", False))

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

    # ------------------------------------------------------------------ schema

    @classmethod
    def _state_fields(cls) -> dict[str, Any]:
        """The declared fitted fields: ``COMMON_STATE`` and the method's own."""
        return {**COMMON_STATE, **cls.schema.state}

    def _check_params(self, where: str) -> dict[str, Any]:
        """The parameters, checked against ``schema.params`` (the message starts with ``where``)."""
        params = check_fields(
            self.schema.params, self.get_params(), where, "parameter", allow_extra=True
        )
        run_checks(self.schema.param_checks, params, where)
        return params

    def _check_state(self, where: str) -> None:
        """Check the fitted attributes against the declared schema (nothing is changed)."""
        params = self._check_params(where)
        values = {k: getattr(self, k) for k in self._state_fields() if hasattr(self, k)}
        state = check_fields(self._state_fields(), values, where, "field", params)
        run_checks(self.schema.state_checks, {**params, **state}, where)

    # ------------------------------------------------------------------ to implement

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:  # pragma: no cover
        raise NotImplementedError

    def _transform(self, S: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ JSON

    def _state(self) -> dict[str, Any]:
        """The declared fitted fields the object has (all of them once fitted)."""
        return {k: getattr(self, k) for k in self._state_fields() if hasattr(self, k)}

    def _optional_state(self, where: str) -> dict[str, Any]:
        """The fields of ``OPTIONAL_STATE`` that differ from their default, checked."""
        values = {
            field: self.__dict__[attr]
            for field, attr in _PRIVATE_STATE.items()
            if self.__dict__.get(attr) is not None
        }
        if not values:
            return {}
        if "classes_" in values:  # as JSON values (np.str_ -> str, np.int64 -> int)
            values["classes_"] = np.asarray(values["classes_"]).tolist()
        k = {"n_classes_": self.n_classes_}
        checked = check_fields(
            {f: OPTIONAL_STATE[f] for f in values}, values, where, "field", context=k
        )
        run_checks((_n_features_consistent,), {**k, **checked}, where)
        return values

    def to_json(self) -> str:
        """JSON text with the class, its parameters and its fitted state (no pickle).

        The document is checked against the method's schema first (a fitted
        state that breaks it, e.g. after editing an attribute, raises) and is
        written in format :data:`calipers.recalibration._schema.FORMAT`; an
        unfitted recalibrator is written with an empty state.

        Examples
        --------
        >>> import json
        >>> import calipers as cp
        >>> doc = json.loads(cp.TemperatureScaling().to_json())
        >>> doc["calipers_recalibrator"], doc["format"], doc["state"]
        ('TemperatureScaling', 2, {})
        """
        name = type(self).__name__
        if type(self).schema is Recalibrator.schema:
            raise CalibrationInputError(
                f"{name} cannot be saved: it declares no schema of its parameters and fitted "
                "state (the class attribute 'schema'; see calipers.recalibration.base.register)"
            )
        optional: dict[str, Any] = {}
        if hasattr(self, "n_classes_"):
            self._check_state(f"{name} cannot be saved")
            optional = self._optional_state(f"{name} cannot be saved")
        else:
            self._check_params(f"{name} cannot be saved")
        return json.dumps(
            {
                "calipers_recalibrator": name,
                "format": FORMAT,
                "params": {k: _encode(v) for k, v in self.get_params().items()},
                "state": {
                    **{k: _encode(v) for k, v in self._state().items()},
                    **{k: _encode(v) for k, v in optional.items()},
                },
            },
            allow_nan=False,
        )

    @classmethod
    def _from_document(cls, doc: dict[str, Any]) -> Recalibrator:
        """The recalibrator a parsed document of this class describes, every field checked."""
        name = cls.__name__
        where = f"{name} file"
        fmt = check_document(doc, where, READABLE_FORMATS)
        # a parameter added later, absent from an older document, means its old behaviour
        params_doc = {**cls.schema.legacy_params, **doc["params"]}
        params = check_fields(cls.schema.params, params_doc, where, "parameter")
        run_checks(cls.schema.param_checks, params, where)
        state_doc: dict[str, Any] = doc["state"]
        if fmt == 1:
            state_doc = _upgrade_format_1(cls, state_doc, params, where)
        obj = cls(**params)
        optional_doc = {k: state_doc[k] for k in OPTIONAL_STATE if k in state_doc}
        state_doc = {k: v for k, v in state_doc.items() if k not in OPTIONAL_STATE}
        if optional_doc and not state_doc:
            raise CalibrationInputError(
                f"{where}: field {next(iter(optional_doc))!r} belongs to a fitted recalibrator, "
                "but the state holds no fit"
            )
        if state_doc:  # an empty state is an unfitted recalibrator
            state = check_fields(cls._state_fields(), state_doc, where, "field", params)
            run_checks(cls.schema.state_checks, {**params, **state}, where)
            optional = check_fields(
                {k: OPTIONAL_STATE[k] for k in optional_doc}, optional_doc, where, "field", state
            )
            run_checks((_n_features_consistent,), {**state, **optional}, where)
            for key, value in state.items():
                setattr(obj, key, value)
            if "classes_" in optional and not _is_default_classes(optional["classes_"]):
                obj._classes = optional["classes_"]
            if (
                optional.get("n_features_in_", obj._default_n_features())
                != obj._default_n_features()
            ):
                obj._n_features_in = optional["n_features_in_"]
        return obj

    @classmethod
    def from_json(cls, text: str | bytes, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> Recalibrator:
        """Rebuild a recalibrator written by :meth:`to_json` (see :func:`load_recalibrator`).

        The document must hold this class (or a subclass).

        Examples
        --------
        >>> import calipers as cp
        >>> text = cp.HistogramBinning(n_bins=10).to_json()
        >>> cp.HistogramBinning.from_json(text).n_bins
        10
        >>> cp.TemperatureScaling.from_json(text)
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: the document holds a HistogramBinning, not a TemperatureScaling
        """
        return load_recalibrator(text, expected=cls, max_bytes=max_bytes)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path`` atomically (:func:`calipers.io.output.write_atomic`).

        Examples
        --------
        >>> import os, tempfile
        >>> import calipers as cp
        >>> path = os.path.join(tempfile.mkdtemp(), "hb.json")
        >>> cp.HistogramBinning(n_bins=10).save(path)
        >>> cp.HistogramBinning.load(path).n_bins
        10
        """
        from ..io.output import write_atomic

        write_atomic(os.fspath(path), self.to_json())

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, max_bytes: int = MAX_DOCUMENT_BYTES
    ) -> Recalibrator:
        """Read a recalibrator saved with :meth:`save` (checked as :func:`load_recalibrator`).

        A file larger than ``max_bytes`` is refused before it is read.

        Examples
        --------
        >>> import os, tempfile
        >>> import calipers as cp
        >>> path = os.path.join(tempfile.mkdtemp(), "ts.json")
        >>> cp.TemperatureScaling(t_max=50.0).save(path)
        >>> cp.TemperatureScaling.load(path).t_max
        50.0
        >>> cp.TemperatureScaling.load(path, max_bytes=10)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: the recalibrator document is ... bytes, more than the limit of 10 bytes ...
        """
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > max_bytes:
                raise CalibrationInputError(_too_large(size, max_bytes))
            data = f.read(max_bytes + 1)
        return load_recalibrator(data, expected=cls, max_bytes=max_bytes)


def _logit(p: np.ndarray, where: str) -> np.ndarray:
    if np.any((p <= 0) | (p >= 1)):
        i = int(np.argmax((p <= 0) | (p >= 1)))
        raise CalibrationInputError(
            f"{where} needs logits; it was given probabilities and would use log(p / (1 - p)), "
            f"but entry {i} is {float(p[i])!r}. Pass the model's logits instead (logits=True)."
        )
    return np.log(p) - np.log1p(-p)


def _encode(v: Any) -> Any:
    """A JSON value for a parameter or a fitted field (arrays: the documented encoding)."""
    if isinstance(v, np.ndarray):
        return {
            "ndarray": np.asarray(v, dtype=np.float64).tolist(),
            "dtype": "float64",
            "shape": list(v.shape),
        }
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else {"float": repr(f)}
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _encode(x) for k, x in v.items()}
    if v is None or isinstance(v, (int, str)):
        return v
    raise CalibrationInputError(f"cannot store a {type(v).__name__} in JSON: {v!r}")


def _upgrade_format_1(
    cls: type[Recalibrator], state: dict[str, Any], params: dict[str, Any], where: str
) -> dict[str, Any]:
    """The fitted state of a format-1 document in the form of format 2.

    Format 1 (calipers 0.1 and the 0.2 development versions) stored the kind of
    scores as ``logits_`` (0.1) and repeated every parameter whose name ends in
    ``_`` (``MatrixScaling.lambda_``) among the fitted fields; the repetition
    must agree with the parameter.
    """
    state = dict(state)
    if "logits_" in state:
        if "input_kind_" in state or "input_detected_" in state:
            raise CalibrationInputError(
                f"{where}: field 'logits_' (calipers 0.1) cannot stand beside 'input_kind_'"
            )
        flag = check_fields({"logits_": Flag()}, {"logits_": state.pop("logits_")}, where, "field")
        state["input_kind_"] = "logits" if flag["logits_"] else "probs"
        state["input_detected_"] = False
    for name, f in cls.schema.params.items():
        if name.endswith("_") and name in state:
            again = check_fields({name: f}, {name: state.pop(name)}, where, "field")[name]
            if again != params[name]:
                raise CalibrationInputError(
                    f"{where}: field {name!r} ({again!r}) contradicts parameter {name!r} "
                    f"({params[name]!r})"
                )
    return state


#: The registered classification recalibrators, by class name: a live view of the one
#: registry of :mod:`calipers.recalibration._registry`.
_REGISTRY: Mapping[str, type[Recalibrator]] = _registry.Family(Recalibrator)


def load_recalibrator(
    text: str | bytes,
    *,
    expected: type[Recalibrator] | None = None,
    max_bytes: int = MAX_DOCUMENT_BYTES,
) -> Recalibrator:
    """Rebuild any registered recalibrator from the JSON of :meth:`Recalibrator.to_json`.

    Nothing is unpickled or evaluated. The document is read within limits
    (at most ``max_bytes`` bytes, :data:`MAX_DOCUMENT_BYTES` = 64 MiB by
    default; nesting at most :data:`MAX_DEPTH` = 32 levels, checked before
    parsing; no duplicate keys; no ``NaN``/``Infinity``), and must be a
    complete, consistent description of one method: its ``format`` one that
    this version reads (2, the one written now, or 1, written by calipers 0.1
    and the 0.2 development versions), every parameter and, for a fitted
    recalibrator, every fitted field present, of the declared type, shape
    (tied to ``n_classes_`` and the parameters) and range (finite; temperatures
    > 0; weights on the simplex; monotone maps non-decreasing; ...), and no
    other key. Anything else raises :class:`CalibrationInputError` naming the
    field, so a file loads as the recalibrator it describes or not at all.
    Documents of the regression recalibrators
    (:class:`~calipers.recalibration.regression.base.RegressionRecalibrator`:
    variance scaling, variance Platt scaling, quantile recalibration) load too,
    as instances of their class.

    Parameters
    ----------
    text : str or bytes
        The JSON document.
    expected : type, optional
        Require this class (or a subclass); used by ``from_json`` and ``load``.
    max_bytes : int, default MAX_DOCUMENT_BYTES
        Largest document read.

    Returns
    -------
    Recalibrator

    Raises
    ------
    CalibrationInputError
        Not a valid document of a registered method.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.5, 0.0]])
    >>> ts = cp.TemperatureScaling().fit(z, [0, 1, 1, 0], logits=True)
    >>> back = cp.load_recalibrator(ts.to_json())
    >>> bool(np.allclose(back.predict_proba(z, logits=True), ts.predict_proba(z, logits=True)))
    True
    >>> cp.load_recalibrator(ts.to_json().replace(str(ts.temperature_), "-1"))
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: TemperatureScaling file: field 'temperature_' must be a finite number > 0; got -1
    """
    doc = parse_document(text, max_bytes)
    if not isinstance(doc, dict) or "calipers_recalibrator" not in doc:
        raise CalibrationInputError(
            "not a calipers recalibrator JSON document (no 'calipers_recalibrator' key)"
        )
    name = doc["calipers_recalibrator"]
    cls: Any = _registry.lookup(name)
    if cls is None:
        raise CalibrationInputError(
            f"unknown recalibrator {_show(name)}; known: {_registry.names()}"
        )
    if expected is not None and expected is not Recalibrator and not issubclass(cls, expected):
        raise CalibrationInputError(f"the document holds a {name}, not a {expected.__name__}")
    loaded: Any = cls._from_document(doc)  # the class reads its own documents
    return loaded
