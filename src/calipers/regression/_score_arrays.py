"""Array checks shared by the scores of quantiles, samples, intervals and point forecasts.

Every score of :mod:`calipers.regression.crps_estimators`,
:mod:`calipers.regression.consistent_scores` and
:mod:`calipers.regression._interval_score` reads its arrays here: NumPy arrays,
array-likes and PyTorch tensors (any device, moved to the CPU) become float64
NumPy arrays; anything else is refused with a :class:`CalibrationInputError`
that names the argument and the first offending row (and column) and value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._backend import is_torch
from ..validation import CalibrationInputError, check_sample_weight


def as_float_array(x: Any, name: str, ndim: int) -> np.ndarray:
    """``x`` as a finite float64 NumPy array with ``ndim`` dimensions, or a message naming ``name``."""
    if is_torch(x):
        x = x.detach().cpu()
        if x.dtype.is_floating_point and x.dtype.itemsize < 4:  # float16 / bfloat16
            x = x.float()
        x = x.numpy()
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise CalibrationInputError(f"{name} could not be read as an array: {exc}") from None
    if arr.dtype.kind not in "iuf" and arr.dtype != np.bool_:
        raise CalibrationInputError(
            f"{name} must hold real numbers (integer or float); got dtype {arr.dtype}"
        )
    if arr.ndim != ndim:
        what = "1-D (one value per row)" if ndim == 1 else "2-D (rows x columns)"
        raise CalibrationInputError(f"{name} must be {what}; got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise CalibrationInputError(f"{name} must hold at least one row; got shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        bad = ~np.isfinite(arr)
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f"row {idx[0]}" if ndim == 1 else f"row {idx[0]}, column {idx[1]}"
        raise CalibrationInputError(f"{name} must be finite; {where} is {float(arr[idx])!r}")
    return arr


def same_rows(arr: np.ndarray, name: str, n: int, rows_of: str) -> None:
    """Refuse ``arr`` unless it has ``n`` rows, like ``rows_of``."""
    if arr.shape[0] != n:
        raise CalibrationInputError(
            f"{name} has {arr.shape[0]} rows but {rows_of} has {n}; give one per row"
        )


def as_level(level: Any, name: str = "level") -> float:
    """A probability level strictly inside (0, 1), as a float."""
    try:
        value = float(level)
    except (TypeError, ValueError):
        raise CalibrationInputError(f"{name} must be a number in (0, 1); got {level!r}") from None
    if not 0.0 < value < 1.0:
        raise CalibrationInputError(f"{name} must lie strictly inside (0, 1); got {level!r}")
    return value


def as_levels(levels: Any, name: str = "levels") -> np.ndarray:
    """Probability levels ``(m,)``, strictly inside (0, 1) and strictly increasing."""
    arr = as_float_array(levels, name, 1)
    bad = ~((arr > 0.0) & (arr < 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"{name} must lie strictly inside (0, 1); entry {i} is {float(arr[i])!r}"
        )
    if arr.size > 1:
        step = np.diff(arr)
        if not (step > 0).all():
            i = int(np.flatnonzero(~(step > 0))[0])
            raise CalibrationInputError(
                f"{name} must be strictly increasing; entry {i + 1} ({float(arr[i + 1])!r}) "
                f"does not exceed entry {i} ({float(arr[i])!r})"
            )
    return arr


def weighted_mean(values: np.ndarray, sample_weight: Any, rows_of: str) -> float:
    """Mean of per-row ``values`` under checked row weights (the plain mean without weights)."""
    w = check_sample_weight(sample_weight, int(values.shape[0]), rows_of=rows_of)
    if w is None:
        return float(np.mean(values))
    return float(np.dot(w, values) / np.sum(w))


def finite_rows(
    out: np.ndarray,
    compute: Callable[..., np.ndarray],
    scaled: tuple[np.ndarray, ...],
    fixed: tuple[np.ndarray, ...] = (),
    *,
    headroom: float,
) -> np.ndarray:
    """Recompute the rows where a degree-1 homogeneous score overflowed, on scaled inputs.

    The scores of this package that are linear in the units of the target (the
    CRPS of ensembles and quantile sets, interval and pinball scores) satisfy
    ``S(c x, c y) = c S(x, y)`` for ``c > 0``. Where an intermediate (a
    difference, a sum of ``k`` terms) overflows although the score itself is
    representable, the row comes out NaN or infinite; those rows, and only
    those, are recomputed on the inputs times ``2**-e`` (exact) and the result
    multiplied by ``2**e``. Every finite row is returned bit for bit; a score
    whose true value exceeds the float range is ``inf``, never NaN.

    ``compute(*scaled_rows, *fixed_rows)`` computes the score of a subset of
    rows: ``scaled`` are the row-aligned inputs in target units, ``fixed`` the
    row-aligned inputs without units (weights), passed unscaled; ``headroom``
    bounds the factor by which an intermediate may exceed the largest input.
    """
    bad = ~np.isfinite(out)
    if not bad.any():
        return out
    rows = np.flatnonzero(bad)
    sub = tuple(a[rows] for a in scaled)
    biggest = max(float(np.max(np.abs(a))) for a in sub)
    e = max(0, math.ceil(math.log2(biggest) + math.log2(headroom)) - 1000)
    with np.errstate(over="ignore", invalid="ignore"):
        again = compute(*(np.ldexp(a, -e) for a in sub), *(a[rows] for a in fixed))
        out = out.copy()
        out[rows] = np.ldexp(again, e)
    return out
