"""Quantile reliability diagram of regression predictions (Kuleshov et al. 2018, Fig. 1).

For each nominal level ``p``, the observed fraction of targets inside the
predicted central ``p``-interval; calibrated predictions lie on the diagonal
(Kuleshov et al. 2018, §3; Gneiting, Balabdaoui & Raftery 2007 call this calibration of the
predictive quantiles). Below the diagonal: intervals too narrow
(overconfident); above: too wide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..regression import check_gaussian, quantile_calibration
from ..regression.inputs import spread_by_name
from ._regression import (
    check_recalibrator,
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

__all__ = ["quantile_reliability_diagram"]


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
    mean : array-like of shape (n,) or GaussianPredictions
        Predicted means (target units).
    variance : array-like of shape (n,), optional
        Predicted variances (> 0), keyword-only. Exactly one of ``variance`` and ``std``.
    std : array-like of shape (n,), optional
        Predicted standard deviations (> 0), keyword-only.
    targets : array-like of shape (n,)
        Observed targets.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights. Default None (unit weights).
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
    from scipy.stats import binom

    require_matplotlib()
    G = check_gaussian(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    q = quantile_calibration(G, levels=levels)
    after = None
    if recalibrator is not None:
        after = recalibrated_coverage(check_recalibrator(recalibrator), G, q.levels)
    n_eff = max(1, int(round(effective_n(weights(G)))))
    order = np.argsort(q.levels, kind="stable")
    lv = q.levels[order]
    lo = binom.ppf(0.025, n_eff, lv) / n_eff
    hi = binom.ppf(0.975, n_eff, lv) / n_eff
    with rc_context():
        fig, a = figure_and_axes(ax, height=3.3)
        (line,) = a.plot(
            lv,
            q.coverage[order],
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
                after[order],
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
        text = f"Mean |coverage − level| = {q.mean_absolute_error:.4f}"
        if after is not None:
            err = float(np.mean(np.abs(after - q.levels)))
            text = f"Mean |coverage − level|\n= {q.mean_absolute_error:.4f} → {err:.4f}"
        handles, labels = a.get_legend_handles_labels()
        metrics_note(a, text, handles, labels)
        style_axes(a)
    return fig
