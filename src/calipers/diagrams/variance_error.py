"""Predicted variance against squared error (Levi et al. 2022; Gruber & Buettner 2022).

Rows are binned by predicted variance; in each bin the root mean predicted
variance (RMV) is drawn against the root mean squared error (RMSE) on
log-log axes, as Levi et al. 2022 (§3, their reliability diagrams of
regression) draw it. For Gaussian predictions calibrated in variance the
points lie on the diagonal RMSE = RMV (equivalently MSE = mean predicted
variance: on logarithmic axes the picture is the same up to a factor of 2 in
scale).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._docstrings import fill_doc
from ..regression import GaussianPredictions, VarianceCalibration, variance_calibration
from ..regression.inputs import spread_by_name
from ._regression import (
    check_recalibrator,
    checked_predictions,
    figure_and_axes,
    recalibrated_variance,
)
from ._style import (
    BAR_COLOR,
    IDEAL_COLOR,
    OKABE_ITO,
    metrics_note,
    rc_context,
    require_matplotlib,
    style_axes,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "variance_error_diagram",
    "variance_error_diagram_data",
    "VarianceErrorDiagramData",
    "variance_note",
]

#: The parameter entries each diagram and its compute step share (filled in by
#: ``fill_doc``): written once here.
_PARAMETERS: dict[str, str] = dict(
    mean="mean : array-like of shape (n,), GaussianPredictions, PredictiveDistribution or ProbabilisticPredictions\n    Predicted means (target units), with ``variance`` or ``std``; or a predictive distribution of any kind (quantiles, samples, a parametric family: :class:`calipers.regression.PredictiveDistribution`, with ``targets``; Gneiting & Raftery 2007), drawn from its own distribution function.",
    variance="variance : array-like of shape (n,), optional\n    Predicted variances (> 0), keyword-only. Exactly one of ``variance`` and ``std``.",
    std="std : array-like of shape (n,), optional\n    Predicted standard deviations (> 0), keyword-only.",
    targets="targets : array-like of shape (n,)\n    Observed targets.",
)


def variance_note(vc: VarianceCalibration) -> str:
    """The numbers of a variance-error panel, one per line.

    ENCE (Levi et al. 2022, §3), MSE / average predicted variance (Gruber &
    Buettner 2022, Table 1) and the instance-level SE/Var ratio, mean ± std
    (Gruber & Buettner 2022, Table 2), of a
    :class:`calipers.regression.VarianceCalibration`.

    Examples
    --------
    >>> from calipers.regression import variance_calibration
    >>> from calipers.diagrams.variance_error import variance_note
    >>> vc = variance_calibration([0.0, 0.0], variance=[1.0, 4.0], targets=[2.0, 4.0], n_bins=2)
    >>> print(variance_note(vc))
    ENCE = 1.0000
    MSE/AvgVar = 4.0000
    SE/Var ratio = 4.0000 ± 0.0000
    """
    return (
        f"ENCE = {vc.ence:.4f}\n"
        f"MSE/AvgVar = {vc.mse_over_avg_var:.4f}\n"
        f"SE/Var ratio = {vc.se_var_ratio:.4f} ± {vc.se_var_ratio_std:.4f}"
    )


@fill_doc(**_PARAMETERS)
@spread_by_name
def variance_error_diagram(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_bins: int = 15,
    ax: Any = None,
    recalibrator: Any = None,
    title: str | None = None,
) -> Figure:
    """RMSE against root mean predicted variance per bin, on log-log axes.

    The points are the bins of
    :func:`calipers.regression.variance_calibration`: ``n_bins`` equal-mass
    bins of predicted variance, each drawn at (``bin_rmv``, ``bin_rmse``) in
    target units (Levi et al. 2022, §3). The dashed diagonal is RMSE = RMV,
    calibration in variance. Points above it: the errors exceed the predicted
    spread (overconfident). The note gives the ENCE (Levi et al. 2022), the
    ratio MSE / average predicted variance (Gruber & Buettner 2022, Table 1)
    and the SE/Var ratio, mean ± std over rows (Gruber & Buettner 2022,
    Table 2), see :func:`variance_note`.

    With ``recalibrator`` (a fitted regression recalibrator whose output is
    Gaussian, ``recalibrator.gaussian`` True) the bins of the recalibrated
    variances ``recalibrator.predict_variance(...)`` are drawn too (the means
    are unchanged).

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}
    n_bins : int, default 15
        Number of equal-mass bins of predicted variance, at most ``n``.
    ax : matplotlib Axes, optional
        Draw here; default: a new single-column figure.
    recalibrator : fitted Gaussian regression recalibrator, optional
        Also draw the bins after recalibration; a recalibrator whose output is
        not Gaussian (quantile recalibration) is refused.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.figure.Figure
        The points have gid ``"rmse"`` (after recalibration
        ``"rmse-recalibrated"``), the diagonal ``"ideal"``; the note is
        ``ax.artists[0]`` (gid ``"metrics"``).

    Raises
    ------
    CalibrationInputError
        Bad predictions, ``n_bins`` not in 1..n, or a recalibrator with no
        Gaussian output.

    Examples
    --------
    >>> import numpy as np
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import variance_error_diagram
    >>> rng = np.random.default_rng(0)
    >>> sd = rng.uniform(0.5, 2.0, size=2000); y = rng.normal(scale=2 * sd)
    >>> fig = variance_error_diagram(np.zeros(2000), std=sd, targets=y, n_bins=5)
    >>> x, rmse = fig.axes[0].get_lines()[0].get_data()
    >>> bool(np.all((rmse / x > 1.7) & (rmse / x < 2.3)))   # errors twice the spread
    True
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = variance_error_diagram_data(
        mean,
        variance=variance,
        std=std,
        targets=targets,
        sample_weight=sample_weight,
        n_bins=n_bins,
        recalibrator=recalibrator,
    )
    before, after = data.before, data.after
    sets: list[tuple[VarianceCalibration, str, str, str, str]] = [
        (before, "rmse", BAR_COLOR, "o", "Before" if after is not None else "Bins")
    ]
    if after is not None:
        sets.append((after, "rmse-recalibrated", OKABE_ITO["orange"], "s", "Recalibrated"))
    lo, hi = data.limits
    with rc_context():
        fig, a = figure_and_axes(ax, height=3.3)
        for v, gid, color, marker, label in sets:
            (line,) = a.plot(
                v.bin_rmv, v.bin_rmse, marker=marker, ms=3.5, lw=0.8, color=color, label=label
            )
            line.set_gid(gid)
        (diag,) = a.plot(
            [lo, hi],
            [lo, hi],
            ls=(0, (4, 2)),
            lw=0.9,
            color=IDEAL_COLOR,
            label="RMSE = RMV",
            zorder=1.5,
        )
        diag.set_gid("ideal")
        a.set_xscale("log")
        a.set_yscale("log")
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        for axis in (a.xaxis, a.yaxis):  # plain numbers at 1, 1.5, 2, 3, 5, 7 x 10^k
            axis.set_major_locator(LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())
        a.set_xlim(lo, hi)
        a.set_ylim(lo, hi)
        a.set_aspect("equal")
        a.set_xlabel("RMV, root mean predicted variance per bin")
        a.set_ylabel("RMSE per bin")
        if title:
            a.set_title(title)
        handles, labels = a.get_legend_handles_labels()
        metrics_note(a, data.note, handles, labels)
        style_axes(a)
    return fig


@dataclass(frozen=True)
class VarianceErrorDiagramData:
    """What :func:`variance_error_diagram` draws, computed without matplotlib.

    Returned by :func:`variance_error_diagram_data`.

    Attributes
    ----------
    before : VarianceCalibration
        :func:`calipers.regression.variance_calibration` of the predictions: the
        points are its ``bin_rmv`` (x) and ``bin_rmse`` (y), target units.
    after : VarianceCalibration or None
        The same after ``recalibrator``; None without one.
    limits : (float, float)
        The range of both log axes (the positive values, padded).
    """

    before: VarianceCalibration
    after: VarianceCalibration | None
    limits: tuple[float, float]

    @property
    def note(self) -> str:
        """The diagram's note: :func:`variance_note`, before and after."""
        text = variance_note(self.before)
        if self.after is not None:
            text = "Before:\n" + text + "\nRecalibrated:\n" + variance_note(self.after)
        return text


@fill_doc(**_PARAMETERS)
@spread_by_name
def variance_error_diagram_data(
    mean: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
    n_bins: int = 15,
    recalibrator: Any = None,
) -> VarianceErrorDiagramData:
    """The binned RMV and RMSE a variance-error diagram draws, and its note.

    The compute step of :func:`variance_error_diagram` (which draws exactly these):
    :func:`calipers.regression.variance_calibration` (Levi et al. 2022, §3; Gruber &
    Buettner 2022), before and after ``recalibrator``. Imports no matplotlib.

    Parameters
    ----------
    {mean}
    {variance}
    {std}
    {targets}
    {sample_weight}
    n_bins : int, default 15
        Equal-mass bins of the predicted variance.
    recalibrator : fitted regression recalibrator, optional
        Also compute the bins after recalibration.

    Returns
    -------
    VarianceErrorDiagramData

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.diagrams import variance_error_diagram_data
    >>> rng = np.random.default_rng(0)
    >>> var = rng.uniform(0.5, 2.0, 2000)
    >>> y = rng.normal(scale=2 * np.sqrt(var))
    >>> data = variance_error_diagram_data(np.zeros(2000), variance=var, targets=y, n_bins=5)
    >>> ratio = data.before.bin_rmse / data.before.bin_rmv
    >>> bool(np.all((ratio > 1.7) & (ratio < 2.3)))   # errors twice the spread
    True
    """
    G = checked_predictions(mean, variance, std, targets, sample_weight)
    before = variance_calibration(G, n_bins=n_bins)
    after: VarianceCalibration | None = None
    if recalibrator is not None:
        var2 = recalibrated_variance(check_recalibrator(recalibrator), G)
        mu = G.mean if isinstance(G, GaussianPredictions) else G.distribution.mean()
        after = variance_calibration(
            mu, variance=var2, targets=G.targets, sample_weight=G.sample_weight, n_bins=n_bins
        )
    sets = [before] if after is None else [before, after]
    values = np.concatenate([np.concatenate([v.bin_rmv, v.bin_rmse]) for v in sets])
    values = values[values > 0]
    lo = float(values.min()) if values.size else 1e-3
    hi = float(values.max()) if values.size else 1.0
    if hi <= lo:
        lo, hi = lo / 2.0, hi * 2.0
    pad = (hi / lo) ** 0.06
    return VarianceErrorDiagramData(before, after, (lo / pad, hi * pad))
