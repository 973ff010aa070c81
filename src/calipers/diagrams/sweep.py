"""Figures of sweeps: estimates against the test-set size or against a setting of the estimator.

A :class:`calipers.TestSizeSweep` is drawn as Gruber & Buettner (2022) draw
their Figs. 1 and 3: the mean estimate of every metric against the test-set
size on a log axis, with a band of one standard deviation over the repetitions,
and, when a recalibrator was given, a second panel below with the estimated
improvement by the recalibration on the same size axis (positive: the
recalibration lowered the estimate). One or more :class:`calipers.ParameterSweep`
are drawn as Kirchenbauer, Oaks & Heim (2022) draw their Fig. 7 (the estimate
against the k-d tree bin fraction with bootstrap error bars) and as Chidambaram
& Ge (2024) compare bandwidths and kernels in App. H: the estimate against the
parameter, with the bootstrap interval as an error bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..inference.sweeps import ParameterSweep, TestSizeSweep
from ..validation import CalibrationInputError
from ._style import (
    FONT_SIZE,
    IDEAL_COLOR,
    MODEL_COLORS,
    SINGLE_COLUMN,
    check_axes_count,
    figure_legend,
    new_figure,
    rc_context,
    require_matplotlib,
    style_axes,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["sweep_diagram"]

#: Axis labels of the usual swept parameters.
_PARAM_LABELS = {
    "n_bins": "Number of bins",
    "gamma": r"k-d tree bin fraction $\gamma$",
    "bandwidth": r"Kernel bandwidth $\sigma$",
    "kernel": "Kernel",
}


def _color(i: int) -> str:
    return MODEL_COLORS[i % len(MODEL_COLORS)]


def _grid(ax: Axes) -> None:
    ax.grid(color="#E0E0E0", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    style_axes(ax)


def _size_panel(
    ax: Axes,
    sizes: np.ndarray,
    names: Sequence[str],
    mean: np.ndarray,
    spread: np.ndarray,
    gid: str,
) -> None:
    x = sizes.astype(np.float64)
    for j, name in enumerate(names):
        c = _color(j)
        ax.fill_between(
            x,
            mean[j] - spread[j],
            mean[j] + spread[j],
            color=c,
            alpha=0.2,
            lw=0,
            gid=f"{gid}-band-{j}",
        )
        ax.plot(x, mean[j], marker="o", ms=2.5, color=c, label=name, gid=f"{gid}-line-{j}")
    if x.size > 1 and x[-1] / x[0] >= 10:
        ax.set_xscale("log")
    _grid(ax)


def _test_size(result: TestSizeSweep, ax: Any, title: str | None, band: str, kind: str) -> Figure:
    has_imp = result.improvement is not None
    if kind == "improvement" and not has_imp:
        raise CalibrationInputError(
            "kind='improvement' needs a sweep with a recalibrator (test_size_sweep(..., "
            "recalibrator=...))"
        )
    if kind == "auto":
        panels = ["values", "improvement"] if has_imp else ["values"]
    else:
        panels = [kind]
    own = ax is None
    if own:
        fig = new_figure(SINGLE_COLUMN, 2.6 if len(panels) == 1 else 4.4)
        axs = list(np.atleast_1d(fig.subplots(len(panels), 1, sharex=True, squeeze=False)).ravel())
    else:
        axs = check_axes_count(ax, len(panels), "this sweep diagram")
        fig = axs[0].figure
    names = list(result.metric_names)
    for a, panel in zip(axs, panels, strict=True):
        if panel == "values":
            spread = result.std if band == "std" else result.standard_error
            _size_panel(a, result.sizes, names, result.mean, spread, "sweep-size")
            a.set_ylabel("Estimate")
        else:
            assert result.improvement_mean is not None and result.improvement_std is not None
            imp_spread = result.improvement_std
            if band == "sem":
                imp_spread = imp_spread / np.sqrt(result.n_repeats)
            _size_panel(
                a, result.sizes, names, result.improvement_mean, imp_spread, "sweep-improvement"
            )
            a.axhline(0.0, color=IDEAL_COLOR, lw=0.8, ls=(0, (4, 2)), zorder=1.5, gid="zero")
            rec = result.recalibrator_name or "recalibration"
            a.set_ylabel(f"Improvement by {rec}")
    axs[-1].set_xlabel("Test-set size")
    what = "1 s.d." if band == "std" else "1 s.e."
    note = f"mean of {result.n_repeats} nested subsamples, band {what}"
    if own:
        handles, labels = axs[0].get_legend_handles_labels()
        figure_legend(fig, handles, labels, title=title, ncols=3)
        fig.supxlabel(note, fontsize=FONT_SIZE - 1, color="#555555")
    else:
        axs[0].legend(loc="best")
        if title:
            axs[0].set_title(title)
    return fig


def _numeric(values: Sequence[Any]) -> bool:
    return all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        for v in values
    )


def _parameter(results: list[ParameterSweep], ax: Any, title: str | None) -> Figure:
    params = {r.param for r in results}
    if len(params) != 1:
        raise CalibrationInputError(
            f"sweeps drawn together must vary the same parameter; got {sorted(params)}"
        )
    param = results[0].param
    own = ax is None
    if own:
        fig = new_figure(SINGLE_COLUMN, 2.6)
        ax_ = fig.subplots()
    else:
        (ax_,) = check_axes_count(ax, 1, "a parameter sweep diagram")
        fig = ax_.figure
    numeric = all(_numeric(r.values) for r in results)
    m = len(results)
    categories: list[Any] = []
    if not numeric:
        for r in results:
            for v in r.values:
                if v not in categories:
                    categories.append(v)
    for j, r in enumerate(results):
        c = _color(j)
        if numeric:
            x = np.asarray(r.values, dtype=np.float64)
        else:
            x = np.array([categories.index(v) for v in r.values], dtype=np.float64)
            x = x + (j - (m - 1) / 2) * min(0.15, 0.6 / m)
        y = r.estimates
        ax_.plot(
            x,
            y,
            color=c,
            marker="o",
            ms=3,
            ls="-" if numeric else "none",
            label=r.metric_name,
            gid=f"sweep-param-{j}",
            zorder=3,
        )
        if r.low is not None and r.high is not None:
            # drawn as given: a basic bootstrap interval may lie wholly below a biased estimate
            ax_.vlines(x, r.low, r.high, color=c, lw=0.9, gid=f"sweep-interval-{j}", zorder=2)
            for end in (r.low, r.high):
                ax_.plot(x, end, ls="none", marker="_", ms=5, mew=0.9, color=c, zorder=2)
    if numeric:
        allx = np.concatenate([np.asarray(r.values, dtype=np.float64) for r in results])
        if np.all(allx > 0) and allx.max() / allx.min() >= 10:
            ax_.set_xscale("log")
            ticks = np.unique(allx)
            ax_.set_xticks(ticks, [f"{t:.3g}" for t in ticks], minor=False)
            ax_.set_xticks([], minor=True)
    else:
        ax_.set_xticks(np.arange(len(categories)), [str(v) for v in categories])
        ax_.set_xlim(-0.6, len(categories) - 0.4)
    ax_.set_xlabel(_PARAM_LABELS.get(param, param))
    ax_.set_ylabel("Estimate")
    _grid(ax_)
    r0 = results[0]
    if r0.low is not None:
        note = (
            f"bars: {100 * r0.confidence_level:g}% {r0.method} bootstrap interval, "
            f"{r0.n_resamples} resamples"
        )
    else:
        note = "no intervals"
    if own:
        handles, labels = ax_.get_legend_handles_labels()
        figure_legend(fig, handles, labels, title=title, ncols=3)
        fig.supxlabel(note, fontsize=FONT_SIZE - 1, color="#555555")
    else:
        ax_.legend(loc="best")
        if title:
            ax_.set_title(title)
    return fig


def sweep_diagram(
    result: TestSizeSweep | ParameterSweep | Sequence[ParameterSweep],
    *,
    ax: Any = None,
    title: str | None = None,
    band: Literal["std", "sem"] = "std",
    kind: Literal["auto", "values", "improvement"] = "auto",
) -> Figure:
    """Draw a sweep: estimate vs test-set size (Gruber & Buettner 2022, Figs. 1, 3) or vs a parameter.

    For a :class:`calipers.TestSizeSweep`: the mean of each metric over the
    repetitions against the subsample size (log axis), with a band of one
    standard deviation (``band="std"``, the spread on one test set of that
    size) or one standard error of the mean (``band="sem"``, Gruber & Buettner
    (2022) App. G). With a recalibrator, a second panel shows the improvement
    ``metric(f) - metric(h o f)`` on the same size axis (their Fig. 1).

    For one or more :class:`calipers.ParameterSweep` of the same parameter: the
    estimate against the parameter's values with the bootstrap interval as
    error bars (Kirchenbauer, Oaks & Heim (2022) Fig. 7; Chidambaram & Ge (2024)
    App. H). Numeric values spanning a factor of 10 or more get a log axis;
    strings (kernels) are categories.

    Parameters
    ----------
    result : TestSizeSweep, ParameterSweep, or sequence of ParameterSweep
    ax : Axes or sequence of Axes, optional
        Draw into these: one Axes, or two for a size sweep with improvement
        and ``kind="auto"``. Default: a new figure, 3.5 in wide.
    title : str, optional
    band : {"std", "sem"}, default "std"
        Size sweeps only: what the band around the mean shows.
    kind : {"auto", "values", "improvement"}, default "auto"
        Size sweeps only: ``"auto"`` draws the improvement panel when there is
        one.

    Returns
    -------
    matplotlib.figure.Figure
        Lines have gids ``"sweep-size-line-<j>"``, ``"sweep-improvement-line-<j>"``
        and ``"sweep-param-<j>"``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.diagrams import sweep_diagram
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = (rng.uniform(size=1000) < p**2).astype(int)
    >>> s = cp.test_size_sweep([cp.ece, cp.rbs], p, y, sizes=[100, 300, 1000], n_repeats=5)
    >>> fig = sweep_diagram(s)
    >>> fig.axes[0].get_xscale(), fig.axes[0].get_xlabel()
    ('log', 'Test-set size')
    >>> plt.close(fig)
    >>> b = cp.parameter_sweep(cp.ece, p, y, values=[5, 15, 50], n_resamples=100)
    >>> fig = sweep_diagram(b)
    >>> fig.axes[0].get_xlabel()
    'Number of bins'
    >>> plt.close(fig)
    """
    require_matplotlib()
    if band not in ("std", "sem"):
        raise CalibrationInputError(f"band must be 'std' or 'sem'; got {band!r}")
    if kind not in ("auto", "values", "improvement"):
        raise CalibrationInputError(f"kind must be 'auto', 'values' or 'improvement'; got {kind!r}")
    with rc_context():
        if isinstance(result, TestSizeSweep):
            return _test_size(result, ax, title, band, kind)
        if isinstance(result, ParameterSweep):
            return _parameter([result], ax, title)
        if (
            isinstance(result, Sequence)
            and result
            and all(isinstance(r, ParameterSweep) for r in result)
        ):
            return _parameter(list(result), ax, title)
    raise TypeError(
        "result must be a TestSizeSweep, a ParameterSweep or a non-empty sequence of "
        f"ParameterSweep; got {type(result).__name__}"
    )
