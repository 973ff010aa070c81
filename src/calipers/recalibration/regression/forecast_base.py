"""One contract for the recalibrators of point forecasts and prediction intervals.

The recalibrators of :mod:`calipers.recalibration.regression.base` map one
predictive distribution to another. The methods here take other inputs: a
point forecast per row (split conformal intervals, Vovk, Gammerman & Shafer
2005; Lei et al. 2018; isotonic recalibration of a functional, Gneiting &
Resin 2023), or a pair of predicted quantiles (conformalized quantile
regression, Romano, Patterson & Candès 2019). They share the rest of the
recalibrator contract:

* constructor arguments are the hyper-parameters (``get_params`` /
  ``set_params`` / ``repr`` read them from the signature, so
  :func:`sklearn.base.clone` works); fitted state lives in attributes ending
  in ``_``; :class:`~calipers.recalibration.NotFittedError` before ``fit``;
  ``fit`` returns ``self`` and a failed refit leaves no half-fitted state;
* inputs are NumPy arrays or torch tensors, checked with messages naming the
  argument and the row; outputs come back as tensors on the input's device
  when the inputs are tensors;
* ``to_json`` / ``from_json`` / ``save`` / ``load`` write and read the JSON
  document of every calipers recalibrator (``{"calipers_recalibrator",
  "format", "params", "state"}``, no pickle), checked against the method's
  declared ``schema`` when a file is loaded, after ``fit``, before ``to_json``
  and before every prediction; :func:`calipers.load_recalibrator` reads them
  through the one registry.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import numpy as np

from ..._backend import is_torch
from ...validation import CalibrationInputError, check_sample_weight
from .. import _registry
from .._params import Parameters
from .._persistence import _encode, read_document_file
from .._schema import (
    FORMAT,
    MAX_DOCUMENT_BYTES,
    Schema,
    _show,
    check_document,
    check_fields,
    check_registrable,
    parse_document,
    run_checks,
)
from ..base import _not_fitted

__all__ = ["ForecastRecalibrator", "register_forecast"]

_T = TypeVar("_T", bound="ForecastRecalibrator")


def register_forecast(cls: type[_T]) -> type[_T]:
    """Class decorator: make a forecast recalibrator loadable from JSON.

    The class must declare its ``schema`` with exactly its constructor
    parameters (the declaration its files are checked against); it is then
    found by :func:`calipers.load_recalibrator` under its class name.

    Examples
    --------
    >>> from calipers.recalibration.regression import ForecastRecalibrator, register_forecast
    >>> class Nothing(ForecastRecalibrator):
    ...     pass
    >>> register_forecast(Nothing)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: register_forecast: Nothing declares no schema ...
    """
    check_registrable(cls, ForecastRecalibrator, "register_forecast")
    _registry.add(cls)
    return cls


def as_vector(x: Any, name: str, n: int | None = None, *, rows_of: str = "") -> np.ndarray:
    """``x`` as a 1-D finite float64 NumPy array (a tensor is copied to the CPU).

    ``n``: the number of rows it must have (those of ``rows_of``). Anything
    else raises a :class:`CalibrationInputError` naming ``name`` and the
    first offending row; nothing is clipped or converted silently.
    """
    if is_torch(x):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"{name} could not be read as an array: {exc}") from None
    if arr.dtype.kind not in "iuf":
        raise CalibrationInputError(
            f"{name} must hold real numbers (integer or float); got dtype {arr.dtype}"
        )
    if arr.ndim != 1:
        raise CalibrationInputError(
            f"{name} must be 1-D (one value per row); got shape {arr.shape}"
        )
    if n is not None and arr.shape[0] != n:
        raise CalibrationInputError(
            f"{name} has {arr.shape[0]} rows but {rows_of} has {n}; they must have the same length"
        )
    if arr.shape[0] == 0:
        raise CalibrationInputError(f"{name} is empty; at least one row is needed")
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(f"{name} must be finite; row {i} is {float(arr[i])!r}")
    return arr


def as_weights(sample_weight: Any, n: int, rows_of: str) -> np.ndarray:
    """Row weights as float64 (ones when None), through the one weight check of calipers."""
    w = check_sample_weight(sample_weight, n, rows_of=rows_of)
    return np.ones(n) if w is None else w


def first_tensor(*given: Any) -> Any:
    """The first torch tensor among ``given`` (None when there is none)."""
    return next((a for a in given if is_torch(a)), None)


class ForecastRecalibrator(Parameters):
    """Base class of the recalibrators of point forecasts and prediction intervals.

    See the module docstring for the contract. Subclasses declare ``schema``
    (parameters and fitted fields, :mod:`calipers.recalibration._schema`),
    are registered with :func:`register_forecast`, and implement ``fit`` (which
    calls :meth:`_start_fit` first and :meth:`_end_fit` last) and their
    predictions (which call :meth:`_ready` first).

    Examples
    --------
    >>> from calipers.recalibration.regression import ForecastRecalibrator, SplitConformal
    >>> isinstance(SplitConformal(), ForecastRecalibrator)
    True
    """

    schema: ClassVar[Schema] = Schema()
    #: What ``fit`` needs, for the message of an unfitted recalibrator.
    _fit_call: ClassVar[str] = "fit(...)"

    # ------------------------------------------------------------------ state

    def _is_fitted(self) -> bool:
        return all(hasattr(self, k) for k in self.schema.state)

    def _start_fit(self) -> None:
        """Check the parameters and forget any earlier fit (a failed refit leaves none)."""
        self._check_params(f"{type(self).__name__}.fit")
        for key in self.schema.state:
            self.__dict__.pop(key, None)

    def _end_fit(self) -> None:
        self._check_state(f"{type(self).__name__}.fit produced an invalid state")

    def _ready(self) -> None:
        """Raise NotFittedError before ``fit``; check the fitted state against the schema."""
        name = type(self).__name__
        if not self._is_fitted():
            raise _not_fitted(f"this {name} is not fitted yet; call {self._fit_call} first")
        self._check_state(f"{name} has an invalid fitted state")

    def _check_params(self, where: str) -> dict[str, Any]:
        params = check_fields(
            self.schema.params, self.get_params(), where, "parameter", allow_extra=True
        )
        run_checks(self.schema.param_checks, params, where)
        return params

    def _check_state(self, where: str) -> None:
        params = self._check_params(where)
        values = {k: getattr(self, k) for k in self.schema.state if hasattr(self, k)}
        state = check_fields(self.schema.state, values, where, "field", params)
        run_checks(self.schema.state_checks, {**params, **state}, where)

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> str:
        """JSON text with the class, its parameters and its fitted state (no pickle).

        Checked against the method's schema first; an unfitted recalibrator is
        written with an empty state.

        Examples
        --------
        >>> import json
        >>> from calipers.recalibration.regression import SplitConformal
        >>> doc = json.loads(SplitConformal().fit([0.0, 0.0], [1.0, -3.0]).to_json())
        >>> doc["calipers_recalibrator"], doc["params"], doc["state"]["scores_"]["ndarray"]
        ('SplitConformal', {'level': 0.9}, [1.0, 3.0])
        """
        name = type(self).__name__
        if type(self).schema is ForecastRecalibrator.schema:
            raise CalibrationInputError(
                f"{name} cannot be saved: it declares no schema of its parameters and fitted state"
            )
        fitted = self._is_fitted()
        if fitted:
            self._check_state(f"{name} cannot be saved")
        else:
            self._check_params(f"{name} cannot be saved")
        state = {k: getattr(self, k) for k in self.schema.state} if fitted else {}
        return json.dumps(
            {
                "calipers_recalibrator": name,
                "format": FORMAT,
                "params": {k: _encode(v) for k, v in self.get_params().items()},
                "state": {k: _encode(v) for k, v in state.items()},
            },
            allow_nan=False,
        )

    @classmethod
    def _from_document(cls: type[_T], doc: dict[str, Any]) -> _T:
        """The recalibrator a parsed document of this class describes, every field checked."""
        where = f"{cls.__name__} file"
        check_document(doc, where, (FORMAT,))
        params = check_fields(cls.schema.params, doc["params"], where, "parameter")
        run_checks(cls.schema.param_checks, params, where)
        obj = cls(**params)
        state_doc: Mapping[str, Any] = doc["state"]
        if state_doc:  # an empty state is an unfitted recalibrator
            state = check_fields(cls.schema.state, state_doc, where, "field", params)
            run_checks(cls.schema.state_checks, {**params, **state}, where)
            for key, value in state.items():
                setattr(obj, key, value)
        return obj

    @classmethod
    def from_json(cls: type[_T], text: str | bytes, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> _T:
        """Rebuild a recalibrator written by :meth:`to_json`; the document must hold this class.

        Every parameter and fitted field is checked against the declared
        schema; anything else raises
        :class:`~calipers.validation.CalibrationInputError` naming the field.

        Examples
        --------
        >>> from calipers.recalibration.regression import SplitConformal
        >>> text = SplitConformal(level=0.8).fit([0.0, 1.0], [0.5, 3.0]).to_json()
        >>> SplitConformal.from_json(text).scores_
        array([0.5, 2. ])
        >>> SplitConformal.from_json(text.replace("0.8", "1.8"))
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: SplitConformal file: parameter 'level' must be a finite number in (0, 1); got 1.8
        """
        doc = parse_document(text, max_bytes)
        if not isinstance(doc, dict) or "calipers_recalibrator" not in doc:
            raise CalibrationInputError(
                "not a calipers recalibrator JSON document (no 'calipers_recalibrator' key)"
            )
        name = doc["calipers_recalibrator"]
        found = _registry.lookup(name)
        if found is None:
            raise CalibrationInputError(
                f"unknown recalibrator {_show(name)}; known: {_registry.names()}"
            )
        if not issubclass(found, cls):
            raise CalibrationInputError(f"the document holds a {name}, not a {cls.__name__}")
        out: _T = found._from_document(doc)
        return out

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path`` atomically (:func:`calipers.io.output.write_atomic`)."""
        from ...io.output import write_atomic

        write_atomic(os.fspath(path), self.to_json())

    @classmethod
    def load(
        cls: type[_T], path: str | os.PathLike[str], *, max_bytes: int = MAX_DOCUMENT_BYTES
    ) -> _T:
        """Read a recalibrator saved with :meth:`save` (checked as :meth:`from_json`).

        Examples
        --------
        >>> import os, tempfile
        >>> from calipers.recalibration.regression import SplitConformal
        >>> path = os.path.join(tempfile.mkdtemp(), "sc.json")
        >>> SplitConformal().fit([0.0, 0.0, 0.0], [1.0, -2.0, 3.0]).save(path)
        >>> SplitConformal.load(path).scores_
        array([1., 2., 3.])
        """
        return cls.from_json(read_document_file(path, max_bytes), max_bytes=max_bytes)
