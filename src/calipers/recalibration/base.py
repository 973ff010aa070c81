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
* ``to_json`` / ``from_json`` (and ``save`` / ``load``) store the class name,
  the parameters and the fitted state as plain JSON: nothing is pickled.

Binary problems: scores of shape ``(n,)`` hold the logit (or probability) of
class 1, and ``predict_proba`` returns ``(n,)`` probabilities of class 1.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import tempfile
from typing import Any, ClassVar, Literal

import numpy as np

from .._backend import to_numpy
from ..validation import (
    CalibrationInputError,
    Predictions,
    _check_labels,
    _check_weight,
    _eps,
    _read_kind,
    _sigmoid,
    check_predictions,
)
from ..validation import _softmax as _softmax_rows

__all__ = ["Recalibrator", "load_recalibrator", "register"]

_REGISTRY: dict[str, type[Recalibrator]] = {}


def register(cls: type[Recalibrator]) -> type[Recalibrator]:
    """Class decorator: make a recalibrator loadable by :func:`load_recalibrator`."""
    _REGISTRY[cls.__name__] = cls
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


class Recalibrator:
    """Base class of every recalibration method (see the module docstring).

    Subclasses set the class attributes ``input`` (``"logits"`` or
    ``"probs"``), ``accuracy_preserving`` and ``injective`` (or override the
    properties when they depend on hyper-parameters) and implement
    ``_fit(S, y, w)`` and ``_transform(S)`` on float64 NumPy arrays of the
    natural input kind, ``_transform`` returning probabilities.
    """

    input: ClassVar[Literal["logits", "probs"]] = "logits"
    _accuracy_preserving: ClassVar[bool] = False
    _injective: ClassVar[bool] = False

    # ------------------------------------------------------------------ declared properties

    @property
    def accuracy_preserving(self) -> bool:
        """True when the arg-max of ``predict_proba`` always equals that of the input."""
        return self._accuracy_preserving

    @property
    def injective(self) -> bool:
        """True when distinct score vectors always give distinct outputs."""
        return self._injective

    # ------------------------------------------------------------------ parameters

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments, as scikit-learn's ``get_params``."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Recalibrator:
        """Set constructor arguments (unknown names raise); returns ``self``."""
        names = set(self._param_names())
        for key, value in params.items():
            if key not in names:
                raise CalibrationInputError(
                    f"{type(self).__name__} has no parameter {key!r}; it has {sorted(names)}"
                )
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # ------------------------------------------------------------------ inputs

    def _read(
        self,
        scores: Any,
        logits: bool | None,
        labels: Any = None,
        sample_weight: Any = None,
        *,
        fitted: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, str, bool]:
        """Scores of the method's natural kind, labels, weights, the kind read, detected?

        ``fitted`` is the kind ``fit`` read when called from ``predict_proba``
        (labels and weights are then None). Logits given to a logit method are
        checked for finiteness only and keep their float32/float64 dtype (no
        copy, no softmax: fitting reads them a few times, and 50 000 x 1000
        logits are 200 MB in float32); every other case goes through the core
        validation layer and is float64.
        """
        name = type(self).__name__
        told = _told(logits)
        if isinstance(scores, Predictions):
            return self._read_predictions(scores, told, labels, sample_weight, fitted)
        S = np.asarray(to_numpy(scores))
        eps = _eps(S) if S.dtype.kind == "f" else float(np.finfo(np.float64).eps)
        if S.dtype not in (np.float32, np.float64):
            S = S.astype(np.float64)
        if S.ndim not in (1, 2) or S.shape[0] == 0:
            raise CalibrationInputError(
                f"scores must be a non-empty (n,) or (n, k) array; got shape {S.shape}"
            )
        k = 2 if S.ndim == 1 else int(S.shape[1])
        if fitted is not None and k != self.n_classes_:
            raise CalibrationInputError(
                f"{name} was fitted on {self.n_classes_} classes; got scores with {k}"
            )
        detected = told is None
        finite = False
        if told is None:
            kind, why = _read_kind(S, eps)
            finite = True
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
        if kind == "logits" and self.input == "logits":
            if not finite and not np.isfinite(S.sum(dtype=np.float64)):
                bad = np.argwhere(~np.isfinite(S))
                if len(bad):
                    idx = tuple(int(i) for i in bad[0])
                    raise CalibrationInputError(
                        f"logits must be finite; entry {idx} is {float(S[idx])!r}"
                    )
            if labels is not None:
                y = np.asarray(_check_labels(labels, S.shape[0], k, S.ndim == 1, S))
        else:
            S = S.astype(np.float64, copy=False)
            # validation of probabilities (or logits for a probability method) and labels
            P = check_predictions(
                S,
                np.zeros(S.shape[0], dtype=np.int64) if labels is None else labels,
                logits=kind == "logits",
            )
            if labels is not None:
                y = np.asarray(to_numpy(P.labels))
            if self.input == "logits":
                S = _log_probs(S, name) if S.ndim == 2 else _logit(S, name)
            else:
                S = np.asarray(to_numpy(P.probs), dtype=np.float64)
        if sample_weight is not None:
            w = np.asarray(_check_weight(sample_weight, S.shape[0], S), dtype=np.float64)
        return S, y, w, kind, detected

    def _read_predictions(
        self,
        P: Predictions,
        told: bool | None,
        labels: Any,
        sample_weight: Any,
        fitted: str | None,
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, str, bool]:
        """``_read`` for a validated :class:`Predictions`: it says what it holds."""
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
        probs = np.asarray(to_numpy(P.probs), dtype=np.float64)
        if self.input == "probs":
            S = probs
        elif kind == "logits":
            S = np.asarray(to_numpy(P.logits))
            if S.dtype not in (np.float32, np.float64):
                S = S.astype(np.float64)
        else:
            S = _log_probs(probs, name) if probs.ndim == 2 else _logit(probs, name)
        y = w = None
        if fitted is None:
            y = np.asarray(to_numpy(P.labels), dtype=np.int64)
            if sample_weight is not None and P.sample_weight is not None:
                raise CalibrationInputError(
                    "sample_weight was given twice: in the Predictions object and as an argument"
                )
            if sample_weight is None and P.sample_weight is not None:
                w = np.asarray(to_numpy(P.sample_weight), dtype=np.float64)
            elif sample_weight is not None:
                w = np.asarray(_check_weight(sample_weight, S.shape[0], S), dtype=np.float64)
        return S, y, w, kind, False

    def _fitted_kind(self) -> str:
        """The kind of scores ``fit`` read (``logits_`` of files written by calipers 0.1)."""
        kind = getattr(self, "input_kind_", None)
        if kind is None:
            kind = "logits" if getattr(self, "logits_", self.input == "logits") else "probs"
        return str(kind)

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
    ) -> Recalibrator:
        """Fit on a calibration split; returns ``self``.

        Parameters
        ----------
        scores : array-like of shape (n, k) or (n,), or Predictions
            Logits or probabilities (see ``logits``), or a
            :class:`calipers.Predictions` (then ``labels=None``).
        labels : array-like of shape (n,)
        logits : bool, optional
            Whether ``scores`` are logits. None (default): read from the values
            where that is unambiguous (see :mod:`calipers.recalibration.base`),
            otherwise refused; the reading is stored in ``input_kind_``.
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        Recalibrator
            ``self``, fitted; ``input_kind_`` is ``"logits"`` or ``"probs"`` and
            ``input_detected_`` says whether it was read from the values.

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
        >>> ts.input_kind_, ts.input_detected_
        ('probs', True)
        >>> cp.TemperatureScaling().fit(100 * p, [0, 1, 2, 1])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: TemperatureScaling.fit cannot tell whether ...
        """
        if labels is None and not isinstance(scores, Predictions):
            raise CalibrationInputError(
                "fit needs labels (labels=None only with a calipers.Predictions, which carries them)"
            )
        S, y, w, kind, detected = self._read(scores, logits, labels, sample_weight)
        if y is None:  # pragma: no cover - _read returns labels whenever fit gives them
            raise CalibrationInputError("fit needs labels")
        self.n_classes_ = 2 if S.ndim == 1 else int(S.shape[1])
        self.input_kind_ = kind
        self.input_detected_ = detected
        self._fit(S, y, w)
        return self

    def predict_proba(self, scores: Any, *, logits: bool | None = None) -> np.ndarray:
        """Recalibrated probabilities, shape of ``scores`` ((n,) = P(y = 1) for binary).

        Parameters
        ----------
        scores : array-like of shape (n, k) or (n,), or Predictions
        logits : bool, optional
            Whether ``scores`` are logits. None (default): read from the values
            by the rule of ``fit``; they must be of the kind ``fit`` read.

        Returns
        -------
        numpy.ndarray
            Probabilities, float64.

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
        """
        self._check_fitted()
        S, _, _, _, _ = self._read(scores, logits, fitted=self._fitted_kind())
        return self._transform(S)

    def predict(self, scores: Any, *, logits: bool | None = None) -> np.ndarray:
        """Arg-max class of ``predict_proba`` (ties -> lowest index; binary: p > 0.5).

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.5, -1.0]])
        >>> cp.TemperatureScaling().fit(z, [0, 1, 1, 0]).predict(z)
        array([0, 1, 0, 0])
        """
        p = self.predict_proba(scores, logits=logits)
        if p.ndim == 1:
            return (p > 0.5).astype(np.int64)
        return np.argmax(p, axis=1)

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_classes_"):
            raise CalibrationInputError(
                f"this {type(self).__name__} is not fitted yet; call fit(scores, labels) first"
            )

    # ------------------------------------------------------------------ to implement

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:  # pragma: no cover
        raise NotImplementedError

    def _transform(self, S: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ JSON

    def _state(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    def to_json(self) -> str:
        """JSON text with the class, its parameters and its fitted state (no pickle)."""
        return json.dumps(
            {
                "calipers_recalibrator": type(self).__name__,
                "format": 1,
                "params": {k: _encode(v) for k, v in self.get_params().items()},
                "state": {k: _encode(v) for k, v in self._state().items()},
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Recalibrator:
        """Rebuild a recalibrator written by :meth:`to_json`."""
        return load_recalibrator(text, expected=cls)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path`` atomically."""
        d = os.path.dirname(os.fspath(path)) or "."
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".calipers-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self.to_json())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Recalibrator:
        """Read a recalibrator saved with :meth:`save`."""
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())


def _logit(p: np.ndarray, where: str) -> np.ndarray:
    if np.any((p <= 0) | (p >= 1)):
        i = int(np.argmax((p <= 0) | (p >= 1)))
        raise CalibrationInputError(
            f"{where} needs logits; it was given probabilities and would use log(p / (1 - p)), "
            f"but entry {i} is {float(p[i])!r}. Pass the model's logits instead (logits=True)."
        )
    return np.log(p) - np.log1p(-p)


def _encode(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return {"ndarray": _encode(v.tolist()), "dtype": str(v.dtype), "shape": list(v.shape)}
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else {"float": repr(f)}
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _encode(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, str)):
        return v
    raise CalibrationInputError(f"cannot store a {type(v).__name__} in JSON: {v!r}")


def _decode(v: Any) -> Any:
    if isinstance(v, dict):
        if "ndarray" in v:
            return np.asarray(_decode(v["ndarray"]), dtype=v["dtype"]).reshape(v["shape"])
        if set(v) == {"float"}:
            return float(v["float"])
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def load_recalibrator(text: str, *, expected: type[Recalibrator] | None = None) -> Recalibrator:
    """Rebuild any registered recalibrator from the JSON of :meth:`Recalibrator.to_json`.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.5, 0.0]])
    >>> ts = cp.TemperatureScaling().fit(z, [0, 1, 1, 0], logits=True)
    >>> back = cp.load_recalibrator(ts.to_json())
    >>> bool(np.allclose(back.predict_proba(z, logits=True), ts.predict_proba(z, logits=True)))
    True
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise CalibrationInputError(f"not a calipers recalibrator JSON document: {e}") from None
    if not isinstance(doc, dict) or "calipers_recalibrator" not in doc:
        raise CalibrationInputError(
            "not a calipers recalibrator JSON document (no 'calipers_recalibrator' key)"
        )
    name = doc["calipers_recalibrator"]
    if name not in _REGISTRY:
        raise CalibrationInputError(f"unknown recalibrator {name!r}; known: {sorted(_REGISTRY)}")
    cls = _REGISTRY[name]
    if expected is not None and expected is not Recalibrator and not issubclass(cls, expected):
        raise CalibrationInputError(f"the document holds a {name}, not a {expected.__name__}")
    obj = cls(**{k: _decode(v) for k, v in doc.get("params", {}).items()})
    for k, v in doc.get("state", {}).items():
        if not k.endswith("_"):
            raise CalibrationInputError(f"fitted-state key {k!r} does not end in '_'")
        setattr(obj, k, _decode(v))
    state = vars(obj)
    if "logits_" in state and "input_kind_" not in state:  # written by calipers 0.1
        obj.input_kind_ = "logits" if state.pop("logits_") else "probs"
        obj.input_detected_ = False
    return obj
