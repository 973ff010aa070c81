"""Quantile reliability diagram of regression predictions (Kuleshov et al. 2018, Fig. 1).

For each nominal level ``p``, the observed fraction of targets inside the
predicted central ``p``-interval; calibrated predictions lie on the diagonal
(Kuleshov et al. 2018, §3; Gneiting, Balabdaoui & Raftery 2007 call this calibration of the
predictive quantiles). Below the diagonal: intervals too narrow
(overconfident); above: too wide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._docstrings import fill_doc
from ..regression import quantile_calibration
from ..regression.inputs import spread_by_name
from ._regression import (
    check_recalibrator,
    checked_predictions,
    effective_n,
    figure_and_axes,
    recalibrated_coverage,
    weights,
)
from ._style import (
    BAR_COLOR,
    HIST_COLOR,
    OKABE_ITO,
    ideal_line,
    metrics_note,
    rc_context,
    require_matplotlib,
    style_axes,
    unit_ticks,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "quantile_reliability_diagram",
    "quantile_reliability_diagram_data",
    "QuantileReliabilityDiagramData",
]

#: The parameter entries each diagram and its compute step share (filled in by
#: ``fill_doc``): written once here.
_PARAMETERS: dict[str, str] = dict(
    mean="mean : array-like of shape (n,), GaussianPredictions, PredictiveDistribution or ProbabilisticPredictions\n    Predicted means (target units), with ``variance`` or ``std``; or a predictive distribution of any kind (quantiles, samples, a parametric family: :class:`calipers.regression.PredictiveDistribution`, with ``targets``; Gneiting & Raftery 2007), drawn from its own distribution function.",
    variance="variance : array-like of shape (n,), optional\n    Predicted variances (> 0), keyword-only. Exactly one of ``variance`` and ``std``.",
    std="std : array-like of shape (n,), optional\n    Predicted standard deviations (> 0), keyword-only.",
    targets="targets : array-like of shape (n,)\n    Observed targets.",
)


@fill_doc(**_PARAMETERS)
@spread_by_name
def quantile_reliability_diagram(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    levels: Any = None,
    ax: Any = None,
    recalibrator: Any = None,
    title: str | None = None,
) -> Figure:
    """Observed coverage of central prediction intervals against their nominal level.

    The points are :func:`calipers.regression.quantile_calibration`'s
    coverage: the (weighted) fraction of targets in
    ``mu +- sigma * Phi^-1((1 + p) / 2)`` for each level ``p`` (Kuleshov et
    al. 2018, §3 and Fig. 1; Gneiting, Balabdaoui & Raftery 2007, §2). The dashed diagonal is
    perfect calibration; the grey band is the central 95 % range of the
    coverage of a calibrated model, Binomial(n, p) / n at each level (with
    weights, of Kish's effective n). The note gives the mean absolute coverage
    error over the levels.

    With ``recalibrator`` (a fitted regression recalibrator) the coverage of
    its central intervals ``recalibrator.predict_interval(..., level=p)`` is
    drawn too (a target on an interval's end counts as inside, as above).

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}
    levels : array-like of shape (m,), optional
        Nominal levels strictly inside (0, 1). Default
        ``numpy.linspace(0.05, 0.95, 19)``.
    ax : matplotlib Axes, optional
        Draw here; default: a new single-column figure.
    recalibrator : fitted regression recalibrator, optional
        Also draw the coverage after recalibration.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.figure.Figure
        The coverage line has gid ``"coverage"`` (after recalibration
        ``"coverage-recalibrated"``), the diagonal ``"ideal"``, the band
        ``"calibrated-band"``; the note is ``ax.artists[0]`` (gid ``"metrics"``).

    Examples
    --------
    >>> import numpy as np
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import quantile_reliability_diagram
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.normal(size=500); y = mu + rng.normal(scale=2.0, size=500)
    >>> fig = quantile_reliability_diagram(mu, variance=np.ones(500), targets=y, levels=[0.5, 0.9])
    >>> fig.axes[0].get_lines()[0].get_ydata().tolist()   # coverage far below the levels
    [0.286, 0.642]
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = quantile_reliability_diagram_data(
        mean,
        variance=variance,
        std=std,
        targets=targets,
        sample_weight=sample_weight,
        levels=levels,
        recalibrator=recalibrator,
    )
    lv, lo, hi = data.levels, data.band_low, data.band_high
    after = data.coverage_after
    with rc_context():
        fig, a = figure_and_axes(ax, height=3.3)
        (line,) = a.plot(
            lv,
            data.coverage,
            marker="o",
            ms=3,
            color=BAR_COLOR,
            label="Before" if after is not None else "Observed coverage",
            zorder=3,
        )
        line.set_gid("coverage")
        if after is not None:
            (line2,) = a.plot(
                lv,
                after,
                marker="s",
                ms=3,
                color=OKABE_ITO["orange"],
                label="Recalibrated",
                zorder=3.1,
            )
            line2.set_gid("coverage-recalibrated")
        band = a.fill_between(
            lv, lo, hi, color=HIST_COLOR, alpha=0.18, lw=0, label="95 % range if calibrated"
        )
        band.set_gid("calibrated-band")
        ideal_line(a)
        unit_ticks(a)
        a.set_ylim(0.0, 1.0)
        a.set_aspect("equal")
        a.set_xlabel("Nominal level of the central interval")
        a.set_ylabel("Observed coverage")
        if title:
            a.set_title(title)
        handles, labels = a.get_legend_handles_labels()
        metrics_note(a, data.note, handles, labels)
        style_axes(a)
    return fig


@dataclass(frozen=True)
class QuantileReliabilityDiagramData:
    """What :func:`quantile_reliability_diagram` draws, computed without matplotlib.

    Returned by :func:`quantile_reliability_diagram_data`; the arrays are in
    increasing order of the level.

    Attributes
    ----------
    levels : numpy.ndarray of shape (m,)
        The nominal levels of the central intervals, in (0, 1).
    coverage : numpy.ndarray of shape (m,)
        The observed fraction (weight) of targets inside each central interval
        (:func:`calipers.regression.quantile_calibration`).
    coverage_after : numpy.ndarray of shape (m,) or None
        The same after ``recalibrator``; None without one.
    band_low, band_high : numpy.ndarray of shape (m,)
        The central 95 % range of the coverage of a calibrated model,
        Binomial(n_eff, level) / n_eff (Kish's effective n with weights).
    mean_absolute_error : float
        The mean of ``|coverage - level|``.
    mean_absolute_error_after : float or None
    """

    levels: np.ndarray
    coverage: np.ndarray
    coverage_after: np.ndarray | None
    band_low: np.ndarray
    band_high: np.ndarray
    mean_absolute_error: float
    mean_absolute_error_after: float | None

    @property
    def note(self) -> str:
        """The diagram's note: the mean absolute coverage error (before → after)."""
        if self.mean_absolute_error_after is None:
            return f"Mean |coverage − level| = {self.mean_absolute_error:.4f}"
        return (
            f"Mean |coverage − level|\n= {self.mean_absolute_error:.4f} → "
            f"{self.mean_absolute_error_after:.4f}"
        )


@fill_doc(**_PARAMETERS)
@spread_by_name
def quantile_reliability_diagram_data(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    levels: Any = None,
    recalibrator: Any = None,
) -> QuantileReliabilityDiagramData:
    """The coverage curves and band a quantile reliability diagram draws.

    The compute step of :func:`quantile_reliability_diagram` (which draws exactly
    these): :func:`calipers.regression.quantile_calibration` (Kuleshov et al. 2018,
    §3), the coverage after ``recalibrator`` and the binomial band of a calibrated
    model. Imports no matplotlib.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}
    levels : array-like, optional
        Nominal levels of the central intervals, as
        :func:`calipers.regression.quantile_calibration` takes them.
    recalibrator : fitted regression recalibrator, optional
        Also compute the coverage after recalibration.

    Returns
    -------
    QuantileReliabilityDiagramData

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.diagrams import quantile_reliability_diagram_data
    >>> from calipers.regression import quantile_calibration
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.normal(size=500); y = mu + rng.normal(scale=2.0, size=500)
    >>> data = quantile_reliability_diagram_data(mu, variance=np.ones(500), targets=y)
    >>> q = quantile_calibration(mu, variance=np.ones(500), targets=y)
    >>> data.mean_absolute_error == q.mean_absolute_error
    True
    """
    from scipy.stats import binom

    G = checked_predictions(mean, variance, std, targets, sample_weight)
    q = quantile_calibration(G, levels=levels)
    after = None
    if recalibrator is not None:
        after = recalibrated_coverage(check_recalibrator(recalibrator), G, q.levels)
    n_eff = max(1, int(round(effective_n(weights(G)))))
    order = np.argsort(q.levels, kind="stable")
    lv = q.levels[order]
    lo = binom.ppf(0.025, n_eff, lv) / n_eff
    hi = binom.ppf(0.975, n_eff, lv) / n_eff
    return QuantileReliabilityDiagramData(
        levels=lv,
        coverage=q.coverage[order],
        coverage_after=None if after is None else after[order],
        band_low=lo,
        band_high=hi,
        mean_absolute_error=q.mean_absolute_error,
        mean_absolute_error_after=(
            None if after is None else float(np.mean(np.abs(after - q.levels)))
        ),
    )
