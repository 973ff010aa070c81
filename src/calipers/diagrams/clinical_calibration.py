"""The clinical calibration diagram (the plot of R's ``val.prob`` and ``val.prob.ci.2``).

Van Calster et al. (2016) read the calibration of predicted risks in levels; the
diagram that clinical journals print for them (Harrell's ``rms::val.prob``,
Van Calster et al.'s ``CalibrationCurves::val.prob.ci.2``) shows them at once: the
ideal line, the flexible calibration curve with its pointwise band (or the
calibration belt of Finazzi et al. 2011), the observed proportion in groups of
predicted risk (deciles) with intervals, the distribution of the risks split by
outcome along the bottom (events up, non-events down), and the numbers: n,
events, calibration intercept and slope with their intervals, C-statistic, Brier
score, and the curve's summaries ICI, E90 and Emax (Austin & Steyerberg 2019).

Every number drawn comes from :func:`calipers.clinical.calibration_hierarchy`;
:func:`clinical_calibration_diagram_data` computes what is drawn without
matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..metrics import wilson_interval
from ..validation import CalibrationInputError, Predictions, check_integer, check_predictions
from ._style import (
    BAR_COLOR,
    DENSITY_COLOR,
    GAP_COLOR,
    HIST_COLOR,
    IDEAL_COLOR,
    invisible_proxy,
    metrics_note,
    new_figure,
    rc_context,
    require_matplotlib,
    style_axes,
    unit_ticks,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "clinical_calibration_diagram",
    "clinical_calibration_diagram_data",
    "ClinicalCalibrationDiagramData",
    "clinical_note",
]

#: Where the distribution of the risks sits below the plot: the baseline of its
#: spikes and the length of the longest one (in units of the observed proportion).
SPIKE_BASELINE = -0.1
SPIKE_HEIGHT = 0.08


def _f(v: float, places: int) -> str:
    v = float(v)
    return f"{v:.{places}f}" if np.isfinite(v) else "n/a"


def clinical_note(hierarchy: Any) -> str:
    """The numbers of the clinical diagram's box, one per line, from a hierarchy.

    ``n`` and the events, the calibration intercept and slope with their intervals
    (two decimals, as ``val.prob.ci.2`` prints them), the C-statistic and the
    Brier score (three decimals), and ICI, E90 and Emax (three decimals; Austin &
    Steyerberg 2019).

    Parameters
    ----------
    hierarchy : calipers.clinical.CalibrationHierarchy
        What :func:`calipers.clinical.calibration_hierarchy` returned.

    Returns
    -------
    str
        Six lines.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.clinical import calibration_hierarchy
    >>> from calipers.diagrams import clinical_note
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, 500)
    >>> y = (rng.uniform(size=500) < p).astype(int)
    >>> print(clinical_note(calibration_hierarchy(p, y)).splitlines()[0])
    n = 500, events = 263
    """
    h = hierarchy
    w, i = h.weak, h.index
    events = float(h.n_events)
    ev = f"{events:.0f}" if events == round(events) else f"{events:.1f}"
    a_lo, a_hi = w.intercept_interval
    b_lo, b_hi = w.slope_interval
    return "\n".join(
        [
            f"n = {int(h.n)}, events = {ev}",
            f"Intercept {_f(w.intercept, 2)} [{_f(a_lo, 2)}, {_f(a_hi, 2)}]",
            f"Slope {_f(w.slope, 2)} [{_f(b_lo, 2)}, {_f(b_hi, 2)}]",
            f"C-statistic {_f(h.c_statistic, 3)}",
            f"Brier {_f(h.brier, 3)}",
            f"ICI {_f(i.ici, 3)}, E90 {_f(i.e90, 3)}, Emax {_f(i.emax, 3)}",
        ]
    )


@dataclass(frozen=True)
class ClinicalCalibrationDiagramData:
    """What :func:`clinical_calibration_diagram` draws, computed without matplotlib.

    Returned by :func:`clinical_calibration_diagram_data`.

    Attributes
    ----------
    hierarchy : calipers.clinical.CalibrationHierarchy
        The levels of calibration (the curve, its band, the belt, the numbers).
    group_risk : numpy.ndarray
        ``(g,)`` mean predicted risk in each group of risk (the groups of the
        Hosmer-Lemeshow table of the hierarchy: deciles of risk by default).
    group_observed : numpy.ndarray
        ``(g,)`` observed proportion of events in each group.
    group_low, group_high : numpy.ndarray
        ``(g,)`` Wilson interval of each observed proportion at the hierarchy's
        confidence (Wilson 1927; group size as the binomial n).
    group_sizes : numpy.ndarray
        ``(g,)`` rows (total weight) per group.
    spike_edges : numpy.ndarray
        ``(b + 1,)`` edges of the equal-width bins of the risk distribution on [0, 1].
    spike_events, spike_nonevents : numpy.ndarray
        ``(b,)`` rows (total weight) with and without the event in each bin.
    confidence : float
        Level of the band and of the group intervals.
    class_index : int or None
        The column drawn one-vs-rest, for multiclass predictions.
    """

    hierarchy: Any
    group_risk: np.ndarray
    group_observed: np.ndarray
    group_low: np.ndarray
    group_high: np.ndarray
    group_sizes: np.ndarray
    spike_edges: np.ndarray
    spike_events: np.ndarray
    spike_nonevents: np.ndarray
    confidence: float
    class_index: int | None = None

    @property
    def note(self) -> str:
        """The numbers in the diagram's box (:func:`clinical_note`)."""
        return clinical_note(self.hierarchy)


def _risks(
    probs: Any,
    labels: Any,
    sample_weight: Any,
    logits: bool,
    classes: Any,
    class_index: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int | None]:
    """``(risk, outcome 0/1, weights, class)`` of the predictions, one-vs-rest for a class."""
    from .._backend import to_numpy

    if isinstance(probs, Predictions):
        if labels is not None or sample_weight is not None:
            raise CalibrationInputError(
                "a calipers.Predictions holds its labels and weights: give labels= and "
                "sample_weight= only with arrays"
            )
        P = probs
    else:
        P = check_predictions(
            probs, labels, sample_weight=sample_weight, logits=logits, classes=classes
        )
    p = np.asarray(to_numpy(P.probs), dtype=np.float64)
    y = np.asarray(to_numpy(P.labels))
    w = None if P.sample_weight is None else np.asarray(to_numpy(P.sample_weight), np.float64)
    k = int(P.n_classes)
    if class_index is not None:
        check_integer(class_index, "class_index", minimum=0)
        if int(class_index) >= k:
            raise CalibrationInputError(
                f"class_index must be a column of the predictions (0 to {k - 1}); got {class_index}"
            )
    if p.ndim == 1:
        if class_index is None or int(class_index) == 1:
            return p, (y == 1).astype(np.int64), w, None
        return 1.0 - p, (y == 0).astype(np.int64), w, 0
    if class_index is None:
        if k != 2:
            raise CalibrationInputError(
                f"the predictions have {k} classes: give class_index= (the column drawn "
                "one-vs-rest; calipers.clinical.calibration_hierarchy_by_class has every class)"
            )
        return p[:, 1], (y == 1).astype(np.int64), w, None
    c = int(class_index)
    return p[:, c], (y == c).astype(np.int64), w, (None if k == 2 and c == 1 else c)


def _groups(
    p: np.ndarray, y: np.ndarray, w: np.ndarray | None, hierarchy: Any, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mean risk, observed proportion, size)`` per group of risk.

    The Hosmer-Lemeshow table of the hierarchy when it has one (so the points are
    the numbers of its test); otherwise ``n_groups`` groups of consecutive sorted
    risks of (nearly) equal size.
    """
    hl = getattr(hierarchy, "hosmer_lemeshow", None)
    if hl is not None and getattr(hl, "group_sizes", None) is not None:
        size = np.asarray(hl.group_sizes, dtype=np.float64)
        risk = np.asarray(hl.mean_risk, dtype=np.float64)
        obs = np.asarray(hl.observed_events, dtype=np.float64)
        keep = size > 0
        return risk[keep], obs[keep] / size[keep], size[keep]
    order = np.argsort(p, kind="stable")
    ww = np.ones(p.shape[0]) if w is None else w
    parts = np.array_split(order, min(int(n_groups), p.shape[0]))
    size = np.array([ww[i].sum() for i in parts])
    risk = np.array([np.dot(ww[i], p[i]) for i in parts]) / size
    obs = np.array([np.dot(ww[i], y[i]) for i in parts]) / size
    keep = size > 0
    return risk[keep], obs[keep], size[keep]


def clinical_calibration_diagram_data(
    probs: Any,
    labels: Any = None,
    *,
    hierarchy: Any = None,
    curve: str = "loess",
    show_belt: bool = False,
    n_groups: int = 10,
    confidence: float = 0.95,
    n_spike_bins: int = 100,
    class_index: int | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
) -> ClinicalCalibrationDiagramData:
    """The numbers of the clinical calibration diagram, without matplotlib.

    The compute step of :func:`clinical_calibration_diagram` (which draws exactly
    these numbers): the calibration hierarchy of Van Calster et al. (2016)
    (:func:`calipers.clinical.calibration_hierarchy`, or the one given), the
    observed proportion in its groups of risk with Wilson intervals, and the
    counts of events and non-events in ``n_spike_bins`` equal-width bins of risk
    (the risk distribution by outcome of ``val.prob.ci.2``).

    Parameters
    ----------
    probs : array-like of shape (n,) or (n, k)
        Predicted risks P(y = 1), or class probabilities (the column of
        ``class_index`` is drawn one-vs-rest; default the positive class of two).
    labels : array-like of shape (n,)
        Outcomes 0/1 (or class indices; class names with ``classes=``).
    hierarchy : CalibrationHierarchy, optional
        A hierarchy already computed for these predictions (and this class);
        default: computed here with ``curve``, ``n_groups``, ``confidence`` and
        the belt when ``show_belt``.
    curve : {"loess", "rcs"}, default "loess"
        The flexible calibration curve (loess with R's defaults, or a restricted
        cubic spline).
    show_belt : bool, default False
        Compute the calibration belt (Finazzi et al. 2011; Nattino, Finazzi &
        Bertolini 2014) to draw in place of the curve's band.
    n_groups : int, default 10
        Groups of risk (deciles) of the points and of the Hosmer-Lemeshow test.
    confidence : float, default 0.95
        Level of the intervals (curve band, intercept, slope, groups).
    n_spike_bins : int, default 100
        Equal-width bins on [0, 1] of the risk distribution drawn at the bottom.
    class_index : int, optional
        For ``(n, k)`` probabilities: the column drawn, one-vs-rest.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights.
    logits : bool, default False
        Whether ``probs`` are logits.
    classes : array-like, optional
        The class of each column (labels are then read as these classes).

    Returns
    -------
    ClinicalCalibrationDiagramData

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.diagrams import clinical_calibration_diagram_data
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, 500)
    >>> y = (rng.uniform(size=500) < p).astype(int)
    >>> d = clinical_calibration_diagram_data(p, y)
    >>> len(d.group_risk), int(d.spike_events.sum() + d.spike_nonevents.sum())
    (10, 500)
    """
    check_integer(n_spike_bins, "n_spike_bins", minimum=1)
    p, y, w, cls = _risks(probs, labels, sample_weight, logits, classes, class_index)
    if hierarchy is None:
        from ..clinical import calibration_hierarchy

        hierarchy = calibration_hierarchy(
            p,
            y,
            confidence=confidence,
            curve=curve,
            n_groups=n_groups,
            belt=show_belt,
            sample_weight=w,
        )
    else:
        if int(hierarchy.n) != p.shape[0]:
            raise CalibrationInputError(
                f"hierarchy was computed on {int(hierarchy.n)} rows and the predictions "
                f"have {p.shape[0]}: pass the hierarchy of these predictions"
            )
        if show_belt and getattr(hierarchy, "belt", None) is None:
            raise CalibrationInputError(
                "show_belt=True needs a hierarchy with its belt: "
                "calibration_hierarchy(..., belt=True)"
            )
    risk, obs, size = _groups(p, y, w, hierarchy, n_groups)
    lo, hi = wilson_interval(obs, size, confidence)
    edges = np.linspace(0.0, 1.0, int(n_spike_bins) + 1)
    ww = np.ones(p.shape[0]) if w is None else w
    ev = np.histogram(p, bins=edges, weights=ww * (y == 1))[0].astype(np.float64)
    ne = np.histogram(p, bins=edges, weights=ww * (y != 1))[0].astype(np.float64)
    return ClinicalCalibrationDiagramData(
        hierarchy, risk, obs, lo, hi, size, edges, ev, ne, float(confidence), cls
    )


def clinical_calibration_diagram(
    probs: Any,
    labels: Any = None,
    *,
    hierarchy: Any = None,
    ax: Any = None,
    curve: str = "loess",
    show_belt: bool = False,
    n_groups: int = 10,
    confidence: float = 0.95,
    n_spike_bins: int = 100,
    class_index: int | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
    title: str | None = None,
) -> Figure:
    """The clinical calibration diagram: the plot of ``val.prob`` / ``val.prob.ci.2``.

    The levels of calibration of Van Calster et al. (2016) in one plot, as R's
    ``rms::val.prob`` (Harrell) and ``CalibrationCurves::val.prob.ci.2`` (Van
    Calster et al. 2016) draw them: the dashed ideal line; the flexible
    calibration curve (loess with R's defaults, or a restricted cubic spline;
    Austin & Steyerberg 2019) with its pointwise band at ``confidence`` or, with
    ``show_belt``, the calibration belt at each of its levels (Finazzi et al.
    2011; Nattino, Finazzi & Bertolini 2014); the observed proportion in each
    group of risk (deciles) with its Wilson interval (triangles); the distribution
    of the risks by outcome below the plot (spikes up: events; down: non-events;
    the longest spike is 0.08 long); and a box with n, the events, the
    calibration intercept and slope with their intervals, the C-statistic, the
    Brier score, ICI, E90 and Emax (:func:`clinical_note`). Every number comes
    from :func:`clinical_calibration_diagram_data`.

    Parameters
    ----------
    probs : array-like of shape (n,) or (n, k)
        Predicted risks P(y = 1), or class probabilities (``class_index``).
    labels : array-like of shape (n,)
        Outcomes 0/1 (or class indices; class names with ``classes=``).
    hierarchy : CalibrationHierarchy, optional
        The hierarchy of these predictions, if already computed.
    ax : matplotlib Axes, optional
        Draw here; default: a new single-column figure.
    curve : {"loess", "rcs"}, default "loess"
    show_belt : bool, default False
        Draw the calibration belt in place of the curve's pointwise band.
    n_groups : int, default 10
    confidence : float, default 0.95
    n_spike_bins : int, default 100
    class_index : int, optional
        For ``(n, k)`` probabilities: the column drawn, one-vs-rest.
    sample_weight : array-like of shape (n,), optional
    logits : bool, default False
    classes : array-like, optional
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.figure.Figure
        Artists by gid: ``"ideal"`` (the diagonal), ``"flexible-curve"`` (the
        curve), ``"curve-band"`` (its band), ``"belt-<level>"`` (each belt level,
        e.g. ``"belt-0.95"``), ``"groups"`` (the group points; their error bars
        ``"group-intervals"``), ``"events"`` and ``"non-events"`` (the spikes,
        line collections), ``"key"`` (the legend) and ``"metrics"`` (the box of
        numbers). A new figure has the plot in ``fig.axes[0]`` and, beside it, the
        box and the key in ``fig.axes[1]`` (its ``artists[0]`` is the box), so they
        hide nothing; with ``ax`` given the box is ``ax.artists[0]``, placed where
        it hides the least, and the key is under the plot.

    Examples
    --------
    >>> import numpy as np
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import clinical_calibration_diagram
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=800)
    >>> y = (rng.uniform(size=800) < 1 / (1 + np.exp(-z))).astype(int)
    >>> fig = clinical_calibration_diagram(1 / (1 + np.exp(-2 * z)), y)  # too extreme
    >>> ax = fig.axes[0]
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('Predicted risk', 'Observed proportion')
    >>> print(fig.axes[1].artists[0].get_title().get_text().splitlines()[2])
    Slope 0.46 [0.37, 0.55]
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = clinical_calibration_diagram_data(
        probs,
        labels,
        hierarchy=hierarchy,
        curve=curve,
        show_belt=show_belt,
        n_groups=n_groups,
        confidence=confidence,
        n_spike_bins=n_spike_bins,
        class_index=class_index,
        sample_weight=sample_weight,
        logits=logits,
        classes=classes,
    )
    h = data.hierarchy
    with rc_context():
        side = None
        if ax is None:  # the plot and, beside it, the numbers
            fig = new_figure(5.6, 3.3)
            grid = fig.add_gridspec(1, 2, width_ratios=(3.3, 2.3))
            a = fig.add_subplot(grid[0, 0])
            side = fig.add_subplot(grid[0, 1])
            side.set_axis_off()
        else:
            fig, a = ax.figure, ax
        a.plot(
            [0, 1],
            [0, 1],
            ls=(0, (4, 2)),
            lw=0.9,
            color=IDEAL_COLOR,
            label="Ideal",
            zorder=1.5,
            gid="ideal",
        )
        belt = getattr(h, "belt", None)
        pct = f"{100 * data.confidence:g} %"
        if show_belt and belt is not None:
            levels = list(belt.confidence_levels)
            order = np.argsort(levels)[::-1]  # widest first, lightest
            for rank, j in enumerate(order):
                shade = 0.18 + 0.22 * rank
                band = a.fill_between(
                    np.asarray(belt.grid, dtype=np.float64),
                    np.asarray(belt.lower, dtype=np.float64)[j],
                    np.asarray(belt.upper, dtype=np.float64)[j],
                    color=GAP_COLOR,
                    alpha=shade,
                    lw=0,
                    zorder=1 + 0.1 * rank,
                    label=f"{100 * levels[j]:g} % belt",
                )
                band.set_gid(f"belt-{levels[j]:g}")
        else:
            c = h.curve
            band = a.fill_between(
                np.asarray(c.grid, dtype=np.float64),
                np.asarray(c.lower, dtype=np.float64),
                np.asarray(c.upper, dtype=np.float64),
                color=GAP_COLOR,
                alpha=0.2,
                lw=0,
                zorder=1,
                label=f"{pct} pointwise band",
            )
            band.set_gid("curve-band")
        c = h.curve
        (line,) = a.plot(
            np.asarray(c.grid, dtype=np.float64),
            np.asarray(c.estimate, dtype=np.float64),
            color=GAP_COLOR,
            lw=1.4,
            zorder=3,
            label="Flexible calibration" + (f" ({c.method})" if getattr(c, "method", "") else ""),
        )
        line.set_gid("flexible-curve")
        err = a.errorbar(
            data.group_risk,
            data.group_observed,
            yerr=np.vstack(
                [data.group_observed - data.group_low, data.group_high - data.group_observed]
            ),
            fmt="^",
            ms=3.5,
            color=BAR_COLOR,
            elinewidth=0.8,
            capsize=1.5,
            zorder=4,
            label="Grouped observations",
        )
        err.lines[0].set_gid("groups")
        for coll in err.lines[2]:
            coll.set_gid("group-intervals")
        # the distribution of the risks by outcome: spikes from a baseline below 0
        mids = (data.spike_edges[:-1] + data.spike_edges[1:]) / 2.0
        top = max(float(data.spike_events.max()), float(data.spike_nonevents.max()), 1e-300)
        scale = SPIKE_HEIGHT / top
        y0 = SPIKE_BASELINE
        up = data.spike_events > 0
        dn = data.spike_nonevents > 0
        a.vlines(
            mids[up],
            y0,
            y0 + scale * data.spike_events[up],
            color=HIST_COLOR,
            lw=0.8,
            gid="events",
            label="Risks of events (up)",
        )
        a.vlines(
            mids[dn],
            y0 - scale * data.spike_nonevents[dn],
            y0,
            color=DENSITY_COLOR,
            lw=0.8,
            gid="non-events",
            label="of non-events (down)",
        )
        a.axhline(y0, color="#BBBBBB", lw=0.5, zorder=0.5)
        # what the box must not hide but "best" does not see: the diagonal (two
        # vertices) and the spikes (a line collection)
        diag = np.linspace(0.0, 1.0, 60)
        invisible_proxy(a, diag, diag, diag)
        invisible_proxy(a, mids, y0 + scale * data.spike_events, y0 - scale * data.spike_nonevents)
        a.text(1.0, y0 + 0.01, "1", fontsize=6, ha="right", va="bottom", color=HIST_COLOR)
        a.text(1.0, y0 - 0.01, "0", fontsize=6, ha="right", va="top", color=DENSITY_COLOR)
        unit_ticks(a)
        a.set_ylim(SPIKE_BASELINE - SPIKE_HEIGHT - 0.02, 1.02)
        a.set_xlabel("Predicted risk")
        a.set_ylabel("Observed proportion")
        if title:
            a.set_title(title)
        if side is None:  # the key under the axes, the numbers where they hide the least
            key = a.legend(
                loc="upper center",
                bbox_to_anchor=(0.5, -0.14),
                ncols=2,
                fontsize=6.5,
                frameon=False,
                handlelength=1.6,
                columnspacing=1.0,
            )
            metrics_note(a, data.note)
        else:  # both beside the plot, where they hide nothing
            handles, labels_ = a.get_legend_handles_labels()
            key = side.legend(
                handles, labels_, loc="lower left", fontsize=7, frameon=False, handlelength=1.6
            )
            note = metrics_note(side, data.note)
            note.set_loc("upper left")
        key.set_gid("key")
        style_axes(a)
    return fig
