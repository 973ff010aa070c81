"""Smooth reliability diagrams in the style of SmoothECE (Błasiok & Nakkiran 2023)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._backend import to_numpy
from .._docstrings import fill_doc
from ..metrics.smooth_ece import SmoothReliability, smooth_reliability
from ..pipeline.lenses import lens_arrays, resolve_lens
from ..validation import CalibrationInputError, check_predictions, check_size
from ._style import (
    DENSITY_COLOR,
    GAP_COLOR,
    SINGLE_COLUMN,
    figure_legend,
    ideal_line,
    invisible_proxy,
    metrics_note,
    new_figure,
    percent,
    rc_context,
    require_matplotlib,
    style_axes,
    unit_ticks,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "smooth_reliability_diagram",
    "smooth_reliability_diagram_data",
    "SmoothReliabilityDiagramData",
    "smooth_linewidths",
]

#: The parameter entries each diagram and its compute step share (filled in by
#: ``fill_doc``): written once here.
_PARAMETERS: dict[str, str] = dict(
    probs="probs : array-like of shape (n, k) or (n,)",
    labels="labels : array-like of shape (n,)",
    bandwidth="bandwidth : float, optional\n    Kernel bandwidth in confidence units; default the SmoothECE fixed point\n    ``sigma*`` (:func:`calipers.smece_bandwidth`).",
    intervals='intervals : {None, "bootstrap"}, default None',
    n_bootstrap="n_bootstrap : int, default 100",
    confidence_level="confidence_level : float, default 0.95",
    seed="seed : int or numpy.random.Generator, default 0",
    n_points="n_points : int, optional\n    Evaluation points (default relplot's mesh, at least 200).",
)

#: Line width in points where the density is 0 and the extra width at its peak.
MIN_LINEWIDTH = 0.4
EXTRA_LINEWIDTH = 3.6
#: The curve is drawn where the density exceeds this fraction of its peak.
MIN_RELATIVE_DENSITY = 1e-3


def smooth_linewidths(density: Any) -> np.ndarray:
    """Line widths (points) of the curve segments: affine in the density.

    ``MIN_LINEWIDTH + EXTRA_LINEWIDTH * density / max(density)`` for the
    density at the left end of each segment, so the curve is thickest where the
    confidences concentrate (the SmoothECE diagram's device).

    Examples
    --------
    >>> from calipers.diagrams import smooth_linewidths
    >>> smooth_linewidths([0.0, 1.0, 2.0, 1.0]).tolist()
    [0.4, 2.2, 4.0]
    """
    d = np.asarray(density, dtype=np.float64)
    top = float(np.max(d)) if d.size else 0.0
    rel = d[:-1] / top if top > 0 else np.zeros(max(d.size - 1, 0))
    return np.asarray(MIN_LINEWIDTH + EXTRA_LINEWIDTH * rel, dtype=np.float64)


@fill_doc(**_PARAMETERS)
def smooth_reliability_diagram(
    probs: Any,
    labels: Any = None,
    *,
    bandwidth: float | None = None,
    show_density: bool = True,
    intervals: Literal["bootstrap"] | None = None,
    n_bootstrap: int = 100,
    confidence_level: float = 0.95,
    seed: Any = 0,
    n_points: int | None = None,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    ax: Any = None,
    title: str | None = None,
    legend: bool = True,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Figure:
    """Smoothed reliability diagram with density-weighted line width (SmoothECE style).

    Draws the curves of :func:`calipers.smooth_reliability` (Błasiok &
    Nakkiran 2023; reflected Gaussian kernel of bandwidth ``sigma``, relplot's
    grid, docs/how-calipers-computes.md §6): the kernel-smoothed accuracy
    ``sum_i K(t, f_i) y_i / (sum_i K(t, f_i) + 1e-4)`` against the confidence
    ``t``, as a line whose width grows with the smoothed density of the
    confidences (:func:`smooth_linewidths`), the dashed diagonal, and the
    density itself (sky blue, right axis). The curve is drawn only where the
    density exceeds 0.1 % of its peak: elsewhere the 1e-4 floor of the
    denominator pulls it towards 0 and it says nothing. The note (placed where it hides the least) gives
    smECE and the bandwidth used (``sigma*``, the fixed point, by default) and
    the accuracy. ``intervals="bootstrap"`` adds a pointwise percentile band of
    the curve over ``n_bootstrap`` resamples of the rows at the same bandwidth
    (as relplot's diagram does with its bootstrap band).

    Parameters
    ----------
    {probs}
    {labels}
    {bandwidth}
    show_density : bool, default True
    {intervals}
    {n_bootstrap}
    {confidence_level}
    {seed}
    {n_points}
    lens : {"auto", "top_label", "binary"}, default "auto"
        ``"auto"``: P(y = 1) against y for 1-D input (as ``relplot`` draws
        it), confidence against accuracy for ``(n, k)`` input.
    ax : Axes, optional
    title : str, optional
    legend : bool, default True
        Name the curve, band, diagonal and density: above the figure when the
        function creates it, in the note's box when ``ax`` is given.
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    matplotlib.figure.Figure
        The curve is a ``LineCollection`` with gid ``"smooth-curve"``; the
        density has gid ``"density"``, the band ``"bootstrap-band"``; the
        note (a title-only legend placed where it hides the least data) is
        ``fig.axes[0].artists[0]``, gid ``"metrics"``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import calipers as cp
    >>> from calipers.diagrams import smooth_reliability_diagram
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> fig = smooth_reliability_diagram(d.probs["random_forest"], d.labels)
    >>> print(fig.axes[0].artists[0].get_title().get_text())  # the metrics note
    smECE = 20.26%
    σ* = 0.203
    Accuracy = 97.3%
    >>> round(100 * cp.smece(d.probs["random_forest"], d.labels), 2)
    20.26
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = smooth_reliability_diagram_data(
        probs,
        labels,
        bandwidth=bandwidth,
        intervals=intervals,
        n_bootstrap=n_bootstrap,
        confidence_level=confidence_level,
        seed=seed,
        n_points=n_points,
        lens=lens,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    return _draw_smooth(data, ax=ax, show_density=show_density, title=title, legend=legend)


@dataclass(frozen=True)
class SmoothReliabilityDiagramData:
    """What :func:`smooth_reliability_diagram` draws, computed without matplotlib.

    Returned by :func:`smooth_reliability_diagram_data`; the curves are those of
    :func:`calipers.smooth_reliability` (Błasiok & Nakkiran 2023).

    Attributes
    ----------
    lens : {"top_label", "binary"}
        The lens read (``"auto"`` resolved).
    t : numpy.ndarray of shape (m,)
        The evaluation points on [0, 1] (confidence, or P(y = 1)).
    mean_target : numpy.ndarray of shape (m,)
        The kernel-smoothed accuracy (frequency of y = 1) at ``t``: the curve.
    density : numpy.ndarray of shape (m,)
        The smoothed density of the scores at ``t``, per unit score.
    shown : numpy.ndarray of bool, shape (m,)
        Where the curve is drawn: the density exceeds 0.1 % of its peak.
    linewidths : numpy.ndarray of shape (m - 1,)
        The width in points of each segment (:func:`smooth_linewidths`).
    band_low, band_high : numpy.ndarray of shape (m,) or None
        The pointwise percentile bootstrap band of the curve at ``confidence_level``;
        None without ``intervals``.
    confidence_level : float
    smece : float
        SmoothECE at ``bandwidth``, in [0, 1].
    bandwidth : float
        The kernel bandwidth used, in score units.
    fixed_point : bool
        Whether ``bandwidth`` is the SmoothECE fixed point ``sigma*`` (no bandwidth given).
    accuracy : float
        The (weighted) top-1 accuracy, in [0, 1].
    """

    lens: Literal["top_label", "binary"]
    t: np.ndarray
    mean_target: np.ndarray
    density: np.ndarray
    shown: np.ndarray
    linewidths: np.ndarray
    band_low: np.ndarray | None
    band_high: np.ndarray | None
    confidence_level: float
    smece: float
    bandwidth: float
    fixed_point: bool
    accuracy: float

    @property
    def note(self) -> str:
        """The diagram's metrics note: smECE, the bandwidth and the accuracy."""
        sym = "σ*" if self.fixed_point else "σ"
        return (
            f"smECE = {percent(self.smece)}\n{sym} = {self.bandwidth:.3f}\n"
            f"Accuracy = {percent(self.accuracy, 1)}"
        )


@fill_doc(**_PARAMETERS)
def smooth_reliability_diagram_data(
    probs: Any,
    labels: Any = None,
    *,
    bandwidth: float | None = None,
    intervals: Literal["bootstrap"] | None = None,
    n_bootstrap: int = 100,
    confidence_level: float = 0.95,
    seed: Any = 0,
    n_points: int | None = None,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> SmoothReliabilityDiagramData:
    """The curves a smooth reliability diagram draws, its band and its note.

    The compute step of :func:`smooth_reliability_diagram` (which draws exactly
    these): :func:`calipers.smooth_reliability` (Błasiok & Nakkiran 2023; reflected
    Gaussian kernel, relplot's grid), the segment widths, and with
    ``intervals="bootstrap"`` the pointwise percentile band over ``n_bootstrap``
    resamples of the rows at the same bandwidth. Imports no matplotlib.

    Parameters
    ----------
    {probs}
    {labels}
    {bandwidth}
    {intervals}
    {n_bootstrap}
    {confidence_level}
    {seed}
    {n_points}
    lens : {"auto", "top_label", "binary"}, default "auto"
        As :func:`smooth_reliability_diagram`.
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    SmoothReliabilityDiagramData

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.diagrams import smooth_reliability_diagram_data
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> data = smooth_reliability_diagram_data(d.probs["random_forest"], d.labels)
    >>> print(data.note)
    smECE = 20.26%
    σ* = 0.203
    Accuracy = 97.3%
    >>> sr = cp.smooth_reliability(d.probs["random_forest"], d.labels)
    >>> bool(np.array_equal(data.mean_target, sr.mean_target))
    True
    """
    if intervals not in (None, "bootstrap"):
        raise CalibrationInputError(f"intervals must be None or 'bootstrap'; got {intervals!r}")
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
    use: Literal["top_label", "binary"] = (
        "binary" if resolve_lens(lens, P) == "binary" else "top_label"
    )
    sr: SmoothReliability = smooth_reliability(
        P, None, bandwidth=bandwidth, n_points=n_points, lens=use
    )
    t, mu, dens = sr.t, sr.mean_target, sr.density
    shown = dens > MIN_RELATIVE_DENSITY * float(np.max(dens))
    band = None
    if intervals == "bootstrap":
        n_bootstrap = check_size(n_bootstrap, "n_bootstrap", "MAX_RESAMPLES", minimum=2)
        rng = np.random.default_rng(seed)
        n = P.n_samples
        w0 = (
            np.ones(n)
            if P.sample_weight is None
            else np.asarray(to_numpy(P.sample_weight), np.float64)
        )
        reps = np.empty((int(n_bootstrap), t.shape[0]))
        for b in range(int(n_bootstrap)):
            k = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
            Pb = check_predictions(P.probs, P.labels, sample_weight=w0 * k, validate=False)
            reps[b] = smooth_reliability(
                Pb, None, bandwidth=sr.bandwidth, n_points=t.shape[0], lens=use
            ).mean_target
        a = 100.0 * (1.0 - confidence_level) / 2.0
        band = np.percentile(reps, [a, 100.0 - a], axis=0)
    _, correct, wts = lens_arrays(P, "top_label")
    acc = float(np.sum(wts * correct) / np.sum(wts))

    return SmoothReliabilityDiagramData(
        lens=use,
        t=t,
        mean_target=mu,
        density=dens,
        shown=shown,
        linewidths=smooth_linewidths(dens),
        band_low=None if band is None else band[0],
        band_high=None if band is None else band[1],
        confidence_level=confidence_level,
        smece=float(sr.value),
        bandwidth=float(sr.bandwidth),
        fixed_point=bandwidth is None,
        accuracy=acc,
    )


def _draw_smooth(
    data: SmoothReliabilityDiagramData,
    *,
    ax: Any,
    show_density: bool,
    title: str | None,
    legend: bool,
) -> Figure:
    """Draw ``data`` (:func:`smooth_reliability_diagram_data`) as
    :func:`smooth_reliability_diagram` does."""
    from matplotlib.collections import LineCollection

    t, mu, dens, shown, use = data.t, data.mean_target, data.density, data.shown, data.lens
    confidence_level = data.confidence_level
    band = (
        None if data.band_low is None or data.band_high is None else (data.band_low, data.band_high)
    )
    with rc_context():
        if ax is None:
            fig = new_figure(SINGLE_COLUMN, 3.3)
            ax_ = fig.subplots()
        else:
            ax_ = ax
            fig = ax.figure
        if band is not None:
            fb = ax_.fill_between(
                t,
                band[0],
                band[1],
                where=shown,
                color="#999999",
                alpha=0.35,
                linewidth=0,
                label=f"{round(100 * confidence_level):g}% bootstrap band",
                zorder=2,
            )
            fb.set_gid("bootstrap-band")
            invisible_proxy(ax_, t[shown], band[1][shown], band[0][shown])
        pts = np.column_stack([t, mu])
        segs = np.stack([pts[:-1], pts[1:]], axis=1)
        keep = shown[:-1] & shown[1:]
        lw = data.linewidths
        lc = LineCollection(
            list(segs[keep]),
            linewidths=lw[keep],
            colors=GAP_COLOR,
            capstyle="round",
            joinstyle="round",
            label="Smoothed accuracy" if use == "top_label" else "Smoothed frequency of y = 1",
            zorder=3,
        )
        lc.set_gid("smooth-curve")
        ax_.add_collection(lc)
        invisible_proxy(ax_, t[shown], mu[shown] + 0.02, mu[shown] - 0.02)
        ideal_line(ax_)
        if show_density:
            twin = ax_.twinx()
            fill = twin.fill_between(t, 0.0, dens, color=DENSITY_COLOR, alpha=0.35, linewidth=0)
            fill.set_gid("density")
            twin.set_ylim(0.0, 1.04 * float(np.max(dens)))
            invisible_proxy(ax_, t, dens / float(np.max(dens)))  # same height on ax_
            twin.set_ylabel("Density")
            style_axes(twin)
            ax_.set_zorder(twin.get_zorder() + 1)
            ax_.patch.set_visible(False)
        unit_ticks(ax_, "both")
        ax_.set_ylim(0.0, 1.04)
        if use == "top_label":
            ax_.set_xlabel("Confidence")
            ax_.set_ylabel("Accuracy")
        else:
            ax_.set_xlabel("Predicted probability P(y = 1)")
            ax_.set_ylabel("Observed frequency of y = 1")
        style_axes(ax_)
        note = data.note
        from matplotlib.lines import Line2D

        handles, labs = ax_.get_legend_handles_labels()
        # the collection's own legend handle has its first (thinnest) width
        handles = [Line2D([], [], color=GAP_COLOR, lw=2.0) if h is lc else h for h in handles]
        if show_density:
            from matplotlib.patches import Patch

            handles.append(Patch(color=DENSITY_COLOR, alpha=0.35, linewidth=0))
            labs.append("Density")
        if ax is None:
            metrics_note(ax_, note)
            if legend:
                figure_legend(fig, handles, labs, title=title, ncols=2)
            elif title:
                fig.suptitle(title)
        else:  # one box for the note and the legend entries
            metrics_note(ax_, note, *((handles, labs) if legend else ()))
            if title:
                ax_.set_title(title)
    return fig  # type: ignore[no-any-return]
