"""The reliability curve with its honest calibration band (Dimitriadis, Dümbgen, Henzi, Puke & Ziegel 2023).

The isotonic (PAV) estimate of the calibration curve of binary predictions,
the simultaneous ``1 - alpha`` band of :func:`calipers.inference.honest_calibration_band`
shaded around it, the diagonal, and the ranges where the band excludes the
diagonal drawn over the diagonal: there the predictions are miscalibrated,
with confidence ``1 - alpha`` for all ranges at once. The compute step is
:func:`~calipers.inference.honest_calibration_band` itself; its
:class:`~calipers.inference.CalibrationBand` can be passed in place of the
predictions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..inference import CalibrationBand, honest_calibration_band
from ..validation import CalibrationInputError
from ._regression import figure_and_axes
from ._style import (
    BAR_COLOR,
    GAP_COLOR,
    ideal_line,
    metrics_note,
    rc_context,
    require_matplotlib,
    style_axes,
    unit_ticks,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["calibration_band_diagram", "band_outline", "band_note"]


def band_outline(band: CalibrationBand) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The band as two step curves on [0, 1] over the same abscissae.

    Every knot appears twice: with the bounds that hold just left of it and
    just right of it (the lower bound holds from a knot to the next, the upper
    bound from the previous knot up to it; 0 and 1 beyond the data).

    Returns
    -------
    (x, lower, upper) : tuple of numpy.ndarray
        ``x`` non-decreasing from 0 to 1; ``lower`` and ``upper`` at each.

    Examples
    --------
    >>> from calipers.inference import honest_calibration_band
    >>> from calipers.diagrams import band_outline
    >>> band = honest_calibration_band([0.2, 0.4, 0.6, 0.8], [0, 0, 1, 1], alpha=0.5)
    >>> x, lo, up = band_outline(band)
    >>> x.tolist()
    [0.0, 0.0, 0.2, 0.2, 0.4, 0.4, 0.6, 0.6, 0.8, 0.8, 1.0, 1.0]
    >>> lo.round(3).tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.025, 0.025, 0.158, 0.158, 0.158]
    >>> up.round(3).tolist()
    [0.842, 0.842, 0.842, 0.975, 0.975, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    kx, klo, kup = band._knots()
    x = np.repeat(kx, 2)
    lo_left = np.r_[klo[0], klo[:-1]]
    up_right = np.r_[kup[1:], kup[-1]]
    lower = np.column_stack([lo_left, klo]).ravel()
    upper = np.column_stack([kup, up_right]).ravel()
    return x, lower, upper


def band_note(band: CalibrationBand) -> str:
    """The diagram's note: the level, the rows, and where the band excludes the diagonal.

    Examples
    --------
    >>> from calipers.inference import honest_calibration_band
    >>> from calipers.diagrams import band_note
    >>> print(band_note(honest_calibration_band([0.1, 0.5, 0.9], [0, 1, 1])))
    95 % honest band, n = 3
    band holds the diagonal
    """
    lines = [f"{100 * (1 - band.alpha):g} % honest band, n = {band.n}"]
    devs = band.deviations()
    if not devs:
        lines.append("band holds the diagonal")
    for direction, words in (("above", "too low"), ("below", "too high")):
        ranges = [d for d in devs if d.direction == direction]
        if ranges:
            lo, hi = ranges[0].start, ranges[-1].end
            lines.append(
                f"{words} on {lo:.3g}–{hi:.3g}"
                + (f" ({len(ranges)} ranges)" if len(ranges) > 1 else "")
            )
    crossings = band.crossings()
    if crossings:
        lines.append(f"bounds cross on {len(crossings)} range{'s' if len(crossings) > 1 else ''}")
    return "\n".join(lines)


def calibration_band_diagram(
    probs: Any,
    labels: Any = None,
    *,
    alpha: float = 0.05,
    method: Literal["standard", "round"] = "standard",
    digits: int | None = None,
    nc: bool = False,
    logits: bool = False,
    classes: Any = None,
    ax: Any = None,
    title: str | None = None,
) -> Figure:
    """Reliability curve with the honest calibration band and the ranges of miscalibration.

    Shaded: the simultaneous ``1 - alpha`` band for a non-decreasing
    calibration curve of Dimitriadis, Dümbgen, Henzi, Puke & Ziegel (2023)
    (:func:`calipers.inference.honest_calibration_band`, as two step
    functions, :func:`band_outline`; where the bounds cross the band is empty
    and not shaded); line: the isotonic (PAV) estimate of the curve, a step
    function; dashed: the diagonal; thick over the diagonal: the ranges where
    the band excludes it (:meth:`~calipers.inference.CalibrationBand.deviations`),
    where events happen more often (band above) or less often (below) than
    predicted. Unlike the per-bin Wilson intervals of
    :func:`calipers.reliability_diagram`, the band holds the whole curve with
    probability ``1 - alpha``.

    Parameters
    ----------
    probs : array-like of shape (n,) or (n, 2), Predictions, or CalibrationBand
        Predicted probabilities of the positive class (or logits with
        ``logits=True``), or a band computed beforehand (then ``labels`` and
        the band's settings are not given).
    labels : array-like of shape (n,)
        Outcomes 0/1 (or class names with ``classes=``).
    alpha : float, default 0.05
        One minus the simultaneous confidence level.
    method : {"standard", "round"}, default "standard"
        One knot per distinct prediction, or predictions rounded to ``digits``.
    digits : int, optional
        Digits of ``method="round"`` (default 2).
    nc : bool, default False
        Widen the band to contain the isotonic estimate.
    logits : bool, default False
    classes : array-like, optional
    ax : matplotlib Axes, optional
        Draw here; default: a new single-column figure.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.figure.Figure
        The band has gid ``"honest-band"``, the isotonic curve
        ``"isotonic"``, the diagonal ``"ideal"``, each range of
        miscalibration ``"deviation-above"`` or ``"deviation-below"``; the
        note (:func:`band_note`) is ``ax.artists[0]`` (gid ``"metrics"``).

    Examples
    --------
    >>> import numpy as np
    >>> import matplotlib.pyplot as plt
    >>> from calipers.diagrams import calibration_band_diagram
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < 1 / (1 + ((1 - x) / x) ** 0.4)
    >>> fig = calibration_band_diagram(x, y)
    >>> ax = fig.axes[0]
    >>> print(ax.artists[0].get_title().get_text())
    95 % honest band, n = 2000
    too low on 0.0147–0.235 (7 ranges)
    too high on 0.81–0.831
    >>> sorted({line.get_gid() for line in ax.lines})
    ['deviation-above', 'deviation-below', 'ideal', 'isotonic']
    >>> plt.close(fig)
    """
    require_matplotlib()
    if isinstance(probs, CalibrationBand):
        if labels is not None:
            raise CalibrationInputError("labels must be None when probs is a CalibrationBand")
        band = probs
    else:
        band = honest_calibration_band(
            probs,
            labels,
            alpha=alpha,
            method=method,
            digits=digits,
            nc=nc,
            logits=logits,
            classes=classes,
        )
    bx, blo, bup = band_outline(band)
    with rc_context():
        fig, a = figure_and_axes(ax, height=3.0)
        shade = a.fill_between(
            bx,
            blo,
            bup,
            where=blo <= bup,
            color=GAP_COLOR,
            alpha=0.2,
            lw=0,
            zorder=1,
            label=f"{100 * (1 - band.alpha):g} % honest band",
        )
        shade.set_gid("honest-band")
        ideal_line(a, label="Perfect calibration")
        (iso,) = a.plot(
            band.x,
            band.isotonic,
            drawstyle="steps-post",
            color=BAR_COLOR,
            lw=1.3,
            zorder=3,
            label="Isotonic estimate",
        )
        iso.set_gid("isotonic")
        labelled = False
        for d in band.deviations():
            (seg,) = a.plot(
                [d.start, d.end],
                [d.start, d.end],
                color=GAP_COLOR,
                lw=3.0,
                solid_capstyle="butt",
                zorder=2.5,
                label=None if labelled else "Band excludes diagonal",
            )
            seg.set_gid(f"deviation-{d.direction}")
            labelled = True
        a.set_xlim(0, 1)
        a.set_ylim(0, 1)
        a.set_aspect("equal", adjustable="box")
        unit_ticks(a)
        a.set_xlabel("Predicted probability")
        a.set_ylabel("Event frequency")
        if title:
            a.set_title(title)
        handles, names = a.get_legend_handles_labels()
        metrics_note(a, band_note(band), handles, names)
        style_axes(a)
    return fig
