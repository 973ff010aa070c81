"""Shared look, lazy matplotlib import and input handling of the diagrams.

Everything a diagram module needs from matplotlib is imported here, lazily,
inside functions: ``import calipers`` never imports matplotlib, and a missing
matplotlib raises one clear :class:`ImportError` the first time a diagram is
drawn.

The look is chosen for a paper's single column (about 3.5 in wide): 8 pt text
throughout, the Okabe-Ito colour-blind-safe palette (Okabe & Ito 2008), thin
lines, constrained layout so labels never overlap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..validation import CalibrationInputError, Predictions, check_integer, check_predictions

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "OKABE_ITO",
    "MODEL_COLORS",
    "FONT_SIZE",
    "SINGLE_COLUMN",
    "DOUBLE_COLUMN",
    "require_matplotlib",
    "new_figure",
    "style_axes",
    "metrics_note",
    "resolve_models",
]

#: The eight colours of Okabe & Ito (2008), distinguishable under the common
#: colour-vision deficiencies.
OKABE_ITO: dict[str, str] = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
}

#: Colours given to models, in order (yellow last: weak on white).
MODEL_COLORS: tuple[str, ...] = tuple(
    OKABE_ITO[c]
    for c in ("blue", "orange", "green", "vermillion", "purple", "sky_blue", "black", "yellow")
)

#: Roles shared by every diagram.
BAR_COLOR = OKABE_ITO["blue"]  # observed accuracy / frequency
GAP_COLOR = OKABE_ITO["vermillion"]  # miscalibration gap, calibration curve, band
DENSITY_COLOR = OKABE_ITO["sky_blue"]  # density of the confidences
HIST_COLOR = "#6E6E6E"  # neutral grey for counts
IDEAL_COLOR = "#404040"  # the diagonal of perfect calibration

#: Font size in points of every text (axis labels, ticks, legends, notes).
FONT_SIZE = 8.0
#: Width in inches of a single-column and a double-column figure.
SINGLE_COLUMN = 3.5
DOUBLE_COLUMN = 7.0

_RC: dict[str, Any] = {
    "font.size": FONT_SIZE,
    "axes.titlesize": FONT_SIZE + 1,
    "axes.labelsize": FONT_SIZE,
    "xtick.labelsize": FONT_SIZE,
    "ytick.labelsize": FONT_SIZE,
    "legend.fontsize": FONT_SIZE,
    "legend.title_fontsize": FONT_SIZE,
    "figure.titlesize": FONT_SIZE + 1,
    "figure.labelsize": FONT_SIZE,
    "axes.linewidth": 0.8,
    "lines.linewidth": 1.2,
    "hatch.linewidth": 0.6,
    "legend.frameon": True,
    "legend.framealpha": 0.9,
    "legend.edgecolor": "#CCCCCC",
    "legend.borderpad": 0.3,
    "legend.handlelength": 1.4,
    "legend.labelspacing": 0.25,
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "svg.fonttype": "path",
}

_MISSING = (
    "calipers' diagrams need matplotlib (a dependency of calipers that this environment "
    "lacks); install it with `pip install matplotlib`"
)


def require_matplotlib() -> Any:
    """Import and return :mod:`matplotlib.pyplot`, or raise a clear ImportError.

    Raises
    ------
    ImportError
        When matplotlib is not installed; the message says
        ``pip install matplotlib``.

    Examples
    --------
    >>> from calipers.diagrams._style import require_matplotlib
    >>> require_matplotlib().__name__
    'matplotlib.pyplot'
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # matplotlib missing or broken
        raise ImportError(_MISSING) from exc
    return plt


def plain_text(text: str) -> str:
    """``text`` with every ``$`` escaped, so matplotlib shows it as written.

    matplotlib reads text between two ``$`` as mathtext (and raises on what it
    cannot parse); names of models, methods and files are not formulas, so the
    report and the command line pass them through this before they become
    titles or labels. A title a user passes to a diagram function keeps
    matplotlib's reading.

    Examples
    --------
    >>> print(plain_text("a$^$b"))
    a\\$^\\$b
    """
    return text.replace("$", r"\$")


def rc_context() -> Any:
    """A context manager that applies the calipers look (``matplotlib.rc_context``)."""
    require_matplotlib()
    import matplotlib

    return matplotlib.rc_context(_RC)  # type: ignore[arg-type]


def new_figure(width: float, height: float) -> Figure:
    """A pyplot figure of ``width`` x ``height`` inches with constrained layout.

    Created through :mod:`matplotlib.pyplot` so that ``plt.show()`` displays it
    and notebooks render it; close it with ``plt.close(fig)`` when done.
    """
    plt = require_matplotlib()
    return plt.figure(figsize=(width, height), layout="constrained")  # type: ignore[no-any-return]


def style_axes(ax: Axes) -> None:
    """Tick and spine settings that hold whatever rcParams are active when drawn."""
    ax.tick_params(labelsize=FONT_SIZE, width=0.8, length=3, pad=2)
    for sp in ax.spines.values():
        sp.set_linewidth(0.8)
    # label Text objects exist from the creation of the Axes, with the sizes
    # of the rcParams active then (the caller's, for Axes passed in)
    ax.xaxis.label.set_fontsize(FONT_SIZE)
    ax.yaxis.label.set_fontsize(FONT_SIZE)
    ax.title.set_fontsize(FONT_SIZE + 1)


def metrics_note(
    ax: Axes,
    text: str,
    handles: Sequence[Any] | None = None,
    labels: Sequence[str] | None = None,
    gid: str = "metrics",
) -> Any:
    """Draw ``text`` (the metrics) in a framed box where it hides the least data.

    The box is a :class:`~matplotlib.legend.Legend` whose title is ``text``
    (with the legend entries ``handles``/``labels`` below it, if given) and
    ``loc="best"``, so matplotlib places it, at draw time, where it overlaps
    the fewest lines, bars and areas of ``ax``. Artists of a twin axis are not
    seen: mark their footprint with :func:`invisible_proxy`. The title
    :class:`~matplotlib.text.Text` and the box carry ``gid``. Returns the
    Legend (``.get_title().get_text()`` is the note); it is an artist of
    ``ax`` (``ax.artists``), not ``ax.get_legend()``.
    """
    from matplotlib.legend import Legend

    note = Legend(
        ax,
        list(handles or []),
        list(labels or []),
        title=text,
        loc="best",
        alignment="left",
        title_fontproperties={"size": FONT_SIZE},
        fontsize=FONT_SIZE,
        frameon=True,
        framealpha=0.9,
        edgecolor="#CCCCCC",
        borderpad=0.45,
        borderaxespad=0.5,
    )
    note.set_gid(gid)
    note.get_title().set_gid(gid)
    note.get_title().set_linespacing(1.3)
    note.set_zorder(6)
    ax.add_artist(note)
    return note


def invisible_proxy(ax: Axes, x: Any, high: Any, low: Any = None) -> None:
    """Mark the area between ``low`` (default 0) and ``high`` for "best" placements.

    An invisible zig-zag line through the area (vertical strokes at up to 120
    abscissae, 9 vertices each): the "best" legend location counts the line
    vertices inside a candidate box, and sees neither the inside of a filled
    area (only its outline) nor anything on a twin axis.
    """
    from matplotlib.lines import Line2D

    x = np.asarray(x, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    lo = np.zeros_like(hi) if low is None else np.asarray(low, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(hi) & np.isfinite(lo)
    x, hi, lo = x[ok], hi[ok], lo[ok]
    if x.size == 0:
        return
    pick = np.unique(np.linspace(0, x.size - 1, min(120, x.size)).round().astype(int))
    # strokes of 9 points each, alternately up and down: the "best" location
    # counts the vertices inside a candidate box, so the strokes carry many
    frac = np.linspace(0.0, 1.0, 9)
    frac = np.where((np.arange(pick.size) % 2 == 0)[:, None], frac, frac[::-1])
    xs = np.repeat(x[pick], frac.shape[1])
    ys = (lo[pick][:, None] + (hi[pick] - lo[pick])[:, None] * frac).ravel()
    line = Line2D(xs, ys, visible=False, label="_nolegend_", gid="placement-proxy")
    ax.add_line(line)


def figure_legend(
    fig: Figure,
    handles: Any = None,
    labels: Any = None,
    *,
    title: str | None = None,
    ncols: int = 2,
) -> Any:
    """The legend above all panels, with the figure's title (if any) as its heading.

    A title written with ``suptitle`` and a legend placed outside the axes
    would overlap in constrained layout; stacking them in one legend does not.
    """
    if handles is None:
        handles, labels = [], []
        for a in fig.axes:
            for h, lab in zip(*a.get_legend_handles_labels(), strict=True):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
    ncols = _fit_columns([str(lab) for lab in labels], fig.get_figwidth(), ncols)
    leg = fig.legend(
        handles,
        labels,
        loc="outside upper center",
        ncols=ncols,
        fontsize=FONT_SIZE,
        frameon=False,
        title=title,
        title_fontproperties={"size": FONT_SIZE + 1},
        columnspacing=1.2,
        handletextpad=0.5,
        borderaxespad=0.2,
    )
    return leg


def _fit_columns(labels: list[str], width_in: float, ncols: int) -> int:
    """The most legend columns (at most ``ncols``) whose entries fit in ``width_in`` inches.

    Entry width is estimated from the label length at 8 pt (about 0.065 in per
    character) plus the handle and padding.
    """
    n = len(labels)
    for nc in range(min(max(ncols, 1), max(n, 1)), 0, -1):
        nrows = -(-n // nc)
        cols = [labels[i * nrows : (i + 1) * nrows] for i in range(nc)]  # column-major fill
        total = sum(max((len(x) for x in c), default=0) * 0.065 + 0.45 for c in cols if c)
        if total <= 0.95 * width_in:
            return nc
    return 1


def ideal_line(ax: Axes, label: str | None = "Perfect calibration") -> None:
    """The dashed diagonal of perfect calibration on [0, 1]."""
    ax.plot(
        [0, 1],
        [0, 1],
        ls=(0, (4, 2)),
        lw=0.9,
        color=IDEAL_COLOR,
        label=label,
        zorder=1.5,
        gid="ideal",
    )


def unit_ticks(ax: Axes, which: str = "both", step: float = 0.2) -> None:
    """Ticks every ``step`` on [0, 1] labelled ``0, 0.2, ..., 1`` (x, y or both axes)."""
    ticks = np.round(np.arange(0.0, 1.0 + 1e-9, step), 10)
    labels = [f"{t:g}" for t in ticks]
    if which in ("x", "both"):
        ax.set_xlim(0.0, 1.0)
        ax.set_xticks(ticks, labels)
    if which in ("y", "both"):
        ax.set_yticks(ticks, labels)


def percent(v: float, digits: int = 2) -> str:
    """``0.04123 -> '4.12%'`` (``'n/a'`` for NaN)."""
    if not np.isfinite(v):
        return "n/a"
    return f"{100.0 * float(v):.{digits}f}%"


def resolve_models(
    probs: Any,
    labels: Any,
    *,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> dict[str, Predictions]:
    """Validated predictions of one model or of a dict of models.

    ``probs`` is one model's probabilities (with ``labels``), or a mapping
    ``{name: probs}`` sharing ``labels`` and ``sample_weight``, or a mapping
    ``{name: (probs, labels)}``. One model gets the name ``""``. ``classes``
    (the class of each column, see :func:`calipers.check_predictions`) is the
    same for every model.
    """
    if isinstance(probs, Mapping):
        if len(probs) == 0:
            raise CalibrationInputError("the dict of models is empty")
        out: dict[str, Predictions] = {}
        for name, v in probs.items():
            if isinstance(v, tuple):
                if len(v) != 2:
                    raise CalibrationInputError(
                        f"model {name!r}: a tuple value must be (probs, labels); got {len(v)} items"
                    )
                p, y = v
            else:
                if labels is None and not isinstance(v, Predictions):
                    raise CalibrationInputError(
                        f"model {name!r} has no labels: pass labels=..., or values (probs, labels)"
                    )
                p, y = v, (None if isinstance(v, Predictions) else labels)
            out[str(name)] = check_predictions(
                p,
                y,
                logits=logits,
                sample_weight=sample_weight,
                validate=validate,
                classes=classes,
            )
        return out
    return {
        "": check_predictions(
            probs,
            labels,
            logits=logits,
            sample_weight=sample_weight,
            validate=validate,
            classes=classes,
        )
    }


def axes_grid(n: int, ncols: int | None, panel_w: float, panel_h: float, **kw: Any) -> Any:
    """A new figure with ``n`` panels on a grid; returns (fig, flat list of n axes)."""
    ncols = min(n, 3) if ncols is None else check_integer(ncols, "ncols", minimum=1)
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig = new_figure(panel_w * ncols, panel_h * nrows)
    axs = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False, **kw)).ravel()
    for a in axs[n:]:
        a.set_visible(False)
        a.set_gid("unused")
    return fig, list(axs[:n])


def check_axes_count(ax: Any, n: int, what: str) -> list[Any]:
    """``ax`` as a list of ``n`` Axes (an Axes alone when ``n == 1``)."""
    if isinstance(ax, Sequence) or isinstance(ax, np.ndarray):
        axs = list(np.asarray(ax, dtype=object).ravel())
    else:
        axs = [ax]
    if len(axs) != n:
        raise CalibrationInputError(f"{what} needs {n} Axes in ax=; got {len(axs)}")
    return axs
