"""Checks of every array a reader found: plain numbers, and the shape of predictions.

Nothing in :mod:`calipers.io` is unpickled, so an array of Python objects (one
NumPy could only store with pickle) or a structured array is refused here, with
a message saying how to save plain numeric arrays. The value checks (rows on the
simplex, labels in range) are not made here but by
:func:`calipers.check_predictions`.
"""

from __future__ import annotations

import numpy as np

from .prediction_file import PredictionFileError, _err

_PICKLE_HINT = (
    "calipers never unpickles files; save plain numeric arrays instead, e.g. "
    "np.savez(path, probs=np.asarray(probs, dtype=float), labels=np.asarray(labels, dtype=int))"
)


def _check_numeric(arr: np.ndarray, what: str, where: str) -> np.ndarray:
    if arr.dtype == object:
        raise _err(f"{where}: {what} contains Python objects; {_PICKLE_HINT}")
    if arr.dtype.names is not None:
        raise _err(
            f"{where}: {what} is a structured array with fields {list(arr.dtype.names)}; "
            "store each field as its own plain numeric array"
        )
    if arr.dtype.kind not in "biuf":
        raise _err(
            f"{where}: {what} must be numeric; got dtype {arr.dtype}. "
            "Store class indices as integers and probabilities as floats"
        )
    return arr


def _shape_error(where: str, shape: tuple[int, ...]) -> PredictionFileError:
    return _err(
        f"{where}: the predictions have shape {shape}; expected (n, k) for k classes "
        "or (n,) holding P(y = 1) for a binary problem"
    )
