"""Calibration of classification predictions within each group, beside its noise level.

For each group of rows (a label, an intersection of protected attributes, a
mask, a feature threshold): its size, events (or correct predictions), mean
predicted probability, observed rate, calibration error with a seeded bootstrap
interval, and the error a perfectly calibrated model would show at that group's
size with these predictions (the mean and 95th percentile of the error under
labels drawn from the predictions), so that a small group's large error is not
over-read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..inference import confidence_interval
from ..metrics import reliability_table as _reliability_table
from ..pipeline.lenses import lens_arrays
from ..validation import (
    CalibrationInputError,
    Predictions,
    check_integer,
    check_predictions,
)
from ._family import build_family
from ._null import GroupMetric, monte_carlo_p_value, null_generator, resolve_metric, subset

__all__ = ["GroupStatistics", "SubgroupCalibration", "calibration_by_group", "frame_or_records"]


def frame_or_records(columns: dict[str, Any], as_frame: bool | None) -> Any:
    """A pandas DataFrame (``as_frame`` True, or None with pandas installed), else a record array."""
    if as_frame is None or as_frame:
        try:
            import pandas as pd
        except ImportError as e:
            if as_frame:
                raise ImportError("as_frame=True needs pandas: pip install pandas") from e
        else:
            return pd.DataFrame(columns)
    arrays = []
    for v in columns.values():
        a = np.asarray(v)
        arrays.append(a.astype(str) if a.dtype == object else a)
    dtype = np.dtype([(name, a.dtype) for name, a in zip(columns, arrays, strict=True)])
    return np.rec.fromarrays(arrays, dtype=dtype)


@dataclass(frozen=True)
class GroupStatistics:
    """The calibration of one group of rows.

    Attributes
    ----------
    group : object
        The group's name: a label of ``groups=``, ``"sex=F & race=B"`` for an
        intersection of attributes, a mask's name, ``"age <= 31"`` for a
        feature threshold, ``"all"`` for every row.
    n : int
        Rows in the group.
    weight : float
        Their total sample weight (``n`` without weights).
    events : float
        Weighted sum of the target: events (``y = 1``) for binary risks,
        correct predictions for the top label of ``(n, k)`` probabilities.
    mean_predicted : float
        Weighted mean predicted probability (the confidence for the top label).
    observed_rate : float
        ``events / weight``: the event rate, or the accuracy.
    error : float
        The calibration error of the group's rows (the metric on them alone).
    ci_low, ci_high : float
        Seeded bootstrap interval of ``error`` (NaN with ``n_resamples=0``).
    null_mean, null_q95 : float
        Mean and 95th percentile of the error under labels drawn from the
        predictions: what a perfectly calibrated model with these
        predictions shows at this group's size (NaN with ``n_null=0``).
    p_value : float
        ``(1 + #{null >= error}) / (1 + n_null)``: the consistency-resampling
        p-value of this group alone (not corrected for looking at many
        groups; :func:`worst_group` gives the corrected one).
    """

    group: Any
    n: int
    weight: float
    events: float
    mean_predicted: float
    observed_rate: float
    error: float
    ci_low: float
    ci_high: float
    null_mean: float
    null_q95: float
    p_value: float

    @property
    def exceeds_noise(self) -> bool:
        """``error > null_q95``: larger than 95 % of a calibrated model's errors at this size."""
        return bool(self.error > self.null_q95)

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values (JSON-ready; NaN stays NaN)."""
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        g = d["group"]
        d["group"] = g.item() if isinstance(g, np.generic) else g
        d["exceeds_noise"] = self.exceeds_noise
        return d


_COLUMNS = (*(f.name for f in fields(GroupStatistics)), "exceeds_noise")


@dataclass(frozen=True)
class SubgroupCalibration:
    """Calibration within each group: returned by :func:`calibration_by_group`.

    Attributes
    ----------
    metric : str
        The metric's name (``"ece"``, ...).
    groups : tuple of GroupStatistics
        One entry per group, in the order the groups were named.
    overall : GroupStatistics
        The same numbers over all rows (group ``"all"``).
    skipped : tuple of (object, int)
        Groups left out for having fewer than ``min_size`` rows, with their sizes.
    n_null : int
        Label draws behind the noise levels.
    n_resamples : int
        Bootstrap resamples behind each interval.
    confidence_level : float
        Of the bootstrap intervals.
    max_null : numpy.ndarray
        ``(n_null,)`` the largest error over the groups on each draw of labels
        from the predictions (the null distribution of the worst group).
    """

    metric: str
    groups: tuple[GroupStatistics, ...]
    overall: GroupStatistics
    skipped: tuple[tuple[Any, int], ...]
    n_null: int
    n_resamples: int
    confidence_level: float
    max_null: np.ndarray = field(repr=False, compare=False)
    _predictions: Predictions = field(repr=False, compare=False)
    _rows: tuple[np.ndarray, ...] = field(repr=False, compare=False)
    _lens: str = field(default="auto", repr=False, compare=False)

    def __post_init__(self) -> None:
        a = np.array(self.max_null, dtype=np.float64)
        a.setflags(write=False)
        object.__setattr__(self, "max_null", a)

    @property
    def names(self) -> list[Any]:
        """The group names, in order."""
        return [g.group for g in self.groups]

    def __getitem__(self, group: Any) -> GroupStatistics:
        for g in self.groups:
            if g.group == group:
                return g
        raise KeyError(group)

    def __str__(self) -> str:
        """One line per group (then ``all``): the error, its interval and the noise level."""
        pct = round(100 * self.confidence_level)
        lines = [
            f"{self.metric} per group ({pct} % bootstrap interval; noise: a calibrated "
            "model with these predictions at the group's size)"
        ]
        for g in (*self.groups, self.overall):
            reading = "exceeds the noise" if g.exceeds_noise else "within the noise"
            lines.append(
                f"  {g.group} (n = {g.n}): {g.error:.4g} [{g.ci_low:.4g}, {g.ci_high:.4g}]; "
                f"noise mean {g.null_mean:.4g}, 95th percentile {g.null_q95:.4g}: {reading}"
            )
        for name, size in self.skipped:
            lines.append(f"  {name} (n = {size}): skipped, fewer rows than min_size")
        return "\n".join(lines)

    def table(self, as_frame: bool | None = None) -> Any:
        """One row per group (``overall`` last, as group ``"all"``).

        A pandas DataFrame (``as_frame=True``, or by default when pandas is
        installed), else a NumPy record array; the columns are the fields of
        :class:`GroupStatistics` and ``exceeds_noise``.
        """
        rows = [r.to_dict() for r in (*self.groups, self.overall)]
        cols: dict[str, Any] = {}
        for c in _COLUMNS:
            vals = [r[c] for r in rows]
            cols[c] = np.array(vals, dtype=object) if c == "group" else np.array(vals)
        return frame_or_records(cols, as_frame)

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values: the metric, each group, the overall row, the skipped groups."""
        return {
            "metric": self.metric,
            "groups": [g.to_dict() for g in self.groups],
            "overall": self.overall.to_dict(),
            "skipped": [[g.item() if isinstance(g, np.generic) else g, s] for g, s in self.skipped],
            "n_null": self.n_null,
            "n_resamples": self.n_resamples,
            "confidence_level": self.confidence_level,
        }

    def reliability_table(self, group: Any, **kwargs: Any) -> Any:
        """The reliability table of one group's rows (:func:`calipers.reliability_table`).

        ``kwargs`` go to :func:`calipers.reliability_table` (``n_bins``,
        ``estimator``, ``interval``, ``as_frame``, ...); the lens is the one
        the errors were computed with.
        """
        names = self.names
        if group == "all" and "all" not in names:
            P = self._predictions
        else:
            try:
                j = names.index(group)
            except ValueError:
                raise CalibrationInputError(
                    f"no group {group!r}; the groups are {names[:10]}"
                    f"{' ...' if len(names) > 10 else ''}"
                ) from None
            P = subset(self._predictions, self._rows[j])
        kwargs.setdefault("lens", self._lens)
        return _reliability_table(P, None, **kwargs)


def _check_level(confidence_level: Any) -> float:
    try:
        c = float(confidence_level)
    except (TypeError, ValueError):
        c = float("nan")
    if not 0.0 < c < 1.0:
        raise CalibrationInputError(
            f"confidence_level must be a number in (0, 1); got {confidence_level!r}"
        )
    return c


def _seeds(seed: Any, k: int) -> list[int | None]:
    if seed is None:
        return [None] * k
    ss = np.random.SeedSequence(seed)
    return [int(c.generate_state(1)[0]) for c in ss.spawn(k)]


def _check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise CalibrationInputError(f"seed must be a non-negative integer or None; got {seed!r}")
    return int(seed)


def _describe(P: Predictions, rows: np.ndarray, lens: str) -> tuple[int, float, float, float]:
    s, t, w1 = lens_arrays(subset(P, rows), lens)
    w = w1 if P.sample_weight is None else np.asarray(P.sample_weight, np.float64)[rows]
    W = float(np.sum(w))
    return int(rows.shape[0]), W, float(np.sum(w * t)), float(np.sum(w * s))


def evaluate_groups(
    probs: Any,
    labels: Any,
    *,
    groups: Any,
    attributes: Any,
    masks: Any,
    features: Any,
    n_thresholds: int,
    combine: str,
    metric: Any,
    min_size: int,
    n_resamples: int,
    n_null: int,
    confidence_level: float,
    seed: Any,
    sample_weight: Any,
    logits: bool,
    classes: Any,
    metric_kwargs: dict[str, Any],
) -> SubgroupCalibration:
    """The computation behind :func:`calibration_by_group` and :func:`worst_group`."""
    P = check_predictions(
        probs, labels, sample_weight=sample_weight, logits=logits, classes=classes
    )
    n = P.n_samples
    fn, name = resolve_metric(metric)
    family = build_family(
        n,
        groups=groups,
        attributes=attributes,
        masks=masks,
        features=features,
        n_thresholds=n_thresholds,
        combine=combine,
        min_size=min_size,
    )
    B = check_integer(n_resamples, "n_resamples", minimum=0, maximum=10**6)
    D = check_integer(n_null, "n_null", minimum=0, maximum=10**6)
    level = _check_level(confidence_level)
    s0 = _check_seed(seed)
    lens = metric_kwargs.get("lens", "auto")
    lens = lens if isinstance(lens, str) and lens in ("auto", "binary", "top_label") else "auto"
    all_rows = [*family.rows, np.arange(n)]
    gm = GroupMetric(fn, metric_kwargs, P, all_rows)
    if D:
        null = gm.null(D, null_generator(s0))
    else:
        null = np.full((0, len(all_rows)), np.nan)
    seeds = _seeds(None if s0 is None else s0 + 1, len(all_rows))
    stats = []
    for j, rows in enumerate(all_rows):
        n_j, W, events, pred = _describe(gm.P, rows, lens)
        err = float(gm.observed[j])
        lo = hi = float("nan")
        if B:
            ci = confidence_interval(
                fn,
                subset(gm.P, rows),
                None,
                n_resamples=B,
                confidence_level=level,
                seed=seeds[j],
                **metric_kwargs,
            )
            lo, hi = float(ci.low), float(ci.high)
        if D:
            col = null[:, j]
            nm, q95 = float(np.mean(col)), float(np.quantile(col, 0.95))
            p = monte_carlo_p_value(err, col)
        else:
            nm = q95 = p = float("nan")
        stats.append(
            GroupStatistics(
                group=family.names[j] if j < len(family.names) else "all",
                n=n_j,
                weight=W,
                events=events,
                mean_predicted=pred / W if W > 0 else float("nan"),
                observed_rate=events / W if W > 0 else float("nan"),
                error=err,
                ci_low=lo,
                ci_high=hi,
                null_mean=nm,
                null_q95=q95,
                p_value=p,
            )
        )
    G = len(family.rows)
    max_null = null[:, :G].max(axis=1) if D else np.zeros(0)
    return SubgroupCalibration(
        metric=name,
        groups=tuple(stats[:G]),
        overall=stats[G],
        skipped=tuple(family.skipped),
        n_null=D,
        n_resamples=B,
        confidence_level=level,
        max_null=max_null,
        _predictions=gm.P,
        _rows=tuple(family.rows),
        _lens=lens,
    )


@fill_doc
def calibration_by_group(
    probs: Any,
    labels: Any = None,
    *,
    groups: Any = None,
    attributes: Any = None,
    masks: Any = None,
    features: Any = None,
    n_thresholds: int = 4,
    combine: str = "intersections",
    metric: Any = "ece",
    min_size: int = 10,
    n_resamples: int = 1000,
    n_null: int = 1000,
    confidence_level: float = 0.95,
    seed: int | None = 0,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
    **metric_kwargs: Any,
) -> SubgroupCalibration:
    """Calibration error within each group, with a bootstrap interval and the noise level.

    For fairness audits and deployment slices: calibration on average can hide
    groups whose risks are too high and groups whose risks are too low
    (Hébert-Johnson, Kim, Reingold & Rothblum 2018; Pleiss et al. 2017). For
    every group this gives its size, events, mean predicted probability and
    observed rate, the calibration error of its rows (``metric``, the expected
    calibration error of Guo et al. 2017 by default) with a seeded bootstrap
    interval (:func:`calipers.confidence_interval`), and the **noise level**:
    the mean and 95th percentile of the same error when the labels are drawn
    from the predictions themselves (consistency resampling, Bröcker & Smith
    2007; Vaicenavicius et al. 2019), i.e. what a perfectly calibrated model
    with these predictions would show at that group's size. A binned error is
    biased upwards by about ``sqrt(p (1 - p) / n)`` per bin, so a group of 50
    rows shows a large error even when calibrated; compare ``error`` with
    ``null_q95``, not with the other groups' errors.

    One set of label draws serves every group (each draw relabels all rows),
    so the result also holds the largest error over the groups on each draw
    (``max_null``), the null distribution that :func:`worst_group` compares
    the worst group with.

    Parameters
    ----------
    {probs}
    {labels}
    groups : array-like of shape (n,), optional
        A label per row (numbers or strings); one group per distinct label.
    attributes : mapping or pandas.DataFrame, optional
        Several protected attributes (name -> one value per row); groups are
        their intersections, ``"sex=F & race=B"`` (see ``combine``).
    masks : mapping, optional
        Named boolean masks of the rows (any groups, overlapping or not).
    features : mapping, pandas.DataFrame or array-like, optional
        Numeric features; each is cut at ``n_thresholds`` quantiles ``t`` into
        the groups ``x <= t`` and ``x > t``.
    n_thresholds : int, default 4
        Thresholds per feature: the quantiles ``j / (n_thresholds + 1)``.
    combine : {"intersections", "marginals", "both"}, default "intersections"
        For ``attributes``: the cells of all attributes together, each
        attribute's own groups, or both (with every intersection of two or
        more attributes).
    metric : str or callable, default "ece"
        A registered metric name (``"ece"``, ``"ace"``, ``"smece"``, ...) or a
        function called as ``metric(predictions, None, **metric_kwargs)`` with
        validated :class:`calipers.Predictions` of the group's rows, as
        :func:`calipers.confidence_interval` calls it.
    min_size : int, default 10
        Groups with fewer rows are left out (listed in ``skipped``).
    n_resamples : int, default 1000
        Bootstrap resamples per group; 0 skips the intervals.
    n_null : int, default 1000
        Draws of labels from the predictions; 0 skips the noise levels.
    confidence_level : float, default 0.95
        Of the bootstrap intervals.
    seed : int or None, default 0
        Seeds the label draws (``numpy.random.default_rng([seed, 1])``, a
        stream apart from ``default_rng(seed)``, which your predictions may
        come from) and each group's bootstrap (a child seed of ``seed + 1``);
        equal seeds give equal results.
    {sample_weight}
    {logits}
    {classes}
    **metric_kwargs
        Passed to the metric (``n_bins=10``, ``lens="binary"``, ...).

    Returns
    -------
    SubgroupCalibration
        ``groups`` (one :class:`GroupStatistics` per group), ``overall``,
        ``table()``, ``to_dict()``, ``reliability_table(group)``.

    Raises
    ------
    CalibrationInputError
        No groups named; a group array of the wrong length; an empty mask; no
        group with ``min_size`` rows; bad options.

    See Also
    --------
    worst_group : the worst group, compared with the worst of a calibrated model.
    multicalibration_audit : the largest violation over groups and score bins.
    calipers.regression.calibration_by_group : the same for regression predictions.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.subgroups import calibration_by_group
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=4000)
    >>> sex = rng.choice(["F", "M"], size=4000)
    >>> y = (rng.uniform(size=4000) < np.where(sex == "F", p, p**2)).astype(int)
    >>> r = calibration_by_group(p, y, groups=sex, n_resamples=200, n_null=200)
    >>> [(g.group, g.n, round(g.error, 3), g.exceeds_noise) for g in r.groups]
    [('F', 1948, 0.022, False), ('M', 2052, 0.157, True)]
    """
    return evaluate_groups(
        probs,
        labels,
        groups=groups,
        attributes=attributes,
        masks=masks,
        features=features,
        n_thresholds=n_thresholds,
        combine=combine,
        metric=metric,
        min_size=min_size,
        n_resamples=n_resamples,
        n_null=n_null,
        confidence_level=confidence_level,
        seed=seed,
        sample_weight=sample_weight,
        logits=logits,
        classes=classes,
        metric_kwargs=metric_kwargs,
    )
