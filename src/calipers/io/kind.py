"""Probabilities or logits: given by the caller, or detected from the values of a bare array.

A bare array (a tensor in a ``.pt`` file, an unnamed Parquet list column) carries
no name that says what it holds. Unless ``logits=`` says it, its kind is read from
its values by the rule of the recalibrators (:mod:`calipers.validation`), so an
array read from a file and the same array in memory are read alike; values that
could be either raise :class:`~calipers.io.PredictionFileError`.
"""

from __future__ import annotations

import numpy as np

from .checks import _shape_error
from .prediction_file import Kind, _err, _Read


def _flag_kind(logits: bool) -> Kind:
    return "logits" if logits else "probs"


def _detect_kind(arr: np.ndarray, where: str, eps: float | None = None) -> tuple[Kind, str]:
    """Probabilities or logits from the values of a bare array, only when unambiguous.

    The rule of the recalibrators (:func:`calipers.validation` ``_read_kind``),
    so a file and an array in memory are read alike: probabilities when every
    row lies on the simplex (within the default ``sum_tol`` of
    :func:`calipers.check_predictions`, honest rounding of printed decimals
    included); logits when some entry is below -0.5 and at most half of the
    rows sum to 1 (no probability is that negative); otherwise a
    :class:`PredictionFileError` saying why both readings are possible
    (e.g. probabilities scaled by 1.01, percentages, one-vs-rest outputs).
    ``eps`` is the machine epsilon of the stored dtype (taken from ``arr``
    when None).
    """
    from ..validation import CalibrationInputError, _read_kind

    if arr.ndim not in (1, 2):
        raise _shape_error(where, arr.shape)
    if eps is None:
        eps = float(np.finfo(arr.dtype if arr.dtype.kind == "f" else np.float64).eps)
    a = arr if arr.dtype in (np.float32, np.float64) else np.asarray(arr, dtype=np.float64)
    pass_hint = "pass logits=True or logits=False (on the command line --logits or --probs)"
    what = f"{where}: cannot tell whether the {arr.shape} array holds probabilities or logits"
    if a.size == 0:
        raise _err(f"{what}: it is empty; {pass_hint}")
    try:
        kind, why = _read_kind(a, eps)
    except CalibrationInputError as exc:  # a NaN or an infinity
        raise _err(f"{what}: {exc}; {pass_hint}") from None
    if kind is None:
        raise _err(f"{what}: {why}; {pass_hint}")
    if kind == "probs":
        if a.ndim == 1:
            why += ", read as P(y = 1) of a binary problem"
        return "probs", (
            f"detected as probabilities from the values: {why}; pass logits=True "
            "(--logits) if they are logits"
        )
    return "logits", (
        f"detected as logits from the values: {why}; pass logits=False (--probs) if they "
        "are probabilities"
    )


def _bare(arr: np.ndarray, where: str, logits: bool | None, desc: str, eps: float | None) -> _Read:
    """A bare array: the kind from ``logits`` when given, else detected from the values."""
    if logits is not None:
        kind = _flag_kind(logits)
        return _Read(arr, kind, None, f"{desc} given as {kind}", "argument")
    kind, why = _detect_kind(arr, where, eps)
    return _Read(arr, kind, None, f"{desc} {why}", "values")
