"""The worst-calibrated group of a family, judged against the worst of a calibrated model.

Looking at many groups and reporting the worst one is a multiple comparison:
even a perfectly calibrated model has a worst group, and its error grows with
the number of groups and shrinks with their sizes. The honest comparison is
the worst group's error against the distribution of the *largest* error over
the same family when the labels are drawn from the predictions (a max-type
null, as in the audit of Hébert-Johnson, Kim, Reingold & Rothblum 2018).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ._calibration_by_group import GroupStatistics, SubgroupCalibration, evaluate_groups
from ._null import monte_carlo_p_value

__all__ = ["WorstGroup", "worst_group"]


@dataclass(frozen=True)
class WorstGroup:
    """The group with the largest calibration error, and whether it exceeds noise.

    Returned by :func:`worst_group`.

    Attributes
    ----------
    group : object
        The worst group's name.
    error : float
        Its calibration error.
    statistics : GroupStatistics
        Its full row (size, events, interval, its own noise level).
    n_groups : int
        Groups compared.
    family_null_mean, family_null_q95 : float
        Mean and 95th percentile of the largest error over the family under
        labels drawn from the predictions.
    family_p_value : float
        ``(1 + #{max null >= error}) / (1 + n_null)``: the p-value of the
        worst group corrected for having looked at every group of the family.
    by_group : SubgroupCalibration
        Every group's numbers.
    """

    group: Any
    error: float
    statistics: GroupStatistics
    n_groups: int
    family_null_mean: float
    family_null_q95: float
    family_p_value: float
    by_group: SubgroupCalibration

    @property
    def exceeds_noise(self) -> bool:
        """``error > family_null_q95``: worse than 95 % of a calibrated model's worst groups."""
        return bool(self.error > self.family_null_q95)

    def __str__(self) -> str:
        s = self.statistics
        verdict = (
            "exceeds what a calibrated model's worst group shows"
            if self.exceeds_noise
            else "is within what a calibrated model's worst group shows"
        )
        return (
            f"worst of {self.n_groups} groups: {self.group!s} (n = {s.n}), "
            f"{self.by_group.metric} = {self.error:.4g}; a calibrated model's worst group: "
            f"mean {self.family_null_mean:.4g}, 95th percentile {self.family_null_q95:.4g} "
            f"(p = {self.family_p_value:.3g}); the error {verdict}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values (JSON-ready)."""
        g = self.group
        return {
            "group": g.item() if isinstance(g, np.generic) else g,
            "error": self.error,
            "n_groups": self.n_groups,
            "family_null_mean": self.family_null_mean,
            "family_null_q95": self.family_null_q95,
            "family_p_value": self.family_p_value,
            "exceeds_noise": self.exceeds_noise,
            "statistics": self.statistics.to_dict(),
            "by_group": self.by_group.to_dict(),
        }


@fill_doc
def worst_group(
    probs: Any,
    labels: Any = None,
    *,
    groups: Any = None,
    attributes: Any = None,
    masks: Any = None,
    features: Any = None,
    n_thresholds: int = 4,
    combine: str = "both",
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
) -> WorstGroup:
    """The worst-calibrated group of a family, with the multiple-comparison honest noise level.

    Computes :func:`calibration_by_group` over the family (given groups,
    attributes with their intersections, masks, and for each numeric feature
    the groups ``x <= t`` and ``x > t`` over ``n_thresholds`` quantile
    thresholds), takes the group with the largest error, and compares that
    error with the distribution of the largest error over the same family when
    the labels are drawn from the predictions: the worst group of a perfectly
    calibrated model with these predictions. That is the correction for
    choosing the worst of many groups (a max-type null; Hébert-Johnson, Kim,
    Reingold & Rothblum 2018 audit the maximum over a family). Groups of
    fewer than ``min_size`` rows are left out; their noise would dominate the
    maximum.

    Parameters
    ----------
    {probs}
    {labels}
    groups, attributes, masks, features, n_thresholds
        The family of groups, as in :func:`calibration_by_group`.
    combine : {"intersections", "marginals", "both"}, default "both"
        For ``attributes``: here every attribute's own groups and every
        intersection by default.
    metric : str or callable, default "ece"
        As in :func:`calibration_by_group`.
    min_size : int, default 10
    n_resamples : int, default 1000
        Bootstrap resamples of each group's interval (0: none).
    n_null : int, default 1000
        Draws of labels from the predictions (at least 1).
    confidence_level : float, default 0.95
    seed : int or None, default 0
    {sample_weight}
    {logits}
    {classes}
    **metric_kwargs
        Passed to the metric.

    Returns
    -------
    WorstGroup

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.subgroups import worst_group
    >>> rng = np.random.default_rng(1)
    >>> p = rng.uniform(0.1, 0.9, size=3000)
    >>> age = rng.integers(18, 80, size=3000)
    >>> y = (rng.uniform(size=3000) < np.where(age > 60, p / 2, p)).astype(int)
    >>> w = worst_group(p, y, features={"age": age}, n_resamples=0, n_null=200)
    >>> w.group, round(w.error, 3), w.exceeds_noise
    ('age > 67', 0.259, True)
    """
    from ..validation import CalibrationInputError, check_integer

    if check_integer(n_null, "n_null", minimum=0, maximum=10**6) < 1:
        raise CalibrationInputError("worst_group needs n_null >= 1 draws for its noise level")
    r = evaluate_groups(
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
    errors = np.array([g.error for g in r.groups])
    j = int(np.nanargmax(errors))
    g = r.groups[j]
    return WorstGroup(
        group=g.group,
        error=g.error,
        statistics=g,
        n_groups=len(r.groups),
        family_null_mean=float(np.mean(r.max_null)),
        family_null_q95=float(np.quantile(r.max_null, 0.95)),
        family_p_value=monte_carlo_p_value(g.error, r.max_null),
        by_group=r,
    )
