"""The noise level of calibration within groups: labels drawn from the predictions.

Under the null hypothesis that the model is calibrated, a label is a draw from
its own prediction (consistency resampling, Bröcker & Smith 2007; Vaicenavicius
et al. 2019; :func:`calipers.consistency_test` with
``resample_predictions=False``). Drawing every row's label at once and
recomputing the error of every group on the same draw gives, per draw, the
errors a perfectly calibrated model with these very predictions would show in
each group at its size, and their maximum over the family of groups: the noise
level of the worst group (Hébert-Johnson et al. 2018's audit over a family
needs the maximum, not one group's level).

Two evaluators of a metric on a family of groups:

* the generic one calls the metric on each group's rows (any calipers metric,
  or a function of your own);
* the fast one, for the equal-width binned L1 errors (``ece``), sums the
  residuals ``w (t - s)`` of every (group, bin) cell for a batch of draws at
  once (``numpy.add.reduceat`` over the rows sorted by cell). It is used only
  after it reproduced the metric's value of every group on the data (relative
  difference at most 1e-9), so it can never change a number.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ..inference._resampling import numpy_predictions
from ..inference.calibration_test import _draw_labels
from ..metrics import registry
from ..pipeline.lenses import lens_arrays
from ..validation import CalibrationInputError, Predictions

__all__ = [
    "GroupMetric",
    "CellSums",
    "resolve_metric",
    "subset",
    "monte_carlo_p_value",
    "null_generator",
]

#: Entries of a (draws, rows) batch (2**22 float64 = 32 MiB).
BATCH_ENTRIES = 1 << 22

#: Relative tolerance of the check of the fast evaluator against the metric.
CHECK_RTOL = 1e-9


def resolve_metric(metric: Any) -> tuple[Callable[..., Any], str]:
    """``(function, name)`` of a registered metric name or a callable."""
    if isinstance(metric, str):
        spec = registry.get(metric)
        return spec.function, spec.name
    if callable(metric):
        row = registry.of_function(metric)
        return metric, row.name if row is not None else getattr(metric, "__name__", "metric")
    raise CalibrationInputError(
        f"metric must be the name of a calipers metric ('ece', 'ace', 'smece', ...) or a "
        f"function metric(probs, labels, sample_weight=...) -> float; got {metric!r}"
    )


def subset(P: Predictions, rows: np.ndarray) -> Predictions:
    """The rows ``rows`` of validated NumPy predictions (no second validation)."""
    return dataclasses.replace(
        P,
        probs=P.probs[rows],
        labels=P.labels[rows],
        sample_weight=None if P.sample_weight is None else P.sample_weight[rows],
        logits=None if P.logits is None else P.logits[rows],
        _top=None,
    )


def null_generator(seed: int | None) -> np.random.Generator:
    """The generator of the label draws: ``numpy.random.default_rng([seed, 1])``.

    A stream apart from ``numpy.random.default_rng(seed)``, which the caller's own
    predictions often come from: drawing labels with the very uniforms that made
    the predictions would correlate them with the predictions.
    """
    return np.random.default_rng(None if seed is None else [int(seed), 1])


def monte_carlo_p_value(observed: float, null: np.ndarray) -> float:
    """``(1 + #{T* >= T}) / (1 + B)``; values within 1e-12 (relative) of T count as ties."""
    tol = 1e-12 * max(1.0, abs(observed))
    return float((1 + np.count_nonzero(null >= observed - tol)) / (1 + null.shape[0]))


class CellSums:
    """Sums of ``w (t - s)`` over every (group, score bin) cell, for batches of targets.

    ``rows[j]`` are the rows of group ``j`` and ``bins`` the score bin of every row
    (``n_bins`` of them); only non-empty cells are kept, ordered by group then bin.
    The groups are dealt into layers of disjoint groups (labels are one layer, the
    whole population another, each threshold's two sides one more), so that a
    draw costs one ``numpy.bincount`` of the ``n`` rows per layer, whatever the
    groups' sizes: every cell lies in one layer.
    """

    def __init__(
        self, rows: list[np.ndarray], bins: np.ndarray, n_bins: int, s: np.ndarray, w: np.ndarray
    ) -> None:
        n = s.shape[0]
        cell_group, cell_bin, first = [], [], []
        row_cells = []
        total = 0
        for j, r in enumerate(rows):
            b = bins[r]
            present, local = np.unique(b, return_inverse=True)
            first.append(total)
            cell_group.append(np.full(present.shape[0], j))
            cell_bin.append(present)
            row_cells.append(total + local.reshape(-1))
            total += present.shape[0]
        self.n_cells = total
        self.cell_group = np.concatenate(cell_group)
        self.cell_bin = np.concatenate(cell_bin).astype(np.int64)
        # deal the groups into layers of disjoint groups (first layer with room)
        layers: list[np.ndarray] = []
        occupied: list[np.ndarray] = []
        for r, rc in zip(rows, row_cells, strict=True):
            for L, occ in zip(layers, occupied, strict=True):
                if not occ[r].any():
                    L[r] = rc
                    occ[r] = True
                    break
            else:
                L = np.full(n, total, dtype=np.int64)  # ``total``: the bin of rows in no group
                L[r] = rc
                occ = np.zeros(n, dtype=bool)
                occ[r] = True
                layers.append(L)
                occupied.append(occ)
        self.layers = layers
        self.cell_count = self._sum(np.ones(n))
        self.cell_weight = self._sum(w)
        self.cell_score = self._sum(w * s)
        self.group_starts = np.flatnonzero(np.r_[True, self.cell_group[1:] != self.cell_group[:-1]])
        self.group_weight = np.add.reduceat(self.cell_weight, self.group_starts)
        self.s = s
        self.w = w
        self.n = n

    def _sum(self, v: np.ndarray) -> np.ndarray:
        """Per-cell sums of the per-row values ``v``."""
        out = np.zeros(self.n_cells)
        for L in self.layers:
            out += np.bincount(L, weights=v, minlength=self.n_cells + 1)[: self.n_cells]
        return out

    def batch(self, draws: int) -> int:
        return max(1, min(draws, BATCH_ENTRIES // max(self.n, 1)))

    def sums(self, T: np.ndarray) -> np.ndarray:
        """``(b, cells)`` sums of ``w (t - s)`` for the ``(b, n)`` targets ``T``."""
        R = (T - self.s) * self.w
        return np.stack([self._sum(r) for r in R])

    def per_group(self, values: np.ndarray) -> np.ndarray:
        """``(b, groups)`` sums of the ``(b, cells)`` values over each group's cells."""
        return np.add.reduceat(values, self.group_starts, axis=1)


def _lens(kwargs: dict[str, Any]) -> str:
    lens = kwargs.get("lens", "auto")
    return lens if isinstance(lens, str) else ""


class GroupMetric:
    """A metric on every group of a family, on the data and on labels drawn from the predictions.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> P = cp.check_predictions(np.array([0.2, 0.4, 0.6, 0.8]), [0, 1, 1, 1])
    >>> gm = GroupMetric(cp.ece, {"n_bins": 5}, P, [np.array([0, 1]), np.array([2, 3])])
    >>> gm.observed.round(3).tolist(), gm.kind
    ([0.4, 0.3], 'fast')
    >>> gm.null(3, np.random.default_rng(0)).shape
    (3, 2)
    """

    def __init__(
        self,
        metric: Callable[..., Any],
        kwargs: dict[str, Any],
        P: Predictions,
        rows: list[np.ndarray],
    ) -> None:
        self.metric = metric
        self.kwargs = dict(kwargs)
        self.P = numpy_predictions(P)
        self.rows = rows
        self.observed = np.array([self._call(subset(self.P, r)) for r in rows])
        self.cells: CellSums | None = None
        self.kind = "generic"
        try:
            self._setup_fast()
        except (CalibrationInputError, ValueError, TypeError):
            self.cells = None
        if self.cells is not None:
            s, t, _ = self._st
            fast = self._fast_values(t[None, :])[0]
            if np.allclose(fast, self.observed, rtol=CHECK_RTOL, atol=CHECK_RTOL * 1e-3):
                self.kind = "fast"
            else:  # pragma: no cover - the metric's conventions changed
                self.cells = None

    def _call(self, P: Predictions) -> float:
        v = self.metric(P, None, **self.kwargs)
        try:
            return float(v)
        except (TypeError, ValueError):
            raise CalibrationInputError(
                f"the metric must return a number; got {type(v).__name__}"
            ) from None

    def _setup_fast(self) -> None:
        from ..estimators.binning import EqualWidth

        spec = registry.of_function(self.metric)
        lens = _lens(self.kwargs)
        if (
            spec is None
            or spec.resampler != "fixed_bins"
            or not set(self.kwargs) - {"validate"} <= spec.resampler_kwargs
            or lens not in ("auto", "binary", "top_label")
        ):
            return
        s, t, w1 = lens_arrays(self.P, lens)
        w = w1 if self.P.sample_weight is None else np.asarray(self.P.sample_weight, np.float64)
        est = EqualWidth(int(self.kwargs.get("n_bins", 15)), self.kwargs.get("edge_rule", "right"))
        ids, nb = est.assign(s, None)
        self._st = (s, t, w)
        self.cells = CellSums(self.rows, np.asarray(ids, dtype=np.int64), int(nb), s, w)

    def _fast_values(self, T: np.ndarray) -> np.ndarray:
        assert self.cells is not None
        c = self.cells
        return c.per_group(np.abs(c.sums(T))) / c.group_weight

    def null(self, draws: int, rng: np.random.Generator) -> np.ndarray:
        """``(draws, groups)`` values on labels drawn from the predictions (seeded by ``rng``)."""
        G = len(self.rows)
        out = np.empty((draws, G))
        if self.cells is not None:
            s = self._st[0]
            done = 0
            step = self.cells.batch(draws)
            while done < draws:
                b = min(step, draws - done)
                U = rng.random((b, s.shape[0]))
                out[done : done + b] = self._fast_values((U < s).astype(np.float64))
                done += b
            return out
        probs = np.asarray(self.P.probs, dtype=np.float64)
        for d in range(draws):
            y = _draw_labels(probs, rng)
            Pd = dataclasses.replace(self.P, labels=y)
            for j, r in enumerate(self.rows):
                out[d, j] = self._call(subset(Pd, r))
        return out
