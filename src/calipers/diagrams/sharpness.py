"""Calibration-sharpness diagrams (Chidambaram & Ge (2024) §4.2, App. D, Figures 1-2)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._docstrings import fill_doc
from ..metrics import CalibrationSharpness, calibration_sharpness
from ..pipeline.lenses import resolve_lens
from ..validation import CalibrationInputError
from ._style import (
    DENSITY_COLOR,
    DOUBLE_COLUMN,
    FONT_SIZE,
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

__all__ = [
    "calibration_sharpness_diagram",
    "calibration_sharpness_diagram_data",
    "CalibrationSharpnessDiagramData",
    "sharpness_caption",
    "sharpness_note",
]

#: The parameter entries each diagram and its compute step share (filled in by
#: ``fill_doc``): written once here.
_PARAMETERS: dict[str, str] = dict(
    labels="labels : array-like of shape (n,), optional\n    Needed unless every dict value carries its labels.",
    bandwidth="bandwidth : float, default 0.05\n    Kernel bandwidth in confidence units (Chidambaram & Ge (2024) §5; App. H).",
    divergence='divergence : {"brier", "kl"}, default "brier"',
    kernel='kernel : {"gaussian", "epanechnikov"}, default "gaussian"',
    n_points="n_points : int, default 1001\n    Grid points on [0, 1].",
)

#: Axis labels by lens: (x, y). The left axis is the estimated E[target | score]
#: (the calibration curve); the band drawn around it is a length in the same units.
AXIS_LABELS = {
    "top_label": ("Confidence", "E[correct | confidence]"),
    "binary": ("Predicted P(y = 1)", "E[y | P(y = 1)]"),
}
CAPTION_FONT_SIZE = FONT_SIZE
_CAL = "$100\\,d_{\\mathrm{CAL}}$"
_TOT = "$100\\,d_{\\mathrm{TOT}}$"


def sharpness_caption(
    divergence: str = "brier", calibration_form: str = "sharpcal", lens: str = "top_label"
) -> list[str]:
    """What the numbers and the band of a calibration-sharpness panel mean, one line each.

    The diagram prints these lines under its panels (``caption=True``, the default
    when it creates the figure); they are returned for figures composed with ``ax=``.

    Examples
    --------
    >>> from calipers.diagrams import sharpness_caption
    >>> for line in sharpness_caption():
    ...     print(line)
    $100\\,d_{\\mathrm{CAL}}$: calibration error, mean (curve $-$ diagonal)$^2$ at the samples' confidences
    $100\\,d_{\\mathrm{TOT}}$: Brier score (sum over classes) = calibration + sharpness; lower is better
    Band: sharpness gap $\\times$ density around the curve, area $\\approx d_{\\mathrm{TOT}} - d_{\\mathrm{CAL}}$; not clipped at 1
    """
    if divergence not in ("brier", "kl"):
        raise CalibrationInputError(f"divergence must be 'brier' or 'kl'; got {divergence!r}")
    if calibration_form not in ("plugin", "sharpcal"):
        raise CalibrationInputError(
            f"calibration_form must be 'plugin' or 'sharpcal'; got {calibration_form!r}"
        )
    if lens not in AXIS_LABELS:
        raise CalibrationInputError(f"lens must be 'top_label' or 'binary'; got {lens!r}")
    gap = (
        "(curve $-$ diagonal)$^2$"
        if divergence == "brier"
        else "binary KL divergence of the diagonal from the curve"
    )
    where = "confidences" if lens == "top_label" else "P(y = 1)"
    if calibration_form == "plugin":
        cal = f"{_CAL}: calibration error, consistent estimate (eq. C.3) of the mean {gap}"
    else:
        cal = f"{_CAL}: calibration error, mean {gap} at the samples' {where}"
    if lens == "binary":
        tot = "Brier score of P(y = 1)" if divergence == "brier" else "log loss of P(y = 1), nats"
    else:
        tot = "Brier score (sum over classes)" if divergence == "brier" else "NLL, nats"
    return [
        cal,
        f"{_TOT}: {tot} = calibration + sharpness; lower is better",
        "Band: sharpness gap $\\times$ density around the curve, area "
        "$\\approx d_{\\mathrm{TOT}} - d_{\\mathrm{CAL}}$; not clipped at 1",
    ]


def _visible_len(word: str) -> int:
    # about the printed width of a word holding mathtext: commands, braces, $ take no room
    return len(re.sub(r"\\[a-zA-Z]+|[{}$_^]|\\,", "", word))


def _wrap(line: str, width: int) -> list[str]:
    """``line`` broken into lines of about ``width`` printed characters, never inside
    ``$...$``; continuation lines are indented."""
    words = re.findall(r"(?:\$[^$]*\$|[^\s$])+", line)
    out: list[str] = []
    cur: list[str] = []
    for word in words:
        if cur and sum(_visible_len(w) + 1 for w in [*cur, word]) - 1 > width:
            out.append(" ".join(cur))
            cur = ["   " + word]
        else:
            cur.append(word)
    if cur:
        out.append(" ".join(cur))
    return out


def _add_caption(fig: Figure, lines: list[str], grow: bool) -> Any:
    """The caption as a frameless, title-only figure legend under the panels (gid
    ``"caption"``); ``grow``: make the figure taller by the caption's height."""
    width = max(30, int(fig.get_figwidth() / (0.0078 * CAPTION_FONT_SIZE)))
    wrapped = [w for line in lines for w in _wrap(line, width)]
    if grow:
        fig.set_figheight(fig.get_figheight() + len(wrapped) * CAPTION_FONT_SIZE * 1.3 / 72 + 0.08)
    leg = fig.legend(
        [],
        [],
        loc="outside lower center",
        title="\n".join(wrapped),
        title_fontproperties={"size": CAPTION_FONT_SIZE},
        alignment="left",
        frameon=False,
        borderaxespad=0.2,
    )
    leg.set_gid("caption")
    leg.get_title().set_gid("caption")
    return leg


def sharpness_note(cs: CalibrationSharpness, form: str = "sharpcal") -> str:
    """The metrics note of a calibration-sharpness panel: d_CAL, d_TOT (x 100), accuracy.

    ``form="sharpcal"`` prints ``cs.calibration_error_sharpcal`` (the authors'
    code, what Chidambaram & Ge's (2024) figures show), ``"plugin"`` prints
    ``cs.calibration_error`` (eq. C.3).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.metrics import calibration_sharpness
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


def _draw_panel(
    ax: Axes,
    cs: CalibrationSharpness,
    supported: np.ndarray,
    show_density: bool,
    density_top: float,
    lens: str,
) -> Any:
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
        label="Sharpness gap × density",
        zorder=2,
    )
    band.set_gid("sharpness-band")
    invisible_proxy(ax, x, cs.band_upper, cs.band_lower)
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
    # tick labels only on [0, 1], where the curve lives; above 1 is band only (its top
    # is not clipped, Chidambaram & Ge (2024) App. D), marked off by a faint line at 1
    unit_ticks(ax, "y")
    ax.axhline(1.0, color="#BBBBBB", lw=0.6, ls=(0, (1, 2)), zorder=1, gid="unit-line")
    xlabel, ylabel = AXIS_LABELS[lens]
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    style_axes(ax)
    return twin


@fill_doc(**_PARAMETERS)
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
    lens: Literal["auto", "top_label", "binary"] = "auto",
    ax: Any = None,
    title: str | None = None,
    legend: bool = True,
    caption: bool | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Figure:
    """Calibration-sharpness diagram of one model or several side by side (Chidambaram & Ge (2024) §4.2).

    Each panel shows the three components of Chidambaram & Ge (2024) §4.2 "Constructing and
    reading calibration-sharpness diagrams", computed by
    :func:`calipers.metrics.calibration_sharpness` with the
    Nadaraya-Watson estimator of eq. (4.8):

    * the calibration curve ``m_hat(x)``, the kernel estimate of
      ``E[1{Y = c(X)} | h(X) = x]`` (vermillion; the left axis, labelled
      "E[correct | confidence]"), against the dashed diagonal
      of perfect confidence calibration. It is solid where at least one
      effective sample lies under the kernel (``n p_hat(x) / K(0) >= 1``) and
      dotted elsewhere, where it is an extrapolation of distant data;
    * the pointwise sharpness gap ``rho(x)`` of eq. (4.7) as a band centred on
      the curve whose length is ``p_hat(x) rho(x)`` (density-scaled, App. D),
      the lower edge clipped at 0 and the upper edge not clipped at 1 (App. D
      "Visualization details"): the band is a length in the units of the left
      axis (density x Brier score), not an accuracy, which is why the axis may
      run past 1; its tick labels stop at 1, where a faint line marks the top
      of the range of the curve. A larger band is worse;
    * the kernel density ``p_hat`` of the confidences (sky blue, right axis,
      per unit confidence, scaled so that its peak reaches the height 1 of the
      left axis as in the authors' overlay ``kde / max(kde)``).

    The note (in the corner that hides the least) gives ``d_CAL`` and ``d_TOT`` scaled by 100 as in the
    paper's figures and the accuracy. ``d_CAL`` is by default the value the
    paper's figures print, the authors' code's ``mean_i d_varphi(m_hat(h_i),
    h_i)``: the data-weighted divergence of the drawn curve from the diagonal,
    never negative; ``calibration_form="plugin"`` prints Theorem C.4's
    consistent estimator (C.3) instead, which
    :func:`~calipers.metrics.confidence_calibration_error`
    returns by default and which fluctuates around the true value by
    ``O(n^-1/2)``, so it can be negative for well-calibrated models. ``d_TOT``
    is the mean multi-class Brier score (or NLL); the band's area is about
    ``d_TOT - d_CAL``, the sharpness part of the score. A caption under the
    panels says this in one line per item (:func:`sharpness_caption`). Several models are
    drawn side by side with aligned left y axes (Figure 2; App. D recommends
    aligning for direct comparisons).

    Parameters
    ----------
    probs : array-like of shape (n, k) or (n,), or dict
        One model's probabilities, or ``{name: probs}`` (sharing ``labels``) or
        ``{name: (probs, labels)}`` for several models (one panel each, titled
        with the name).
    {labels}
    {bandwidth}
    {divergence}
    {kernel}
    calibration_form : {"sharpcal", "plugin"}, default "sharpcal"
        Which ``d_CAL`` the note reports (see above).
    align_axes : bool, default True
        Share the left y range across panels (0 to the highest band edge, at
        least 1). False: each panel its own range (Figure 1).
    show_density : bool, default True
    ncols : int, optional
        Panels per row (default ``min(n_models, 3)``).
    {n_points}
    lens : {"auto", "top_label", "binary"}, default "auto"
        ``"auto"``: for 1-D input P(y = 1), the positive-class problem (x axis
        P(y = 1), curve E[y | P(y = 1)]); for ``(n, k)`` input, confidence
        against correctness. All models must resolve to the same lens.
    ax : Axes or sequence of Axes, optional
        One Axes per model.
    title : str, optional
    legend : bool, default True
        Name the curve, band, diagonal and density: above the panels when the
        function creates the figure, in the first panel's note box when ``ax``
        is given.
    caption : bool, optional
        Print :func:`sharpness_caption` (what ``d_CAL``, ``d_TOT`` and the band
        mean) under the panels; default: when the function creates the figure.
    {sample_weight}
        Shared by all models.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    matplotlib.figure.Figure
        The curve has gid ``"calibration-curve"`` (its solid part; NaN where
        dotted) and ``"calibration-curve-unsupported"`` (the whole curve), the band ``"sharpness-band"``,
        the density ``"density"``; each panel's note (a title-only legend
        placed where it hides the least data) is its ``artists[0]``, gid
        ``"metrics"``; the caption is a figure legend with gid ``"caption"``
        (its title holds the text).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import calibration_sharpness_diagram
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> models = {m: d.probs[m] for m in ("gaussian_nb", "logistic_regression")}
    >>> fig = calibration_sharpness_diagram(models, d.labels)
    >>> [a.get_title() for a in fig.axes if a.get_ylabel() == "E[correct | confidence]"]
    ['gaussian_nb', 'logistic_regression']
    >>> plt.close(fig)
    """
    require_matplotlib()
    data = calibration_sharpness_diagram_data(
        probs,
        labels,
        bandwidth=bandwidth,
        divergence=divergence,
        kernel=kernel,
        calibration_form=calibration_form,
        n_points=n_points,
        lens=lens,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    return _draw_sharpness(
        data,
        align_axes=align_axes,
        show_density=show_density,
        ncols=ncols,
        ax=ax,
        title=title,
        legend=legend,
        caption=caption,
    )


@dataclass(frozen=True)
class CalibrationSharpnessDiagramData:
    """What :func:`calibration_sharpness_diagram` draws, computed without matplotlib.

    Returned by :func:`calibration_sharpness_diagram_data`: one panel per model, in
    the order given (a single model's panel is named ``""``).

    Attributes
    ----------
    lens : {"top_label", "binary"}
        The lens every panel reads (``"auto"`` resolved).
    divergence : {"brier", "kl"}
    calibration_form : {"sharpcal", "plugin"}
        Which ``d_CAL`` the notes report.
    panels : dict of str to CalibrationSharpness
        Per model, :func:`calipers.metrics.calibration_sharpness`: the grid, the
        calibration curve, the band's edges, the density and the numbers.
    supported : dict of str to numpy.ndarray of bool
        Per model, where the curve is drawn solid: at least one effective sample under
        the kernel, ``n p_hat(x) / K(0) >= 1``.
    tops : dict of str to float
        Per model, the highest band edge or curve value, at least 1 (the left axis runs
        to 1.06 times it, or to the largest over the panels when aligned).
    notes : dict of str to str
        Per model, the metrics note (:func:`sharpness_note`).
    caption : list of str
        What the numbers and the band mean (:func:`sharpness_caption`).
    """

    lens: Literal["top_label", "binary"]
    divergence: str
    calibration_form: str
    panels: dict[str, CalibrationSharpness]
    supported: dict[str, np.ndarray]
    tops: dict[str, float]
    notes: dict[str, str]
    caption: list[str]


def _supported(cs: CalibrationSharpness) -> np.ndarray:
    """Where the curve has at least one effective sample under the kernel."""
    # effective number of samples under the kernel at x: n p_hat(x) / K_sigma(0)
    k0 = (
        1.0 / (cs.bandwidth * np.sqrt(2.0 * np.pi))
        if cs.kernel == "gaussian"
        else 0.75 / cs.bandwidth
    )
    return np.asarray(cs.density * cs.n_samples / k0 >= 1.0)


def _top(cs: CalibrationSharpness) -> float:
    u = cs.band_upper[np.isfinite(cs.band_upper)]
    c = cs.calibration_curve[np.isfinite(cs.calibration_curve)]
    return max(1.0, float(u.max()) if u.size else 1.0, float(c.max()) if c.size else 1.0)


@fill_doc(**_PARAMETERS)
def calibration_sharpness_diagram_data(
    probs: Any,
    labels: Any = None,
    *,
    bandwidth: float = 0.05,
    divergence: Literal["brier", "kl"] = "brier",
    kernel: Literal["gaussian", "epanechnikov"] = "gaussian",
    calibration_form: Literal["plugin", "sharpcal"] = "sharpcal",
    n_points: int = 1001,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> CalibrationSharpnessDiagramData:
    """The curves, bands, densities and notes a calibration-sharpness diagram draws.

    The compute step of :func:`calibration_sharpness_diagram` (which draws exactly
    these): per model, :func:`calipers.metrics.calibration_sharpness` with the
    Nadaraya-Watson estimator of Chidambaram & Ge (2024) eq. (4.8), where its curve
    is supported by data, and the metrics note. Imports no matplotlib.

    Parameters
    ----------
    probs : array-like of shape (n, k) or (n,), or dict
        One model's probabilities, or ``{name: probs}`` (sharing ``labels``) or
        ``{name: (probs, labels)}`` for several models.
    {labels}
    {bandwidth}
    {divergence}
    {kernel}
    calibration_form : {"sharpcal", "plugin"}, default "sharpcal"
        Which ``d_CAL`` the notes report (as :func:`calibration_sharpness_diagram`).
    {n_points}
    lens : {"auto", "top_label", "binary"}, default "auto"
        As :func:`calibration_sharpness_diagram`; all models must resolve to the same lens.
    {sample_weight}
        Shared by all models.
    {logits}
    {validate}
    {classes}

    Returns
    -------
    CalibrationSharpnessDiagramData

    Examples
    --------
    >>> from calipers.diagrams import calibration_sharpness_diagram_data
    >>> from calipers.datasets import load_default_predictions
    >>> d = load_default_predictions()
    >>> models = {m: d.probs[m] for m in ("gaussian_nb", "logistic_regression")}
    >>> data = calibration_sharpness_diagram_data(models, d.labels)
    >>> list(data.panels), data.lens
    (['gaussian_nb', 'logistic_regression'], 'top_label')
    >>> data.panels["gaussian_nb"].grid.shape
    (1001,)
    """
    if calibration_form not in ("plugin", "sharpcal"):
        raise CalibrationInputError(
            f"calibration_form must be 'plugin' or 'sharpcal'; got {calibration_form!r}"
        )
    models = resolve_models(
        probs,
        labels,
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
    lenses = {resolve_lens(lens, P) for P in models.values()}
    if len(lenses) > 1:
        raise CalibrationInputError(
            "calibration_sharpness_diagram: the models mix 1-D P(y = 1) input (read with the "
            "binary lens) and (n, k) input (read by confidence); pass lens='top_label' to "
            "read every model by its confidence"
        )
    use: Literal["top_label", "binary"] = lenses.pop()  # type: ignore[assignment]
    caption_lines = sharpness_caption(divergence, calibration_form, use)
    results = {
        name: calibration_sharpness(
            P,
            None,
            lens=use,
            divergence=divergence,
            bandwidth=bandwidth,
            kernel=kernel,
            n_points=n_points,
        )
        for name, P in models.items()
    }
    return CalibrationSharpnessDiagramData(
        lens=use,
        divergence=divergence,
        calibration_form=calibration_form,
        panels=results,
        supported={name: _supported(cs) for name, cs in results.items()},
        tops={name: _top(cs) for name, cs in results.items()},
        notes={name: sharpness_note(cs, calibration_form) for name, cs in results.items()},
        caption=caption_lines,
    )


def _draw_sharpness(
    data: CalibrationSharpnessDiagramData,
    *,
    align_axes: bool,
    show_density: bool,
    ncols: int | None,
    ax: Any,
    title: str | None,
    legend: bool,
    caption: bool | None,
) -> Figure:
    """Draw ``data`` (:func:`calibration_sharpness_diagram_data`) as
    :func:`calibration_sharpness_diagram` does."""
    results, use = data.panels, data.lens
    shared_top = max(data.tops.values())
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
            y_top = 1.06 * (shared_top if align_axes else data.tops[name])
            dmax = float(np.max(cs.density)) if cs.density.size else 0.0
            density_top = dmax * y_top if dmax > 0 else 1.0
            _draw_panel(a, cs, data.supported[name], show_density, density_top, use)
            a.set_ylim(0.0, y_top)
            if name:
                a.set_title(name)
        handles, labs = axs[0].get_legend_handles_labels()
        if show_density:
            from matplotlib.patches import Patch

            handles.append(Patch(color=DENSITY_COLOR, alpha=0.35, linewidth=0))
            labs.append("Density")
        for i, (note, a) in enumerate(zip(data.notes.values(), axs, strict=True)):
            if ax is None or i > 0 or not legend:
                metrics_note(a, note)
            else:  # one box for the note and the legend entries
                metrics_note(a, note, handles, labs)
        if (ax is None) if caption is None else caption:
            _add_caption(fig, data.caption, grow=ax is None)
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
