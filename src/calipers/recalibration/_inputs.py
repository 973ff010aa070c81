"""Reading the inputs of a recalibrator: scores (logits or probabilities), labels, weights.

The rules of :mod:`calipers.recalibration.base` (its module docstring): scores
are logits or probabilities, told by ``logits=`` or read from the values only
where the reading is unambiguous; labels are column indices or name the classes
(``classes=``); every input goes through the validation layer of the metrics;
arrays go back as they came (torch tensors stay tensors). :class:`_InputReading`
is the part of :class:`~calipers.recalibration.base.Recalibrator` that reads
them (``fit``, ``predict_proba``, ``predict``, ``score`` and the
cross-validation helpers call it).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple

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

__all__ = ["MAX_LOGIT"]

#: Largest logit magnitude a logit method accepts: its arithmetic squares and cubes
#: logits (temperature scaling's cumulants, the whitening of matrix scaling), which
#: overflows near 1e102; the metrics themselves accept any finite logit.
MAX_LOGIT = 1e100


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


def _logit(p: np.ndarray, where: str) -> np.ndarray:
    if np.any((p <= 0) | (p >= 1)):
        i = int(np.argmax((p <= 0) | (p >= 1)))
        raise CalibrationInputError(
            f"{where} needs logits; it was given probabilities and would use log(p / (1 - p)), "
            f"but entry {i} is {float(p[i])!r}. Pass the model's logits instead (logits=True)."
        )
    return np.log(p) - np.log1p(-p)


class _InputReading:
    """The input reading of :class:`~calipers.recalibration.base.Recalibrator` (a mixin).

    It reads what the recalibrator declares: ``input`` (the kind of scores the
    method works on) and, once fitted, ``n_classes_``, ``input_kind_`` and
    ``input_detected_``.
    """

    input: ClassVar[Literal["logits", "probs"]]
    n_classes_: int
    input_kind_: str
    input_detected_: bool

    if TYPE_CHECKING:

        @property
        def n_features_in_(self) -> int: ...

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
