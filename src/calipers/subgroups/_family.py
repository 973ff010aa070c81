"""The family of subgroups an audit looks at: labels, attribute intersections, masks, thresholds.

Every public function of :mod:`calipers.subgroups` takes the same four ways of
naming groups of rows, and any of them together:

* ``groups``: one label per row; one group per distinct label (disjoint);
* ``attributes``: several protected attributes (a mapping name -> one value
  per row, or a pandas DataFrame); the groups are their intersections (every
  combination of values that occurs, ``"sex=F & race=B"``), and with
  ``combine="both"`` also each attribute's own groups (``"sex=F"``);
* ``masks``: a mapping name -> boolean mask (any groups, overlapping or not);
* ``features``: numeric features (a mapping name -> values, or a DataFrame);
  for each feature and each of ``n_thresholds`` quantile thresholds ``t`` the
  two groups ``x <= t`` and ``x > t`` (the threshold family of
  Hébert-Johnson, Kim, Reingold & Rothblum 2018's computationally
  identifiable sets, at its simplest).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from .._backend import is_torch
from ..validation import CalibrationInputError, check_integer

__all__ = ["Family", "build_family", "COMBINE"]

#: How ``attributes`` become groups.
COMBINE = ("intersections", "marginals", "both")


@dataclass(frozen=True)
class Family:
    """Named groups of rows: ``names[j]`` holds the rows ``rows[j]`` (sorted indices).

    ``skipped`` lists ``(name, size)`` of the groups left out for having fewer
    than ``min_size`` rows.
    """

    names: list[Any]
    rows: list[np.ndarray]
    skipped: list[tuple[Any, int]]


def _column(values: Any, n: int, where: str) -> np.ndarray:
    if is_torch(values):
        values = values.detach().cpu().numpy()
    a = np.asarray(values)
    if a.ndim != 1 or a.shape[0] != n:
        raise CalibrationInputError(
            f"{where} must hold one value per row of probs, shape ({n},); got shape {a.shape}"
        )
    return a


def _columns(values: Any, n: int, arg: str) -> list[tuple[str, np.ndarray]]:
    """(name, column) pairs of a mapping, a DataFrame, or an (n, d) / (n,) array."""
    if hasattr(values, "columns") and hasattr(values, "__getitem__"):  # a pandas DataFrame
        return [
            (str(c), _column(np.asarray(values[c]), n, f"{arg}[{c!r}]")) for c in values.columns
        ]
    if isinstance(values, Mapping):
        if not values:
            raise CalibrationInputError(f"{arg} is empty; give at least one column")
        return [(str(k), _column(v, n, f"{arg}[{k!r}]")) for k, v in values.items()]
    if is_torch(values):
        values = values.detach().cpu().numpy()
    a = np.asarray(values)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] != n:
        raise CalibrationInputError(
            f"{arg} must be a mapping of columns, a DataFrame or an (n, d) array with "
            f"n = {n} rows; got shape {a.shape}"
        )
    return [(f"x{j}", a[:, j]) for j in range(a.shape[1])]


def _by_label(col: np.ndarray) -> list[tuple[Any, np.ndarray]]:
    try:
        uniq, inverse = np.unique(col, return_inverse=True)
    except TypeError:
        raise CalibrationInputError(
            "group labels must be sortable values of one type (numbers or strings); got "
            f"{sorted({type(v).__name__ for v in col.tolist()})}"
        ) from None
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    cuts = np.searchsorted(inverse[order], np.arange(uniq.shape[0] + 1))
    return [(label, np.sort(order[cuts[j] : cuts[j + 1]])) for j, label in enumerate(uniq.tolist())]


def _label_text(v: Any) -> str:
    return str(v)


def build_family(
    n: int,
    *,
    groups: Any = None,
    attributes: Any = None,
    masks: Any = None,
    features: Any = None,
    n_thresholds: int = 4,
    combine: str = "intersections",
    min_size: int = 10,
) -> Family:
    """The named groups of the four kinds of group arguments (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> f = build_family(6, attributes={"a": [0, 0, 0, 1, 1, 1], "b": list("xyxyxy")},
    ...                  combine="both", min_size=1)
    >>> f.names
    ['a=0', 'a=1', 'b=x', 'b=y', 'a=0 & b=x', 'a=0 & b=y', 'a=1 & b=x', 'a=1 & b=y']
    >>> f.rows[4].tolist()
    [0, 2]
    >>> build_family(4, features={"age": [20, 30, 40, 50]}, n_thresholds=1, min_size=1).names
    ['age <= 30', 'age > 30']
    """
    m = check_integer(min_size, "min_size", minimum=1)
    if combine not in COMBINE:
        raise CalibrationInputError(
            f"combine must be one of {', '.join(repr(c) for c in COMBINE)}; got {combine!r}"
        )
    if groups is None and attributes is None and masks is None and features is None:
        raise CalibrationInputError(
            "name the groups: give groups= (a label per row), attributes= (protected "
            "attributes, intersected), masks= (named boolean masks) or features= (numeric "
            "features cut at quantile thresholds)"
        )
    found: list[tuple[Any, np.ndarray]] = []
    if groups is not None:
        found.extend(_by_label(_column(groups, n, "groups")))
    if attributes is not None:
        cols = _columns(attributes, n, "attributes")
        per = [[(f"{name}={_label_text(v)}", rows) for v, rows in _by_label(c)] for name, c in cols]
        if combine in ("marginals", "both"):
            for p in per:
                found.extend(p)
        if combine in ("intersections", "both"):
            orders = [len(cols)] if combine == "intersections" else range(2, len(cols) + 1)
            for k in orders:
                for subset in combinations(range(len(cols)), k):
                    cells: list[tuple[str, np.ndarray]] = [("", np.arange(n))]
                    for a in subset:
                        cells = [
                            (f"{name} & {nm}" if name else nm, np.intersect1d(rows, r2))
                            for name, rows in cells
                            for nm, r2 in per[a]
                        ]
                        cells = [(name, rows) for name, rows in cells if rows.shape[0]]
                    found.extend(cells)
    if masks is not None:
        if not isinstance(masks, Mapping) or not masks:
            raise CalibrationInputError(
                "masks must be a non-empty mapping name -> boolean mask of the rows"
            )
        for name, mask in masks.items():
            mk = _column(mask, n, f"masks[{name!r}]")
            if mk.dtype != bool:
                raise CalibrationInputError(
                    f"masks[{name!r}] must be booleans (True: the row is in the group); "
                    f"got dtype {mk.dtype}"
                )
            rows = np.flatnonzero(mk)
            if rows.shape[0] == 0:
                raise CalibrationInputError(f"masks[{name!r}] selects no row: the group is empty")
            found.append((name, rows))
    if features is not None:
        k = check_integer(n_thresholds, "n_thresholds", minimum=1, maximum=1000)
        for name, col in _columns(features, n, "features"):
            if col.dtype.kind not in "iufb":
                raise CalibrationInputError(
                    f"features[{name!r}] must be numbers; got dtype {col.dtype}"
                )
            x = col.astype(np.float64)
            bad = ~np.isfinite(x)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise CalibrationInputError(
                    f"features[{name!r}] must be finite; row {i} is {x[i]!r}"
                )
            # thresholds: the quantiles j / (k + 1), j = 1..k (numpy's "lower" method: a
            # value of the data), each used once; a threshold that leaves one side empty
            # (the largest value) names no group
            qs = np.quantile(x, np.arange(1, k + 1) / (k + 1), method="lower")
            for t in np.unique(qs):
                below = np.flatnonzero(x <= t)
                above = np.flatnonzero(x > t)
                if below.shape[0] and above.shape[0]:
                    tt = f"{t:g}"
                    found.append((f"{name} <= {tt}", below))
                    found.append((f"{name} > {tt}", above))
    names: list[Any] = []
    rows_out: list[np.ndarray] = []
    skipped: list[tuple[Any, int]] = []
    for name, rows in found:
        if rows.shape[0] >= m:
            names.append(name)
            rows_out.append(rows)
        else:
            skipped.append((name, int(rows.shape[0])))
    if not names:
        said = ", ".join(f"{nm!r}: {sz}" for nm, sz in skipped[:5])
        raise CalibrationInputError(
            f"no group has min_size = {m} rows or more (sizes {said}"
            f"{', ...' if len(skipped) > 5 else ''}); lower min_size or use larger groups"
        )
    return Family(names=names, rows=rows_out, skipped=skipped)
