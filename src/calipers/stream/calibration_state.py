"""Mergeable calibration state: streamed and distributed binned metrics.

A :class:`CalibrationState` holds the per-bin sufficient statistics of every
lens slice (:class:`~calipers.estimators.binning.BinStatistics` totals, plus the sums of
squared weights, squared scores and score-target products) and running totals
for accuracy, NLL and the Brier score. ``update`` adds a batch, ``merge`` adds
another state with the same configuration (associative and commutative: the
totals only add), ``compute`` returns the calibration error that
:func:`calipers.calibration_error` gives on the concatenated data, and
``to_json`` / ``from_json`` write the state as plain JSON (floats as exact
hexadecimal strings, no pickle).

Estimators whose bin for a score does not depend on the other scores are
streamed exactly: :class:`~calipers.estimators.binning.EqualWidth` (the bins of Guo et al.
2017) and :class:`~calipers.estimators.binning.FixedEdges` (e.g. the bins of Nixon et al.
2019 for SCE, or of Kull et al. 2019 for class-wise ECE). Equal-mass bins
(:class:`~calipers.estimators.binning.EqualMass` ``rule="nixon"``: ACE, TACE and RMSCE of
Nixon et al. 2019, §4) are computed from a fine-grid score histogram per slice
(:class:`calipers.stream.score_grid.ScoreGrid`): one pass gives them within
:meth:`CalibrationState.error_bound`, a second pass (:meth:`CalibrationState.refine`,
which keeps the rows of the grid cells holding an edge) exactly, and so do further
passes of :meth:`CalibrationState.edge_search`, in memory that does not grow with the
rows. K-d tree bins are split at means of the whole sample and are refused,
as are the estimators that sum over pairs of rows or sort all rows
(:meth:`CalibrationState.for_metric` names the alternative).

Exactness: per-bin totals are sums of float64 values; a state built from one
batch gives exactly the in-memory number, and states of several batches add
the same values in another order, so they agree with it to a few units in the
last place (the tests use a relative tolerance of 1e-12).
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .._backend import as_float64_numpy, to_numpy
from ..estimators._config import binning_from_config, binning_to_config
from ..estimators.binning import (
    Binning,
    BinStatistics,
    EqualMass,
    EqualWidth,
    _check_unit_interval,
    equal_width_edges,
)
from ..metrics import registry
from ..metrics._calibration_error import SliceStatistics, error_from_statistics
from ..metrics._reliability_table import (
    RELIABILITY_TABLE_COLUMNS,
    _append_rows,
    _assemble_table,
    _check_table_options,
)
from ..metrics.decomposition import MurphyDecomposition
from ..metrics.scores import accuracy, brier, nll
from ..pipeline._config import (
    divergence_from_config,
    divergence_to_config,
    lens_from_config,
    lens_to_config,
    selection_from_config,
    selection_to_config,
)
from ..pipeline.divergences import Divergence
from ..pipeline.lenses import Lens
from ..pipeline.selection import Selection
from ..validation import CalibrationInputError, Predictions, check_predictions
from . import score_grid
from .score_grid import DEFAULT_BITS, EdgeSearch, ScoreGrid, score_cells

__all__ = ["CalibrationState"]

_FORMAT = "calipers.CalibrationState/1"


# ----------------------------------------------------------------------------- exact floats


def _enc(a: np.ndarray) -> dict[str, Any]:
    a = np.asarray(a)
    if a.dtype.kind in "iu":
        return {"shape": list(a.shape), "int": [int(v) for v in a.reshape(-1)]}
    return {"shape": list(a.shape), "hex": [float(v).hex() for v in a.reshape(-1)]}


def _dec(d: dict[str, Any]) -> np.ndarray:
    shape = tuple(d["shape"])
    if "int" in d:
        return np.array(d["int"], dtype=np.int64).reshape(shape)
    return np.array([float.fromhex(v) for v in d["hex"]], dtype=np.float64).reshape(shape)


# ----------------------------------------------------------------------------- configuration


def _estimator_spec(estimator: Binning | None) -> dict[str, Any]:
    spec = binning_to_config(EqualWidth(15) if estimator is None else estimator)
    if "equal_mass" in spec:  # streamed through a score grid of this resolution
        spec["grid_bits"] = DEFAULT_BITS
    return spec


def _build(config: dict[str, Any]) -> tuple[Lens, Selection | None, Binning, Divergence]:
    return (
        lens_from_config(config["lens"]),
        selection_from_config(config["selection"]),
        binning_from_config(config["estimator"]),
        divergence_from_config(config["divergence"]),
    )


#: The constructor's parameters: given to ``for_metric``, they override the preset's parts.
_STATE_PARTS = frozenset(
    {"lens", "selection", "estimator", "divergence", "aggregate", "class_aggregate"}
)


def _natural_key(name: str) -> list[Any]:
    """Sort ``"class 10"`` after ``"class 2"``: the order in which lenses yield slices."""
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name)]


# ----------------------------------------------------------------------------- per-slice totals

_FIELDS = (
    "weight",
    "count",
    "sum_w2",
    "sum_score",
    "sum_target",
    "sum_target_sq",
    "sum_score_sq",
    "sum_score_target",
)


@dataclass
class _SliceTotals:
    """Per-bin totals of one slice, for the bins (``keys``) that have samples."""

    keys: np.ndarray
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    @staticmethod
    def empty(d: int) -> _SliceTotals:
        shape: tuple[int, ...] = (0,) if d == 0 else (0, d)
        arrays = {
            f: np.zeros(0) if f in ("weight", "count", "sum_w2") else np.zeros(shape)
            for f in _FIELDS
        }
        return _SliceTotals(np.zeros(0, dtype=np.int64), arrays)

    def __add__(self, other: _SliceTotals) -> _SliceTotals:
        keys = np.union1d(self.keys, other.keys).astype(np.int64)
        out: dict[str, np.ndarray] = {}
        for f in _FIELDS:
            a, b = self.arrays[f], other.arrays[f]
            z = np.zeros((keys.shape[0],) + a.shape[1:])
            z[np.searchsorted(keys, self.keys)] += a
            z[np.searchsorted(keys, other.keys)] += b
            out[f] = z
        return _SliceTotals(keys, out)

    def dense(self, n_bins: int | None) -> tuple[BinStatistics, dict[str, np.ndarray]]:
        """The totals over all ``n_bins`` bins (1-D scores) or the occupied cells (vectors)."""
        if n_bins is None:
            arrs = self.arrays
        else:
            arrs = {}
            for f, a in self.arrays.items():
                z = np.zeros((n_bins,) + a.shape[1:])
                z[self.keys] = a
                arrs[f] = z
        st = BinStatistics(
            arrs["weight"],
            arrs["count"],
            arrs["sum_score"],
            arrs["sum_target"],
            arrs["sum_target_sq"],
        )
        return st, arrs


def _sums(ids: np.ndarray, B: int, v: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    if v.ndim == 1:
        return np.bincount(ids, v if w is None else v * w, B)
    return np.stack([_sums(ids, B, v[:, j], w) for j in range(v.shape[1])], axis=1)


def _keys(est: Binning, scores: Any, weights: Any, n_bins: int) -> np.ndarray:
    """Bin index of every row: the bin for 1-D scores, the flat grid cell for vectors."""
    if scores.ndim == 1 or scores.shape[1] == 1:
        s = scores if scores.ndim == 1 else scores[:, 0]
        return np.asarray(to_numpy(est.assign(s, weights)[0]), dtype=np.int64)
    if not isinstance(est, EqualWidth):
        raise CalibrationInputError("vector lenses need EqualWidth bins")
    _check_unit_interval(scores, "EqualWidth")
    d = int(scores.shape[1])
    if n_bins ** (d - 1) >= 2**62:
        raise CalibrationInputError(
            f"{n_bins}**{d - 1} grid cells are too many to index; use fewer bins or a smaller k"
        )
    key = np.zeros(int(scores.shape[0]), dtype=np.int64)
    for j in range(d - 1):
        key = key * n_bins + np.asarray(to_numpy(est._assign_1d(scores[:, j])), dtype=np.int64)
    return key


# ----------------------------------------------------------------------------- the state


class CalibrationState:
    """Mergeable, serialisable totals of a binned calibration error and proper scores.

    Built from the arguments of :func:`calipers.calibration_error` (with fixed
    bins only), it accumulates batches with :meth:`update`, combines with other
    states by :meth:`merge` and gives the in-memory values of
    :meth:`compute` (the calibration error), :meth:`accuracy`, :meth:`nll`,
    :meth:`brier`, :meth:`murphy_decomposition` and :meth:`reliability_table`
    for all the data seen. The binned estimate is the histogram estimate of
    Kirchenbauer, Oaks & Heim (2022) eq. 3; the presets (:meth:`for_metric`)
    give the ECE and MCE of Guo et al. (2017), the SCE of Nixon et al. (2019)
    and the class-wise ECE of Kull et al. (2019).

    Parameters
    ----------
    lens : str or top_k(k), default "auto"
        ``"auto"``, ``"top_label"``, ``"top_label_per_class"``, ``"classwise"``,
        ``"binary"`` or :func:`calipers.top_k`.
    selection : ScoreInterval, LabelSelection or a list of them, optional
        As in :func:`calipers.calibration_error` (e.g. ``threshold(0)``).
    estimator : EqualWidth, FixedEdges or EqualMass, default ``EqualWidth(15)``
        ``EqualMass(n_bins, "nixon")`` is approximate in one pass (see
        :meth:`error_bound`; exact after :meth:`refine` or :meth:`edge_search`);
        ``KDTree`` and the ``"kumar"``
        rule raise :class:`~calipers.validation.CalibrationInputError`.
    divergence : str, Lp, TVD or KL, default "l1"
    aggregate : {"weighted", "mean", "max"}, default "weighted"
    class_aggregate : {"mean", "sum", "weighted"}, default "mean"

    Notes
    -----
    The number of classes (and whether probabilities are 1-D binary) is fixed
    by the first :meth:`update`; later batches must agree. NLL, Brier score and
    accuracy are totals of per-batch weighted sums, so they match the in-memory
    values to rounding (relative 1e-12), as do the bin totals of several
    batches. The Murphy decomposition uses the identities
    ``sum w (s - s_b)^2 = sum w s^2 - W_b s_b^2`` per bin, so it agrees to about
    1e-12 in absolute terms.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.stream.calibration_state import CalibrationState
    >>> P = np.array([[.6,.3,.1],[.4,.4,.2],[.8,.1,.1],[.2,.5,.3],[.98,.015,.005],[.34,.33,.33]])
    >>> y = np.array([0, 1, 0, 2, 0, 1])
    >>> a = CalibrationState.for_metric("ece", n_bins=5); a.update(P[:2], y[:2])
    >>> b = CalibrationState.for_metric("ece", n_bins=5); b.update(P[2:], y[2:])
    >>> c = CalibrationState.from_json(a.to_json()).merge(b)
    >>> round(c.compute(), 6), round(cp.ece(P, y, n_bins=5), 6)
    (0.176667, 0.176667)
    """

    def __init__(
        self,
        *,
        lens: str | Lens = "auto",
        selection: Selection | Iterable[Selection] | None = None,
        estimator: Binning | None = None,
        divergence: str | Divergence = "l1",
        aggregate: Literal["weighted", "mean", "max"] = "weighted",
        class_aggregate: Literal["mean", "sum", "weighted"] = "mean",
    ) -> None:
        if aggregate not in ("weighted", "mean", "max"):
            raise CalibrationInputError(
                f"aggregate must be 'weighted', 'mean' or 'max'; got {aggregate!r}"
            )
        if class_aggregate not in ("mean", "sum", "weighted"):
            raise CalibrationInputError(
                f"class_aggregate must be 'mean', 'sum' or 'weighted'; got {class_aggregate!r}"
            )
        self.config: dict[str, Any] = {
            "lens": lens_to_config(lens),
            "selection": selection_to_config(selection),
            "estimator": _estimator_spec(estimator),
            "divergence": divergence_to_config(divergence),
            "aggregate": aggregate,
            "class_aggregate": class_aggregate,
        }
        self._init_parts()
        self.n_classes: int | None = None
        self.binary: bool | None = None
        self.slices: dict[str, _SliceTotals] = {}
        # equal-mass bins: a fine-grid score histogram per slice, and the rows of the
        # edge cells once a second pass (refine) has collected them
        self.grids: dict[str, ScoreGrid] = {}
        self.edge_rows: dict[str, list[np.ndarray]] | None = None
        # or, in bounded memory, an exact edge search per slice (edge_search)
        self.search: dict[str, EdgeSearch] | None = None
        # total weight, weighted sums of correctness, log loss and Brier score
        self.totals = np.zeros(4)

    def _init_parts(self) -> None:
        self._lens, self._selection, self._estimator, self._divergence = _build(self.config)
        n = getattr(self._estimator, "n_bins", None)
        self._n_bins = int(n) if n is not None else 0
        self._equal_mass = isinstance(self._estimator, EqualMass)

    # ------------------------------------------------------------------ presets

    @classmethod
    def for_metric(
        cls,
        metric: str,
        *,
        n_bins: int = 15,
        edge_rule: Literal["right", "left"] = "right",
        **kw: Any,
    ) -> CalibrationState:
        """A state configured as a named preset of :mod:`calipers.metrics.binned`.

        ``metric`` is a name of the metric registry
        (:mod:`calipers.metrics.registry`) whose row streams: ``"ece"``, ``"mce"``,
        ``"bin_averaged_ece"``, ``"top_label_ece"``, ``"sce"`` (``threshold=``
        keyword, default 0), ``"classwise_ece"`` (``reduction=`` ``"mean"`` or
        ``"sum"``), ``"tce_p"`` and ``"cwce_p"`` (``p=``, ``root=``), ``"top_k_ece"``
        (``k=``; equal-width grid bins, i.e. ``cp.top_k_ece(...,
        estimator=cp.EqualWidth(n_bins))``, as its default k-d tree cannot be
        streamed), ``"rmsce"`` (with equal-width bins instead of the preset's
        equal-mass ones: the value of ``cp.rmsce(..., estimator=cp.EqualWidth(n_bins))``),
        and ``"ace"`` and ``"tace"`` (``threshold=``, default 0 and 0.01) with the
        equal-mass bins of Nixon et al. (2019, §4): one pass gives them within
        :meth:`error_bound`, a second pass (:meth:`refine`) exactly. Otherwise the
        preset's pipeline parts are the ones its function uses (both read the
        registry row). Other keywords (``lens=`` for the one-slice presets,
        ``estimator=``, e.g. ``cp.EqualMass(15)`` for the equal-mass RMSCE) go to
        the constructor and override the preset's parts.

        Estimators that cannot be streamed raise an error naming the
        alternative: the Dirichlet-kernel CE of Popordanoska et al. (2024) and
        the unbiased SKCE (sums over pairs of rows; a seeded subsample, or the
        linear block SKCE), the KS error (needs all rows sorted; a seeded
        subsample), SmoothECE (:class:`calipers.stream.smooth_ece_state.SmoothECEState`).

        Examples
        --------
        >>> from calipers.stream.calibration_state import CalibrationState
        >>> CalibrationState.for_metric("sce", n_bins=5).config["estimator"]["closed"]
        'left'
        >>> CalibrationState.for_metric("ace").config["estimator"]["equal_mass"]
        15
        >>> CalibrationState.for_metric("ks")
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: ks cannot be streamed exactly: ...
        """
        try:
            spec = registry.get(metric)
        except CalibrationInputError:
            spec = None
        if spec is None or spec.streaming is None or spec.pipeline is None:
            if spec is not None and spec.not_streamed is not None:
                raise CalibrationInputError(
                    f"{metric} cannot be streamed exactly: {spec.not_streamed}"
                )
            raise CalibrationInputError(
                f"no streamable preset named {metric!r}; the streamable ones: "
                f"{', '.join(registry.names(streaming='any'))}"
            )
        # the preset's own parameters (n_bins, threshold, reduction, p, k, ...) choose
        # its pipeline parts (registry row -> metrics.binned); the constructor's
        # parameters given here (lens=, estimator=, ...) override the parts
        params = inspect.signature(spec.pipeline).parameters
        preset = {"n_bins": n_bins, "edge_rule": edge_rule}
        preset.update({k: kw.pop(k) for k in list(kw) if k in params and k not in _STATE_PARTS})
        preset = {k: v for k, v in preset.items() if k in params}
        if spec.stream_estimator is not None and "estimator" not in kw:
            preset["estimator"] = spec.stream_estimator(n_bins)
        return cls(**{**spec.pipeline(**preset), **kw})

    # ------------------------------------------------------------------ accumulation

    def _selected_slices(self, P: Predictions) -> Iterator[Any]:
        """The slices of a batch under the state's lens, each restricted to its selection."""
        for sl in self._lens(P):
            if self._selection is not None:
                keep = self._selection(sl)
                if not bool(keep.all()):
                    sl = sl.subset(keep)
            yield sl

    def update(
        self, probs: Any, labels: Any, sample_weight: Any = None, *, logits: bool = False
    ) -> None:
        """Add a batch (validated by :func:`calipers.check_predictions`)."""
        if self.edge_rows is not None or self.search is not None:
            raise CalibrationInputError(
                "this state has started its second pass (refine or edge_search); the first "
                "pass is closed"
            )
        P = check_predictions(probs, labels, logits=logits, sample_weight=sample_weight)
        self._check_shape(P)
        for sl in self._selected_slices(P):
            if self._equal_mass:
                grid = self._grid(sl.scores, sl.targets, sl.weights)
                old = self.grids.get(sl.name)
                self.grids[sl.name] = grid if old is None else old + grid
                continue
            d = 0 if sl.scores.ndim == 1 else int(sl.scores.shape[1])
            if sl.n == 0:
                part = _SliceTotals.empty(d)
            else:
                part = self._slice_totals(sl.scores, sl.targets, sl.weights)
            prev = self.slices.get(sl.name)
            self.slices[sl.name] = part if prev is None else prev + part
        n = int(P.probs.shape[0])
        if n > 0:
            w = None if P.sample_weight is None else as_float64_numpy(P.sample_weight)
            W = float(n) if w is None else float(np.sum(w))
            if W > 0:
                self.totals += (
                    W,
                    W * float(accuracy(P, None)),
                    W * float(nll(P, None)),
                    W * float(brier(P, None)),
                )

    def _check_shape(self, P: Predictions) -> None:
        if self.n_classes is None:
            self.n_classes, self.binary = int(P.n_classes), bool(P.binary)
        elif (self.n_classes, self.binary) != (int(P.n_classes), bool(P.binary)):
            raise CalibrationInputError(
                f"this state holds {self._shape_text(self.n_classes, self.binary)}; "
                f"the batch has {self._shape_text(int(P.n_classes), bool(P.binary))}"
            )

    @staticmethod
    def _shape_text(k: int | None, binary: bool | None) -> str:
        return "1-D binary probabilities" if binary else f"{k} classes"

    def _grid(self, scores: Any, targets: Any, weights: Any) -> ScoreGrid:
        if scores.ndim != 1:
            raise CalibrationInputError(
                "equal-mass bins need 1-D scores; use a lens of one score per row"
            )
        return ScoreGrid.from_arrays(
            as_float64_numpy(scores),
            as_float64_numpy(targets),
            None if weights is None else as_float64_numpy(weights),
            self.config["estimator"]["grid_bits"],
        )

    def _slice_totals(self, scores: Any, targets: Any, weights: Any) -> _SliceTotals:
        keys = _keys(self._estimator, scores, weights, self._n_bins)
        uniq, ids = np.unique(keys, return_inverse=True)
        ids = ids.reshape(-1)
        B = int(uniq.shape[0])
        s = as_float64_numpy(scores)
        t = as_float64_numpy(targets)
        w = None if weights is None else as_float64_numpy(weights)
        count = np.bincount(ids, None, B)
        arrays = {
            "weight": count if w is None else np.bincount(ids, w, B),
            "count": count,
            "sum_w2": count if w is None else np.bincount(ids, w * w, B),
            "sum_score": _sums(ids, B, s, w),
            "sum_target": _sums(ids, B, t, w),
            "sum_target_sq": _sums(ids, B, t * t, w),
            "sum_score_sq": _sums(ids, B, s * s, w),
            "sum_score_target": _sums(ids, B, s * t, w),
        }
        return _SliceTotals(uniq.astype(np.int64), arrays)

    def merge(self, other: CalibrationState) -> CalibrationState:
        """A new state with the totals of both (same configuration and classes)."""
        if not isinstance(other, CalibrationState) or other.config != self.config:
            raise CalibrationInputError(
                "cannot merge calibration states with different configurations: "
                f"{self.config} and {getattr(other, 'config', other)!r}"
            )
        out = CalibrationState._from_config(self.config)
        for st in (self, other):
            if st.n_classes is not None:
                if out.n_classes is not None and (out.n_classes, out.binary) != (
                    st.n_classes,
                    st.binary,
                ):
                    raise CalibrationInputError(
                        f"cannot merge a state of {self._shape_text(out.n_classes, out.binary)} "
                        f"with one of {self._shape_text(st.n_classes, st.binary)}"
                    )
                out.n_classes, out.binary = st.n_classes, st.binary
        if self.search is not None or getattr(other, "search", None) is not None:
            raise CalibrationInputError(
                "cannot merge a state in its edge search; merge the first-pass states, then "
                "call edge_search on the merged state"
            )
        if (self.edge_rows is None) != (other.edge_rows is None):
            raise CalibrationInputError(
                "cannot merge a state in its second pass (refine) with one in its first"
            )
        if self.edge_rows is not None and other.edge_rows is not None:
            # second pass: both hold the same first-pass totals; only the rows add
            if not self._same_first_pass(other):
                raise CalibrationInputError(
                    "cannot merge second-pass states refined from different first-pass states"
                )
            out = self._copy()
            assert out.edge_rows is not None
            for name, rows in other.edge_rows.items():
                mine = out.edge_rows.setdefault(name, [np.zeros(0)] * 3)
                out.edge_rows[name] = [
                    np.concatenate([u, v]) for u, v in zip(mine, rows, strict=True)
                ]
            return out
        for name in set(self.slices) | set(other.slices):
            a, b = self.slices.get(name), other.slices.get(name)
            out.slices[name] = a + b if (a is not None and b is not None) else (a or b)  # type: ignore[assignment]
        for name in set(self.grids) | set(other.grids):
            ga, gb = self.grids.get(name), other.grids.get(name)
            out.grids[name] = ga + gb if (ga is not None and gb is not None) else (ga or gb)  # type: ignore[assignment]
        out.totals = self.totals + other.totals
        return out

    __add__ = merge

    @classmethod
    def _from_config(cls, config: dict[str, Any]) -> CalibrationState:
        st = cls.__new__(cls)
        st.config = json.loads(json.dumps(config))
        st._init_parts()
        st.n_classes, st.binary = None, None
        st.slices = {}
        st.grids = {}
        st.edge_rows = None
        st.search = None
        st.totals = np.zeros(4)
        return st

    # ------------------------------------------------------------------ results

    def _ordered(self) -> list[tuple[str, _SliceTotals]]:
        return [(n, self.slices[n]) for n in sorted(self.slices, key=_natural_key)]

    def _dense(self, sl: _SliceTotals) -> tuple[BinStatistics, dict[str, np.ndarray]]:
        vector = sl.arrays["sum_score"].ndim == 2
        return sl.dense(None if vector else self._n_bins)

    def _equal_mass_slices(self) -> list[tuple[SliceStatistics, float]]:
        """Per slice: the equal-mass bin totals and the bound of their error (weight units)."""
        out = []
        if self.search is not None:
            for name in sorted(self.grids, key=_natural_key):
                st = self.search[name].statistics()
                out.append((SliceStatistics(name, st, float(st.weight.sum())), 0.0))
            return out
        for name in sorted(self.grids, key=_natural_key):
            rows = None
            if self.edge_rows is not None:
                r = self.edge_rows.get(name, [np.zeros(0)] * 3)
                rows = (r[0], r[1], r[2])
            st, bound = self.grids[name].equal_mass_statistics(self._n_bins, rows)
            out.append((SliceStatistics(name, st, float(st.weight.sum())), bound))
        return out

    def compute(self) -> float:
        """The calibration error of all data seen (as :func:`calipers.calibration_error`).

        With equal-mass bins (ACE, TACE, ``EqualMass`` RMSCE; Nixon et al.
        2019, §4) the one-pass value is approximate, within
        :meth:`error_bound` of the in-memory one for L1 errors; after a second
        pass (:meth:`refine`) or the passes of :meth:`edge_search` it is the
        in-memory value up to summation order.
        """
        slices = []
        if self._equal_mass:
            slices = [ss for ss, _ in self._equal_mass_slices()]
        for name, sl in self._ordered():
            st, _ = self._dense(sl)
            slices.append(SliceStatistics(name, st, float(st.weight.sum())))
        return error_from_statistics(
            slices,
            self._divergence,
            self.config["aggregate"],
            self.config["class_aggregate"],
            "the state holds no samples to measure (after selection)",
        )

    def error_bound(self) -> float:
        """Largest possible ``|compute() - in-memory value|``, known from the state alone.

        0 for fixed bins and for equal-mass bins after :meth:`refine`. For the
        one-pass equal-mass bins of Nixon et al. (2019, §4) only the grid
        cells that hold an edge rank strictly inside and several distinct
        scores are uncertain: a slice's bound is ``2 sum_c A_c / W`` over those
        cells, ``A_c = T_c (1 - min_c) + (W_c - T_c) max_c`` (see
        :mod:`calipers.stream.score_grid`), combined over slices as the slices are
        (mean, sum or weighted mean). Defined for the L1 divergence with
        ``aggregate="weighted"`` (ACE, TACE); other configurations raise.

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> from calipers.stream.calibration_state import CalibrationState
        >>> rng = np.random.default_rng(0)
        >>> P = rng.dirichlet(np.ones(3) * 0.3, size=4000); y = rng.integers(0, 3, 4000)
        >>> st = CalibrationState.for_metric("ace"); st.update(P, y)
        >>> bool(abs(st.compute() - cp.ace(P, y)) <= st.error_bound() < 1e-2)
        True
        """
        if not self._equal_mass or self.edge_rows is not None or self.search is not None:
            return 0.0
        if self.config["divergence"] != "l1" or self.config["aggregate"] != "weighted":
            raise CalibrationInputError(
                "error_bound is defined for divergence='l1' with aggregate='weighted' "
                f"(ACE, TACE); this state has {self.config['divergence']!r}, "
                f"{self.config['aggregate']!r}: use refine() for exact equal-mass bins"
            )
        parts = self._equal_mass_slices()
        if not parts:
            raise CalibrationInputError("the state holds no samples")
        W = np.array([ss.total_weight for ss, _ in parts])
        b = np.array([bd / w if w > 0 else 0.0 for (_, bd), w in zip(parts, W, strict=True)])
        how = self.config["class_aggregate"]
        if how == "mean":
            return float(b.mean())
        if how == "sum":
            return float(b.sum())
        return float(np.dot(b, W) / W.sum()) if W.sum() > 0 else 0.0

    def refine(
        self, probs: Any, labels: Any, sample_weight: Any = None, *, logits: bool = False
    ) -> CalibrationState:
        """Second pass for exact equal-mass bins: collect the rows of the edge cells.

        After all batches went through :meth:`update` (first pass), pass the
        same batches again through ``refine``: it returns a new state holding
        the first-pass totals plus the rows of this batch that fall in the few
        grid cells holding an edge of the equal-mass bins of Nixon et al.
        (2019, §4) (at most ``n_bins - 1`` cells per slice). States refined
        from the same first-pass state on different batches :meth:`merge` by
        adding their rows; once every row has been seen, :meth:`compute` gives
        the exact order statistics, hence the in-memory value up to summation
        order (it raises while rows are missing). ``update`` is closed after
        ``refine``. With non-integer sample weights the ranks are sums of
        weights in another order than in memory; an edge could then differ
        only if a rank fell within rounding of a cumulative weight.

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> from calipers.stream.calibration_state import CalibrationState
        >>> rng = np.random.default_rng(0)
        >>> P = rng.dirichlet(np.ones(3), size=3000); y = rng.integers(0, 3, 3000)
        >>> first = CalibrationState.for_metric("ace")
        >>> for part in np.array_split(np.arange(3000), 3):
        ...     first.update(P[part], y[part])
        >>> second = [first.refine(P[part], y[part]) for part in np.array_split(np.arange(3000), 3)]
        >>> exact = second[0].merge(second[1]).merge(second[2])
        >>> bool(np.isclose(exact.compute(), cp.ace(P, y), rtol=1e-12, atol=0)), exact.error_bound()
        (True, 0.0)
        """
        if not self._equal_mass:
            raise CalibrationInputError(
                "refine is the second pass of equal-mass bins; fixed bins are exact in one pass"
            )
        out = self._copy()
        rows: dict[str, list[np.ndarray]] = {} if out.edge_rows is None else out.edge_rows
        P = check_predictions(probs, labels, logits=logits, sample_weight=sample_weight)
        out._check_shape(P)
        bits = self.config["estimator"]["grid_bits"]
        for sl in self._selected_slices(P):
            grid = out.grids.get(sl.name)
            if grid is None:
                raise CalibrationInputError(
                    f"slice {sl.name!r} was not seen in the first pass (update)"
                )
            s = as_float64_numpy(sl.scores).reshape(-1)
            mine = np.isin(score_cells(s, bits), grid.edge_cells(self._n_bins))
            t = as_float64_numpy(sl.targets).reshape(-1)[mine]
            w = (
                np.ones(int(mine.sum()))
                if sl.weights is None
                else as_float64_numpy(sl.weights)[mine]
            )
            old = rows.get(sl.name, [np.zeros(0)] * 3)
            rows[sl.name] = [
                np.concatenate([u, v]) for u, v in zip(old, (s[mine], t, w), strict=True)
            ]
        out.edge_rows = rows
        return out

    def edge_search(self) -> CalibrationState:
        """Start the exact equal-mass bins in memory that does not grow with the rows.

        The bounded-memory alternative to :meth:`refine` for one process
        (``calipers table --chunk-rows``): after all batches went through
        :meth:`update`, ``edge_search`` returns a new state whose further passes
        over the same batches (:meth:`search_update` on every batch, then
        :meth:`search_next`, repeated while it returns True) find the exact
        order statistics at the edges of the equal-mass bins of Nixon et al.
        (2019, §4), with a :class:`~calipers.stream.score_grid.EdgeSearch` per
        slice: at most 256 sub-ranges per uncertain edge and 2**18 rows (6 MiB)
        per state are held in a pass, whatever the number of rows, where
        :meth:`refine` keeps every row of the edge cells (a few per cent of the
        scores). :meth:`compute` then gives the in-memory value up to summation
        order (it raises while a pass is missing). Usually one or two passes
        follow the first; the state counts them in :attr:`search_passes`. The
        state neither merges nor serialises during the search.

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> from calipers.stream.calibration_state import CalibrationState
        >>> rng = np.random.default_rng(0)
        >>> P = rng.dirichlet(np.ones(3), size=3000); y = rng.integers(0, 3, 3000)
        >>> parts = np.array_split(np.arange(3000), 3)
        >>> first = CalibrationState.for_metric("ace")
        >>> for part in parts:
        ...     first.update(P[part], y[part])
        >>> exact = first.edge_search()
        >>> while exact.searching:
        ...     for part in parts:
        ...         exact.search_update(P[part], y[part])
        ...     _ = exact.search_next()
        >>> bool(np.isclose(exact.compute(), cp.ace(P, y), rtol=1e-12, atol=0))
        True
        """
        if not self._equal_mass:
            raise CalibrationInputError(
                "edge_search is the further passes of equal-mass bins; fixed bins are exact "
                "in one pass"
            )
        if self.edge_rows is not None or self.search is not None:
            raise CalibrationInputError(
                "edge_search starts from a first-pass state (not one after refine or edge_search)"
            )
        out = self._copy()
        # the row budget is the state's, shared by its slices (module constants, read now)
        rows = score_grid.SEARCH_ROWS // max(1, len(self.grids))
        out.search = {
            name: EdgeSearch(g, self._n_bins, cells=score_grid.SEARCH_CELLS, max_rows=rows)
            for name, g in self.grids.items()
        }
        return out

    @property
    def searching(self) -> bool:
        """True while the edge search (:meth:`edge_search`) needs another pass."""
        return self.search is not None and any(s.active for s in self.search.values())

    @property
    def search_passes(self) -> int:
        """Passes of the edge search done so far (0 before :meth:`search_next`)."""
        return 0 if not self.search else max(s.passes for s in self.search.values())

    def search_update(
        self, probs: Any, labels: Any, sample_weight: Any = None, *, logits: bool = False
    ) -> None:
        """Add a batch to the current pass of the edge search (:meth:`edge_search`)."""
        if self.search is None:
            raise CalibrationInputError("search_update needs a state from edge_search()")
        if not self.searching:
            return
        P = check_predictions(probs, labels, logits=logits, sample_weight=sample_weight)
        self._check_shape(P)
        for sl in self._selected_slices(P):
            search = self.search.get(sl.name)
            if search is None:
                raise CalibrationInputError(
                    f"slice {sl.name!r} was not seen in the first pass (update)"
                )
            if search.active:
                search.update(
                    as_float64_numpy(sl.scores).reshape(-1),
                    as_float64_numpy(sl.targets).reshape(-1),
                    None if sl.weights is None else as_float64_numpy(sl.weights),
                )

    def search_next(self) -> bool:
        """Close a pass of the edge search; True when another pass over the data is needed."""
        if self.search is None:
            raise CalibrationInputError("search_next needs a state from edge_search()")
        for s in self.search.values():
            if s.active:
                s.next_pass()
        return self.searching

    def _score_total(self, i: int) -> float:
        if self.totals[0] <= 0:
            raise CalibrationInputError("the state holds no samples")
        return float(self.totals[i] / self.totals[0])

    def accuracy(self) -> float:
        """Weighted accuracy of all data seen (as :func:`calipers.accuracy`)."""
        return self._score_total(1)

    def nll(self) -> float:
        """Weighted negative log-likelihood in nats (as :func:`calipers.nll`)."""
        return self._score_total(2)

    def brier(self) -> float:
        """Weighted Brier score, summed over classes (as :func:`calipers.brier`)."""
        return self._score_total(3)

    def murphy_decomposition(self) -> MurphyDecomposition:
        """Binned Brier decomposition of Murphy (1973) over this state's slices and bins.

        Equals :func:`calipers.murphy_decomposition` with the state's lens
        (``"binary"``, ``"classwise"`` or ``"top_label"``; give it explicitly,
        since ``"auto"`` means top-label here and class-wise there for
        multi-class input) and estimator, without selection.
        """
        if self._equal_mass:
            raise CalibrationInputError(
                "the Murphy decomposition of a state needs fixed bins (EqualWidth or FixedEdges)"
            )
        if self.config["selection"] or self.config["lens"] not in (
            "binary",
            "classwise",
            "top_label",
        ):
            raise CalibrationInputError(
                "the Murphy decomposition needs a state with lens 'binary', 'classwise' or "
                "'top_label' and no selection"
            )
        tot = np.zeros(6)
        for _, sl in self._ordered():
            st, a = self._dense(sl)
            Wb = st.weight
            W = Wb.sum()
            if W <= 0:
                continue
            ne = Wb > 0
            sb = np.zeros_like(Wb)
            ob = np.zeros_like(Wb)
            sb[ne] = st.sum_score[ne] / Wb[ne]
            ob[ne] = st.sum_target[ne] / Wb[ne]
            o = st.sum_target.sum() / W
            bs = (
                a["sum_score_sq"].sum() - 2 * a["sum_score_target"].sum() + a["sum_target_sq"].sum()
            ) / W
            rel = np.dot(Wb, (sb - ob) ** 2) / W
            res = np.dot(Wb, (ob - o) ** 2) / W
            unc = o * (1 - o)
            wbv = (a["sum_score_sq"].sum() - np.dot(Wb, sb**2)) / W
            wbc = (a["sum_score_target"].sum() - np.dot(Wb, sb * ob)) / W
            tot += (bs, rel, res, unc, wbv, wbc)
        return MurphyDecomposition(*map(float, tot))

    def reliability_table(
        self,
        *,
        interval: Literal["wilson", "clopper_pearson"] | None = "wilson",
        confidence_level: float = 0.95,
        empty: Literal["drop", "keep"] = "drop",
        as_frame: bool | None = None,
    ) -> Any:
        """The per-bin table of :func:`calipers.reliability_table` for all data seen.

        The columns come from the stored per-bin totals by the formulas of that
        function (the effective sample size from the sum of squared weights),
        for a state without selection and with a lens of 1-D scores. Equal-width
        edges are reported in float64 (the in-memory table rounds them to the
        scores' dtype).
        """
        if self._equal_mass:
            raise CalibrationInputError(
                "the reliability table of a state needs fixed bins (EqualWidth or FixedEdges)"
            )
        if self.config["selection"] or isinstance(self.config["lens"], dict):
            raise CalibrationInputError(
                "a reliability table needs a state with a lens of 1-D scores and no selection"
            )
        _check_table_options(interval, confidence_level, empty)
        est = self._estimator
        if isinstance(est, EqualWidth):
            e = equal_width_edges(self._n_bins, np.float64)
        else:
            e = np.asarray(est.edges, dtype=np.float64)  # type: ignore[attr-defined]
        lower, upper = e[:-1], e[1:]
        parts: dict[str, list[np.ndarray]] = {c: [] for c in RELIABILITY_TABLE_COLUMNS}
        for name, sl in self._ordered():
            st, a = self._dense(sl)
            if not (st.count > 0).any():
                continue
            weight = st.weight
            sw2 = a["sum_w2"]
            with np.errstate(invalid="ignore", divide="ignore"):
                n_eff = np.where(sw2 > 0, weight**2 / np.where(sw2 > 0, sw2, 1.0), 0.0)
            _append_rows(parts, name, st, lower, upper, n_eff, interval, confidence_level, empty)
        return _assemble_table(parts, interval, confidence_level, est, as_frame)

    # ------------------------------------------------------------------ serialisation

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready content: configuration, classes, totals (floats as hex strings)."""
        if self.search is not None:
            raise CalibrationInputError(
                "a state in its edge search is not written; write the first-pass state"
            )
        return {
            "format": _FORMAT,
            "config": self.config,
            "n_classes": self.n_classes,
            "binary": self.binary,
            "totals": _enc(self.totals),
            "slices": {
                name: {"keys": _enc(sl.keys), **{f: _enc(v) for f, v in sl.arrays.items()}}
                for name, sl in self._ordered()
            },
            "grids": {n: self.grids[n].to_dict() for n in sorted(self.grids, key=_natural_key)},
            "edge_rows": None
            if self.edge_rows is None
            else {n: [_enc(a) for a in r] for n, r in self.edge_rows.items()},
        }

    def _copy(self) -> CalibrationState:
        out = CalibrationState._from_config(self.config)
        out.n_classes, out.binary = self.n_classes, self.binary
        out.slices = dict(self.slices)  # totals are never changed in place
        out.grids = dict(self.grids)
        out.totals = self.totals.copy()
        if self.edge_rows is not None:
            out.edge_rows = {n: list(r) for n, r in self.edge_rows.items()}
        return out

    def _same_first_pass(self, other: CalibrationState) -> bool:
        return (
            (self.n_classes, self.binary) == (other.n_classes, other.binary)
            and np.array_equal(self.totals, other.totals)
            and self.grids.keys() == other.grids.keys()
            and all(g.same_as(other.grids[n]) for n, g in self.grids.items())
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CalibrationState:
        """Rebuild a state from :meth:`to_dict` output (exact round trip)."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise CalibrationInputError(f"not a {_FORMAT} document")
        st = cls._from_config(data["config"])
        st.n_classes, st.binary = data["n_classes"], data["binary"]
        st.totals = _dec(data["totals"])
        for name, d in data["slices"].items():
            st.slices[name] = _SliceTotals(
                _dec(d["keys"]).astype(np.int64), {f: _dec(d[f]) for f in _FIELDS}
            )
        for name, g in data.get("grids", {}).items():
            st.grids[name] = ScoreGrid.from_dict(g)
        rows = data.get("edge_rows")
        if rows is not None:
            st.edge_rows = {n: [_dec(a) for a in r] for n, r in rows.items()}
        return st

    def to_json(self) -> str:
        """The state as a JSON string (exact: floats are written with ``float.hex``)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> CalibrationState:
        """Read a state written by :meth:`to_json`."""
        return cls.from_dict(json.loads(text))

    def __repr__(self) -> str:
        n = int(self.totals[0]) if math.isfinite(self.totals[0]) else self.totals[0]
        return f"CalibrationState(config={self.config}, weight={n})"
