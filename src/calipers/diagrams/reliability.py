"""Binned reliability diagrams: one model, and the class-wise grid.

A reliability diagram (DeGroot & Fienberg 1983; Niculescu-Mizil & Caruana
2005; Guo et al. 2017, Fig. 1) draws, for every bin of the scores, a bar as
high as the observed frequency of the target in the bin (the *accuracy* for
the top-label lens) next to the diagonal of perfect calibration. It is the
picture of the histogram estimator behind ECE (Kirchenbauer, Oaks & Heim (2022) eq. 3; Chidambaram & Ge (2024) §5.2
compares it with calibration-sharpness diagrams in its Fig. 2). The bars come
from :func:`calipers.binned_statistics`, so they are exactly the bins that
:func:`calipers.ece` (or :func:`calipers.calibration_error` with the same lens
and estimator) averages over.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._backend import to_numpy
from .._docstrings import fill_doc
from ..estimators.binning import Binning, BinStatistics, EqualWidth, FixedEdges
from ..metrics import binned_statistics, calibration_error, wilson_interval
from ..pipeline.lenses import Lens, LensSlice, get_lens, resolve_lens, single_class
from ..validation import (
    CalibrationInputError,
    Predictions,
    check_predictions,
    check_size,
)
from ._style import (
    BAR_COLOR,
    DOUBLE_COLUMN,
    FONT_SIZE,
    GAP_COLOR,
    HIST_COLOR,
    SINGLE_COLUMN,
    axes_grid,
    check_axes_count,
    figure_legend,
    ideal_line,
    metrics_note,
    new_figure,
    percent,
    rc_context,
    require_matplotlib,
    style_axes,
    unit_ticks,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "reliability_diagram",
    "reliability_diagram_data",
    "ReliabilityDiagramData",
    "classwise_reliability_grid",
    "classwise_reliability_grid_data",
    "ClasswiseReliabilityGridData",
    "wilson_interval",
]

#: The parameter entries each diagram and its compute step share (filled in by
#: ``fill_doc``): written once here.
_PARAMETERS: dict[str, str] = dict(
    probs="probs : array-like of shape (n, k) or (n,)\n    Probabilities (binary: P(y = 1)), or logits with ``logits=True``.",
    labels="labels : array-like of shape (n,)",
    confidence_level="confidence_level : float, default 0.95",
    n_bootstrap="n_bootstrap : int, default 500",
    seed="seed : int or numpy.random.Generator, default 0",
    probs_classwise_reliability_grid="probs : array-like of shape (n, k) or (n,)",
    n_bins="n_bins : int, default 15\n    Equal-width bins; ignored when ``estimator`` is given.",
    estimator="estimator : Binning, optional",
    class_names='class_names : sequence of str, optional\n    Names indexed by column (default: the members of ``classes`` when it is\n    given, else ``"class c"``).',
)

IntervalKind = Literal["wilson", "bootstrap"]


# ----------------------------------------------------------------------------- intervals


def _bootstrap_bins(
    ids: np.ndarray,
    n_bins: int,
    t: np.ndarray,
    w: np.ndarray,
    n_bootstrap: int,
    confidence_level: float,
    seed: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of every bin's mean target (rows resampled, bins fixed)."""
    n_bootstrap = check_size(n_bootstrap, "n_bootstrap", "MAX_RESAMPLES", minimum=2)
    rng = np.random.default_rng(seed)
    n = ids.shape[0]
    reps = np.full((int(n_bootstrap), n_bins), np.nan)
    wt = w * t
    for b in range(int(n_bootstrap)):
        # multinomial counts of each row in a resample of size n, as weights
        k = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        wb = np.bincount(ids, weights=k * w, minlength=n_bins)
        tb = np.bincount(ids, weights=k * wt, minlength=n_bins)
        ok = wb > 0
        reps[b, ok] = tb[ok] / wb[ok]
    a = 100.0 * (1.0 - confidence_level) / 2.0
    with warnings.catch_warnings():  # all-NaN columns: bins empty in every resample
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanpercentile(reps, a, axis=0)
        hi = np.nanpercentile(reps, 100.0 - a, axis=0)
    return lo, hi


# ----------------------------------------------------------------------------- helpers


def _one_slice(P: Predictions, lens: str | Lens) -> LensSlice:
    slices = list(get_lens(lens)(P))
    if len(slices) != 1 or slices[0].scores.ndim != 1:
        raise CalibrationInputError(
            "a reliability diagram needs a lens with one slice of 1-D scores "
            "('top_label', 'binary', single_class(c)); for every class use "
            "classwise_reliability_grid"
        )
    return slices[0]


def _bin_extents(
    est: Binning, st: BinStatistics, s: np.ndarray, ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Left and right end of every bin's bar on the score axis.

    Equal-width and fixed edges are drawn as they are; data-dependent bins
    (equal-mass, k-d tree) as contiguous bars from 0 to 1 whose boundaries are
    the mid-points between neighbouring bins' extreme scores.
    """
    B = st.weight.shape[0]
    if isinstance(est, EqualWidth):
        e = np.arange(B + 1, dtype=np.float64) / B
        return e[:-1], e[1:]
    if isinstance(est, FixedEdges):
        e = np.clip(np.asarray(est.edges, dtype=np.float64), 0.0, 1.0)
        return e[:-1], e[1:]
    mins = np.full(B, np.inf)
    maxs = np.full(B, -np.inf)
    np.minimum.at(mins, ids, s)
    np.maximum.at(maxs, ids, s)
    lo = np.full(B, np.nan)
    hi = np.full(B, np.nan)
    ne = np.flatnonzero(np.isfinite(mins))
    order = ne[np.argsort(mins[ne], kind="stable")]
    for r, b in enumerate(order):
        lo[b] = 0.0 if r == 0 else 0.5 * (maxs[order[r - 1]] + mins[b])
        hi[b] = 1.0 if r == len(order) - 1 else 0.5 * (maxs[b] + mins[order[r + 1]])
    return lo, hi


def _draw_bins(
    ax: Axes,
    lo: np.ndarray,
    hi: np.ndarray,
    acc: np.ndarray,
    conf: np.ndarray,
    nonempty: np.ndarray,
    show_gap: bool,
    bar_label: str,
) -> None:
    """Accuracy bars and hatched gap boxes of the non-empty bins (gids name the bin)."""
    idx = np.flatnonzero(nonempty)
    width = hi[idx] - lo[idx]
    bars = ax.bar(
        lo[idx],
        acc[idx],
        width=width,
        align="edge",
        color=BAR_COLOR,
        edgecolor="white",
        linewidth=0.4,
        label=bar_label,
        zorder=2,
    )
    for j, patch in zip(idx, bars.patches, strict=True):
        patch.set_gid(f"reliability-bar-{j}")
    if show_gap:
        gaps = ax.bar(
            lo[idx],
            np.abs(conf[idx] - acc[idx]),
            bottom=np.minimum(conf[idx], acc[idx]),
            width=width,
            align="edge",
            facecolor=(*_rgb(GAP_COLOR), 0.25),
            edgecolor=GAP_COLOR,
            hatch="////",
            linewidth=0.6,
            label="Gap",
            zorder=3,
        )
        for j, patch in zip(idx, gaps.patches, strict=True):
            patch.set_gid(f"gap-bar-{j}")


def _rgb(color: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(color)
    return (r, g, b)


def _unit_square(ax: Axes) -> None:
    unit_ticks(ax, "both")
    ax.set_ylim(0.0, 1.0)
    style_axes(ax)


def _axis_names(P: Predictions, lens: str | Lens) -> tuple[str, str]:
    if lens == "top_label":
        return "Confidence", "Accuracy"
    return "Predicted probability", "Observed frequency"


# ----------------------------------------------------------------------------- public


@fill_doc(**_PARAMETERS)
def reliability_diagram(
    probs: Any,
    labels: Any = None,
    *,
    n_bins: int = 15,
    lens: str | Lens = "auto",
    estimator: Binning | None = None,
    show_gap: bool = True,
    show_histogram: bool | None = None,
    intervals: IntervalKind | None = None,
    confidence_level: float = 0.95,
    n_bootstrap: int = 500,
    seed: Any = 0,
    ax: Any = None,
    title: str | None = None,
    legend: bool = True,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Figure:
    """Reliability diagram with the gap to the diagonal and a confidence histogram.

    Draws the histogram estimator of calibration (Guo et al. 2017, Fig. 1;
    Chidambaram & Ge (2024) §5.2, Fig. 2): for every non-empty bin a bar as high as the
    bin's observed frequency ``y_bar_B`` (the accuracy for the top-label
    lens), a hatched box between ``y_bar_B`` and the bin's mean score
    ``g_bar_B`` (the gap whose weighted mean ``sum_B |B|/N |y_bar_B - g_bar_B|``
    is the ECE of Kirchenbauer, Oaks & Heim (2022) eq. 3), the dashed diagonal of perfect calibration
    and, below on a shared axis, the number of samples per bin. Empty bins get
    no bar. The note (in the corner that hides the fewest bars) gives the ECE of the same bins
    (:func:`calipers.calibration_error` with ``divergence="l1"``; equal to
    :func:`calipers.ece` for the defaults) and, for the top-label lens, the
    accuracy: calibration is not reported alone (Chidambaram & Ge (2024) §3).

    Parameters
    ----------
    {probs}
    {labels}
    n_bins : int, default 15
        Equal-width bins on [0, 1] (``(lo, hi]`` edges, as :func:`calipers.ece`);
        ignored when ``estimator`` is given.
    lens : {"auto", "top_label", "binary"} or a lens with one 1-D slice, default "auto"
        ``"auto"``: ``"binary"`` for 1-D input (P(y = 1), as
        scikit-learn's ``calibration_curve`` draws it) and ``"top_label"``
        for ``(n, k)`` input. ``"top_label"``: confidence vs accuracy;
        ``"binary"``: P(y = 1) vs the frequency of class 1;
        :func:`calipers.single_class` for one class.
    estimator : Binning, optional
        Any binning of :mod:`calipers.estimators.binning`. Data-dependent bins (equal-mass,
        k-d tree) are drawn as contiguous bars whose boundaries lie midway
        between neighbouring bins' extreme scores.
    show_gap : bool, default True
        Draw the gap boxes (hatched, vermillion).
    show_histogram : bool, optional
        Draw the histogram of the scores (same bins) below the diagram.
        Default: True when the function creates the figure or ``ax`` is a pair
        ``(ax_diagram, ax_histogram)``, False for a single ``ax``.
    intervals : {None, "wilson", "bootstrap"}, default None
        Error bars for each bin's frequency at ``confidence_level``.
        ``"wilson"``: the Wilson score interval (:func:`wilson_interval`; with
        sample weights, Kish's effective size) - closed form, exact enough for
        a binomial proportion and cheap. ``"bootstrap"``: percentile interval
        over ``n_bootstrap`` resamples of the rows (bins kept fixed), random
        with ``seed``; it collapses to a point for bins that are all right or
        all wrong, where Wilson does not.
    {confidence_level}
    {n_bootstrap}
    {seed}
    ax : Axes or (Axes, Axes), optional
        Draw into existing axes instead of a new figure.
    title : str, optional
    legend : bool, default True
        Name the bars, gaps, diagonal and intervals: above the figure when the
        function creates it, in the metrics note's box when ``ax`` is given.
    {sample_weight}
        Weighted bars, gaps, ECE and histogram (the histogram then shows weight).
        The Wilson intervals take Kish's effective sample size
        ``(sum w)^2 / sum w^2``, so there a weight is not a repeated row.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    matplotlib.figure.Figure
        The figure (``ax.figure`` when ``ax`` was given); bars carry the gid
        ``"reliability-bar-<bin>"``, gap boxes ``"gap-bar-<bin>"``, histogram
        bars ``"histogram-bar-<bin>"``; the metrics note (a title-only legend
        placed where it hides the fewest bars) is ``fig.axes[0].artists[0]``,
        gid ``"metrics"``. Not shown: call ``fig.savefig(...)`` or
        ``plt.show()``.

    Raises
    ------
    ImportError
        When matplotlib is missing (``pip install matplotlib``).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import calipers as cp
    >>> from calipers.diagrams import reliability_diagram
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> fig = reliability_diagram(d.probs["gaussian_nb"], d.labels, intervals="wilson")
    >>> [a.get_ylabel() for a in fig.axes]
    ['Accuracy', 'Count']
    >>> fig.axes[0].artists[0].get_title().get_text().splitlines()[0]  # the metrics note
    'ECE = 13.70%'
    >>> round(100 * cp.ece(d.probs["gaussian_nb"], d.labels), 2)
    13.7
    >>> plt.close(fig)
    """
    plt = require_matplotlib()
    data = reliability_diagram_data(
        probs,
        labels,
        n_bins=n_bins,
        lens=lens,
        estimator=estimator,
        intervals=intervals,
        confidence_level=confidence_level,
        n_bootstrap=n_bootstrap,
        seed=seed,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    return _draw_reliability(
        plt,
        data,
        ax=ax,
        show_gap=show_gap,
        show_histogram=show_histogram,
        title=title,
        legend=legend,
    )


@dataclass(frozen=True)
class ReliabilityDiagramData:
    """What :func:`reliability_diagram` draws, computed without matplotlib.

    Returned by :func:`reliability_diagram_data`. The per-bin arrays have one entry
    per bin of the estimator, empty bins included (``nonempty`` tells them apart;
    their means are NaN and they get no bar).

    Attributes
    ----------
    lens : str or Lens
        The lens the diagram reads (``"auto"`` resolved).
    bin_low, bin_high : numpy.ndarray of shape (n_bins,)
        Left and right end of each bin's bar on the score axis (data-dependent bins:
        midway between neighbouring bins' extreme scores; NaN for an empty bin).
    mean_score : numpy.ndarray of shape (n_bins,)
        The bin's (weighted) mean score ``g_bar_B``: confidence for the top-label lens.
    observed : numpy.ndarray of shape (n_bins,)
        The bar's height, the bin's (weighted) mean target ``y_bar_B``: accuracy for the
        top-label lens (``binned_statistics(...)[0].stats.mean_target``).
    weight : numpy.ndarray of shape (n_bins,)
        The number of rows (or their total weight) in each bin: the histogram.
    nonempty : numpy.ndarray of bool, shape (n_bins,)
    interval_low, interval_high : numpy.ndarray of shape (n_bins,) or None
        The interval of each bin's observed frequency at ``confidence_level``
        (NaN for an empty bin); None without ``intervals``.
    intervals : {None, "wilson", "bootstrap"}
    confidence_level : float
    ece : float
        The binned L1 calibration error of the same bins, in [0, 1] (the note).
    accuracy : float or None
        The (weighted) accuracy, in [0, 1], for the top-label lens; None otherwise.
    x_label, y_label : str
        The axis names (``"Confidence"``/``"Accuracy"`` for the top-label lens).
    weighted : bool
        Whether sample weights were given (the histogram then shows weight).
    """

    lens: str | Lens
    bin_low: np.ndarray
    bin_high: np.ndarray
    mean_score: np.ndarray
    observed: np.ndarray
    weight: np.ndarray
    nonempty: np.ndarray
    interval_low: np.ndarray | None
    interval_high: np.ndarray | None
    intervals: IntervalKind | None
    confidence_level: float
    ece: float
    accuracy: float | None
    x_label: str
    y_label: str
    weighted: bool

    @property
    def note(self) -> str:
        """The diagram's metrics note: the ECE and, for the top-label lens, the accuracy."""
        note = f"ECE = {percent(self.ece)}"
        if self.accuracy is not None:
            note += f"\nAccuracy = {percent(self.accuracy, 1)}"
        return note


@fill_doc(**_PARAMETERS)
def reliability_diagram_data(
    probs: Any,
    labels: Any = None,
    *,
    n_bins: int = 15,
    lens: str | Lens = "auto",
    estimator: Binning | None = None,
    intervals: IntervalKind | None = None,
    confidence_level: float = 0.95,
    n_bootstrap: int = 500,
    seed: Any = 0,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> ReliabilityDiagramData:
    """The numbers a reliability diagram draws: bins, bars, intervals and the note.

    The compute step of :func:`reliability_diagram` (which draws exactly these),
    for a figure of one's own or a table: the histogram estimator of calibration
    (Guo et al. 2017; Kirchenbauer, Oaks & Heim (2022) eq. 3) per bin, from
    :func:`calipers.binned_statistics`, and the ECE of the same bins. Imports no
    matplotlib.

    Parameters
    ----------
    {probs}
    {labels}
    n_bins : int, default 15
        Equal-width bins on [0, 1]; ignored when ``estimator`` is given.
    lens : {"auto", "top_label", "binary"} or a lens with one 1-D slice, default "auto"
        As :func:`reliability_diagram`.
    estimator : Binning, optional
    intervals : {None, "wilson", "bootstrap"}, default None
        Interval of each bin's frequency (Wilson 1927, or percentile bootstrap over
        ``n_bootstrap`` resamples of the rows, bins fixed), as :func:`reliability_diagram`.
    {confidence_level}
    {n_bootstrap}
    {seed}
    {sample_weight}
        The Wilson intervals take Kish's effective sample size
        ``(sum w)^2 / sum w^2``, so there a weight is not a repeated row.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    ReliabilityDiagramData

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.diagrams import reliability_diagram_data
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> data = reliability_diagram_data(d.probs["gaussian_nb"], d.labels, intervals="wilson")
    >>> print(data.note)
    ECE = 13.70%
    Accuracy = 85.1%
    >>> bool(np.isclose(data.ece, cp.ece(d.probs["gaussian_nb"], d.labels)))
    True
    >>> int(data.weight.sum()) == len(d.labels)
    True
    """
    if intervals not in (None, "wilson", "bootstrap"):
        raise CalibrationInputError(
            f"intervals must be None, 'wilson' or 'bootstrap'; got {intervals!r}"
        )
    if intervals is not None and not 0.0 < confidence_level < 1.0:
        raise CalibrationInputError(
            f"confidence_level must lie in (0, 1); got {confidence_level!r}"
        )
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    est = EqualWidth(n_bins) if estimator is None else estimator
    if isinstance(lens, str) and lens == "auto":
        lens = resolve_lens(lens, P)
    sl = _one_slice(P, lens)
    st = binned_statistics(P, lens=lens, estimator=est)[0].stats
    ids_raw, B = est.assign(sl.scores, sl.weights)
    ids = np.asarray(to_numpy(ids_raw), dtype=np.intp)
    s = np.asarray(to_numpy(sl.scores), dtype=np.float64)
    t = np.asarray(to_numpy(sl.targets), dtype=np.float64)
    w = np.ones_like(s) if sl.weights is None else np.asarray(to_numpy(sl.weights), np.float64)
    ece_value = float(calibration_error(P, lens=lens, estimator=est, divergence="l1"))
    lo, hi = _bin_extents(est, st, s, ids)
    acc, conf, ne = st.mean_target, st.mean_score, st.nonempty
    xname, yname = _axis_names(P, lens)

    interval_low = interval_high = None
    if intervals is not None:
        idx = np.flatnonzero(ne)
        if intervals == "wilson":
            sw2 = np.bincount(ids, weights=w * w, minlength=B)
            n_eff = st.weight[idx] ** 2 / sw2[idx]
            ci_lo, ci_hi = wilson_interval(acc[idx], n_eff, confidence_level)
        else:
            blo, bhi = _bootstrap_bins(ids, B, t, w, n_bootstrap, confidence_level, seed)
            ci_lo, ci_hi = blo[idx], bhi[idx]
        interval_low, interval_high = np.full(B, np.nan), np.full(B, np.nan)
        interval_low[idx], interval_high[idx] = ci_lo, ci_hi
    acc_all = float(np.sum(w * t) / np.sum(w)) if lens == "top_label" else None
    return ReliabilityDiagramData(
        lens=lens,
        bin_low=lo,
        bin_high=hi,
        mean_score=conf,
        observed=acc,
        weight=st.weight,
        nonempty=ne,
        interval_low=interval_low,
        interval_high=interval_high,
        intervals=intervals,
        confidence_level=confidence_level,
        ece=ece_value,
        accuracy=acc_all,
        x_label=xname,
        y_label=yname,
        weighted=P.sample_weight is not None,
    )


def _draw_reliability(
    plt: Any,
    data: ReliabilityDiagramData,
    *,
    ax: Any,
    show_gap: bool,
    show_histogram: bool | None,
    title: str | None,
    legend: bool,
) -> Figure:
    """Draw ``data`` (:func:`reliability_diagram_data`) as :func:`reliability_diagram` does."""
    lo, hi = data.bin_low, data.bin_high
    acc, conf, ne = data.observed, data.mean_score, data.nonempty
    xname, yname = data.x_label, data.y_label
    intervals, confidence_level = data.intervals, data.confidence_level
    with rc_context():
        if ax is None:
            hist = True if show_histogram is None else bool(show_histogram)
            if hist:
                fig = new_figure(SINGLE_COLUMN, 4.0)
                ax_main, ax_hist = fig.subplots(
                    2, 1, sharex=True, gridspec_kw={"height_ratios": [3.0, 1.0]}
                )
            else:
                fig = new_figure(SINGLE_COLUMN, 3.3)
                ax_main, ax_hist = fig.subplots(), None
        else:
            axs = [ax] if not isinstance(ax, (tuple, list)) else list(ax)
            if len(axs) == 2:
                ax_main, ax_hist = axs
                if show_histogram is False:
                    ax_hist = None
            elif len(axs) == 1:
                if show_histogram:
                    raise CalibrationInputError(
                        "show_histogram=True needs a second Axes: pass ax=(ax_diagram, ax_histogram)"
                    )
                ax_main, ax_hist = axs[0], None
            else:
                raise CalibrationInputError(f"ax must be one Axes or a pair; got {len(axs)}")
            fig = ax_main.figure

        _draw_bins(ax_main, lo, hi, acc, conf, ne, show_gap, yname)
        ideal_line(ax_main)
        if data.interval_low is not None and data.interval_high is not None:
            idx = np.flatnonzero(ne)
            ci_lo, ci_hi = data.interval_low[idx], data.interval_high[idx]
            centre = 0.5 * (lo[idx] + hi[idx])
            name = "Wilson" if intervals == "wilson" else "bootstrap"
            eb = ax_main.errorbar(
                centre,
                acc[idx],
                yerr=np.maximum(np.vstack([acc[idx] - ci_lo, ci_hi - acc[idx]]), 0.0),
                fmt="none",
                ecolor="black",
                elinewidth=0.8,
                capsize=1.5,
                capthick=0.8,
                label=f"{round(100 * confidence_level):g}% CI ({name})",
                zorder=4,
            )
            eb.lines[2][0].set_gid("intervals")
        _unit_square(ax_main)
        ax_main.set_ylabel(yname)
        note = data.note
        if ax is None:
            metrics_note(ax_main, note)
            if legend:
                figure_legend(fig, title=title)
            elif title:
                fig.suptitle(title)
        else:  # one box for the note and the legend entries
            metrics_note(ax_main, note, *(ax_main.get_legend_handles_labels() if legend else ()))
            if title:
                ax_main.set_title(title)
        if ax_hist is not None:
            idx = np.flatnonzero(ne)
            hb = ax_hist.bar(
                lo[idx],
                data.weight[idx],
                width=hi[idx] - lo[idx],
                align="edge",
                color=HIST_COLOR,
                edgecolor="white",
                linewidth=0.4,
                zorder=2,
            )
            for j, patch in zip(idx, hb.patches, strict=True):
                patch.set_gid(f"histogram-bar-{j}")
            ax_hist.set_xlim(0.0, 1.0)
            top = float(data.weight.max())
            ax_hist.set_ylim(0.0, 1.08 * top if top > 0 else 1.0)
            ax_hist.set_ylabel("Weight" if data.weighted else "Count")
            ax_hist.set_xlabel(xname)
            style_axes(ax_hist)
            ax_hist.yaxis.get_major_locator().set_params(nbins=3)
            plt.setp(ax_main.get_xticklabels(), visible=False)
        else:
            ax_main.set_xlabel(xname)
    return fig  # type: ignore[no-any-return]


def _panel_columns(panels: Any, P: Predictions) -> list[int]:
    """The columns of the classes in ``panels``: column indices, or members of ``P.classes``."""
    k = P.n_classes
    if panels is None:
        return list(range(k))
    wanted = list(np.atleast_1d(np.asarray(panels, dtype=object)))
    if P.classes is not None:
        index = {v: i for i, v in enumerate(P.classes.tolist())}
        for v in wanted:
            if v not in index:
                raise CalibrationInputError(
                    f"panels must name members of classes {P.classes.tolist()}; got {v!r}"
                )
        cols = [index[v] for v in wanted]
    else:
        ok = all(
            isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)) for c in wanted
        )
        cols = [int(c) for c in wanted] if ok else []
        if not ok or any(c < 0 or c >= k for c in cols):
            raise CalibrationInputError(
                f"panels must be a non-empty list of column indices in 0..{k - 1} (or of "
                f"members of classes=, when given); got {panels!r}"
            )
    if not cols:
        raise CalibrationInputError("panels must name at least one class")
    return cols


@fill_doc(**_PARAMETERS)
def classwise_reliability_grid(
    probs: Any,
    labels: Any = None,
    *,
    panels: Any = None,
    n_bins: int = 15,
    estimator: Binning | None = None,
    ncols: int | None = None,
    class_names: Any = None,
    show_gap: bool = True,
    ax: Any = None,
    title: str | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Figure:
    """A grid of per-class reliability diagrams (class-wise lens).

    For every class ``c`` the scores are ``p_c`` and the targets ``1{y = c}``
    (the class-wise lens of Kull et al. 2019 and Nixon et al. 2019, Kirchenbauer, Oaks & Heim (2022)
    App. A.1); the bars are the per-bin frequencies of class ``c`` from
    :func:`calipers.binned_statistics` with ``lens="classwise"``, drawn as in
    :func:`reliability_diagram`. Each panel's note (``artists[0]``) is that class's binned L1
    calibration error ``sum_B |B|/N |y_bar_B - g_bar_B|`` (the class's term
    of :func:`calipers.classwise_ece`).

    Parameters
    ----------
    {probs_classwise_reliability_grid}
    {labels}
    panels : sequence, optional
        The classes that get a panel, in the order given: column indices, or
        members of ``classes`` when it is given (default: every class, in
        column order).
    {n_bins}
    {estimator}
    ncols : int, optional
        Panels per row (default ``min(len(panels), 5)``).
    {class_names}
    show_gap : bool, default True
    ax : sequence of Axes, optional
        One Axes per shown class.
    title : str, optional
        Figure title.
    {sample_weight}
        The Wilson intervals take Kish's effective sample size
        ``(sum w)^2 / sum w^2``, so there a weight is not a repeated row.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    matplotlib.figure.Figure
        One panel per class (panel titles are the class names); bars carry the
        gid ``"reliability-bar-<bin>"``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import classwise_reliability_grid
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> fig = classwise_reliability_grid(d.probs["random_forest"], d.labels, panels=[0, 1, 2])
    >>> [a.get_title() for a in fig.axes if a.get_visible()]
    ['class 0', 'class 1', 'class 2']
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = classwise_reliability_grid_data(
        probs,
        labels,
        panels=panels,
        n_bins=n_bins,
        estimator=estimator,
        class_names=class_names,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    with rc_context():
        if ax is None:
            nc = min(len(data.panels), 5) if ncols is None else int(ncols)
            fig, axs = axes_grid(
                len(data.panels),
                nc,
                DOUBLE_COLUMN / 5.0,
                DOUBLE_COLUMN / 5.0 + 0.1,
                sharex=True,
                sharey=True,
            )
        else:
            axs = check_axes_count(ax, len(data.panels), "classwise_reliability_grid")
            fig = axs[0].figure
        for name, panel, a in zip(data.names, data.panels, axs, strict=True):
            _draw_bins(
                a,
                panel.bin_low,
                panel.bin_high,
                panel.observed,
                panel.mean_score,
                panel.nonempty,
                show_gap,
                "Observed frequency",
            )
            ideal_line(a, label="Perfect calibration")
            _unit_square(a)
            unit_ticks(a, "both", step=0.5)
            metrics_note(a, f"ECE {percent(panel.ece, 1)}")
            a.set_title(name, pad=3)
            if ax is not None:
                a.set_xlabel("Predicted probability")
                a.set_ylabel("Observed frequency")
        if ax is None:
            fig.supxlabel("Predicted probability", fontsize=FONT_SIZE)
            fig.supylabel("Observed frequency", fontsize=FONT_SIZE)
            handles, labs = axs[0].get_legend_handles_labels()
            figure_legend(fig, handles, labs, title=title, ncols=3)
        elif title:
            fig.suptitle(title)
    return fig  # type: ignore[no-any-return]


@dataclass(frozen=True)
class ClasswiseReliabilityGridData:
    """What :func:`classwise_reliability_grid` draws, computed without matplotlib.

    Returned by :func:`classwise_reliability_grid_data`: one panel per shown class.

    Attributes
    ----------
    columns : list of int
        The column of each shown class, in panel order.
    names : list of str
        The panel titles.
    panels : list of ReliabilityDiagramData
        Per shown class ``c``, the bins of the class-wise lens (scores ``p_c``,
        targets ``1{y = c}``) and that class's binned L1 calibration error
        (``ece``; the panel's note prints it with one decimal). No intervals.
    """

    columns: list[int]
    names: list[str]
    panels: list[ReliabilityDiagramData]


@fill_doc(**_PARAMETERS)
def classwise_reliability_grid_data(
    probs: Any,
    labels: Any = None,
    *,
    panels: Any = None,
    n_bins: int = 15,
    estimator: Binning | None = None,
    class_names: Any = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> ClasswiseReliabilityGridData:
    """The per-class bins and errors a class-wise reliability grid draws.

    The compute step of :func:`classwise_reliability_grid` (which draws exactly
    these): :func:`calipers.binned_statistics` with ``lens="classwise"`` (Kull et
    al. 2019; Nixon et al. 2019) and each class's binned L1 calibration error (the
    class's term of :func:`calipers.classwise_ece`). Imports no matplotlib.

    Parameters
    ----------
    {probs_classwise_reliability_grid}
    {labels}
    panels : sequence, optional
        The classes that get a panel, in the order given: column indices, or
        members of ``classes`` when it is given (default: every class).
    {n_bins}
    {estimator}
    {class_names}
    {sample_weight}
        The Wilson intervals take Kish's effective sample size
        ``(sum w)^2 / sum w^2``, so there a weight is not a repeated row.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    ClasswiseReliabilityGridData

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.diagrams import classwise_reliability_grid_data
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> data = classwise_reliability_grid_data(d.probs["random_forest"], d.labels, panels=[0, 2])
    >>> data.names
    ['class 0', 'class 2']
    >>> ece2 = cp.calibration_error(d.probs["random_forest"], d.labels, lens=cp.single_class(2))
    >>> bool(np.isclose(data.panels[1].ece, ece2))
    True
    """
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    k = P.n_classes
    cls = _panel_columns(panels, P)
    if class_names is not None and len(class_names) != k:
        raise CalibrationInputError(
            f"class_names must name all {k} classes; got {len(class_names)} names"
        )
    if class_names is None:
        class_names = [f"class {c}" for c in range(k)] if P.classes is None else P.classes
    names = [str(class_names[c]) for c in cls]
    est = EqualWidth(n_bins) if estimator is None else estimator
    all_stats = binned_statistics(P, lens="classwise", estimator=est)
    p_full = np.asarray(to_numpy(P.full_probs()), dtype=np.float64)

    panels = []
    weighted = P.sample_weight is not None
    for c in cls:
        st = all_stats[c].stats
        if isinstance(est, EqualWidth) or isinstance(est, FixedEdges):
            lo, hi = _bin_extents(est, st, np.zeros(0), np.zeros(0, dtype=np.intp))
        else:
            ids = np.asarray(to_numpy(est.assign(p_full[:, c], None)[0]), dtype=np.intp)
            lo, hi = _bin_extents(est, st, p_full[:, c], ids)
        v = float(calibration_error(P, lens=single_class(c), estimator=est))
        panels.append(
            ReliabilityDiagramData(
                lens=single_class(c),
                bin_low=lo,
                bin_high=hi,
                mean_score=st.mean_score,
                observed=st.mean_target,
                weight=st.weight,
                nonempty=st.nonempty,
                interval_low=None,
                interval_high=None,
                intervals=None,
                confidence_level=0.95,
                ece=v,
                accuracy=None,
                x_label="Predicted probability",
                y_label="Observed frequency",
                weighted=weighted,
            )
        )
    return ClasswiseReliabilityGridData(cls, names, panels)
