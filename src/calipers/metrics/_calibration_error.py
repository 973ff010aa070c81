"""The composable calibration-error pipeline (Kirchenbauer, Oaks & Heim (2022) §3.2-4).

    predictions, labels -> lens -> selection -> estimator -> divergence -> aggregate

:func:`calibration_error` runs the whole pipeline and returns one number;
:func:`binned_statistics` stops after the estimator and returns the per-bin
sufficient statistics of every slice (for diagrams, decompositions and
streaming). Every named metric in :mod:`calipers.metrics.binned` is a thin preset of
:func:`calibration_error`.

Aggregation
-----------
``aggregate`` combines the per-bin divergences of one slice:

* ``"weighted"`` - ``sum_b (W_b / W) d_b``, the histogram estimate of Kirchenbauer, Oaks & Heim (2022)
  eq. 3 (``W_b`` = weight in bin b, ``W`` = weight of the slice after
  selection); empty bins contribute nothing.
* ``"mean"`` - plain mean over the non-empty bins (netcal's "average
  calibration error", Chidambaram & Ge's (2024) "ACE").
* ``"max"`` - the largest divergence over non-empty bins (MCE).

``class_aggregate`` combines slices (class-wise lenses): ``"mean"`` divides by
the number of slices (Nixon et al.; Popordanoska et al. (2024)), ``"sum"`` adds them (Kull et al.
2019; Gruber & Buettner (2022) Def. C.1), ``"weighted"`` weights each slice by its
total weight (Gupta & Ramdas 2022's top-label ECE, whose slices are the rows
predicted as each class). A slice left empty by a selection contributes 0.
Finally an Lp divergence with ``root`` raises the result to ``1/p``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

import numpy as np

from .._backend import as_float64_numpy, wrap_scalar
from .._docstrings import fill_doc
from ..estimators.binning import (
    Binning,
    BinStatistics,
    EqualWidth,
    bin_statistics,
    check_bins_for_samples,
)
from ..pipeline.divergences import Divergence, Lp, get_divergence
from ..pipeline.lenses import Lens, LensSlice, get_lens
from ..pipeline.selection import Selection, combine
from ..validation import CalibrationInputError, Predictions, check_predictions

__all__ = ["calibration_error", "binned_statistics", "SliceStatistics"]

Aggregate = Literal["weighted", "mean", "max"]


class SliceStatistics:
    """Per-bin statistics of one lens slice (with its name and total weight).

    Attributes
    ----------
    name : str
    stats : BinStatistics
    total_weight : float
        Weight of the slice after selection (the ``W`` of the weighted mean).
    """

    __slots__ = ("name", "stats", "total_weight")

    def __init__(self, name: str, stats: BinStatistics, total_weight: float) -> None:
        self.name = name
        self.stats = stats
        self.total_weight = total_weight

    def __repr__(self) -> str:
        return f"SliceStatistics(name={self.name!r}, bins={len(self.stats.weight)}, total_weight={self.total_weight:g})"


def _iter_slices(
    P: Predictions, lens: Lens, selection: Selection | None, estimator: Binning
) -> Iterator[SliceStatistics]:
    for sl in lens(P):
        if selection is not None:
            keep = selection(sl)
            if not bool(keep.all()):  # a selection that keeps every row costs no copy
                sl = sl.subset(keep)
        if sl.n == 0:
            yield SliceStatistics(sl.name, _empty_stats(sl), 0.0)
            continue
        st = _slice_stats(sl, estimator)
        yield SliceStatistics(sl.name, st, float(st.weight.sum()))


#: Rows per chunk when a pointwise estimator bins a long 1-D NumPy slice.
_CHUNK = 1 << 15


def _slice_stats(sl: LensSlice, estimator: Binning) -> BinStatistics:
    """Bin one slice and total it per bin.

    Pointwise estimators (``estimator.pointwise``: a score's bin does not
    depend on the other scores) run chunk by chunk on long 1-D NumPy slices, and the chunks'
    BinStatistics are merged with ``+`` (they are additive). The temporaries
    of the binning (s * B, ids, fractions, masks) then stay in cache instead
    of being fresh 80 MB arrays, whose page faults cost more than the
    arithmetic at n = 1e7.
    """
    s, t, w = sl.scores, sl.targets, sl.weights
    n_bins = getattr(estimator, "n_bins", None)
    if isinstance(n_bins, int):
        check_bins_for_samples(n_bins, int(s.shape[0]))
    if (
        getattr(estimator, "pointwise", False)
        and isinstance(s, np.ndarray)
        and s.ndim == 1
        and s.shape[0] > 2 * _CHUNK
    ):
        if w is None and isinstance(t, np.ndarray) and t.dtype.kind in "iub" and sl.binary_targets:
            return _binary_chunked_stats(s, t, estimator)
        total: BinStatistics | None = None
        for i in range(0, s.shape[0], _CHUNK):
            j = slice(i, i + _CHUNK)
            wj = None if w is None else w[j]
            ids, nb = estimator.assign(s[j], wj)
            part = bin_statistics(ids, nb, s[j], t[j], wj, sl.binary_targets)
            total = part if total is None else total + part
        assert total is not None
        return total
    ids, nb = estimator.assign(s, w)
    return bin_statistics(ids, nb, s, t, w, sl.binary_targets)


def _binary_chunked_stats(s: np.ndarray, t: np.ndarray, estimator: Binning) -> BinStatistics:
    """Unweighted 0/1 integer targets: count and target total from one integer bincount.

    ``bincount(2 * bin + target)`` counts the rows with target 0 and 1 of every
    bin at once (an integer histogram, cheaper than a weighted one), so a chunk
    costs its binning, one integer and one weighted bincount (the scores). An
    :class:`~calipers.estimators.binning.EqualWidth` estimator bins every chunk into the
    same two buffers (no allocation per chunk).
    """
    nb = int(getattr(estimator, "n_bins", 0))
    buffers = None
    equal_width = estimator if isinstance(estimator, EqualWidth) else None
    if equal_width is not None and s.dtype.kind == "f":
        m = min(_CHUNK, s.shape[0])
        buffers = (
            np.empty(m, dtype=s.dtype),
            np.empty(m, dtype=s.dtype),
            np.empty(m, dtype=np.intp),
        )
    pairs = np.zeros(2 * nb, dtype=np.int64)
    sum_score = np.zeros(nb)
    for i in range(0, s.shape[0], _CHUNK):
        sj = s[i : i + _CHUNK]
        f: np.ndarray
        if equal_width is not None and buffers is not None:
            # unclipped ids: a score outside [0, 1] gives a negative id (bincount
            # refuses it) or one >= nb (a longer histogram); such a chunk is
            # binned again with clipping, as the general path does.
            ids = equal_width._assign_1d(sj, buffers, clip=False)
            try:
                f = np.bincount(ids, weights=sj, minlength=nb)
            except ValueError:
                f = np.zeros(0)
            if f.shape[0] != nb:
                ids = equal_width._assign_1d(sj)
                f = np.bincount(ids, weights=sj, minlength=nb)
            ids *= 2  # the intp buffer (or a fresh array), ours to overwrite
        else:
            ids, nb_j = estimator.assign(sj, None)
            if nb_j != nb:  # an estimator without a fixed bin count
                nb = nb_j
                pairs.resize(2 * nb, refcheck=False)
                sum_score.resize(nb, refcheck=False)
            f = np.bincount(ids, weights=sj, minlength=nb)
            ids = ids * 2
        sum_score += f
        ids += t[i : i + _CHUNK]
        pairs += np.bincount(ids, minlength=2 * nb)
    per_target = pairs.reshape(nb, 2)
    count = per_target.sum(axis=1).astype(np.float64)
    sum_target = per_target[:, 1].astype(np.float64)
    return BinStatistics(count, count, sum_score, sum_target, sum_target.copy())


def _empty_stats(sl: LensSlice) -> BinStatistics:
    shape: tuple[int, ...] = (0,) if sl.scores.ndim == 1 else (0, int(sl.scores.shape[1]))
    z = np.zeros(0)
    return BinStatistics(z, z, np.zeros(shape), np.zeros(shape), np.zeros(shape))


def _aggregate_bins(d: np.ndarray, st: BinStatistics, total: float, aggregate: str) -> float:
    ne = st.nonempty
    if not ne.any():
        return 0.0
    if aggregate == "weighted":
        return float(np.sum(d[ne] * st.weight[ne]) / total)
    if aggregate == "mean":
        return float(np.mean(d[ne]))
    if aggregate == "max":
        return float(np.max(d[ne]))
    raise CalibrationInputError(f"aggregate must be 'weighted', 'mean' or 'max'; got {aggregate!r}")


def _kernel_calibration_error(
    P: Predictions,
    lens: Lens,
    selection: Selection | None,
    est: Any,
    div: Divergence,
    aggregate: str,
    class_aggregate: str,
) -> float:
    """Pipeline with a kernel estimator: ``d(r_i, s_i)`` at every sample, then averaged.

    ``r_i = est.regress(...)`` estimates E[T | S = s_i] (Popordanoska et al. (2024) eq. 9, Chidambaram & Ge (2024)
    eq. C.3's plug-in form); ``aggregate="weighted"`` (or ``"mean"``) gives the
    weighted mean over samples, ``"max"`` the largest value.
    """
    values = []
    slice_weights = []
    any_nonempty = False
    for sl in lens(P):
        if selection is not None:
            sl = sl.subset(selection(sl))
        if sl.n == 0:
            values.append(0.0)
            slice_weights.append(0.0)
            continue
        any_nonempty = True
        s = as_float64_numpy(sl.scores)
        t = as_float64_numpy(sl.targets)
        w = None if sl.weights is None else as_float64_numpy(sl.weights)
        slice_weights.append(float(len(s)) if w is None else float(np.sum(w)))
        r = np.asarray(as_float64_numpy(est.regress(s, t, w)))
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.asarray(div(r, s), dtype=np.float64)
        if aggregate == "max":
            values.append(float(np.max(d)))
        elif aggregate in ("weighted", "mean"):
            values.append(float(np.average(d, weights=w)))
        else:
            raise CalibrationInputError(
                f"aggregate must be 'weighted', 'mean' or 'max'; got {aggregate!r}"
            )
    if not any_nonempty:
        raise CalibrationInputError("the selection left no samples to measure")
    value = _aggregate_slices(values, slice_weights, class_aggregate)
    if div.root is not None:
        value = value ** (1.0 / div.root)
    return value


def _aggregate_slices(values: list[float], weights: list[float], how: str) -> float:
    """Combine per-slice errors: mean, sum, or mean weighted by slice weight."""
    if how == "mean":
        return float(np.mean(values))
    if how == "sum":
        return float(np.sum(values))
    return float(np.dot(values, weights) / np.sum(weights))


def binned_statistics(
    probs: Any,
    labels: Any = None,
    *,
    lens: str | Lens = "auto",
    selection: Selection | Iterable[Selection] | None = None,
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> list[SliceStatistics]:
    """Per-bin sufficient statistics of every lens slice (pipeline up to the estimator).

    Parameters are those of :func:`calibration_error`. Returns one
    :class:`SliceStatistics` per slice (one for most lenses, ``k`` for the
    class-wise lens).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import binned_statistics
    >>> st = binned_statistics(np.array([0.9, 0.2, 0.6]), [1, 0, 0], lens="binary")[0].stats
    >>> st.count.nonzero()[0].tolist(), st.mean_target[st.nonempty].tolist()
    ([2, 8, 13], [0.0, 0.0, 1.0])
    """
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    est = EqualWidth(15) if estimator is None else estimator
    if not hasattr(est, "assign"):
        raise CalibrationInputError(
            f"binned_statistics needs a binning estimator (with assign()); got {est!r}"
        )
    return list(_iter_slices(P, get_lens(lens), combine(selection), est))


@fill_doc
def calibration_error(
    probs: Any,
    labels: Any = None,
    *,
    lens: str | Lens = "auto",
    selection: Selection | Iterable[Selection] | None = None,
    estimator: Binning | None = None,
    divergence: str | Divergence = "l1",
    aggregate: Aggregate = "weighted",
    class_aggregate: Literal["mean", "sum", "weighted"] = "mean",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Generalized calibration error: any lens, selection, estimator, divergence.

    Implements the histogram estimate of Kirchenbauer, Oaks & Heim (2022) eq. 3,
    ``sum_B (|B| / N) d(g_bar_B, y_bar_B)``, generalised to sample weights,
    other aggregations over bins and over class slices, and Lp roots.

    Parameters
    ----------
    {probs}
    {labels}
    lens : str or callable, default "auto"
        ``"auto"`` (``"binary"`` for 1-D input, P(y = 1) against y;
        ``"top_label"`` for ``(n, k)`` input), ``"top_label"``,
        ``"classwise"``, ``"canonical"``, ``"binary"``, or
        :func:`~calipers.pipeline.lenses.top_k`, :func:`~calipers.pipeline.lenses.single_class`,
        :func:`~calipers.pipeline.lenses.grouping`.
    selection : callable or list of callables, optional
        Selection operators (:mod:`calipers.pipeline.selection`), combined with AND.
    estimator : Binning or kernel estimator, default ``EqualWidth(15)``
        ``EqualWidth``, ``EqualMass``, ``FixedEdges`` or ``KDTree``; or a kernel
        estimator with a ``regress(scores, targets, weights)`` method
        (:class:`~calipers.DirichletKernel`, ``NadarayaWatson``), in which case the
        divergence is applied to ``(E^[T | S = s_i], s_i)`` at every sample and
        averaged with the sample weights (Popordanoska et al. (2024) eq. 9).
    divergence : str or Divergence, default "l1"
        ``"l1"``, ``"tvd"``, ``"l2"`` (root of the mean square), ``"squared_l2"``,
        ``"kl"``, or an instance from :mod:`calipers.pipeline.divergences`.
    aggregate : {"weighted", "mean", "max"}, default "weighted"
        How per-bin divergences are combined within a slice.
    class_aggregate : {"mean", "sum", "weighted"}, default "mean"
        How slices (classes) are combined: their mean, their sum, or their
        mean weighted by each slice's total weight.
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float, or a detached 0-d ``torch.float64`` tensor on the input's device for PyTorch
    input: per-bin (or per-sample estimator) totals are summed in float64 NumPy, so no
    gradient reaches ``probs`` (bin membership is piecewise constant in any case; for a
    differentiable calibration loss see docs/pytorch.md).

    Examples
    --------
    Guo et al.'s ECE and the same pipeline with other parts:

    >>> import numpy as np
    >>> import calipers as cp
    >>> P = np.array([[.6,.3,.1],[.4,.4,.2],[.8,.1,.1],[.2,.5,.3],[.98,.015,.005],[.34,.33,.33]])
    >>> y = np.array([0, 1, 0, 2, 0, 1])
    >>> round(cp.calibration_error(P, y, estimator=cp.EqualWidth(5)), 6)
    0.176667
    >>> round(cp.calibration_error(P, y, lens="classwise", estimator=cp.EqualMass(2)), 6)
    0.173333

    A kernel estimator instead of bins (CE_KL of Popordanoska et al. (2024) eq. 10):

    >>> g = np.array([[.8, .2], [.6, .4], [.3, .7]])
    >>> round(cp.calibration_error(g, [0, 0, 1], lens="canonical",
    ...                            estimator=cp.DirichletKernel(1.0), divergence="kl"), 6)
    0.435817
    """
    est = EqualWidth(15) if estimator is None else estimator
    div = get_divergence(divergence)
    if class_aggregate not in ("mean", "sum", "weighted"):
        raise CalibrationInputError(
            f"class_aggregate must be 'mean', 'sum' or 'weighted'; got {class_aggregate!r}"
        )
    residuals = selection is None and aggregate == "weighted" and isinstance(div, Lp) and div.p == 1

    def checked(validate: bool) -> Predictions:
        return check_predictions(
            probs,
            labels,
            logits=logits,
            sample_weight=sample_weight,
            validate=validate,
            classes=classes,
        )

    # Long 1-D binary probabilities (the commonest call): the range of the scores is
    # checked by the binning of the residual path itself (a score outside [0, 1] falls
    # outside the bins, a non-finite one makes a total non-finite), which then runs
    # the full check; the labels are checked as always.
    defer = (
        validate
        and residuals
        and lens in ("auto", "binary")
        and sample_weight is None
        and not logits
        and isinstance(probs, np.ndarray)
        and probs.ndim == 1
        and probs.dtype.kind == "f"
        and probs.shape[0] > 2 * _CHUNK
    )
    if defer and classes is None and _float_01_candidate(labels, probs):
        # float 0/1 labels (pandas and torch targets often are): checked chunk by chunk
        # inside the residual loop, in cache, instead of cast to integers beforehand
        if isinstance(est, EqualWidth):
            check_bins_for_samples(int(est.n_bins), int(probs.shape[0]))
            value = _l1_residual_loop(probs, labels, est, lambda: checked(True), True)
            if value is not None:
                return wrap_scalar(value, probs)
    P = checked(validate and not defer)
    if residuals:
        value = _l1_from_residuals(
            P, get_lens(lens), est, (lambda: checked(True)) if defer else None
        )
        if value is not None:
            return wrap_scalar(value, P.probs)
    if defer:
        P = checked(True)
    if hasattr(est, "regress"):
        return wrap_scalar(
            _kernel_calibration_error(
                P, get_lens(lens), combine(selection), est, div, aggregate, class_aggregate
            ),
            P.probs,
        )
    slices = _iter_slices(P, get_lens(lens), combine(selection), est)
    value = error_from_statistics(
        slices, div, aggregate, class_aggregate, "the selection left no samples to measure"
    )
    return wrap_scalar(value, P.probs)


def _l1_from_residuals(
    P: Predictions, lens: Lens, estimator: Binning, check: Callable[[], Any] | None = None
) -> float | None:
    """The weighted-l1 error of one long binary slice from per-bin residual totals.

    With the l1 divergence and bins weighted by their size, a bin contributes
    ``W_b |mean target - mean score| = |sum_b (t_i - s_i)|``, so the error is
    ``sum_b |sum_{i in b} (s_i - t_i)| / n``: one weighted histogram of the
    residuals instead of the totals of scores, targets and counts (Guo et al.
    2017's ECE is this quantity; so is the binary ECE of every peer library).
    Returns ``None`` (the general path then runs) unless the lens gives one
    unweighted 1-D slice of 0/1 integer targets longer than two chunks, binned
    by :class:`~calipers.estimators.binning.EqualWidth`. Equal to the general path up to
    the order of the floating-point sums (1e-15 relative).

    ``check`` (the full validation of the scores, when the caller deferred it) is
    called as soon as a score falls outside the bins (outside [0, 1]) or a total
    is not finite (a NaN or infinite score): it raises for an invalid score and
    returns for one within the tolerance of the validation, which is then
    binned with clipping.
    """
    if not isinstance(estimator, EqualWidth) or P.sample_weight is not None:
        return None
    slices = list(lens(P))
    if len(slices) != 1:
        return None
    sl = slices[0]
    s, t = sl.scores, sl.targets
    if not (
        isinstance(s, np.ndarray)
        and isinstance(t, np.ndarray)
        and s.ndim == 1
        and s.dtype.kind == "f"
        and t.dtype.kind in "iub"
        and sl.weights is None
        and sl.binary_targets
        and s.shape[0] > 2 * _CHUNK
    ):
        return None
    check_bins_for_samples(int(estimator.n_bins), int(s.shape[0]))
    return _l1_residual_loop(s, t, estimator, check, False)


def _float_01_candidate(labels: Any, probs: Any) -> bool:
    """1-D float64 NumPy labels, one per score: the float form of the binary fast path."""
    return (
        isinstance(labels, np.ndarray)
        and labels.ndim == 1
        and labels.dtype == np.float64
        and labels.shape[0] == probs.shape[0]
    )


def _l1_residual_loop(
    s: np.ndarray,
    t: np.ndarray,
    estimator: EqualWidth,
    check: Callable[[], Any] | None,
    float_targets: bool,
) -> float | None:
    """The residual histogram of :func:`_l1_from_residuals`, chunk by chunk.

    With ``float_targets`` the targets are float labels not yet checked: each
    chunk (in cache) must hold only 0 and 1 (minimum, maximum, and as many
    non-zero values as ones). Otherwise ``check`` (the full validation) runs
    and raises the general message naming the label; if it does not raise
    (a -0.0 label, say), ``None`` sends the call to the general path.
    """
    nb = int(estimator.n_bins)
    m = _CHUNK
    buffers = (np.empty(m, dtype=s.dtype), np.empty(m, dtype=s.dtype), np.empty(m, dtype=np.intp))
    r = np.empty(m)  # float64 residuals: s - t is exact for t in {0, 1} and |s| <= 1
    totals = np.zeros(nb)
    for i in range(0, s.shape[0], m):
        sj = s[i : i + m]
        tj = t[i : i + m]
        if float_targets and not (
            tj.min() >= 0
            and tj.max() <= 1
            and np.count_nonzero(tj.view(np.int64)) == np.count_nonzero(tj == 1)
        ):
            if check is not None:
                check()  # the full validation names the offending label
            return None
        rj = np.subtract(sj, tj, out=r[: sj.shape[0]], dtype=np.float64)
        with np.errstate(invalid="ignore"):  # a NaN score (checked below) cast to an id
            ids = estimator._assign_1d(sj, buffers, clip=False)
        f: np.ndarray
        try:
            f = np.bincount(ids, weights=rj, minlength=nb)
        except ValueError:  # a negative id: a score below 0 (validate=False)
            f = np.zeros(0)
        if f.shape[0] != nb:  # outside [0, 1]: bin with clipping, as the general path
            if check is not None:
                check()  # raises unless the scores are valid (within the tolerance)
                check = None
            f = np.bincount(estimator._assign_1d(sj), weights=rj, minlength=nb)
        totals += f
    if check is not None and not np.isfinite(totals).all():
        check()  # a NaN or infinite score: the validation names it
    return float(np.abs(totals).sum() / s.shape[0])


def error_from_statistics(
    slices: Iterable[SliceStatistics],
    divergence: Divergence,
    aggregate: str,
    class_aggregate: str,
    empty_message: str = "no samples to measure",
) -> float:
    """The calibration error of per-bin statistics: divergence, then the two aggregates.

    ``d(mean target, mean score)`` per bin, aggregated over the non-empty bins
    of each slice (``aggregate``), then over the slices (``class_aggregate``),
    and the divergence's root taken last (RMSCE): the end of the pipeline of
    :func:`calibration_error`, shared by everything that holds bin statistics
    (:class:`calipers.CalibrationState`, the metric objects of
    :mod:`calipers.stream.torchmetrics`). Raises ``empty_message`` when no slice has
    weight.
    """
    values: list[float] = []
    slice_weights: list[float] = []
    any_nonempty = False
    for ss in slices:
        slice_weights.append(ss.total_weight)
        if ss.total_weight <= 0:
            values.append(0.0)
            continue
        any_nonempty = True
        st = ss.stats
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.asarray(divergence(st.mean_target, st.mean_score), dtype=np.float64)
        values.append(_aggregate_bins(d, st, ss.total_weight, aggregate))
    if not any_nonempty:
        raise CalibrationInputError(empty_message)
    value = _aggregate_slices(values, slice_weights, class_aggregate)
    if divergence.root is not None:
        value = value ** (1.0 / divergence.root)
    return float(value)
