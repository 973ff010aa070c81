"""PIT histogram of Gaussian regression predictions (Kuleshov et al. 2018; Gneiting, Balabdaoui & Raftery 2007).

The probability integral transform ``u_i = F_i(y_i)`` of calibrated predictive
distributions is uniform on [0, 1] (Gneiting, Balabdaoui & Raftery 2007, §2-3; Kuleshov et
al. 2018, §3), so its histogram is flat: U-shaped when the predicted
variances are too small, hump-shaped when too large, sloped when the means
are biased.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._docstrings import fill_doc
from ..regression import PITHistogram, pit_histogram
from ..regression.inputs import spread_by_name
from ..validation import check_size
from ._regression import (
    check_recalibrator,
    checked_predictions,
    effective_n,
    figure_and_axes,
    histogram_of_pit,
    recalibrated_pit,
    weights,
)
from ._style import (
    BAR_COLOR,
    HIST_COLOR,
    OKABE_ITO,
    metrics_note,
    rc_context,
    require_matplotlib,
    style_axes,
    unit_ticks,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "pit_histogram_diagram",
    "pit_histogram_diagram_data",
    "PITHistogramDiagramData",
    "pit_band",
]

#: The parameter entries each diagram and its compute step share (filled in by
#: ``fill_doc``): written once here.
_PARAMETERS: dict[str, str] = dict(
    mean="mean : array-like of shape (n,), GaussianPredictions, PredictiveDistribution or ProbabilisticPredictions\n    Predicted means (target units), with ``variance`` or ``std``; or a predictive distribution of any kind (quantiles, samples, a parametric family: :class:`calipers.regression.PredictiveDistribution`, with ``targets``; Gneiting & Raftery 2007), drawn from its own distribution function.",
    variance="variance : array-like of shape (n,), optional\n    Predicted variances (> 0), keyword-only. Exactly one of ``variance`` and ``std``.",
    std="std : array-like of shape (n,), optional\n    Predicted standard deviations (> 0), keyword-only.",
    targets="targets : array-like of shape (n,)\n    Observed targets.",
    n_bins="n_bins : int, default 10\n    Number of equal-width bins on [0, 1].",
)

#: Colour of the bars after recalibration.
RECALIBRATED_COLOR = OKABE_ITO["orange"]


def pit_band(
    n_bins: int, n_effective: float, total: float, confidence_level: float = 0.95
) -> tuple[float, float]:
    """Central binomial range of a PIT-histogram bin under calibration.

    Under calibration each of ``n`` independent PIT values falls into a given
    one of ``n_bins`` equal-width bins with probability ``1 / n_bins``
    (Gneiting, Balabdaoui & Raftery 2007, §3), so the bin's count is Binomial(n, 1 / n_bins);
    this returns its ``(1 - confidence_level) / 2`` and ``(1 + confidence_level)
    / 2`` quantiles. With row weights, ``n`` is Kish's effective sample size
    ``n_effective`` (rounded) and the range is scaled to the weighted ``total``.

    Parameters
    ----------
    n_bins : int
        Number of equal-width bins on [0, 1].
    n_effective : float
        Effective number of rows (``n`` without weights).
    total : float
        Total weight of the rows (``n`` without weights), the scale of the counts.
    confidence_level : float, default 0.95

    Returns
    -------
    tuple of float
        Lower and upper end, in the units of the histogram's counts.

    Examples
    --------
    >>> from calipers.diagrams.pit_histogram import pit_band
    >>> pit_band(10, 1000, 1000)
    (82.0, 119.0)
    """
    from scipy.stats import binom

    n = max(1, int(round(n_effective)))
    a = (1.0 - confidence_level) / 2.0
    lo, hi = binom.ppf([a, 1.0 - a], n, 1.0 / n_bins)
    scale = total / n
    return float(lo * scale), float(hi * scale)


@fill_doc(**_PARAMETERS)
@spread_by_name
def pit_histogram_diagram(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_bins: int = 10,
    ax: Any = None,
    recalibrator: Any = None,
    title: str | None = None,
) -> Figure:
    """PIT histogram with the uniform line and the 95 % band of a calibrated model.

    Bars: the (weighted) count of the PIT values ``Phi((y - mu) / sigma)`` in
    each of ``n_bins`` equal-width bins, exactly the counts of
    :func:`calipers.regression.pit_histogram` (Kuleshov et al. 2018, §3;
    Gneiting, Balabdaoui & Raftery 2007, §3). Horizontal line: the count ``total / n_bins``
    of a perfectly flat histogram. Grey band: the central 95 % range of one
    bin's count under calibration, Binomial(n, 1 / n_bins)
    (:func:`pit_band`; with weights, of Kish's effective n, scaled to the total
    weight). The note gives the Kolmogorov-Smirnov distance of the PIT values
    from the uniform distribution (and the L1 distance of the binned one).

    With ``recalibrator`` (a fitted regression recalibrator, e.g.
    ``calipers.recalibration.VarianceScaling().fit(...)`` on a calibration
    split) the bars after recalibration, of the PIT values
    ``recalibrator.predict_cdf(...)``, are drawn beside the bars before it.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}
    {n_bins}
    ax : matplotlib Axes, optional
        Draw here; default: a new single-column figure.
    recalibrator : fitted regression recalibrator, optional
        Also draw the histogram after recalibration.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.figure.Figure
        The bar patches have gid ``"pit-bars"`` (after recalibration
        ``"pit-bars-recalibrated"``), the uniform line ``"uniform"``, the band
        ``"calibrated-band"``; the note is ``ax.artists[0]`` (gid ``"metrics"``).

    Examples
    --------
    >>> import numpy as np
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import pit_histogram_diagram
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.normal(size=500); y = mu + rng.normal(scale=2.0, size=500)
    >>> fig = pit_histogram_diagram(mu, variance=np.ones(500), targets=y)   # sd too small: U shape
    >>> print(fig.axes[0].artists[0].get_title().get_text().splitlines()[0])
    KS distance = 0.1720
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = pit_histogram_diagram_data(
        mean,
        variance=variance,
        std=std,
        targets=targets,
        sample_weight=sample_weight,
        n_bins=n_bins,
        recalibrator=recalibrator,
    )
    before, after, total = data.before, data.after, data.total
    B = before.counts.shape[0]
    lo, hi = data.band_low, data.band_high
    with rc_context():
        fig, a = figure_and_axes(ax)
        width = 1.0 / B
        centers = (before.edges[:-1] + before.edges[1:]) / 2.0
        band = a.axhspan(lo, hi, color=HIST_COLOR, alpha=0.18, lw=0, zorder=0.5)
        band.set_gid("calibrated-band")
        band.set_label("95 % range if calibrated")
        sets: list[tuple[PITHistogram, str, str, str]] = [
            (before, "pit-bars", BAR_COLOR, "Before" if after is not None else "PIT values")
        ]
        if after is not None:
            sets.append((after, "pit-bars-recalibrated", RECALIBRATED_COLOR, "Recalibrated"))
        bw = 0.9 * width / len(sets)
        for k, (h, gid, color, label) in enumerate(sets):
            shift = (k - (len(sets) - 1) / 2.0) * bw
            bars = a.bar(
                centers + shift, h.counts, width=bw, color=color, alpha=0.85, lw=0, label=label
            )
            for p in bars.patches:
                p.set_gid(gid)
        a.axhline(
            total / B, color="#404040", lw=0.9, ls=(0, (4, 2)), label="Uniform", gid="uniform"
        )
        unit_ticks(a, "x")
        a.set_xlabel("PIT value $F(y)$")
        a.set_ylabel("Weight" if data.weighted else "Count")
        top = max(hi, *(float(np.max(h.counts)) for h, *_ in sets))
        a.set_ylim(0.0, 1.08 * top)
        if title:
            a.set_title(title)
        handles, labels = a.get_legend_handles_labels()
        metrics_note(a, data.note, handles, labels)
        style_axes(a)
    return fig


@dataclass(frozen=True)
class PITHistogramDiagramData:
    """What :func:`pit_histogram_diagram` draws, computed without matplotlib.

    Returned by :func:`pit_histogram_diagram_data`.

    Attributes
    ----------
    before : PITHistogram
        :func:`calipers.regression.pit_histogram` of the predictions: the bars.
    after : PITHistogram or None
        The histogram of the PIT values after ``recalibrator``; None without one.
    band_low, band_high : float
        The central 95 % range of one bin's count under calibration (:func:`pit_band`).
    total : float
        The number of rows (their total weight); the uniform line is ``total / n_bins``.
    weighted : bool
        Whether sample weights were given (the bars then show weight).
    """

    before: PITHistogram
    after: PITHistogram | None
    band_low: float
    band_high: float
    total: float
    weighted: bool

    @property
    def note(self) -> str:
        """The diagram's note: the KS and L1 distances from uniform (before → after)."""
        b, a = self.before, self.after
        if a is None:
            return f"KS distance = {b.ks_statistic:.4f}\nL1 = {b.l1_distance:.4f}"
        return (
            f"KS distance = {b.ks_statistic:.4f} → {a.ks_statistic:.4f}\n"
            f"L1 = {b.l1_distance:.4f} → {a.l1_distance:.4f}"
        )


@fill_doc(**_PARAMETERS)
@spread_by_name
def pit_histogram_diagram_data(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_bins: int = 10,
    recalibrator: Any = None,
) -> PITHistogramDiagramData:
    """The PIT histograms, band and note a PIT histogram diagram draws.

    The compute step of :func:`pit_histogram_diagram` (which draws exactly these):
    :func:`calipers.regression.pit_histogram` (Kuleshov et al. 2018, §3), the same
    histogram after ``recalibrator``, and the binomial band of a calibrated model
    (:func:`pit_band`; Gneiting, Balabdaoui & Raftery 2007). Imports no matplotlib.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}
    {n_bins}
    recalibrator : fitted regression recalibrator, optional
        Also compute the histogram after recalibration.

    Returns
    -------
    PITHistogramDiagramData

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.diagrams import pit_histogram_diagram_data
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.normal(size=500); y = mu + rng.normal(scale=2.0, size=500)
    >>> data = pit_histogram_diagram_data(mu, variance=np.ones(500), targets=y)
    >>> print(data.note.splitlines()[0])
    KS distance = 0.1720
    >>> float(data.before.counts.sum()), data.total
    (500.0, 500.0)
    """
    B = check_size(n_bins, "n_bins", "MAX_BINS")
    G = checked_predictions(mean, variance, std, targets, sample_weight)
    before = pit_histogram(G, n_bins=B)
    w = weights(G)
    after: PITHistogram | None = None
    if recalibrator is not None:
        after = histogram_of_pit(recalibrated_pit(check_recalibrator(recalibrator), G), w, B)
    total = float(np.sum(w))
    lo, hi = pit_band(B, effective_n(w), total)
    return PITHistogramDiagramData(before, after, lo, hi, total, sample_weight is not None)
