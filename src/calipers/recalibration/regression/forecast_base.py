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

from typing import Any, TypeVar

import numpy as np

from ..._backend import is_torch
from ...regression.inputs import _as_1d_float
from ...validation import CalibrationInputError, check_sample_weight
from .. import _registry
from .._schema import (
    check_registrable,
)
from ._schema_document import SchemaDocument

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
    arr = _as_1d_float(x, name)
    if n is not None and arr.shape[0] != n:
        raise CalibrationInputError(
            f"{name} has {arr.shape[0]} rows but {rows_of} has {n}; they must have the same length"
        )
    if arr.shape[0] == 0:
        raise CalibrationInputError(f"{name} is empty; at least one row is needed")
    return arr


def as_weights(sample_weight: Any, n: int, rows_of: str) -> np.ndarray:
    """Row weights as float64 (ones when None), through the one weight check of calipers."""
    w = check_sample_weight(sample_weight, n, rows_of=rows_of)
    return np.ones(n) if w is None else w


def first_tensor(*given: Any) -> Any:
    """The first torch tensor among ``given`` (None when there is none)."""
    return next((a for a in given if is_torch(a)), None)


class ForecastRecalibrator(SchemaDocument):
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
