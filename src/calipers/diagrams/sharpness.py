"""Calibration-sharpness diagrams (Chidambaram & Ge (2024) §4.2, App. D, Figures 1-2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..calibration_sharpness import CalibrationSharpness, calibration_sharpness
from ..validation import CalibrationInputError
from ._style import (
    DENSITY_COLOR,
    DOUBLE_COLUMN,
    GAP_COLOR,
    SINGLE_COLUMN,
    axes_grid,
    check_axes_count,
    figure_legend,
    ideal_line,
    invisible_proxy,
    metrics_note,
    percent,
    rc_context,
    require_matplotlib,
    resolve_models,
    style_axes,
    unit_ticks,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["calibration_sharpness_diagram", "sharpness_note"]


def sharpness_note(cs: CalibrationSharpness, form: str = "sharpcal") -> str:
    """The metrics note of a calibration-sharpness panel: d_CAL, d_TOT (x 100), accuracy.

    ``form="sharpcal"`` prints ``cs.calibration_error_sharpcal`` (the authors'
    code, what Chidambaram & Ge's (2024) figures show), ``"plugin"`` prints
    ``cs.calibration_error`` (eq. C.3).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.calibration_sharpness import calibration_sharpness
    >>> from calipers.diagrams import sharpness_note
    >>> h = np.array([0.55, 0.6, 0.9, 0.95]); correct = np.array([1, 0, 1, 1])
    >>> cs = calibration_sharpness(np.stack([h, 1 - h], 1), np.where(correct == 1, 0, 1))
    >>> print(sharpness_note(cs))
    $100\\,d_{\\mathrm{CAL}}$ = 1.68
    $100\\,d_{\\mathrm{TOT}}$ = 28.75
    Accuracy = 75.0%
    >>> print(sharpness_note(cs, "plugin").splitlines()[0])   # eq. (C.3)
    $100\\,d_{\\mathrm{CAL}}$ = 2.62
    """
    cal = cs.calibration_error if form == "plugin" else cs.calibration_error_sharpcal
    return (
        f"$100\\,d_{{\\mathrm{{CAL}}}}$ = {100.0 * cal:.2f}\n"
        f"$100\\,d_{{\\mathrm{{TOT}}}}$ = {100.0 * cs.total_divergence:.2f}\n"
        f"Accuracy = {percent(cs.accuracy, 1)}"
    )


def _draw_panel(ax: Axes, cs: CalibrationSharpness, show_density: bool, density_top: float) -> Any:
    x = cs.grid
    ok = np.isfinite(cs.band_lower) & np.isfinite(cs.band_upper)
    band = ax.fill_between(
        x,
        cs.band_lower,
        cs.band_upper,
        where=ok,
        color=GAP_COLOR,
        alpha=0.28,
        linewidth=0,
        label="Sharpness gap (× density)",
        zorder=2,
    )
    band.set_gid("sharpness-band")
    invisible_proxy(ax, x, cs.band_upper, cs.band_lower)
    # effective number of samples under the kernel at x: n p_hat(x) / K_sigma(0)
    k0 = (
        1.0 / (cs.bandwidth * np.sqrt(2.0 * np.pi))
        if cs.kernel == "gaussian"
        else 0.75 / cs.bandwidth
    )
    supported = cs.density * cs.n_samples / k0 >= 1.0
    (faint,) = ax.plot(
        x, cs.calibration_curve, color=GAP_COLOR, lw=0.9, ls=(0, (1, 1.5)), alpha=0.8, zorder=3
    )
    faint.set_gid("calibration-curve-unsupported")
    (curve,) = ax.plot(
        x,
        np.where(supported, cs.calibration_curve, np.nan),
        color=GAP_COLOR,
        lw=1.5,
        label="Calibration curve",
        zorder=3.1,
    )
    curve.set_gid("calibration-curve")
    ideal_line(ax)
    twin = None
    if show_density:
        twin = ax.twinx()
        fill = twin.fill_between(
            x, 0.0, cs.density, color=DENSITY_COLOR, alpha=0.35, linewidth=0, zorder=1
        )
        fill.set_gid("density")
        twin.set_ylim(0.0, density_top)
        dmax = float(np.max(cs.density))
        if dmax > 0:  # the density's footprint on ax (peak at 1), for the note's placement
            invisible_proxy(ax, x, cs.density / dmax)
        twin.set_ylabel("Density")
        style_axes(twin)
        ax.set_zorder(twin.get_zorder() + 1)  # curve and band above the density
        ax.patch.set_visible(False)
    unit_ticks(ax, "x")
    ax.set_xlabel("Confidence")
    ax.set_ylabel("Accuracy")
    style_axes(ax)
    return twin


def calibration_sharpness_diagram(
    probs: Any,
    labels: Any = None,
    *,
    bandwidth: float = 0.05,
    divergence: Literal["brier", "kl"] = "brier",
    kernel: Literal["gaussian", "epanechnikov"] = "gaussian",
    calibration_form: Literal["plugin", "sharpcal"] = "sharpcal",
    align_axes: bool = True,
    show_density: bool = True,
    ncols: int | None = None,
    n_points: int = 1001,
    ax: Any = None,
    title: str | None = None,
    legend: bool = True,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
) -> Figure:
    """Calibration-sharpness diagram of one model or several side by side (Chidambaram & Ge (2024) §4.2).

    Each panel shows the three components of Chidambaram & Ge (2024) §4.2 "Constructing and
    reading calibration-sharpness diagrams", computed by
    :func:`calipers.calibration_sharpness.calibration_sharpness` with the
    Nadaraya-Watson estimator of eq. (4.8):

    * the calibration curve ``m_hat(x)``, the kernel estimate of
      ``E[1{Y = c(X)} | h(X) = x]`` (vermillion), against the dashed diagonal
      of perfect confidence calibration. It is solid where at least one
      effective sample lies under the kernel (``n p_hat(x) / K(0) >= 1``) and
      dotted elsewhere, where it is an extrapolation of distant data;
    * the pointwise sharpness gap ``rho(x)`` of eq. (4.7) as a band centred on
      the curve whose length is ``p_hat(x) rho(x)`` (density-scaled, App. D),
      the lower edge clipped at 0 and the upper edge not clipped at 1 (App. D
      "Visualization details"). A larger band is worse;
    * the kernel density ``p_hat`` of the confidences (sky blue, right axis,
      per unit confidence, scaled so that its peak reaches the height 1 of the
      left axis as in the authors' overlay ``kde / max(kde)``).

    The note (in the corner that hides the least) gives ``d_CAL`` and ``d_TOT`` scaled by 100 as in the
    paper's figures and the accuracy. ``d_CAL`` is by default the value the
    paper's figures print, the authors' code's ``mean_i d_varphi(m_hat(h_i),
    h_i)``: the data-weighted divergence of the drawn curve from the diagonal,
    never negative; ``calibration_form="plugin"`` prints Theorem C.4's
    consistent estimator (C.3) instead, which
    :func:`~calipers.calibration_sharpness.confidence_calibration_error`
    returns by default and which fluctuates around the true value by
    ``O(n^-1/2)``, so it can be negative for well-calibrated models. ``d_TOT``
    is the mean multi-class Brier score (or NLL). Several models are
    drawn side by side with aligned left y axes (Figure 2; App. D recommends
    aligning for direct comparisons).

    Parameters
    ----------
    probs : array-like of shape (n, k) or (n,), or dict
        One model's probabilities, or ``{name: probs}`` (sharing ``labels``) or
        ``{name: (probs, labels)}`` for several models (one panel each, titled
        with the name).
    labels : array-like of shape (n,), optional
        Needed unless every dict value carries its labels.
    bandwidth : float, default 0.05
        Kernel bandwidth in confidence units (Chidambaram & Ge (2024) §5; App. H).
    divergence : {"brier", "kl"}, default "brier"
    kernel : {"gaussian", "epanechnikov"}, default "gaussian"
    calibration_form : {"sharpcal", "plugin"}, default "sharpcal"
        Which ``d_CAL`` the note reports (see above).
    align_axes : bool, default True
        Share the left y range across panels (0 to the highest band edge, at
        least 1). False: each panel its own range (Figure 1).
    show_density : bool, default True
    ncols : int, optional
        Panels per row (default ``min(n_models, 3)``).
    n_points : int, default 1001
        Grid points on [0, 1].
    ax : Axes or sequence of Axes, optional
        One Axes per model.
    title : str, optional
    legend : bool, default True
        Name the curve, band, diagonal and density: above the panels when the
        function creates the figure, in the first panel's note box when ``ax``
        is given.
    sample_weight : array-like of shape (n,), optional
        Shared by all models.
    logits : bool, default False
    validate : bool, default True

    Returns
    -------
    matplotlib.figure.Figure
        The curve has gid ``"calibration-curve"`` (its solid part; NaN where
        dotted) and ``"calibration-curve-unsupported"`` (the whole curve), the band ``"sharpness-band"``,
        the density ``"density"``; each panel's note (a title-only legend
        placed where it hides the least data) is its ``artists[0]``, gid
        ``"metrics"``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import calibration_sharpness_diagram
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> models = {m: d.probs[m] for m in ("gaussian_nb", "logistic_regression")}
    >>> fig = calibration_sharpness_diagram(models, d.labels)
    >>> [a.get_title() for a in fig.axes if a.get_ylabel() == "Accuracy"]
    ['gaussian_nb', 'logistic_regression']
    >>> plt.close(fig)
    """
    require_matplotlib()
    if calibration_form not in ("plugin", "sharpcal"):
        raise CalibrationInputError(
            f"calibration_form must be 'plugin' or 'sharpcal'; got {calibration_form!r}"
        )
    models = resolve_models(
        probs, labels, sample_weight=sample_weight, logits=logits, validate=validate
    )
    results = {
        name: calibration_sharpness(
            P,
            None,
            divergence=divergence,
            bandwidth=bandwidth,
            kernel=kernel,
            n_points=n_points,
        )
        for name, P in models.items()
    }

    def top(cs: CalibrationSharpness) -> float:
        u = cs.band_upper[np.isfinite(cs.band_upper)]
        c = cs.calibration_curve[np.isfinite(cs.calibration_curve)]
        return max(1.0, float(u.max()) if u.size else 1.0, float(c.max()) if c.size else 1.0)

    shared_top = max(top(cs) for cs in results.values())
    with rc_context():
        n = len(results)
        if ax is None:
            # one panel: a single column; several: a double column shared out
            nc = min(n, 3) if ncols is None else max(1, min(int(ncols), n))
            w = SINGLE_COLUMN if nc == 1 else max(2.4, DOUBLE_COLUMN / nc)
            fig, axs = axes_grid(n, nc, w, w if nc > 1 else 3.1)
        else:
            axs = check_axes_count(ax, n, "calibration_sharpness_diagram")
            fig = axs[0].figure
        for (name, cs), a in zip(results.items(), axs, strict=True):
            y_top = 1.06 * (shared_top if align_axes else top(cs))
            dmax = float(np.max(cs.density)) if cs.density.size else 0.0
            density_top = dmax * y_top if dmax > 0 else 1.0
            _draw_panel(a, cs, show_density, density_top)
            a.set_ylim(0.0, y_top)
            if name:
                a.set_title(name)
        handles, labs = axs[0].get_legend_handles_labels()
        if show_density:
            from matplotlib.patches import Patch

            handles.append(Patch(color=DENSITY_COLOR, alpha=0.35, linewidth=0))
            labs.append("Density")
        for i, (cs, a) in enumerate(zip(results.values(), axs, strict=True)):
            note = sharpness_note(cs, calibration_form)
            if ax is None or i > 0 or not legend:
                metrics_note(a, note)
            else:  # one box for the note and the legend entries
                metrics_note(a, note, handles, labs)
        if ax is None:
            if legend:
                figure_legend(fig, handles, labs, title=title, ncols=2)
            elif title:
                fig.suptitle(title)
        else:
            if title and n == 1:
                axs[0].set_title(
                    title if not axs[0].get_title() else f"{title}: {axs[0].get_title()}"
                )
            elif title:
                fig.suptitle(title)
    return fig  # type: ignore[no-any-return]
