"""T-reliability diagram of point forecasts (Gneiting & Resin 2023; Dimitriadis, Gneiting & Jordan 2021).

A point forecast of a functional T (mean, median, quantile, expectile) is
auto-calibrated when ``T(Y | Z = z) = z``. The diagram draws the isotonic
estimate of ``z -> T(Y | Z = z)`` (:func:`calipers.regression.t_reliability_curve`)
against the forecast, with the diagonal of perfect calibration, an optional
bootstrap confidence band, and the decomposition of a consistent score into
miscalibration, discrimination and uncertainty
(:func:`calipers.regression.score_decomposition`) in the note. With
``kind="bias"`` it draws the difference ``z - T(Y | Z = z)`` instead (the
diagram turned by 45 degrees; 0 is perfect calibration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..regression import (
    ScoreDecomposition,
    check_point_forecast,
    score_decomposition,
    t_reliability_curve,
)
from ..validation import CalibrationInputError, check_size, check_work
from ._regression import figure_and_axes
from ._style import (
    BAR_COLOR,
    GAP_COLOR,
    IDEAL_COLOR,
    metrics_note,
    rc_context,
    require_matplotlib,
    style_axes,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "t_reliability_diagram",
    "t_reliability_diagram_data",
    "TReliabilityDiagramData",
]

#: The scoring function of the note for each functional.
_DEFAULT_SCORE = {
    "mean": "squared_error",
    "median": "pinball",
    "quantile": "pinball",
    "expectile": "expectile",
}


@dataclass(frozen=True)
class TReliabilityDiagramData:
    """What :func:`t_reliability_diagram` draws, computed without matplotlib.

    Returned by :func:`t_reliability_diagram_data`.

    Attributes
    ----------
    forecasts : numpy.ndarray
        ``(g,)`` the distinct forecasts (of rows of positive weight), ascending.
    recalibrated : numpy.ndarray
        ``(g,)`` the isotonic T-regression of the targets at each (the curve).
    band_low, band_high : numpy.ndarray or None
        ``(g,)`` the pointwise percentile bootstrap band of the curve at each
        forecast, or None without resamples.
    decomposition : ScoreDecomposition
        The score decomposition given in the note.
    functional : str
    level : float or None
    confidence_level : float
    n_resamples : int
    """

    forecasts: np.ndarray
    recalibrated: np.ndarray
    band_low: np.ndarray | None
    band_high: np.ndarray | None
    decomposition: ScoreDecomposition
    functional: str
    level: float | None
    confidence_level: float
    n_resamples: int

    @property
    def label(self) -> str:
        """The functional in words: ``"mean"``, ``"median"``, ``"0.9-quantile"``, ``"0.9-expectile"``."""
        if self.functional in ("mean", "median"):
            return self.functional
        return f"{self.level:g}-{self.functional}"

    @property
    def note(self) -> str:
        """The diagram's note: the score and its MCB, DSC and UNC terms."""
        d = self.decomposition
        name = d.scoring_function.replace("_", " ")
        return (
            f"{name} = {d.score:.4g}\n"
            f"MCB = {d.miscalibration:.4g}\n"
            f"DSC = {d.discrimination:.4g}\n"
            f"UNC = {d.uncertainty:.4g}"
        )


def t_reliability_diagram_data(
    forecasts: Any,
    targets: Any = None,
    *,
    functional: str = "mean",
    level: float | None = None,
    sample_weight: Any = None,
    scoring_function: Any = None,
    n_resamples: int | None = None,
    confidence_level: float = 0.9,
    seed: int = 0,
) -> TReliabilityDiagramData:
    """The isotonic T-reliability curve, its bootstrap band and the score decomposition.

    The compute step of :func:`t_reliability_diagram` (which draws exactly
    these numbers): :func:`calipers.regression.t_reliability_curve` (the
    isotonic T-regression of the targets on the forecasts, Dimitriadis,
    Gneiting & Jordan 2021; Gneiting & Resin 2023, §3), and
    :func:`calipers.regression.score_decomposition` of the scoring function.
    With ``n_resamples``, the rows are resampled with replacement
    ``n_resamples`` times (NumPy's generator seeded with ``seed``), the curve
    is refitted on each resample and evaluated at the forecasts (constant
    beyond a resample's range), and the band is the pointwise
    ``(1 -+ confidence_level) / 2`` quantiles of these curves: the
    percentile bootstrap confidence band of model-diagnostics'
    ``plot_reliability_diagram``. Imports no matplotlib.

    Parameters
    ----------
    forecasts : array-like of shape (n,), or PredictiveDistribution
        Point forecasts of the functional (target units); a predictive
        distribution gives its mean or quantile at the level.
    targets : array-like of shape (n,)
        Observed targets.
    functional : {"mean", "median", "quantile", "expectile"}, default "mean"
    level : float, optional
        The quantile or expectile level in (0, 1).
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights (a weight of 2 counts the row twice; the
        bootstrap resamples rows and keeps their weights).
    scoring_function : str or callable, optional
        The score of the note (see :func:`calipers.regression.score_decomposition`);
        default the squared error for the mean, the pinball loss for
        quantiles and the median, the expectile score for expectiles.
    n_resamples : int, optional
        Bootstrap resamples of the band; default None (no band).
    confidence_level : float, default 0.9
        Level of the pointwise band.
    seed : int, default 0
        Seed of the resampling.

    Returns
    -------
    TReliabilityDiagramData

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.diagrams import t_reliability_diagram_data
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 2, 400); y = x + rng.normal(size=400)
    >>> d = t_reliability_diagram_data(1.5 * x, y, n_resamples=50)
    >>> bool(np.all(d.band_low <= d.band_high)), d.decomposition.miscalibration > 0
    (True, True)
    >>> print(d.note.splitlines()[0])
    squared error = 1.387
    """
    P = check_point_forecast(
        forecasts, targets, functional=functional, level=level, sample_weight=sample_weight
    )
    if isinstance(confidence_level, (bool, np.bool_)) or not isinstance(
        confidence_level, (int, float, np.integer, np.floating)
    ):
        raise CalibrationInputError(
            f"confidence_level must be a number in (0, 1); got {confidence_level!r}"
        )
    c = float(confidence_level)
    if not 0.0 < c < 1.0:
        raise CalibrationInputError(f"confidence_level must lie in (0, 1); got {c!r}")
    B = 0 if n_resamples is None else check_size(n_resamples, "n_resamples", "MAX_RESAMPLES")
    if B:
        check_work(
            "n_resamples", n_resamples, [("rows", P.n_samples), ("resamples", B)], unit="row fits"
        )
    curve = t_reliability_curve(P)
    if scoring_function is None:
        scoring_function = _DEFAULT_SCORE[P.functional]
    level_arg = None if P.functional in ("mean", "median") else P.level
    dec = score_decomposition(
        P.forecasts,
        P.targets,
        scoring_function=scoring_function,
        functional=P.functional,
        level=level_arg,
        sample_weight=P.sample_weight,
    )
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    if B:
        rng = np.random.default_rng(seed)
        n = P.n_samples
        curves = np.empty((B, curve.forecasts.shape[0]))
        w = P.sample_weight
        for b in range(B):
            idx = rng.integers(0, n, n)
            wb = None if w is None else w[idx]
            if wb is not None and not np.any(wb > 0):
                wb = np.ones(n)
            cb = t_reliability_curve(
                P.forecasts[idx],
                P.targets[idx],
                functional=P.functional,
                level=level_arg,
                sample_weight=wb,
            )
            curves[b] = np.interp(curve.forecasts, cb.forecasts, cb.recalibrated)
        a = (1.0 - c) / 2.0
        lo, hi = np.quantile(curves, [a, 1.0 - a], axis=0)
    return TReliabilityDiagramData(
        curve.forecasts,
        curve.recalibrated,
        lo,
        hi,
        dec,
        P.functional,
        P.level,
        c,
        B,
    )


def t_reliability_diagram(
    forecasts: Any,
    targets: Any = None,
    *,
    functional: str = "mean",
    level: float | None = None,
    sample_weight: Any = None,
    scoring_function: Any = None,
    n_resamples: int | None = None,
    confidence_level: float = 0.9,
    seed: int = 0,
    kind: str = "reliability",
    ax: Any = None,
    title: str | None = None,
) -> Figure:
    """T-reliability diagram: the isotonic recalibrated forecast against the forecast.

    Line: the isotonic estimate of ``T(Y | Z = z)``, the functional of the
    targets given the forecast (Gneiting & Resin 2023, §3; CORP of
    Dimitriadis, Gneiting & Jordan 2021 for the mean; Jordan, Mühlemann &
    Ziegel 2022 for quantiles and expectiles); dashed: the diagonal of
    auto-calibration; shaded: the pointwise bootstrap confidence band (with
    ``n_resamples``). Below the diagonal the forecasts are too high. The note
    gives the mean score and its miscalibration (MCB), discrimination (DSC)
    and uncertainty (UNC) terms. ``kind="bias"`` draws ``z - T(Y | Z = z)``
    against ``z`` instead, with 0 as the reference (as model-diagnostics'
    ``diagram_type="bias"``). All numbers come from
    :func:`t_reliability_diagram_data`.

    Parameters
    ----------
    forecasts : array-like of shape (n,), or PredictiveDistribution
        Point forecasts of the functional (target units); a predictive
        distribution gives its mean or quantile at the level.
    targets : array-like of shape (n,)
        Observed targets.
    functional : {"mean", "median", "quantile", "expectile"}, default "mean"
    level : float, optional
        The quantile or expectile level in (0, 1).
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights (a weight of 2 counts the row twice).
    scoring_function : str or callable, optional
        The score of the note (default: the one of the functional).
    n_resamples : int, optional
        Bootstrap resamples of the band; default None (no band).
    confidence_level : float, default 0.9
        Level of the pointwise band.
    seed : int, default 0
        Seed of the resampling.
    kind : {"reliability", "bias"}, default "reliability"
        The recalibrated forecast, or the forecast minus it, against the forecast.
    ax : matplotlib Axes, optional
        Draw here; default: a new single-column figure.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.figure.Figure
        The curve has gid ``"t-reliability"``, the diagonal (or zero line)
        ``"ideal"``, the band ``"confidence-band"``; the note is
        ``ax.artists[0]`` (gid ``"metrics"``).

    Examples
    --------
    >>> import numpy as np
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import t_reliability_diagram
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 2, 400); y = x + rng.normal(size=400)
    >>> fig = t_reliability_diagram(x + 0.8, y, functional="quantile", level=0.8, n_resamples=30)
    >>> ax = fig.axes[0]
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('Forecast (0.8-quantile)', 'Recalibrated forecast')
    >>> print(ax.artists[0].get_title().get_text().splitlines()[1])
    MCB = 0.0134
    >>> plt.close(fig)
    """
    if kind not in ("reliability", "bias"):
        raise CalibrationInputError(f"kind must be 'reliability' or 'bias'; got {kind!r}")
    require_matplotlib()
    data = t_reliability_diagram_data(
        forecasts,
        targets,
        functional=functional,
        level=level,
        sample_weight=sample_weight,
        scoring_function=scoring_function,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
    )
    x = data.forecasts
    shift = x if kind == "bias" else np.zeros_like(x)
    with rc_context():
        fig, a = figure_and_axes(ax)
        if data.band_low is not None and data.band_high is not None:
            band = a.fill_between(
                x,
                shift - data.band_low if kind == "bias" else data.band_low,
                shift - data.band_high if kind == "bias" else data.band_high,
                color=GAP_COLOR,
                alpha=0.2,
                lw=0,
                zorder=1,
                label=f"{100 * data.confidence_level:g} % bootstrap band",
            )
            band.set_gid("confidence-band")
        lo, hi = float(x[0]), float(x[-1])
        if kind == "bias":
            a.axhline(
                0.0, ls=(0, (4, 2)), lw=0.9, color=IDEAL_COLOR, label="Calibrated", gid="ideal"
            )
            y = x - data.recalibrated
            ylabel = "Forecast − recalibrated"
        else:
            a.plot(
                [lo, hi],
                [lo, hi],
                ls=(0, (4, 2)),
                lw=0.9,
                color=IDEAL_COLOR,
                label="Calibrated",
                zorder=1.5,
                gid="ideal",
            )
            y = data.recalibrated
            ylabel = "Recalibrated forecast"
        (line,) = a.plot(x, y, color=BAR_COLOR, lw=1.4, label="Isotonic fit", zorder=3)
        line.set_gid("t-reliability")
        a.set_xlabel(f"Forecast ({data.label})")
        a.set_ylabel(ylabel)
        if title:
            a.set_title(title)
        handles, labels = a.get_legend_handles_labels()
        metrics_note(a, data.note, handles, labels)
        style_axes(a)
    return fig
