"""Bar charts of context-specific calibration errors (Kirchenbauer, Oaks & Heim (2022) Figures 1, 3, 5 and 6).

Kirchenbauer, Oaks & Heim (2022) (the generalized ECE) compares models through several calibration
errors at once: top-k ECEs next to the traditional ECE (its Fig. 1), the
grouping lens with label selection per group (Fig. 3), and per-interval
(Likert) errors with the inter-interval distance next to the number of test
instances per interval (Figs. 5-6). These charts draw those numbers, one
colour per model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._backend import to_numpy
from .._docstrings import fill_doc
from ..estimators.binning import Binning, KDTree
from ..metrics import calibration_error
from ..metrics.binned import ece, full_ece, interval_calibration_error, top_k_ece
from ..pipeline.divergences import TVD
from ..pipeline.lenses import grouping
from ..pipeline.selection import LabelSelection
from ..validation import CalibrationInputError, Predictions
from ._style import (
    BAR_COLOR,
    FONT_SIZE,
    HIST_COLOR,
    MODEL_COLORS,
    SINGLE_COLUMN,
    figure_legend,
    new_figure,
    rc_context,
    require_matplotlib,
    resolve_models,
    style_axes,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "top_k_bar_chart",
    "top_k_bar_chart_data",
    "group_bar_chart",
    "group_bar_chart_data",
    "BarChartData",
    "interval_diagram",
    "interval_diagram_data",
    "IntervalDiagramData",
    "DEFAULT_LIKERT",
]

#: The parameter entries each diagram and its compute step share (filled in by
#: ``fill_doc``): written once here.
_PARAMETERS: dict[str, str] = dict(
    probs="probs : array-like of shape (n, k), or dict\n    One model, ``{name: probs}`` sharing ``labels``, or ``{name: (probs, labels)}``.",
    labels="labels : array-like of shape (n,), optional",
    ks="ks : sequence of int, default (1, 2, 3, 5)\n    Each smaller than the number of classes.",
    show_traditional="show_traditional : bool, default True",
    show_full="show_full : bool, default False",
    gamma="gamma : float, default 0.1\n    k-d tree bin fraction (Kirchenbauer, Oaks & Heim (2022) App. B).",
    estimator="estimator : Binning, optional\n    Replaces the k-d tree for top-k and full ECE.",
    probs_group_bar_chart="probs : array-like of shape (n, k), or dict",
    labels_group_bar_chart="labels : array-like of shape (n,), or None for a dict of (probs, labels)",
    groups="groups : sequence of sequences of int\n    A partition of the classes.",
    group_names='group_names : sequence of str, optional\n    Default ``"group 0"``, ``"group 1"``, ...',
    gamma_group_bar_chart="gamma : float, default 0.1",
    estimator_group_bar_chart="estimator : Binning, optional",
    probs_interval_diagram="probs : array-like of shape (n, k) or (n,), or dict",
    intervals="intervals : sequence of (low, high), default low/medium/high of Kirchenbauer, Oaks & Heim (2022) §5.3\n    ``((0, 0.33), (0.33, 0.66), (0.66, 1))``.",
    lens='lens : {"auto", "top_label", "binary"}, default "auto"\n    ``"auto"``: P(y = 1) for binary input, the top-label confidence otherwise.',
    gamma_interval_diagram="gamma : float, default 0.1",
    estimator_interval_diagram="estimator : Binning, optional",
)

#: The low / medium / high categories of Kirchenbauer, Oaks & Heim (2022) §5.3.
DEFAULT_LIKERT: tuple[tuple[float, float], ...] = ((0.0, 0.33), (0.33, 0.66), (0.66, 1.0))


def _colors(names: Sequence[str]) -> list[str]:
    if len(names) == 1:
        return [BAR_COLOR]
    return [MODEL_COLORS[i % len(MODEL_COLORS)] for i in range(len(names))]


def _grouped_bars(
    ax: Axes,
    categories: Sequence[str],
    values: dict[str, np.ndarray],
    ylabel: str,
    gid: str,
    fmt_na: str = "n/a",
) -> None:
    """One group of bars per category, one bar per model; NaN -> no bar, 'n/a'."""
    names = list(values)
    m = len(names)
    width = 0.8 / m
    x = np.arange(len(categories), dtype=np.float64)
    colors = _colors(names)
    for i, name in enumerate(names):
        v = np.asarray(values[name], dtype=np.float64)
        pos = x - 0.4 + width * (i + 0.5)
        ok = np.isfinite(v)
        bars = ax.bar(
            pos[ok],
            v[ok],
            width=width,
            color=colors[i],
            edgecolor="white",
            linewidth=0.4,
            label=name or None,
            zorder=2,
        )
        for j, patch in zip(np.flatnonzero(ok), bars.patches, strict=True):
            patch.set_gid(f"{gid}-{i}-{j}")
        for j in np.flatnonzero(~ok):
            ax.text(
                pos[j],
                0.0,
                fmt_na,
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=FONT_SIZE,
                color="#555555",
                gid=f"{gid}-na-{i}-{j}",
            )
    ax.set_xticks(x)
    ax.set_xticklabels(categories)
    ax.set_xlim(-0.6, len(categories) - 0.4)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", color="#E0E0E0", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    style_axes(ax)
    ax.tick_params(axis="x", length=0)
    top = max((float(np.nanmax(v)) for v in values.values() if np.isfinite(v).any()), default=0.0)
    ax.set_ylim(0.0, 1.12 * top if top > 0 else 1.0)


def _finish(fig: Figure, ax: Axes, names: Sequence[str], title: str | None, own: bool) -> None:
    show_legend = len(names) > 1 or bool(names[0])
    if own:
        if show_legend:
            handles, labs = ax.get_legend_handles_labels()
            figure_legend(fig, handles, labs, title=title, ncols=len(names))
        elif title:
            fig.suptitle(title)
    else:
        if show_legend:
            ax.legend(loc="upper right")
        if title:
            ax.set_title(title)


def _single_axes(ax: Any, height: float) -> tuple[Figure, Axes, bool]:
    if ax is None:
        fig = new_figure(SINGLE_COLUMN, height)
        return fig, fig.subplots(), True
    return ax.figure, ax, False


@fill_doc(**_PARAMETERS)
def top_k_bar_chart(
    probs: Any,
    labels: Any = None,
    *,
    ks: Sequence[int] = (1, 2, 3, 5),
    show_traditional: bool = True,
    show_full: bool = False,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    ax: Any = None,
    title: str | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Figure:
    """Top-k calibration errors per k, one bar per model (Kirchenbauer, Oaks & Heim (2022) §5.1, Fig. 1).

    For each ``k`` the top-k ECE of Kirchenbauer, Oaks & Heim (2022) eq. 4 (:func:`calipers.top_k_ece`:
    the ``k`` largest probabilities and the remainder, adaptive k-d tree bins,
    TVD), optionally preceded by the "Traditional" ECE (:func:`calipers.ece`,
    15 equal-width bins) and followed by the full (canonical) ECE
    (:func:`calipers.full_ece`), as in the paper's figure.

    Parameters
    ----------
    {probs}
    {labels}
    {ks}
    {show_traditional}
    {show_full}
    {gamma}
    {estimator}
    ax : Axes, optional
    title : str, optional
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    matplotlib.figure.Figure
        Bars have gids ``"topk-bar-<model>-<category>"``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import top_k_bar_chart
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> fig = top_k_bar_chart(d.probs, d.labels, ks=(1, 2))
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['Trad.', 'Top-1', 'Top-2']
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = top_k_bar_chart_data(
        probs,
        labels,
        ks=ks,
        show_traditional=show_traditional,
        show_full=show_full,
        gamma=gamma,
        estimator=estimator,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    with rc_context():
        fig, ax_, own = _single_axes(ax, 2.6)
        _grouped_bars(ax_, data.categories, data.values, data.y_label, "topk-bar")
        _finish(fig, ax_, list(data.values), title, own)
    return fig


@dataclass(frozen=True)
class BarChartData:
    """What :func:`top_k_bar_chart` and :func:`group_bar_chart` draw, without matplotlib.

    Returned by :func:`top_k_bar_chart_data` and :func:`group_bar_chart_data`.

    Attributes
    ----------
    categories : list of str
        The groups of bars, left to right (``"Trad."``, ``"Top-1"``, ...; ``"All"``
        and the group names).
    values : dict of str to numpy.ndarray
        Per model (``""`` for a single unnamed model), one calibration error per
        category, in [0, 1]; NaN where it has no value (a group without samples:
        "n/a").
    y_label : str
    x_label : str
        The label under the bars (``""``: none).
    """

    categories: list[str]
    values: dict[str, np.ndarray]
    y_label: str
    x_label: str = ""


@fill_doc(**_PARAMETERS)
def top_k_bar_chart_data(
    probs: Any,
    labels: Any = None,
    *,
    ks: Sequence[int] = (1, 2, 3, 5),
    show_traditional: bool = True,
    show_full: bool = False,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> BarChartData:
    """The top-k calibration errors a top-k bar chart draws (Kirchenbauer, Oaks & Heim (2022) Fig. 1).

    The compute step of :func:`top_k_bar_chart` (which draws exactly these): per
    model, :func:`calipers.ece` ("Trad."), :func:`calipers.top_k_ece` for each
    ``k`` and :func:`calipers.full_ece` ("Full"). Imports no matplotlib.

    Parameters
    ----------
    {probs}
    {labels}
    {ks}
    {show_traditional}
    {show_full}
    {gamma}
    {estimator}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    BarChartData

    Examples
    --------
    >>> import calipers as cp
    >>> from calipers.diagrams import top_k_bar_chart_data
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> data = top_k_bar_chart_data(d.probs["gaussian_nb"], d.labels, ks=(1, 2))
    >>> data.categories
    ['Trad.', 'Top-1', 'Top-2']
    >>> float(data.values[""][2]) == cp.top_k_ece(d.probs["gaussian_nb"], d.labels, k=2)
    True
    """
    models = resolve_models(
        probs,
        labels,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    ks_ = [int(k) for k in ks]
    if not ks_ or any(k != kk or k < 1 for k, kk in zip(ks_, ks, strict=True)):
        raise CalibrationInputError(f"ks must be positive integers; got {ks!r}")
    cats = (["Trad."] if show_traditional else []) + [f"Top-{k}" for k in ks_]
    cats += ["Full"] if show_full else []
    values: dict[str, np.ndarray] = {}
    for name, P in models.items():
        bad = [k for k in ks_ if k >= P.n_classes]
        if bad:
            raise CalibrationInputError(
                f"model {name!r} has {P.n_classes} classes; top-k needs k < {P.n_classes}, got {bad}"
            )
        v = [float(ece(P, None))] if show_traditional else []
        v += [float(top_k_ece(P, None, k=k, gamma=gamma, estimator=estimator)) for k in ks_]
        v += [float(full_ece(P, None, gamma=gamma, estimator=estimator))] if show_full else []
        values[name] = np.asarray(v)
    return BarChartData(cats, values, "Calibration error (TVD)")


@fill_doc(**_PARAMETERS)
def group_bar_chart(
    probs: Any,
    labels: Any,
    groups: Sequence[Sequence[int]],
    *,
    group_names: Sequence[str] | None = None,
    show_traditional: bool = True,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    ax: Any = None,
    title: str | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Figure:
    """Calibration of groups of classes, overall and per true group (Kirchenbauer, Oaks & Heim (2022) §5.2, Fig. 3).

    The grouping lens of Kirchenbauer, Oaks & Heim (2022) eqs. 5-6 sums the probabilities (and
    one-hot labels) within each group of classes; its ECE (k-d tree bins,
    TVD; :func:`calipers.group_ece`) is the bar "All". Then, for every group
    ``G``, the same error restricted by label selection to the samples whose
    true class is in ``G`` (``calibration_error(..., lens=grouping(groups),
    selection=LabelSelection(G))``), which shows which groups the model is
    miscalibrated on. "Trad." is :func:`calipers.ece` for reference.

    Parameters
    ----------
    {probs_group_bar_chart}
    {labels_group_bar_chart}
    {groups}
    {group_names}
    {show_traditional}
    {gamma_group_bar_chart}
    {estimator_group_bar_chart}
    ax : Axes, optional
    title : str, optional
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    matplotlib.figure.Figure
        Bars have gids ``"group-bar-<model>-<category>"``; an empty group shows
        "n/a".

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import group_bar_chart
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> fig = group_bar_chart(d.probs["gaussian_nb"], d.labels, [[0, 6, 8, 9], [1, 4, 7], [2, 3, 5]],
    ...                       group_names=["loops", "strokes", "curves"])
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['Trad.', 'All', 'loops', 'strokes', 'curves']
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = group_bar_chart_data(
        probs,
        labels,
        groups,
        group_names=group_names,
        show_traditional=show_traditional,
        gamma=gamma,
        estimator=estimator,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    with rc_context():
        fig, ax_, own = _single_axes(ax, 2.6)
        _grouped_bars(ax_, data.categories, data.values, data.y_label, "group-bar")
        ax_.set_xlabel(data.x_label)
        _finish(fig, ax_, list(data.values), title, own)
    return fig


@fill_doc(**_PARAMETERS)
def group_bar_chart_data(
    probs: Any,
    labels: Any,
    groups: Sequence[Sequence[int]],
    *,
    group_names: Sequence[str] | None = None,
    show_traditional: bool = True,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> BarChartData:
    """The grouping-lens errors a group bar chart draws (Kirchenbauer, Oaks & Heim (2022) Fig. 3).

    The compute step of :func:`group_bar_chart` (which draws exactly these): per
    model, :func:`calipers.ece` ("Trad."), the grouping lens's error over every
    sample ("All", :func:`calipers.group_ece` with the same estimator) and over the
    samples whose true class is in each group (label selection); NaN for a group
    without samples. Imports no matplotlib.

    Parameters
    ----------
    {probs_group_bar_chart}
    {labels_group_bar_chart}
    {groups}
    {group_names}
    {show_traditional}
    {gamma_group_bar_chart}
    {estimator_group_bar_chart}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    BarChartData

    Examples
    --------
    >>> import calipers as cp
    >>> from calipers.diagrams import group_bar_chart_data
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> groups = [[0, 6, 8, 9], [1, 4, 7], [2, 3, 5]]
    >>> data = group_bar_chart_data(d.probs["gaussian_nb"], d.labels, groups)
    >>> data.categories
    ['Trad.', 'All', 'group 0', 'group 1', 'group 2']
    >>> float(data.values[""][1]) == cp.group_ece(d.probs["gaussian_nb"], d.labels, groups)
    True
    """
    models = resolve_models(
        probs,
        labels,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    gs = [[int(c) for c in g] for g in groups]
    if group_names is not None and len(group_names) != len(gs):
        raise CalibrationInputError(
            f"group_names has {len(group_names)} names for {len(gs)} groups"
        )
    names = [f"group {i}" if group_names is None else str(group_names[i]) for i in range(len(gs))]
    est = KDTree(gamma) if estimator is None else estimator
    cats = (["Trad."] if show_traditional else []) + ["All"] + names
    values: dict[str, np.ndarray] = {}
    lens = grouping(gs)
    for name, P in models.items():
        v = [float(ece(P, None))] if show_traditional else []
        v.append(float(calibration_error(P, lens=lens, estimator=est, divergence=TVD())))
        for g in gs:
            try:
                v.append(
                    float(
                        calibration_error(
                            P,
                            lens=lens,
                            selection=LabelSelection(g),
                            estimator=est,
                            divergence=TVD(),
                        )
                    )
                )
            except CalibrationInputError as exc:
                if "no samples" not in str(exc):
                    raise
                v.append(float("nan"))
        values[name] = np.asarray(v)
    return BarChartData(
        cats, values, "Calibration error (TVD)", "Samples whose true class is in the group"
    )


def _interval_scores(P: Predictions, lens: str) -> tuple[np.ndarray, np.ndarray]:
    """Lensed scores and weights for counting samples per interval."""
    use = ("binary" if P.binary else "top_label") if lens == "auto" else lens
    w = (
        np.ones(P.n_samples)
        if P.sample_weight is None
        else np.asarray(to_numpy(P.sample_weight), dtype=np.float64)
    )
    if use == "top_label":
        s = np.asarray(to_numpy(P.top_label()[1]), dtype=np.float64)
    elif use == "binary":
        if P.n_classes != 2:
            raise CalibrationInputError(f"the binary lens needs 2 classes; got {P.n_classes}")
        p = P.probs if P.binary else P.probs[:, 1]
        s = np.asarray(to_numpy(p), dtype=np.float64)
    else:
        raise CalibrationInputError(f"lens must be 'auto', 'top_label' or 'binary'; got {lens!r}")
    return s, w


def _interval_range(lo: float, hi: float) -> str:
    return f"{lo:g}\u2013{hi:g}"


@fill_doc(**_PARAMETERS)
def interval_diagram(
    probs: Any,
    labels: Any = None,
    intervals: Sequence[tuple[float, float]] = DEFAULT_LIKERT,
    *,
    interval_names: Sequence[str] | None = None,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    show_traditional: bool = True,
    show_full: bool = True,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    ax: Any = None,
    title: str | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Figure:
    """Per-interval (Likert) calibration errors and instances per interval (Kirchenbauer, Oaks & Heim (2022) Figs. 5-6).

    Top panel: for every category ``[l, h]`` the error of
    :func:`calipers.interval_calibration_error` - output selection
    ``l <= s <= h`` (Kirchenbauer, Oaks & Heim (2022) §4.1) and the inter-interval distance
    ``max(0, l - y_bar, y_bar - h)`` of eq. 7 averaged over k-d tree bins - so
    a category incurs error only where a bin's observed frequency leaves the
    category; preceded by the "Trad." (:func:`calipers.ece`) and "Full"
    (:func:`calipers.full_ece`) errors as in Fig. 5. Bottom panel: the number
    of samples whose score lies in each category (Fig. 6; closed intervals, so
    a score on a shared end point counts in both). Categories without samples
    show "n/a".

    Parameters
    ----------
    {probs_interval_diagram}
    {labels}
    {intervals}
    interval_names : sequence of str, optional
        Default "Low", "Medium", "High" for the default intervals, else none
        (the ranges label the bars).
    {lens}
    show_traditional, show_full : bool, default True
    {gamma_interval_diagram}
    {estimator_interval_diagram}
    ax : (Axes, Axes), optional
        Axes for the errors and for the counts.
    title : str, optional
    {sample_weight}
        Counts become total weights.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    matplotlib.figure.Figure
        Error bars have gids ``"interval-bar-<model>-<category>"``, count bars
        ``"count-bar-<model>-<interval>"``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import interval_diagram
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> fig = interval_diagram(d.probs["random_forest"], d.labels)
    >>> [t.get_text().splitlines()[0] for t in fig.axes[1].get_xticklabels()]
    ['Low', 'Medium', 'High']
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = interval_diagram_data(
        probs,
        labels,
        intervals,
        interval_names=interval_names,
        lens=lens,
        show_traditional=show_traditional,
        show_full=show_full,
        gamma=gamma,
        estimator=estimator,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    with rc_context():
        if ax is None:
            fig = new_figure(SINGLE_COLUMN, 4.6)
            ax_err, ax_cnt = fig.subplots(2, 1, gridspec_kw={"height_ratios": [1.25, 1.0]})
            own = True
        else:
            axs = list(ax) if isinstance(ax, (tuple, list)) else [ax]
            if len(axs) != 2:
                raise CalibrationInputError("interval_diagram needs ax=(ax_errors, ax_counts)")
            ax_err, ax_cnt = axs
            fig, own = ax_err.figure, False
        _grouped_bars(ax_err, data.categories, data.errors, "Calibration error", "interval-bar")
        _grouped_bars(
            ax_cnt,
            data.interval_labels,
            data.counts,
            "Weight" if data.weighted else "Samples",
            "count-bar",
        )
        for a in (ax_err, ax_cnt):
            a.set_xlabel("")
        ax_cnt.set_xlabel(
            "Confidence" if data.lens == "top_label" else "Predicted probability P(y = 1)"
        )
        if len(data.errors) == 1 and not next(iter(data.errors)):
            for p in ax_cnt.patches:
                p.set_facecolor(HIST_COLOR)
        _finish(fig, ax_err, list(data.errors), title, own)
    return fig


@dataclass(frozen=True)
class IntervalDiagramData:
    """What :func:`interval_diagram` draws, computed without matplotlib.

    Returned by :func:`interval_diagram_data`.

    Attributes
    ----------
    categories : list of str
        The groups of bars of the error panel (``"Trad."``, ``"Full"``, then one per
        interval).
    errors : dict of str to numpy.ndarray
        Per model (``""`` for a single unnamed model), one calibration error per
        category, in [0, 1]; NaN for an interval without samples ("n/a").
    intervals : list of (float, float)
        The closed score intervals ``[low, high]``.
    interval_labels : list of str
        The labels of the count panel (name and range).
    counts : dict of str to numpy.ndarray
        Per model, the number of samples (total weight) whose score lies in each interval.
    weighted : bool
        Whether any model has sample weights (counts are then weights).
    lens : {"top_label", "binary"}
        The lens of the first model's scores (the count panel's axis).
    """

    categories: list[str]
    errors: dict[str, np.ndarray]
    intervals: list[tuple[float, float]]
    interval_labels: list[str]
    counts: dict[str, np.ndarray]
    weighted: bool
    lens: str


@fill_doc(**_PARAMETERS)
def interval_diagram_data(
    probs: Any,
    labels: Any = None,
    intervals: Sequence[tuple[float, float]] = DEFAULT_LIKERT,
    *,
    interval_names: Sequence[str] | None = None,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    show_traditional: bool = True,
    show_full: bool = True,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> IntervalDiagramData:
    """The per-interval errors and counts an interval diagram draws (Kirchenbauer, Oaks & Heim (2022) Figs. 5-6).

    The compute step of :func:`interval_diagram` (which draws exactly these): per
    model, :func:`calipers.ece` ("Trad."), :func:`calipers.full_ece` ("Full"),
    :func:`calipers.interval_calibration_error` per interval, and the number of
    samples whose score lies in each closed interval. Imports no matplotlib.

    Parameters
    ----------
    {probs_interval_diagram}
    {labels}
    {intervals}
    interval_names : sequence of str, optional
        Default "Low", "Medium", "High" for the default intervals, else none.
    {lens}
    show_traditional, show_full : bool, default True
    {gamma_interval_diagram}
    {estimator_interval_diagram}
    {sample_weight}
        Counts become total weights.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    IntervalDiagramData

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.diagrams import interval_diagram_data
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> data = interval_diagram_data(d.probs["random_forest"], d.labels)
    >>> data.categories
    ['Trad.', 'Full', 'Low', 'Medium', 'High']
    >>> c = d.probs["random_forest"].max(axis=1)
    >>> data.counts[""].tolist() == [float(np.sum((c >= lo) & (c <= hi))) for lo, hi in data.intervals]
    True
    """
    models = resolve_models(
        probs,
        labels,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    ivs = [(float(lo), float(hi)) for lo, hi in intervals]
    if not ivs or any(not lo <= hi for lo, hi in ivs):
        raise CalibrationInputError(
            f"intervals must be (low, high) pairs with low <= high; got {intervals!r}"
        )
    if interval_names is None and tuple(ivs) == DEFAULT_LIKERT:
        interval_names = ("Low", "Medium", "High")
    if interval_names is not None and len(interval_names) != len(ivs):
        raise CalibrationInputError(
            f"interval_names has {len(interval_names)} names for {len(ivs)} intervals"
        )
    iv_names = [None if interval_names is None else str(interval_names[i]) for i in range(len(ivs))]
    ranges = [_interval_range(lo, hi) for lo, hi in ivs]
    labels_iv = [r if nm is None else f"{nm}\n{r}" for r, nm in zip(ranges, iv_names, strict=True)]
    short = [r if nm is None else nm for r, nm in zip(ranges, iv_names, strict=True)]
    cats = (["Trad."] if show_traditional else []) + (["Full"] if show_full else []) + short
    errors: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    for name, P in models.items():
        v = [float(ece(P, None))] if show_traditional else []
        v += [float(full_ece(P, None, gamma=gamma, estimator=estimator))] if show_full else []
        per = interval_calibration_error(
            P, None, intervals=ivs, lens=lens, gamma=gamma, estimator=estimator
        )
        errors[name] = np.asarray(v + [float(x) for x in per])
        s, w = _interval_scores(P, lens)
        counts[name] = np.asarray([float(w[(s >= lo) & (s <= hi)].sum()) for lo, hi in ivs])
    weighted = any(P.sample_weight is not None for P in models.values())
    first = next(iter(models.values()))
    use = ("binary" if first.binary else "top_label") if lens == "auto" else lens
    return IntervalDiagramData(cats, errors, ivs, labels_iv, counts, weighted, use)
