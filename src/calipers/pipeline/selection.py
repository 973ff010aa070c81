"""Selection operators: which samples count (Kirchenbauer, Oaks & Heim (2022) §4.1).

A selection operator returns a boolean mask over the rows of a lensed slice.
Several operators given together are combined with AND. They act after the
lens (Kirchenbauer, Oaks & Heim's (2022) default ``preselection=False``), on the lensed scores, so an
interval on the top-label confidence is written ``ScoreInterval(0.9, 1.0)``.

* :class:`LabelSelection` — rows whose true label is in a set (``lambda_{y=c}``).
* :class:`ScoreInterval` — rows whose lensed score (column ``dim`` for vector
  lenses) lies in an interval (``lambda_{g(x) > 0.95}`` and Likert intervals).
* :func:`threshold` — scores strictly above ``eps``: the TACE rule of Nixon et
  al. (2019), whose code keeps entries ``> threshold`` (docs/how-calipers-computes.md §3.2).

Examples
--------
>>> import numpy as np
>>> from calipers.pipeline.lenses import LensSlice
>>> from calipers.pipeline.selection import ScoreInterval, threshold
>>> sl = LensSlice(np.array([0.005, 0.5, 0.95]), np.array([0., 1., 1.]), np.array([0, 1, 1]), None)
>>> threshold(0.01)(sl).tolist()
[False, True, True]
>>> ScoreInterval(0.9, 1.0)(sl).tolist()
[False, False, True]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .._backend import Array, is_torch
from ..validation import CalibrationInputError
from .lenses import LensSlice

__all__ = ["Selection", "LabelSelection", "ScoreInterval", "threshold", "combine"]

Selection = Callable[[LensSlice], Array]


@dataclass(frozen=True)
class LabelSelection:
    """Keep rows whose true label is one of ``classes`` (Kirchenbauer, Oaks & Heim (2022) §4.1, lambda_{y=c}).

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> P = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    >>> round(cp.calibration_error(P, [0, 1, 1], selection=cp.LabelSelection(1)), 6)  # rows 1, 2
    0.4
    """

    classes: tuple[int, ...]

    def __init__(self, classes: int | Iterable[int]) -> None:
        cs = (classes,) if isinstance(classes, int | np.integer) else tuple(int(c) for c in classes)
        object.__setattr__(self, "classes", cs)

    def __call__(self, sl: LensSlice) -> Array:
        if is_torch(sl.labels):
            import torch

            return torch.isin(sl.labels, torch.as_tensor(self.classes, device=sl.labels.device))
        return np.isin(sl.labels, self.classes)


@dataclass(frozen=True)
class ScoreInterval:
    """Keep rows whose lensed score lies in ``[low, high]`` (Kirchenbauer, Oaks & Heim (2022) §4.1, §4.3).

    Parameters
    ----------
    low, high : float
        Interval bounds.
    closed : {"both", "left", "right", "neither"}, default "both"
        Which bounds are included (Kirchenbauer, Oaks & Heim (2022) selects ``g >= l`` and ``g <= h``).
    dim : int, default 0
        Column of a vector lens to test (0 = the top probability of ``top_k``).

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> P = np.array([[0.95, 0.05], [0.6, 0.4], [0.99, 0.01]])
    >>> # rows 0 and 2 share the last bin: |mean conf .97 - accuracy .5|
    >>> round(cp.calibration_error(P, [0, 1, 1], selection=cp.ScoreInterval(0.9, 1.0)), 6)
    0.47
    """

    low: float
    high: float
    closed: Literal["both", "left", "right", "neither"] = "both"
    dim: int = 0

    def __post_init__(self) -> None:
        if not self.low <= self.high:
            raise CalibrationInputError(
                f"interval needs low <= high; got [{self.low}, {self.high}]"
            )
        if self.closed not in ("both", "left", "right", "neither"):
            raise CalibrationInputError(
                f"closed must be 'both', 'left', 'right' or 'neither'; got {self.closed!r}"
            )

    def __call__(self, sl: LensSlice) -> Array:
        s = sl.scores if sl.scores.ndim == 1 else sl.scores[:, self.dim]
        lo_ok = s >= self.low if self.closed in ("both", "left") else s > self.low
        hi_ok = s <= self.high if self.closed in ("both", "right") else s < self.high
        return lo_ok & hi_ok


def threshold(eps: float = 0.01) -> ScoreInterval:
    """Scores strictly greater than ``eps`` (TACE; Nixon et al. 2019, code default 0.01).

    ``eps`` must lie in ``[0, 1)``: a negative threshold would keep everything
    silently, one of 1 or more would keep nothing.

    Examples
    --------
    >>> from calipers import threshold
    >>> threshold(0.01)
    ScoreInterval(low=0.01, high=inf, closed='right', dim=0)
    """
    real = isinstance(eps, (int, float, np.integer, np.floating)) and not isinstance(
        eps, (bool, np.bool_)
    )
    if not (real and 0.0 <= float(eps) < 1.0):
        raise CalibrationInputError(
            f"threshold must be a number in [0, 1) (probabilities above it are kept); got {eps!r}"
        )
    return ScoreInterval(float(eps), float("inf"), closed="right")


def combine(selections: Selection | Iterable[Selection] | None) -> Selection | None:
    """AND of several selection operators (None when there are none).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.pipeline.lenses import LensSlice
    >>> from calipers.pipeline.selection import LabelSelection, ScoreInterval, combine
    >>> sl = LensSlice(np.array([0.3, 0.8, 0.9]), np.zeros(3), np.array([0, 0, 1]), None)
    >>> combine([ScoreInterval(0.5, 1.0), LabelSelection(0)])(sl).tolist()
    [False, True, False]
    """
    if selections is None:
        return None
    if callable(selections):
        return selections
    sels = list(selections)
    if not sels:
        return None

    def both(sl: LensSlice) -> Array:
        m = sels[0](sl)
        for s in sels[1:]:
            m = m & s(sl)
        return m

    return both
