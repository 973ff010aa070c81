"""Reliability curves of several groups: one Axes, or one panel per group.

The per-group reliability tables of :func:`calipers.subgroups.calibration_by_group`
drawn as curves of the observed rate against the mean prediction per bin, with
Wilson (1927) intervals, each group's size and calibration error in the
legend, and, when the noise levels were computed, whether the error exceeds
what a calibrated model shows at that group's size (Hébert-Johnson, Kim,
Reingold & Rothblum 2018; Pleiss et al. 2017 draw per-group calibration
curves for fairness audits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..subgroups import SubgroupCalibration, calibration_by_group
from ..validation import CalibrationInputError, check_integer
from ._style import (
    DOUBLE_COLUMN,
    FONT_SIZE,
    MODEL_COLORS,
    axes_grid,
    check_axes_count,
    figure_legend,
    ideal_line,
    new_figure,
    plain_text,
    rc_context,
    require_matplotlib,
    style_axes,
    unit_ticks,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["group_reliability_diagram"]


def _label(g: Any, metric: str) -> str:
    s = f"{plain_text(str(g.group))} (n = {g.n}, {metric} {g.error:.3f}"
    if np.isfinite(g.null_q95):
        s += f"; noise {g.null_q95:.3f}" + (" *" if g.exceeds_noise else "")
    return s + ")"


def group_reliability_diagram(
    probs: Any,
    labels: Any = None,
    *,
    groups: Any = None,
    attributes: Any = None,
    masks: Any = None,
    features: Any = None,
    n_thresholds: int = 4,
    combine: str = "intersections",
    min_size: int = 10,
    n_bins: int = 10,
    interval: Literal["wilson", "clopper_pearson"] | None = "wilson",
    layout: Literal["overlay", "grid"] = "overlay",
    max_groups: int = 8,
    n_null: int = 1000,
    seed: int | None = 0,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
    ax: Any = None,
    ncols: int | None = None,
    title: str | None = None,
) -> Figure:
    """Reliability curves per group, with intervals, on one Axes or in small multiples.

    For each group: the observed rate (the accuracy for the top label)
    against the mean prediction of each of ``n_bins`` equal-width bins of its
    rows (:meth:`calipers.subgroups.SubgroupCalibration.reliability_table`),
    with the bins' Wilson (1927) intervals as error bars; the legend gives the
    group's size, its calibration error and its noise level (the 95th
    percentile of the error of a calibrated model at that size, see
    :func:`calipers.subgroups.calibration_by_group`), starred where the error
    exceeds it. Calibration curves per group are the picture of group
    calibration in fairness audits (Pleiss et al. 2017; Hébert-Johnson, Kim,
    Reingold & Rothblum 2018).

    Parameters
    ----------
    probs : array-like, Predictions, or SubgroupCalibration
        Predictions (as :func:`calipers.subgroups.calibration_by_group` takes
        them), or its result computed beforehand (then ``labels`` and the
        group arguments are not given; its error and noise levels are used).
    labels : array-like of shape (n,), optional
    groups, attributes, masks, features, n_thresholds, combine, min_size
        The groups, as in :func:`calipers.subgroups.calibration_by_group`.
    n_bins : int, default 10
        Equal-width bins of each group's curve.
    interval : {"wilson", "clopper_pearson", None}, default "wilson"
        The bins' intervals (None: no error bars).
    layout : {"overlay", "grid"}, default "overlay"
        All curves on one Axes, or one panel per group (small multiples).
    max_groups : int, default 8
        Draw at most this many groups (the largest ones; the colours run out
        beyond 8 on one Axes).
    n_null : int, default 1000
        Label draws of the noise levels when computed here (0: none).
    seed : int or None, default 0
    sample_weight, logits, classes
        As in :func:`calipers.subgroups.calibration_by_group`.
    ax : matplotlib Axes or sequence of Axes, optional
        Draw here (one Axes for ``"overlay"``, one per group for ``"grid"``);
        default: a new figure.
    ncols : int, optional
        Panels per row for ``"grid"`` (default up to 3).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Each group's curve is a line with gid ``"group-<i>"`` (``i`` its
        position among the drawn groups) and label starting with its name.

    Examples
    --------
    >>> import numpy as np
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import group_reliability_diagram
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> g = rng.choice(["F", "M"], size=2000)
    >>> y = rng.uniform(size=2000) < np.where(g == "F", p, p**2)
    >>> fig = group_reliability_diagram(p, y, groups=g, n_null=200)
    >>> [line.get_label() for line in fig.axes[0].lines if line.get_gid().startswith("group")]
    ['F (n = 1022, ece 0.047; noise 0.052)', 'M (n = 978, ece 0.175; noise 0.052 *)']
    >>> plt.close(fig)
    """
    require_matplotlib()
    if layout not in ("overlay", "grid"):
        raise CalibrationInputError(f"layout must be 'overlay' or 'grid'; got {layout!r}")
    k = check_integer(max_groups, "max_groups", minimum=1, maximum=64)
    nb = check_integer(n_bins, "n_bins", minimum=1, maximum=1 << 16)
    if isinstance(probs, SubgroupCalibration):
        if labels is not None or any(
            a is not None for a in (groups, attributes, masks, features, sample_weight)
        ):
            raise CalibrationInputError(
                "probs is a SubgroupCalibration: give no labels, groups or weights with it"
            )
        result = probs
    else:
        result = calibration_by_group(
            probs,
            labels,
            groups=groups,
            attributes=attributes,
            masks=masks,
            features=features,
            n_thresholds=n_thresholds,
            combine=combine,
            min_size=min_size,
            n_resamples=0,
            n_null=n_null,
            seed=seed,
            sample_weight=sample_weight,
            logits=logits,
            classes=classes,
        )
    shown = list(result.groups)
    if len(shown) > k:
        keep = sorted(np.argsort([-g.n for g in shown], kind="stable")[:k])
        shown = [shown[i] for i in keep]
    fig: Any
    with rc_context():
        if layout == "overlay":
            if ax is None:
                fig = new_figure(3.5, 3.4)
                axes = [fig.add_subplot()] * len(shown)
            else:
                fig, axes = ax.figure, [ax] * len(shown)
        else:
            if ax is None:
                fig, axes = axes_grid(len(shown), ncols, DOUBLE_COLUMN / 3, 2.3, sharey=True)
            else:
                axes = check_axes_count(ax, len(shown), "layout='grid'")
                fig = axes[0].figure
        drawn: set[int] = set()
        for i, (g, a) in enumerate(zip(shown, axes, strict=True)):
            t = result.reliability_table(g.group, n_bins=nb, interval=interval, as_frame=False)
            color = MODEL_COLORS[i % len(MODEL_COLORS)]
            x, yv = np.asarray(t.mean_score), np.asarray(t.observed)
            if interval is not None:
                lo, hi = np.asarray(t.ci_lower), np.asarray(t.ci_upper)
                a.errorbar(
                    x,
                    yv,
                    yerr=np.vstack([yv - lo, hi - yv]),
                    fmt="none",
                    ecolor=color,
                    elinewidth=0.7,
                    capsize=1.5,
                    alpha=0.8,
                    gid=f"interval-{i}",
                )
            a.plot(
                x,
                yv,
                marker="o",
                ms=2.5,
                lw=1.1,
                color=color,
                label=_label(g, result.metric),
                gid=f"group-{i}",
            )
            if id(a) not in drawn:
                drawn.add(id(a))
                ideal_line(a, label=None)
                unit_ticks(a)
                a.set_ylim(-0.02, 1.02)
                a.set_xlabel("Mean predicted probability")
                if layout == "overlay" or i % (ncols or min(len(shown), 3)) == 0:
                    a.set_ylabel("Observed rate")
                style_axes(a)
                if layout == "grid":
                    a.set_title(plain_text(str(g.group)), fontsize=FONT_SIZE)
        if layout == "overlay":
            axes[0].legend(fontsize=FONT_SIZE - 1, loc="upper left", frameon=False)
            if title is not None:
                axes[0].set_title(title)
        else:
            figure_legend(fig, title=title, ncols=2)
    return fig
